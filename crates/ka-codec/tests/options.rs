//! KA TCP options (DESIGN §2.3): byte vectors, errors, round trips, fuzz-ish.

use ka_codec::options::{KA_EXID, KIND_EXPERIMENTAL, MAX_RATE_CODE, MIN_RATE_CODE};
use ka_codec::{Code, KaOption, KaPermitted, KaRate, OptionError};
use proptest::prelude::*;

#[test]
fn constants() {
    assert_eq!(KIND_EXPERIMENTAL, 253);
    assert_eq!(KA_EXID, 0x4B41);
    assert_eq!(KaPermitted::LEN, 4);
    assert_eq!(KaRate::LEN, 6);
    assert_eq!((MIN_RATE_CODE, MAX_RATE_CODE), (3, 185));
}

#[test]
fn permitted_bytes() {
    let mut buf = [0xAA; 8];
    assert_eq!(KaPermitted.emit(&mut buf), Ok(4));
    assert_eq!(buf, [253, 4, 0x4B, 0x41, 0xAA, 0xAA, 0xAA, 0xAA]);
    assert_eq!(KaPermitted::BYTES, [253, 4, 0x4B, 0x41]);
    assert_eq!(
        KaOption::parse(&[253, 4, 0x4B, 0x41]),
        Ok(KaOption::Permitted)
    );
    assert_eq!(KaPermitted::parse(&[253, 4, 0x4B, 0x41]), Ok(KaPermitted));
    assert_eq!(KaOption::Permitted.wire_len(), 4);
}

#[test]
fn rate_bytes() {
    let r = KaRate {
        code: 125,
        count: 7,
    };
    let mut buf = [0; 6];
    assert_eq!(r.emit(&mut buf), Ok(6));
    assert_eq!(buf, [253, 6, 0x4B, 0x41, 125, 7]);
    assert_eq!(KaOption::parse(&buf), Ok(KaOption::Rate(r)));
    assert_eq!(KaRate::parse(&buf), Ok(r));
    assert_eq!(r.rate_code().map(Code::len), Some(1000));
    assert_eq!(KaRate::new(Code::from_len(1000).unwrap(), 7), r);
    assert_eq!(KaOption::from(r).wire_len(), 6);
    let mut buf2 = [0; 6];
    assert_eq!(KaOption::from(r).emit(&mut buf2), Ok(6));
    assert_eq!(buf2, buf);
}

#[test]
fn parse_errors() {
    use OptionError::*;
    let cases: &[(&[u8], OptionError)] = &[
        (&[], Truncated),
        (&[253], Truncated),
        (&[2, 4, 5, 0xb4], WrongKind(2)),
        (&[254, 4, 0x4B, 0x41], WrongKind(254)),
        (&[253, 0], BadLength(0)),
        (&[253, 1], BadLength(1)),
        (&[253, 3, 0x4B], BadLength(3)),
        (&[253, 6, 0x4B, 0x41, 125], Truncated),
        (&[253, 4, 0x4B], Truncated),
        (
            &[253, 4, 0x4B, 0x41, 0],
            TrailingBytes {
                declared: 4,
                actual: 5,
            },
        ),
        (&[253, 5, 0x4B, 0x41, 9], BadLength(5)),
        (&[253, 8, 0x4B, 0x41, 1, 2, 3, 4], BadLength(8)),
        (&[253, 4, 0x12, 0x34], UnknownExId(0x1234)),
        (
            &[253, 10, 0xF9, 0x89, 1, 2, 3, 4, 5, 6],
            UnknownExId(0xF989),
        ),
        (&[253, 6, 0x4B, 0x41, 2, 0], CodeOutOfRange(2)),
        (&[253, 6, 0x4B, 0x41, 186, 0], CodeOutOfRange(186)),
        (&[253, 6, 0x4B, 0x41, 0, 0], CodeOutOfRange(0)),
        (&[253, 6, 0x4B, 0x41, 255, 0], CodeOutOfRange(255)),
    ];
    for (bytes, err) in cases {
        assert_eq!(KaOption::parse(bytes), Err(*err), "{bytes:?}");
        assert!(!err.to_string().is_empty());
    }
    // The typed parsers refuse the other option.
    assert_eq!(
        KaPermitted::parse(&[253, 6, 0x4B, 0x41, 3, 0]),
        Err(BadLength(6))
    );
    assert_eq!(KaRate::parse(&[253, 4, 0x4B, 0x41]), Err(BadLength(4)));
}

#[test]
fn error_messages() {
    assert_eq!(
        OptionError::UnknownExId(0x1234).to_string(),
        "experimental option with unknown ExID 0x1234"
    );
    assert_eq!(
        OptionError::CodeOutOfRange(2).to_string(),
        "KA-Rate code 2 outside 3..=185"
    );
    let e: &dyn std::error::Error = &OptionError::Truncated;
    assert_eq!(e.to_string(), "KA option truncated");
}

#[test]
fn emit_errors() {
    let mut small = [0; 5];
    assert_eq!(
        KaRate { code: 10, count: 0 }.emit(&mut small),
        Err(OptionError::BufferTooSmall {
            needed: 6,
            available: 5
        })
    );
    assert_eq!(small, [0; 5], "nothing written on error");
    let mut tiny = [0; 3];
    assert_eq!(
        KaPermitted.emit(&mut tiny),
        Err(OptionError::BufferTooSmall {
            needed: 4,
            available: 3
        })
    );
    let mut buf = [0; 6];
    assert_eq!(
        KaRate {
            code: 186,
            count: 0
        }
        .emit(&mut buf),
        Err(OptionError::CodeOutOfRange(186))
    );
    assert_eq!(
        KaRate { code: 2, count: 0 }.emit(&mut buf),
        Err(OptionError::CodeOutOfRange(2))
    );
}

#[test]
fn every_valid_rate_round_trips() {
    for code in 3..=185_u8 {
        for count in [0, 1, 127, 255] {
            let r = KaRate { code, count };
            let mut buf = [0; 6];
            assert_eq!(r.emit(&mut buf), Ok(6));
            assert_eq!(KaOption::parse(&buf), Ok(KaOption::Rate(r)));
        }
    }
}

fn ka_option() -> impl Strategy<Value = KaOption> {
    prop_oneof![
        Just(KaOption::Permitted),
        (3_u8..=185, any::<u8>()).prop_map(|(code, count)| KaOption::Rate(KaRate { code, count })),
    ]
}

proptest! {
    #[test]
    fn parse_emit_round_trip(opt in ka_option(), extra in 0_usize..8) {
        let mut buf = vec![0_u8; opt.wire_len() + extra];
        let n = opt.emit(&mut buf).unwrap();
        prop_assert_eq!(n, opt.wire_len());
        prop_assert_eq!(KaOption::parse(&buf[..n]), Ok(opt));
    }

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = KaOption::parse(&bytes);
        let _ = KaRate::parse(&bytes);
        let _ = KaPermitted::parse(&bytes);
    }

    #[test]
    fn parse_accepts_only_canonical_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..10)) {
        // Anything that parses re-emits to exactly the same bytes.
        if let Ok(opt) = KaOption::parse(&bytes) {
            let mut buf = [0_u8; 6];
            let n = opt.emit(&mut buf).unwrap();
            prop_assert_eq!(&buf[..n], &bytes[..]);
        }
    }

    #[test]
    fn kind_253_foreign_exid_is_unknown(exid in any::<u16>(), body in proptest::collection::vec(any::<u8>(), 0..8)) {
        prop_assume!(exid != 0x4B41);
        let mut opt = vec![253, (4 + body.len()) as u8];
        opt.extend_from_slice(&exid.to_be_bytes());
        opt.extend_from_slice(&body);
        prop_assert_eq!(KaOption::parse(&opt), Err(OptionError::UnknownExId(exid)));
    }

    #[test]
    fn emit_never_panics(code in any::<u8>(), count in any::<u8>(), len in 0_usize..10) {
        let mut buf = vec![0_u8; len];
        let r = KaRate { code, count }.emit(&mut buf);
        prop_assert_eq!(r.is_ok(), (3..=185).contains(&code) && len >= 6);
    }
}

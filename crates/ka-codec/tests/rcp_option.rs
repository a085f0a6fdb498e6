//! Native-RCP IPv4 option (DESIGN §7.1).

use ka_codec::rcp_option::{self, OPTION_TYPE, find_in, lower_in_place};
use ka_codec::{RcpError, RcpOption};
use proptest::prelude::*;

const SAMPLE: RcpOption = RcpOption {
    rate_bytes_per_sec: 0x0102_0304,
    rtt_ms: 0x0506,
};

#[test]
fn bytes() {
    assert_eq!(OPTION_TYPE, 30);
    assert_eq!(RcpOption::LEN, 8);
    let bytes = [30, 8, 1, 2, 3, 4, 5, 6];
    assert_eq!(SAMPLE.to_bytes(), bytes);
    let mut buf = [0; 10];
    assert_eq!(SAMPLE.emit(&mut buf), Ok(8));
    assert_eq!(buf[..8], bytes);
    assert_eq!(RcpOption::parse(&bytes), Ok(SAMPLE));
    // 12.5 MB/s (100 Mbit/s), 40 ms.
    let o = RcpOption {
        rate_bytes_per_sec: 12_500_000,
        rtt_ms: 40,
    };
    assert_eq!(o.to_bytes(), [30, 8, 0x00, 0xBE, 0xBC, 0x20, 0x00, 0x28]);
}

#[test]
fn parse_errors() {
    let cases: &[(&[u8], RcpError)] = &[
        (&[], RcpError::Truncated),
        (&[30], RcpError::Truncated),
        (
            &[7, 8, 0, 0, 0, 0, 0, 0],
            RcpError::WrongType {
                found: 7,
                expected: 30,
            },
        ),
        (&[30, 6, 0, 0, 0, 0], RcpError::BadLength(6)),
        (&[30, 0], RcpError::BadLength(0)),
        (&[30, 8, 0, 0], RcpError::Truncated),
        (
            &[30, 8, 0, 0, 0, 0, 0, 0, 0],
            RcpError::TrailingBytes {
                declared: 8,
                actual: 9,
            },
        ),
    ];
    for (bytes, err) in cases {
        assert_eq!(RcpOption::parse(bytes), Err(*err), "{bytes:?}");
        assert!(!err.to_string().is_empty());
    }
    let mut small = [0; 7];
    assert_eq!(
        SAMPLE.emit(&mut small),
        Err(RcpError::BufferTooSmall {
            kind: 30,
            needed: 8,
            available: 7
        })
    );
}

#[test]
fn find_in_walks_options() {
    // NOP, NOP, RCP, EOL, padding.
    let mut area = vec![1, 1];
    area.extend_from_slice(&SAMPLE.to_bytes());
    area.extend_from_slice(&[0, 0]);
    assert_eq!(find_in(&area), Ok(Some((2, SAMPLE))));
    // Behind another option (record route, type 7, length 7).
    let mut area = vec![7, 7, 4, 0, 0, 0, 0];
    area.extend_from_slice(&SAMPLE.to_bytes());
    area.push(0);
    assert_eq!(find_in(&area), Ok(Some((7, SAMPLE))));
    // Nothing after EOL counts.
    let mut area = vec![0];
    area.extend_from_slice(&SAMPLE.to_bytes());
    assert_eq!(find_in(&area), Ok(None));
    assert_eq!(find_in(&[]), Ok(None));
    assert_eq!(find_in(&[1, 1, 1, 1]), Ok(None));
    // Malformed areas.
    assert_eq!(find_in(&[7, 0, 1, 1]), Err(RcpError::BadLength(0)));
    assert_eq!(find_in(&[7, 1, 1, 1]), Err(RcpError::BadLength(1)));
    assert_eq!(find_in(&[7]), Err(RcpError::Truncated));
    assert_eq!(find_in(&[7, 9, 0, 0]), Err(RcpError::Truncated));
    assert_eq!(find_in(&[30, 6, 0, 0, 0, 0]), Err(RcpError::BadLength(6)));
}

#[test]
fn lower_only_lowers() {
    let mut area = vec![1];
    area.extend_from_slice(&SAMPLE.to_bytes());
    area.extend_from_slice(&[0, 0, 0]);
    let before = area.clone();
    assert_eq!(lower_in_place(&mut area, u32::MAX), Ok(false));
    assert_eq!(
        lower_in_place(&mut area, SAMPLE.rate_bytes_per_sec),
        Ok(false)
    );
    assert_eq!(area, before);
    assert_eq!(lower_in_place(&mut area, 1000), Ok(true));
    let (at, o) = find_in(&area).unwrap().unwrap();
    assert_eq!(at, 1);
    assert_eq!(o.rate_bytes_per_sec, 1000);
    assert_eq!(o.rtt_ms, SAMPLE.rtt_ms, "rtt untouched");
    // Only the four rate bytes changed.
    let diff: Vec<usize> = (0..area.len()).filter(|&i| area[i] != before[i]).collect();
    assert!(diff.iter().all(|i| (3..7).contains(i)), "{diff:?}");
    assert_eq!(
        lower_in_place(&mut [1, 1, 0, 0], 5),
        Err(RcpError::NotFound { kind: 30 })
    );
    assert_eq!(lower_in_place(&mut [7, 0], 5), Err(RcpError::BadLength(0)));
    let _ = rcp_option::OPT_NOP;
}

proptest! {
    #[test]
    fn parse_emit_round_trip(rate in any::<u32>(), rtt in any::<u16>()) {
        let o = RcpOption { rate_bytes_per_sec: rate, rtt_ms: rtt };
        let mut buf = [0; 8];
        prop_assert_eq!(o.emit(&mut buf), Ok(8));
        prop_assert_eq!(RcpOption::parse(&buf), Ok(o));
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..48), rate in any::<u32>()) {
        let _ = RcpOption::parse(&bytes);
        let found = find_in(&bytes);
        let mut copy = bytes.clone();
        let lowered = lower_in_place(&mut copy, rate);
        match (found, lowered) {
            (Ok(Some((_, o))), Ok(changed)) => {
                prop_assert_eq!(changed, rate < o.rate_bytes_per_sec);
                let (_, after) = find_in(&copy).unwrap().unwrap();
                prop_assert_eq!(after.rate_bytes_per_sec, o.rate_bytes_per_sec.min(rate));
            }
            (Ok(None), l) => prop_assert_eq!(l, Err(RcpError::NotFound { kind: 30 })),
            (Err(e), l) => prop_assert_eq!(l, Err(e)),
            (Ok(Some(_)), Err(e)) => prop_assert!(false, "found but lower failed: {e}"),
        }
        if copy != bytes {
            prop_assert_eq!(copy.len(), bytes.len());
        }
    }

    #[test]
    fn found_anywhere_among_nops(prefix in 0_usize..32, rate in any::<u32>(), rtt in any::<u16>()) {
        let o = RcpOption { rate_bytes_per_sec: rate, rtt_ms: rtt };
        let mut area = vec![1_u8; prefix];
        area.extend_from_slice(&o.to_bytes());
        prop_assert_eq!(find_in(&area), Ok(Some((prefix, o))));
    }
}

//! The XCP carrier (DESIGN §7.2): the IPv4 option (type 94), the router's
//! "lower H_feedback" operation on whole packets, and the XCP TCP options
//! (ExID 0x5843) — byte vectors, errors, round trips, arbitrary bytes.

use ka_codec::options::{KA_EXID, RCP_EXID, XCP_EXID, XcpEcho, XcpPermitted, XcpTcpOption};
use ka_codec::wire::ipv4::{Ipv4Packet, Ipv4Repr};
use ka_codec::wire::tcp::{TcpOptions, TcpPacket, TcpRepr};
use ka_codec::xcp_option::{
    self, Lowered, OPTION_TYPE, find_in, find_in_packet, lower_feedback_in_packet,
    lower_feedback_in_place,
};
use ka_codec::{KaOption, OptionError, XcpError, XcpOption};
use proptest::prelude::*;

const SAMPLE: XcpOption = XcpOption {
    cwnd_bytes: 0x0102_0304,
    rtt_us: 0x0506_0708,
    feedback_bytes: 0x090A_0B0C,
};

#[test]
fn ipv4_option_bytes() {
    assert_eq!(OPTION_TYPE, 94);
    assert_eq!((XcpOption::LEN, XcpOption::PADDED_LEN), (14, 16));
    let bytes = [94, 14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    assert_eq!(SAMPLE.to_bytes(), bytes);
    assert_eq!(XcpOption::parse(&bytes), Ok(SAMPLE));
    let mut buf = [0xAA; 17];
    assert_eq!(SAMPLE.emit_padded(&mut buf), Ok(16));
    assert_eq!(buf[..14], bytes);
    assert_eq!(buf[14..], [1, 1, 0xAA], "two NOPs, nothing more");
    assert_eq!(SAMPLE.emit(&mut buf), Ok(14));
    // 100 ms, 64 kB window, asking for 1460 bytes less.
    let o = XcpOption {
        cwnd_bytes: 64_000,
        rtt_us: 100_000,
        feedback_bytes: -1460,
    };
    assert_eq!(
        o.to_bytes(),
        [
            94, 14, 0, 0, 0xFA, 0x00, 0, 0x01, 0x86, 0xA0, 0xFF, 0xFF, 0xFA, 0x4C
        ]
    );
}

#[test]
fn ipv4_option_errors() {
    let cases: &[(&[u8], XcpError)] = &[
        (&[], XcpError::Truncated),
        (&[94], XcpError::Truncated),
        (
            &[30, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            XcpError::WrongType {
                found: 30,
                expected: 94,
            },
        ),
        (&[94, 8, 0, 0, 0, 0, 0, 0], XcpError::BadLength(8)),
        (
            &[94, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
            XcpError::BadLength(16),
        ),
        (&[94, 14, 0, 0], XcpError::Truncated),
        (
            &[94, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            XcpError::TrailingBytes {
                declared: 14,
                actual: 15,
            },
        ),
    ];
    for (bytes, err) in cases {
        assert_eq!(XcpOption::parse(bytes), Err(*err), "{bytes:?}");
        assert!(!err.to_string().is_empty());
    }
    assert_eq!(
        SAMPLE.emit_padded(&mut [0; 15]),
        Err(XcpError::BufferTooSmall {
            kind: 94,
            needed: 16,
            available: 15
        })
    );
    assert_eq!(
        SAMPLE.emit(&mut [0; 13]),
        Err(XcpError::BufferTooSmall {
            kind: 94,
            needed: 14,
            available: 13
        })
    );
}

#[test]
fn find_in_walks_options() {
    assert_eq!(find_in(&SAMPLE.to_padded_bytes()), Ok(Some((0, SAMPLE))));
    // Behind a native-RCP option and a NOP.
    let mut area = vec![30, 8, 0, 0, 0, 1, 0, 2, 1];
    area.extend_from_slice(&SAMPLE.to_bytes());
    area.push(0);
    assert_eq!(find_in(&area), Ok(Some((9, SAMPLE))));
    // Nothing after EOL counts.
    let mut area = vec![0];
    area.extend_from_slice(&SAMPLE.to_bytes());
    assert_eq!(find_in(&area), Ok(None));
    assert_eq!(find_in(&[]), Ok(None));
    assert_eq!(find_in(&[7, 0, 1, 1]), Err(XcpError::BadLength(0)));
    assert_eq!(find_in(&[7]), Err(XcpError::Truncated));
    assert_eq!(find_in(&[94, 6, 0, 0, 0, 0]), Err(XcpError::BadLength(6)));
}

#[test]
fn lower_in_options_only_lowers_and_only_touches_feedback() {
    let mut area = vec![1];
    area.extend_from_slice(&SAMPLE.to_padded_bytes());
    area.extend_from_slice(&[0, 0, 0]);
    let before = area.clone();
    assert_eq!(lower_feedback_in_place(&mut area, i32::MAX), Ok(false));
    assert_eq!(
        lower_feedback_in_place(&mut area, SAMPLE.feedback_bytes),
        Ok(false)
    );
    assert_eq!(area, before);
    assert_eq!(lower_feedback_in_place(&mut area, -5), Ok(true));
    let (at, o) = find_in(&area).unwrap().unwrap();
    assert_eq!(at, 1);
    assert_eq!(
        o,
        XcpOption {
            feedback_bytes: -5,
            ..SAMPLE
        }
    );
    let diff: Vec<usize> = (0..area.len()).filter(|&i| area[i] != before[i]).collect();
    assert!(diff.iter().all(|i| (11..15).contains(i)), "{diff:?}");
    assert_eq!(
        lower_feedback_in_place(&mut [1, 1, 0, 0], 5),
        Err(XcpError::NotFound { kind: 94 })
    );
}

/// An IPv4/TCP packet whose header carries `options` (a multiple of 4).
fn packet(options: &[u8], payload: usize) -> Vec<u8> {
    let hl = 20 + options.len();
    let mut p = vec![0u8; hl + payload];
    Ipv4Repr {
        ident: 0x1234,
        dont_frag: true,
        ..Ipv4Repr::new([10, 0, 0, 1], [10, 0, 0, 2], 6, options.len() + payload)
    }
    .emit(&mut p)
    .unwrap();
    p[0] = 0x40 | (hl / 4) as u8;
    p[20..hl].copy_from_slice(options);
    Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
    p
}

#[test]
fn lower_in_packet_keeps_the_checksum_right() {
    // Aligned (option first) and misaligned (option after one NOP, so the
    // feedback bytes straddle 16-bit words).
    let mut aligned = SAMPLE.to_padded_bytes().to_vec();
    aligned.extend_from_slice(&[0; 4]);
    let mut odd = vec![1];
    odd.extend_from_slice(&SAMPLE.to_bytes());
    odd.extend_from_slice(&[0; 5]);
    for opts in [aligned, odd] {
        let mut p = packet(&opts, 100);
        assert!(Ipv4Packet::new_checked(&p[..]).unwrap().verify_checksum());
        let (at, o) = find_in_packet(&p).unwrap().unwrap();
        assert_eq!(o, SAMPLE);
        assert_eq!(p[at], 94);
        let before = p.clone();
        assert_eq!(
            lower_feedback_in_packet(&mut p, i32::MAX),
            Ok(Lowered::Unchanged(SAMPLE))
        );
        assert_eq!(p, before);
        for fb in [1000, 0, -1, i32::MIN] {
            let old = find_in_packet(&p).unwrap().unwrap().1;
            assert_eq!(lower_feedback_in_packet(&mut p, fb), Ok(Lowered::From(old)));
            let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
            assert!(ip.verify_checksum(), "feedback {fb}");
            let now = find_in_packet(&p).unwrap().unwrap().1;
            assert_eq!(now.feedback_bytes, fb.min(old.feedback_bytes));
            assert_eq!(
                (now.cwnd_bytes, now.rtt_us),
                (SAMPLE.cwnd_bytes, SAMPLE.rtt_us)
            );
        }
        // Only the feedback bytes and the checksum ever changed.
        let diff: Vec<usize> = (0..p.len()).filter(|&i| p[i] != before[i]).collect();
        assert!(
            diff.iter()
                .all(|&i| i == 10 || i == 11 || (at + 10..at + 14).contains(&i)),
            "{diff:?}"
        );
    }
}

#[test]
fn lower_in_packet_does_not_launder_a_bad_checksum() {
    let mut p = packet(&SAMPLE.to_padded_bytes(), 20);
    p[10] ^= 0x55;
    let bad = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert!(!bad.verify_checksum());
    assert!(matches!(
        lower_feedback_in_packet(&mut p, -100),
        Ok(Lowered::From(_))
    ));
    assert!(!Ipv4Packet::new_checked(&p[..]).unwrap().verify_checksum());
}

#[test]
fn packet_level_errors() {
    let mut none = packet(&[], 20);
    assert_eq!(find_in_packet(&none), Ok(None));
    assert_eq!(
        lower_feedback_in_packet(&mut none, 0),
        Err(XcpError::NotFound { kind: 94 })
    );
    assert!(matches!(
        lower_feedback_in_packet(&mut [0x60; 40], 0),
        Err(XcpError::Packet(_))
    ));
    assert!(matches!(find_in_packet(&[0x45]), Err(XcpError::Packet(_))));
    // A non-leading fragment never carries the (uncopied) option.
    let mut frag = packet(&SAMPLE.to_padded_bytes(), 16);
    let mut ip = Ipv4Packet::new_unchecked(&mut frag[..]);
    ip.set_flags_and_offset(false, false, 8);
    ip.fill_checksum();
    assert_eq!(find_in_packet(&frag), Ok(None));
    assert_eq!(
        lower_feedback_in_packet(&mut frag, 0),
        Err(XcpError::NotFound { kind: 94 })
    );
    let _ = xcp_option::OPTION_TYPE;
}

#[test]
fn tcp_option_bytes() {
    assert_eq!(XCP_EXID, 0x5843);
    assert_eq!(XcpPermitted::BYTES, [253, 4, 0x58, 0x43]);
    let mut buf = [0u8; 8];
    assert_eq!(XcpPermitted.emit(&mut buf), Ok(4));
    assert_eq!(XcpTcpOption::parse(&buf[..4]), Ok(XcpTcpOption::Permitted));
    let echo = XcpEcho { feedback_bytes: -2 };
    assert_eq!(XcpTcpOption::Echo(echo).emit(&mut buf), Ok(8));
    assert_eq!(buf, [253, 8, 0x58, 0x43, 0xFF, 0xFF, 0xFF, 0xFE]);
    assert_eq!(XcpTcpOption::parse(&buf), Ok(XcpTcpOption::Echo(echo)));
    assert_eq!(XcpTcpOption::Echo(echo).wire_len(), 8);
    assert_eq!(XcpTcpOption::Permitted.wire_len(), 4);
    assert_eq!(
        echo.emit(&mut [0; 7]),
        Err(OptionError::BufferTooSmall {
            needed: 8,
            available: 7
        })
    );
    // The experiments do not mix.
    assert_eq!(
        XcpTcpOption::parse(&[253, 4, 0x4B, 0x41]),
        Err(OptionError::UnknownExId(KA_EXID))
    );
    assert_eq!(
        XcpTcpOption::parse(&[253, 4, 0x4B, 0x52]),
        Err(OptionError::UnknownExId(RCP_EXID))
    );
    assert_eq!(
        KaOption::parse(&XcpPermitted::BYTES),
        Err(OptionError::UnknownExId(XCP_EXID))
    );
    assert_eq!(
        XcpTcpOption::parse(&[253, 6, 0x58, 0x43, 0, 0]),
        Err(OptionError::BadLength(6))
    );
    assert_eq!(
        XcpTcpOption::parse(&[253, 8, 0x58, 0x43, 0]),
        Err(OptionError::Truncated)
    );
    assert_eq!(XcpTcpOption::parse(&[]), Err(OptionError::Truncated));
    assert_eq!(
        XcpTcpOption::parse(&[254, 4, 0x58, 0x43]),
        Err(OptionError::WrongKind(254))
    );
}

#[test]
fn tcp_options_carry_xcp_and_keep_precedence() {
    let syn = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq: 7,
        ack: 0,
        flags: ka_codec::wire::tcp::SYN,
        window: 65535,
        urgent: 0,
        options: TcpOptions {
            mss: Some(1444),
            window_scale: Some(5),
            sack_permitted: true,
            timestamps: Some((1, 0)),
            xcp_permitted: true,
            ..TcpOptions::default()
        },
    };
    let mut buf = [0u8; 80];
    let n = syn.emit(&mut buf, &[], 0).unwrap();
    assert_eq!(n, 44);
    assert_eq!(&buf[40..44], &[253, 4, 0x58, 0x43]);
    assert_eq!(
        TcpRepr::parse(&TcpPacket::new_checked(&buf[..n]).unwrap()).unwrap(),
        syn
    );

    let ack = TcpRepr {
        flags: ka_codec::wire::tcp::ACK,
        options: TcpOptions {
            timestamps: Some((5, 6)),
            xcp_echo: Some(XcpEcho {
                feedback_bytes: 123_456,
            }),
            ..TcpOptions::default()
        },
        ..syn
    };
    let n = ack.emit(&mut buf, b"x", 0).unwrap();
    assert_eq!(&buf[32..40], &[253, 8, 0x58, 0x43, 0x00, 0x01, 0xE2, 0x40]);
    let back = TcpRepr::parse(&TcpPacket::new_checked(&buf[..n]).unwrap()).unwrap();
    assert_eq!(back.options.xcp_echo, ack.options.xcp_echo);

    // Next to a KA or an RCP option, XCP options are dropped.
    let xcp = [253, 4, 0x58, 0x43, 253, 8, 0x58, 0x43, 0, 0, 0, 9];
    for other in [[253u8, 4, 0x4B, 0x41], [253, 4, 0x4B, 0x52]] {
        let mut opts = other.to_vec();
        opts.extend_from_slice(&xcp);
        let o = TcpOptions::parse(&opts).unwrap();
        assert!(!o.xcp_permitted && o.xcp_echo.is_none(), "{other:?}");
    }
    let o = TcpOptions::parse(&xcp).unwrap();
    assert!(o.xcp_permitted);
    assert_eq!(o.xcp_echo.map(|e| e.feedback_bytes), Some(9));
}

proptest! {
    #[test]
    fn ipv4_option_round_trip(cwnd in any::<u32>(), rtt in any::<u32>(), fb in any::<i32>()) {
        let o = XcpOption { cwnd_bytes: cwnd, rtt_us: rtt, feedback_bytes: fb };
        let mut buf = [0; 16];
        prop_assert_eq!(o.emit_padded(&mut buf), Ok(16));
        prop_assert_eq!(XcpOption::parse(&buf[..14]), Ok(o));
        prop_assert_eq!(find_in(&buf), Ok(Some((0, o))));
    }

    #[test]
    fn tcp_option_round_trip(fb in any::<i32>()) {
        let e = XcpTcpOption::Echo(XcpEcho { feedback_bytes: fb });
        let mut buf = [0; 8];
        prop_assert_eq!(e.emit(&mut buf), Ok(8));
        prop_assert_eq!(XcpTcpOption::parse(&buf), Ok(e));
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), fb in any::<i32>()) {
        let _ = XcpOption::parse(&bytes);
        let _ = XcpTcpOption::parse(&bytes);
        if let Ok(o) = XcpTcpOption::parse(&bytes) {
            let mut buf = [0u8; 8];
            let n = o.emit(&mut buf).unwrap();
            prop_assert_eq!(&buf[..n], &bytes[..]);
        }
        let found = find_in(&bytes);
        let mut copy = bytes.clone();
        let lowered = lower_feedback_in_place(&mut copy, fb);
        match (found, lowered) {
            (Ok(Some((at, o))), Ok(changed)) => {
                prop_assert_eq!(changed, fb < o.feedback_bytes);
                let (at2, after) = find_in(&copy).unwrap().unwrap();
                prop_assert_eq!(at2, at);
                prop_assert_eq!(after.feedback_bytes, o.feedback_bytes.min(fb));
            }
            (Ok(None), l) => prop_assert_eq!(l, Err(XcpError::NotFound { kind: 94 })),
            (Err(e), l) => prop_assert_eq!(l, Err(e)),
            (Ok(Some(_)), Err(e)) => prop_assert!(false, "found but lower failed: {e}"),
        }
        // The same bytes as a whole packet.
        let mut pkt = bytes.clone();
        let before = find_in_packet(&pkt);
        match lower_feedback_in_packet(&mut pkt, fb) {
            Ok(Lowered::From(o)) => {
                prop_assert_eq!(before, Ok(Some((find_in_packet(&pkt).unwrap().unwrap().0, o))));
                prop_assert!(fb < o.feedback_bytes);
            }
            Ok(Lowered::Unchanged(_)) => prop_assert_eq!(&pkt, &bytes),
            Err(_) => prop_assert_eq!(&pkt, &bytes),
        }
    }

    #[test]
    fn lowering_a_valid_packet_keeps_it_valid(
        prefix in 0_usize..8, cwnd in any::<u32>(), rtt in any::<u32>(),
        fb in any::<i32>(), to in any::<i32>(), payload in 0_usize..64,
    ) {
        let o = XcpOption { cwnd_bytes: cwnd, rtt_us: rtt, feedback_bytes: fb };
        let mut opts = vec![1u8; prefix];
        opts.extend_from_slice(&o.to_bytes());
        while opts.len() % 4 != 0 {
            opts.push(0);
        }
        let mut p = packet(&opts, payload);
        let r = lower_feedback_in_packet(&mut p, to).unwrap();
        prop_assert_eq!(r, if to < fb { Lowered::From(o) } else { Lowered::Unchanged(o) });
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        prop_assert!(ip.verify_checksum());
        let (at, now) = find_in_packet(&p).unwrap().unwrap();
        prop_assert_eq!(at, 20 + prefix);
        prop_assert_eq!(now, XcpOption { feedback_bytes: fb.min(to), ..o });
    }
}

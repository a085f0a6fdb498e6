//! The view-taking entry points do exactly what the byte-taking ones do:
//! a packet parsed once by its caller (`ka_codec::wire::Layout::parse`)
//! and handed on through `Rwm::process_parsed`, `Port::push_parsed` and
//! `Port::on_reverse_segment` leaves the router as the same bytes, at the
//! same times, with the same counters, as through `Rwm::process`,
//! `Port::push` and `Port::on_reverse`.

mod common;

use std::time::{Duration, Instant};

use common::crowd::tcp;
use ka_codec::options::{KaRate, RcpEcho};
use ka_codec::scale::Code;
use ka_codec::wire::{Layout, SegmentMut};
use ka_codec::{RcpOption, XcpOption};
use ka_router::{
    ControllerKind, CrowdConfig, EchoConfig, Port, PortConfig, Rwm, RwmConfig, Side, Signalling,
    XcpConfig,
};
use proptest::prelude::*;

/// The packet from the other end: IPv4 source and destination swapped
/// (the header checksum, a one's-complement sum, stays right).
fn swap_addrs(mut p: Vec<u8>) -> Vec<u8> {
    let src: [u8; 4] = p[12..16].try_into().unwrap();
    p.copy_within(16..20, 12);
    p[16..20].copy_from_slice(&src);
    p
}

/// TCP segments of a few connections (handshakes, data, ACKs with KA-Rate
/// or RCP-Echo echoes, RCP and XCP IPv4 options), IPv6, UDP and noise.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let tcp_v4 = (
        0u16..4,
        prop_oneof![
            Just(0x02u8),
            Just(0x12),
            Just(0x10),
            Just(0x11),
            any::<u8>()
        ],
        0usize..1460,
        0u8..4,
        3u8..=185,
        any::<u32>(),
    )
        .prop_map(|(port, flags, n, kind, code, rate)| {
            let (opts, ip_opts) = match kind {
                0 => {
                    let mut b = [0u8; 8];
                    KaRate::new(Code::from_wire(code).unwrap_or(Code::MAX), 1)
                        .emit(&mut b[..6])
                        .unwrap();
                    b[6] = 1;
                    b[7] = 1;
                    (b.to_vec(), Vec::new())
                }
                1 => {
                    let mut b = [0u8; 8];
                    RcpEcho {
                        rate_bytes_per_sec: rate,
                    }
                    .emit(&mut b)
                    .unwrap();
                    let ip = RcpOption {
                        rate_bytes_per_sec: rate,
                        rtt_ms: 50,
                    }
                    .to_bytes();
                    (b.to_vec(), ip.to_vec())
                }
                2 => {
                    let x = XcpOption {
                        cwnd_bytes: rate,
                        rtt_us: 20_000,
                        feedback_bytes: 3000,
                    };
                    (Vec::new(), x.to_padded_bytes().to_vec())
                }
                _ => (vec![2, 4, 5, 0xb4, 1, 3, 3, 7], Vec::new()),
            };
            // Handshakes RWM can follow: SYN (ISN 100), SYN-ACK (ISN 200)
            // from the responder, then either side's segments.
            let from_responder = flags == 0x12 || (flags & 0x10 != 0 && port % 2 == 1);
            let (s, d, seq, ack) = match (flags, from_responder) {
                (0x02, _) => (40_000 + port, 5001, 100u32, 0u32),
                (0x12, _) => (5001, 40_000 + port, 200, 101),
                (_, true) => (5001, 40_000 + port, 201, 101),
                (_, false) => (40_000 + port, 5001, 101, 201),
            };
            let mut seg = tcp(s, d, flags, &opts, n);
            seg[4..8].copy_from_slice(&seq.to_be_bytes());
            seg[8..12].copy_from_slice(&ack.to_be_bytes());
            seg[14..16].copy_from_slice(&65_535u16.to_be_bytes());
            let p = common::ipv4(&seg, &ip_opts, false, false, 0, port, 64, 6);
            if from_responder { swap_addrs(p) } else { p }
        });
    let valid = prop_oneof![
        4 => tcp_v4,
        1 => (0usize..1400).prop_map(|n| {
            let seg = tcp(40_000, 5001, 0x10, &[], n);
            common::ipv6(&[], 6, &seg, 64)
        }),
        1 => (0u16..3, 32usize..1500).prop_map(|(p, n)| common::udp_v4(p, 9, n, 0, 0)),
        1 => (0u8..12).prop_map(common::indicator_v4),
    ];
    prop_oneof![
        8 => (valid, prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..2))
            .prop_map(|(mut p, edits)| {
                let n = p.len();
                for (i, b) in edits {
                    p[i.index(n)] = b;
                }
                p
            }),
        1 => prop::collection::vec(any::<u8>(), 0..120),
    ]
}

fn config() -> impl Strategy<Value = PortConfig> {
    (0u8..4, 0u8..3, any::<bool>()).prop_map(|(carrier, controller, ttl)| {
        let controller = match controller {
            0 => ControllerKind::Rcp,
            1 => ControllerKind::Crowd(CrowdConfig::default()),
            _ => ControllerKind::Echo(EchoConfig::default()),
        };
        let mut c = PortConfig::new(20_000_000);
        c.signalling = match carrier {
            0 => Signalling::Ka { controller },
            1 => Signalling::NativeRcp { controller },
            2 => Signalling::Xcp(XcpConfig::default()),
            _ => Signalling::None,
        };
        c.decrement_ttl = ttl;
        c.queue_limit = 32;
        c
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parsed_entry_points_match_the_byte_ones(
        packets in prop::collection::vec((input(), 0u64..2_000_000, any::<bool>()), 0..48),
        config in config(),
    ) {
        let t0 = Instant::now();
        let mut a = Port::new(config, t0);
        let mut b = Port::new(config, t0);
        let mut rwm_a = Rwm::new(RwmConfig::new(20_000_000), t0).unwrap();
        let mut rwm_b = Rwm::new(RwmConfig::new(20_000_000), t0).unwrap();
        let mut t = t0;
        let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
        for (p, gap, reverse) in packets {
            t += Duration::from_nanos(gap);
            let (mut pa, mut pb) = (p.clone(), p);
            if reverse {
                let side = Side::Reverse;
                let oa = rwm_a.process(t, side, &mut pa);
                let changed_a = a.on_reverse(t, &mut pa);
                let (ob, changed_b) = match SegmentMut::parse(&mut pb) {
                    Ok(mut seg) => {
                        let o = rwm_b.process_parsed(t, side, &mut seg);
                        (o, b.on_reverse_segment(t, &mut seg))
                    }
                    Err(_) => (rwm_b.process(t, side, &mut pb), b.on_reverse(t, &mut pb)),
                };
                prop_assert_eq!(oa, ob);
                prop_assert_eq!(changed_a, changed_b);
                prop_assert_eq!(&pa, &pb);
            } else {
                let side = Side::Forward;
                let oa = rwm_a.process(t, side, &mut pa);
                let va = a.push(t, pa);
                let (ob, vb) = match Layout::parse(&pb) {
                    Ok(layout) => {
                        let o = rwm_b.process_parsed(t, side, &mut SegmentMut::with_layout(&mut pb, layout));
                        (o, b.push_parsed(t, pb, layout))
                    }
                    Err(_) => (rwm_b.process(t, side, &mut pb), b.push(t, pb)),
                };
                prop_assert_eq!(oa, ob);
                prop_assert_eq!(va, vb);
            }
            while let Some(x) = a.poll_transmit(t) {
                out_a.push((t, x));
            }
            while let Some(x) = b.poll_transmit(t) {
                out_b.push((t, x));
            }
        }
        let end = t + Duration::from_secs(1);
        while let Some(x) = a.poll_transmit(end) {
            out_a.push((end, x));
        }
        while let Some(x) = b.poll_transmit(end) {
            out_b.push((end, x));
        }
        prop_assert_eq!(out_a, out_b);
        prop_assert_eq!(a.snapshot(), b.snapshot());
        prop_assert_eq!(rwm_a.stats(), rwm_b.stats());
    }
}

/// The generator above reaches RWM's rewrite and the echo stage's: one
/// fixed run with handshakes, data and echoes through both paths.
#[test]
fn the_paths_that_rewrite_are_reached() {
    let t0 = Instant::now();
    let mut c = PortConfig::new(20_000_000);
    c.signalling = Signalling::Ka {
        controller: ControllerKind::Echo(EchoConfig::default()),
    };
    let mut port = Port::new(c, t0);
    let mut rwm = Rwm::new(RwmConfig::new(1_000_000), t0).unwrap();
    let seg = |s: u16, d: u16, flags: u8, seq: u32, ack: u32, opts: &[u8], n: usize| {
        let mut t = tcp(s, d, flags, opts, n);
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[14..16].copy_from_slice(&65_535u16.to_be_bytes());
        let p = common::ipv4(&t, &[], false, false, 0, 1, 64, 6);
        if s == 5001 { swap_addrs(p) } else { p }
    };
    let mut t = t0;
    let mut rewritten = 0;
    let mut echoes = 0;
    for p in [
        seg(40_000, 5001, 0x02, 100, 0, &[], 0),
        seg(5001, 40_000, 0x12, 200, 101, &[], 0),
        seg(40_000, 5001, 0x10, 101, 201, &[], 1000),
    ] {
        t += Duration::from_millis(10);
        let mut p = p;
        let mut view = SegmentMut::parse(&mut p).unwrap();
        if let ka_router::RwmOutcome::Rewritten { .. } =
            rwm.process_parsed(t, Side::Forward, &mut view)
        {
            rewritten += 1;
        }
        let layout = view.layout();
        port.push_parsed(t, p, layout);
    }
    let mut ka = [0u8; 8];
    KaRate::new(Code::MAX, 1).emit(&mut ka[..6]).unwrap();
    ka[6] = 1;
    ka[7] = 1;
    for _ in 0..20 {
        t += Duration::from_millis(10);
        let mut p = seg(5001, 40_000, 0x10, 201, 1101, &ka, 0);
        let mut view = SegmentMut::parse(&mut p).unwrap();
        if let ka_router::RwmOutcome::Rewritten { .. } =
            rwm.process_parsed(t, Side::Reverse, &mut view)
        {
            rewritten += 1;
        }
        if port.on_reverse_segment(t, &mut view) {
            echoes += 1;
        }
        while port.poll_transmit(t).is_some() {}
    }
    assert!(rewritten > 0, "RWM never lowered a window");
    assert!(echoes > 0, "no echo was lowered");
}

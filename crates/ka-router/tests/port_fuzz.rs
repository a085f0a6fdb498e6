//! Arbitrary bytes into `Port::push` never panic, every packet is accounted
//! for, and whatever is queued comes out again (or is counted as dropped
//! by the queue discipline), with every queue discipline. The disciplines
//! also get arbitrary bytes directly, past the port's ingress checks.

mod common;

use std::time::{Duration, Instant};

use ka_codec::XcpOption;
use ka_codec::xcp_option;
use ka_router::qdisc::{FqCodelConfig, RedConfig};
use ka_router::{
    Carrier, ControllerKind, CrowdConfig, DropReason, EchoConfig, ModeConfig, Port, PortConfig,
    PushOutcome, QdiscConfig, Signalling, Verdict,
};
use proptest::prelude::*;

/// Either random bytes or a valid packet with a few bytes overwritten (which
/// reaches the deeper parsing paths far more often than pure noise).
fn input() -> impl Strategy<Value = Vec<u8>> {
    let valid = prop_oneof![
        (20usize..1600).prop_map(|n| common::ipv4_simple(n, 7)),
        (0usize..1600).prop_map(|n| common::ipv6(&[], 6, &vec![1; n], 64)),
        (0usize..1600).prop_map(|n| common::ipv6(
            &[common::Ext::HopByHop(1), common::Ext::Routing(2)],
            17,
            &vec![2; n],
            64
        )),
        (0u8..12).prop_map(common::indicator_v4),
        (0u16..6, 32usize..1600).prop_map(|(port, n)| common::udp_v4(port, 9, n, 0, 0)),
        // TCP segments of a few connections, any flags (the crowd
        // controller follows connections by them).
        (0u16..4, any::<u8>(), 20usize..1500).prop_map(|(port, flags, n)| {
            let mut seg = vec![0u8; n];
            seg[0..2].copy_from_slice(&(40_000 + port).to_be_bytes());
            seg[2..4].copy_from_slice(&5001u16.to_be_bytes());
            seg[12] = 5 << 4;
            seg[13] = flags;
            common::ipv4(&seg, &[], false, false, 0, port, 64, 6)
        }),
        xcp_packet(),
    ];
    // Any ECN codepoint, so the disciplines' marking paths run too.
    let valid = (valid, 0u8..4).prop_map(|(mut p, e)| {
        let _ = ka_codec::wire::ecn::set_ecn(&mut p, ka_codec::wire::ecn::Ecn::from_bits(e));
        p
    });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        (
            valid,
            prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            any::<bool>(),
        )
            .prop_map(|(mut p, edits, fix_checksum)| {
                let n = p.len();
                for (i, b) in edits {
                    p[i.index(n)] = b;
                }
                if fix_checksum && p.len() >= 20 && p[0] >> 4 == 4 {
                    let hl = usize::from(p[0] & 0xF) * 4;
                    if (20..=p.len()).contains(&hl) {
                        p[10] = 0;
                        p[11] = 0;
                        let c = ka_codec::wire::checksum::checksum(&p[..hl]);
                        p[10..12].copy_from_slice(&c.to_be_bytes());
                    }
                }
                p
            }),
    ]
}

/// An IPv4 packet carrying the XCP option (DESIGN §7.2) with any header
/// values, after 0–3 NOPs (so the feedback field sits at any alignment).
fn xcp_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        0usize..1500,
        any::<u32>(),
        prop_oneof![Just(0u32), 1u32..2_000_000, any::<u32>()],
        any::<i32>(),
        0usize..4,
        any::<u16>(),
    )
        .prop_map(|(n, cwnd, rtt, feedback, nops, ident)| {
            let opt = XcpOption {
                cwnd_bytes: cwnd,
                rtt_us: rtt,
                feedback_bytes: feedback,
            };
            let mut options = vec![1u8; nops];
            options.extend_from_slice(&opt.to_bytes());
            options.resize(options.len().div_ceil(4) * 4, 0);
            common::ipv4(&vec![5; n], &options, false, false, 0, ident, 64, 17)
        })
}

fn carrier() -> impl Strategy<Value = Carrier> {
    prop_oneof![
        Just(Carrier::Ka),
        Just(Carrier::NativeRcp),
        Just(Carrier::None),
        Just(Carrier::Xcp),
    ]
}

/// Every discipline, with knobs small enough that a 16-packet queue and a
/// few milliseconds reach their early drops, marks and overflow paths.
fn qdisc() -> impl Strategy<Value = QdiscConfig> {
    let red = (
        0.0f64..8.0,
        1.0f64..8.0,
        0.0f64..=1.0,
        0.01f64..=1.0,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(min_th, span, max_p, w_q, gentle, ecn)| {
            QdiscConfig::Red(RedConfig {
                min_th,
                max_th: min_th + span,
                max_p,
                w_q,
                gentle,
                ecn,
                mean_packet_bytes: 1500,
            })
        });
    let fq = (
        1usize..8,
        0usize..3000,
        0u64..3000,
        0u64..20_000,
        any::<bool>(),
        0usize..20_000,
    )
        .prop_map(
            |(flows, quantum, target_us, interval_us, ecn, memory_limit)| {
                QdiscConfig::FqCodel(FqCodelConfig {
                    flows,
                    quantum,
                    target: Duration::from_micros(target_us),
                    interval: Duration::from_micros(interval_us),
                    ecn,
                    memory_limit,
                })
            },
        );
    prop_oneof![
        Just(QdiscConfig::DropTail),
        Just(QdiscConfig::Red(RedConfig::default())),
        Just(QdiscConfig::FqCodel(FqCodelConfig::default())),
        red,
        fq,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn disciplines_take_any_bytes(
        packets in prop::collection::vec((input(), 0u64..3_000_000, any::<bool>()), 0..64),
        qdisc in qdisc(),
        limit in 0usize..16,
        seed in any::<u64>(),
    ) {
        let mut q = qdisc.build(limit, 10_000_000, seed);
        let (mut t, mut accepted, mut refused, mut out) = (0u64, 0u64, 0u64, 0u64);
        for (p, gap, deq) in packets {
            t += gap;
            match q.enqueue(t, p) {
                Verdict::Queued | Verdict::Marked => accepted += 1,
                Verdict::Dropped(_) => refused += 1,
            }
            prop_assert!(q.len() <= limit);
            if deq && q.dequeue(t).is_some() {
                out += 1;
            }
            let flows = q.active_flows().unwrap_or(usize::from(!q.is_empty()));
            prop_assert!(flows <= q.len());
            prop_assert_eq!(q.oldest_enqueued_at().is_some(), !q.is_empty());
        }
        while let Some(d) = q.dequeue(t) {
            prop_assert!(d.enqueued_at <= t);
            out += 1;
            t += 1_000_000;
        }
        prop_assert_eq!((q.len(), q.bytes()), (0, 0));
        let s = q.stats();
        // Every arrival was refused, or left, or was dropped later.
        prop_assert_eq!(accepted + refused, out + s.drops_overflow + s.drops_aqm);
    }

    #[test]
    fn push_never_panics_and_accounts(
        packets in prop::collection::vec((input(), 0u64..3_000_000), 0..64),
        sig in carrier(),
        ipv6_signal in any::<bool>(),
        queue in 0usize..16,
        delay_us in 0u64..5_000,
        qdisc in qdisc(),
        seed in any::<u64>(),
        controller in 0u8..3,
        reverse in prop::collection::vec(any::<bool>(), 64),
    ) {
        let t0 = Instant::now();
        let mut cfg = PortConfig::new(10_000_000);
        let controller = match controller {
            0 => ControllerKind::Rcp,
            1 => ControllerKind::Crowd(CrowdConfig::default()),
            _ => ControllerKind::Echo(EchoConfig::default()),
        };
        cfg.signalling = Signalling::new(sig, controller, ka_router::XcpConfig::default());
        cfg.ipv6_signal = ipv6_signal;
        cfg.queue_limit = queue;
        cfg.qdisc = qdisc;
        cfg.seed = seed;
        cfg.delay = Duration::from_micros(delay_us);
        cfg.mode = ModeConfig { threshold_frac: 0.5, hold: None, foreign_frac: 0.0, ..ModeConfig::default() };
        let mut port = Port::new(cfg, t0);
        let mut t = t0;
        let (mut queued, mut dropped, mut out) = (0u64, 0u64, 0u64);
        // Arrivals the queue discipline refused (the rest of its drops
        // happen to packets it had queued: CoDel, FQ-CoDel's overflow).
        let mut refused = 0u64;
        let mut bytes_out = 0u64;
        for (k, (mut p, gap)) in packets.into_iter().enumerate() {
            t += Duration::from_nanos(gap);
            // Some packets pass the reverse hook first (the echo
            // controller reads and lowers their echoes): never a panic,
            // never another length.
            if reverse.get(k).copied().unwrap_or(false) {
                let n = p.len();
                port.on_reverse(t, &mut p);
                prop_assert_eq!(p.len(), n);
            }
            match port.push(t, p) {
                PushOutcome::Queued | PushOutcome::Marked => queued += 1,
                PushOutcome::Dropped(DropReason::QueueFull | DropReason::Aqm) => {
                    dropped += 1;
                    refused += 1;
                }
                PushOutcome::Dropped(
                    DropReason::Malformed | DropReason::TtlExpired | DropReason::NotIp,
                ) => dropped += 1,
            }
            while let Some(p) = port.poll_transmit(t) {
                out += 1;
                bytes_out += p.len() as u64;
            }
        }
        // Drain through poll_timeout only.
        let mut guard = 0;
        while let Some(next) = port.poll_timeout() {
            prop_assert!(next >= t, "timeout went backwards");
            t = t.max(next);
            while let Some(p) = port.poll_transmit(t) {
                out += 1;
                bytes_out += p.len() as u64;
            }
            guard += 1;
            prop_assert!(guard < 10_000, "poll_timeout never settles");
        }
        let s = port.snapshot();
        let c = s.counters;
        prop_assert_eq!(s.queue_packets, 0);
        prop_assert_eq!(s.in_flight, 0);
        prop_assert_eq!(c.packets_in, queued + dropped);
        prop_assert_eq!(c.drops_malformed + c.drops_ttl + c.non_ip + refused, dropped);
        prop_assert!(c.drops_queue + c.drops_aqm >= refused);
        let dropped_later = c.drops_queue + c.drops_aqm - refused;
        prop_assert_eq!(c.packets_out, out);
        prop_assert_eq!(c.bytes_out, bytes_out);
        // Every queued packet leaves as one piece, or two if it was split,
        // unless the discipline dropped it after queueing it.
        prop_assert_eq!(out + dropped_later, queued + c.fragments_made);
        if sig != Carrier::Ka {
            prop_assert_eq!(c.fragments_made, 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// An XCP port only ever lowers `H_feedback`, changes nothing else but
    /// the TTL and the header checksum (which stays valid), and never
    /// fragments.
    #[test]
    fn xcp_port_only_lowers_feedback(
        packets in prop::collection::vec((xcp_packet(), 0u64..40_000_000), 1..96),
        alpha in 0.0f64..2.0,
        beta in 0.0f64..2.0,
        gamma in 0.0f64..1.0,
        rate_mbit in 1u64..200,
    ) {
        let t0 = Instant::now();
        let mut cfg = PortConfig::new(rate_mbit * 1_000_000);
        cfg.signalling = Signalling::Xcp(ka_router::XcpConfig { alpha, beta, gamma });
        cfg.queue_limit = 1000;
        let mut port = Port::new(cfg, t0);
        let mut t = t0;
        let mut sent = std::collections::HashMap::new();
        let mut out = Vec::new();
        for (k, (mut p, gap)) in packets.into_iter().enumerate() {
            // Unique identification per packet, to match input and output.
            let id = k as u16;
            p[4..6].copy_from_slice(&id.to_be_bytes());
            p[10] = 0;
            p[11] = 0;
            let hl = usize::from(p[0] & 0xF) * 4;
            let c = ka_codec::wire::checksum::checksum(&p[..hl]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            t += Duration::from_nanos(gap);
            sent.insert(id, p.clone());
            prop_assert_eq!(port.push(t, p), PushOutcome::Queued);
            while let Some(p) = port.poll_transmit(t) {
                out.push(p);
            }
        }
        while let Some(next) = port.poll_timeout() {
            t = t.max(next);
            while let Some(p) = port.poll_transmit(t) {
                out.push(p);
            }
        }
        prop_assert_eq!(out.len(), sent.len());
        let mut lowered = 0;
        for p in &out {
            prop_assert!(common::v4_checksum_ok(p));
            let id = u16::from_be_bytes([p[4], p[5]]);
            let orig = &sent[&id];
            prop_assert_eq!(p.len(), orig.len());
            let (at, o) = xcp_option::find_in_packet(p).unwrap().unwrap();
            let (at0, i) = xcp_option::find_in_packet(orig).unwrap().unwrap();
            prop_assert_eq!(at, at0);
            prop_assert!(o.feedback_bytes <= i.feedback_bytes);
            prop_assert_eq!((o.cwnd_bytes, o.rtt_us), (i.cwnd_bytes, i.rtt_us));
            if o.feedback_bytes < i.feedback_bytes {
                lowered += 1;
            }
            // Everything but TTL (8), checksum (10..12) and H_feedback.
            for (j, (a, b)) in p.iter().zip(orig.iter()).enumerate() {
                if j != 8 && j != 10 && j != 11 && !(at + 10..at + 14).contains(&j) {
                    prop_assert_eq!(a, b, "byte {}", j);
                }
            }
        }
        prop_assert_eq!(port.snapshot().counters.xcp_feedback_lowered, lowered);
        prop_assert_eq!(port.snapshot().counters.fragments_made, 0);
    }
}

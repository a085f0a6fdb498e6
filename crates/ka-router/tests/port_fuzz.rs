//! Arbitrary bytes into `Port::push` never panic, every packet is accounted
//! for, and whatever is queued comes out again.

mod common;

use std::time::{Duration, Instant};

use ka_router::{DropReason, ModeConfig, Port, PortConfig, PushOutcome, Signalling};
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
    ];
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

fn signalling() -> impl Strategy<Value = Signalling> {
    prop_oneof![
        Just(Signalling::Ka),
        Just(Signalling::NativeRcp),
        Just(Signalling::None)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn push_never_panics_and_accounts(
        packets in prop::collection::vec((input(), 0u64..3_000_000), 0..64),
        sig in signalling(),
        ipv6_signal in any::<bool>(),
        queue in 0usize..16,
        delay_us in 0u64..5_000,
    ) {
        let t0 = Instant::now();
        let mut cfg = PortConfig::new(10_000_000);
        cfg.signalling = sig;
        cfg.ipv6_signal = ipv6_signal;
        cfg.queue_limit = queue;
        cfg.delay = Duration::from_micros(delay_us);
        cfg.mode = ModeConfig { threshold_frac: 0.5, hold: None, foreign_frac: 0.0 };
        let mut port = Port::new(cfg, t0);
        let mut t = t0;
        let (mut queued, mut dropped, mut out) = (0u64, 0u64, 0u64);
        // Arrivals the queue discipline refused (the rest of its drops
        // happen to packets it had queued: CoDel, FQ-CoDel's overflow).
        let mut refused = 0u64;
        let mut bytes_out = 0u64;
        for (p, gap) in packets {
            t += Duration::from_nanos(gap);
            match port.push(t, p) {
                PushOutcome::Queued | PushOutcome::Marked => queued += 1,
                PushOutcome::Dropped(DropReason::QueueFull | DropReason::Aqm) => {
                    dropped += 1;
                    refused += 1;
                }
                PushOutcome::Dropped(DropReason::Malformed | DropReason::TtlExpired) => dropped += 1,
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
        prop_assert_eq!(c.drops_malformed + c.drops_ttl + refused, dropped);
        prop_assert!(c.drops_queue + c.drops_aqm >= refused);
        let dropped_later = c.drops_queue + c.drops_aqm - refused;
        prop_assert_eq!(c.packets_out, out);
        prop_assert_eq!(c.bytes_out, bytes_out);
        // Every queued packet leaves as one piece, or two if it was split,
        // unless the discipline dropped it after queueing it.
        prop_assert_eq!(out + dropped_later, queued + c.fragments_made);
        if sig != Signalling::Ka {
            prop_assert_eq!(c.fragments_made, 0);
        }
    }
}

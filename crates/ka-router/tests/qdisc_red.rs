//! RED (DESIGN §4.2) driven directly in virtual time: the marking curve
//! with count-based spacing, the EWMA with idle-time correction, ECN, the
//! hard limit, and one run through a `Port`.

mod common;

use std::time::{Duration, Instant};

use ka_router::qdisc::{DropCause, Nanos, Red, RedConfig};
use ka_router::{
    DropReason, Port, PortConfig, PushOutcome, QdiscConfig, QueueDiscipline, Signalling, Verdict,
};

const ECT0: u8 = 2;
const NOT_ECT: u8 = 0;

fn pkt(ecn: u8, seq: u32) -> Vec<u8> {
    common::udp_v4(1000, 2000, 1500, ecn, seq)
}

/// Holds a RED queue at `q` packets (every arrival followed by one
/// departure) for `warmup` arrivals, then counts the congested verdicts
/// (marks or drops) of the next `n` arrivals. Returns (average, fraction
/// congested, the gaps between congested arrivals).
fn at_fixed_queue(config: RedConfig, q: usize, ecn: u8, n: usize) -> (f64, f64, Vec<usize>) {
    let mut red = Red::new(config, 4000, 100_000_000, 42);
    let mut t: Nanos = 0;
    let mut seq = 0;
    while red.len() < q {
        red.enqueue(t, pkt(ecn, seq));
        seq += 1;
    }
    let warmup = 6000; // (1 − 0.002)^6000 = 6·10⁻⁶: the average is at q.
    let (mut hits, mut gaps, mut since) = (0usize, Vec::new(), 0usize);
    for i in 0..warmup + n {
        t += 1000;
        let v = red.enqueue(t, pkt(ecn, seq));
        seq += 1;
        while red.len() > q {
            red.dequeue(t);
        }
        if i < warmup {
            continue;
        }
        since += 1;
        let congested = match v {
            Verdict::Marked => {
                assert_eq!(ecn, ECT0);
                true
            }
            Verdict::Dropped(DropCause::Aqm) => {
                assert_eq!(ecn, NOT_ECT);
                true
            }
            Verdict::Queued => false,
            Verdict::Dropped(DropCause::Overflow) => panic!("below the hard limit"),
        };
        if congested {
            hits += 1;
            gaps.push(since);
            since = 0;
        }
    }
    (red.average(), hits as f64 / n as f64, gaps)
}

#[test]
fn marking_rate_matches_the_curve() {
    let c = RedConfig::default();
    // p_b: the linear part (0.01 … 0.09), the gentle part (0.28, 0.46)
    // and the forced region (2 · max_th = 1500 on).
    let mut worst: f64 = 0.0;
    for (q, ecn) in [
        (300, ECT0),
        (500, ECT0),
        (700, NOT_ECT),
        (740, ECT0),
        (900, ECT0),
        (1050, NOT_ECT),
        (1600, ECT0),
    ] {
        let (avg, measured, gaps) = at_fixed_queue(c, q, ecn, 100_000);
        assert!((avg - q as f64).abs() < 0.01, "avg {avg} vs q {q}");
        let p_b = c.probability(avg);
        let want = c.marking_rate(avg);
        let err = measured - want;
        eprintln!(
            "q {q:4}: p_b {p_b:.4}, expected fraction {want:.4}, measured {measured:.4}, error {:+.2} pp",
            err * 100.0
        );
        assert!(err.abs() < 0.02, "q {q}: measured {measured}, want {want}");
        worst = worst.max(err.abs());
        // Count-based spacing: never more than ⌈1/p_b⌉ arrivals between
        // marks (a geometric gap would exceed it many times in 10⁵).
        let max_gap = gaps.iter().max().copied().unwrap_or(0);
        assert!(
            max_gap as f64 <= (1.0 / p_b).ceil(),
            "q {q}: gap {max_gap} > 1/p_b = {}",
            1.0 / p_b
        );
    }
    eprintln!("worst error {:.2} pp", worst * 100.0);
}

#[test]
fn the_curve_itself() {
    let c = RedConfig::default();
    assert_eq!(c.probability(249.9), 0.0);
    assert_eq!(c.probability(250.0), 0.0);
    assert!((c.probability(500.0) - 0.05).abs() < 1e-12);
    assert!((c.probability(750.0) - 0.1).abs() < 1e-12);
    assert!((c.probability(1125.0) - 0.55).abs() < 1e-12);
    assert_eq!(c.probability(1500.0), 1.0);
    let abrupt = RedConfig { gentle: false, ..c };
    assert!((abrupt.probability(749.0) - 0.0998).abs() < 1e-12);
    assert_eq!(abrupt.probability(750.0), 1.0);
    // Uniform gaps on {1..10} at p_b = 0.1: mean 5.5.
    assert!((c.marking_rate(750.0 - 1e-9) - 1.0 / 5.5).abs() < 1e-6);
    assert_eq!(c.marking_rate(100.0), 0.0);
    assert_eq!(c.marking_rate(2000.0), 1.0);
}

#[test]
fn without_gentle_everything_above_max_th_is_congested() {
    let c = RedConfig {
        gentle: false,
        ..RedConfig::default()
    };
    let (_, measured, _) = at_fixed_queue(c, 800, NOT_ECT, 10_000);
    assert_eq!(measured, 1.0);
}

#[test]
fn average_follows_the_ewma_with_idle_correction() {
    let c = RedConfig::default();
    let w = c.w_q;
    let cap = 10_000_000; // 10 Mbit/s: a 1500-byte packet takes 1.2 ms
    let mut red = Red::new(c, 1000, cap, 1);
    let mut want = 0.0;
    // 200 arrivals 1 µs apart, nothing leaves: avg ← (1−w)·avg + w·q.
    for k in 0..200u64 {
        red.enqueue(k * 1000, pkt(NOT_ECT, k as u32));
        want = (1.0 - w) * want + w * k as f64;
        assert!((red.average() - want).abs() < 1e-12, "arrival {k}");
    }
    // Drain by t = 1 ms: the link is idle from the last dequeue on.
    let t_empty = 1_000_000;
    while red.dequeue(t_empty).is_some() {}
    // An arrival 120 ms later: 100 packet times of idleness decay the
    // average by (1 − w)^100 before the usual update with q = 0.
    let t = t_empty + 120_000_000;
    red.enqueue(t, pkt(NOT_ECT, 999));
    want *= (1.0 - w) * (1.0 - w).powi(100);
    assert!(
        (red.average() - want).abs() < 1e-9 * want,
        "{} vs {want}",
        red.average()
    );
    // A fractional idle time counts fractionally (0.5 packet times).
    while red.dequeue(t).is_some() {}
    red.enqueue(t + 600_000, pkt(NOT_ECT, 1000));
    want *= (1.0 - w) * (1.0 - w).powf(0.5);
    assert!((red.average() - want).abs() < 1e-9 * want);
    // The next arrival finds the queue busy: no decay beyond the EWMA.
    red.enqueue(t + 700_000_000, pkt(NOT_ECT, 1001));
    want = (1.0 - w) * want + w;
    assert!((red.average() - want).abs() < 1e-9 * want);
}

#[test]
fn an_arrival_to_an_empty_queue_does_not_count_idle_time_twice() {
    // w_q = 0.5 and tiny thresholds (forced from 0.4): the average is
    // large while the queue is empty, so non-ECT arrivals to the empty
    // queue are dropped and it stays empty. Each such arrival decays the
    // average only for the time since the previous one.
    let c = RedConfig {
        min_th: 0.1,
        max_th: 0.2,
        w_q: 0.5,
        ..RedConfig::default()
    };
    let pt = 1_000_000; // 12 Mbit/s: 1 ms per 1500-byte packet
    let mut red = Red::new(c, 1000, 12_000_000, 3);
    let mut want: f64 = 0.0;
    for k in 0..10u32 {
        // ECT: queued (marked once congested).
        assert!(red.enqueue(0, pkt(ECT0, k)).is_queued());
        want = 0.5 * want + 0.5 * f64::from(k);
    }
    assert!((red.average() - want).abs() < 1e-12);
    while red.dequeue(0).is_some() {}
    // One packet time later: decay 0.5¹, then the update with q = 0.
    let v = red.enqueue(pt, pkt(NOT_ECT, 10));
    assert_eq!(v, Verdict::Dropped(DropCause::Aqm));
    want *= 0.5 * 0.5;
    assert!((red.average() - want).abs() < 1e-12);
    // Another packet time later: again 0.5¹ (not 0.5² from the dequeue).
    let v = red.enqueue(2 * pt, pkt(NOT_ECT, 11));
    assert_eq!(v, Verdict::Dropped(DropCause::Aqm));
    want *= 0.5 * 0.5;
    assert!(
        (red.average() - want).abs() < 1e-12,
        "{} vs {want}",
        red.average()
    );
}

#[test]
fn ect_packets_are_marked_not_dropped_below_the_hard_limit() {
    // Instant average (w_q = 1), small thresholds: forced from q = 20.
    let c = RedConfig {
        min_th: 5.0,
        max_th: 10.0,
        w_q: 1.0,
        ..RedConfig::default()
    };
    for ecn in [ECT0, 1, 3, NOT_ECT] {
        let mut red = Red::new(c, 50, 100_000_000, 7);
        // (queue length before the arrival, verdict)
        let mut verdicts = Vec::new();
        for k in 0..60u32 {
            let q = red.len();
            verdicts.push((q, red.enqueue(u64::from(k), pkt(ecn, k))));
        }
        let s = red.stats();
        assert!(
            verdicts
                .iter()
                .all(|(q, v)| *q >= 5 || *v == Verdict::Queued)
        );
        if ecn == NOT_ECT {
            // Early and forced drops keep the queue at the forced
            // threshold; nothing is marked.
            assert_eq!(s.marks, 0);
            assert!(s.drops_aqm > 0);
            assert!(red.len() <= 20);
            assert!(
                verdicts
                    .iter()
                    .all(|(q, v)| *q < 20 || *v == Verdict::Dropped(DropCause::Aqm))
            );
        } else {
            assert_eq!(s.drops_aqm, 0, "ecn {ecn}: an ECT packet was dropped");
            // Everything up to the hard limit is queued, marked from the
            // forced region on; then the limit drops.
            for (q, v) in &verdicts {
                match q {
                    20..=49 => assert_eq!(*v, Verdict::Marked),
                    50.. => assert_eq!(*v, Verdict::Dropped(DropCause::Overflow)),
                    _ => assert!(v.is_queued()),
                }
            }
            assert_eq!(s.drops_overflow, 10);
            let marked = verdicts
                .iter()
                .filter(|(_, v)| *v == Verdict::Marked)
                .count();
            assert_eq!(s.marks as usize, marked);
            // The queued marked packets carry CE with a valid checksum.
            let mut ce = 0;
            while let Some(d) = red.dequeue(100) {
                assert!(common::v4_checksum_ok(&d.packet));
                if d.packet[1] & 3 == 3 {
                    ce += 1;
                }
            }
            let want = if ecn == 3 { 50 } else { marked };
            assert_eq!(ce, want);
        }
    }
    // With ECN off, ECT packets are dropped like any other.
    let mut red = Red::new(RedConfig { ecn: false, ..c }, 50, 100_000_000, 7);
    for k in 0..30u32 {
        red.enqueue(u64::from(k), pkt(ECT0, k));
    }
    assert_eq!(red.stats().marks, 0);
    assert!(red.stats().drops_aqm >= 10);
}

#[test]
fn same_seed_same_decisions() {
    let run = |seed| {
        let mut red = Red::new(
            RedConfig {
                w_q: 1.0,
                ..RedConfig::default()
            },
            2000,
            100_000_000,
            seed,
        );
        (0..1200u32)
            .map(|k| red.enqueue(u64::from(k), pkt(NOT_ECT, k)))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn through_a_port() {
    // 10 Mbit/s, RED with small thresholds, ECT traffic at twice C: the
    // port marks, never drops early, and its counters agree.
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(10_000_000);
    cfg.signalling = Signalling::None;
    cfg.queue_limit = 100;
    cfg.qdisc = QdiscConfig::Red(RedConfig {
        min_th: 5.0,
        max_th: 15.0,
        w_q: 0.05,
        ..RedConfig::default()
    });
    let mut port = Port::new(cfg, t0);
    let (mut marked, mut full) = (0u64, 0u64);
    for k in 0..5000u32 {
        let t = t0 + Duration::from_micros(600 * u64::from(k));
        match port.push(t, pkt(ECT0, k)) {
            PushOutcome::Marked => marked += 1,
            PushOutcome::Queued => {}
            PushOutcome::Dropped(DropReason::QueueFull) => full += 1,
            other => panic!("{other:?}"),
        }
        while port.poll_transmit(t).is_some() {}
    }
    let c = port.snapshot().counters;
    assert!(marked > 1000, "marked {marked}");
    assert_eq!(c.ecn_marks, marked);
    assert_eq!(c.drops_aqm, 0);
    assert_eq!(c.drops_queue, full);
    assert_eq!(port.queue_discipline().name(), "red");
}

#[test]
fn bad_knobs_are_reported_and_clamped() {
    let mut cfg = PortConfig::new(1_000_000);
    assert_eq!(cfg.validate(), Ok(()));
    for (bad, name) in [
        (
            RedConfig {
                min_th: f64::NAN,
                ..RedConfig::default()
            },
            "min_th",
        ),
        (
            RedConfig {
                max_th: 100.0,
                ..RedConfig::default()
            },
            "max_th",
        ),
        (
            RedConfig {
                max_p: 1.5,
                ..RedConfig::default()
            },
            "max_p",
        ),
        (
            RedConfig {
                w_q: 0.0,
                ..RedConfig::default()
            },
            "w_q",
        ),
        (
            RedConfig {
                mean_packet_bytes: 0,
                ..RedConfig::default()
            },
            "mean_packet_bytes",
        ),
    ] {
        cfg.qdisc = QdiscConfig::Red(bad);
        assert_eq!(cfg.validate(), Err(ka_router::ConfigError::BadValue(name)));
        // The discipline still works, with the bad value replaced.
        let red = Red::new(bad, 10, 1_000_000, 0);
        assert_eq!(red.config().validate(), Ok(()));
    }
    let red = Red::new(
        RedConfig {
            max_th: 100.0,
            ..RedConfig::default()
        },
        10,
        1,
        0,
    );
    assert_eq!(red.config().max_th, 750.0);
}

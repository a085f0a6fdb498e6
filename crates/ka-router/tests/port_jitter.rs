//! The knobs that make a port tolerant of a real host's jitter
//! (`RcpConfig::queue_measure`, `RcpConfig::queue_target`,
//! `PortConfig::dither`): what the controller is told, and what senders
//! are told, in virtual time.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ipv4_simple;
use ka_codec::scale::Scale;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{Measurement, Port, PortConfig, QueueMeasure, RateController};

/// A controller with a fixed rate that records the queue it is told.
#[derive(Clone, Default)]
struct Recorder {
    rate: f64,
    queue: Arc<Mutex<Vec<usize>>>,
}

impl RateController for Recorder {
    fn on_interval(&mut self, m: &Measurement) -> f64 {
        self.queue.lock().unwrap().push(m.queue_bytes);
        self.rate
    }
    fn rate(&self) -> f64 {
        self.rate
    }
}

/// A port whose controller (fixed R = 1000 B/ms) records the queue it is
/// told each interval.
fn recording(cfg: PortConfig, t0: Instant) -> (Port, Arc<Mutex<Vec<usize>>>) {
    let rec = Recorder {
        rate: 1000.0,
        ..Recorder::default()
    };
    let seen = rec.queue.clone();
    (Port::with_controller(cfg, Box::new(rec), t0), seen)
}

const MBIT10: u64 = 10_000_000;

fn config(measure: QueueMeasure, target: Duration) -> PortConfig {
    let mut c = PortConfig::new(MBIT10);
    c.initial_rtt = Duration::from_millis(50);
    c.rcp.initial_frac = 1.0;
    c.rcp.queue_measure = measure;
    c.rcp.queue_target = target;
    c
}

/// Pushes `bunch` 1500-byte packets every `period` for `until`, sending
/// whatever is due in between; returns every piece sent.
fn run(
    port: &mut Port,
    t0: Instant,
    bunch: usize,
    period: Duration,
    until: Duration,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut next = t0;
    let mut ident = 0u16;
    while next < t0 + until {
        while let Some(t) = port.poll_timeout().filter(|&t| t <= next) {
            while let Some(p) = port.poll_transmit(t) {
                out.push(p);
            }
        }
        for _ in 0..bunch {
            port.push(next, ipv4_simple(1500, ident));
            ident = ident.wrapping_add(1);
        }
        next += period;
    }
    port.handle_timeout(t0 + until);
    out
}

/// Bunches of 5 packets every 7 ms on a 10 Mbit/s port: 86 % load, and
/// each bunch drains (6 ms) before the next arrives.
fn jittery(port: &mut Port, t0: Instant) {
    run(
        port,
        t0,
        5,
        Duration::from_millis(7),
        Duration::from_secs(5),
    );
}

#[test]
fn persistent_queue_ignores_bunches_that_drain_within_a_round_trip() {
    let t0 = Instant::now();
    let (mut port, seen) = recording(config(QueueMeasure::Persistent, Duration::ZERO), t0);
    jittery(&mut port, t0);
    let q = seen.lock().unwrap().clone();
    assert!(q.len() > 400, "{} intervals", q.len());
    assert!(q.iter().all(|&b| b == 0), "persistent queue: {q:?}");

    // The same arrivals, measured at the end of each interval: a queue.
    let rec = Recorder {
        rate: 1000.0,
        ..Recorder::default()
    };
    let seen = rec.queue.clone();
    let mut port =
        Port::with_controller(config(QueueMeasure::Now, Duration::ZERO), Box::new(rec), t0);
    jittery(&mut port, t0);
    let q = seen.lock().unwrap().clone();
    let nonzero = q.iter().filter(|&&b| b > 0).count();
    assert!(nonzero * 2 > q.len(), "{nonzero} of {} intervals", q.len());
}

#[test]
fn rcp_keeps_the_rate_with_the_persistent_queue_and_cuts_it_without() {
    let t0 = Instant::now();
    let mut persistent = Port::new(config(QueueMeasure::Persistent, Duration::ZERO), t0);
    let mut now = Port::new(config(QueueMeasure::Now, Duration::ZERO), t0);
    jittery(&mut persistent, t0);
    jittery(&mut now, t0);
    let c = 1250.0; // B/ms
    let r_persistent = persistent.snapshot().rate_bytes_per_ms;
    let r_now = now.snapshot().rate_bytes_per_ms;
    // 14 % spare capacity and no standing queue: R stays at its ceiling.
    assert!(r_persistent >= c, "{r_persistent}");
    // The sampled bunches outweigh the spare capacity: R keeps falling.
    assert!(r_now < 0.5 * c, "{r_now}");
}

#[test]
fn a_standing_queue_is_persistent() {
    // 120 % load: the queue grows and never drains.
    let t0 = Instant::now();
    let (mut port, seen) = recording(config(QueueMeasure::Persistent, Duration::ZERO), t0);
    run(
        &mut port,
        t0,
        5,
        Duration::from_millis(5),
        Duration::from_millis(500),
    );
    let q = seen.lock().unwrap().clone();
    // After the first round trip every interval reports a queue, growing,
    // and never more than the queue itself (≤ 1500 B per 5 ms of growth).
    let late = q.get(6..).unwrap();
    assert!(late.iter().all(|&b| b > 0), "{q:?}");
    assert!(late.windows(2).all(|w| w[1] >= w[0]), "{q:?}");
    assert!(*late.last().unwrap() >= 100_000, "{q:?}");

    // RCP cuts R as it would with the instantaneous queue.
    let mut rcp = Port::new(config(QueueMeasure::Persistent, Duration::ZERO), t0);
    run(
        &mut rcp,
        t0,
        5,
        Duration::from_millis(5),
        Duration::from_millis(500),
    );
    assert!(rcp.snapshot().rate_bytes_per_ms < 0.5 * 1250.0);
}

#[test]
fn queue_target_is_subtracted() {
    let t0 = Instant::now();
    // 10 ms at 10 Mbit/s = 12 500 bytes, more than a bunch ever queues.
    let (mut port, seen) = recording(config(QueueMeasure::Now, Duration::from_millis(10)), t0);
    jittery(&mut port, t0);
    assert!(seen.lock().unwrap().iter().all(|&b| b == 0));

    // 2 ms = 2500 bytes: a queue of 4 packets (6000 B) reports 3500.
    let (mut port, seen) = recording(config(QueueMeasure::Now, Duration::from_millis(2)), t0);
    // One bunch of 5 at t = 9.5 ms: at the 10 ms tick four are queued.
    let t = t0 + Duration::from_micros(9_500);
    for i in 0..5 {
        port.push(t, ipv4_simple(1500, i));
    }
    port.handle_timeout(t0 + Duration::from_millis(10));
    assert_eq!(seen.lock().unwrap().last(), Some(&3500));
}

/// Leading-fragment payload lengths of `pieces`.
fn leading_lengths(pieces: &[Vec<u8>]) -> Vec<usize> {
    pieces
        .iter()
        .filter_map(|p| {
            let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
            (ip.more_frags() && ip.frag_offset() == 0).then(|| ip.total_len() - ip.header_len())
        })
        .collect()
}

/// A 100 Mbit/s port whose controller holds R at `rate`, dither on or off.
fn fixed_rate_port(dither: bool, rate: f64, t0: Instant) -> Port {
    let mut c = PortConfig::new(100_000_000);
    c.dither = dither;
    let rec = Recorder {
        rate,
        ..Recorder::default()
    };
    Port::with_controller(c, Box::new(rec), t0)
}

/// Everything `port` still holds, sent.
fn drain(port: &mut Port, pieces: &mut Vec<Vec<u8>>) {
    while let Some(t) = port.poll_timeout() {
        while let Some(p) = port.poll_transmit(t) {
            pieces.push(p);
        }
    }
}

fn dithered(dither: bool, rate: f64) -> Vec<usize> {
    let t0 = Instant::now();
    let mut port = fixed_rate_port(dither, rate, t0);
    // 2000 packets 1 ms apart: 12 % load, never a queue.
    let mut pieces = run(
        &mut port,
        t0,
        1,
        Duration::from_millis(1),
        Duration::from_secs(2),
    );
    drain(&mut port, &mut pieces);
    let lens = leading_lengths(&pieces);
    assert_eq!(lens.len(), 2000);
    lens
}

#[test]
fn dithering_makes_the_average_paced_rate_r() {
    let scale = Scale::PAPER;
    let lo_code = scale.encode(2400.0).unwrap();
    let hi_code = scale.next_code(lo_code).unwrap();
    let (lo, hi) = (scale.decode(lo_code), scale.decode(hi_code));
    for frac in [0.1, 0.5, 0.9] {
        let r = lo + frac * (hi - lo);
        let lens = dithered(true, r);
        assert!(
            lens.iter()
                .all(|&l| l == lo_code.len() || l == hi_code.len()),
            "only the two codes around R"
        );
        let up = lens.iter().filter(|&&l| l == hi_code.len()).count() as f64 / lens.len() as f64;
        let want = (1.0 / lo - 1.0 / r) / (1.0 / lo - 1.0 / hi);
        assert!((up - want).abs() < 0.002, "R at {frac}: {up} vs {want}");
        // A sender pacing each packet at its echoed rate averages R.
        let time: f64 = lens.iter().map(|&l| 1.0 / scale.rate_of_len(l)).sum();
        let mean = lens.len() as f64 / time;
        assert!((mean - r).abs() / r < 0.001, "{mean} vs {r}");
    }
    // Off (DESIGN §3.4): every leading fragment carries encode(R).
    let r = lo + 0.9 * (hi - lo);
    assert!(dithered(false, r).iter().all(|&l| l == lo_code.len()));
    // R exactly on a code: never the next one.
    assert!(dithered(true, lo).iter().all(|&l| l == lo_code.len()));
}

/// Leading-fragment lengths out of a dithered port at rate `rate` for
/// 2000 packets 1 ms apart, every other one with DF set (a legacy flow's
/// packets interleaved with a KA flow's).
fn dithered_beside_df(rate: f64) -> (Vec<usize>, u64) {
    let t0 = Instant::now();
    let mut port = fixed_rate_port(true, rate, t0);
    let mut pieces = Vec::new();
    let payload: Vec<u8> = (0..1480).map(|i| (i * 7 + 3) as u8).collect();
    for i in 0..2000u16 {
        let now = t0 + Duration::from_millis(u64::from(i));
        while let Some(t) = port.poll_timeout().filter(|&t| t <= now) {
            while let Some(p) = port.poll_transmit(t) {
                pieces.push(p);
            }
        }
        let df = i % 2 == 0;
        port.push(now, common::ipv4(&payload, &[], df, false, 0, i, 64, 17));
    }
    drain(&mut port, &mut pieces);
    let lens = leading_lengths(&pieces);
    (lens, port.snapshot().counters.dithered_up)
}

/// Packets that leave unstamped (here DF set) take no step of the
/// dither: the stamped packets between them still get the next code up
/// on the fraction p that makes their paced rate R. Counting the DF-set
/// packets, at p = ½ every stamped packet got the code up.
#[test]
fn unstamped_packets_do_not_bias_the_dither() {
    let scale = Scale::PAPER;
    let lo_code = scale.encode(2400.0).unwrap();
    let hi_code = scale.next_code(lo_code).unwrap();
    let (lo, hi) = (scale.decode(lo_code), scale.decode(hi_code));
    for frac in [0.3, 0.5] {
        let r = lo + frac * (hi - lo);
        let (lens, dithered_up) = dithered_beside_df(r);
        assert_eq!(lens.len(), 1000, "the DF-clear half is stamped");
        let ups = lens.iter().filter(|&&l| l == hi_code.len()).count();
        let want = (1.0 / lo - 1.0 / r) / (1.0 / lo - 1.0 / hi);
        let up = ups as f64 / lens.len() as f64;
        assert!((up - want).abs() < 0.002, "R at {frac}: {up} vs {want}");
        assert_eq!(dithered_up, ups as u64, "the counter counts codes sent");
    }
}

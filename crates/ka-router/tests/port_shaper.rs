//! The shaper: exact rate over a second of virtual time, departures never
//! closer than their serialisation time, fragment header bytes paid for.

mod common;

use std::time::{Duration, Instant};

use ka_codec::Code;
use ka_router::{Measurement, ModeConfig, Port, PortConfig, PushOutcome, RateController};

/// A controller that always advertises the same rate.
struct Fixed(f64);

impl RateController for Fixed {
    fn on_interval(&mut self, _: &Measurement) -> f64 {
        self.0
    }
    fn rate(&self) -> f64 {
        self.0
    }
}

const C_BPS: u64 = 10_000_000; // 10 Mbit/s = 1 250 000 B/s

/// Saturates a port (queue far above what a second drains) and records
/// every departure as (time since t0, bytes).
fn run(rate: f64) -> (Vec<(Duration, usize)>, Port) {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(C_BPS);
    cfg.queue_limit = 5000;
    // Keep signalling on however long the queue is.
    cfg.mode = ModeConfig {
        threshold_frac: 10.0,
        hold: None,
        foreign_frac: 0.0,
        ..ModeConfig::default()
    };
    let mut port = Port::with_controller(cfg, Box::new(Fixed(rate)), t0);
    for i in 0..2000 {
        assert_eq!(
            port.push(t0, common::ipv4_simple(1500, i)),
            PushOutcome::Queued
        );
    }
    let mut out = Vec::new();
    let end = t0 + Duration::from_secs(1);
    while let Some(t) = port.poll_timeout() {
        if t > end {
            break;
        }
        while let Some(p) = port.poll_transmit(t) {
            out.push((t - t0, p.len()));
        }
    }
    (out, port)
}

fn check_spacing(out: &[(Duration, usize)]) {
    for w in out.windows(2) {
        let ((t1, _), (t2, len2)) = (w[0], w[1]);
        let ser = Duration::from_nanos((len2 as u64 * 8 * 1_000_000_000).div_ceil(C_BPS));
        // Integer-ns serialisation with a carried remainder: within 1 ns.
        assert!(
            t2 - t1 + Duration::from_nanos(1) >= ser,
            "departures {t1:?} and {t2:?} closer than {ser:?}"
        );
    }
}

#[test]
fn rate_holds_within_one_percent_unstamped() {
    // A rate below every code: nothing is stamped.
    let (out, port) = run(1.0);
    assert_eq!(port.snapshot().counters.fragments_made, 0);
    let bytes: usize = out.iter().map(|(_, n)| n).sum();
    let want = C_BPS as f64 / 8.0;
    assert!(
        (bytes as f64 - want).abs() / want < 0.01,
        "{bytes} bytes in 1 s, want {want}"
    );
    // 1 250 000 / 1500 = 833.3 packets: the 834th ends after 1 s.
    assert_eq!(out.len(), 833);
    check_spacing(&out);
}

#[test]
fn fragment_headers_are_serialised_too() {
    // 62.5 B/ms → L = 200: every 1500-byte packet leaves as 220 + 1300 bytes.
    let code = ka_codec::scale::encode(62.5).unwrap();
    assert_eq!(code, Code::from_len(200).unwrap());
    let (out, port) = run(62.5);
    let bytes: usize = out.iter().map(|(_, n)| n).sum();
    let want = C_BPS as f64 / 8.0;
    assert!((bytes as f64 - want).abs() / want < 0.01, "{bytes}");
    assert!(out.iter().all(|&(_, n)| n == 220 || n == 1300));
    // 1 520 wire bytes per packet: 822 whole packets in a second (823rd
    // leading fragment too), not the 833 an accounting of 1 500 would give.
    let whole = out.iter().filter(|&&(_, n)| n == 1300).count();
    assert_eq!(whole, 822);
    assert_eq!(out.len(), 2 * 822 + 1);
    let s = port.snapshot();
    assert!(s.counters.fragments_made >= 823);
    check_spacing(&out);
    // No burst: in any 2 ms window at most 2 ms worth of bytes (+ one piece).
    let mut j = 0;
    let mut in_window = 0usize;
    for i in 0..out.len() {
        in_window += out[i].1;
        while out[i].0 - out[j].0 >= Duration::from_millis(2) {
            in_window -= out[j].1;
            j += 1;
        }
        assert!(in_window <= 2500 + 1300, "burst of {in_window} bytes");
    }
}

#[test]
fn delay_is_added_after_serialisation() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(8_000_000); // 1 byte per µs
    cfg.delay = Duration::from_millis(50);
    let mut port = Port::with_controller(cfg, Box::new(Fixed(1.0)), t0);
    port.push(t0, common::ipv4_simple(1000, 1));
    port.push(t0, common::ipv4_simple(500, 2));
    // The first is on the wire at once; the next wake-up is the second's
    // dequeue when the link frees at 1 ms.
    assert_eq!(port.poll_timeout(), Some(t0 + Duration::from_micros(1_000)));
    port.handle_timeout(t0 + Duration::from_micros(1_000));
    // First leaves at 1 ms + 50 ms, the second 0.5 ms later.
    assert_eq!(
        port.poll_timeout(),
        Some(t0 + Duration::from_micros(51_000))
    );
    assert!(
        port.poll_transmit(t0 + Duration::from_micros(50_999))
            .is_none()
    );
    assert_eq!(
        port.poll_transmit(t0 + Duration::from_micros(51_000))
            .map(|p| p.len()),
        Some(1000)
    );
    assert_eq!(
        port.poll_timeout(),
        Some(t0 + Duration::from_micros(51_500))
    );
    assert_eq!(
        port.poll_transmit(t0 + Duration::from_secs(9))
            .map(|p| p.len()),
        Some(500)
    );
    assert_eq!(port.poll_timeout(), None);
    // An idle link starts the next packet at its arrival, not earlier.
    let t1 = t0 + Duration::from_secs(10);
    port.push(t1, common::ipv4_simple(100, 3));
    assert_eq!(
        port.poll_timeout(),
        Some(t1 + Duration::from_micros(50_100))
    );
}

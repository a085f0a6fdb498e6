//! Per-packet paths through a `Port`: exact bytes of a stamped packet, TTL,
//! non-IP and malformed input, RTT indicators, IPv6, native RCP, plain
//! drop-tail, and what the controller is told.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ka_codec::RcpOption;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{
    DropReason, IPV6_IDENT_START, Measurement, Mode, Port, PortConfig, PushOutcome, RateController,
    Signalling,
};

/// A controller with a fixed rate that records what it is told.
#[derive(Clone, Default)]
struct Recorder {
    rate: f64,
    seen: Arc<Mutex<Vec<(Measurement, u64)>>>,
}

impl RateController for Recorder {
    fn on_interval(&mut self, m: &Measurement) -> f64 {
        self.seen.lock().unwrap().push((*m, 1));
        self.rate
    }
    fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
        self.seen.lock().unwrap().push((*m, n));
        self.rate
    }
    fn rate(&self) -> f64 {
        self.rate
    }
}

fn fixed(rate: f64) -> Box<Recorder> {
    Box::new(Recorder {
        rate,
        ..Recorder::default()
    })
}

fn drain(port: &mut Port) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(t) = port.poll_timeout() {
        while let Some(p) = port.poll_transmit(t) {
            out.push(p);
        }
    }
    out
}

/// The hand-made 1500-byte TCP packet of the stamping byte-vector test.
fn tcp_1500() -> Vec<u8> {
    let mut p = vec![0u8; 1500];
    p[..20].copy_from_slice(&[
        0x45, 0x00, 0x05, 0xdc, 0x1c, 0x46, 0x00, 0x00, 0x40, 0x06, 0xd6, 0xbd, 192, 168, 0, 1,
        192, 168, 0, 199,
    ]);
    for (i, b) in p[20..].iter_mut().enumerate() {
        *b = i as u8;
    }
    p
}

#[test]
fn port_stamps_exact_bytes_with_ttl_decremented() {
    let t0 = Instant::now();
    let mut port = Port::with_controller(PortConfig::new(1_000_000_000), fixed(12_500.0), t0);
    assert_eq!(port.push(t0, tcp_1500()), PushOutcome::Queued);
    let out = drain(&mut port);
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0][..12],
        [
            0x45, 0x00, 0x03, 0x84, 0x1c, 0x46, 0x20, 0x00, 0x3f, 0x06, 0xba, 0x15
        ]
    );
    assert_eq!(
        out[1][..12],
        [
            0x45, 0x00, 0x02, 0x6c, 0x1c, 0x46, 0x00, 0x6e, 0x3f, 0x06, 0xda, 0xbf
        ]
    );
    let c = port.snapshot().counters;
    assert_eq!((c.packets_in, c.packets_out, c.fragments_made), (1, 2, 1));
    assert_eq!(c.bytes_out, 1520);
}

#[test]
fn ttl_expiry_and_no_decrement() {
    let t0 = Instant::now();
    let mut port = Port::new(PortConfig::new(1_000_000), t0);
    let p = common::ipv4(&[0; 10], &[], false, false, 0, 1, 1, 17);
    assert_eq!(
        port.push(t0, p.clone()),
        PushOutcome::Dropped(DropReason::TtlExpired)
    );
    assert_eq!(port.snapshot().counters.drops_ttl, 1);
    let v6 = common::ipv6(&[], 17, &[0; 10], 1);
    assert_eq!(
        port.push(t0, v6),
        PushOutcome::Dropped(DropReason::TtlExpired)
    );
    assert_eq!(port.snapshot().counters.drops_ttl, 2);

    let mut cfg = PortConfig::new(1_000_000);
    cfg.decrement_ttl = false;
    let mut port = Port::new(cfg, t0);
    assert_eq!(port.push(t0, p.clone()), PushOutcome::Queued);
    assert_eq!(drain(&mut port), vec![p]);
}

#[test]
fn non_ip_and_malformed_dropped_on_arrival() {
    let t0 = Instant::now();
    let mut port = Port::with_controller(PortConfig::new(1_000_000), fixed(100.0), t0);
    let junk = vec![0x25u8; 1500]; // version nibble 2
    assert_eq!(port.push(t0, junk), PushOutcome::Dropped(DropReason::NotIp));
    for bad in [vec![], vec![0x45; 19], vec![0x60; 39], {
        let mut p = common::ipv4_simple(1500, 1);
        p[10] ^= 0xFF; // checksum
        p
    }] {
        assert_eq!(
            port.push(t0, bad),
            PushOutcome::Dropped(DropReason::Malformed)
        );
    }
    // Link padding after an IPv4 packet is cut off.
    let mut padded = common::ipv4_simple(100, 2);
    padded.extend_from_slice(&[0xEE; 6]);
    assert_eq!(port.push(t0, padded), PushOutcome::Queued);
    let out = drain(&mut port);
    // 100 bytes (80 payload) cannot carry L = 264 and are too small to
    // saturate: forwarded whole, padding gone, TTL 63. Nothing else left.
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), 100);
    assert_eq!(out[0][8], 63);
    let c = port.snapshot().counters;
    assert_eq!((c.non_ip, c.drops_malformed, c.packets_in), (1, 4, 6));
}

#[test]
fn indicators_set_then_move_d_by_bytes_and_are_not_stamped() {
    let t0 = Instant::now();
    let mut port = Port::with_controller(PortConfig::new(100_000_000), fixed(100.0), t0);
    assert_eq!(port.rtt(), Duration::from_millis(100));
    // The first indicator sets d: 16–32 ms → 24 ms.
    let mut t = t0 + Duration::from_millis(1);
    port.push(t, common::indicator_v4(4));
    assert_eq!(port.rtt(), Duration::from_millis(24));
    // Later ones set the flow's code: from the next control interval
    // (T = 10 ms) on, d is the byte-weighted RTT (DESIGN §3.6.2), here
    // 64–128 ms → 96 ms (the 24 ms code carries 1/50 of the bytes, outside
    // the middle half).
    for n in 1..=49 {
        t += Duration::from_millis(1);
        port.push(t, common::indicator_v4(6));
        let got = port.rtt().as_secs_f64() * 1e3;
        let want = if n < 9 { 24.0 } else { 96.0 };
        assert!((got - want).abs() < 1e-6, "after {n}: {got} vs {want}");
    }
    let out = drain(&mut port);
    assert_eq!(out.len(), 50);
    assert!(
        out[0].len() == 604 && out[1..].iter().all(|p| p.len() == 606),
        "indicators are never split"
    );
    assert_eq!(port.snapshot().counters.indicators_seen, 50);
    // Without DF a 604-byte IPv4 packet is an ordinary packet.
    let plain = common::ipv4(&[0; 584], &[], false, false, 0, 0, 64, 6);
    port.push(t, plain);
    assert_eq!(port.snapshot().counters.indicators_seen, 50);
    assert_eq!(drain(&mut port).len(), 2);
    // IPv6: the length alone marks an indicator.
    port.push(t, common::ipv6(&[], 17, &[0; 570], 64)); // 610 → k = 10
    let s = port.snapshot();
    assert_eq!(s.counters.indicators_seen, 51);
    assert_eq!(drain(&mut port).len(), 1);
}

#[test]
fn ipv6_stamped_with_port_identifications() {
    let t0 = Instant::now();
    let mut port = Port::with_controller(PortConfig::new(1_000_000_000), fixed(12_500.0), t0);
    for _ in 0..2 {
        port.push(t0, common::ipv6(&[], 6, &[7; 1440], 64));
    }
    let out = drain(&mut port);
    assert_eq!(out.len(), 4);
    for (i, piece) in out.iter().enumerate() {
        assert_eq!(piece[7], 63, "hop limit decremented once");
        assert_eq!(piece[6], 44);
        let ident = u32::from_be_bytes(piece[44..48].try_into().unwrap());
        assert_eq!(ident, IPV6_IDENT_START + (i as u32 / 2));
    }
    assert_eq!(out[0].len(), 48 + 880);

    let mut cfg = PortConfig::new(1_000_000_000);
    cfg.ipv6_signal = false;
    let mut port = Port::with_controller(cfg, fixed(12_500.0), t0);
    port.push(t0, common::ipv6(&[], 6, &[7; 1440], 64));
    let out = drain(&mut port);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), 1480);
    assert_eq!(port.snapshot().counters.fragments_made, 0);
}

fn rcp_packet(rate: u32) -> Vec<u8> {
    let mut opts = [0u8; 8];
    RcpOption {
        rate_bytes_per_sec: rate,
        rtt_ms: 100,
    }
    .emit(&mut opts)
    .unwrap();
    common::ipv4(&[5; 1472], &opts, false, false, 0, 3, 64, 6)
}

#[test]
fn native_rcp_lowers_the_option_and_never_fragments() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(1_000_000_000);
    cfg.signalling = Signalling::NATIVE_RCP;
    let mut port = Port::with_controller(cfg, fixed(12_500.0), t0); // 12.5 MB/s
    port.push(t0, rcp_packet(50_000_000));
    port.push(t0, rcp_packet(1_000_000));
    port.push(t0, common::ipv4_simple(1500, 1));
    let out = drain(&mut port);
    assert_eq!(out.len(), 3);
    let rate = |p: &[u8]| {
        let ip = Ipv4Packet::new_checked(p).unwrap();
        assert!(ip.verify_checksum());
        ka_codec::rcp_option::find_in(ip.options())
            .unwrap()
            .unwrap()
            .1
            .rate_bytes_per_sec
    };
    assert_eq!(rate(&out[0]), 12_500_000);
    assert_eq!(rate(&out[1]), 1_000_000);
    assert_eq!(out[2].len(), 1500);
    let c = port.snapshot().counters;
    assert_eq!((c.rcp_options_lowered, c.fragments_made), (1, 0));
}

#[test]
fn plain_drop_tail_never_signals_or_changes_mode() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(1_000_000);
    cfg.signalling = Signalling::None;
    cfg.queue_limit = 10;
    let mut port = Port::new(cfg, t0);
    let mut outcomes = Vec::new();
    for i in 0..20 {
        outcomes.push(port.push(t0, common::ipv4_simple(1500, i)));
    }
    // One on the wire, ten queued, nine dropped.
    let drops = outcomes
        .iter()
        .filter(|o| **o == PushOutcome::Dropped(DropReason::QueueFull))
        .count();
    assert_eq!(drops, 9);
    let s = port.snapshot();
    assert_eq!(
        (s.mode, s.signal, s.counters.mode_changes),
        (Mode::Ka, None, 0)
    );
    let out = drain(&mut port);
    assert_eq!(out.len(), 11);
    assert!(out.iter().all(|p| p.len() == 1500));
}

#[test]
fn controller_sees_arrivals_queue_and_interval() {
    let t0 = Instant::now();
    let rec = Recorder {
        rate: 1.0, // not encodable: nothing is stamped
        ..Recorder::default()
    };
    let seen = rec.seen.clone();
    let mut cfg = PortConfig::new(8_000_000); // 1 B/µs
    cfg.queue_limit = 3;
    cfg.mode.threshold_frac = 10.0; // no TCP mode (it would freeze R)
    let mut port = Port::with_controller(cfg, Box::new(rec), t0);
    // 5 pushes of 1000 bytes at 1 ms: 1 on the wire, 3 queued, 1 dropped.
    for i in 0..5 {
        port.push(t0 + Duration::from_millis(1), common::ipv4_simple(1000, i));
    }
    port.handle_timeout(t0 + Duration::from_millis(10));
    {
        let seen = seen.lock().unwrap();
        // d = 100 ms → T = 10 ms; first tick at 10 ms saw all 5000 bytes
        // (the drop included) and 1 packet left in the queue: dequeues at
        // 1, 2, 3, 4 ms… the 4th packet is on the wire at 4–5 ms → queue
        // empty at 10 ms.
        let (m, n) = seen[0];
        assert_eq!(n, 1);
        assert_eq!(m.interval, Duration::from_millis(10));
        assert_eq!(m.rtt, Duration::from_millis(100));
        assert!((m.input_rate - 500.0).abs() < 1e-9, "{}", m.input_rate);
        assert_eq!(m.queue_bytes, 0);
        assert!((m.capacity - 1000.0).abs() < 1e-9);
    }
    // A long idle gap costs O(1) calls: the tick at 20 ms, then one batch
    // for the rest; every 10 ms tick up to 10⁶ s is accounted for.
    port.handle_timeout(t0 + Duration::from_secs(1_000_000));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen.iter().map(|(_, n)| n).sum::<u64>(), 100_000_000);
    let (m, n) = seen[2];
    assert_eq!(n, 99_999_998);
    assert_eq!(m.interval, Duration::from_millis(10));
    assert_eq!((m.input_rate, m.queue_bytes), (0.0, 0));
}

#[test]
fn rcp_catches_up_after_idle_in_constant_time() {
    let t0 = Instant::now();
    let mut port = Port::new(PortConfig::new(100_000_000), t0);
    let c = 12_500.0;
    assert!((port.snapshot().rate_bytes_per_ms - 0.05 * c).abs() < 1e-9);
    port.handle_timeout(t0 + Duration::from_secs(3600 * 24 * 365));
    // An idle KA port climbs to its ceiling: the first code rate at or
    // above C (so the quantised signal can dither around C).
    let t = ka_codec::RateTable::PAPER;
    let ceiling = t.codes().map(|k| t.decode(k)).find(|&r| r >= c).unwrap();
    assert!(ceiling >= c && ceiling < c * 1.0646);
    assert_eq!(port.snapshot().rate_bytes_per_ms, ceiling);
    // Time going backwards is treated as "no time passed".
    assert_eq!(
        port.push(t0, common::ipv4_simple(1500, 1)),
        PushOutcome::Queued
    );
    assert_eq!(drain(&mut port).len(), 2);
}

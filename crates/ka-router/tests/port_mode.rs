//! The TCP-mode detector through a real port: entering at 50 %, staying in
//! TCP mode while the queue oscillates around the threshold, leaving exactly
//! one average RTT after the queue went below it, R frozen meanwhile.

mod common;

use std::time::{Duration, Instant};

use ka_router::{Mode, Port, PortConfig};

const MS: Duration = Duration::from_millis(1);

/// 8 Mbit/s = one byte per µs; 1000-byte packets take exactly 1 ms.
fn port(t0: Instant) -> Port {
    let mut cfg = PortConfig::new(8_000_000);
    cfg.queue_limit = 100;
    Port::new(cfg, t0)
}

/// 1000-byte packets with DF set: never stamped, so every one takes exactly
/// 1 ms on the wire and the timeline is easy to follow.
fn pkt(i: u16) -> Vec<u8> {
    common::ipv4(&[0x11; 980], &[], true, false, 0, i, 64, 17)
}

#[test]
fn enters_at_half_the_queue() {
    let t0 = Instant::now();
    let mut p = port(t0);
    assert_eq!(p.mode_threshold(), 50);
    // The first packet goes straight onto the wire; 50 more fill the queue
    // to 49 … 50.
    for i in 0..50 {
        p.push(t0, pkt(i));
    }
    assert_eq!(p.snapshot().queue_packets, 49);
    assert_eq!(p.snapshot().mode, Mode::Ka);
    assert!(p.signal().is_some());
    p.push(t0, pkt(50));
    let s = p.snapshot();
    assert_eq!(s.queue_packets, 50);
    assert_eq!(s.mode, Mode::Tcp);
    assert_eq!(s.signal, None);
    assert_eq!(s.counters.mode_changes, 1);
}

#[test]
fn oscillation_holds_tcp_mode_then_leaves_after_one_rtt() {
    let t0 = Instant::now();
    let mut p = port(t0);
    let mut id = 0u16;
    let mut push = |p: &mut Port, t| {
        id = id.wrapping_add(1);
        p.push(t, pkt(id));
    };
    for _ in 0..51 {
        push(&mut p, t0);
    }
    assert_eq!(p.snapshot().mode, Mode::Tcp);
    let frozen = p.snapshot().rate_bytes_per_ms;
    // For 2 s: a dequeue every 1 ms takes the queue to 49, and a push right
    // after brings it back to 50.
    let mut t = t0;
    for _ in 0..2000 {
        t += MS;
        p.handle_timeout(t);
        assert_eq!(p.snapshot().queue_packets, 49);
        push(&mut p, t);
        assert_eq!(p.snapshot().queue_packets, 50);
        assert_eq!(p.snapshot().mode, Mode::Tcp);
    }
    let s = p.snapshot();
    assert_eq!(s.counters.mode_changes, 1);
    assert_eq!(s.rate_bytes_per_ms, frozen, "R must be frozen in TCP mode");
    // Now stop pushing. The queue drops below 50 at the next dequeue
    // (t + 1 ms) and stays there; d = 100 ms (no indicators).
    let below = t + MS;
    let leave = below + Duration::from_millis(100);
    p.handle_timeout(leave - Duration::from_nanos(1));
    assert_eq!(p.snapshot().mode, Mode::Tcp);
    assert_eq!(p.snapshot().rate_bytes_per_ms, frozen);
    p.handle_timeout(leave);
    let s = p.snapshot();
    assert_eq!(s.mode, Mode::Ka);
    assert_eq!(s.counters.mode_changes, 2);
    // Back in KA mode the controller runs again (the queue still holds
    // bytes, so R moves).
    p.handle_timeout(leave + Duration::from_millis(20));
    assert_ne!(p.snapshot().rate_bytes_per_ms, frozen);
}

#[test]
fn packets_dequeued_in_tcp_mode_are_not_stamped() {
    let t0 = Instant::now();
    let mut p = port(t0);
    for i in 0..60 {
        p.push(t0, common::ipv4_simple(1000, i));
    }
    // The first packet went onto the wire at t0, still in KA mode: split at
    // R₀ = 50 B/ms → L = 176. Everything after it is dequeued in TCP mode.
    let mut sizes = Vec::new();
    let end = t0 + 5 * MS;
    while let Some(t) = p.poll_timeout().filter(|&t| t <= end) {
        while let Some(out) = p.poll_transmit(t) {
            sizes.push(out.len());
        }
    }
    assert_eq!(sizes.len(), 5); // 0.196, 1.02, 2.02, 3.02, 4.02 ms
    assert_eq!(sizes[..2], [196, 824]);
    assert!(sizes[2..].iter().all(|&n| n == 1000), "{sizes:?}");
    assert_eq!(p.snapshot().counters.fragments_made, 1);
}

#[test]
fn hold_uses_the_measured_rtt() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(8_000_000);
    cfg.queue_limit = 100;
    cfg.rcp.rtt_gain = 1.0; // d jumps to the indicated RTT at once
    let mut p = Port::new(cfg, t0);
    p.push(t0, common::indicator_v4(3)); // 12 ms; goes onto the wire at once
    assert_eq!(p.rtt(), Duration::from_millis(12));
    for i in 0..50 {
        p.push(t0, pkt(i));
    }
    assert_eq!(p.snapshot().mode, Mode::Tcp);
    // The indicator (603 bytes) ends at 603 µs, when the first packet is
    // dequeued and the queue drops to 49.
    let below = t0 + Duration::from_micros(603);
    p.handle_timeout(below + Duration::from_millis(12) - Duration::from_nanos(1));
    assert_eq!(p.snapshot().mode, Mode::Tcp);
    p.handle_timeout(below + Duration::from_millis(12));
    assert_eq!(p.snapshot().mode, Mode::Ka);
}

//! The TCP-mode detector through a real port: entering at 50 %, staying in
//! TCP mode while the queue oscillates around the threshold, leaving exactly
//! one average RTT after the queue went below it (contention mode off), or
//! only once the DF traffic has gone (on, the default), R frozen meanwhile.

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

/// The same port with contention mode off (DESIGN §3.6.3): TCP mode ends
/// by the hold time although the DF traffic stays.
fn port_with_hold(t0: Instant) -> Port {
    let mut cfg = PortConfig::new(8_000_000);
    cfg.queue_limit = 100;
    cfg.mode.contend_rtts = 0.0;
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
    let mut p = port_with_hold(t0);
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
    // Stampable (non-DF) packets only: TCP mode needs the paper's
    // queue-only rule here (no foreign-traffic gate).
    let mut cfg = PortConfig::new(8_000_000);
    cfg.queue_limit = 100;
    cfg.mode.foreign_frac = 0.0;
    let mut p = Port::new(cfg, t0);
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
    cfg.mode.contend_rtts = 0.0;
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

#[test]
fn ka_traffic_alone_never_makes_tcp_mode_and_foreign_traffic_leaving_ends_it() {
    let t0 = Instant::now();
    let mut p = port(t0);
    // 80 stampable (non-DF, KA-endpoint-like) packets at once: the queue
    // passes 50 but nothing in it ignores signals by construction.
    for i in 0..80 {
        p.push(t0, common::ipv4_simple(1000, i));
    }
    assert!(p.snapshot().queue_packets >= 50);
    assert_eq!(p.snapshot().mode, Mode::Ka);
    assert!(p.signal().is_some());
    // DF (legacy) packets join: 50 % of the bytes now → TCP mode.
    let mut t = t0;
    for i in 0..80 {
        p.push(t, pkt(1000 + i));
    }
    assert_eq!(p.snapshot().mode, Mode::Tcp);
    assert_eq!(p.signal(), None);
    // Only KA packets from now on, keeping the queue far above 50: the
    // foreign share decays (time constant d = 100 ms) and TCP mode ends
    // within a few d although the queue never dipped.
    let mut left = None;
    for k in 0..1000u16 {
        t += MS;
        p.handle_timeout(t);
        p.push(t, common::ipv4_simple(1000, 2000 + k));
        assert!(p.snapshot().queue_packets >= 50);
        if p.snapshot().mode == Mode::Ka {
            left = Some(t - t0);
            break;
        }
    }
    let left = left.expect("TCP mode ends once the foreign traffic is gone");
    assert!(
        left > Duration::from_millis(50) && left < Duration::from_millis(400),
        "{left:?}"
    );
    assert_eq!(p.snapshot().counters.mode_changes, 2);
}

/// Contention mode (DESIGN §3.6.3, the default) makes sticky only a TCP
/// mode that the fair-share floor started (with KA flows present; the
/// detector's unit tests): a TCP mode that a full queue started still ends
/// by the hold once the queue is short, although DF traffic goes on, and
/// the port does not go back to TCP mode while that traffic stays light.
#[test]
fn a_queue_started_tcp_mode_ends_by_the_hold_while_df_traffic_stays() {
    let t0 = Instant::now();
    let mut p = port(t0);
    let mut id = 0u16;
    for _ in 0..51 {
        id += 1;
        p.push(t0, pkt(id));
    }
    assert_eq!(p.snapshot().mode, Mode::Tcp);
    // DF traffic at a quarter of the link: the queue drains, and TCP mode
    // ends after the hold (d = 100 ms) from the moment it was short.
    let mut t = t0;
    let mut left = None;
    for _ in 0..500 {
        t += 4 * MS;
        p.handle_timeout(t);
        id += 1;
        p.push(t, pkt(id));
        if left.is_none() && p.snapshot().mode == Mode::Ka {
            left = Some(t - t0);
        }
    }
    let left = left.expect("the hold ends a queue-started TCP mode");
    assert!(left < Duration::from_millis(300), "{left:?}");
    assert!(p.snapshot().queue_packets < 5);
    assert_eq!(p.snapshot().mode, Mode::Ka);
    assert_eq!(p.snapshot().counters.mode_changes, 2);
}

#[test]
fn tcp_mode_freezes_r_at_its_value_with_a_short_queue() {
    let t0 = Instant::now();
    let mut p = port(t0); // 8 Mbit/s = 1000 B/ms; threshold 50, "short" ≤ 5
    // 1 s of light DF traffic (one 1000-byte packet every 4 ms, y = C/4):
    // R climbs from R₀, the queue stays empty.
    let mut t = t0;
    let mut id = 0u16;
    for _ in 0..250 {
        t += 4 * MS;
        id += 1;
        p.push(t, pkt(id));
    }
    p.handle_timeout(t + 10 * MS);
    let calm = p.snapshot().rate_bytes_per_ms;
    assert!(calm > 60.0, "R rose from 50: {calm}");
    // Now twice the capacity: the queue grows by one packet every ms, and
    // RCP cuts R (y > C, then q/d) on the way to the threshold.
    t += 10 * MS;
    let mut entered = None;
    let mut before_entry = calm;
    for _ in 0..200 {
        t += MS / 2;
        id += 1;
        let r = p.snapshot().rate_bytes_per_ms;
        p.push(t, pkt(id));
        if p.snapshot().mode == Mode::Tcp {
            entered = Some(t);
            break;
        }
        before_entry = r;
    }
    assert!(entered.is_some());
    assert!(before_entry < 0.95 * calm, "{before_entry} vs {calm}");
    // frozen at the calm value, not at the value it had dropped to
    let frozen = p.snapshot().rate_bytes_per_ms;
    assert!(frozen <= calm && frozen > 0.97 * calm, "{frozen} vs {calm}");
    p.handle_timeout(t + 50 * MS);
    assert_eq!(p.snapshot().rate_bytes_per_ms, frozen);
}

/// KA traffic that keeps a standing queue drives RCP's R to its floor, and
/// the floor is the smallest encodable rate: the port keeps signalling the
/// smallest code instead of going silent. (With a floor below the scale,
/// the silence sent the KA senders into TCP mode, whose flows then kept
/// the queue standing and R at the floor for as long as they lasted — a
/// port without any legacy traffic locked itself out of KA.) When the
/// overload ends, R climbs back from there.
#[test]
fn a_collapsed_rate_still_signals_the_smallest_code() {
    let t0 = Instant::now();
    let mut p = port(t0);
    // Two stampable 1000-byte packets per ms on a 1-packet-per-ms link for
    // 3 s: 1000 packets/s of excess, the queue stays at the limit.
    let mut t = t0;
    let mut id = 0u16;
    for _ in 0..3000 {
        t += MS;
        p.handle_timeout(t);
        for _ in 0..2 {
            id = id.wrapping_add(1);
            p.push(t, common::ipv4_simple(1000, id));
        }
        assert_eq!(p.snapshot().mode, Mode::Ka, "KA traffic alone");
    }
    let floor = ka_router::config::RcpConfig::default().min_rate;
    let s = p.snapshot();
    assert_eq!(s.rate_bytes_per_ms, floor, "R at its floor");
    assert_eq!(
        p.signal().map(ka_codec::Code::len),
        Some(24),
        "the floor encodes to the smallest code"
    );
    // The queue drains without new arrivals; R then grows again.
    for _ in 0..2000 {
        t += MS;
        p.handle_timeout(t);
    }
    assert_eq!(p.snapshot().queue_packets, 0);
    assert!(p.snapshot().rate_bytes_per_ms > 2.0 * floor);
}

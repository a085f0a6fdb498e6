//! `Port::set_capacity`: a middlebox's aggregate rate changes at run time
//! (DESIGN §5.3). The shaper serialises at the new C from the next piece
//! on, and RCP's rate follows C in proportion.

mod common;

use std::time::{Duration, Instant};

use ka_router::{ModeConfig, Port, PortConfig, PushOutcome, Signalling};

/// Bytes a saturated port sends in `(from, to]` (departure times).
fn bytes_between(out: &[(Duration, usize)], from: Duration, to: Duration) -> usize {
    out.iter()
        .filter(|(t, _)| *t > from && *t <= to)
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn shaper_follows_a_capacity_change() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(10_000_000);
    cfg.signalling = Signalling::None;
    cfg.queue_limit = 5000;
    let mut port = Port::new(cfg, t0);
    for i in 0..3000 {
        assert_eq!(
            port.push(t0, common::ipv4_simple(1500, i)),
            PushOutcome::Queued
        );
    }
    let mut out = Vec::new();
    let half = t0 + Duration::from_secs(1);
    let end = t0 + Duration::from_secs(2);
    let mut changed = false;
    while let Some(t) = port.poll_timeout() {
        if t > end {
            break;
        }
        if !changed && t >= half {
            port.set_capacity(half, 4_000_000);
            changed = true;
            continue;
        }
        while let Some(p) = port.poll_transmit(t) {
            out.push((t - t0, p.len()));
        }
    }
    assert_eq!(port.config().capacity_bps, 4_000_000);
    let s = Duration::from_secs(1);
    let first = bytes_between(&out, Duration::ZERO, s) as f64 * 8.0;
    let second = bytes_between(&out, s, 2 * s) as f64 * 8.0;
    // Each second holds C·1 s to within one packet.
    assert!((first - 10e6).abs() <= 12_000.0, "first second {first} bit");
    assert!(
        (second - 4e6).abs() <= 2.0 * 12_000.0,
        "second second {second} bit"
    );
}

#[test]
fn rcp_rate_scales_with_capacity() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(8_000_000); // 1000 B/ms
    cfg.signalling = Signalling::NATIVE_RCP;
    cfg.mode = ModeConfig::default();
    let mut port = Port::new(cfg, t0);
    let r0 = port.snapshot().rate_bytes_per_ms;
    assert!((r0 - 50.0).abs() < 1e-9, "R0 = 0.05 C, got {r0}");
    port.set_capacity(t0, 2_000_000); // a quarter
    let r1 = port.snapshot().rate_bytes_per_ms;
    assert!((r1 - 12.5).abs() < 1e-9, "R scaled by 1/4, got {r1}");
    // An idle port's RCP climbs to the *new* C, not the old one.
    port.handle_timeout(t0 + Duration::from_secs(60));
    let r2 = port.snapshot().rate_bytes_per_ms;
    assert!((r2 - 250.0).abs() < 1e-6, "R at the new C, got {r2}");
    // Same capacity: nothing changes.
    port.set_capacity(t0 + Duration::from_secs(60), 2_000_000);
    assert_eq!(port.snapshot().rate_bytes_per_ms, r2);
}

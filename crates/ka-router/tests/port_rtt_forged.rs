//! Forged RTT indicators cannot move a KA port's d (DESIGN §3.6.2):
//! a 2 Mbit/s flow announcing 24 ms (code 4) beside 20 forged indicators
//! per second of the extreme codes, in virtual time through a whole port.

use std::time::{Duration, Instant};

use ka_router::{Port, PortConfig};

mod common;

/// A TCP segment of `total` IP bytes from port 40000 to 5001 (DF clear).
fn tcp(total: usize, df: bool, seq: u32) -> Vec<u8> {
    let mut payload = vec![0u8; total - 20];
    payload[..2].copy_from_slice(&40000u16.to_be_bytes());
    payload[2..4].copy_from_slice(&5001u16.to_be_bytes());
    payload[4..8].copy_from_slice(&seq.to_be_bytes());
    payload[12] = 0x50; // data offset 5
    payload[13] = 0x10; // ACK
    payload[14..16].copy_from_slice(&65535u16.to_be_bytes());
    common::ipv4(&payload, &[], df, false, 0, seq as u16, 64, 6)
}

/// Runs 10 s; returns d (ms) sampled every 100 ms over the last 5 s.
fn run(forged: &[u8]) -> Vec<f64> {
    let t0 = Instant::now();
    let mut port = Port::new(PortConfig::new(20_000_000), t0);
    let ms = Duration::from_millis;
    let mut events: Vec<(Duration, Vec<u8>)> = Vec::new();
    // The real flow: a 1500-byte segment every 6 ms (2 Mbit/s), every
    // 100 ms an indicator of code 4 (604 bytes, DF) instead.
    for i in 0..10_000 / 6 {
        let t = ms(6 * i);
        let pkt = if (6 * i) % 100 < 6 {
            tcp(604, true, i as u32)
        } else {
            tcp(1500, false, i as u32)
        };
        events.push((t, pkt));
    }
    // 20 forged indicators per second from elsewhere (not TCP of the flow).
    if !forged.is_empty() {
        for j in 0..200u64 {
            let k = forged[j as usize % forged.len()];
            events.push((ms(50 * j + 3), common::indicator_v4(k)));
        }
    }
    events.sort_by_key(|e| e.0);
    let mut out = Vec::new();
    let mut next_sample = ms(5_000);
    for (t, pkt) in events {
        while next_sample <= t {
            port.handle_timeout(t0 + next_sample);
            out.push(port.rtt().as_secs_f64() * 1e3);
            next_sample += ms(100);
        }
        port.push(t0 + t, pkt);
        while port.poll_transmit(t0 + t).is_some() {}
    }
    out
}

#[test]
fn twenty_forged_indicators_per_second_keep_d_near_the_true_rtt() {
    let honest = run(&[]);
    assert!(!honest.is_empty());
    assert!(
        honest.iter().all(|&d| (d - 24.0).abs() < 1e-6),
        "honest: {honest:?}"
    );
    for forged in [&[11u8][..], &[0], &[0, 11]] {
        let ds = run(forged);
        for d in &ds {
            assert!((12.0..=48.0).contains(d), "forged {forged:?}: d = {d} ms");
        }
    }
}

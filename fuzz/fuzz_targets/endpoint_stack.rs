#![no_main]
//! Feeds arbitrary bytes, split into packets, into a `ka_endpoint::Stack`
//! that listens on a port and has an active open in progress, draining its
//! output and running its timers between packets. Must never panic.
//!
//! Input format: repeated `[len_hi, len_lo, dt_ms, bytes(len)…]`.
use ka_endpoint::{Stack, StackConfig};
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let t0 = Instant::now();
    let mut now = t0;
    let mut stack = Stack::new(StackConfig::deterministic([7; 16]), t0);
    stack.listen(80);
    let _ = stack.connect(
        now,
        "10.0.0.2:0".parse().unwrap(),
        "10.0.0.1:5000".parse().unwrap(),
    );
    let mut buf = vec![0u8; 2048];
    let mut rest = data;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])) % 1600;
        now += Duration::from_millis(u64::from(rest[2]));
        rest = &rest[3..];
        let (pkt, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        stack.handle_packet(now, pkt);
        stack.handle_timeout(now);
        for _ in 0..64 {
            if stack.poll_transmit(now, &mut buf).is_none() {
                break;
            }
        }
        while let Some((h, _)) = stack.poll_event() {
            if let Some(c) = stack.conn_mut(h) {
                let mut r = [0u8; 512];
                let _ = c.read(&mut r);
                let _ = c.write(b"hello");
            }
        }
        assert!(stack.reassembler().memory() <= 4 << 20);
    }
});

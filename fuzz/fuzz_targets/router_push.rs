#![no_main]
//! Arbitrary bytes into `ka_router::Port::push`, then a full drain through
//! `poll_timeout` / `poll_transmit`: never panics, everything queued comes
//! out, counters add up.
//!
//! Input layout: byte 0 picks the signalling kind, `ipv6_signal` and the
//! queue limit; then records of `[gap: u8][len: u16 BE][len bytes]` (gap in
//! units of 50 µs), the last record taking whatever is left.
use std::time::{Duration, Instant};

use ka_router::{Port, PortConfig, PushOutcome, Signalling};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let mut cfg = PortConfig::new(10_000_000);
    cfg.signalling = match sel % 3 {
        0 => Signalling::Ka,
        1 => Signalling::NativeRcp,
        _ => Signalling::None,
    };
    cfg.ipv6_signal = sel & 0x04 != 0;
    cfg.queue_limit = usize::from(sel >> 3);
    cfg.delay = Duration::from_micros(u64::from(sel & 0x03) * 700);
    let t0 = Instant::now();
    let mut port = Port::new(cfg, t0);
    let mut t = t0;
    let (mut queued, mut out) = (0u64, 0u64);
    while let Some((&gap, r)) = rest.split_first() {
        let (len, r) = match r {
            [a, b, r @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), r),
            r => (r.len(), &[][..]),
        };
        let (pkt, r) = r.split_at(len.min(r.len()));
        rest = r;
        t += Duration::from_micros(u64::from(gap) * 50);
        if port.push(t, pkt.to_vec()) == PushOutcome::Queued {
            queued += 1;
        }
        while port.poll_transmit(t).is_some() {
            out += 1;
        }
    }
    while let Some(next) = port.poll_timeout() {
        assert!(next >= t);
        t = next;
        while port.poll_transmit(t).is_some() {
            out += 1;
        }
    }
    let c = port.snapshot().counters;
    assert_eq!(out, queued + c.fragments_made);
    assert_eq!(c.packets_out, out);
});

//! ka-router: the per-packet stamp path and a full `push` + `poll_transmit`
//! cycle through a `Port` (see docs/PERFORMANCE.md, section ka-router).
//!
//! `cargo bench -p ka-benches --bench stamp`
//!
//! Every benchmark clones its 1500-byte input per iteration (the functions
//! take ownership, as a driver hands over an owned buffer per packet) and
//! drops the output; `stamp/baseline_clone_drop_1500` is that cost alone.
//! (Pre-cloned inputs via `iter_batched` measured cold-cache copies instead.)

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ka_codec::Code;
use ka_codec::wire::checksum;
use ka_router::{Port, PortConfig, Signalling, stamp_ipv4, stamp_ipv6};

/// A 1500-byte IPv4/TCP packet with a valid header checksum.
fn ipv4_1500(df: bool) -> Vec<u8> {
    let mut p: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
    p[..20].copy_from_slice(&[
        0x45, 0, 0x05, 0xdc, 0x1c, 0x46, 0, 0, 64, 6, 0, 0, 192, 168, 0, 1, 192, 168, 0, 199,
    ]);
    if df {
        p[6] = 0x40;
    }
    let c = checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

/// A 1500-byte IPv6/TCP packet (no extension headers).
fn ipv6_1500() -> Vec<u8> {
    let mut p: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
    p[..8].copy_from_slice(&[0x60, 0, 0, 0, 0x05, 0xb4, 6, 64]);
    p
}

fn stamp(c: &mut Criterion) {
    let code = Code::from_len(880).expect("valid code");
    let split = ipv4_1500(false);
    let df = ipv4_1500(true);
    let v6 = ipv6_1500();
    let mut g = c.benchmark_group("stamp");
    // Every stamp benchmark clones its 1500-byte input (the function takes
    // ownership) and drops the output; this is that cost alone.
    g.bench_function("baseline_clone_drop_1500", |b| {
        b.iter(|| black_box(black_box(&split).clone()))
    });
    g.bench_function("ipv4_1500_split", |b| {
        b.iter(|| black_box(stamp_ipv4(black_box(&split).clone(), code)))
    });
    g.bench_function("ipv4_1500_untouched_df", |b| {
        b.iter(|| black_box(stamp_ipv4(black_box(&df).clone(), code)))
    });
    g.bench_function("ipv6_1500_split", |b| {
        b.iter(|| black_box(stamp_ipv6(black_box(&v6).clone(), code, 7)))
    });
    g.finish();
}

/// push + drain through a port at 1 Tbit/s (the link is never the limit),
/// one packet per simulated microsecond.
fn port_cycle(c: &mut Criterion) {
    let pkt = ipv4_1500(false);
    let mut g = c.benchmark_group("port");
    for (name, sig) in [
        ("ka_split", Signalling::KA),
        ("drop_tail", Signalling::None),
    ] {
        g.bench_function(format!("push_poll_1500_{name}"), |b| {
            let t0 = Instant::now();
            let mut cfg = PortConfig::new(1_000_000_000_000);
            cfg.signalling = sig;
            let mut port = Port::new(cfg, t0);
            let mut t = t0;
            b.iter(|| {
                t += Duration::from_micros(1);
                port.push(t, pkt.clone());
                let mut n = 0;
                while let Some(p) = port.poll_transmit(t + Duration::from_micros(1)) {
                    n += p.len();
                }
                black_box(n)
            });
            let c = port.snapshot().counters;
            assert_eq!(c.drops_queue + c.drops_malformed, 0);
            if sig == Signalling::KA {
                assert_eq!(c.fragments_made, c.packets_in);
            }
        });
    }
    g.finish();
}

criterion_group!(benches, stamp, port_cycle);
criterion_main!(benches);

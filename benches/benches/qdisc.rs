//! ka-router queue disciplines: the per-packet cost of one enqueue plus one
//! dequeue of a 1500-byte packet, for drop-tail, RED and FQ-CoDel, with a
//! standing queue of 100 packets spread over 64 TCP flows (so FQ-CoDel
//! hashes, schedules DRR rounds and runs CoDel per flow as it would under
//! load). Also the same through a whole `Port` (push + poll_transmit).
//! Ratios against drop-tail are recorded in docs/PERFORMANCE.md.
//!
//! `cargo bench -p ka-benches --bench qdisc`
//!
//! Every iteration clones its input (the disciplines take ownership of the
//! buffer, as a driver hands one over per packet) and drops the output, as
//! in `stamp`; the clone costs the same for every discipline.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ka_codec::wire::checksum;
use ka_router::qdisc::{FqCodelConfig, QdiscConfig, RedConfig};
use ka_router::{Port, PortConfig, Signalling};

/// A 1500-byte IPv4/TCP packet of flow `flow` (source port), valid header
/// checksum, ECT(0) so the AQMs mark rather than drop.
fn packet(flow: u16) -> Vec<u8> {
    let mut p: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
    p[..20].copy_from_slice(&[
        0x45, 0x02, 0x05, 0xdc, 0x1c, 0x46, 0, 0, 64, 6, 0, 0, 192, 168, 0, 1, 192, 168, 0, 199,
    ]);
    let c = checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[20..22].copy_from_slice(&(10_000 + flow).to_be_bytes());
    p[22..24].copy_from_slice(&5001u16.to_be_bytes());
    p[32] = 0x50; // data offset 5
    p
}

fn disciplines() -> [(&'static str, QdiscConfig); 3] {
    [
        ("droptail", QdiscConfig::DropTail),
        ("red", QdiscConfig::Red(RedConfig::default())),
        ("fq_codel", QdiscConfig::FqCodel(FqCodelConfig::default())),
    ]
}

const FLOWS: u16 = 64;
const STANDING: usize = 100;

fn enqueue_dequeue(c: &mut Criterion) {
    let pkts: Vec<Vec<u8>> = (0..FLOWS).map(packet).collect();
    let mut g = c.benchmark_group("qdisc");
    for (name, cfg) in disciplines() {
        g.bench_function(format!("enqueue_dequeue_1500_{name}"), |b| {
            // 1 Gbit/s: 12 µs per packet; time advances 12 µs per iteration,
            // so the standing queue's sojourn stays at 1.2 ms (< CoDel's
            // target: the common, non-dropping path).
            let mut q = cfg.build(1000, 1_000_000_000, 7);
            let mut now = 0u64;
            for (i, p) in pkts.iter().cycle().take(STANDING).enumerate() {
                q.enqueue(i as u64, p.clone());
            }
            let mut i = 0usize;
            b.iter(|| {
                now += 12_000;
                i = (i + 1) % pkts.len();
                black_box(q.enqueue(now, black_box(&pkts[i]).clone()));
                black_box(q.dequeue(now))
            })
        });
    }
    g.finish();
}

/// push + drain through a port (no signalling) at 1 Tbit/s, one packet per
/// simulated microsecond, per discipline.
fn port_cycle(c: &mut Criterion) {
    let pkts: Vec<Vec<u8>> = (0..FLOWS).map(packet).collect();
    let mut g = c.benchmark_group("qdisc_port");
    for (name, qdisc) in disciplines() {
        g.bench_function(format!("push_poll_1500_{name}"), |b| {
            let t0 = Instant::now();
            let mut cfg = PortConfig::new(1_000_000_000_000);
            cfg.signalling = Signalling::None;
            cfg.qdisc = qdisc;
            let mut port = Port::new(cfg, t0);
            let mut t = t0;
            let mut i = 0usize;
            b.iter(|| {
                t += Duration::from_micros(1);
                i = (i + 1) % pkts.len();
                port.push(t, black_box(&pkts[i]).clone());
                while let Some(p) = port.poll_transmit(t) {
                    black_box(p);
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, enqueue_dequeue, port_cycle);
criterion_main!(benches);

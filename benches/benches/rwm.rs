//! ka-router receive-window modulation: the per-packet cost of the RWM
//! stage in front of a port, with 10 000 tracked connections, against the
//! same port without it, in the same run. Two packets: a 1500-byte data
//! segment and a pure ACK (52-byte IP packet with TCP timestamps: a
//! 66-byte Ethernet frame) whose window RWM lowers — every ACK is
//! rewritten (the checksum patched), the worst case. Each iteration takes
//! another of the 10 000 flows (stride [`STRIDE`]), so the flow-table
//! lookups hit all over the table as they would under load. Each packet is built in a fresh
//! buffer from its flow's headers and a payload shared by all flows (see
//! [`Packets`]). Ratios are recorded in docs/PERFORMANCE.md.
//!
//! `cargo bench -p ka-benches --bench rwm`
//!
//! As in `qdisc`, each iteration clones its input and drains the port (no
//! signalling, drop-tail, 1 Tbit/s, one packet per simulated µs), so the
//! two sides of each ratio differ only by the RWM stage. With RWM a packet
//! goes through as `ka_router::Router` forwards it: parsed once
//! (`Layout::parse`), the parse handed to `Rwm::process_parsed` (or
//! `process_batch_parsed`) and to `Port::push_parsed`; without it, plain
//! `Port::push`.
//!
//! On a shared host the criterion figures of the two sides are taken
//! seconds apart under different load, so before them the bench also
//! prints an *interleaved* comparison: 41 rounds, each timing 20 000
//! packets without and then 20 000 with RWM (the same packets, the same
//! port and table), and the median of the per-round ratios — for the
//! plain port above (`--signal none`) and for the default KA port (the
//! packets have DF set, as kernel TCP sends them, so it never splits
//! them: the cost of a KA + RWM gateway for legacy TCP) — with 10 000
//! flows and, as a reference for RWM's work without memory stalls, with
//! 100 — first one packet at a time (`Rwm::process_parsed`, what the binary does
//! when one packet is ready per wake-up), then in batches of
//! `ka_router::rwm::BATCH` (16) packets (`Rwm::process_batch_parsed`, what the
//! binary's loop does when that many are ready: it reads every ready
//! packet, up to 256, and hands them to the core together).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::tcp::{ACK, SYN, TcpOptions, TcpRepr};
use ka_codec::wire::{Layout, SegmentMut};
use ka_router::rwm::{BATCH, Rwm, RwmConfig, Side};
use ka_router::{Port, PortConfig, Signalling};

const FLOWS: u32 = 10_000;
/// Flows are visited with this stride (prime, coprime to 10 000 and 100),
/// so neither their table slots (allocated in handshake order) nor their
/// packets are read in address order, which a hardware prefetcher would
/// hide.
const STRIDE: usize = 7_919;

/// A TCP/IPv4 segment from `(src, sport)` to `(dst, dport)`.
fn segment(
    (src, sport): ([u8; 4], u16),
    (dst, dport): ([u8; 4], u16),
    flags: u8,
    (seq, ack): (u32, u32),
    window: u16,
    payload: usize,
) -> Vec<u8> {
    let mut options = TcpOptions {
        timestamps: Some((1, 2)),
        ..TcpOptions::default()
    };
    if flags & SYN != 0 {
        options.mss = Some(1448);
        options.window_scale = Some(7);
    }
    let tcp = TcpRepr {
        options,
        ..TcpRepr::new(sport, dport, seq, ack, flags, window)
    };
    let data: Vec<u8> = (0..payload).map(|i| (i * 7) as u8).collect();
    TcpSegment {
        dont_frag: true,
        payload: &data,
        ..TcpSegment::new(Addrs::V4(src, dst), tcp)
    }
    .to_vec()
    .expect("segment fits")
}

/// Client `i` (10.1.x.y:port) of server 10.0.0.1:443.
fn client(i: u32) -> ([u8; 4], u16) {
    let [_, a, b, _] = i.to_be_bytes();
    ([10, 1, a, b], 20_000 + (i % 40_000) as u16)
}

/// The server, 10.0.0.1:443.
const SERVER: ([u8; 4], u16) = ([10, 0, 0, 1], 443);

/// An RWM with `flows` established connections (handshakes run through
/// it), the data segments (server → client, `Side::Forward`) and the ACKs
/// (client → server, `Side::Reverse`) of each.
fn setup(t0: Instant, flows: u32) -> (Rwm, Packets, Packets) {
    let mut rwm = Rwm::new(RwmConfig::new(10_000_000_000), t0).expect("valid config");
    let mut data = Vec::new();
    let mut acks = Vec::new();
    for i in 0..flows {
        let c = client(i);
        let t = t0 + Duration::from_micros(u64::from(i));
        let mut syn = segment(c, SERVER, SYN, (100, 0), 65_535, 0);
        rwm.process(t, Side::Reverse, &mut syn);
        let mut sa = segment(SERVER, c, SYN | ACK, (500, 101), 65_535, 0);
        rwm.process(t + Duration::from_millis(10), Side::Forward, &mut sa);
        let mut ack = segment(c, SERVER, ACK, (101, 501), 1000, 0);
        rwm.process(t + Duration::from_millis(20), Side::Reverse, &mut ack);
        data.push(segment(SERVER, c, ACK, (501, 101), 1000, PAYLOAD));
        acks.push(segment(c, SERVER, ACK, (101, 501), 65_535, 0));
    }
    assert_eq!(rwm.stats().flows, u64::from(flows));
    (rwm, Packets::new(&data), Packets::new(&acks))
}

/// Payload of a data segment: 1500 − 20 (IPv4) − 32 (TCP with timestamps).
const PAYLOAD: usize = 1448;
/// IPv4 + TCP header with the timestamps option.
const HEADER: usize = 52;

/// One packet per flow, stored as its flow's 52 header bytes (contiguous,
/// 520 kB for 10 000 flows) and one payload shared by all flows (every
/// flow's payload is the same bytes, so the headers' checksums hold). A
/// packet is rebuilt by copying both into a new buffer — byte for byte the
/// segment `segment()` made. Keeping 10 000 separate 1500-byte copies
/// (15 MB) instead would stream 1.5 kB of cold memory through the cache
/// per packet, which is the bench's doing (a router receives each packet
/// into a buffer it just wrote, and forwards it without reading the
/// payload) and evicts the flow table between lookups.
struct Packets {
    headers: Vec<[u8; HEADER]>,
    payload: Vec<u8>,
}

impl Packets {
    fn new(pkts: &[Vec<u8>]) -> Self {
        let payload = pkts.first().map_or(Vec::new(), |p| p[HEADER..].to_vec());
        let headers = pkts
            .iter()
            .map(|p| {
                assert_eq!(&p[HEADER..], &payload[..], "one shared payload");
                p[..HEADER].try_into().expect("52-byte header")
            })
            .collect();
        Packets { headers, payload }
    }

    fn len(&self) -> usize {
        self.headers.len()
    }

    /// Flow `i`'s packet in a fresh buffer.
    fn packet(&self, i: usize) -> Vec<u8> {
        let mut p = Vec::with_capacity(HEADER + self.payload.len());
        p.extend_from_slice(&self.headers[i]);
        p.extend_from_slice(&self.payload);
        p
    }
}

fn port(t0: Instant, signalling: Signalling) -> Port {
    let mut cfg = PortConfig::new(1_000_000_000_000);
    cfg.signalling = signalling;
    Port::new(cfg, t0)
}

/// One packet through the stage under test, 1 µs after the last: the next
/// packet in the scattered visiting order, through `rwm` if given, into
/// the port, and the port drained.
#[inline(always)]
fn one_packet(
    t: &mut Instant,
    i: &mut usize,
    pkts: &Packets,
    rwm: Option<&mut Rwm>,
    side: Side,
    port: &mut Port,
) {
    *t += Duration::from_micros(1);
    *i = (*i + STRIDE) % pkts.len();
    let mut p = black_box(pkts).packet(*i);
    match rwm {
        // As `ka_router::Router` forwards: one parse, handed to RWM and
        // to the port.
        Some(rwm) => match Layout::parse(&p) {
            Ok(l) => {
                black_box(rwm.process_parsed(*t, side, &mut SegmentMut::with_layout(&mut p, l)));
                port.push_parsed(*t, p, l);
            }
            Err(_) => {
                black_box(rwm.process(*t, side, &mut p));
                port.push(*t, p);
            }
        },
        None => {
            port.push(*t, p);
        }
    }
    while let Some(p) = port.poll_transmit(*t) {
        black_box(p);
    }
}

fn rwm_stage(c: &mut Criterion) {
    let mut g = c.benchmark_group("rwm");
    for (name, side, acks) in [
        ("1500_data", Side::Forward, false),
        ("52_ack", Side::Reverse, true),
    ] {
        for with_rwm in [false, true] {
            let label = format!("{}_{name}", if with_rwm { "port_rwm" } else { "port_only" });
            g.bench_function(label, |b| {
                let t0 = Instant::now();
                let (mut rwm, data, ack) = setup(t0, FLOWS);
                let pkts = if acks { ack } else { data };
                let mut port = port(t0, Signalling::None);
                let mut t = t0 + Duration::from_millis(30);
                let mut i = 0usize;
                b.iter(|| {
                    one_packet(
                        &mut t,
                        &mut i,
                        &pkts,
                        with_rwm.then_some(&mut rwm),
                        side,
                        &mut port,
                    )
                });
                // Still all tracked and active: the lookups hit live entries.
                assert_eq!(rwm.stats().flows, u64::from(FLOWS));
            });
        }
    }
    g.finish();
}

/// Median per-round ratio (with RWM / without), and the medians of the
/// per-packet times, of `rounds` interleaved rounds. With `batch` > 1 the
/// packets go through as the `ka-router` binary hands them over when that
/// many are ready at one wake-up: `batch` packets read (each with its own
/// time), `Rwm::process_batch_parsed` on all of them, each pushed into the port,
/// then the port drained — the same on both sides of the ratio.
fn interleaved(
    name: &str,
    side: Side,
    acks: bool,
    signalling: Signalling,
    flows: u32,
    batch: usize,
) {
    const ROUNDS: usize = 41;
    const PER_ROUND: usize = 20_000;
    let t0 = Instant::now();
    let (mut rwm, data, ack) = setup(t0, flows);
    let pkts = if acks { ack } else { data };
    let mut port = port(t0, signalling);
    let mut t = t0 + Duration::from_millis(30);
    let mut i = 0usize;
    let mut bufs: Vec<(Instant, Vec<u8>)> = Vec::with_capacity(batch);
    let mut layouts: Vec<Option<Layout>> = Vec::with_capacity(batch);
    let mut run = |with_rwm: bool, rwm: &mut Rwm| {
        let start = Instant::now();
        if batch == 1 {
            for _ in 0..PER_ROUND {
                one_packet(
                    &mut t,
                    &mut i,
                    &pkts,
                    with_rwm.then_some(&mut *rwm),
                    side,
                    &mut port,
                );
            }
        } else {
            for _ in 0..PER_ROUND / batch {
                for _ in 0..batch {
                    t += Duration::from_micros(1);
                    i = (i + STRIDE) % pkts.len();
                    bufs.push((t, black_box(&pkts).packet(i)));
                }
                if with_rwm {
                    // As `ka_router::Router` forwards a batch: each packet
                    // parsed once, the parse handed to RWM and the port.
                    layouts.clear();
                    layouts.extend(bufs.iter().map(|(_, p)| Layout::parse(p).ok()));
                    rwm.process_batch_parsed(
                        bufs.iter_mut()
                            .zip(layouts.iter())
                            .map(|((t, p), l)| (*t, side, p.as_mut_slice(), *l)),
                    );
                    for ((tp, p), l) in bufs.drain(..).zip(layouts.iter()) {
                        match l {
                            Some(l) => port.push_parsed(tp, p, *l),
                            None => port.push(tp, p),
                        };
                    }
                } else {
                    for (tp, p) in bufs.drain(..) {
                        port.push(tp, p);
                    }
                }
                while let Some(p) = port.poll_transmit(t) {
                    black_box(p);
                }
            }
        }
        start.elapsed().as_secs_f64() * 1e9 / PER_ROUND as f64
    };
    let rewritten_before = rwm.stats().windows_rewritten[side.index()];
    let (mut without, mut with, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let a = run(false, &mut rwm);
        let b = run(true, &mut rwm);
        without.push(a);
        with.push(b);
        ratio.push(b / a);
    }
    // Every ACK of the rounds was rewritten (the worst case).
    if acks {
        let rewritten = rwm.stats().windows_rewritten[side.index()] - rewritten_before;
        assert_eq!(rewritten, (ROUNDS * PER_ROUND) as u64, "{name}");
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!(
        "rwm interleaved {name} ({signalling:?} port, {flows} flows, batch {batch}): without {:.0} ns, with {:.0} ns per packet, median ratio {:.3} \
         ({ROUNDS} rounds of {PER_ROUND})",
        median(&mut without),
        median(&mut with),
        median(&mut ratio)
    );
}

criterion_group!(benches, rwm_stage);

fn main() {
    // 100 flows: the table stays in L1/L2, so the ratio is RWM's work
    // alone; with 10 000 the lookups also wait for memory. Batch 1: one
    // packet per wake-up of the binary's loop (`Rwm::process_parsed`); BATCH: a
    // busy router's wake-up, at least BATCH packets ready
    // (`Rwm::process_batch_parsed`).
    for batch in [1, BATCH] {
        for flows in [FLOWS, 100] {
            for signalling in [Signalling::None, Signalling::KA] {
                interleaved("1500_data", Side::Forward, false, signalling, flows, batch);
                interleaved("52_ack", Side::Reverse, true, signalling, flows, batch);
            }
        }
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

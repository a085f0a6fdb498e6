//! ka-router receive-window modulation: the per-packet cost of the RWM
//! stage in front of a port, with 10 000 tracked connections, against the
//! same port without it, in the same run. Two packets: a 1500-byte data
//! segment and a pure ACK (52-byte IP packet with TCP timestamps: a
//! 66-byte Ethernet frame) whose window RWM lowers — every ACK is
//! rewritten (the checksum patched), the worst case. Each iteration takes
//! the next of the 10 000 flows, so the flow-table lookups hit all over
//! the table as they would under load. Ratios are recorded in
//! docs/PERFORMANCE.md.
//!
//! `cargo bench -p ka-benches --bench rwm`
//!
//! As in `qdisc`, each iteration clones its input and drains the port (no
//! signalling, drop-tail, 1 Tbit/s, one packet per simulated µs), so the
//! two sides of each ratio differ only by `Rwm::process`.
//!
//! On a shared host the criterion figures of the two sides are taken
//! seconds apart under different load, so before them the bench also
//! prints an *interleaved* comparison: 41 rounds, each timing 20 000
//! packets without and then 20 000 with RWM (the same packets, the same
//! port and table), and the median of the per-round ratios — for the
//! plain port above (`--signal none`) and for the default KA port (the
//! packets have DF set, as kernel TCP sends them, so it never splits
//! them: the cost of a KA + RWM gateway for legacy TCP).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use ka_codec::wire::checksum::pseudo_v4;
use ka_codec::wire::ipv4::Ipv4Repr;
use ka_codec::wire::tcp::{ACK, SYN, TcpOptions, TcpRepr};
use ka_router::rwm::{Rwm, RwmConfig, Side};
use ka_router::{Port, PortConfig, Signalling};

const FLOWS: u32 = 10_000;

/// A TCP/IPv4 segment from (`src`, `sport`) to (`dst`, `dport`).
#[allow(clippy::too_many_arguments)]
fn segment(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    flags: u8,
    seq: u32,
    ack: u32,
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
        src_port: sport,
        dst_port: dport,
        seq,
        ack,
        flags,
        window,
        urgent: 0,
        options,
    };
    let tlen = tcp.header_len() + payload;
    let mut p = vec![0u8; 20 + tlen];
    Ipv4Repr {
        src,
        dst,
        protocol: 6,
        ttl: 64,
        ident: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        dscp_ecn: 0,
        payload_len: tlen,
    }
    .emit(&mut p)
    .expect("header fits");
    let data: Vec<u8> = (0..payload).map(|i| (i * 7) as u8).collect();
    tcp.emit(&mut p[20..], &data, pseudo_v4(src, dst, 6, tlen as u32))
        .expect("segment fits");
    p
}

/// Client `i` (10.1.x.y:port) of server 10.0.0.1:443.
fn client(i: u32) -> ([u8; 4], u16) {
    let [_, a, b, _] = i.to_be_bytes();
    ([10, 1, a, b], 20_000 + (i % 40_000) as u16)
}

const SERVER: [u8; 4] = [10, 0, 0, 1];

/// An RWM with `FLOWS` established connections (handshakes run through
/// it), the data segments (server → client, `Side::Forward`) and the ACKs
/// (client → server, `Side::Reverse`) of each.
fn setup(t0: Instant) -> (Rwm, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut rwm = Rwm::new(RwmConfig::new(10_000_000_000), t0).expect("valid config");
    let mut data = Vec::new();
    let mut acks = Vec::new();
    for i in 0..FLOWS {
        let (c, cp) = client(i);
        let t = t0 + Duration::from_micros(u64::from(i));
        let mut syn = segment(c, SERVER, cp, 443, SYN, 100, 0, 65_535, 0);
        rwm.process(t, Side::Reverse, &mut syn);
        let mut sa = segment(SERVER, c, 443, cp, SYN | ACK, 500, 101, 65_535, 0);
        rwm.process(t + Duration::from_millis(10), Side::Forward, &mut sa);
        let mut ack = segment(c, SERVER, cp, 443, ACK, 101, 501, 1000, 0);
        rwm.process(t + Duration::from_millis(20), Side::Reverse, &mut ack);
        data.push(segment(SERVER, c, 443, cp, ACK, 501, 101, 1000, 1448));
        acks.push(segment(c, SERVER, cp, 443, ACK, 101, 501, 65_535, 0));
    }
    assert_eq!(rwm.stats().flows, u64::from(FLOWS));
    (rwm, data, acks)
}

fn port(t0: Instant, signalling: Signalling) -> Port {
    let mut cfg = PortConfig::new(1_000_000_000_000);
    cfg.signalling = signalling;
    Port::new(cfg, t0)
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
                let (mut rwm, data, ack) = setup(t0);
                let pkts = if acks { ack } else { data };
                let mut port = port(t0, Signalling::None);
                let mut t = t0 + Duration::from_millis(30);
                let mut i = 0usize;
                b.iter(|| {
                    t += Duration::from_micros(1);
                    i = (i + 1) % pkts.len();
                    let mut p = black_box(&pkts[i]).clone();
                    if with_rwm {
                        black_box(rwm.process(t, side, &mut p));
                    }
                    port.push(t, p);
                    while let Some(p) = port.poll_transmit(t) {
                        black_box(p);
                    }
                });
                // Still all tracked and active: the lookups hit live entries.
                assert_eq!(rwm.stats().flows, u64::from(FLOWS));
            });
        }
    }
    g.finish();
}

/// Median per-round ratio (with RWM / without), and the medians of the
/// per-packet times, of `rounds` interleaved rounds.
fn interleaved(name: &str, side: Side, acks: bool, signalling: Signalling) {
    const ROUNDS: usize = 41;
    const PER_ROUND: usize = 20_000;
    let t0 = Instant::now();
    let (mut rwm, data, ack) = setup(t0);
    let pkts = if acks { ack } else { data };
    let mut port = port(t0, signalling);
    let mut t = t0 + Duration::from_millis(30);
    let mut i = 0usize;
    let mut run = |with_rwm: bool, rwm: &mut Rwm| {
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            t += Duration::from_micros(1);
            i = (i + 1) % pkts.len();
            let mut p = black_box(&pkts[i]).clone();
            if with_rwm {
                black_box(rwm.process(t, side, &mut p));
            }
            port.push(t, p);
            while let Some(p) = port.poll_transmit(t) {
                black_box(p);
            }
        }
        start.elapsed().as_secs_f64() * 1e9 / PER_ROUND as f64
    };
    let (mut without, mut with, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let a = run(false, &mut rwm);
        let b = run(true, &mut rwm);
        without.push(a);
        with.push(b);
        ratio.push(b / a);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!(
        "rwm interleaved {name} ({signalling:?} port): without {:.0} ns, with {:.0} ns per packet, median ratio {:.3} \
         ({ROUNDS} rounds of {PER_ROUND})",
        median(&mut without),
        median(&mut with),
        median(&mut ratio)
    );
}

criterion_group!(benches, rwm_stage);

fn main() {
    for signalling in [Signalling::None, Signalling::Ka] {
        interleaved("1500_data", Side::Forward, false, signalling);
        interleaved("52_ack", Side::Reverse, true, signalling);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

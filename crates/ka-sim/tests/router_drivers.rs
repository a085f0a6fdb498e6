//! The `ka-router` binary's core and the simulator's router node are one
//! router: the same timed packet trace, driven (a) through
//! `ka_router::shell::KaPorts` exactly as the binary's forwarding loop
//! drives a `Forwarder` (packets pushed in batches at their arrival times,
//! `poll_transmit` per direction at each `poll_timeout` instant) and (b)
//! through `ka_sim::model::router::RouterNode` on the engine (a node replaying the
//! trace, sinks behind the router's two interfaces), leaves both with the
//! same bytes at the same instants, interface by interface.
//!
//! The trace: five TCP connections, three from the `--in` side and two
//! from the `--out` side (handshakes with MSS and window scale, full data
//! segments, every second one acknowledged with a KA-Rate echo), through
//! two KA ports running the `echo` controller (which lowers the echoes of
//! the ACKs passing back) with a 3 ms delay each, and receive-window
//! modulation (`--rwm`: a web class) in front of both. The ports' delay
//! and queues make the moment an ACK's echo is lowered matter: the test
//! fails if one driver lowered it on the ACK's arrival and the other on
//! its departure.

use std::time::{Duration, Instant};

use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::tcp::TcpRepr;
use ka_router::rwm::{Rwm, RwmClass, RwmConfig};
use ka_router::shell::{Direction, Forwarder, KaPorts};
use ka_router::{ControllerKind, EchoConfig, PortConfig, Signalling};
use ka_sim::engine::{Clock, Ctx, Engine, LinkConfig, Node, NodeId, SimTime};
use ka_sim::model::addr::host_addr;
use ka_sim::model::router::RouterNode;

const MS: u64 = 1_000_000;
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;

/// One arrival: when (ns), from which side (`Direction::Forward`: read on
/// `--in`), the packet.
type Arrival = (u64, Direction, Vec<u8>);

/// What left each interface (0: `--in`, 1: `--out`): (ns, packet).
type Out = [Vec<(u64, Vec<u8>)>; 2];

/// An IPv4 TCP segment (DF clear, valid checksums).
fn seg(
    (src, dst): ([u8; 4], [u8; 4]),
    (sport, dport): (u16, u16),
    (seq, ack): (u32, u32),
    flags: u8,
    opts: &[u8],
    payload: usize,
) -> Vec<u8> {
    let tcp = TcpRepr::new(sport, dport, seq, ack, flags, 65535);
    let payload: Vec<u8> = (0..payload).map(|k| k as u8).collect();
    TcpSegment {
        raw_tcp_options: opts,
        payload: &payload,
        ..TcpSegment::new(Addrs::V4(src, dst), tcp)
    }
    .to_vec()
    .unwrap()
}

/// A deterministic jitter source (xorshift64).
struct Jitter(u64);

impl Jitter {
    fn next(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % max
    }
}

/// A connection from host `hosts.0` to host `hosts.1` (host `i` is
/// `host_addr(i)`; even hosts are on the `--in` side), opened at `start`
/// (ns): SYN, SYN-ACK 1 ms later, ACK, `n` full segments about `gap` apart,
/// each second one acknowledged 0.3–0.5 ms after it by an ACK echoing
/// KA-Rate `code` (RFC 6994 kind 253, ExID 0x4B41), then a FIN each way.
struct Conn {
    hosts: (usize, usize),
    ports: (u16, u16),
    start: u64,
    n: u32,
    gap: u64,
    code: u8,
}

impl Conn {
    fn packets(&self, j: &mut Jitter) -> Vec<Arrival> {
        let side = |h: usize| {
            if h.is_multiple_of(2) {
                Direction::Forward
            } else {
                Direction::Reverse
            }
        };
        let (client, server) = self.hosts;
        let (c, s) = (side(client), side(server));
        let up = (host_addr(client), host_addr(server));
        let down = (up.1, up.0);
        let (cp, sp) = (self.ports, (self.ports.1, self.ports.0));
        let (ci, si) = (7_000u32 + u32::from(self.ports.0), 90_000u32);
        let opts = [2, 4, 0x05, 0xB4, 3, 3, 7, 1];
        let echo = [253, 6, 0x4B, 0x41, self.code, 1, 1, 1];
        let start = self.start;
        let mut v = vec![
            (start, c, seg(up, cp, (ci, 0), SYN, &opts, 0)),
            (
                start + MS,
                s,
                seg(down, sp, (si, ci + 1), SYN | ACK, &opts, 0),
            ),
            (
                start + 2 * MS,
                c,
                seg(up, cp, (ci + 1, si + 1), ACK, &[], 0),
            ),
        ];
        let mut t = start + 2 * MS;
        let mut seq = ci + 1;
        for k in 0..self.n {
            t += self.gap / 2 + j.next(self.gap);
            v.push((t, c, seg(up, cp, (seq, si + 1), ACK, &[], 1460)));
            seq += 1460;
            if k % 2 == 1 {
                let at = t + 300_000 + j.next(200_000);
                v.push((at, s, seg(down, sp, (si + 1, seq), ACK, &echo, 0)));
            }
        }
        t += 5 * MS;
        v.push((t, c, seg(up, cp, (seq, si + 1), FIN | ACK, &[], 0)));
        v.push((
            t + MS,
            s,
            seg(down, sp, (si + 1, seq + 1), FIN | ACK, &echo, 0),
        ));
        v
    }
}

/// Three connections from the `--in` side (two of them in RWM's web
/// class), two from the `--out` side; the forward port is loaded just
/// above its capacity for a while, the reverse one just below.
fn trace() -> Vec<Arrival> {
    let mut j = Jitter(0x9E37_79B9_7F4A_7C15);
    let conn = |hosts, ports, start_ms, n, gap, code| Conn {
        hosts,
        ports,
        start: start_ms * MS,
        n,
        gap,
        code,
    };
    let conns = [
        conn((0, 1), (40_001, 80), 0, 120, 1_500_000, 185),
        conn((2, 3), (40_002, 5001), 4, 100, 1_800_000, 185),
        conn((0, 3), (40_003, 443), 9, 80, 1_200_000, 170),
        conn((1, 2), (40_004, 5001), 2, 90, 1_600_000, 185),
        conn((3, 0), (40_005, 80), 15, 60, 2_000_000, 180),
    ];
    let mut v: Vec<Arrival> = conns.iter().flat_map(|c| c.packets(&mut j)).collect();
    // Stable: arrivals at one instant keep their generation order.
    v.sort_by_key(|a| a.0);
    v
}

/// Both ports: KA with the echo controller, 3 ms delay, 100 packets.
fn ports() -> (PortConfig, PortConfig) {
    let cfg = |bps| {
        let mut c = PortConfig::new(bps);
        c.signalling = Signalling::Ka {
            controller: ControllerKind::Echo(EchoConfig::default()),
        };
        c.delay = Duration::from_millis(3);
        c.queue_limit = 100;
        c
    };
    (cfg(20_000_000), cfg(15_000_000))
}

fn rwm(t0: Instant) -> Rwm {
    let mut c = RwmConfig::new(20_000_000);
    c.capacity_bps = [20_000_000, 15_000_000];
    c.classes = vec![RwmClass {
        name: "web".into(),
        ports: vec![80, 443],
        share: 0.6,
    }];
    Rwm::new(c, t0).unwrap()
}

/// The egress interface of `dir` in the binary (`--in` = 0, `--out` = 1).
fn iface(dir: Direction) -> usize {
    match dir {
        Direction::Forward => 1,
        Direction::Reverse => 0,
    }
}

/// (a) The binary's forwarding loop, in virtual time: every packet is read
/// at its arrival; packets less than 1 ms apart (the ports' delay is 3 ms,
/// so no departure falls among them) are read as one batch and pushed
/// together; then everything due is written, one piece per direction per
/// round, at each `poll_timeout` instant; the core's timers are run every
/// 100 ms (the loop's publication period).
fn through_the_binary(trace: &[Arrival], t0: Instant) -> (Out, KaPorts) {
    let (fwd, rev) = ports();
    let mut core = KaPorts::new(fwd, rev, t0).with_rwm(rwm(t0));
    let ns = |t: Instant| (t - t0).as_nanos() as u64;
    let mut out: Out = [Vec::new(), Vec::new()];
    let mut batch = Vec::new();
    let mut next_publish = t0 + Duration::from_millis(100);
    let mut k = 0;
    loop {
        let due = core.poll_timeout();
        let arrival = trace.get(k).map(|a| t0 + Duration::from_nanos(a.0));
        let clock = match (due, arrival) {
            (None, None) => break,
            (Some(d), a) if a.is_none_or(|a| d <= a) => {
                // Writes, as the loop does them.
                while let Some(due) = core.poll_timeout().filter(|&t| t <= d) {
                    let mut sent = false;
                    for dir in Direction::ALL {
                        if let Some(p) = core.poll_transmit(dir, due) {
                            out[iface(dir)].push((ns(due), p));
                            sent = true;
                        }
                    }
                    if !sent {
                        break;
                    }
                }
                d
            }
            (_, a) => {
                let first = trace[k].0;
                while let Some((t, dir, p)) = trace.get(k) {
                    let at = t0 + Duration::from_nanos(*t);
                    if *t >= first + MS || due.is_some_and(|d| at >= d) {
                        break;
                    }
                    batch.push((*dir, p.clone(), at));
                    k += 1;
                }
                core.push_batch(&mut batch);
                a.unwrap_or(t0)
            }
        };
        if clock >= next_publish {
            core.handle_timeout(clock);
            next_publish = clock + Duration::from_millis(100);
        }
    }
    (out, core)
}

/// Plays the trace into the router (its interface 0).
struct Player {
    trace: Vec<(SimTime, Vec<u8>)>,
    next: usize,
}

/// (b)'s nodes: the player, the router, one sink per router interface.
enum TestNode {
    Player(Player),
    Router(Box<RouterNode>),
    Sink(usize),
}

impl Node for TestNode {
    /// What the sinks got: (interface, time, packet).
    type Shared = Vec<(usize, SimTime, Vec<u8>)>;

    fn handle_packet(&mut self, ctx: &mut Ctx<'_, Self::Shared>, _iface: u16, packet: Vec<u8>) {
        match self {
            TestNode::Router(r) => r.handle_packet(ctx, packet),
            TestNode::Sink(i) => {
                let now = ctx.now();
                ctx.shared.push((*i, now, packet));
            }
            TestNode::Player(_) => {}
        }
    }

    fn handle_timeout(&mut self, ctx: &mut Ctx<'_, Self::Shared>) {
        match self {
            TestNode::Router(r) => r.handle_timeout(ctx),
            TestNode::Player(p) => {
                while let Some((t, packet)) = p.trace.get(p.next) {
                    if *t > ctx.now() {
                        break;
                    }
                    ctx.send(0, packet.clone());
                    p.next += 1;
                }
            }
            TestNode::Sink(_) => {}
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            TestNode::Router(r) => r.poll_timeout(),
            TestNode::Player(p) => p.trace.get(p.next).map(|a| a.0),
            TestNode::Sink(_) => None,
        }
    }
}

/// (b) The simulator: the router node on the engine, between a player and
/// two sinks over instantaneous links, routing by host: even hosts behind
/// interface 0, odd ones behind interface 1.
fn through_the_simulator(trace: &[Arrival], t0: Instant) -> (Out, Engine<TestNode>) {
    let clock = Clock::new(t0);
    let (fwd, rev) = ports();
    let mut router = RouterNode::new(clock);
    assert_eq!(router.add_egress_port("in", rev, 0), 0);
    assert_eq!(router.add_egress_port("out", fwd, 0), 1);
    router.set_routes((0..4).map(|h| (h % 2) as u16).collect());
    router.set_rwm(rwm(t0), 0);
    let mut engine = Engine::new(clock, Vec::new());
    let player = engine.add_node(TestNode::Player(Player {
        trace: trace.iter().map(|(t, _, p)| (*t, p.clone())).collect(),
        next: 0,
    }));
    let r = engine.add_node(TestNode::Router(Box::new(router)));
    let sinks = [
        engine.add_node(TestNode::Sink(0)),
        engine.add_node(TestNode::Sink(1)),
    ];
    engine.add_link(player, LinkConfig::new(0, 0, r, 0));
    for s in sinks {
        engine.add_link(r, LinkConfig::new(0, 0, s, 0));
    }
    for id in [player, r, sinks[0], sinks[1]] {
        engine.rearm_node(id);
    }
    engine.run_until(10_000 * MS);
    let mut out: Out = [Vec::new(), Vec::new()];
    for (i, t, p) in std::mem::take(&mut engine.shared) {
        out[i].push((t, p));
    }
    (out, engine)
}

fn router_of(engine: &Engine<TestNode>) -> &RouterNode {
    match engine.node(NodeId(1)) {
        TestNode::Router(r) => r,
        _ => unreachable!(),
    }
}

#[test]
fn the_binary_and_the_simulator_forward_the_same_bytes_at_the_same_instants() {
    let t0 = Instant::now();
    let trace = trace();
    let (a, core) = through_the_binary(&trace, t0);
    let (b, engine) = through_the_simulator(&trace, t0);
    let sim = router_of(&engine);

    // Same packets, same instants, interface by interface.
    for i in 0..2 {
        assert_eq!(a[i].len(), b[i].len(), "interface {i}");
        for (k, (x, y)) in a[i].iter().zip(&b[i]).enumerate() {
            assert_eq!(x.0, y.0, "interface {i}, packet {k}: departure");
            assert!(x.1 == y.1, "interface {i}, packet {k} ({} ns): bytes", x.0);
        }
    }
    // The trace exercised what it is about.
    for dir in Direction::ALL {
        let c = core.port(dir).unwrap().snapshot().counters;
        assert!(c.echoes_lowered > 20, "{dir:?}: {c:?}");
        assert!(c.fragments_made > 20, "{dir:?}: {c:?}");
        assert_eq!(c.packets_out as usize, a[iface(dir)].len());
    }
    let rwm = core.rwm_stats().unwrap();
    assert_eq!(rwm.handshakes, 5, "{rwm:?}");
    assert!(rwm.windows_rewritten.iter().all(|&n| n > 20), "{rwm:?}");
    // Queues built in both directions (mean sojourn, ns).
    for i in 0..2 {
        let s = sim.port(i).unwrap().sojourn();
        let mean = s.sum_ns / s.count.max(1);
        eprintln!(
            "interface {i}: mean sojourn {mean} ns over {} packets",
            s.count
        );
        assert!(mean > 100_000, "interface {i}: mean sojourn {mean} ns");
    }

    assert_eq!(core.rwm_stats(), sim.rwm_stats());
    for (dir, i) in [(Direction::Reverse, 0), (Direction::Forward, 1)] {
        let x = core.port(dir).unwrap().snapshot();
        let y = sim.port(i).unwrap().snapshot();
        assert_eq!(x.counters, y.counters, "interface {i}");
    }
}

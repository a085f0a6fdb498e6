use std::time::{Duration, Instant};

use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::checksum;
use ka_codec::wire::tcp::TcpRepr;

use super::*;
use crate::rwm::{RwmClass, RwmConfig};
use crate::{ControllerKind, EchoConfig, PortConfig, Signalling};

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

/// An IPv4 segment with header `tcp`, raw TCP options `opts` and `payload`
/// zero bytes, valid checksums, DF clear (also for the shell's tests).
pub(crate) fn tcp_v4(
    src: [u8; 4],
    dst: [u8; 4],
    tcp: TcpRepr,
    opts: &[u8],
    payload: usize,
) -> Vec<u8> {
    let payload = vec![0u8; payload];
    TcpSegment {
        raw_tcp_options: opts,
        payload: &payload,
        ..TcpSegment::new(Addrs::V4(src, dst), tcp)
    }
    .to_vec()
    .unwrap()
}

/// [`tcp_v4`] with window 65535.
fn seg(
    src: [u8; 4],
    dst: [u8; 4],
    ports: (u16, u16),
    (seq, ack): (u32, u32),
    flags: u8,
    opts: &[u8],
    payload: usize,
) -> Vec<u8> {
    let tcp = TcpRepr::new(ports.0, ports.1, seq, ack, flags, 65535);
    tcp_v4(src, dst, tcp, opts, payload)
}

fn tcp_checksum_ok(p: &[u8]) -> bool {
    let src = [p[12], p[13], p[14], p[15]];
    let dst = [p[16], p[17], p[18], p[19]];
    let pseudo = checksum::pseudo_v4(src, dst, 6, (p.len() - 20) as u32);
    checksum::finish(checksum::sum(&p[20..], pseudo)) == 0
}

/// KA-Rate echoing `code` (RFC 6994 experimental option, ExID 0x4B41),
/// padded with two NOPs.
fn echo(code: u8) -> [u8; 8] {
    [253, 6, 0x4B, 0x41, code, 1, 1, 1]
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const MS: u64 = 1_000_000;

fn echo_port(delay_ms: u64) -> Port {
    let mut c = PortConfig::new(20_000_000);
    c.signalling = Signalling::Ka {
        controller: ControllerKind::Echo(EchoConfig::default()),
    };
    c.delay = Duration::from_millis(delay_ms);
    c.queue_limit = 100;
    Port::new(c, t0())
}

fn t0() -> Instant {
    use std::sync::OnceLock;
    static T0: OnceLock<Instant> = OnceLock::new();
    *T0.get_or_init(Instant::now)
}

fn at(ns: u64) -> Instant {
    t0() + Duration::from_nanos(ns)
}

/// The gateway's shape: interface 0 (the senders' side) and 1, a port on
/// each, crossover routing.
fn gateway() -> Router {
    let mut r = Router::new(Routes::Crossover);
    assert_eq!(r.add_port(echo_port(2)), 0);
    assert_eq!(r.add_port(echo_port(2)), 1);
    r
}

/// Connection `i` from A (read on interface 0) to B: handshake at
/// `start` (MSS 1460, window scale 7), then `n` full segments 0.3 ms
/// apart, every second one acknowledged 0.5 ms later by an ACK echoing
/// KA-Rate 185 (the largest code) with window 65535.
fn connection(i: u16, start: u64, n: u64) -> Vec<(u64, usize, Vec<u8>)> {
    let (c, s) = (40_000 + i, if i.is_multiple_of(2) { 80 } else { 5001 });
    let (ci, si) = (1000u32, 5000u32);
    let mss = [2, 4, 0x05, 0xB4, 3, 3, 7, 1];
    let mut v = vec![
        (start, 0, seg(A, B, (c, s), (ci, 0), SYN, &mss, 0)),
        (
            start + MS,
            1,
            seg(B, A, (s, c), (si, ci + 1), SYN | ACK, &mss, 0),
        ),
        (
            start + 2 * MS,
            0,
            seg(A, B, (c, s), (ci + 1, si + 1), ACK, &[], 0),
        ),
    ];
    for k in 0..n {
        let t = start + 3 * MS + k * 300_000;
        let seq = ci + 1 + 1460 * k as u32;
        v.push((t, 0, seg(A, B, (c, s), (seq, si + 1), ACK, &[], 1460)));
        if k % 2 == 1 {
            let acked = (seq + 1460, si + 1);
            let ack = seg(B, A, (s, c), (acked.1, acked.0), ACK, &echo(185), 0);
            v.push((t + 500_000, 1, ack));
        }
    }
    v
}

/// Three connections, their starts 1 ms apart, sorted by time.
fn trace() -> Vec<(u64, usize, Vec<u8>)> {
    let mut v: Vec<_> = (0..3)
        .flat_map(|i| connection(i, u64::from(i) * MS, 40))
        .collect();
    v.sort_by_key(|&(t, i, _)| (t, i));
    v
}

fn rwm() -> Rwm {
    let mut c = RwmConfig::new(20_000_000);
    c.classes = vec![RwmClass {
        name: "web".into(),
        ports: vec![80],
        share: 0.6,
    }];
    Rwm::new(c, t0()).unwrap()
}

/// What leaves each interface: (departure ns, packet).
type Out = [Vec<(u64, Vec<u8>)>; 2];

/// Feeds `trace` in chunks of arrivals less than 1 ms apart (the ports'
/// delay is 2 ms, so no departure falls inside a chunk), one by one or as
/// a batch, and polls each interface at every `poll_timeout` instant.
fn drive(router: &mut Router, trace: &[(u64, usize, Vec<u8>)], batched: bool) -> Out {
    fn poll_until(r: &mut Router, until: u64, out: &mut Out) {
        while let Some(t) = r.poll_timeout().filter(|&t| t <= at(until)) {
            for (i, o) in out.iter_mut().enumerate() {
                while let Some(p) = r.poll_transmit_on(i, t) {
                    o.push(((t - t0()).as_nanos() as u64, p));
                }
            }
            r.handle_timeout(t);
        }
    }
    let mut out: Out = [Vec::new(), Vec::new()];
    let mut k = 0;
    while k < trace.len() {
        let first = trace[k].0;
        let end = trace[k..]
            .iter()
            .position(|a| a.0 >= first + MS)
            .map_or(trace.len(), |n| k + n);
        poll_until(router, first, &mut out);
        let chunk = trace[k..end]
            .iter()
            .map(|(t, i, p)| (at(*t), *i, p.clone()));
        if batched {
            router.handle_batch(chunk);
        } else {
            for (t, i, p) in chunk {
                assert_eq!(router.handle_packet(t, i, p), None);
            }
        }
        k = end;
    }
    poll_until(router, u64::MAX / 4, &mut out);
    out
}

#[test]
fn a_batch_gives_exactly_what_one_by_one_gives() {
    let trace = trace();
    let mut one = gateway();
    one.set_rwm(rwm(), [0]);
    let mut batch = gateway();
    batch.set_rwm(rwm(), [0]);
    let a = drive(&mut one, &trace, false);
    let b = drive(&mut batch, &trace, true);
    assert_eq!(a, b);
    // The trace exercised both rewrites: RWM capped windows both ways, the
    // forward port lowered echoes.
    let s = one.rwm_stats().unwrap();
    assert!(s.windows_rewritten.iter().all(|&n| n > 0), "{s:?}");
    let lowered = one.port(1).unwrap().snapshot().counters.echoes_lowered;
    assert!(lowered > 10, "{lowered} echoes lowered");
    assert_eq!(
        a[1].len() as u64,
        one.port(1).unwrap().snapshot().counters.packets_out
    );
}

#[test]
fn the_echo_is_lowered_when_the_ack_arrives() {
    let mut r = gateway();
    let mut trace = connection(0, 0, 4);
    trace.sort_by_key(|&(t, i, _)| (t, i));
    // Everything up to the last data segment, delivered and forwarded.
    let (last_ack, rest) = trace.split_last().unwrap();
    for (t, i, p) in rest {
        assert_eq!(r.handle_packet(at(*t), *i, p.clone()), None);
    }
    let echoes = |r: &Router| r.port(1).unwrap().snapshot().counters.echoes_lowered;
    let before = echoes(&r);
    let (t, i, p) = last_ack;
    assert_eq!(r.handle_packet(at(*t), *i, p.clone()), None);
    // Lowered by the forward port (towards the ACK's source) at once: the
    // ACK has not left, it sits in the reverse port's queue or delay line.
    assert_eq!(echoes(&r), before + 1);
    let mut left = None;
    while let Some(due) = r.poll_timeout() {
        if let Some(p) = r.poll_transmit_on(0, due) {
            left = Some(p);
        }
        while r.poll_transmit_on(1, due).is_some() {}
        r.handle_timeout(due);
    }
    let p = left.unwrap();
    assert!(p[44] < 185, "echo {} not lowered", p[44]);
    assert!(tcp_checksum_ok(&p));
}

/// Records what a hook is told.
#[derive(Debug, Default)]
struct Recorder {
    pushes: std::sync::Arc<std::sync::Mutex<Vec<(usize, usize, PushOutcome)>>>,
    wakeup: Option<Instant>,
    timeouts: usize,
}

impl InterfaceHook for Recorder {
    fn follow(&mut self, _now: Instant, packet: &[u8]) -> Option<usize> {
        // Follow the larger packets only.
        (packet.len() > 100).then_some(packet.len())
    }
    fn on_push(&mut self, _now: Instant, note: usize, ahead: usize, outcome: PushOutcome) {
        self.pushes.lock().unwrap().push((note, ahead, outcome));
    }
    fn on_timeout(&mut self, now: Instant, port: &mut Port) {
        self.timeouts += 1;
        if self.wakeup.is_some_and(|w| w <= now) {
            port.set_capacity(now, 10_000_000);
            self.wakeup = None;
        }
    }
    fn next_wakeup(&self) -> Option<Instant> {
        self.wakeup
    }
    fn moves_capacity(&self) -> bool {
        true
    }
}

fn udp(src: [u8; 4], dst: [u8; 4], total: usize) -> Vec<u8> {
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    let c = checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

#[test]
fn direct_links_forward_at_once_and_hooks_see_what_they_follow() {
    // Host 10.0.0.1 behind a direct link (interface 1), 10.0.0.2 behind a
    // port (interface 0, 20 Mbit/s, 2 ms).
    let table = AddressTable::new(A, vec![1, 0, NO_ROUTE]);
    let mut r = Router::new(Routes::Table(table));
    assert_eq!(r.add_port(echo_port(2)), 0);
    assert_eq!(r.add_direct(), 1);
    assert_eq!(
        r.set_hook(1, Box::new(Recorder::default())),
        Err(RouterError::NotAPort(1))
    );
    let rec = Recorder {
        wakeup: Some(at(50 * MS)),
        ..Recorder::default()
    };
    let pushes = std::sync::Arc::clone(&rec.pushes);
    r.set_hook(0, Box::new(rec)).unwrap();
    assert!(r.hook(0).unwrap().moves_capacity());
    assert_eq!(r.poll_timeout(), Some(at(50 * MS)));

    // To the direct link: out at once, unchanged, by the eager poll.
    let p = udp(B, A, 500);
    assert_eq!(r.handle_packet(at(MS), 0, p.clone()), None);
    assert_eq!(r.poll_transmit(at(MS)), Some((1, p)));
    assert_eq!(r.poll_transmit(at(MS)), None);

    // Into the port: two followed (1000 bytes each), one not (60 bytes).
    for (k, len) in [1000, 60, 1000].into_iter().enumerate() {
        assert_eq!(
            r.handle_packet(at(2 * MS + k as u64), 0, udp(A, B, len)),
            None
        );
        assert_eq!(r.poll_transmit(at(2 * MS + k as u64)), None);
    }
    // The first found the queue empty (it went straight to the wire), the
    // second the 60-byte one ahead of it.
    assert_eq!(
        *pushes.lock().unwrap(),
        vec![
            (1000, 0, PushOutcome::Queued),
            (1000, 60, PushOutcome::Queued)
        ]
    );
    assert_eq!(r.take_queue_max(0), Some(2));
    assert_eq!(r.take_queue_max(1), None);

    // No route (10.0.0.3 has none, 10.0.0.9 is outside the table).
    let lost = udp(A, [10, 0, 0, 3], 100);
    assert_eq!(r.handle_packet(at(3 * MS), 0, lost.clone()), Some(lost));
    assert!(
        r.handle_packet(at(3 * MS), 0, udp(A, [10, 0, 0, 9], 100))
            .is_some()
    );
    assert_eq!(r.counters().unroutable, 2);

    // The hook's wake-up, then the capacity it set.
    let mut t = r.poll_timeout().unwrap();
    assert!(t < at(50 * MS));
    while t < at(50 * MS) {
        r.handle_timeout(t);
        while r.poll_transmit(t).is_some() {}
        t = r.poll_timeout().unwrap();
    }
    assert_eq!(t, at(50 * MS));
    r.handle_timeout(t);
    assert_eq!(r.port(0).unwrap().config().capacity_bps, 10_000_000);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn after_an_arrival_the_reverse_path_port_drains_before_the_egress() {
    // B behind port 0 (echo controller, no delay), A behind a direct link.
    let table = AddressTable::new(A, vec![1, 0]);
    let mut r = Router::new(Routes::Table(table));
    assert_eq!(r.add_port(echo_port(0)), 0);
    assert_eq!(r.add_direct(), 1);
    let data = seg(A, B, (40_000, 80), (1, 1), ACK, &[], 1460);
    assert_eq!(r.handle_packet(at(0), 1, data), None);
    let due = r.poll_timeout().unwrap();
    // An ACK from B arrives exactly when the data segment departs: the port
    // towards B sees it first (its echo) and its due packet goes first.
    let ack = seg(B, A, (80, 40_000), (1, 1461), ACK, &echo(185), 0);
    assert_eq!(r.handle_packet(due, 0, ack), None);
    let first = r.poll_transmit(due).unwrap();
    assert_eq!(first.0, 0);
    // The data may leave as two KA fragments; then the ACK.
    let mut rest: Vec<usize> =
        std::iter::from_fn(|| r.poll_transmit(due).map(|(i, _)| i)).collect();
    assert_eq!(rest.pop(), Some(1));
    assert!(rest.iter().all(|&i| i == 0));
}

/// Router stages that work per packet cut a super-packet; otherwise it
/// reaches its port whole and leaves whole.
#[test]
fn a_super_packet_crosses_a_router_whole_unless_a_router_stage_is_per_packet() {
    let plain = || {
        let mut c = PortConfig::new(10_000_000_000);
        c.signalling = Signalling::None;
        Port::new(c, t0())
    };
    // Ten segments of 1000 bytes behind one header (the TCP checksum of
    // a super-packet is the device's business).
    let sup = seg(A, B, (40000, 5001), (1, 1), ACK, &[], 10_000);
    let run = |r: &mut Router| -> Vec<(Vec<u8>, Option<Gso>)> {
        r.handle_batch_gso([(at(MS), 0, sup.clone(), Some(1000))]);
        std::iter::from_fn(|| r.poll_transmit_on_gso(1, at(100 * MS))).collect()
    };
    let mut whole = Router::new(Routes::Crossover);
    whole.add_port(plain());
    whole.add_port(plain());
    let out = run(&mut whole);
    assert_eq!(out.len(), 1);
    let g = out[0].1.expect("whole");
    assert_eq!(g.segments(), 10);
    let snap = whole.port(1).unwrap().snapshot();
    assert_eq!(snap.counters.packets_out, 10);
    assert_eq!(snap.counters.bytes_out, 10 * 1040);

    let mut cut = Router::new(Routes::Crossover);
    cut.add_port(plain());
    cut.add_port(plain());
    cut.set_rwm(rwm(), [0]);
    let out = run(&mut cut);
    assert_eq!(out.len(), 10);
    assert!(out.iter().all(|(p, g)| g.is_none() && p.len() == 1040));
    assert_eq!(cut.port(1).unwrap().snapshot().counters, snap.counters);
}

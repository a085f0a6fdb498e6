//! Virtual-time test harness: two `Stack`s joined by a path per direction
//! (a chain of hops — KA router ports, a fixed-code fragmenter, a signal
//! eraser — followed by an impairment link with rate, delay, seeded loss,
//! reordering, duplication and blackouts). quinn's `Pair`, for TCP.
#![allow(dead_code)]

use ka_codec::scale::Code;
use ka_codec::wire::ipv4::{Ipv4Packet, Ipv4Repr};
use ka_endpoint::{ConnHandle, Event, Stack, StackConfig, TcpConfig};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod path;
pub use path::*;

/// The datagram of leading fragment `lead` and the rest `tail` (the
/// leading one's header, both payloads; not a fragment any more).
pub fn join_fragments(lead: &Ipv4Packet<&[u8]>, tail: &Ipv4Packet<&[u8]>) -> Vec<u8> {
    let mut joined = lead.header().to_vec();
    joined.extend_from_slice(lead.payload());
    joined.extend_from_slice(tail.payload());
    let total = joined.len() as u16;
    let mut j = Ipv4Packet::new_unchecked(&mut joined[..]);
    j.set_total_len(total);
    j.set_flags_and_offset(false, false, 0);
    j.fill_checksum();
    joined
}

/// One packet as it left a stack.
#[derive(Debug, Clone)]
pub struct Sent {
    pub at: Instant,
    pub len: usize,
    pub df: bool,
    pub tcp_payload: usize,
    pub flags: u8,
    pub src_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// ECN codepoint of the IP header.
    pub ecn: ka_codec::wire::ecn::Ecn,
    /// srtt of the sending connection at that moment (if known).
    pub srtt: Option<Duration>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Side {
    A,
    B,
}

pub struct BulkSend {
    pub side: Side,
    pub handle: ConnHandle,
    pub data: Vec<u8>,
    pub written: usize,
    pub close_at_end: bool,
}

pub struct Net {
    pub base: Instant,
    pub now: Instant,
    pub a: Stack,
    pub b: Stack,
    pub ab: Path,
    pub ba: Path,
    heap: BinaryHeap<InFlight>,
    seq: u64,
    pub rng: Rng,
    pub sent_a: Vec<Sent>,
    pub record_a: bool,
    pub sent_b: Vec<Sent>,
    pub record_b: bool,
    pub events: Vec<(Instant, Side, ConnHandle, Event)>,
    pub senders: Vec<BulkSend>,
    pub received: HashMap<(Side, ConnHandle), Vec<u8>>,
    pub auto_read: bool,
    pub auto_close_on_eof: bool,
    pub delivered_ab: u64,
    /// The last packet A sent.
    pub last_a_packet: Option<Vec<u8>>,
    /// B-side connections by local port, from their `Connected` events.
    pub accepted_on: HashMap<u16, ConnHandle>,
    pub dropped: u64,
    buf: Vec<u8>,
}

pub const A_ADDR: &str = "10.0.0.1";
pub const B_ADDR: &str = "10.0.0.2";

pub fn a_sock(port: u16) -> SocketAddr {
    format!("{A_ADDR}:{port}").parse().unwrap()
}
pub fn b_sock(port: u16) -> SocketAddr {
    format!("{B_ADDR}:{port}").parse().unwrap()
}

/// TCP defaults for tests: 200 ms min RTO, short TIME-WAIT.
pub fn test_tcp() -> TcpConfig {
    TcpConfig {
        min_rto: Duration::from_millis(200),
        time_wait: Duration::from_millis(500),
        ..TcpConfig::default()
    }
}

pub fn stack_cfg(secret: u8, tcp: TcpConfig) -> StackConfig {
    StackConfig {
        tcp,
        ..StackConfig::deterministic([secret; 16])
    }
}

impl Net {
    pub fn new(a: StackConfig, b: StackConfig, one_way: Duration, seed: u64) -> Net {
        let base = Instant::now();
        Net {
            base,
            now: base,
            a: Stack::new(a, base),
            b: Stack::new(b, base),
            ab: Path::new(one_way),
            ba: Path::new(one_way),
            heap: BinaryHeap::new(),
            seq: 0,
            rng: Rng::new(seed),
            sent_a: vec![],
            record_a: false,
            sent_b: vec![],
            record_b: false,
            events: vec![],
            senders: vec![],
            received: HashMap::new(),
            auto_read: true,
            auto_close_on_eof: true,
            delivered_ab: 0,
            last_a_packet: None,
            accepted_on: HashMap::new(),
            dropped: 0,
            buf: vec![0u8; 65_536],
        }
    }

    pub fn default_pair(one_way: Duration, seed: u64) -> Net {
        Net::new(
            stack_cfg(1, test_tcp()),
            stack_cfg(2, test_tcp()),
            one_way,
            seed,
        )
    }

    pub fn elapsed(&self) -> Duration {
        self.now - self.base
    }

    pub fn stack(&mut self, side: Side) -> &mut Stack {
        match side {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
        }
    }

    /// A connects to B's `port` (which B listens on).
    pub fn connect(&mut self, port: u16) -> ConnHandle {
        self.b.listen(port);
        let now = self.now;
        self.a.connect(now, a_sock(0), b_sock(port)).unwrap()
    }

    /// The B-side handle of the connection accepted on `port`.
    pub fn accepted(&self, port: u16) -> Option<ConnHandle> {
        self.accepted_on.get(&port).copied()
    }

    pub fn send_bulk(&mut self, side: Side, handle: ConnHandle, data: Vec<u8>, close_at_end: bool) {
        self.senders.push(BulkSend {
            side,
            handle,
            data,
            written: 0,
            close_at_end,
        });
    }

    pub fn received(&self, side: Side, h: ConnHandle) -> &[u8] {
        self.received.get(&(side, h)).map(|v| &v[..]).unwrap_or(&[])
    }

    fn pump_apps(&mut self) {
        for s in self.senders.iter_mut() {
            let stack = match s.side {
                Side::A => &mut self.a,
                Side::B => &mut self.b,
            };
            let Some(c) = stack.conn_mut(s.handle) else {
                continue;
            };
            if s.written < s.data.len() {
                s.written += c.write(&s.data[s.written..]);
            }
            if s.written == s.data.len() && s.close_at_end {
                c.close();
                s.close_at_end = false;
            }
        }
        if self.auto_read {
            for side in [Side::A, Side::B] {
                let stack = match side {
                    Side::A => &mut self.a,
                    Side::B => &mut self.b,
                };
                let handles: Vec<ConnHandle> = stack.handles().collect();
                for h in handles {
                    let c = stack.conn_mut(h).unwrap();
                    let mut tmp = [0u8; 65_536];
                    loop {
                        let n = c.read(&mut tmp);
                        if n == 0 {
                            break;
                        }
                        self.received
                            .entry((side, h))
                            .or_default()
                            .extend_from_slice(&tmp[..n]);
                    }
                    if self.auto_close_on_eof
                        && c.is_eof()
                        && c.state() == ka_endpoint::State::CloseWait
                    {
                        c.close();
                    }
                }
            }
        }
    }

    fn trace(&self, side: Side, pkt: &[u8]) {
        if std::env::var_os("KA_TRACE").is_none() {
            return;
        }
        let Ok(ip) = Ipv4Packet::new_checked(pkt) else {
            return;
        };
        let Ok(tcp) = ka_codec::wire::tcp::TcpPacket::new_checked(ip.payload()) else {
            return;
        };
        let o = ka_codec::wire::tcp::TcpOptions::parse(tcp.options()).unwrap_or_default();
        eprintln!(
            "{:>10.3}ms {:?} len={} df={} flags={:02x} seq={} ack={} win={} pl={} opts={:?}",
            (self.now - self.base).as_secs_f64() * 1e3,
            side,
            ip.total_len(),
            ip.dont_frag(),
            tcp.flags(),
            tcp.seq(),
            tcp.ack(),
            tcp.window(),
            tcp.payload().len(),
            o
        );
    }

    fn flush_stacks(&mut self) {
        let now = self.now;
        while let Some(n) = self.a.poll_transmit(now, &mut self.buf) {
            let pkt = self.buf[..n].to_vec();
            self.trace(Side::A, &pkt);
            self.last_a_packet = Some(pkt.clone());
            if self.record_a {
                let mut rec = describe(now, &pkt, None);
                rec.srtt = self
                    .a
                    .handles()
                    .filter_map(|h| self.a.conn(h))
                    .find(|c| c.local_addr().port() == rec.src_port)
                    .and_then(|c| c.stats().srtt);
                self.sent_a.push(rec);
            }
            self.enter_path(Side::A, pkt);
        }
        while let Some(n) = self.b.poll_transmit(now, &mut self.buf) {
            let pkt = self.buf[..n].to_vec();
            self.trace(Side::B, &pkt);
            if self.record_b {
                self.sent_b.push(describe(now, &pkt, None));
            }
            self.enter_path(Side::B, pkt);
        }
    }

    /// Sends a packet from `from` into its path (also used to inject cross
    /// traffic).
    pub fn enter_path(&mut self, from: Side, pkt: Vec<u8>) {
        self.run_hops(from, 0, vec![pkt]);
    }

    /// Injects a packet directly into hop `hop` of `from`'s path.
    pub fn inject(&mut self, from: Side, hop: usize, pkt: Vec<u8>) {
        self.run_hops(from, hop, vec![pkt]);
    }

    fn run_hops(&mut self, from: Side, start: usize, mut pkts: Vec<Vec<u8>>) {
        let now = self.now;
        let nhops = match from {
            Side::A => self.ab.hops.len(),
            Side::B => self.ba.hops.len(),
        };
        for i in start..nhops {
            let mut out = vec![];
            let path = match from {
                Side::A => &mut self.ab,
                Side::B => &mut self.ba,
            };
            for p in pkts {
                path.hops[i].push(now, p, &mut out);
            }
            pkts = out;
        }
        for p in pkts {
            self.impair(from, p);
        }
    }

    fn impair(&mut self, from: Side, pkt: Vec<u8>) {
        let now = self.now;
        let t = now - self.base;
        let path = match from {
            Side::A => &mut self.ab,
            Side::B => &mut self.ba,
        };
        let imp = &path.impair;
        if imp.blackouts.iter().any(|(s, e)| t >= *s && t < *e) || self.rng.chance(imp.loss) {
            self.dropped += 1;
            return;
        }
        let mut at = now;
        if let Some(rate) = imp.rate_bps {
            let start = path.next_free.map_or(now, |f| f.max(now));
            let tx = Duration::from_secs_f64(pkt.len() as f64 * 8.0 / rate as f64);
            path.next_free = Some(start + tx);
            at = start + tx;
        }
        if self.rng.chance(imp.reorder) {
            if !imp.reorder_early {
                at += imp.delay + imp.reorder_extra;
            }
            path.reordered += 1;
        } else {
            at += imp.delay;
        }
        if pkt.len() > 1000 {
            let k = path.data_entered;
            path.data_entered += 1;
            if let Some((_, extra)) = imp.late_data.iter().find(|(n, _)| *n == k) {
                at += *extra;
                path.reordered += 1;
            }
        }
        let to = match from {
            Side::A => Side::B,
            Side::B => Side::A,
        };
        if self.rng.chance(imp.dup) {
            self.seq += 1;
            self.heap.push(Reverse((
                at + Duration::from_micros(10),
                self.seq,
                to,
                pkt.clone(),
            )));
        }
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, to, pkt)));
    }

    fn poll_hops(&mut self) {
        let now = self.now;
        for from in [Side::A, Side::B] {
            let n = match from {
                Side::A => self.ab.hops.len(),
                Side::B => self.ba.hops.len(),
            };
            for i in 0..n {
                let mut out = vec![];
                match from {
                    Side::A => self.ab.hops[i].poll(now, &mut out),
                    Side::B => self.ba.hops[i].poll(now, &mut out),
                }
                if !out.is_empty() {
                    self.run_hops(from, i + 1, out);
                }
            }
        }
    }

    fn next_time(&self) -> Option<Instant> {
        let hops = self
            .ab
            .hops
            .iter()
            .chain(self.ba.hops.iter())
            .filter_map(Hop::next_time);
        [
            self.a.poll_timeout(),
            self.b.poll_timeout(),
            self.heap.peek().map(|Reverse(x)| x.0),
        ]
        .into_iter()
        .flatten()
        .chain(hops)
        .min()
    }

    fn collect_events(&mut self) {
        let now = self.now;
        while let Some((h, ev)) = self.a.poll_event() {
            self.events.push((now, Side::A, h, ev));
        }
        while let Some((h, ev)) = self.b.poll_event() {
            if let (true, Some(c)) = (ev == Event::Connected, self.b.conn(h)) {
                self.accepted_on.insert(c.local_addr().port(), h);
            }
            self.events.push((now, Side::B, h, ev));
        }
    }

    /// One step; false if nothing happens before `limit` (then now = limit).
    pub fn step(&mut self, limit: Instant) -> bool {
        self.pump_apps();
        self.flush_stacks();
        self.poll_hops();
        self.collect_events();
        let Some(next) = self.next_time() else {
            self.now = self.now.max(limit);
            return false;
        };
        if next > limit {
            self.now = self.now.max(limit);
            return false;
        }
        self.now = self.now.max(next);
        let now = self.now;
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.0 > now {
                break;
            }
            let Reverse((_, _, to, pkt)) = self.heap.pop().unwrap();
            match to {
                Side::B => {
                    self.delivered_ab += 1;
                    self.b.handle_packet(now, &pkt)
                }
                Side::A => self.a.handle_packet(now, &pkt),
            }
        }
        self.poll_hops();
        if self.a.poll_timeout().is_some_and(|t| t <= now) {
            self.a.handle_timeout(now);
        }
        if self.b.poll_timeout().is_some_and(|t| t <= now) {
            self.b.handle_timeout(now);
        }
        self.collect_events();
        true
    }

    /// Runs for `d` of virtual time, calling `each` after every step.
    pub fn run_for_with(&mut self, d: Duration, mut each: impl FnMut(&mut Net)) {
        let limit = self.now + d;
        let mut stall = Stall::new(self.now);
        while self.now < limit {
            let progressed = self.step(limit);
            each(self);
            if !progressed {
                break;
            }
            stall.check(self);
        }
        // flush final output at `limit`
        self.pump_apps();
        self.flush_stacks();
        self.collect_events();
    }

    pub fn run_for(&mut self, d: Duration) {
        self.run_for_with(d, |_| {});
    }

    /// Runs until `cond` holds (checked after each step) or `max` passes.
    /// Returns whether `cond` held.
    pub fn run_until(&mut self, max: Duration, mut cond: impl FnMut(&mut Net) -> bool) -> bool {
        let limit = self.now + max;
        let mut stall = Stall::new(self.now);
        loop {
            if cond(self) {
                return true;
            }
            if self.now >= limit {
                return false;
            }
            let progressed = self.step(limit);
            if !progressed && self.now >= limit {
                return cond(self);
            }
            stall.check(self);
        }
    }

    /// Events of one side and connection, in order.
    pub fn events_of(&self, side: Side, h: ConnHandle) -> Vec<(Instant, Event)> {
        self.events
            .iter()
            .filter(|(_, s, hh, _)| *s == side && *hh == h)
            .map(|(t, _, _, e)| (*t, *e))
            .collect()
    }

    /// The mode changes of A's connection `h`, at their times since the
    /// start.
    pub fn mode_changes(&self, h: ConnHandle) -> Vec<(Duration, ka_endpoint::ModeChange)> {
        self.events_of(Side::A, h)
            .into_iter()
            .filter_map(|(t, e)| match e {
                Event::ModeChanged(m) => Some((t - self.base, m)),
                _ => None,
            })
            .collect()
    }

    /// The router port at hop `i` of the forward path (panics if that hop
    /// is not a port).
    pub fn port(&self, i: usize) -> &ka_router::Port {
        match &self.ab.hops[i] {
            Hop::Port(p) => p,
            _ => panic!("hop {i} is not a port"),
        }
    }
}

/// Parses what a stack sent (IPv4 only) for the record.
pub fn describe(at: Instant, pkt: &[u8], srtt: Option<Duration>) -> Sent {
    let ip = Ipv4Packet::new_checked(pkt).expect("stack emits valid IPv4");
    let tcp = ka_codec::wire::tcp::TcpPacket::new_checked(ip.payload()).expect("valid tcp");
    Sent {
        at,
        len: ip.total_len(),
        df: ip.dont_frag(),
        tcp_payload: tcp.payload().len(),
        flags: tcp.flags(),
        src_port: tcp.src_port(),
        seq: tcp.seq(),
        ack: tcp.ack(),
        ecn: ka_codec::wire::ecn::ecn(pkt).expect("valid IP"),
        srtt,
    }
}

/// The runners' watchdog: virtual time that stands still for 200 000
/// steps is a livelock in the code under test, not a slow run.
struct Stall {
    last: Instant,
    same: u32,
}

impl Stall {
    fn new(now: Instant) -> Stall {
        Stall { last: now, same: 0 }
    }

    /// After a step: panics if the net's clock has not moved for too long.
    fn check(&mut self, net: &Net) {
        if net.now == self.last {
            self.same += 1;
            assert!(self.same < 200_000, "no progress at {:?}", net.elapsed());
        } else {
            self.same = 0;
            self.last = net.now;
        }
    }
}

/// A UDP-ish IPv4 packet (protocol 17) of `len` bytes, for cross traffic.
pub fn cross_packet(len: usize, ident: u16) -> Vec<u8> {
    let mut p = vec![0u8; len];
    Ipv4Repr {
        src: [10, 9, 9, 9],
        dst: [10, 0, 0, 2],
        protocol: 17,
        ttl: 64,
        ident,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        dscp_ecn: 0,
        payload_len: len - 20,
    }
    .emit(&mut p)
    .unwrap();
    p
}

/// Deterministic pseudo-random payload.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    (0..len).map(|_| r.next_u64() as u8).collect()
}

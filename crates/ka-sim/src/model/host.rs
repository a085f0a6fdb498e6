//! End hosts: a `ka_endpoint::Stack` (the real sans-IO TCP with the KA mode
//! machine) plus the application that drives it — the workload of DESIGN §9
//! on the sender side, a sink that reads everything on the receiver side.
//!
//! Application behaviour (all of it is "what a program using sockets does";
//! the TCP itself is entirely the endpoint core):
//!
//! * **Sized flows** (on-off, Poisson, long-lived with `size_pkts`):
//!   connect, write the flow's bytes, `close()`. The flow is finished for the sender once every byte and the
//!   FIN are acknowledged; an on-off sender then draws its next off time.
//! * **Long-lived flows**: connect and keep the send buffer topped up to
//!   twice the current window plus 256 KiB (so the sender is never
//!   application-limited yet memory stays bounded); at the stop time the
//!   application aborts the connection (RST), so the sender stops at once
//!   instead of draining a full buffer.
//! * **Receiver**: listens on port 5001, reads whatever is readable the
//!   moment it is readable, closes when the peer has closed.
//!
//! Flow sizes in packets are converted to bytes with the TCP payload a full
//! packet carries: `packet_bytes − 20 (IP) − 20 (TCP) − 12 (timestamps)`,
//! and 8 bytes less for native-RCP flows, whose packets carry the 8-byte
//! IPv4 RCP option (so an N-packet flow is N full packets for every kind).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use ka_endpoint::{CcAlgorithm, ConnHandle, Event, Mode, Stack, StackConfig, TcpConfig};
use rand_chacha::ChaCha8Rng;

use crate::engine::rng::{self, SizeDist};
use crate::engine::{Clock, Ctx, Node, NodeId, SimTime, secs};
use crate::model::Host;
use crate::model::epochs::long_lived_epochs;
use crate::model::net::{HostRole, HostSpec, SenderSpec};
use crate::model::udp::UdpApp;
use crate::model::world::{FlowId, FlowKey, NewFlow, World};
use crate::scenario::{FlowKind, Workload};

/// Random stream ids from here on belong to groups (the `arrivals`
/// workload's shared process), not to hosts.
pub const ARRIVALS_STREAM_BASE: u64 = 1 << 40;

pub use crate::model::epochs::RECEIVER_PORT;

/// Send and receive buffer caps of simulated connections (4 MiB: a single
/// flow must be able to fill 150 Mbit/s × 100 ms plus a 1000-packet queue,
/// about 3.4 MB, without being window-limited).
pub const BUFFER_BYTES: usize = 4 << 20;

/// TIME-WAIT in the simulator (1 s instead of 60 s). It only delays the
/// reuse of a 4-tuple, which never happens here (fresh ephemeral ports), and
/// a shorter one keeps the per-host connection tables small.
pub const TIME_WAIT: Duration = Duration::from_secs(1);

/// TCP payload bytes a full data packet of `packet_bytes` carries
/// (IPv4 + TCP headers + the timestamp option).
pub fn payload_per_packet(packet_bytes: usize) -> usize {
    packet_bytes.saturating_sub(20 + 20 + 12).max(1)
}

/// [`payload_per_packet`] for a flow kind: native-RCP packets also carry
/// the 8-byte IPv4 RCP option, XCP packets the 16-byte XCP option.
pub fn payload_per_packet_of(kind: FlowKind, packet_bytes: usize) -> usize {
    let option = match kind {
        FlowKind::Rcp => ka_codec::RcpOption::LEN,
        FlowKind::Xcp | FlowKind::XcpRate | FlowKind::XcpRatePure => {
            ka_codec::XcpOption::PADDED_LEN
        }
        _ => 0,
    };
    payload_per_packet(packet_bytes)
        .saturating_sub(option)
        .max(1)
}

/// [`payload_per_packet_of`] for a connection that may run without
/// timestamps (a `[tcp] timestamps = false` or a profile without them):
/// its full packets carry the option's 12 bytes as payload instead.
pub fn payload_per_packet_with(kind: FlowKind, packet_bytes: usize, timestamps: bool) -> usize {
    let p = payload_per_packet_of(kind, packet_bytes);
    if timestamps { p } else { p + 12 }
}

/// Why a host cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The flow-size distribution is invalid.
    #[error("flow sizes: {0}")]
    Sizes(String),
}

/// The TCP configuration of a flow kind.
pub fn tcp_config(kind: FlowKind, packet_bytes: usize) -> Result<TcpConfig, HostError> {
    let mut t = TcpConfig {
        mtu: packet_bytes,
        send_buffer: BUFFER_BYTES,
        recv_buffer: BUFFER_BYTES,
        time_wait: TIME_WAIT,
        ..TcpConfig::default()
    };
    match kind {
        FlowKind::Ka => {
            t.ka.enabled = true;
            t.cc = CcAlgorithm::NewReno;
        }
        // UDP kinds run no TCP (`crate::model::udp`); their stacks stay idle.
        FlowKind::TcpNewReno | FlowKind::UdpLccp | FlowKind::UdpCbr => {
            t.ka.enabled = false;
            t.cc = CcAlgorithm::NewReno;
        }
        FlowKind::TcpCubic => {
            t.ka.enabled = false;
            t.cc = CcAlgorithm::Cubic;
        }
        FlowKind::Pcc => {
            // rate-based: the connection paces at PCC's rate by itself
            t.ka.enabled = false;
            t.cc = CcAlgorithm::Pcc;
        }
        FlowKind::TcpBbr => {
            // rate-based too: paced at BBR's rate
            t.ka.enabled = false;
            t.cc = CcAlgorithm::Bbr;
        }
        FlowKind::Rcp => {
            // The native-RCP carrier: the KA mode machine on IPv4 RCP
            // options (DESIGN §7.1); NewReno if it ever falls back.
            t.ka.enabled = true;
            t.ka.native_rcp = true;
            t.cc = CcAlgorithm::NewReno;
        }
        FlowKind::Xcp | FlowKind::XcpRate | FlowKind::XcpRatePure => {
            // XCP (DESIGN §7.2): no KA; NewReno if the receiver does not
            // answer XCP-Permitted (simulated receivers do).
            t.ka.enabled = false;
            t.cc = match kind {
                FlowKind::XcpRate => CcAlgorithm::XcpRate,
                FlowKind::XcpRatePure => CcAlgorithm::XcpRatePure,
                _ => CcAlgorithm::Xcp,
            };
        }
    }
    Ok(t)
}

/// A deterministic 128-bit stack secret for host `index` of a run.
fn secret(seed: u64, index: usize) -> [u8; 16] {
    let mut out = [0u8; 16];
    let mut x = seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for chunk in out.chunks_mut(8) {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes());
    }
    out
}

#[derive(Debug)]
struct Active {
    id: FlowId,
    /// Bytes still to write (None = unbounded).
    to_write: Option<u64>,
    /// `close()` called.
    closed: bool,
    /// Abort at this time (long-lived flows with an end).
    stop_at: Option<SimTime>,
}

#[derive(Debug)]
enum Plan {
    /// (start, stop) of each flow, in order.
    LongLived {
        epochs: Vec<(SimTime, Option<SimTime>)>,
        next: usize,
        /// Packets per flow (None = unbounded).
        size: Option<u64>,
    },
    OnOff {
        sizes: SizeDist,
        off_mean: f64,
    },
    Poisson {
        sizes: SizeDist,
        /// Mean inter-arrival time of this host, s.
        gap_mean: f64,
    },
    /// This host's share of the group's arrivals: start times, in order.
    Arrivals {
        starts: Vec<SimTime>,
        next: usize,
        /// (packets, bytes) of every flow.
        size: (u64, u64),
    },
}

#[derive(Debug)]
struct Sender {
    spec: SenderSpec,
    tcp: TcpConfig,
    rng: ChaCha8Rng,
    plan: Plan,
    /// Next workload action (flow start).
    next: Option<SimTime>,
    active: BTreeMap<ConnHandle, Active>,
}

/// Counters of a host that indicate trouble (all 0 in a healthy run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostTrouble {
    /// `connect` failed.
    pub connect_errors: u64,
    /// Data arrived on a connection the flow table does not know.
    pub unknown_flows: u64,
    /// A sized flow's connection closed before all data was acknowledged.
    pub aborted_flows: u64,
}

/// A simulated end host.
#[derive(Debug)]
pub struct HostNode {
    clock: Clock,
    node: NodeId,
    addr: [u8; 4],
    packet_bytes: usize,
    stack: Stack,
    sender: Option<Sender>,
    /// Receiver side: connection → flow.
    incoming: BTreeMap<ConnHandle, Option<FlowId>>,
    /// Receiver side: the tracked flow this host last delivered data of
    /// (arriving IP bytes are counted for it).
    wire_flow: Option<FlowId>,
    txbuf: Vec<u8>,
    duration: SimTime,
    /// Problems seen.
    pub trouble: HostTrouble,
    /// The UDP application of a UDP-kind host ([`crate::model::udp`]).
    udp: Option<UdpApp>,
}

/// A zero-filled chunk applications write from.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// How much a receiving application takes per call (it counts the bytes
/// and drops them, [`ka_endpoint::Connection::discard`]: no copy).
const READ_CHUNK: usize = 64 * 1024;

impl HostNode {
    /// Builds the host for `spec` with its engine clock.
    pub fn new(spec: &HostSpec, clock: Clock) -> Result<Self, HostError> {
        let mut cfg = StackConfig::deterministic(secret(spec.seed, spec.index));
        // Passive (receiving) connections: KA offered back if the sender offers it.
        cfg.tcp = tcp_config(FlowKind::Ka, spec.packet_bytes)?;
        cfg.tcp.ka.scale = spec.ka_scale;
        spec.tcp.apply(&mut cfg.tcp);
        let mut stack = Stack::new(cfg, clock.instant(0));
        let udp = UdpApp::new(spec);
        let sender = match &spec.role {
            _ if udp.is_some() => None,
            HostRole::Receiver { .. } => {
                stack.listen(RECEIVER_PORT);
                None
            }
            HostRole::Sender(s) => Some(Sender::new(s, spec)?),
        };
        Ok(Self {
            clock,
            node: spec.node,
            addr: spec.addr,
            packet_bytes: spec.packet_bytes,
            stack,
            sender,
            incoming: BTreeMap::new(),
            wire_flow: None,
            txbuf: Vec::new(),
            duration: spec.duration,
            trouble: HostTrouble::default(),
            udp,
        })
    }

    /// The endpoint stack.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    fn start_flow(
        &mut self,
        ctx: &mut Ctx<'_, World>,
        size_pkts: Option<u64>,
        stop_at: Option<SimTime>,
    ) {
        let per_packet = self.sender.as_ref().map_or(1, |s| {
            payload_per_packet_with(s.spec.kind, self.packet_bytes, s.tcp.timestamps)
        });
        let size = size_pkts.map(|p| (p, p * per_packet as u64));
        self.start_sized_flow(ctx, size, stop_at);
    }

    /// Opens a flow of `size` = (packets, bytes) (None = unbounded).
    fn start_sized_flow(
        &mut self,
        ctx: &mut Ctx<'_, World>,
        size: Option<(u64, u64)>,
        stop_at: Option<SimTime>,
    ) {
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        let now = ctx.instant();
        let local = SocketAddr::from((self.addr, 0));
        let remote = SocketAddr::from((s.spec.peer, RECEIVER_PORT));
        let Ok(h) = self.stack.connect_with(now, local, remote, s.tcp) else {
            self.trouble.connect_errors += 1;
            return;
        };
        let sport = self.stack.conn(h).map_or(0, |c| c.local_addr().port());
        let bytes = size.map(|s| s.1);
        let id = ctx.shared.open(
            FlowKey {
                src: self.addr,
                sport,
                dst: s.spec.peer,
                dport: RECEIVER_PORT,
            },
            NewFlow {
                kind: s.spec.kind,
                group: s.spec.group,
                sender: self.node,
                tracked: s.spec.tracked,
                size,
                start: ctx.now(),
                path: s.spec.path,
            },
        );
        s.active.insert(
            h,
            Active {
                id,
                to_write: bytes,
                closed: false,
                stop_at,
            },
        );
    }

    /// Workload actions due at `now`.
    fn run_workload(&mut self, ctx: &mut Ctx<'_, World>) {
        let now = ctx.now();
        // Long-lived flows that reach their stop time.
        let stops: Vec<ConnHandle> = self
            .sender
            .as_ref()
            .map(|s| {
                s.active
                    .iter()
                    .filter(|(_, a)| a.stop_at.is_some_and(|t| t <= now))
                    .map(|(&h, _)| h)
                    .collect()
            })
            .unwrap_or_default();
        for h in stops {
            self.finish_flow(ctx, h, true);
        }
        loop {
            let Some(s) = self.sender.as_mut() else {
                return;
            };
            if s.next.is_none_or(|t| t > now) {
                return;
            }
            s.next = None;
            if let Plan::Arrivals { starts, next, size } = &mut s.plan {
                *next += 1;
                s.next = starts.get(*next).copied();
                let size = *size;
                self.start_sized_flow(ctx, Some(size), None);
                continue;
            }
            let (size, stop) = match &mut s.plan {
                Plan::LongLived { epochs, next, size } => {
                    let Some(&(_, stop)) = epochs.get(*next) else {
                        return;
                    };
                    *next += 1;
                    s.next = epochs.get(*next).map(|e| e.0);
                    (*size, stop)
                }
                // The next off period starts when this flow finishes.
                Plan::OnOff { sizes, .. } => (Some(sizes.sample_pkts(&mut s.rng)), None),
                Plan::Poisson { sizes, gap_mean } => {
                    let size = sizes.sample_pkts(&mut s.rng);
                    let gap = rng::exponential(&mut s.rng, *gap_mean);
                    s.next = Some(now + secs(gap).max(1));
                    (Some(size), None)
                }
                Plan::Arrivals { .. } => return,
            };
            self.start_flow(ctx, size, stop);
        }
    }

    /// The sender is done with a flow: record its KA time and stop time;
    /// abort the connection if `abort`. On-off senders go off.
    fn finish_flow(&mut self, ctx: &mut Ctx<'_, World>, h: ConnHandle, abort: bool) {
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        let Some(a) = s.active.remove(&h) else {
            return;
        };
        let now = ctx.now();
        if let Some(c) = self.stack.conn_mut(h) {
            let st = c.stats();
            if let Some(f) = ctx.shared.flow_mut(a.id) {
                f.ka_time = u64::try_from(st.time_in_ka.as_nanos()).unwrap_or(u64::MAX);
                f.rtos = st.rtos;
                f.stop = Some(now);
                f.ka_mode = false;
            }
            if abort {
                c.abort();
            }
        } else if let Some(f) = ctx.shared.flow_mut(a.id) {
            f.stop = Some(now);
            f.ka_mode = false;
        }
        if let Plan::OnOff { off_mean, .. } = s.plan {
            let off = rng::exponential(&mut s.rng, off_mean);
            s.next = Some(now + secs(off));
        }
    }

    /// Application writes: top up every active sender flow.
    fn write_data(&mut self) {
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        for (&h, a) in s.active.iter_mut() {
            let Some(c) = self.stack.conn_mut(h) else {
                continue;
            };
            match a.to_write {
                Some(_) => {
                    while let Some(left) = a.to_write.filter(|&l| l > 0) {
                        let chunk = (left as usize).min(ZEROS.len());
                        let w = c.write(&ZEROS[..chunk]);
                        a.to_write = Some(left - w as u64);
                        if w < chunk {
                            break;
                        }
                    }
                }
                None => {
                    let target = 2 * c.stats().cwnd + 256 * 1024;
                    while c.send_queued() < target {
                        let want = (target - c.send_queued()).min(ZEROS.len());
                        if c.write(&ZEROS[..want]) == 0 {
                            break;
                        }
                    }
                }
            }
            if a.to_write == Some(0) && !a.closed {
                c.close();
                a.closed = true;
            }
        }
    }

    /// Sized flows whose data and FIN are all acknowledged.
    fn completed_flows(&self) -> Vec<ConnHandle> {
        let Some(s) = self.sender.as_ref() else {
            return Vec::new();
        };
        if !s.active.values().any(|a| a.closed) {
            return Vec::new(); // no allocation on the common path
        }
        s.active
            .iter()
            .filter(|(h, a)| a.closed && self.stack.conn(**h).is_none_or(|c| c.send_queued() == 0))
            .map(|(&h, _)| h)
            .collect()
    }

    fn handle_events(&mut self, ctx: &mut Ctx<'_, World>) {
        while let Some((h, ev)) = self.stack.poll_event() {
            match ev {
                Event::Readable | Event::PeerFin => {
                    self.read_all(ctx, h);
                    if ev == Event::PeerFin
                        && let Some(c) = self.stack.conn_mut(h)
                    {
                        c.close();
                    }
                }
                Event::ModeChanged(mc) => {
                    let id = self
                        .sender
                        .as_ref()
                        .and_then(|s| s.active.get(&h))
                        .map(|a| a.id);
                    let now = ctx.now();
                    if let Some(f) = id.and_then(|id| ctx.shared.flow_mut(id)) {
                        f.ka_mode = mc.to == Mode::Ka;
                        if f.ka_mode && f.ka_first.is_none() {
                            f.ka_first = Some(now);
                        }
                    }
                }
                Event::Closed(_) => {
                    self.incoming.remove(&h);
                    let gone = self
                        .sender
                        .as_ref()
                        .is_some_and(|s| s.active.contains_key(&h));
                    if gone {
                        // The connection died with the flow unfinished.
                        self.trouble.aborted_flows += 1;
                        self.finish_flow(ctx, h, false);
                    }
                }
                Event::Connected | Event::Writable => {}
            }
        }
    }

    fn read_all(&mut self, ctx: &mut Ctx<'_, World>, h: ConnHandle) {
        let Some(c) = self.stack.conn_mut(h) else {
            return;
        };
        let id = *self.incoming.entry(h).or_insert_with(|| {
            let (l, r) = (c.local_addr(), c.remote_addr());
            match (l, r) {
                (SocketAddr::V4(l), SocketAddr::V4(r)) => ctx.shared.lookup(&FlowKey {
                    src: r.ip().octets(),
                    sport: r.port(),
                    dst: l.ip().octets(),
                    dport: l.port(),
                }),
                _ => None,
            }
        });
        if let Some(id) = id
            && ctx.shared.flows.get(id as usize).is_some_and(|f| f.tracked)
        {
            self.wire_flow = Some(id);
        }
        let now = ctx.now();
        loop {
            let n = c.discard(READ_CHUNK);
            if n == 0 {
                break;
            }
            match id {
                Some(id) => {
                    ctx.shared.received(id, n as u64, now);
                }
                None => self.trouble.unknown_flows += 1,
            }
        }
    }

    fn transmit(&mut self, ctx: &mut Ctx<'_, World>) {
        let now = ctx.instant();
        let mtu = self.packet_bytes.max(1500);
        loop {
            // Straight into a pooled buffer: it keeps its last packet's
            // length, so only a buffer that carried a short packet (an ACK)
            // is zero-filled up to the MTU, and no packet is copied.
            let mut pkt = ctx.buffer();
            pkt.resize(mtu, 0);
            let Some(len) = self.stack.poll_transmit(now, &mut pkt) else {
                ctx.recycle(pkt);
                return;
            };
            pkt.truncate(len);
            ctx.send(0, pkt);
        }
    }

    /// Everything after an input: events, application reads/writes/closes,
    /// completions, then transmissions. (Events that transmitting itself
    /// raises — a `Closed` after a final RST — are picked up at the host's
    /// next wake-up; they need no prompt reaction.)
    fn pump(&mut self, ctx: &mut Ctx<'_, World>) {
        self.handle_events(ctx);
        self.write_data();
        for h in self.completed_flows() {
            self.finish_flow(ctx, h, false);
        }
        self.transmit(ctx);
    }
}

impl Sender {
    fn new(s: &SenderSpec, spec: &HostSpec) -> Result<Self, HostError> {
        let mut tcp = tcp_config(s.kind, spec.packet_bytes)?;
        tcp.ka.scale = spec.ka_scale;
        spec.tcp.apply(&mut tcp);
        if let Some(iw) = s.initial_window {
            tcp.initial_window_segments = iw;
        }
        let mut rng = rng::stream(spec.seed, s.rng_stream);
        let (plan, next) = match &s.workload {
            Workload::LongLived { size_pkts, .. } => {
                let epochs = long_lived_epochs(&s.workload, s.index_in_group);
                let next = epochs.first().map(|e| e.0);
                let plan = Plan::LongLived {
                    epochs,
                    next: 0,
                    size: *size_pkts,
                };
                (plan, next)
            }
            Workload::OnOff { off_mean_s, sizes } => {
                let sizes = sizes.build().map_err(|e| HostError::Sizes(e.to_string()))?;
                let first_off = rng::exponential(&mut rng, *off_mean_s);
                (
                    Plan::OnOff {
                        sizes,
                        off_mean: *off_mean_s,
                    },
                    Some(secs(first_off)),
                )
            }
            Workload::Arrivals {
                flows,
                gap_mean_s,
                size_bytes,
                start_s,
            } => {
                // One Poisson process for the whole group, from the group's
                // own stream: every host draws the same starts and keeps
                // every `group_size`-th.
                let mut g = rng::stream(spec.seed, ARRIVALS_STREAM_BASE + s.group as u64);
                let mut t = *start_s;
                let n = s.group_size.max(1);
                let starts: Vec<SimTime> = (0..*flows as usize)
                    .map(|_| {
                        t += rng::exponential(&mut g, *gap_mean_s);
                        secs(t)
                    })
                    .enumerate()
                    .filter(|(i, _)| i % n == s.index_in_group)
                    .map(|(_, t)| t)
                    .collect();
                let per_packet =
                    payload_per_packet_with(s.kind, spec.packet_bytes, tcp.timestamps) as u64;
                let size = (size_bytes.div_ceil(per_packet), *size_bytes);
                let first = starts.first().copied();
                (
                    Plan::Arrivals {
                        starts,
                        next: 0,
                        size,
                    },
                    first,
                )
            }
            Workload::Poisson { load, sizes } => {
                let sizes = sizes.build().map_err(|e| HostError::Sizes(e.to_string()))?;
                let bytes = sizes.mean() * spec.packet_bytes as f64;
                let cap = s.path.bottleneck_bps as f64 / 8.0;
                // λ (flows/s) of the whole group = load·C / mean size.
                let lambda = load * cap / bytes.max(1.0);
                let gap_mean = s.group_size.max(1) as f64 / lambda.max(1e-12);
                let first = rng::exponential(&mut rng, gap_mean);
                (Plan::Poisson { sizes, gap_mean }, Some(secs(first)))
            }
        };
        Ok(Self {
            spec: s.clone(),
            tcp,
            rng,
            plan,
            next,
            active: BTreeMap::new(),
        })
    }
}

impl Node for HostNode {
    type Shared = World;

    fn handle_packet(&mut self, ctx: &mut Ctx<'_, World>, _iface: u16, packet: Vec<u8>) {
        if let Some(app) = self.udp.as_mut() {
            app.handle_packet(ctx, &packet);
            ctx.recycle(packet);
            app.transmit(ctx, &mut self.txbuf);
            return;
        }
        if let Some(f) = self.wire_flow.and_then(|id| ctx.shared.flow_mut(id)) {
            f.bin_wire_bytes += packet.len() as u64;
        }
        self.stack.handle_packet(ctx.instant(), &packet);
        ctx.recycle(packet);
        self.pump(ctx);
    }

    fn handle_timeout(&mut self, ctx: &mut Ctx<'_, World>) {
        if let Some(app) = self.udp.as_mut() {
            app.handle_timeout(ctx);
            app.transmit(ctx, &mut self.txbuf);
            return;
        }
        // Runs only the timers that are due (nothing if none is).
        self.stack.handle_timeout(ctx.instant());
        if ctx.now() < self.duration {
            self.run_workload(ctx);
        }
        self.pump(ctx);
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        if let Some(app) = self.udp.as_ref() {
            return app.poll_timeout(self.duration);
        }
        let stack = self.stack.poll_timeout().map(|i| self.clock.sim_time(i));
        let work = self.sender.as_ref().and_then(|s| {
            let stop = s.active.values().filter_map(|a| a.stop_at).min();
            match (s.next.filter(|&t| t < self.duration), stop) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        });
        match (stack, work) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Host for HostNode {
    fn finish(&mut self, _now: SimTime, world: &mut World) {
        let Some(s) = self.sender.as_ref() else {
            return;
        };
        for (&h, a) in &s.active {
            // `conn_mut`: the connection's clock catches up with the
            // stack's (DESIGN §6.8) before its KA time is read.
            if let (Some(c), Some(f)) = (self.stack.conn_mut(h), world.flow_mut(a.id)) {
                let st = c.stats();
                f.ka_time = u64::try_from(st.time_in_ka.as_nanos()).unwrap_or(u64::MAX);
                f.rtos = st.rtos;
            }
        }
    }
}

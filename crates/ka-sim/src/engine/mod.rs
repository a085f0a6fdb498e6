//! The discrete-event engine: virtual time, the event heap, links, node
//! timers and a packet-buffer pool.
//!
//! * **Time** is an integer number of nanoseconds ([`SimTime`]). The sans-IO
//!   cores take [`std::time::Instant`]s; a [`Clock`] maps between the two
//!   with one base instant fixed at start-up, so nothing the simulator
//!   writes depends on the base (only offsets from it).
//! * **Ordering**: events are keyed `(time, seq)`; `seq` is a global
//!   counter, so events at the same nanosecond run in the order they were
//!   scheduled (FIFO ties). Together with seeded RNG streams this makes a
//!   run a pure function of its scenario and seed.
//! * **Links** serialise packets at their rate, add a propagation delay and
//!   keep their in-flight packets in a FIFO. Only the FIFO's head has an
//!   entry in the heap, so the heap holds about one event per busy link
//!   rather than one per packet.
//! * **Timers**: every node has at most one *armed* heap entry and a
//!   generation counter. When a node wants to wake earlier than its armed
//!   entry, a new entry with a new generation is pushed and the old one
//!   becomes stale (lazy cancellation: it is skipped when popped). When it
//!   wants to wake later, the armed entry stays; when it fires early the
//!   node is simply re-armed at its real deadline.
//! * **Buffers**: packets are `Vec<u8>`s (the router core takes and returns
//!   owned buffers). Consumers hand buffers back to a bounded pool so the
//!   steady state allocates nothing on the host → link path.

pub mod rng;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

/// Virtual time in nanoseconds since the start of the run.
pub type SimTime = u64;

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Converts seconds (≥ 0, finite) to [`SimTime`], rounding to the nearest ns.
/// Negative or non-finite input gives 0; huge input saturates.
pub fn secs(s: f64) -> SimTime {
    if s.is_finite() && s > 0.0 {
        let ns = (s * NS_PER_SEC as f64).round();
        if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as u64
        }
    } else {
        0
    }
}

/// Converts [`SimTime`] to seconds.
pub fn to_secs(t: SimTime) -> f64 {
    t as f64 / NS_PER_SEC as f64
}

/// Maps virtual time to the `Instant`s the cores expect and back.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: Instant,
}

impl Clock {
    /// A clock whose time 0 is `base`.
    pub fn new(base: Instant) -> Self {
        Self { base }
    }

    /// The instant of virtual time `t`.
    pub fn instant(&self, t: SimTime) -> Instant {
        self.base + Duration::from_nanos(t)
    }

    /// The virtual time of `i` (instants before the base map to 0).
    pub fn sim_time(&self, i: Instant) -> SimTime {
        u64::try_from(i.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Index of a node in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// Index of a (unidirectional) link in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(pub u32);

/// A unidirectional link: serialisation at `rate_bps`, then `delay`, then
/// delivery to interface `to_iface` of node `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkConfig {
    /// Line rate in bit/s; 0 means infinitely fast (no serialisation).
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: SimTime,
    /// Receiving node.
    pub to: NodeId,
    /// Interface number passed to the receiver's `handle_packet`.
    pub to_iface: u16,
    /// Most packets waiting for or in serialisation + propagation; a packet
    /// sent while the link holds this many is dropped (and counted). Caps the
    /// memory a misbehaving sender can make the simulator hold.
    pub limit_packets: usize,
}

impl LinkConfig {
    /// Default cap on packets held by one link.
    pub const DEFAULT_LIMIT: usize = 100_000;

    /// A link to `to`/`to_iface` with the given rate and delay.
    pub fn new(rate_bps: u64, delay: SimTime, to: NodeId, to_iface: u16) -> Self {
        Self {
            rate_bps,
            delay,
            to,
            to_iface,
            limit_packets: Self::DEFAULT_LIMIT,
        }
    }
}

/// Counters of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets accepted for transmission.
    pub packets: u64,
    /// Bytes accepted for transmission.
    pub bytes: u64,
    /// Packets dropped because the link held `limit_packets` already.
    pub drops: u64,
}

#[derive(Debug)]
struct Link {
    cfg: LinkConfig,
    busy_until: SimTime,
    /// Remainder (in bit·ns units, < rate) carried between back-to-back
    /// packets so serialisation times add up exactly.
    carry: u128,
    fifo: VecDeque<(SimTime, Vec<u8>)>,
    scheduled: bool,
    stats: LinkStats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Link(u32),
    Timer(u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    time: SimTime,
    seq: u64,
    ev: Ev,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we want the earliest (time, seq).
        other
            .time
            .cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The pending events: a binary heap for the future plus a FIFO for events
/// due at the current instant (e.g. a router port handing a packet to the
/// next node), which skips the heap's O(log n). Popping merges the two by
/// `(time, seq)`, so the order is exactly that of a single heap.
#[derive(Debug, Default)]
struct EventQueue {
    heap: BinaryHeap<Entry>,
    now_fifo: VecDeque<Entry>,
    seq: u64,
}

impl EventQueue {
    /// Schedules `ev` at `time`; `now` is the engine's current time
    /// (`time ≥ now`; events at `now` go to the FIFO).
    fn push(&mut self, now: SimTime, time: SimTime, ev: Ev) {
        let seq = self.seq;
        self.seq += 1;
        if time <= now {
            self.now_fifo.push_back(Entry { time: now, seq, ev });
        } else {
            self.heap.push(Entry { time, seq, ev });
        }
    }

    /// Whether the FIFO's head comes before the heap's.
    fn fifo_first(&self) -> Option<bool> {
        match (self.now_fifo.front(), self.heap.peek()) {
            (Some(a), Some(b)) => Some((a.time, a.seq) <= (b.time, b.seq)),
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (None, None) => None,
        }
    }

    fn peek_time(&self) -> Option<SimTime> {
        match self.fifo_first()? {
            true => self.now_fifo.front().map(|e| e.time),
            false => self.heap.peek().map(|e| e.time),
        }
    }

    fn pop(&mut self) -> Option<Entry> {
        match self.fifo_first()? {
            true => self.now_fifo.pop_front(),
            false => self.heap.pop(),
        }
    }

    fn len(&self) -> usize {
        self.heap.len() + self.now_fifo.len()
    }
}

/// A bounded free list of packet buffers.
#[derive(Debug)]
pub struct BufPool {
    free: Vec<Vec<u8>>,
    cap: usize,
    buf_capacity: usize,
}

impl BufPool {
    /// A pool that keeps at most `cap` buffers of `buf_capacity` bytes.
    pub fn new(cap: usize, buf_capacity: usize) -> Self {
        Self {
            free: Vec::new(),
            cap,
            buf_capacity,
        }
    }

    /// A buffer from the pool (its length and contents are whatever its last
    /// user left; callers `clear` or overwrite it), or a new empty one.
    pub fn get(&mut self) -> Vec<u8> {
        self.free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.buf_capacity))
    }

    /// Returns a buffer to the pool (dropped if the pool is full or the
    /// buffer is unusually small).
    pub fn put(&mut self, buf: Vec<u8>) {
        if self.free.len() < self.cap && buf.capacity() >= self.buf_capacity / 2 {
            self.free.push(buf);
        }
    }
}

/// Engine-wide counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Heap entries popped (including stale timer entries).
    pub events: u64,
    /// Of those, stale (lazily cancelled) timer entries.
    pub stale_timers: u64,
    /// Of those, timer entries that found the node not yet due (re-armed).
    pub early_timers: u64,
    /// Packets handed to links.
    pub transmissions: u64,
    /// Packets dropped by link limits.
    pub link_drops: u64,
    /// Node timers that were still due after the node handled them many
    /// times at the same instant; each was pushed back by 1 µs (a safety
    /// net against a core that never makes progress; 0 in a healthy run).
    pub timer_stalls: u64,
    /// Largest number of entries the heap has held.
    pub max_heap: u64,
}

/// The view of the engine a node gets while it handles an event.
pub struct Ctx<'a, S> {
    now: SimTime,
    clock: Clock,
    ifaces: &'a [LinkId],
    links: &'a mut [Link],
    queue: &'a mut EventQueue,
    pool: &'a mut BufPool,
    stats: &'a mut EngineStats,
    /// State shared by all nodes (flow records, …).
    pub shared: &'a mut S,
}

impl<S> Ctx<'_, S> {
    /// Current virtual time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Current time as an `Instant` for the cores.
    pub fn instant(&self) -> Instant {
        self.clock.instant(self.now)
    }

    /// The engine's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Number of outgoing interfaces of this node.
    pub fn iface_count(&self) -> usize {
        self.ifaces.len()
    }

    /// A packet buffer from the pool (not cleared: overwrite or `clear` it).
    pub fn buffer(&mut self) -> Vec<u8> {
        self.pool.get()
    }

    /// Gives a consumed packet buffer back to the pool.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.put(buf);
    }

    /// Sends `packet` out of interface `iface`. Returns false (and recycles
    /// the buffer) if there is no such interface or the link is full.
    pub fn send(&mut self, iface: usize, packet: Vec<u8>) -> bool {
        let Some(&LinkId(id)) = self.ifaces.get(iface) else {
            self.pool.put(packet);
            return false;
        };
        let Some(link) = self.links.get_mut(id as usize) else {
            self.pool.put(packet);
            return false;
        };
        if link.fifo.len() >= link.cfg.limit_packets {
            link.stats.drops += 1;
            self.stats.link_drops += 1;
            self.pool.put(packet);
            return false;
        }
        let len = packet.len() as u64;
        let start = if link.busy_until > self.now {
            link.busy_until
        } else {
            link.carry = 0;
            self.now
        };
        let tx = if link.cfg.rate_bps == 0 {
            0
        } else {
            // The exact quotient and remainder; in u64 when nothing
            // overflows (every real packet and rate), which is several
            // times cheaper than the u128 division.
            let small = len
                .checked_mul(8 * NS_PER_SEC)
                .zip(u64::try_from(link.carry).ok())
                .and_then(|(a, c)| a.checked_add(c));
            match small {
                Some(num) => {
                    let rate = link.cfg.rate_bps;
                    link.carry = u128::from(num % rate);
                    num / rate
                }
                None => {
                    let num = u128::from(len) * 8 * u128::from(NS_PER_SEC) + link.carry;
                    let rate = u128::from(link.cfg.rate_bps);
                    link.carry = num % rate;
                    u64::try_from(num / rate).unwrap_or(u64::MAX)
                }
            }
        };
        link.busy_until = start.saturating_add(tx);
        let arrive = link.busy_until.saturating_add(link.cfg.delay);
        link.fifo.push_back((arrive, packet));
        link.stats.packets += 1;
        link.stats.bytes += len;
        self.stats.transmissions += 1;
        if !link.scheduled {
            link.scheduled = true;
            self.queue.push(self.now, arrive, Ev::Link(id));
        }
        true
    }
}

/// Something that lives at a node of the simulated network.
pub trait Node {
    /// State shared by all nodes of a simulation.
    type Shared;

    /// A packet arrived on (incoming) interface `iface`.
    fn handle_packet(&mut self, ctx: &mut Ctx<'_, Self::Shared>, iface: u16, packet: Vec<u8>);

    /// The deadline from [`Node::poll_timeout`] has passed.
    fn handle_timeout(&mut self, ctx: &mut Ctx<'_, Self::Shared>);

    /// When the node next wants [`Node::handle_timeout`] (None = never).
    fn poll_timeout(&self) -> Option<SimTime>;
}

struct Slot<N> {
    node: N,
    ifaces: Vec<LinkId>,
    armed: Option<SimTime>,
    generation: u32,
    fire_time: SimTime,
    fire_count: u32,
}

/// How many times a node may be woken at the same instant before the
/// engine pushes its timer back (see [`EngineStats::timer_stalls`]).
const MAX_SAME_INSTANT_FIRES: u32 = 1_000;

/// The discrete-event engine over nodes of type `N`.
pub struct Engine<N: Node> {
    now: SimTime,
    clock: Clock,
    queue: EventQueue,
    links: Vec<Link>,
    nodes: Vec<Slot<N>>,
    pool: BufPool,
    stats: EngineStats,
    /// State shared by all nodes.
    pub shared: N::Shared,
}

impl<N: Node> Engine<N> {
    /// An empty engine at time 0.
    pub fn new(clock: Clock, shared: N::Shared) -> Self {
        Self {
            now: 0,
            clock,
            queue: EventQueue::default(),
            links: Vec::new(),
            nodes: Vec::new(),
            pool: BufPool::new(4096, 2048),
            stats: EngineStats::default(),
            shared,
        }
    }

    /// Current virtual time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Engine counters so far.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Adds a node and arms its timer. Returns its id.
    pub fn add_node(&mut self, node: N) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Slot {
            node,
            ifaces: Vec::new(),
            armed: None,
            generation: 0,
            fire_time: 0,
            fire_count: 0,
        });
        self.rearm(id.0 as usize);
        id
    }

    /// Adds a link leaving `from`. Returns the link id and the outgoing
    /// interface number it has at `from` (interfaces are numbered in the
    /// order links are added).
    pub fn add_link(&mut self, from: NodeId, cfg: LinkConfig) -> (LinkId, usize) {
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link {
            cfg,
            busy_until: 0,
            carry: 0,
            fifo: VecDeque::new(),
            scheduled: false,
            stats: LinkStats::default(),
        });
        let slot = &mut self.nodes[from.0 as usize];
        slot.ifaces.push(id);
        (id, slot.ifaces.len() - 1)
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The node with id `id`.
    pub fn node(&self, id: NodeId) -> &N {
        &self.nodes[id.0 as usize].node
    }

    /// Mutable access to a node. Call [`Engine::rearm_node`] afterwards if
    /// the change may move its deadline earlier.
    pub fn node_mut(&mut self, id: NodeId) -> &mut N {
        &mut self.nodes[id.0 as usize].node
    }

    /// A node and the shared state at once.
    pub fn node_and_shared_mut(&mut self, id: NodeId) -> (&mut N, &mut N::Shared) {
        (&mut self.nodes[id.0 as usize].node, &mut self.shared)
    }

    /// Re-reads a node's deadline after outside changes.
    pub fn rearm_node(&mut self, id: NodeId) {
        self.rearm(id.0 as usize);
    }

    /// The configuration of a link.
    pub fn link_config(&self, id: LinkId) -> LinkConfig {
        self.links[id.0 as usize].cfg
    }

    /// The counters of a link.
    pub fn link_stats(&self, id: LinkId) -> LinkStats {
        self.links[id.0 as usize].stats
    }

    /// Packets currently held by a link.
    pub fn link_backlog(&self, id: LinkId) -> usize {
        self.links[id.0 as usize].fifo.len()
    }

    /// Current number of pending events.
    pub fn heap_len(&self) -> usize {
        self.queue.len()
    }

    /// Time of the earliest pending event.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.queue.peek_time()
    }

    /// Runs every event with time ≤ `until`, then sets the clock to `until`.
    pub fn run_until(&mut self, until: SimTime) {
        while let Some(top) = self.queue.peek_time() {
            if top > until {
                break;
            }
            let Some(e) = self.queue.pop() else {
                break;
            };
            self.stats.events += 1;
            self.now = e.time.max(self.now);
            match e.ev {
                Ev::Link(l) => self.on_link(l as usize),
                Ev::Timer(n, g) => self.on_timer(n as usize, g),
            }
            let len = self.queue.len() as u64;
            if len > self.stats.max_heap {
                self.stats.max_heap = len;
            }
        }
        self.now = self.now.max(until);
    }

    fn on_link(&mut self, l: usize) {
        let link = &mut self.links[l];
        let Some((_, packet)) = link.fifo.pop_front() else {
            link.scheduled = false;
            return;
        };
        if let Some(&(next, _)) = link.fifo.front() {
            self.queue.push(self.now, next, Ev::Link(l as u32));
        } else {
            link.scheduled = false;
        }
        let to = link.cfg.to.0 as usize;
        let iface = link.cfg.to_iface;
        if to >= self.nodes.len() {
            self.pool.put(packet);
            return;
        }
        self.with_node(to, |node, ctx| node.handle_packet(ctx, iface, packet));
        self.rearm(to);
    }

    fn on_timer(&mut self, n: usize, generation: u32) {
        let now = self.now;
        let slot = &mut self.nodes[n];
        if slot.generation != generation {
            self.stats.stale_timers += 1;
            return; // stale (lazily cancelled)
        }
        slot.armed = None;
        if slot.node.poll_timeout().is_some_and(|t| t <= now) {
            if slot.fire_time == now {
                slot.fire_count += 1;
            } else {
                slot.fire_time = now;
                slot.fire_count = 1;
            }
            if slot.fire_count > MAX_SAME_INSTANT_FIRES {
                self.stats.timer_stalls += 1;
                slot.fire_count = 0;
                slot.generation = slot.generation.wrapping_add(1);
                let at = now + 1_000;
                slot.armed = Some(at);
                self.queue
                    .push(now, at, Ev::Timer(n as u32, slot.generation));
                return;
            }
            self.with_node(n, |node, ctx| node.handle_timeout(ctx));
        } else {
            self.stats.early_timers += 1;
        }
        self.rearm(n);
    }

    /// Runs `f` on node `n` with its view of the engine at the current time.
    fn with_node(&mut self, n: usize, f: impl FnOnce(&mut N, &mut Ctx<'_, N::Shared>)) {
        let slot = &mut self.nodes[n];
        let mut ctx = Ctx {
            now: self.now,
            clock: self.clock,
            ifaces: &slot.ifaces,
            links: &mut self.links,
            queue: &mut self.queue,
            pool: &mut self.pool,
            stats: &mut self.stats,
            shared: &mut self.shared,
        };
        f(&mut slot.node, &mut ctx);
    }

    fn rearm(&mut self, n: usize) {
        let now = self.now;
        let slot = &mut self.nodes[n];
        let Some(want) = slot.node.poll_timeout() else {
            return;
        };
        let want = want.max(now);
        if slot.armed.is_some_and(|a| a <= want) {
            return; // the armed entry fires first and re-checks
        }
        slot.generation = slot.generation.wrapping_add(1);
        slot.armed = Some(want);
        self.queue
            .push(now, want, Ev::Timer(n as u32, slot.generation));
    }
}

#[cfg(test)]
mod tests;

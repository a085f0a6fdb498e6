//! One direction of the router: the sans-IO [`Port`].
//!
//! See the crate docs for the data path and the exact timing model. In
//! short: a port holds a timeline of events (dequeue when the link is free,
//! control-interval ticks, the end of a TCP-mode hold) and processes every
//! event up to the `now` the caller passes, in time order, before doing
//! what the call asks. The result never depends on how often or how late
//! the caller polls — with one exception: control intervals with an
//! identical measurement (no arrivals, unchanged queue) are batched into one
//! [`RateController::on_intervals`] call, whose closed form may differ from
//! separate steps in the last mantissa bits.

use std::time::{Duration, Instant};

use ka_codec::{Code, RateTable};

use crate::classify::{self, Kind, Reject};
use crate::config::{PortConfig, QueueMeasure, Signalling};
use crate::controller::{Measurement, RateController, Rcp};
use crate::mode::{Mode, ModeDetector};
use crate::native;
use crate::persist::{self, PersistentQueue};
use crate::queue::DropTail;
use crate::shaper::{DelayLine, Shaper};
use crate::stamp::{self, Skip, StampConfig, Stamped};
use crate::stats::{Counters, PortSnapshot};
use crate::time::{Clock, duration_ns};

/// The first identification a port puts into the IPv6 Fragment headers it
/// inserts ("KA" in the top half); later ones count up from there
/// (wrapping; every IPv6 split takes one). Existing Fragment headers keep
/// their identification.
pub const IPV6_IDENT_START: u32 = 0x4B41_0000;

/// A queued packet's buffer is shrunk when its capacity exceeds
/// `max(2 · len, SHRINK_SLACK)` bytes, so a caller handing in oversized
/// buffers cannot multiply the queue's memory.
pub const SHRINK_SLACK: usize = 4096;

/// What [`Port::push`] did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PushOutcome {
    /// Queued (it will come out of [`Port::poll_transmit`]).
    Queued,
    /// Dropped, and counted.
    Dropped(DropReason),
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue held `queue_limit` packets (drop-tail).
    QueueFull,
    /// TTL / hop limit expired.
    TtlExpired,
    /// Empty, oversized, or an IP header that is truncated, inconsistent or
    /// fails its checksum.
    Malformed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    ModeExpiry,
    Tick,
    Dequeue,
}

/// One direction of a KA router (DESIGN §4.1): classify → RTT indicator →
/// drop-tail queue → shaper at C → stamp on dequeue → delay line.
pub struct Port {
    config: PortConfig,
    clock: Clock,
    /// The latest time processed (ns since the epoch).
    now: u64,
    capacity: f64,
    /// The controller's ceiling (see [`Measurement::max_rate`]).
    max_rate: f64,
    controller: Box<dyn RateController>,
    /// `None` if the configured scale is invalid (then nothing is stamped).
    table: Option<RateTable>,
    /// d in milliseconds.
    rtt_ms: f64,
    queue: DropTail,
    shaper: Shaper,
    delay_ns: u64,
    delay_line: DelayLine,
    mode: ModeDetector,
    last_tick: u64,
    next_tick: u64,
    /// Bytes that arrived since `last_tick`.
    arrived: u64,
    /// Minima of the queue over the last control intervals.
    persistent: PersistentQueue,
    /// R at the last control interval that ended with a short queue (at
    /// most a tenth of the TCP-mode threshold), in KA mode.
    calm_rate: f64,
    ident6: u32,
    /// Sigma-delta error of [`PortConfig::dither`], in [0, 1).
    dither_acc: f64,
    /// [`RcpConfig::queue_target`](crate::RcpConfig::queue_target) × C,
    /// bytes.
    queue_target_bytes: usize,
    counters: Counters,
}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port")
            .field("config", &self.config)
            .field("snapshot", &self.snapshot())
            .finish_non_exhaustive()
    }
}

impl Port {
    /// A port with the default [`Rcp`] controller, starting at `now`.
    pub fn new(config: PortConfig, now: Instant) -> Self {
        let config = config.sanitized();
        let rcp = Rcp::new(config.rcp, config.capacity_bytes_per_ms());
        Self::with_controller(config, Box::new(rcp), now)
    }

    /// A port with any rate controller, starting at `now`.
    ///
    /// The configuration is clamped as [`PortConfig::validate`] describes.
    pub fn with_controller(
        config: PortConfig,
        controller: Box<dyn RateController>,
        now: Instant,
    ) -> Self {
        let config = config.sanitized();
        let rtt_ms = config.initial_rtt.as_secs_f64() * 1e3;
        let table = RateTable::new(&config.scale).ok();
        let capacity = config.capacity_bytes_per_ms();
        let max_rate = match (&table, config.signalling) {
            (Some(t), Signalling::Ka) => rate_ceiling(t, capacity),
            _ => capacity,
        };
        let mut port = Self {
            clock: Clock::new(now),
            now: 0,
            capacity,
            max_rate,
            controller,
            table,
            rtt_ms,
            queue: DropTail::new(config.queue_limit),
            shaper: Shaper::new(config.capacity_bps),
            delay_ns: duration_ns(config.delay),
            delay_line: DelayLine::default(),
            mode: ModeDetector::new(&config.mode, config.queue_limit),
            last_tick: 0,
            next_tick: 0,
            arrived: 0,
            persistent: PersistentQueue::default(),
            calm_rate: 0.0,
            ident6: IPV6_IDENT_START,
            dither_acc: 0.0,
            queue_target_bytes: (config.rcp.queue_target.as_secs_f64() * 1e3 * capacity) as usize,
            counters: Counters::default(),
            config,
        };
        port.next_tick = port.control_interval_ns();
        port.calm_rate = port.controller.rate();
        port
    }

    /// The (sanitised) configuration.
    pub fn config(&self) -> &PortConfig {
        &self.config
    }

    /// A packet arrives (a whole IP packet, no link header).
    ///
    /// Takes ownership so buffers are reused (the leading fragment of a split
    /// is the same allocation). Never panics on any bytes; see the crate docs
    /// for what is dropped and what is forwarded untouched. A queued buffer
    /// whose capacity exceeds `max(2 · len, SHRINK_SLACK)` is shrunk first.
    pub fn push(&mut self, now: Instant, mut packet: Vec<u8>) -> PushOutcome {
        let t = self.advance(now);
        self.counters.packets_in += 1;
        self.counters.bytes_in += packet.len() as u64;
        let kind = match classify::ingress(&mut packet, self.config.decrement_ttl) {
            Ok(kind) => kind,
            Err(Reject::Malformed) => {
                self.counters.drops_malformed += 1;
                return PushOutcome::Dropped(DropReason::Malformed);
            }
            Err(Reject::TtlExpired) => {
                self.counters.drops_ttl += 1;
                return PushOutcome::Dropped(DropReason::TtlExpired);
            }
        };
        let indicator = match kind {
            Kind::Ipv4 { indicator } | Kind::Ipv6 { indicator } => indicator,
            Kind::NonIp => {
                self.counters.non_ip += 1;
                None
            }
        };
        if self.config.signalling == Signalling::Ka {
            // Foreign: traffic that cannot be from a KA endpoint (see the
            // `mode` module docs).
            let foreign = match kind {
                Kind::Ipv4 { indicator } => {
                    indicator.is_none() && packet.get(6).is_some_and(|b| b & 0x40 != 0)
                }
                Kind::Ipv6 { indicator } => indicator.is_none() && !self.config.ipv6_signal,
                Kind::NonIp => true,
            };
            self.mode.on_arrival(packet.len(), foreign);
        }
        if let Some(k) = indicator {
            self.counters.indicators_seen += 1;
            let sample = ka_codec::rtt::rtt_for_k(k).as_secs_f64() * 1e3;
            self.rtt_ms += self.config.rcp.rtt_gain * (sample - self.rtt_ms);
        } else if self.config.signalling == Signalling::NativeRcp
            && let Some(ms) = native::rcp_rtt_ms(&packet)
        {
            // Native RCP carries the sender's RTT in every packet's option.
            self.rtt_ms += self.config.rcp.rtt_gain * (f64::from(ms) - self.rtt_ms);
        }
        // y counts every packet offered to the queue, drop-tail drops included.
        self.arrived += packet.len() as u64;
        if packet.capacity() > packet.len().saturating_mul(2).max(SHRINK_SLACK) {
            packet.shrink_to_fit();
        }
        let was_empty = self.queue.is_empty();
        let outcome = match self.queue.push(packet) {
            Ok(()) => PushOutcome::Queued,
            Err(_) => {
                self.counters.drops_queue += 1;
                PushOutcome::Dropped(DropReason::QueueFull)
            }
        };
        if self.config.signalling == Signalling::Ka {
            self.mode_on_queue(t);
        }
        if was_empty && outcome == PushOutcome::Queued {
            self.shaper.idle_until(t);
            // The link may be free right now: start sending at `t`.
            self.advance(now);
        }
        outcome
    }

    /// The next packet or fragment whose departure (end of serialisation +
    /// delay) is at or before `now`. Call repeatedly until `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        let t = self.advance(now);
        let piece = self.delay_line.pop_ready(t)?;
        self.counters.packets_out += 1;
        self.counters.bytes_out += piece.len() as u64;
        Some(piece)
    }

    /// When the port next has work: the next dequeue (start of a
    /// transmission) or the next departure from the delay line, whichever
    /// is earlier. `None` = nothing queued or in flight.
    ///
    /// A dequeue produces nothing to transmit yet (its departure time is
    /// only known once the packet is stamped), so a driver may see one
    /// wake-up with nothing to send per packet; it then gets the departure
    /// time from the next `poll_timeout`. Control-loop and mode timers are
    /// evaluated lazily and never need a wake-up.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let deq = (!self.queue.is_empty()).then(|| self.shaper.free_at());
        let rel = self.delay_line.next_release();
        let t = match (deq, rel) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(self.clock.instant(t))
    }

    /// Advances the port to `now` (dequeues, control intervals, mode
    /// timers). Also done by `push` and `poll_transmit`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The rate the port would stamp right now (`None` in TCP mode, when R is
    /// not encodable, or without KA signalling).
    pub fn signal(&self) -> Option<Code> {
        if self.config.signalling != Signalling::Ka || self.mode.mode() == Mode::Tcp {
            return None;
        }
        self.table.as_ref()?.encode(self.controller.rate())
    }

    /// Packets in the queue now (as of the last call that advanced the
    /// port). A cheap accessor for drivers that sample it per packet;
    /// [`Port::snapshot`] has everything else.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// The port's current mode ([`Mode::Ka`] for ports without KA
    /// signalling, whose detector never leaves KA mode).
    pub fn mode(&self) -> Mode {
        self.mode.mode()
    }

    /// The queue length (packets) at which the port enters TCP mode.
    pub fn mode_threshold(&self) -> usize {
        self.mode.threshold()
    }

    /// The current average RTT d.
    pub fn rtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms.max(0.0) / 1e3)
    }

    /// A read-only view of counters and state.
    pub fn snapshot(&self) -> PortSnapshot {
        let r = self.controller.rate();
        let mut counters = self.counters;
        counters.mode_changes = self.mode.changes();
        PortSnapshot {
            rate_bytes_per_ms: r,
            rate_bps: r * 8000.0,
            signal: self.signal(),
            rtt: self.rtt(),
            queue_packets: self.queue.len(),
            queue_bytes: self.queue.bytes(),
            in_flight: self.delay_line.len(),
            mode: self.mode.mode(),
            counters,
        }
    }

    fn rtt_ns(&self) -> u64 {
        // `as` saturates; d ≥ 1 µs by sanitising, EWMA keeps it positive.
        (self.rtt_ms * 1e6) as u64
    }

    /// A queue this short (a tenth of the TCP-mode threshold) counts as
    /// "short" for [`Port::mode_on_queue`].
    fn calm_queue(&self) -> usize {
        self.mode.threshold() / 10
    }

    /// T = min(d, max_interval), at least 1 ns.
    fn control_interval_ns(&self) -> u64 {
        self.rtt_ns()
            .min(duration_ns(self.config.rcp.max_interval))
            .max(1)
    }

    /// Processes every event up to `now`; returns `now` in port time.
    fn advance(&mut self, now: Instant) -> u64 {
        let target = self.clock.ns(now).max(self.now);
        loop {
            let mode_at = if self.config.signalling == Signalling::Ka {
                self.mode.expiry(self.rtt_ns())
            } else {
                None
            };
            let deq_at = (!self.queue.is_empty()).then(|| self.shaper.free_at());
            // Ties: mode expiry, then tick, then dequeue.
            let (mut ev, mut t) = (Event::Tick, self.next_tick);
            if let Some(m) = mode_at.filter(|&m| m <= t) {
                (ev, t) = (Event::ModeExpiry, m);
            }
            if let Some(d) = deq_at.filter(|&d| d < t) {
                (ev, t) = (Event::Dequeue, d);
            }
            if t > target {
                break;
            }
            let t = t.max(self.now);
            self.now = t;
            match ev {
                Event::ModeExpiry => self.mode.expire(),
                Event::Tick => self.tick(t, target, mode_at, deq_at),
                Event::Dequeue => self.dequeue(t),
            }
        }
        self.now = target;
        target
    }

    /// The control interval ending at `t`, plus every further interval up to
    /// the next other event (or `target`), which all see the same
    /// measurement: nothing arrives during `advance`, and the queue only
    /// changes at dequeues.
    fn tick(&mut self, t: u64, target: u64, mode_at: Option<u64>, deq_at: Option<u64>) {
        let frozen = self.config.signalling == Signalling::Ka && self.mode.mode() == Mode::Tcp;
        let interval = t.saturating_sub(self.last_tick).max(1);
        let rtt = self.rtt();
        let step = self.control_interval_ns();
        // Intervals in one RTT (the persistent queue's window).
        let window = usize::try_from(self.rtt_ns().div_ceil(step)).unwrap_or(usize::MAX);
        let persistent = self.persistent.end_interval(self.queue.bytes(), window);
        let mut m = Measurement {
            interval: Duration::from_nanos(interval),
            rtt,
            capacity: self.capacity,
            max_rate: self.max_rate,
            input_rate: self.arrived as f64 / (interval as f64 / 1e6),
            queue_bytes: match self.config.rcp.queue_measure {
                QueueMeasure::Now => self.queue.bytes(),
                QueueMeasure::Persistent => persistent,
            }
            .saturating_sub(self.queue_target_bytes),
        };
        if !frozen {
            self.controller.on_interval(&m);
            if self.queue.len() <= self.calm_queue() {
                self.calm_rate = self.controller.rate();
            }
        }
        self.arrived = 0;
        self.last_tick = t;
        let mut limit = target;
        if let Some(d) = deq_at {
            limit = limit.min(d);
        }
        if let Some(md) = mode_at {
            limit = limit.min(md.saturating_sub(1));
        }
        let n = limit.saturating_sub(t) / step;
        // Only while in TCP mode can the idle intervals end it (foreign
        // traffic gone): then process them one at a time so the change
        // lands in the right interval.
        let tcp_mode = self.config.signalling == Signalling::Ka && self.mode.mode() == Mode::Tcp;
        let n = if tcp_mode { n.min(1) } else { n };
        // A standing queue (a link slower than one packet per interval) makes
        // the persistent queue change from interval to interval as the
        // window slides: take those intervals one tick at a time.
        let n = if self.queue.is_empty() { n } else { 0 };
        if n > 0 {
            // The queue is empty throughout, so the persistent queue is 0.
            let slots = usize::try_from(n).unwrap_or(usize::MAX);
            for _ in 0..slots.min(persist::MAX_WINDOW_INTERVALS) {
                self.persistent.end_interval(0, window);
            }
            if !frozen {
                m.interval = Duration::from_nanos(step);
                m.input_rate = 0.0;
                m.queue_bytes = 0;
                self.controller.on_intervals(&m, n);
                if self.queue.len() <= self.calm_queue() {
                    self.calm_rate = self.controller.rate();
                }
            }
            self.last_tick = t + n * step;
        }
        if self.config.signalling == Signalling::Ka {
            self.mode
                .on_interval(interval, n.saturating_mul(step), self.rtt_ns());
        }
        self.next_tick = self.last_tick.saturating_add(step);
    }

    /// The link is free at `t`: take the head of the queue, stamp it and put
    /// its piece(s) on the wire back to back.
    fn dequeue(&mut self, t: u64) {
        let Some(packet) = self.queue.pop() else {
            return;
        };
        self.persistent.observe(self.queue.bytes());
        if self.config.signalling == Signalling::Ka {
            self.mode_on_queue(t);
        }
        let (first, second) = self.egress(packet);
        self.shaper.idle_until(t);
        for piece in std::iter::once(first).chain(second) {
            let end = self.shaper.send(piece.len());
            self.delay_line
                .push(end.saturating_add(self.delay_ns), piece);
        }
    }

    /// The mode detector sees the queue length now; on entering TCP mode R
    /// is frozen at the value it had while the queue was last short.
    fn mode_on_queue(&mut self, t: u64) {
        let before = self.mode.mode();
        self.mode.on_queue(t, self.queue.len());
        if before == Mode::Ka
            && self.mode.mode() == Mode::Tcp
            && self.controller.rate() < self.calm_rate
        {
            self.controller.restore(self.calm_rate);
        }
    }

    /// [`PortConfig::dither`]: `code` = encode(R) or the next code up, in
    /// the proportion that makes the rate a sender paces at, averaged over
    /// the packets it sends, equal to R. A packet paced at rate r takes
    /// `size/r` of the sender's time, so the average rate is the *harmonic*
    /// mean: the next code goes on a fraction `p = (1/lo − 1/R)/(1/lo −
    /// 1/hi)` of packets. An error accumulator (first-order sigma-delta)
    /// spreads them evenly; it is deterministic.
    fn dither(&mut self, code: Code) -> Code {
        let Some(table) = self.table.as_ref() else {
            return code;
        };
        let Some(hi_code) = self.config.scale.next_code(code) else {
            return code;
        };
        let (lo, hi) = (table.decode(code), table.decode(hi_code));
        let r = self.controller.rate();
        if !(r > lo && hi > lo) {
            return code;
        }
        let p = ((1.0 / lo - 1.0 / r) / (1.0 / lo - 1.0 / hi)).clamp(0.0, 1.0);
        self.dither_acc += p;
        if self.dither_acc >= 1.0 {
            self.dither_acc -= 1.0;
            self.counters.dithered_up += 1;
            hi_code
        } else {
            code
        }
    }

    /// Per-packet signalling on dequeue.
    fn egress(&mut self, mut packet: Vec<u8>) -> (Vec<u8>, Option<Vec<u8>>) {
        match self.config.signalling {
            Signalling::None => (packet, None),
            Signalling::NativeRcp => {
                let rate = native::bytes_per_sec(self.controller.rate());
                if native::lower_rcp_option(&mut packet, rate) {
                    self.counters.rcp_options_lowered += 1;
                }
                (packet, None)
            }
            Signalling::Ka => {
                let Some(code) = self.signal() else {
                    return (packet, None);
                };
                let code = if self.config.dither {
                    self.dither(code)
                } else {
                    code
                };
                let sc = StampConfig {
                    scale: self.config.scale,
                    saturate_min_payload: self.config.saturate_min_payload,
                };
                let stamped = match ka_codec::wire::ip_version(&packet) {
                    Some(4) => stamp::stamp_ipv4_with(&sc, packet, code),
                    Some(6) if self.config.ipv6_signal => {
                        let s = stamp::stamp_ipv6_with(&sc, packet, code, self.ident6);
                        if s.is_split() {
                            self.ident6 = self.ident6.wrapping_add(1);
                        }
                        s
                    }
                    _ => return (packet, None),
                };
                match stamped {
                    Stamped::Split(..) => self.counters.fragments_made += 1,
                    Stamped::Untouched(_, Skip::Unparsable) => self.counters.unstampable += 1,
                    Stamped::Untouched(..) => {}
                }
                stamped.into_pieces()
            }
        }
    }
}

/// The smallest code rate at or above `capacity` (C itself if C is above the
/// top code): the ceiling that lets a KA port's quantised signal dither
/// around C instead of sitting a code below it (see [`crate::Rcp`]).
fn rate_ceiling(table: &RateTable, capacity: f64) -> f64 {
    table
        .codes()
        .map(|c| table.decode(c))
        .find(|&r| r >= capacity)
        .unwrap_or(capacity)
}

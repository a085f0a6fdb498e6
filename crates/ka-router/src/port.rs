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

use ka_codec::Code;
use ka_codec::wire::{Layout, Segment, SegmentMut};

use crate::classify::{self, Kind, Reject};
use crate::config::{PortConfig, Signalling};
use crate::controller::{RateController, Rcp};
use crate::gso::{self, Gso};
use crate::impair::Impairer;
use crate::mode::Mode;
use crate::qdisc::{DropCause, QueueDiscipline, Verdict};
use crate::shaper::{DelayLine, Shaper};
use crate::signal::{QueueState, RateSignal, Signaller, XcpSignal};
use crate::stats::{Counters, PortSnapshot, SojournHistogram};
use crate::time::{Clock, duration_ns};

/// A queued packet's buffer is shrunk when its capacity exceeds
/// `max(2 · len, SHRINK_SLACK)` bytes, so a caller handing in oversized
/// buffers cannot multiply the queue's memory.
pub const SHRINK_SLACK: usize = 4096;

/// What [`Port::push`] did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PushOutcome {
    /// Queued (it will come out of [`Port::poll_transmit`], unless the
    /// queue discipline drops it later).
    Queued,
    /// Queued with its ECN field set to CE by the queue discipline.
    Marked,
    /// Dropped, and counted.
    Dropped(DropReason),
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue discipline's hard limit was reached (drop-tail: the queue
    /// held `queue_limit` packets).
    QueueFull,
    /// An early drop by the queue discipline's AQM (RED) of a packet that
    /// could not be ECN-marked.
    Aqm,
    /// TTL / hop limit expired.
    TtlExpired,
    /// Empty, oversized, or an IP header that is truncated, inconsistent or
    /// fails its checksum.
    Malformed,
    /// Not IP (the version nibble is neither 4 nor 6): nothing past an IP
    /// router can take it (a TUN device refuses the write with `EINVAL`),
    /// so it must not take the link's capacity.
    NotIp,
}

/// What [`Port::push_gso`] did with a super-packet's segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GsoOutcome {
    /// [`PushOutcome::Dropped`] (the first reason) if any segment was
    /// dropped, else [`PushOutcome::Marked`] if any was marked, else
    /// [`PushOutcome::Queued`].
    pub outcome: PushOutcome,
    /// Segments dropped.
    pub dropped: u16,
}

impl GsoOutcome {
    fn add(&mut self, o: PushOutcome, segments: u16) {
        match (o, self.outcome) {
            (PushOutcome::Dropped(_), PushOutcome::Dropped(_)) => {}
            (PushOutcome::Dropped(_), _) | (PushOutcome::Marked, PushOutcome::Queued) => {
                self.outcome = o;
            }
            _ => {}
        }
        if let PushOutcome::Dropped(_) = o {
            self.dropped = self.dropped.saturating_add(segments);
        }
    }
}

/// One direction of a KA router (DESIGN §3.1): classify → queue
/// discipline → shaper at C → signalling on dequeue → (impairments,
/// DESIGN §3.10) → delay line.
pub struct Port {
    config: PortConfig,
    clock: Clock,
    /// The latest time processed (ns since the epoch).
    now: u64,
    queue: Box<dyn QueueDiscipline>,
    signal: Box<dyn Signaller>,
    shaper: Shaper,
    delay_ns: u64,
    /// The impairment stage (`None` when [`PortConfig::impair`] is off).
    impair: Option<Impairer>,
    delay_line: DelayLine,
    sojourn: SojournHistogram,
    counters: Counters,
    /// Segments of a super-packet [`Port::poll_transmit`] cut and has not
    /// handed out yet.
    cut: std::collections::VecDeque<Vec<u8>>,
    /// Scratch: each segment's length and kind, for the signalling stage.
    arrivals: Vec<(usize, Kind)>,
    /// Scratch: the pieces of a dequeued super-packet.
    gso_pieces: Vec<(Vec<u8>, Option<Gso>)>,
    /// Which pieces in the delay line are super-packets.
    supers: SuperMarks,
}

/// Which pieces in a port's delay line are super-packets, by their place
/// in it. Super-packets travel only through a port without an impairment
/// stage, whose delay line releases in the order pieces enter it (each
/// release is the end of a serialisation, which never decreases, plus a
/// constant delay), so a mark is the number of pieces that leave before
/// it. Plain traffic pays one emptiness check per departure.
#[derive(Debug, Default)]
struct SuperMarks {
    /// Pieces popped since the marks were last empty.
    pops: u64,
    /// (pieces popped before it leaves, counted as `pops`; its view).
    marks: std::collections::VecDeque<(u64, Gso)>,
}

impl SuperMarks {
    /// A super-packet enters a delay line that holds `ahead` pieces.
    fn pushed(&mut self, ahead: usize, g: Gso) {
        if self.marks.is_empty() {
            self.pops = 0;
        }
        self.marks.push_back((self.pops + ahead as u64, g));
    }

    /// A piece left the delay line: its view if it is a super-packet.
    #[inline]
    fn popped(&mut self) -> Option<Gso> {
        let &(at, g) = self.marks.front()?;
        let this = self.pops;
        self.pops += 1;
        if at == this {
            self.marks.pop_front();
            return Some(g);
        }
        None
    }
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
    /// A port starting at `now`: with [`Signalling::Xcp`] its signalling
    /// stage is an [`XcpSignal`]; otherwise a [`RateSignal`] with the
    /// controller the signalling names (a plain port: [`Rcp`]).
    pub fn new(config: PortConfig, now: Instant) -> Self {
        let config = config.sanitized();
        let c = config.capacity_bytes_per_ms();
        let controller: Box<dyn RateController> = match &config.signalling {
            Signalling::Xcp(_) => {
                return Self::with_signaller(config, Box::new(XcpSignal::new(&config)), now);
            }
            Signalling::Ka { controller } | Signalling::NativeRcp { controller } => {
                controller.build(config.rcp, c)
            }
            Signalling::None => Box::new(Rcp::new(config.rcp, c)),
        };
        Self::with_controller(config, controller, now)
    }

    /// A port with any rate controller, starting at `now`; its signalling
    /// stage is a [`RateSignal`] with the carrier of `config.signalling`
    /// (whose own controller, if any, `controller` replaces;
    /// [`Signalling::Xcp`] is no rate carrier: such a port only shapes;
    /// use [`Port::new`]).
    ///
    /// The configuration is clamped as [`PortConfig::validate`] describes.
    pub fn with_controller(
        config: PortConfig,
        controller: Box<dyn RateController>,
        now: Instant,
    ) -> Self {
        let config = config.sanitized();
        let signal = Box::new(RateSignal::new(config, controller));
        Self::with_signaller(config, signal, now)
    }

    /// A port with any signalling stage, starting at `now`. The queue
    /// discipline is built from `config.qdisc`.
    pub fn with_signaller(config: PortConfig, signal: Box<dyn Signaller>, now: Instant) -> Self {
        let config = config.sanitized();
        let queue = config
            .qdisc
            .build(config.queue_limit, config.capacity_bps, config.seed);
        Self {
            clock: Clock::new(now),
            now: 0,
            queue,
            signal,
            shaper: Shaper::new(config.capacity_bps),
            delay_ns: duration_ns(config.delay),
            impair: Impairer::new(config.impair, config.delay, config.seed),
            delay_line: DelayLine::default(),
            sojourn: SojournHistogram::default(),
            counters: Counters::default(),
            cut: std::collections::VecDeque::new(),
            arrivals: Vec::new(),
            gso_pieces: Vec::new(),
            supers: SuperMarks::default(),
            config,
        }
    }

    /// Replaces the queue discipline (e.g. one of your own). Packets queued
    /// in the old one are dropped without being counted; call it before
    /// the first packet.
    pub fn with_queue_discipline(mut self, queue: Box<dyn QueueDiscipline>) -> Self {
        self.queue = queue;
        self
    }

    /// The (sanitised) configuration.
    pub fn config(&self) -> &PortConfig {
        &self.config
    }

    /// The signalling stage (read-only; see [`Signaller::as_any`] for its
    /// own diagnostics).
    pub fn signaller(&self) -> &dyn Signaller {
        self.signal.as_ref()
    }

    /// Whether [`Port::on_reverse`] can change anything.
    pub fn wants_reverse(&self) -> bool {
        self.signal.wants_reverse()
    }

    /// A packet of the opposite direction (e.g. an ACK of a flow this port
    /// carries) passes the router at `now`: the signalling stage may lower
    /// the rate echo it carries. Returns whether `packet` changed. Nothing
    /// else happens to the packet here; it goes on to its own egress.
    pub fn on_reverse(&mut self, now: Instant, packet: &mut [u8]) -> bool {
        let t = self.advance(now);
        if !self.signal.wants_reverse() {
            return false;
        }
        match SegmentMut::parse(packet) {
            Ok(mut seg) => self.signal.on_reverse(t, &mut seg, &mut self.counters),
            Err(_) => false,
        }
    }

    /// [`Port::on_reverse`] for a packet its caller parsed already (e.g. a
    /// router that parsed it for its own stages): the same, without parsing
    /// again.
    #[inline]
    pub fn on_reverse_segment(&mut self, now: Instant, packet: &mut SegmentMut<'_>) -> bool {
        let t = self.advance(now);
        if !self.signal.wants_reverse() {
            return false;
        }
        self.signal.on_reverse(t, packet, &mut self.counters)
    }

    /// A packet arrives (a whole IP packet, no link header).
    ///
    /// Takes ownership so buffers are reused (the leading fragment of a split
    /// is the same allocation). Never panics on any bytes; see the crate docs
    /// for what is dropped and what is forwarded untouched. A queued buffer
    /// whose capacity exceeds `max(2 · len, SHRINK_SLACK)` is shrunk first.
    pub fn push(&mut self, now: Instant, packet: Vec<u8>) -> PushOutcome {
        self.push_inner(now, packet, None)
    }

    /// [`Port::push`] for a packet its caller parsed already: `layout` is
    /// [`Layout::parse`] of these very bytes (or of bytes whose header
    /// lengths and offsets have not changed since, e.g. after
    /// [`Rwm::process_parsed`](crate::Rwm::process_parsed), which rewrites
    /// only a TCP window). The same as `push`, without parsing again; the
    /// classifier still checks the IPv4 header checksum and the TTL.
    pub fn push_parsed(&mut self, now: Instant, packet: Vec<u8>, layout: Layout) -> PushOutcome {
        self.push_inner(now, packet, Some(layout))
    }

    /// A TCP super-packet arrives ([`crate::gso`]): `gso` is its view,
    /// [`Gso::new`] of these bytes and `layout` ([`Layout::parse`] of
    /// them). It travels the port as one unit — the counters, the queue
    /// (its bytes and its segment count) and the shaper account it as its
    /// segments one by one — and departs whole from
    /// [`Port::poll_transmit_gso`], unless a stage must decide per
    /// packet. Then the port cuts it first and pushes the segments
    /// ([`Port::push_parsed`] each): an impairment stage, a queue
    /// discipline that does not take super-packets
    /// ([`QueueDiscipline::takes_gso`]: RED, FQ-CoDel), a queue without
    /// room for all its segments (drop-tail must drop exactly the segments
    /// that overflow), or a signalling stage that must see each
    /// ([`Signaller::takes_gso`]). A
    /// capacity too low to serialise it within [`gso::MAX_BURST`] cuts it
    /// into smaller super-packets that fit. On dequeue the signalling
    /// stage may cut off the segments it signals and leave the rest whole
    /// ([`Signaller::on_dequeue_gso`]).
    ///
    /// [`QueueDiscipline::takes_gso`]: crate::QueueDiscipline::takes_gso
    pub fn push_gso(
        &mut self,
        now: Instant,
        packet: Vec<u8>,
        layout: Layout,
        gso: Gso,
    ) -> GsoOutcome {
        let mut out = GsoOutcome {
            outcome: PushOutcome::Queued,
            dropped: 0,
        };
        let whole = self.impair.is_none()
            && self.queue.takes_gso()
            && self
                .signal
                .takes_gso(&Segment::with_layout(&packet, layout));
        let per_piece = if whole {
            self.burst_segments(gso, packet.len())
        } else {
            1
        };
        self.advance(now);
        let room = self.queue.len() + usize::from(gso.segments()) <= self.config.queue_limit;
        if whole && per_piece >= gso.segments() && room {
            let o = self.push_whole(now, packet, layout, gso);
            out.add(o, gso.segments());
            return out;
        }
        // Pieces that fit the burst, or (no room for all, or a stage that
        // decides per packet) single segments.
        let step = if per_piece >= 2 && room { per_piece } else { 1 };
        let mut from = 0;
        while from < gso.segments() {
            let to = from.saturating_add(step).min(gso.segments());
            let Some((piece, view)) = gso::piece(&packet, gso, from, to) else {
                break;
            };
            let parsed = Layout::parse(&piece).ok();
            let o = match (view, parsed) {
                (Some(g), Some(l))
                    if {
                        self.advance(now);
                        self.queue.len() + usize::from(g.segments()) <= self.config.queue_limit
                    } =>
                {
                    self.push_whole(now, piece, l, g)
                }
                (Some(g), _) => {
                    // No room for all of it: segment by segment.
                    for p in gso::segments(&piece, g) {
                        let o = self.push_inner(now, p, None);
                        out.add(o, 1);
                    }
                    from = to;
                    continue;
                }
                (None, l) => self.push_inner(now, piece, l),
            };
            out.add(o, to - from);
            from = to;
        }
        out
    }

    /// How many segments of a super-packet like `gso` (of `len` bytes) the
    /// link serialises within [`gso::MAX_BURST`] (at least 1).
    fn burst_segments(&self, gso: Gso, len: usize) -> u16 {
        let seg = gso.segment_len(len, 0).max(1) as u128;
        let burst =
            u128::from(self.config.capacity_bps) * gso::MAX_BURST.as_nanos() / (8 * 1_000_000_000);
        u16::try_from(burst / seg).unwrap_or(u16::MAX).max(1)
    }

    /// A super-packet enters as one unit (see [`Port::push_gso`]).
    fn push_whole(
        &mut self,
        now: Instant,
        mut packet: Vec<u8>,
        layout: Layout,
        gso: Gso,
    ) -> PushOutcome {
        let t = self.advance(now);
        let n = gso.segments();
        self.counters.packets_in += u64::from(n);
        self.counters.bytes_in += gso.wire_len(packet.len()) as u64;
        let ingress =
            classify::ingress_parsed(&mut packet, self.config.decrement_ttl, Some(layout));
        let (kind, layout) = match ingress {
            Ok((kind, Some(l))) => (kind, l),
            Ok((_, None)) | Err(Reject::Malformed) => {
                self.counters.drops_malformed += u64::from(n);
                return PushOutcome::Dropped(DropReason::Malformed);
            }
            Err(Reject::TtlExpired) => {
                self.counters.drops_ttl += u64::from(n);
                return PushOutcome::Dropped(DropReason::TtlExpired);
            }
        };
        // Each segment as the classifier would see it: an IPv4 packet's
        // RTT indicator is read from its length.
        let mut arrivals = std::mem::take(&mut self.arrivals);
        arrivals.clear();
        arrivals.extend((0..n).map(|k| {
            let len = gso.segment_len(packet.len(), k);
            let kind = match kind {
                Kind::Ipv4 { .. } => Kind::Ipv4 {
                    indicator: ka_codec::rtt::classify(len, layout.dont_frag()),
                },
                other => other,
            };
            (len, kind)
        }));
        let seg = Segment::with_layout(&packet, layout);
        self.signal
            .on_arrival_gso(t, &seg, &arrivals, &mut self.counters);
        self.arrivals = arrivals;
        let was_empty = self.queue.is_empty();
        let outcome = match self.queue.enqueue_gso(t, packet, layout, gso) {
            Verdict::Queued => PushOutcome::Queued,
            Verdict::Marked => PushOutcome::Marked,
            Verdict::Dropped(DropCause::Overflow) => PushOutcome::Dropped(DropReason::QueueFull),
            Verdict::Dropped(DropCause::Aqm) => PushOutcome::Dropped(DropReason::Aqm),
        };
        self.signal.on_queue(t, self.queue_state());
        if was_empty && !self.queue.is_empty() {
            self.shaper.idle_until(t);
            self.advance(now);
        }
        outcome
    }

    #[inline]
    fn push_inner(
        &mut self,
        now: Instant,
        mut packet: Vec<u8>,
        parsed: Option<Layout>,
    ) -> PushOutcome {
        let t = self.advance(now);
        self.counters.packets_in += 1;
        self.counters.bytes_in += packet.len() as u64;
        let ingress = classify::ingress_parsed(&mut packet, self.config.decrement_ttl, parsed);
        let (kind, layout) = match ingress {
            Ok(parsed) => parsed,
            Err(Reject::Malformed) => {
                self.counters.drops_malformed += 1;
                return PushOutcome::Dropped(DropReason::Malformed);
            }
            Err(Reject::TtlExpired) => {
                self.counters.drops_ttl += 1;
                return PushOutcome::Dropped(DropReason::TtlExpired);
            }
        };
        if kind == Kind::NonIp {
            self.counters.non_ip += 1;
            return PushOutcome::Dropped(DropReason::NotIp);
        }
        let seg = layout.map(|l| Segment::with_layout(&packet, l));
        self.signal
            .on_arrival(t, &packet, seg.as_ref(), kind, &mut self.counters);
        if packet.capacity() > packet.len().saturating_mul(2).max(SHRINK_SLACK) {
            packet.shrink_to_fit();
        }
        let was_empty = self.queue.is_empty();
        let outcome = match self.queue.enqueue_parsed(t, packet, layout) {
            Verdict::Queued => PushOutcome::Queued,
            Verdict::Marked => PushOutcome::Marked,
            Verdict::Dropped(DropCause::Overflow) => PushOutcome::Dropped(DropReason::QueueFull),
            Verdict::Dropped(DropCause::Aqm) => PushOutcome::Dropped(DropReason::Aqm),
        };
        self.signal.on_queue(t, self.queue_state());
        if was_empty && !self.queue.is_empty() {
            self.shaper.idle_until(t);
            // The link may be free right now: start sending at `t`.
            self.advance(now);
        }
        outcome
    }

    /// The next packet or fragment whose departure (end of serialisation +
    /// delay) is at or before `now`. Call repeatedly until `None`.
    ///
    /// Always a plain packet: a super-packet that departs
    /// ([`Port::push_gso`]) comes out cut into its segments, one per call
    /// ([`Port::poll_transmit_gso`] hands it out whole).
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        if !self.cut.is_empty() {
            return self.cut.pop_front();
        }
        let t = self.advance(now);
        let piece = self.delay_line.pop_ready(t)?;
        if let Some(g) = self.supers.popped() {
            self.count_out(&piece, Some(g));
            self.cut.extend(gso::segments(&piece, g));
            return self.cut.pop_front();
        }
        self.counters.packets_out += 1;
        self.counters.bytes_out += piece.len() as u64;
        Some(piece)
    }

    /// [`Port::poll_transmit`], but a super-packet departs whole, with its
    /// view (for a device that segments it: a TUN device with offloads).
    /// The counters count its segments and their bytes, as for the
    /// segments one by one.
    pub fn poll_transmit_gso(&mut self, now: Instant) -> Option<(Vec<u8>, Option<Gso>)> {
        if let Some(p) = self.cut.pop_front() {
            return Some((p, None));
        }
        let t = self.advance(now);
        let piece = self.delay_line.pop_ready(t)?;
        let gso = self.supers.popped();
        self.count_out(&piece, gso);
        Some((piece, gso))
    }

    /// Counts a piece leaving (a super-packet as its segments).
    fn count_out(&mut self, piece: &[u8], gso: Option<Gso>) {
        match gso {
            None => {
                self.counters.packets_out += 1;
                self.counters.bytes_out += piece.len() as u64;
            }
            Some(g) => {
                self.counters.packets_out += u64::from(g.segments());
                self.counters.bytes_out += g.wire_len(piece.len()) as u64;
            }
        }
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
        if !self.cut.is_empty() {
            return Some(self.clock.instant(self.now));
        }
        let deq = (!self.queue.is_empty()).then(|| self.shaper.free_at());
        let rel = self.delay_line.next_release();
        let t = match (deq, rel) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(self.clock.instant(t))
    }

    /// A lower bound of the next departure: no [`Port::poll_transmit`]
    /// returns anything before it. `None` = nothing queued or in flight.
    ///
    /// The earlier of the delay line's next release and, if packets are
    /// queued, the moment the link is free plus the propagation delay (a
    /// piece dequeued then leaves one serialisation later still; with an
    /// impairment stage, plus the least delay it can draw: `delay −
    /// jitter`, or 0 with `reorder`). With a
    /// delay it is later than [`Port::poll_timeout`]'s dequeue instants, so
    /// a driver that only forwards what departs can sleep through the
    /// dequeues: the port processes them exactly, in time order, whenever
    /// it is next advanced, and its results do not depend on when that is.
    /// Without a delay it equals [`Port::poll_timeout`].
    pub fn next_departure(&self) -> Option<Instant> {
        if !self.cut.is_empty() {
            return Some(self.clock.instant(self.now));
        }
        let min_delay = self
            .impair
            .as_ref()
            .map_or(self.delay_ns, Impairer::min_delay_ns);
        let deq = (!self.queue.is_empty()).then(|| self.shaper.free_at().saturating_add(min_delay));
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

    /// Changes the capacity C to `capacity_bps` at `now` (clamped to at
    /// least 1 bit/s): a middlebox whose aggregate controller moves the
    /// rate of its traffic aggregate (DESIGN §5.3).
    ///
    /// Everything due before `now` happens at the old C first. A piece
    /// already being serialised finishes at the old rate; every later one
    /// is serialised at the new C. The signalling stage learns the new C
    /// ([`Signaller::set_capacity`]; RCP scales R by new/old C, so the
    /// per-flow share follows the aggregate at once instead of over RCP's
    /// convergence time). The queue discipline keeps the capacity it was
    /// built with (only RED's idle-time correction reads it).
    pub fn set_capacity(&mut self, now: Instant, capacity_bps: u64) {
        let t = self.advance(now);
        let bps = capacity_bps.max(1);
        if bps == self.config.capacity_bps {
            return;
        }
        self.config.capacity_bps = bps;
        self.shaper.set_capacity(bps);
        self.signal
            .set_capacity(t, self.config.capacity_bytes_per_ms());
    }

    /// The rate the port would stamp right now (`None` in TCP mode, when R is
    /// not encodable, or without KA signalling).
    pub fn signal(&self) -> Option<Code> {
        self.signal.signal()
    }

    /// Packets in the queue now (as of the last call that advanced the
    /// port). A cheap accessor for drivers that sample it per packet;
    /// [`Port::snapshot`] has everything else.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// The queue discipline (read-only: occupancy, counters).
    pub fn queue_discipline(&self) -> &dyn QueueDiscipline {
        self.queue.as_ref()
    }

    /// The port's current mode ([`Mode::Ka`] for ports without KA
    /// signalling, whose detector never leaves KA mode).
    pub fn mode(&self) -> Mode {
        self.signal.mode()
    }

    /// The queue length (packets) at which the port enters TCP mode.
    pub fn mode_threshold(&self) -> usize {
        self.signal.mode_threshold()
    }

    /// The current average RTT d.
    pub fn rtt(&self) -> Duration {
        self.signal.rtt()
    }

    /// Queueing delays of the packets dequeued so far (enqueue to the
    /// start of their transmission), whatever the discipline.
    pub fn sojourn(&self) -> &SojournHistogram {
        &self.sojourn
    }

    /// A read-only view of counters and state.
    pub fn snapshot(&self) -> PortSnapshot {
        let r = self.signal.rate();
        let mut counters = self.counters;
        counters.mode_changes = self.signal.mode_changes();
        let qs = self.queue.stats();
        counters.drops_queue = qs.drops_overflow;
        counters.drops_aqm = qs.drops_aqm;
        counters.ecn_marks = qs.marks;
        PortSnapshot {
            rate_bytes_per_ms: r,
            rate_bps: r * 8000.0,
            signal: self.signal.signal(),
            rtt: self.signal.rtt(),
            queue_packets: self.queue.len(),
            queue_bytes: self.queue.bytes(),
            in_flight: self.delay_line.len(),
            mode: self.signal.mode(),
            counters,
        }
    }

    fn queue_state(&self) -> QueueState {
        QueueState {
            packets: self.queue.len(),
            bytes: self.queue.bytes(),
        }
    }

    /// Processes every event up to `now`; returns `now` in port time.
    fn advance(&mut self, now: Instant) -> u64 {
        let target = self.clock.ns(now).max(self.now);
        loop {
            let deq_at = (!self.queue.is_empty()).then(|| self.shaper.free_at());
            // Ties: the signalling stage's timer, then the dequeue.
            let timer = self.signal.next_timer();
            let (dequeue, t) = match deq_at {
                Some(d) if d < timer => (true, d),
                _ => (false, timer),
            };
            if t > target {
                break;
            }
            let t = t.max(self.now);
            self.now = t;
            if dequeue {
                self.dequeue(t);
            } else {
                let horizon = deq_at.map_or(target, |d| d.min(target));
                self.signal.on_timer(t, horizon, self.queue_state());
            }
        }
        self.now = target;
        target
    }

    /// The link is free at `t`: take the next packet from the discipline,
    /// let the signalling stage stamp it and put its piece(s) on the wire
    /// back to back.
    fn dequeue(&mut self, t: u64) {
        let Some((d, layout, gso)) = self.queue.dequeue_gso(t) else {
            return;
        };
        self.sojourn.record(t.saturating_sub(d.enqueued_at));
        let q = self.queue_state();
        if let Some(g) = gso {
            self.dequeue_super(t, d.packet, layout, g, q);
            return;
        }
        let (first, second) = self
            .signal
            .on_dequeue(t, d.packet, layout, q, &mut self.counters);
        self.shaper.idle_until(t);
        // Each piece on its own rather than through an iterator over both:
        // the chained iterator moved the two buffers through the stack
        // twice more per packet.
        self.transmit(first);
        if let Some(second) = second {
            self.transmit(second);
        }
    }

    /// [`Port::dequeue`] of a super-packet: the signalling stage returns
    /// its pieces (the whole, or a few segments cut off to be signalled and
    /// the rest), serialised back to back.
    #[cold]
    fn dequeue_super(
        &mut self,
        t: u64,
        packet: Vec<u8>,
        layout: Option<Layout>,
        gso: Gso,
        q: crate::signal::QueueState,
    ) {
        let mut pieces = std::mem::take(&mut self.gso_pieces);
        pieces.clear();
        self.signal
            .on_dequeue_gso(t, packet, layout, gso, q, &mut self.counters, &mut pieces);
        self.shaper.idle_until(t);
        for (piece, g) in pieces.drain(..) {
            match g {
                None => self.transmit(piece),
                Some(g) => {
                    // Whole: no impairment stage (`push_gso` cut it
                    // otherwise).
                    let end = self.shaper.send(g.wire_len(piece.len()));
                    self.supers.pushed(self.delay_line.len(), g);
                    self.delay_line
                        .push(end.saturating_add(self.delay_ns), piece);
                }
            }
        }
        self.gso_pieces = pieces;
    }

    /// Serialises one piece at C, back to back with the previous one, and
    /// puts it in the delay line (through the impairment stage, if any).
    #[inline]
    fn transmit(&mut self, piece: Vec<u8>) {
        let end = self.shaper.send(piece.len());
        match &mut self.impair {
            None => {
                self.delay_line
                    .push(end.saturating_add(self.delay_ns), piece);
            }
            Some(imp) => imp.transmit(end, piece, &mut self.delay_line, &mut self.counters),
        }
    }
}

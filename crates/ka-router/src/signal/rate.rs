//! Explicit-rate signalling: a [`RateController`] (RCP by default, DESIGN
//! §3.5) run every control interval, and a carrier that tells senders R on
//! dequeue — Kick-Ass fragments with the TCP-mode detector (DESIGN §3.4,
//! §3.6), the native-RCP IPv4 option (DESIGN §7.1), or nothing.
//!
//! See the crate docs ("Control loop") for the exact rules; this is the
//! code that implements them.

use std::time::Duration;

use ka_codec::wire::{FlowKey, Layout, Segment, SegmentMut};
use ka_codec::{Code, RateTable};

use super::every::StampTable;
use super::{Pieces, QueueState, Signaller, reverse};
use crate::classify::PacketKind;
use crate::config::{Carrier, PortConfig, QueueMeasure};
use crate::controller::packet::inspect_segment;
use crate::controller::{Measurement, PacketInfo, RateController};
use crate::gso::Gso;
use crate::judge::FlowJudge;
use crate::mode::{Mode, ModeDetector};
use crate::native;
use crate::persist::{self, PersistentQueue};
use crate::qdisc::Nanos;
use crate::stamp::{self, Skip, StampConfig, Stamped};
use crate::stats::Counters;
use crate::time::duration_ns;

mod arrive;
mod gso;

/// The first identification a port puts into the IPv6 Fragment headers it
/// inserts ("KA" in the top half); later ones count up from there
/// (wrapping; every IPv6 split takes one). Existing Fragment headers keep
/// their identification.
pub const IPV6_IDENT_START: u32 = 0x4B41_0000;

/// With a stamping interval (DESIGN §3.9), a native-RCP flow is told R
/// again before its interval is up once R has moved by this share of what
/// it was last told (KA's own step is a code, 6.45 %).
pub const RCP_REFRESH: f64 = 0.01;

/// The explicit-rate stage: controller + carrier ([`Carrier::Ka`],
/// [`Carrier::NativeRcp`] or [`Carrier::None`]).
pub struct RateSignal {
    config: PortConfig,
    /// The carrier.
    carrier: Carrier,
    capacity: f64,
    /// The controller's ceiling (see [`Measurement::max_rate`]).
    max_rate: f64,
    controller: Box<dyn RateController>,
    /// `None` if the configured scale is invalid (then nothing is stamped).
    table: Option<RateTable>,
    /// d in milliseconds.
    rtt_ms: f64,
    /// Whether an RTT sample has arrived yet (the first one replaces the
    /// configured initial d instead of moving it by the EWMA gain).
    rtt_sampled: bool,
    mode: ModeDetector,
    /// Behaviour and byte-weighted RTT of the flows (KA carrier only).
    judge: Option<FlowJudge>,
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
    /// When each flow last carried our signal, for
    /// [`PortConfig::stamp_every`] other than
    /// [`StampEvery::Packet`](crate::StampEvery::Packet) with the KA or
    /// native-RCP carrier (DESIGN §3.9); `None` otherwise.
    every: Option<StampTable>,
}

/// What the stamping interval (DESIGN §3.9) says about a dequeued packet.
enum Gate {
    /// Signal it as per-packet signalling would; record the signal for the
    /// flow, if there is one to record it for.
    Signal(Option<FlowKey>),
    /// Its flow had a signal within its interval: send it unchanged.
    Skip,
}

impl std::fmt::Debug for RateSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateSignal")
            .field("carrier", &self.carrier)
            .field("rate", &self.controller.rate())
            .field("rtt_ms", &self.rtt_ms)
            .field("mode", &self.mode.mode())
            .finish_non_exhaustive()
    }
}

impl RateSignal {
    /// The stage for a port with (sanitised) `config`, using `controller`
    /// and the carrier of `config.signalling`.
    pub fn new(config: PortConfig, controller: Box<dyn RateController>) -> Self {
        let rtt_ms = config.initial_rtt.as_secs_f64() * 1e3;
        let table = RateTable::new(&config.scale).ok();
        let capacity = config.capacity_bytes_per_ms();
        let carrier = config.signalling.carrier();
        let every = (!config.stamp_every.is_packet()
            && matches!(carrier, Carrier::Ka | Carrier::NativeRcp))
        .then(|| StampTable::new(config.stamp_every, config.stamp_slots, config.seed));
        let max_rate = match (&table, carrier) {
            (Some(t), Carrier::Ka) => rate_ceiling(t, capacity),
            _ => capacity,
        };
        let mut s = Self {
            carrier,
            capacity,
            max_rate,
            controller,
            table,
            rtt_ms,
            rtt_sampled: false,
            mode: ModeDetector::new(&config.mode, config.queue_limit),
            judge: (carrier == Carrier::Ka).then(|| {
                FlowJudge::new(
                    config.seed,
                    config.mode.behaviour,
                    duration_ns(config.initial_rtt),
                )
            }),
            last_tick: 0,
            next_tick: 0,
            arrived: 0,
            persistent: PersistentQueue::default(),
            calm_rate: 0.0,
            ident6: IPV6_IDENT_START,
            dither_acc: 0.0,
            queue_target_bytes: (config.rcp.queue_target.as_secs_f64() * 1e3 * capacity) as usize,
            every,
            config,
        };
        s.next_tick = s.control_interval_ns();
        s.calm_rate = s.controller.rate();
        s
    }

    fn is_ka(&self) -> bool {
        self.carrier == Carrier::Ka
    }

    fn rtt_ns(&self) -> u64 {
        // `as` saturates; d ≥ 1 µs by sanitising, EWMA keeps it positive.
        (self.rtt_ms * 1e6) as u64
    }

    /// A queue this short (a tenth of the TCP-mode threshold) counts as
    /// "short" for [`RateSignal::mode_on_queue`].
    fn calm_queue(&self) -> usize {
        self.mode.threshold() / 10
    }

    /// T = min(d, max_interval), at least 1 ns.
    fn control_interval_ns(&self) -> u64 {
        self.rtt_ns()
            .min(duration_ns(self.config.rcp.max_interval))
            .max(1)
    }

    /// When TCP mode's hold ends (KA carrier only).
    fn mode_at(&self) -> Option<u64> {
        if self.is_ka() {
            self.mode.expiry(self.rtt_ns())
        } else {
            None
        }
    }

    /// The control interval ending at `t`, plus every further interval up to
    /// the next other event (or `horizon`), which all see the same
    /// measurement: nothing arrives during `advance`, and the queue only
    /// changes at dequeues.
    fn tick(&mut self, t: u64, horizon: u64, mode_at: Option<u64>, q: QueueState) {
        let frozen = self.is_ka() && self.mode.mode() == Mode::Tcp;
        let interval = t.saturating_sub(self.last_tick).max(1);
        let rtt = self.rtt();
        let step = self.control_interval_ns();
        // Intervals in one RTT (the persistent queue's window).
        let window = usize::try_from(self.rtt_ns().div_ceil(step)).unwrap_or(usize::MAX);
        let persistent = self.persistent.end_interval(q.bytes, window);
        let mut m = Measurement {
            interval: Duration::from_nanos(interval),
            rtt,
            capacity: self.capacity,
            max_rate: self.max_rate,
            input_rate: self.arrived as f64 / (interval as f64 / 1e6),
            queue_bytes: match self.config.rcp.queue_measure {
                QueueMeasure::Now => q.bytes,
                QueueMeasure::Persistent => persistent,
            }
            .saturating_sub(self.queue_target_bytes),
        };
        if !frozen {
            self.controller.on_interval(&m);
            let bound = self.fair_share_floor();
            let rtt_ns = self.rtt_ns();
            self.mode.on_floor(t, bound, rtt_ns);
            if q.packets <= self.calm_queue() {
                self.calm_rate = self.controller.rate();
            }
        }
        self.arrived = 0;
        self.last_tick = t;
        let mut limit = horizon;
        if let Some(md) = mode_at {
            limit = limit.min(md.saturating_sub(1));
        }
        let n = limit.saturating_sub(t) / step;
        // Only while in TCP mode can the idle intervals end it (foreign
        // traffic gone): then process them one at a time so the change
        // lands in the right interval.
        let tcp_mode = self.is_ka() && self.mode.mode() == Mode::Tcp;
        let n = if tcp_mode { n.min(1) } else { n };
        // A standing queue (a link slower than one packet per interval) makes
        // the persistent queue change from interval to interval as the
        // window slides: take those intervals one tick at a time.
        let n = if q.packets == 0 { n } else { 0 };
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
                if q.packets <= self.calm_queue() {
                    self.calm_rate = self.controller.rate();
                }
            }
            self.last_tick = t + n * step;
        }
        if self.is_ka() {
            self.mode
                .on_interval(interval, n.saturating_mul(step), self.rtt_ns());
        }
        let mut step = step;
        let rtt_ns = self.rtt_ns();
        let rate = self.controller.rate();
        if let Some(judge) = self.judge.as_mut() {
            let span = interval.saturating_add(n.saturating_mul(step));
            let d = judge.on_interval(t, span, rtt_ns, rate);
            if let Some(ms) = d.filter(|_| self.rtt_sampled) {
                self.rtt_ms = ms;
                step = self.control_interval_ns();
            }
        }
        self.next_tick = self.last_tick.saturating_add(step);
    }

    /// While foreign traffic takes a share of the arrivals (the mode
    /// detector's floor), R is kept at least at the TCP-fair share `C / n`
    /// of the `n` flows the judge saw in the last window (DESIGN §3.6.1).
    /// Returns whether the floor held R up (RCP alone went below it).
    fn fair_share_floor(&mut self) -> bool {
        let Some(judge) = self.judge.as_ref() else {
            return false;
        };
        if !self.mode.floor() || !judge.any_ka() {
            return false;
        }
        let floor = (self.capacity / f64::from(judge.active_flows())).min(self.max_rate);
        if self.controller.rate() < floor {
            self.controller.restore(floor);
            return true;
        }
        false
    }

    /// An RTT sample of `ms` milliseconds arrived at `t` (an indicator, or
    /// a native-RCP option): the first one sets d, later ones move it by
    /// the EWMA gain. If d shrank so far that the control interval now in
    /// progress is longer than T = min(d, max_interval), the interval ends
    /// at `last_tick + T` (or now, if that has passed) instead of waiting
    /// out the interval the old d chose. See the crate docs ("Small RTTs").
    fn rtt_sample(&mut self, t: u64, ms: f64) {
        if self.rtt_sampled {
            self.rtt_ms += self.config.rcp.rtt_gain * (ms - self.rtt_ms);
        } else {
            self.rtt_ms = ms;
            self.rtt_sampled = true;
        }
        let due = self
            .last_tick
            .saturating_add(self.control_interval_ns())
            .max(t);
        if due < self.next_tick {
            self.next_tick = due;
        }
    }

    /// The mode detector sees the queue length now; on entering TCP mode R
    /// is frozen at the value it had while the queue was last short.
    fn mode_on_queue(&mut self, t: u64, len: usize) {
        let before = self.mode.mode();
        self.mode.on_queue(t, len);
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
    fn dither(&mut self, code: Code, r: f64, counters: &mut Counters) -> Code {
        let Some(table) = self.table.as_ref() else {
            return code;
        };
        let Some(hi_code) = self.config.scale.next_code(code) else {
            return code;
        };
        let (lo, hi) = (table.decode(code), table.decode(hi_code));
        if !(r > lo && hi > lo) {
            return code;
        }
        let p = ((1.0 / lo - 1.0 / r) / (1.0 / lo - 1.0 / hi)).clamp(0.0, 1.0);
        self.dither_acc += p;
        if self.dither_acc >= 1.0 {
            self.dither_acc -= 1.0;
            counters.dithered_up += 1;
            hi_code
        } else {
            code
        }
    }

    /// The rate `packet` (`seg`: its parse, `None` if it is not IP), leaving
    /// at `t`, carries: R, or what the controller picks for this packet if
    /// it looks at packets ([`RateController::rate_for`]), asked only for
    /// packets that can carry a signal.
    fn egress_rate(&mut self, t: Nanos, packet: &[u8], seg: Option<&Segment<'_>>) -> f64 {
        if self.controller.wants_packets() {
            let info = packet_info(packet, seg);
            // A KA signal needs payload to split and DF clear; native RCP
            // writes into the option, which SYNs carry too.
            let carries = match self.carrier {
                Carrier::Ka => {
                    let df = seg.is_some_and(|s| s.dont_frag());
                    !df && info.tcp.is_some_and(|t| t.payload > 0)
                }
                _ => true,
            };
            if carries {
                return self.controller.rate_for(Duration::from_nanos(t), &info);
            }
        }
        self.controller.rate()
    }

    /// The KA code for rate `r` (`None` in TCP mode, without the KA
    /// carrier, or when `r` is not encodable).
    fn signal_at(&self, r: f64) -> Option<Code> {
        if !self.is_ka() || self.mode.mode() == Mode::Tcp {
            return None;
        }
        self.table.as_ref()?.encode(r)
    }

    /// The stamping interval's verdict on a packet leaving at `t` (DESIGN
    /// §3.9). Without a table, or for packets the carrier cannot signal
    /// anyway, [`Gate::Signal`] with nothing to record. Otherwise signalled
    /// whatever the table says: a SYN (and the flow is forgotten, so the
    /// first data packet of the connection is signalled too); a packet that
    /// already carries an upstream router's signal (`upstream`: a KA leading
    /// fragment, an RCP option below "unlimited"), which must come out with
    /// the path minimum; a packet whose flow would be told something else
    /// than it was last told ([`RateSignal::stale`]; controllers without
    /// per-packet rates). Else the table decides: the flow's first packet,
    /// or its last signal at least an interval ago.
    fn gate(&mut self, t: Nanos, seg: &Segment<'_>, upstream: bool) -> Gate {
        let Some(table) = self.every.as_mut() else {
            return Gate::Signal(None);
        };
        let Some(key) = seg.flow_key() else {
            return Gate::Signal(None);
        };
        if upstream {
            return Gate::Signal(Some(key));
        }
        if seg
            .tcp_flags()
            .is_some_and(|f| f & ka_codec::wire::tcp::SYN != 0)
        {
            table.forget(&key);
            return Gate::Signal(Some(key));
        }
        let d = (self.rtt_ms * 1e6) as u64;
        if table.due(t, &key, d) {
            return Gate::Signal(Some(key));
        }
        if !self.controller.wants_packets()
            && let Some(told) = table.last_told(&key)
            && self.stale(told)
        {
            return Gate::Signal(Some(key));
        }
        Gate::Skip
    }

    /// Whether a flow last told `told` B/ms would be told something else
    /// now: KA, another code (before dithering); native RCP, a rate that
    /// differs by at least [`RCP_REFRESH`] of `told`.
    fn stale(&self, told: f64) -> bool {
        let r = self.controller.rate();
        match self.carrier {
            // `told` is a code's rate kept to f32 precision (a relative
            // error below 1e-7): nudged up by 1e-6, far less than the 6.45 %
            // between codes, it encodes to that code again.
            Carrier::Ka => self
                .table
                .as_ref()
                .is_some_and(|tb| tb.encode(r) != tb.encode(told * (1.0 + 1e-6))),
            _ => (r - told).abs() >= RCP_REFRESH * told,
        }
    }

    /// Per-packet signalling on dequeue: the classifier's parse (`parsed`,
    /// if the queue discipline kept it) or one parse here serves the
    /// controller, the carrier and stamping.
    fn egress(
        &mut self,
        t: Nanos,
        mut packet: Vec<u8>,
        parsed: Option<Layout>,
        counters: &mut Counters,
    ) -> Pieces {
        // The classifier's parse, or the one parse here.
        let parse = |packet: &[u8]| parsed.map_or_else(|| Layout::parse(packet), Ok);
        match self.carrier {
            Carrier::None | Carrier::Xcp => (packet, None),
            Carrier::NativeRcp => {
                let Ok(layout) = parse(&packet) else {
                    // Not IP: no option to lower.
                    let _ = self.egress_rate(t, &packet, None);
                    return (packet, None);
                };
                let seg = Segment::with_layout(&packet, layout);
                let key = if self.every.is_some() {
                    match native::rcp_rate_of(&seg) {
                        // No option: nothing to lower, nothing to track.
                        None => None,
                        Some(rate) => match self.gate(t, &seg, rate != u32::MAX) {
                            Gate::Skip => {
                                counters.signals_skipped += 1;
                                return (packet, None);
                            }
                            Gate::Signal(key) => key,
                        },
                    }
                } else {
                    None
                };
                let r = self.egress_rate(t, &packet, Some(&seg));
                let rate = native::bytes_per_sec(r);
                if native::lower_rcp_option_in(
                    &mut SegmentMut::with_layout(&mut packet, layout),
                    rate,
                ) {
                    counters.rcp_options_lowered += 1;
                    if let (Some(key), Some(table)) = (key, self.every.as_mut()) {
                        table.signalled(t, &key, r);
                    }
                }
                (packet, None)
            }
            Carrier::Ka => {
                if self.mode.mode() == Mode::Tcp {
                    return (packet, None);
                }
                let layout = parse(&packet);
                let seg = layout.ok().map(|l| Segment::with_layout(&packet, l));
                // Only a packet the stamper could split (DF clear, the
                // leading piece) goes through the stamping interval.
                let key = match &seg {
                    Some(sg)
                        if self.every.is_some() && !sg.dont_frag() && sg.frag_offset() == 0 =>
                    {
                        match self.gate(t, sg, sg.is_leading_fragment()) {
                            Gate::Skip => {
                                counters.signals_skipped += 1;
                                return (packet, None);
                            }
                            Gate::Signal(key) => key,
                        }
                    }
                    _ => None,
                };
                let r = self.egress_rate(t, &packet, seg.as_ref());
                let Some(code) = self.signal_at(r) else {
                    return (packet, None);
                };
                // What the flow is told before dithering: the code's rate
                // (kept only when the stamping table tracks the flow).
                let told = match (&key, self.table.as_ref()) {
                    (Some(_), Some(tb)) => tb.decode(code),
                    _ => 0.0,
                };
                // The dither's state before this packet: a packet that
                // leaves unstamped (DF set, no room, not IP) carries no
                // code, and must not use up a step of the sigma-delta
                // (DESIGN §3.4, "Dithering"); else the stamped packets
                // between such packets see a biased share of the next code
                // up (with DF-set and stamped packets alternating at
                // p = ½, every stamped one got the code up).
                let undo = (self.dither_acc, counters.dithered_up);
                let code = if self.config.dither {
                    self.dither(code, r, counters)
                } else {
                    code
                };
                let sc = StampConfig {
                    scale: self.config.scale,
                    saturate_min_payload: self.config.saturate_min_payload,
                };
                let stamped = match (ka_codec::wire::ip_version(&packet), layout) {
                    (Some(4), Ok(l)) => stamp::stamp_ipv4_parsed(&sc, packet, &l, code),
                    // Not parsable: counted as unstampable.
                    (Some(4), Err(_)) => stamp::stamp_ipv4_with(&sc, packet, code),
                    (Some(6), l) if self.config.ipv6_signal => {
                        let s = match l {
                            Ok(l) => stamp::stamp_ipv6_parsed(&sc, packet, &l, code, self.ident6),
                            Err(_) => stamp::stamp_ipv6_with(&sc, packet, code, self.ident6),
                        };
                        if s.is_split() {
                            self.ident6 = self.ident6.wrapping_add(1);
                        }
                        s
                    }
                    _ => {
                        (self.dither_acc, counters.dithered_up) = undo;
                        return (packet, None);
                    }
                };
                match stamped {
                    Stamped::Split(..) => {
                        counters.fragments_made += 1;
                        if let (Some(key), Some(table)) = (key, self.every.as_mut()) {
                            table.signalled(t, &key, told);
                        }
                    }
                    Stamped::Untouched(_, skip) => {
                        (self.dither_acc, counters.dithered_up) = undo;
                        if skip == Skip::Unparsable {
                            counters.unstampable += 1;
                        }
                    }
                }
                stamped.into_pieces()
            }
        }
    }
}

impl Signaller for RateSignal {
    fn on_arrival(
        &mut self,
        t: Nanos,
        packet: &[u8],
        seg: Option<&Segment<'_>>,
        kind: PacketKind,
        counters: &mut Counters,
    ) {
        self.arrive(t, packet.len(), packet, seg, kind, counters);
    }

    fn takes_gso(&self, seg: &Segment<'_>) -> bool {
        self.gso_whole(seg)
    }

    fn on_arrival_gso(
        &mut self,
        t: Nanos,
        seg: &Segment<'_>,
        arrivals: &[(usize, PacketKind)],
        counters: &mut Counters,
    ) {
        for &(len, kind) in arrivals {
            self.arrive(t, len, seg.bytes(), Some(seg), kind, counters);
        }
    }

    fn on_dequeue_gso(
        &mut self,
        t: Nanos,
        packet: Vec<u8>,
        layout: Option<Layout>,
        gso: Gso,
        q: QueueState,
        counters: &mut Counters,
        out: &mut Vec<(Vec<u8>, Option<Gso>)>,
    ) {
        self.dequeue_gso(t, (packet, layout, gso), q, counters, out);
    }

    fn on_queue(&mut self, t: Nanos, q: QueueState) {
        if self.is_ka() {
            self.mode_on_queue(t, q.packets);
        }
    }

    fn next_timer(&self) -> Nanos {
        // Ties: mode expiry before the tick.
        match self.mode_at() {
            Some(m) => m.min(self.next_tick),
            None => self.next_tick,
        }
    }

    fn on_timer(&mut self, t: Nanos, horizon: Nanos, q: QueueState) {
        let mode_at = self.mode_at();
        if mode_at.is_some_and(|m| m <= self.next_tick) {
            self.mode.expire();
        } else {
            self.tick(t, horizon, mode_at, q);
        }
    }

    fn on_dequeue(
        &mut self,
        t: Nanos,
        packet: Vec<u8>,
        layout: Option<Layout>,
        q: QueueState,
        counters: &mut Counters,
    ) -> Pieces {
        self.persistent.observe(q.bytes);
        if self.is_ka() {
            self.mode_on_queue(t, q.packets);
        }
        self.egress(t, packet, layout, counters)
    }

    /// C, the ceiling and the queue target follow the new capacity; R
    /// (and the R remembered for TCP mode) are scaled by new/old C, so the
    /// share each flow is told changes with the capacity at once. The
    /// controller clamps R to its bounds at the next interval.
    fn set_capacity(&mut self, _t: Nanos, capacity: f64) {
        if !(capacity.is_finite() && capacity > 0.0) {
            return;
        }
        let old = self.capacity;
        self.capacity = capacity;
        self.max_rate = match (&self.table, self.carrier) {
            (Some(t), Carrier::Ka) => rate_ceiling(t, capacity),
            _ => capacity,
        };
        self.queue_target_bytes =
            (self.config.rcp.queue_target.as_secs_f64() * 1e3 * capacity) as usize;
        if old > 0.0 {
            let f = capacity / old;
            self.controller.restore(self.controller.rate() * f);
            self.calm_rate *= f;
        }
    }

    fn wants_reverse(&self) -> bool {
        self.controller.wants_reverse() && matches!(self.carrier, Carrier::Ka | Carrier::NativeRcp)
    }

    /// Lowers the KA-Rate / RCP-Echo of a reverse-direction segment to
    /// what the controller says ([`RateController::on_reverse`]); the
    /// controller sees every reverse TCP segment (its connection is
    /// echoed), and only echoes of this port's carrier are lowered, and
    /// for KA only in KA mode. A KA echo gets the code of the rate,
    /// dithered between the two codes around it (each echo holds until the
    /// flow's next ACK, so the codes told average the rate).
    fn on_reverse(
        &mut self,
        t: Nanos,
        packet: &mut SegmentMut<'_>,
        counters: &mut Counters,
    ) -> bool {
        if !self.wants_reverse() {
            return false;
        }
        let Some(seg) = reverse::of_segment(&packet.as_segment()) else {
            return false;
        };
        let echo = match (seg.echo, self.carrier) {
            (Some(reverse::Echo::Ka { code, .. }), Carrier::Ka) if self.mode.mode() == Mode::Ka => {
                let table = self.table.as_ref();
                self.config
                    .scale
                    .code_from_wire(code)
                    .and_then(|c| table.map(|tb| tb.decode(c)))
            }
            (Some(reverse::Echo::Rcp { rate, .. }), Carrier::NativeRcp) => {
                Some(f64::from(rate) / 1000.0)
            }
            _ => None,
        };
        let Some(r) = self
            .controller
            .on_reverse(Duration::from_nanos(t), &seg.flow, echo)
        else {
            return false;
        };
        if echo.is_none() {
            return false;
        }
        let changed = match seg.echo {
            Some(reverse::Echo::Ka { at, code }) => {
                let Some(c) = self.table.as_ref().and_then(|tb| tb.encode(r)) else {
                    return false;
                };
                let w = self.dither(c, r, counters).wire();
                w < code && reverse::write(packet.bytes_mut(), seg.tcp_at, at + 4, &[w])
            }
            Some(reverse::Echo::Rcp { at, rate }) => {
                let new = native::bytes_per_sec(r);
                new < rate
                    && reverse::write(packet.bytes_mut(), seg.tcp_at, at + 4, &new.to_be_bytes())
            }
            None => false,
        };
        if changed {
            counters.echoes_lowered += 1;
        }
        changed
    }

    fn rate(&self) -> f64 {
        self.controller.rate()
    }

    fn signal(&self) -> Option<Code> {
        self.signal_at(self.controller.rate())
    }

    fn rtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms.max(0.0) / 1e3)
    }

    fn mode(&self) -> Mode {
        self.mode.mode()
    }

    fn mode_changes(&self) -> u64 {
        self.mode.changes()
    }

    fn mode_threshold(&self) -> usize {
        self.mode.threshold()
    }
}

/// The stamping interval (ns) of a flow that announced RTT indicator `k`
/// (DESIGN §2.2, §3.9): the bottom of its range, 2^k ms, so the interval
/// never exceeds the srtt the sender announced; for k = 0 (RTT < 2 ms),
/// whose range has no positive bottom, 1 ms, the value d takes from it.
/// A sender below 1 ms then hears its signal less often than once per
/// srtt, and its silence rule allows for it (`K0_STAMP_INTERVAL_NS` is
/// below the 2 ms the sender waits at least while its signals come
/// sparsely, DESIGN §6.3). With 0 here such flows were signalled on every
/// packet: a ka-endpoint pair on one host (RTT ~0.1 ms) got 0.30× Linux's
/// goodput with `--stamp-every rtt` against 0.52× with `1ms`.
fn indicator_floor_ns(k: u8) -> u64 {
    if k == 0 {
        K0_STAMP_INTERVAL_NS
    } else {
        (1_u64 << k.min(11)) * 1_000_000
    }
}

/// The stamping interval of a flow that announced k = 0 (RTT < 2 ms).
pub(crate) const K0_STAMP_INTERVAL_NS: u64 = 1_000_000;

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

/// What a controller that looks at packets is shown of `packet`: its parse's
/// facts, or only its length if it is not IP (`seg` is `None`).
fn packet_info(packet: &[u8], seg: Option<&Segment<'_>>) -> PacketInfo {
    match seg {
        Some(seg) => inspect_segment(seg),
        None => PacketInfo {
            len: packet.len(),
            tcp: None,
        },
    }
}

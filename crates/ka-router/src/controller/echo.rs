//! [`Echo`]: an explicit-rate controller that tells senders their rate on
//! the ACKs coming back through the router, not only on the data going
//! out, so that what it says acts at once instead of one RTT later.
//!
//! # Why
//!
//! A rate stamped on a data packet reaches its sender one round trip later
//! (receiver, echo, sender). Every explicit-rate router of the paper's
//! family therefore decides each flow's rate an RTT ahead of time, and at
//! light load that is the flash-crowd problem (seed `xcp-vs-rcp.txt` §4.3):
//! newcomers that start within one RTT all get R ≈ C. [`Crowd`](super::Crowd)
//! bounds the crowd by reserving room for newcomers, and pays for it at
//! Fig. 3's load: whatever the others give up for a newcomer that turns out
//! short is idle for an RTT (its module docs, "Light load"; mean FCT of
//! flows of 1000+ packets 1.5× the paper RCP's).
//!
//! A router that forwards both directions of a connection (an access
//! router, a middlebox, the paper's testbed router) also sees the ACKs, and
//! they carry the echo: KA-Rate (DESIGN §3.3) or RCP-Echo (§3.4). Lowering
//! the echo as the ACK passes changes the sender's rate after only the
//! router–sender round trip — nothing at all when the router sits next to
//! the senders, as in the paper's dumbbell. That is the backward path of
//! ATM ABR, whose switches may lower the explicit rate in backward RM cells
//! for the same reason. The port does it in [`Port::on_reverse`](crate::Port::on_reverse):
//! `echo ← min(echo, rate)` with `rate` from [`Echo`]; the TCP checksum is
//! patched incrementally (RFC 1624). A router only ever lowers an echo, so
//! other routers' rates still win.
//!
//! # Rules
//!
//! The controller follows TCP connections from the SYN (or the first data
//! packet) in a bounded table. A connection is *echoed* once a packet of its
//! reverse direction has passed the router. For an echoed connection whose
//! echo was lowered within the last `2d`, the data packets carry the port's
//! ceiling (the code above C): the echo then carries the other routers'
//! minimum, and the rate the sender paces at is decided when its ACK
//! passes. Other connections are stamped on the data, as by
//! [`Crowd`](super::Crowd) without reservations.
//!
//! Each connection is
//!
//! * **announced** from its SYN until it *starts*: the first echo that
//!   passes back (KA: the ACK of its first data segment; native RCP: the
//!   SYN-ACK);
//! * **young** from its start for half an RTT: it was told its grant `g`
//!   and paces at `g` until its own ACKs of that paced data return, about
//!   an RTT later (the ACKs of its first flight come back at once and
//!   change nothing);
//! * **settled** from its first echo after that: each of its ACKs tells it
//!   the current R, so its rate follows R within the spacing of its ACKs.
//!
//! With A₀ = C − (non-TCP traffic), Y = the sum of the young flows' grants,
//! L = the settled flows limited elsewhere (their echo arrives below R,
//! lowered by another router) with rates ΣL, and N the other settled flows
//! (plus unfollowed TCP traffic counted RCP's way, its rate over R, and,
//! when they are a crowd, the announced connections not yet echoed, so
//! that connections told on their data start at their share):
//!
//! ```text
//! R = (κ·A₀ − ΣL − Y) / max(1, N)
//! g = min(share, room)   share = κ·A₀ / (1 + N + |L| + young + crowd)
//!                        room  = κ·A₀ − Y
//! ```
//!
//! `g` is further capped by the newcomer's own echo (another router's
//! rate). Settled flows can be cut at once; young ones cannot, so a
//! newcomer gets its fair share among everybody, as long as the young
//! grants leave room for it; if not, it gets a floor `b/(4(1 + young))`
//! with `b = floor_budget · C/d` (as in Crowd: the floors of any crowd add
//! up to about `b·H(n)/4`). `crowd` is the number of other announced
//! connections that are already echoed (about to start) when they are more
//! than twice the usual number plus four: a crowd of 64 starting together
//! gets C/64 each from the first grant; at ordinary arrival rates newcomers
//! get the share among the flows that are sending.
//!
//! κ follows RCP's law once per control interval (DESIGN §4.3; α, β, T, d
//! as configured, the linear or exponential update as [`RcpConfig::update`](crate::RcpConfig)
//! says), clamped to `[R_min/C, R_ceiling/C]`, and to at most
//! [`EchoConfig::target`] while two or more settled flows keep the link at
//! least 95 % busy. When a newcomer starts while others are sending, κ ≤ 1
//! first.
//!
//! The KA code of R is dithered between the two codes around it (the
//! port's sigma-delta, [`PortConfig::dither`](crate::PortConfig)) on every
//! echo the port lowers: each echo holds until the flow's next ACK, so the
//! codes told average R and all flows get the same share.
//!
//! # Equilibrium and stability
//!
//! With a fixed set of N long flows Y = 0 and R = κ·A₀/N: every flow is
//! told the same R within one ACK spacing, and κ settles where RCP's law
//! puts it (y = C, q = 0) or at `target` (y = target·C) on a busy link.
//! The target is below 1 because the port's work is above the arrivals:
//! a KA split adds a 20-byte header to a 1500-byte packet, so κ = 0.98
//! already loads the link to 99.3 %, and the packet trains of paced flows
//! need a little slack to keep the queue at a few packets (Fig. 2 with
//! this controller: queue under 10 packets in every 100 ms bin once the
//! flows settle). Between flow events R is proportional to κ, whose
//! update is RCP's, so the loop is RCP's loop; the feed-forward terms (N,
//! L, Y) change at flow events and move R in steps to the new fair share.
//! What the echo adds is delay: none. A settled flow's rate follows R
//! within the spacing of its own ACKs (two packets at its rate with
//! delayed ACKs), so R can follow the population exactly.
//!
//! # What a lone new flow pays
//!
//! Nothing: on an idle port N = Y = 0, so g = κ·A₀, the whole link (κ at
//! its ceiling), from its first echo on, exactly as with [`Rcp`](super::Rcp).
//!
//! # A crowd
//!
//! 64 flows starting within 10 ms on an idle link: their SYN-ACKs pass
//! before any of them starts, so at the first start 63 others are announced
//! and echoed — a crowd — and every grant is κ·A₀/64. The queue stays at a
//! few dozen packets and every flow is at C/64 from its second RTT
//! (`ka-sim paper fig3-crowd`, and `tests/echo_port.rs`).
//!
//! # Light load
//!
//! At Fig. 3's load (30 %, four newcomers per RTT, three in four short) the
//! router no longer has to bet on newcomers' sizes: a newcomer takes its
//! share when it starts, the settled flows make room at that moment, and
//! when it finishes they get the room back at its FIN. Measured with
//! `ka-sim paper fig3-crowd` (KA, seeds 1–3): queue 99th percentile 62 /
//! 63 / 58 packets, no drops, and mean FCT within 5.1 % of the paper RCP's
//! in every size bucket (docs/RESULTS.md, "Flash crowds").
//!
//! # Limits
//!
//! * It needs the ACKs. A connection whose ACKs do not pass this router
//!   (asymmetric routing) is stamped on its data packets: R for settled
//!   connections, the newcomer's share at its first packets, without
//!   Crowd's reservations, so newcomers on such paths can overshoot as with
//!   RCP. Use [`Crowd`](super::Crowd) where the router sees one direction
//!   only.
//! * The gain is the part of the RTT between the router and the senders
//!   that it saves: all of it next to the senders, about half in the
//!   middle of the path, nothing next to the receivers.
//! * It edits a TCP option in ACKs: an end-to-end integrity check over TCP
//!   options (TCP-AO, IPsec) would see the change. KA's own signal, the
//!   fragment length, is untouched.
//! * At most [`EchoConfig::max_flows`] connections are followed (default
//!   [`DEFAULT_MAX_FLOWS`](super::crowd::DEFAULT_MAX_FLOWS), under 100
//!   bytes each); beyond it new connections are counted RCP's way. SYNs of
//!   connections that never start expire after 3 RTTs; connections quiet
//!   for `max(3T, 2d, 4 packets at their rate)` are dropped. The table is a
//!   `BTreeMap` (no hash an attacker could collide; runs repeat exactly).

use std::collections::BTreeMap;
use std::time::Duration;

use super::kappa::{self, Ewma};
use super::packet::{FlowKey, PacketInfo};
use super::{Measurement, RateController};
use crate::config::RcpConfig;

/// A full-size packet, bytes (for idle timeouts).
const MTU: f64 = 1500.0;
/// Time constant of the rate estimates of unfollowed traffic.
const Y_TAU: Duration = Duration::from_millis(10);
/// With two or more settled flows and at least this share of C arriving,
/// κ stays at or below [`EchoConfig::target`].
const FULL_LOAD: f64 = 0.95;
/// Gain of the usual number of waiting connections at a start.
const GAIN: f64 = 1.0 / 16.0;
/// An echo below this share of the port's ceiling was lowered by another
/// router.
const ELSEWHERE: f64 = 0.99;

/// Knobs of [`Echo`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EchoConfig {
    /// The queue that newcomers which find no room may build, as time at C
    /// (see [`Echo`], "Rules"). Default 8 ms.
    pub floor_budget: Duration,
    /// Connections followed at most. Default
    /// [`DEFAULT_MAX_FLOWS`](super::crowd::DEFAULT_MAX_FLOWS).
    pub max_flows: usize,
    /// κ's ceiling while two or more settled flows keep the link busy (see
    /// [`Echo`], "Equilibrium"). Default 0.98.
    pub target: f64,
}

impl Default for EchoConfig {
    fn default() -> Self {
        Self {
            floor_budget: Duration::from_millis(8),
            max_flows: super::crowd::DEFAULT_MAX_FLOWS,
            target: 0.98,
        }
    }
}

impl EchoConfig {
    /// Checks the knobs: `max_flows` ≥ 1, `target` in (0, 1].
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.max_flows == 0 {
            return Err("echo max_flows");
        }
        if !(self.target > 0.0 && self.target <= 1.0) {
            return Err("echo target");
        }
        Ok(())
    }
}

/// Counters of an [`Echo`] controller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EchoStats {
    /// Connections started (first echo).
    pub starts: u64,
    /// Starts that got the floor.
    pub floor_starts: u64,
    /// Echoes the controller gave a rate for.
    pub echoes: u64,
    /// Connections not followed because the table was full.
    pub overflow: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// SYN seen; not started.
    Announced { at: Duration },
    /// Started at `since` with grant `g`.
    Young { since: Duration, g: f64 },
    /// Its ACKs tell it R.
    Settled,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Flow {
    phase: Phase,
    /// Its last packet (either direction).
    last: Duration,
    /// The last rate it was told (B/ms).
    told: f64,
    /// A packet of its reverse direction has passed.
    echoed: bool,
    /// When its echo was last lowered (given a rate).
    echo_at: Option<Duration>,
    /// The rate its echo carried before this router (another router's),
    /// if below the ceiling.
    path: f64,
}

/// The echo controller (see the module docs).
#[derive(Debug, Clone)]
pub struct Echo {
    cfg: EchoConfig,
    rcp: RcpConfig,
    capacity: f64,
    hi: f64,
    kappa: f64,
    rtt: Duration,
    now: Duration,
    ticks: Duration,
    interval: Duration,
    map: BTreeMap<FlowKey, Flow>,
    /// Announced connections, and those of them whose reverse direction
    /// has been seen (about to start).
    announced: usize,
    waiting: usize,
    /// Usual number of other waiting connections at a start.
    usual: f64,
    /// The end of the current crowd episode (see [`Echo::start`]).
    crowd_until: Option<Duration>,
    young: usize,
    young_g: f64,
    settled: usize,
    /// Settled flows limited elsewhere and the sum of their rates, as of
    /// the last sweep.
    limited: usize,
    limited_sum: f64,
    y_nontcp: Ewma,
    y_untracked: Ewma,
    rate: f64,
    stats: EchoStats,
}

impl Echo {
    /// A controller for a link of `capacity` B/ms, with RCP's α, β and
    /// R_min from `rcp`. Out-of-range knobs are clamped.
    pub fn new(cfg: EchoConfig, rcp: RcpConfig, capacity: f64) -> Self {
        let capacity = if capacity.is_finite() && capacity > 0.0 {
            capacity
        } else {
            0.0
        };
        let target = if cfg.target > 0.0 && cfg.target <= 1.0 {
            cfg.target
        } else {
            EchoConfig::default().target
        };
        let mut s = Self {
            cfg: EchoConfig {
                max_flows: cfg.max_flows.max(1),
                target,
                ..cfg
            },
            rcp,
            capacity,
            hi: capacity,
            kappa: 1.0,
            rtt: Duration::from_millis(100),
            now: Duration::ZERO,
            ticks: Duration::ZERO,
            interval: Duration::from_millis(10),
            map: BTreeMap::new(),
            announced: 0,
            waiting: 0,
            usual: 0.0,
            crowd_until: None,
            young: 0,
            young_g: 0.0,
            settled: 0,
            limited: 0,
            limited_sum: 0.0,
            y_nontcp: Ewma::default(),
            y_untracked: Ewma::default(),
            rate: capacity,
            stats: EchoStats::default(),
        };
        s.refresh();
        s
    }

    /// The knobs.
    pub fn config(&self) -> &EchoConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> EchoStats {
        self.stats
    }

    /// Connections followed now.
    pub fn followed(&self) -> usize {
        self.map.len()
    }

    fn lo(&self) -> f64 {
        self.rcp.min_rate.min(self.capacity)
    }

    fn clamp(&self, r: f64) -> f64 {
        let lo = self.lo();
        if r.is_nan() {
            return lo;
        }
        r.clamp(lo, self.hi.max(lo))
    }

    fn d_ms(&self) -> f64 {
        (self.rtt.as_secs_f64() * 1e3).max(1e-6)
    }

    fn count(&mut self, phase: &Phase, echoed: bool, sign: i64) {
        let add = |v: &mut usize| {
            *v = if sign > 0 {
                v.saturating_add(1)
            } else {
                v.saturating_sub(1)
            }
        };
        match phase {
            Phase::Announced { .. } => {
                add(&mut self.announced);
                if echoed {
                    add(&mut self.waiting);
                }
            }
            Phase::Young { g, .. } => {
                add(&mut self.young);
                self.young_g = (self.young_g + sign as f64 * g).max(0.0);
                if self.young == 0 {
                    self.young_g = 0.0;
                }
            }
            Phase::Settled => add(&mut self.settled),
        }
    }

    fn set_phase(&mut self, key: &FlowKey, phase: Phase) {
        let Some((old, echoed)) = self.map.get(key).map(|f| (f.phase, f.echoed)) else {
            return;
        };
        self.count(&old, echoed, -1);
        self.count(&phase, echoed, 1);
        if let Some(f) = self.map.get_mut(key) {
            f.phase = phase;
        }
    }

    fn insert(&mut self, key: FlowKey, phase: Phase, now: Duration) -> bool {
        if self.map.len() >= self.cfg.max_flows {
            self.stats.overflow += 1;
            return false;
        }
        self.count(&phase, false, 1);
        self.map.insert(
            key,
            Flow {
                phase,
                last: now,
                told: f64::INFINITY,
                echoed: false,
                echo_at: None,
                path: f64::INFINITY,
            },
        );
        true
    }

    fn remove(&mut self, key: &FlowKey) -> Option<Flow> {
        let f = self.map.remove(key)?;
        self.count(&f.phase, f.echoed, -1);
        Some(f)
    }

    fn a0(&self) -> f64 {
        (self.capacity - self.y_nontcp.get(self.now, Y_TAU)).max(0.0)
    }

    /// N: settled flows not limited elsewhere, plus unfollowed TCP traffic
    /// as flows at R.
    fn n_free(&self) -> f64 {
        let n = self.settled.saturating_sub(self.limited) as f64;
        n + self.y_untracked.get(self.now, Y_TAU) / self.rate.max(self.lo()).max(1e-9)
    }

    fn refresh(&mut self) {
        let ka = self.kappa * self.a0();
        let n = self.n_free() + self.crowd_unechoed();
        let left = (ka - self.limited_sum - self.young_g).max(0.0);
        self.rate = if n > 0.0 {
            self.clamp(left / n.max(1.0))
        } else {
            self.clamp(ka / (1.0 + self.young as f64))
        };
    }

    /// `others` announced connections, if they are a crowd (more than
    /// twice the usual number plus four), else 0.
    fn crowd_of(&self, others: usize) -> f64 {
        let w = others as f64;
        if w > 2.0 * self.usual + 4.0 { w } else { 0.0 }
    }

    /// Waiting connections (echoed, not started) besides the one starting
    /// now, if a crowd: they count in a newcomer's share.
    fn crowd(&self) -> f64 {
        self.crowd_of(self.waiting.saturating_sub(1))
    }

    /// Announced connections whose reverse direction has not been seen, if
    /// a crowd: they count in R, so that connections told on their data
    /// (no ACKs through here) start at their share (see `rate_for`).
    fn crowd_unechoed(&self) -> f64 {
        self.crowd_of(self.announced.saturating_sub(self.waiting))
    }

    /// The grant for a connection starting now (still announced). Returns
    /// (g, whether it is the floor).
    fn grant(&self) -> (f64, bool) {
        let ka = self.kappa * self.a0();
        let others = self.n_free() + self.limited as f64 + self.young as f64 + self.crowd();
        let share = ka / (1.0 + others);
        let room = ka - self.young_g;
        let floor = self.capacity * self.cfg.floor_budget.as_secs_f64() * 1e3
            / self.d_ms()
            / (4.0 * (1.0 + self.young as f64));
        if room >= floor || share <= room {
            (self.clamp(share.min(room)), false)
        } else {
            (self.clamp(share.min(floor)), true)
        }
    }

    /// `key` starts now: its grant, capped by `path` (another router's).
    fn start(&mut self, key: &FlowKey, path: f64) -> f64 {
        let others = self.waiting.saturating_sub(1) as f64;
        if self.settled + self.young > 0 || others > 0.0 {
            self.kappa = self.kappa.min(1.0);
        }
        let (g, floor) = self.grant();
        let g = g.min(path);
        // The usual number of waiting connections is learned outside
        // crowds: a start that finds a crowd opens an episode of one RTT
        // during which nothing is learned, and the first start after it
        // learns at most the crowd threshold (so a lasting rise in
        // arrivals is learned within a few RTTs, a crowd is not).
        if self.crowd() > 0.0 {
            if self.crowd_until.is_none_or(|t| self.now >= t) {
                self.crowd_until = Some(self.now.saturating_add(self.rtt));
            }
        } else if self.crowd_until.is_none_or(|t| self.now >= t) {
            let sample = others.min(2.0 * self.usual + 4.0);
            self.usual += GAIN * (sample - self.usual);
        }
        self.stats.starts += 1;
        self.stats.floor_starts += u64::from(floor);
        self.set_phase(key, Phase::Young { since: self.now, g });
        self.refresh();
        g
    }

    /// Expiry and "limited elsewhere": once per control interval.
    fn sweep(&mut self) {
        let now = self.now;
        let d = self.rtt;
        let idle_min = (self.interval * 3).max(d * 2);
        let r = self.rate;
        let mut gone = Vec::new();
        let (mut limited, mut sum) = (0usize, 0.0);
        for (k, f) in &self.map {
            let packets = Duration::try_from_secs_f64(4.0 * MTU / f.told.max(1e-3) / 1e3)
                .unwrap_or(Duration::MAX);
            let keep = match f.phase {
                Phase::Announced { at } => now.saturating_sub(at) < d * 3,
                _ => now.saturating_sub(f.last) < idle_min.max(packets),
            };
            if !keep {
                gone.push(*k);
            } else if f.phase == Phase::Settled && f.path < r {
                limited += 1;
                sum += f.path;
            }
        }
        for k in gone {
            self.remove(&k);
        }
        self.limited = limited.min(self.settled);
        self.limited_sum = if self.limited > 0 { sum } else { 0.0 };
    }

    fn advance_to(&mut self, now: Duration) {
        self.now = self.now.max(now).max(self.ticks);
    }

    /// The multiplier of RCP's update for one interval of `m`.
    fn factor(&self, m: &Measurement) -> f64 {
        kappa::factor(&self.rcp, self.capacity, self.d_ms(), m, m.input_rate)
    }

    fn kappa_bounds(&self) -> (f64, f64) {
        let c = self.capacity.max(1e-9);
        ((self.lo() / c).min(1.0), (self.hi / c).max(1.0))
    }

    /// κ's bounds for an interval of `m`: at most the target while two or
    /// more settled flows keep the link busy.
    fn interval_bounds(&self, m: &Measurement) -> (f64, f64) {
        let (lo, hi) = self.kappa_bounds();
        if self.settled >= 2 && m.input_rate >= FULL_LOAD * self.capacity {
            (lo.min(self.cfg.target), hi.min(self.cfg.target))
        } else {
            (lo, hi)
        }
    }

    fn end_intervals(&mut self, m: &Measurement, n: u64) {
        self.rtt = m.rtt.max(Duration::from_micros(1));
        self.interval = m.interval.max(Duration::from_nanos(1));
        self.hi = if m.max_rate > m.capacity {
            m.max_rate
        } else {
            m.capacity
        };
        if m.capacity.is_finite() && m.capacity > 0.0 {
            self.capacity = m.capacity;
        }
        let span = u32::try_from(n).unwrap_or(u32::MAX);
        self.ticks = self.ticks.saturating_add(m.interval.saturating_mul(span));
        self.advance_to(self.ticks);
        self.sweep();
    }

    /// Whether `f`'s echo decides its rate (see the module docs, "Rules").
    fn echo_decides(&self, f: &Flow) -> bool {
        f.echoed
            && f.echo_at
                .is_some_and(|t| self.now.saturating_sub(t) < self.rtt * 2)
    }
}

impl RateController for Echo {
    fn on_interval(&mut self, m: &Measurement) -> f64 {
        self.end_intervals(m, 1);
        let (lo, hi) = self.interval_bounds(m);
        self.kappa = (self.kappa * self.factor(m)).clamp(lo, hi);
        self.refresh();
        self.rate
    }

    /// Closed form for κ (RCP's, see [`Rcp`](super::Rcp)); one sweep.
    fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
        if n == 0 {
            return self.rate;
        }
        self.end_intervals(m, n);
        let (lo, hi) = self.interval_bounds(m);
        self.kappa = kappa::after(self.kappa, self.factor(m), n, lo, hi);
        self.refresh();
        self.rate
    }

    fn rate(&self) -> f64 {
        self.rate
    }

    /// Sets κ so that R is `rate` (TCP mode freezes R at its last calm
    /// value, see the port's `mode` docs).
    fn restore(&mut self, rate: f64) {
        if !(rate.is_finite() && rate > 0.0) {
            return;
        }
        let a0 = self.a0();
        if a0 > 0.0 {
            let n = (self.n_free() + self.crowd_unechoed()).max(1.0);
            let (lo, hi) = self.kappa_bounds();
            self.kappa = ((rate * n + self.young_g + self.limited_sum) / a0).clamp(lo, hi);
            self.refresh();
        }
    }

    fn wants_packets(&self) -> bool {
        true
    }

    fn on_packet(&mut self, now: Duration, packet: &PacketInfo) {
        self.advance_to(now);
        let now = self.now;
        let Some(t) = packet.tcp else {
            self.y_nontcp.add(now, Y_TAU, packet.len);
            return;
        };
        let key = t.flow;
        if t.syn {
            if !self.map.contains_key(&key) {
                self.insert(key, Phase::Announced { at: now }, now);
            }
            return;
        }
        if t.fin {
            if self.remove(&key).is_some() {
                self.refresh();
            } else {
                self.y_untracked.add(now, Y_TAU, packet.len);
            }
            return;
        }
        if let Some(f) = self.map.get_mut(&key) {
            f.last = now;
            return;
        }
        // Pure ACKs take no rate; a connection whose SYN the port did not
        // see is followed as settled from its first data packet on.
        if t.payload == 0 || !self.insert(key, Phase::Settled, now) {
            self.y_untracked.add(now, Y_TAU, packet.len);
        } else {
            self.refresh();
        }
    }

    fn rate_for(&mut self, now: Duration, packet: &PacketInfo) -> f64 {
        self.advance_to(now);
        let Some(t) = packet.tcp else {
            return self.rate;
        };
        let Some(f) = self.map.get(&t.flow).copied() else {
            return self.rate;
        };
        if self.echo_decides(&f) || (f.echoed && matches!(f.phase, Phase::Announced { .. })) {
            return self.hi;
        }
        let r = match f.phase {
            // A connection whose ACKs have not passed (yet) is told on its
            // data, as by RCP: it counts as settled from its first data
            // packet (a crowd of such connections, by the crowd rule, from
            // the first one's).
            Phase::Announced { .. } if t.payload > 0 => {
                self.set_phase(&t.flow, Phase::Settled);
                self.refresh();
                self.rate
            }
            Phase::Announced { .. } => self.grant().0,
            Phase::Young { g, .. } => g,
            Phase::Settled => self.rate,
        };
        if let Some(f) = self.map.get_mut(&t.flow) {
            f.told = r;
        }
        r
    }

    fn wants_reverse(&self) -> bool {
        true
    }

    fn on_reverse(&mut self, now: Duration, flow: &FlowKey, echo: Option<f64>) -> Option<f64> {
        self.advance_to(now);
        let now = self.now;
        let hi = self.hi;
        let f = self.map.get_mut(flow)?;
        f.last = now;
        if !f.echoed {
            f.echoed = true;
            let phase = f.phase;
            self.count(&phase, false, -1);
            self.count(&phase, true, 1);
        }
        let echo = echo?;
        let path = if echo < ELSEWHERE * hi {
            echo
        } else {
            f64::INFINITY
        };
        let (phase, decided) = self
            .map
            .get(flow)
            .map(|f| (f.phase, self.echo_decides(f)))?;
        let d = self.rtt;
        let r = match phase {
            Phase::Announced { .. } => self.start(flow, path),
            Phase::Young { since, g } if now.saturating_sub(since) < d / 2 => g,
            Phase::Young { .. } => {
                self.set_phase(flow, Phase::Settled);
                self.refresh();
                self.rate
            }
            Phase::Settled => self.rate,
        };
        self.stats.echoes += 1;
        if let Some(f) = self.map.get_mut(flow) {
            f.told = r.min(echo);
            f.echo_at = Some(now);
            // Only an echo of data stamped with the ceiling says what the
            // other routers allow.
            if decided {
                f.path = path;
            }
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests;

//! [`Echo`]: an explicit-rate controller that tells senders their rate on
//! the ACKs coming back through the router, not only on the data going
//! out, so that what it says acts at once instead of one RTT later.
//!
//! **What it does.** Like [`Crowd`](super::Crowd) it follows TCP
//! connections (announced at the SYN, young from their first echo for half
//! an RTT, then settled) and runs RCP's loop ([`RcpLoop`](super::RcpLoop))
//! on a multiplier κ of the fair share: `R = (κ·A₀ − ΣL − Y) / max(1, N)`.
//! In addition the port lowers the rate echo (KA-Rate, DESIGN §2.3, or
//! RCP-Echo, DESIGN §7.1) of the ACKs that pass back ([`Port::on_reverse`](crate::Port::on_reverse)):
//! `echo ← min(echo, rate)`. A newcomer takes its share when it starts and
//! the settled flows make room at that moment, so there is neither a
//! flash-crowd overflow nor Crowd's cost to long flows (Fig. 3, KA, seeds
//! 1–3: queue 99th percentile 55–67 packets, every size bucket's mean FCT
//! within 6 % of the paper RCP's).
//!
//! **When to use it.** A router that forwards both directions of its
//! connections (an access router, a middlebox, the paper's testbed router);
//! it gains most next to the senders. Where the ACKs take another path use
//! [`Crowd`](super::Crowd). It edits a TCP option in ACKs, which an
//! end-to-end integrity check over TCP options (TCP-AO, IPsec) would see.
//!
//! **SYN streams.** Announced connections count in R (the crowd rule for
//! connections told on their data) and in a newcomer's share (the crowd
//! of waiting ones) — so a stream of SYNs that never send data (1000/s,
//! ≈ 0.5 Mbit/s) used to hold a crowd's reservation forever and cut a
//! settled flow from 18.8 to 4.5 Mbit/s. Announced connections now count
//! as the *SYN yield* ρ each (`follow::SynYield`): the share of announced
//! connections that went on to send data, learned over about 10 s from
//! each one's outcome (its first data, or expiry/FIN/RST without). Real
//! newcomers send data, so ρ stays exactly 1 and a real crowd is reserved
//! for as before; SYNs that never send data drive ρ towards
//! `1/(their number in 10 s)`, so however many arrive they count for at
//! most about `3d·(λ_r + 0.1/s)` connections (λ_r the rate of real
//! arrivals) — below the crowd threshold of four unless real newcomers
//! come that fast. What cannot be told apart is the stream's first 3d
//! (no SYN of it has yet gone without data): the router reserves for it
//! as for a crowd, then lets go once a few hundred of its SYNs have gone
//! without data (ρ·w under the threshold). The table cap
//! stays: a stream also fills the table, and a connection that finds it
//! full is not followed (its data counts as unfollowed TCP traffic, RCP's
//! way).
//! Checked in virtual time: `a_syn_stream_takes_a_bounded_share_from_a_settled_flow`
//! (1000 SYN/s for 20 s: flow 1's rate ≥ 0.9× its rate without them from
//! 1 s on), `a_real_newcomer_still_starts_at_its_share_during_a_syn_stream`.
//!
//! **Knobs** ([`EchoConfig`]): `floor_budget` (default 8 ms: the queue
//! newcomers that find no room may build), `max_flows` (default
//! [`DEFAULT_MAX_FLOWS`](super::crowd::DEFAULT_MAX_FLOWS)) and `target`
//! (default 0.98: κ's ceiling while two or more settled flows keep the link
//! busy); RCP's α, β, R_min and update from [`RcpConfig`].
//!
//! Why, the exact rules, equilibrium and stability, a crowd, light load and
//! the limits: `docs/controllers.md`, "Echo".

use std::time::Duration;

use super::follow::{self, Core, FULL_LOAD, Following, GAIN};
use super::packet::{FlowKey, PacketInfo, TcpInfo};
use super::rcp::RcpConfig;
use super::table::{Table, Totals, add, add_sum};
use super::{ControllerConfig, Measurement, RateController};

/// An echo below this share of the port's ceiling was lowered by another
/// router.
const ELSEWHERE: f64 = 0.99;

/// Knobs of [`Echo`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct EchoConfig {
    /// The queue that newcomers which find no room may build, as time at C
    /// (`docs/controllers.md`, Echo, "Rules"). Default 8 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub floor_budget: Duration,
    /// Connections followed at most. Default
    /// [`DEFAULT_MAX_FLOWS`](super::crowd::DEFAULT_MAX_FLOWS).
    pub max_flows: usize,
    /// κ's ceiling while two or more settled flows keep the link busy
    /// (`docs/controllers.md`, Echo, "Equilibrium and stability"). Default
    /// 0.98.
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
    /// It has sent data (or was first seen with data).
    sent: bool,
}

/// Totals over the followed connections.
#[derive(Debug, Clone, Default)]
struct EchoTotals {
    /// Announced connections, and those of them whose reverse direction
    /// has been seen (about to start).
    announced: usize,
    waiting: usize,
    /// Young connections and the sum of their grants (B/ms).
    young: usize,
    young_g: f64,
    settled: usize,
}

impl Totals<Flow> for EchoTotals {
    fn count(&mut self, f: &Flow, sign: i64) {
        match f.phase {
            Phase::Announced { .. } => {
                add(&mut self.announced, sign);
                if f.echoed {
                    add(&mut self.waiting, sign);
                }
            }
            Phase::Young { g, .. } => {
                add(&mut self.young, sign);
                add_sum(&mut self.young_g, self.young, sign, g);
            }
            Phase::Settled => add(&mut self.settled, sign),
        }
    }
}

/// The echo controller (see the module docs).
#[derive(Debug, Clone)]
pub struct Echo {
    cfg: EchoConfig,
    core: Core,
    table: Table<Flow, EchoTotals>,
    /// Usual number of other waiting connections at a start.
    usual: f64,
    /// The end of the current crowd episode (see [`Echo::start`]).
    crowd_until: Option<Duration>,
    /// Settled flows limited elsewhere and the sum of their rates, as of
    /// the last sweep.
    limited: usize,
    limited_sum: f64,
    stats: EchoStats,
}

impl Echo {
    /// A controller for a link of `capacity` B/ms, with RCP's α, β and
    /// R_min from `rcp`. Out-of-range knobs are clamped.
    pub fn new(cfg: EchoConfig, rcp: RcpConfig, capacity: f64) -> Self {
        let target = if cfg.target > 0.0 && cfg.target <= 1.0 {
            cfg.target
        } else {
            EchoConfig::default().target
        };
        let cfg = EchoConfig {
            max_flows: cfg.max_flows.max(1),
            target,
            ..cfg
        };
        let mut s = Self {
            table: Table::new(cfg.max_flows),
            cfg,
            core: Core::new(rcp, capacity),
            usual: 0.0,
            crowd_until: None,
            limited: 0,
            limited_sum: 0.0,
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
        self.table.len()
    }

    fn set_phase(&mut self, key: &FlowKey, phase: Phase) {
        self.table.update(key, |f| f.phase = phase);
    }

    fn insert(&mut self, key: FlowKey, phase: Phase, now: Duration) -> bool {
        let flow = Flow {
            phase,
            last: now,
            told: f64::INFINITY,
            echoed: false,
            echo_at: None,
            path: f64::INFINITY,
            sent: !matches!(phase, Phase::Announced { .. }),
        };
        let ok = self.table.insert(key, flow);
        if !ok {
            self.stats.overflow += 1;
        }
        ok
    }

    /// N: settled flows not limited elsewhere, plus unfollowed TCP traffic
    /// as flows at R.
    fn n_free(&self) -> f64 {
        let n = self.table.settled.saturating_sub(self.limited) as f64;
        n + self.core.untracked_flows()
    }

    /// `others` announced connections as the newcomers they are expected
    /// to be (ρ each, see "SYN streams"), if they are a crowd (more than
    /// twice the usual number plus four), else 0.
    fn crowd_of(&self, others: usize) -> f64 {
        let w = self.core.syn_yield() * others as f64;
        if w > 2.0 * self.usual + 4.0 { w } else { 0.0 }
    }

    /// Connection `key` has sent data: if it was announced, the SYN
    /// yield learns a success.
    fn mark_sent(&mut self, key: &FlowKey) {
        if let Some(f) = self.table.get_mut(key)
            && !f.sent
        {
            f.sent = true;
            self.core.announced_resolved(1, true);
        }
    }

    /// Waiting connections (echoed, not started) besides the one starting
    /// now, if a crowd: they count in a newcomer's share.
    fn crowd(&self) -> f64 {
        self.crowd_of(self.table.waiting.saturating_sub(1))
    }

    /// Announced connections whose reverse direction has not been seen, if
    /// a crowd: they count in R, so that connections told on their data
    /// (no ACKs through here) start at their share (see `rate_for`).
    fn crowd_unechoed(&self) -> f64 {
        self.crowd_of(self.table.announced.saturating_sub(self.table.waiting))
    }

    /// The grant for a connection starting now (still announced). Returns
    /// (g, whether it is the floor).
    fn grant(&self) -> (f64, bool) {
        let ka = self.core.kappa.value() * self.a0();
        let t = &self.table;
        let others = self.n_free() + self.limited as f64 + t.young as f64 + self.crowd();
        let share = ka / (1.0 + others);
        let room = ka - t.young_g;
        let floor = self.core.capacity * self.cfg.floor_budget.as_secs_f64() * 1e3
            / self.core.d_ms()
            / (4.0 * (1.0 + t.young as f64));
        if room >= floor || share <= room {
            (self.core.clamp(share.min(room)), false)
        } else {
            (self.core.clamp(share.min(floor)), true)
        }
    }

    /// `key` starts now: its grant, capped by `path` (another router's).
    fn start(&mut self, key: &FlowKey, path: f64) -> f64 {
        let now = self.core.now;
        self.mark_sent(key);
        let others = self.core.syn_yield() * self.table.waiting.saturating_sub(1) as f64;
        if self.table.settled + self.table.young > 0 || others > 0.0 {
            let k = self.core.kappa.value().min(1.0);
            self.core.kappa.set(k);
        }
        let (g, floor) = self.grant();
        let g = g.min(path);
        // The usual number of waiting connections is learned outside
        // crowds: a start that finds a crowd opens an episode of one RTT
        // during which nothing is learned, and the first start after it
        // learns at most the crowd threshold (so a lasting rise in
        // arrivals is learned within a few RTTs, a crowd is not).
        if self.crowd() > 0.0 {
            if self.crowd_until.is_none_or(|t| now >= t) {
                self.crowd_until = Some(now.saturating_add(self.core.rtt));
            }
        } else if self.crowd_until.is_none_or(|t| now >= t) {
            let sample = others.min(2.0 * self.usual + 4.0);
            self.usual += GAIN * (sample - self.usual);
        }
        self.stats.starts += 1;
        self.stats.floor_starts += u64::from(floor);
        self.set_phase(key, Phase::Young { since: now, g });
        self.refresh();
        g
    }

    /// Whether `f`'s echo decides its rate (`docs/controllers.md`, Echo,
    /// "Rules").
    fn echo_decides(&self, f: &Flow) -> bool {
        f.echoed
            && f.echo_at
                .is_some_and(|t| self.core.now.saturating_sub(t) < self.core.rtt * 2)
    }
}

impl Following for Echo {
    follow::core_access!();

    /// Expiry and "limited elsewhere".
    fn sweep(&mut self) {
        let r = self.core.rate;
        let core = &self.core;
        let (mut limited, mut sum) = (0usize, 0.0);
        let mut silent = 0;
        self.table.sweep(|f| {
            let keep = match f.phase {
                Phase::Announced { at } => core.announced_alive(at),
                _ => core.active_alive(f.last, f.told),
            };
            silent += usize::from(!keep && !f.sent);
            if keep && f.phase == Phase::Settled && f.path < r {
                limited += 1;
                sum += f.path;
            }
            keep
        });
        self.limited = limited.min(self.table.settled);
        self.limited_sum = if self.limited > 0 { sum } else { 0.0 };
        self.core.announced_resolved(silent, false);
    }

    fn demand(&self, m: &Measurement) -> f64 {
        m.input_rate
    }

    /// κ's bounds, at most the target while two or more settled flows keep
    /// the link busy.
    fn interval_bounds(&self, m: &Measurement) -> (f64, f64) {
        let (lo, hi) = self.core.kappa_bounds();
        if self.table.settled >= 2 && m.input_rate >= FULL_LOAD * self.core.capacity {
            (lo.min(self.cfg.target), hi.min(self.cfg.target))
        } else {
            (lo, hi)
        }
    }

    fn a0(&self) -> f64 {
        self.core.spare().max(0.0)
    }

    fn kappa_for(&self, rate: f64, a0: f64) -> f64 {
        let n = (self.n_free() + self.crowd_unechoed()).max(1.0);
        (rate * n + self.table.young_g + self.limited_sum) / a0
    }

    fn refresh(&mut self) {
        let ka = self.core.kappa.value() * self.a0();
        let n = self.n_free() + self.crowd_unechoed();
        let left = (ka - self.limited_sum - self.table.young_g).max(0.0);
        self.core.rate = if n > 0.0 {
            self.core.clamp(left / n.max(1.0))
        } else {
            self.core.clamp(ka / (1.0 + self.table.young as f64))
        };
    }

    fn on_syn(&mut self, key: FlowKey) {
        if self.table.get(&key).is_none() {
            let now = self.core.now;
            self.insert(key, Phase::Announced { at: now }, now);
        }
    }

    fn on_fin(&mut self, t: TcpInfo, len: usize) {
        if let Some(f) = self.table.remove(&t.flow) {
            if !f.sent {
                // A short connection's only data may ride on its FIN.
                self.core.announced_resolved(1, t.payload > 0);
            }
            self.refresh();
        } else {
            self.core.untracked(len);
        }
    }

    fn on_segment(&mut self, t: TcpInfo, len: usize) {
        let now = self.core.now;
        if let Some(f) = self.table.get_mut(&t.flow) {
            f.last = now;
            if t.payload > 0 {
                self.mark_sent(&t.flow);
            }
            return;
        }
        // Pure ACKs take no rate; a connection whose SYN the port did not
        // see is followed as settled from its first data packet on.
        if t.payload == 0 || !self.insert(t.flow, Phase::Settled, now) {
            self.core.untracked(len);
        } else {
            self.refresh();
        }
    }
}

impl RateController for Echo {
    follow::following_methods!();

    fn rate_for(&mut self, now: Duration, packet: &PacketInfo) -> f64 {
        self.core.advance_to(now);
        let Some(t) = packet.tcp else {
            return self.core.rate;
        };
        let Some(f) = self.table.get(&t.flow).copied() else {
            return self.core.rate;
        };
        if self.echo_decides(&f) || (f.echoed && matches!(f.phase, Phase::Announced { .. })) {
            return self.core.hi;
        }
        let r = match f.phase {
            // A connection whose ACKs have not passed (yet) is told on its
            // data, as by RCP: it counts as settled from its first data
            // packet (a crowd of such connections, by the crowd rule, from
            // the first one's).
            Phase::Announced { .. } if t.payload > 0 => {
                self.set_phase(&t.flow, Phase::Settled);
                self.refresh();
                self.core.rate
            }
            Phase::Announced { .. } => self.grant().0,
            Phase::Young { g, .. } => g,
            Phase::Settled => self.core.rate,
        };
        if let Some(f) = self.table.get_mut(&t.flow) {
            f.told = r;
        }
        r
    }

    fn wants_reverse(&self) -> bool {
        true
    }

    fn on_reverse(&mut self, now: Duration, flow: &FlowKey, echo: Option<f64>) -> Option<f64> {
        self.core.advance_to(now);
        let now = self.core.now;
        let hi = self.core.hi;
        let f = self.table.get_mut(flow)?;
        f.last = now;
        if !f.echoed {
            self.table.update(flow, |f| f.echoed = true);
        }
        let echo = echo?;
        let path = if echo < ELSEWHERE * hi {
            echo
        } else {
            f64::INFINITY
        };
        let (phase, decided) = self
            .table
            .get(flow)
            .map(|f| (f.phase, self.echo_decides(f)))?;
        let d = self.core.rtt;
        let r = match phase {
            Phase::Announced { .. } => self.start(flow, path),
            Phase::Young { since, g } if now.saturating_sub(since) < d / 2 => g,
            Phase::Young { .. } => {
                self.set_phase(flow, Phase::Settled);
                self.refresh();
                self.core.rate
            }
            Phase::Settled => self.core.rate,
        };
        self.stats.echoes += 1;
        if let Some(f) = self.table.get_mut(flow) {
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

impl ControllerConfig for EchoConfig {
    fn build(&self, rcp: RcpConfig, capacity: f64) -> Box<dyn RateController> {
        Box::new(Echo::new(*self, rcp, capacity))
    }

    fn validate(&self) -> Result<(), &'static str> {
        EchoConfig::validate(self)
    }
}

#[cfg(test)]
mod tests;

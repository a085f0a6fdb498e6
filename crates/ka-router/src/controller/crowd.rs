//! [`Crowd`]: an explicit-rate controller that admits newly arriving flows
//! without flash-crowd overflow. At light load RCP hands every newcomer
//! R ≈ C at once, so flows starting within one RTT overfill the queue (the
//! XCP-vs-RCP seed's "flash crowd effect in RCP", §4.3).
//!
//! **What it does.** It follows TCP connections through the port (from the
//! SYN, or the first data packet) in a bounded table and runs RCP's loop
//! ([`RcpLoop`](super::RcpLoop)) on a multiplier κ of the fair share: active
//! flows get `R = κ·A₀ / max(1, N + U_w)`, a newcomer gets its share among
//! the flows that will be sending when it starts, never more than what is
//! not yet promised (or a small floor when nothing is left). With a fixed
//! set of long flows its fixed point is RCP's; a lone flow gets the whole
//! link at once, as with RCP.
//!
//! **When to use it.** A router that sees one direction of its connections
//! only (otherwise [`Echo`](super::Echo) meets both the queue and the FCT
//! checks at Fig. 3's load). Works with both explicit-rate carriers (KA and
//! native RCP). It bounds a crowd's queue; at light load it costs long flows
//! part of their first round trip (mean FCT of 100+ packet flows 10–54 %
//! longer than the paper RCP's at the default caution).
//!
//! **SYN streams.** Pending connections (granted, no paced data yet) count
//! in U, their grants in the demand κ follows and in what a newcomer finds
//! promised, and announced ones in a newcomer's share and in the crowd
//! test. With RCP's carrier every SYN is granted, so a stream of SYNs that
//! never send data would keep U and the demand up for as long as it
//! lasts (in virtual time 1000 SYN/s held an active flow near R_min). Pending and announced connections now count as the *SYN
//! yield* ρ each (`follow::SynYield`: the share of announced connections
//! that went on to send data, learned over about 10 s; see
//! [`Echo`](super::Echo), "SYN streams", for the bound). Real newcomers
//! send data, so ρ stays exactly 1 and nothing changes for them. With
//! KA's carrier (grants at the first data) announced connections never
//! counted in R. Checked in virtual time:
//! `a_syn_stream_takes_a_bounded_share_from_an_active_flow` (1000 SYN/s
//! for 20 s, mean ≥ 0.9× the rate without them; with grants at the SYN
//! the first seconds dip further, to ~0.86×, while ρ learns; ≥ 0.9× from
//! 5 s on) and `a_real_newcomer_still_gets_its_share_during_a_syn_stream`.
//!
//! **Knobs** ([`CrowdConfig`]): `caution` (default [`DEFAULT_CAUTION`]: the
//! weight of a newcomer of unknown size is `min(1, caution · u)`, larger =
//! shorter queue, slower first round trips), `floor_budget` (default 8 ms:
//! the queue newcomers that find no room may build) and `max_flows`
//! (default [`DEFAULT_MAX_FLOWS`]); RCP's α, β, R_min and update from
//! [`RcpConfig`].
//!
//! The design, its equilibrium and stability, the crowd bound, the
//! light-load trade-off with every measurement, and its limits:
//! `docs/controllers.md`, "Crowd".

mod config;
mod flows;

use std::collections::VecDeque;
use std::time::Duration;

use super::follow::{self, Core, Ewma, FULL_LOAD, Following, GAIN};
use super::packet::{FlowKey, PacketInfo, TcpInfo};
use super::rcp::RcpConfig;
use super::table::packets_at;
use super::{ControllerConfig, Measurement, RateController};
pub use config::{CrowdConfig, CrowdStats, DEFAULT_CAUTION, DEFAULT_MAX_FLOWS};
use flows::{Active, Flow, Flows, Phase};

/// An active flow counts as limited elsewhere below this share of the
/// lowest R of the last RTT (after 4 RTTs of activity) ...
const LIMITED_ENTER: f64 = 0.5;
/// ... and stops counting so above this share.
const LIMITED_EXIT: f64 = 0.7;
/// A young flow counts as a full flow once it has sent this share of what
/// its grant allows in one RTT (`g·d`), and in proportion before
/// (`docs/controllers.md`, Crowd, "Design").
const YOUNG_SHARE: f64 = 1.0 / 16.0;
/// Most intervals remembered for the lowest recent R.
const MAX_HISTORY: usize = 256;

/// A young flow's first-RTT demand so far, in [0, 1]: `bytes` against
/// [`YOUNG_SHARE`] of `g·d` (g in B/ms).
fn young_ramp(bytes: u64, g: f64, d: Duration) -> f64 {
    let full = YOUNG_SHARE * g * d.as_secs_f64() * 1e3;
    if full > 0.0 && full.is_finite() {
        (bytes as f64 / full).min(1.0)
    } else {
        1.0
    }
}

/// The crowd-aware controller (see the module docs).
#[derive(Debug, Clone)]
pub struct Crowd {
    cfg: CrowdConfig,
    core: Core,
    table: Flows,
    /// Learned occupancy of a newcomer, in [0, 1].
    u: f64,
    /// Usual number of other newcomers in flight at a grant.
    usual: f64,
    /// R at the end of the last intervals (one RTT's worth).
    history: VecDeque<f64>,
    stats: CrowdStats,
}

impl Crowd {
    /// A controller for a link of `capacity` B/ms, with RCP's α, β and
    /// R_min from `rcp`. Out-of-range knobs are clamped (`caution` to 0 if
    /// not a finite non-negative number, `max_flows` to at least 1).
    pub fn new(cfg: CrowdConfig, rcp: RcpConfig, capacity: f64) -> Self {
        let mut cfg = cfg;
        if !(cfg.caution.is_finite() && cfg.caution >= 0.0) {
            cfg.caution = 0.0;
        }
        cfg.max_flows = cfg.max_flows.max(1);
        let mut s = Self {
            table: Flows::new(cfg.max_flows),
            cfg,
            core: Core::new(rcp, capacity),
            u: 1.0,
            usual: 0.0,
            history: VecDeque::new(),
            stats: CrowdStats::default(),
        };
        s.refresh();
        s
    }

    /// The knobs.
    pub fn config(&self) -> &CrowdConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> CrowdStats {
        self.stats
    }

    /// The learned occupancy u of a newcomer.
    pub fn occupancy(&self) -> f64 {
        self.u
    }

    /// The weight w of a newcomer of unknown size now.
    pub fn weight(&self) -> f64 {
        if self.newcomers() > 2.0 * self.usual + 4.0 {
            return 1.0;
        }
        (self.cfg.caution * self.u).clamp(0.0, 1.0)
    }

    /// Connections followed now.
    pub fn followed(&self) -> usize {
        self.table.len()
    }

    /// Newcomers (pending and announced) as the data senders they are
    /// expected to be: ρ each (see "SYN streams").
    fn newcomers(&self) -> f64 {
        self.core.syn_yield() * (self.table.pending + self.table.announced) as f64
    }

    /// The pending connections and their grants, ρ each.
    fn pending(&self) -> (f64, f64) {
        let rho = self.core.syn_yield();
        (rho * self.table.pending as f64, rho * self.table.pending_g)
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

    /// N: active flows past their first round trip and not limited
    /// elsewhere, plus unfollowed TCP traffic as a number of flows at R.
    fn settled(&self) -> f64 {
        let t = &self.table;
        let n = t.active.saturating_sub(t.limited).saturating_sub(t.young) as f64;
        n + self.core.untracked_flows()
    }

    /// U: flows whose demand is not known yet (pending, ρ each, and
    /// young).
    fn unknown(&self) -> f64 {
        self.pending().0 + self.table.young as f64
    }

    /// What the flows of U count for: w each, and a young flow more as
    /// its first-RTT demand grows, `w + (1 − w)·ramp` (one once `ramp` is 1).
    fn unknown_weighted(&self) -> f64 {
        let w = self.weight();
        w * self.unknown() + (1.0 - w) * self.table.young_ramp
    }

    /// The grant for the flow being signalled first now (still counted as
    /// announced). Returns (g, whether it is the floor).
    fn grant(&self) -> (f64, bool) {
        let w = self.weight();
        let ka = self.core.kappa.value() * self.a0();
        let n = self.settled();
        let wu = self.unknown_weighted();
        let others = self.core.syn_yield() * self.table.announced.saturating_sub(1) as f64;
        let share = ka / (1.0 + n + wu + w * others);
        let after = ka / (n + wu + w).max(1.0);
        let outstanding = self.pending().1 + self.table.young as f64 * self.core.rate;
        let room = ka - n * after - w * outstanding;
        let floor = self.core.capacity * self.cfg.floor_budget.as_secs_f64() * 1e3
            / self.core.d_ms()
            / (4.0 * (1.0 + self.table.pending as f64));
        // The floor stands in for a room too small, never for the share.
        if room >= floor || share <= room {
            (self.core.clamp(share.min(room)), false)
        } else {
            (self.core.clamp(share.min(floor)), true)
        }
    }

    /// One newcomer's size: its bytes as a share of C·d.
    fn learn(&mut self, bytes: u64) {
        let full = self.core.capacity * self.core.d_ms();
        if full > 0.0 {
            let x = (bytes as f64 / full).min(1.0);
            self.u += GAIN * (x - self.u);
        }
    }
}

impl Following for Crowd {
    follow::core_access!();

    /// Expiry, per-flow rates, "limited elsewhere", the end of first round
    /// trips and size samples.
    fn sweep(&mut self) {
        let now = self.core.now;
        let d = self.core.rtt;
        let r_min = self.history.iter().copied().fold(self.core.rate, f64::min);
        let full = (self.core.capacity * self.core.d_ms()) as u64;
        let core = &self.core;
        let mut sizes = Vec::new();
        let mut silent = 0;
        self.table.sweep(|f| {
            let keep = match f.phase {
                Phase::Announced { at } => core.announced_alive(at),
                Phase::Pending { at, g } => {
                    now.saturating_sub(at) < (d * 2).saturating_add(packets_at(g))
                }
                Phase::Active(_) => core.active_alive(f.last, f.told),
            };
            silent += usize::from(!keep && !f.sent);
            if let Phase::Active(ref mut a) = f.phase {
                let tau = d.max(Duration::from_millis(1));
                a.m = Ewma { v: a.m, at: a.m_at }.get(now, tau);
                a.m_at = now.max(a.m_at);
                if !a.learned && now.saturating_sub(a.since) >= d {
                    a.learned = true;
                }
                if !a.sampled && a.g.is_some() && (!keep || a.bytes >= full) {
                    a.sampled = true;
                    sizes.push(a.bytes);
                }
                a.limited = keep
                    && if a.limited {
                        a.m < LIMITED_EXIT * r_min
                    } else {
                        now.saturating_sub(a.since) >= d * 4 && a.m < LIMITED_ENTER * r_min
                    };
            }
            keep
        });
        for b in sizes {
            self.learn(b);
        }
        self.core.announced_resolved(silent, false);
    }

    /// y plus the demand already granted but not arriving yet.
    fn demand(&self, m: &Measurement) -> f64 {
        m.input_rate + self.weight() * self.pending().1
    }

    /// κ's bounds, but while two or more settled flows keep the link at
    /// least [`FULL_LOAD`] busy, κ does not rise above max(1, κ)
    /// (`docs/controllers.md`, Crowd, "Equilibrium").
    fn interval_bounds(&self, m: &Measurement) -> (f64, f64) {
        let (lo, hi) = self.core.kappa_bounds();
        if self.settled() >= 2.0 && self.demand(m) >= FULL_LOAD * self.core.capacity {
            (lo, hi.min(self.core.kappa.value().max(1.0)))
        } else {
            (lo, hi)
        }
    }

    /// A₀: the capacity left to followed flows that are not limited
    /// elsewhere.
    fn a0(&self) -> f64 {
        (self.core.spare() - self.table.limited_m).max(0.0)
    }

    fn kappa_for(&self, rate: f64, a0: f64) -> f64 {
        let n = (self.settled() + self.unknown_weighted()).max(1.0);
        rate * n / a0
    }

    fn refresh(&mut self) {
        let n = self.settled() + self.unknown_weighted();
        self.core.rate = self
            .core
            .clamp(self.core.kappa.value() * self.a0() / n.max(1.0));
    }

    /// R, and the lowest R of the last RTT.
    fn after_intervals(&mut self) {
        self.refresh();
        let window =
            usize::try_from(self.core.rtt.as_nanos() / self.core.interval.as_nanos().max(1))
                .unwrap_or(MAX_HISTORY)
                .clamp(1, MAX_HISTORY);
        self.history.push_back(self.core.rate);
        while self.history.len() > window {
            self.history.pop_front();
        }
    }

    fn on_syn(&mut self, key: FlowKey) {
        let now = self.core.now;
        if self.table.get(&key).is_none()
            && !self
                .table
                .insert(key, Flow::new(Phase::Announced { at: now }, now))
        {
            self.stats.overflow += 1;
        }
    }

    fn on_fin(&mut self, t: TcpInfo, len: usize) {
        match self.table.remove(&t.flow) {
            Some(f) => {
                if !f.sent {
                    // A short connection's only data may ride on its FIN.
                    self.core.announced_resolved(1, t.payload > 0);
                }
                if let Phase::Active(a) = f.phase
                    && !a.sampled
                    && a.g.is_some()
                {
                    self.learn(a.bytes.saturating_add(len as u64));
                }
                self.refresh();
            }
            None => self.core.untracked(len),
        }
    }

    fn on_segment(&mut self, t: TcpInfo, len: usize) {
        let now = self.core.now;
        let key = t.flow;
        let d = self.core.rtt;
        if t.payload > 0 {
            self.mark_sent(&key);
        }
        let Some(f) = self.table.get_mut(&key) else {
            if t.payload == 0 {
                // Pure ACKs take no rate.
                self.core.untracked(len);
                return;
            }
            // A connection whose SYN the port did not see: follow it as a
            // settled active flow from now on, if there is room.
            let a = Active {
                since: now,
                g: None,
                bytes: 0,
                learned: true,
                sampled: true,
                m: 0.0,
                m_at: now,
                limited: false,
                ramp: 1.0,
            };
            if self.table.insert(key, Flow::new(Phase::Active(a), now)) {
                self.stats.adopted += 1;
                self.refresh();
            } else {
                self.stats.overflow += 1;
                self.core.untracked(len);
            }
            return;
        };
        f.last = now;
        match f.phase {
            Phase::Announced { .. } => {}
            Phase::Pending { at, g } => {
                // The grant's round trip is over when paced packets come.
                if now.saturating_sub(at) >= d / 2 {
                    let bytes = len as u64;
                    let a = Active {
                        since: now,
                        g: Some(g),
                        bytes,
                        learned: false,
                        sampled: false,
                        m: 0.0,
                        m_at: now,
                        limited: false,
                        ramp: young_ramp(bytes, g, d),
                    };
                    self.table.update(&key, |f| f.phase = Phase::Active(a));
                    self.refresh();
                }
            }
            Phase::Active(ref mut a) => {
                a.bytes = a.bytes.saturating_add(len as u64);
                let mut e = Ewma { v: a.m, at: a.m_at };
                e.add(now, d.max(Duration::from_millis(1)), len);
                a.m = e.v;
                a.m_at = e.at;
                // A young flow counts by its first-RTT demand so far
                // (`docs/controllers.md`, Crowd, "Design").
                if !a.learned && a.ramp < 1.0 {
                    let ramp = young_ramp(a.bytes, a.g.unwrap_or(f64::INFINITY), d);
                    let b = Active { ramp, ..*a };
                    self.table.update(&key, |f| f.phase = Phase::Active(b));
                    self.refresh();
                }
            }
        }
    }
}

impl RateController for Crowd {
    follow::following_methods!();

    fn rate_for(&mut self, now: Duration, packet: &PacketInfo) -> f64 {
        self.core.advance_to(now);
        let Some(t) = packet.tcp else {
            return self.core.rate;
        };
        let Some(phase) = self.table.get(&t.flow).map(|f| f.phase) else {
            return self.core.rate;
        };
        let r = match phase {
            Phase::Active(_) => self.core.rate,
            Phase::Pending { g, .. } => g,
            Phase::Announced { .. } => {
                let others = self.core.syn_yield()
                    * (self.table.pending + self.table.announced).saturating_sub(1) as f64;
                if self.table.active > 0 || others > 0.0 {
                    let k = self.core.kappa.value().min(1.0);
                    self.core.kappa.set(k);
                }
                let (g, floor) = self.grant();
                self.usual += GAIN * (others - self.usual);
                self.stats.grants += 1;
                self.stats.floor_grants += u64::from(floor);
                let at = self.core.now;
                self.table
                    .update(&t.flow, |f| f.phase = Phase::Pending { at, g });
                self.refresh();
                g
            }
        };
        if let Some(f) = self.table.get_mut(&t.flow) {
            f.told = r;
        }
        r
    }
}

impl ControllerConfig for CrowdConfig {
    fn build(&self, rcp: RcpConfig, capacity: f64) -> Box<dyn RateController> {
        Box::new(Crowd::new(*self, rcp, capacity))
    }

    fn validate(&self) -> Result<(), &'static str> {
        CrowdConfig::validate(self)
    }
}

#[cfg(test)]
mod tests;

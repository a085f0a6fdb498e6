//! [`Crowd`]: an explicit-rate controller that admits newly arriving flows
//! without flash-crowd overflow: at light load RCP hands every newcomer
//! R ≈ C at once, so flows starting within one RTT overfill the queue
//! (the XCP-vs-RCP seed's "flash crowd effect in RCP", §4.3).
//!
//! # The problem
//!
//! [`Rcp`](super::Rcp) hands every packet the same rate R. At light load R
//! sits at its ceiling (about C), and a new flow adopts R as soon as its
//! first signal returns: a KA sender one RTT after its first data segment,
//! a native-RCP sender right after the handshake. Several flows that start
//! within an RTT therefore send at k·C for an RTT before the router can
//! say anything, because whatever it stamps now acts one RTT later (the
//! "flash crowd effect in RCP", seed `xcp-vs-rcp.txt` §4.3). At the paper's
//! Fig. 3 load (30 %), that fills the 1000-packet queue several times a
//! minute and drops packets, which push KA flows into TCP mode
//! (`docs/RESULTS.md`, "Flash crowds").
//!
//! # Design: follow connections, admit newcomers, keep RCP's loop
//!
//! The controller follows TCP connections through the port (from the SYN;
//! a connection whose SYN it missed is adopted at its first data packet)
//! in a bounded table, each in one of three phases:
//!
//! * **announced**: its SYN passed, nothing has signalled it yet;
//! * **pending**: one packet carried its *grant* g — for KA the first data
//!   segment (a SYN cannot be split), for native RCP the SYN's option; the
//!   sender will pace at g about one RTT later;
//! * **active**: its paced packets arrive; they carry R. An active flow in
//!   its first round trip of activity is *young*: its demand is still
//!   unknown. A young flow is counted by its first-RTT demand so far: as
//!   `w + (1 − w)·ramp` flows, where `ramp = min(1, bytes / (g·d/16))` is
//!   how much of a sixteenth of what its grant allows in one RTT it has
//!   sent. A long newcomer thus counts fully after a sixteenth of its
//!   first RTT (what R says acts one RTT later, so waiting for the end of
//!   the round trip would let it overshoot for two RTTs instead of one),
//!   and R for the others ramps down as it ramps up, while a short one
//!   that stops early takes only what it sent. This replaced a rule that
//!   counted a young flow fully once it had sent 4 packets: at Fig. 3's
//!   load, with the same caution, it gives the same queue (99th
//!   percentile 43–63 packets against 51–57) and shorter flows of 100+
//!   packets (1000–1778 packets: 1.53× the paper RCP's mean FCT against
//!   1.57×; `docs/RESULTS.md`).
//!
//! Every flow is removed at its FIN or RST, or after it has been quiet for
//! `max(3T, 2d, 4 packets at the rate last told)`.
//!
//! With A₀ = C − (non-TCP traffic) − (traffic of flows limited elsewhere),
//! N = active flows past their first round trip (plus unfollowed TCP
//! traffic counted RCP's way, its rate over R), U = pending and young
//! flows, and U_w = w·U + (1 − w)·Σ(ramps of the young flows) what they
//! count for, the port signals
//!
//! ```text
//! R = κ·A₀ / max(1, N + U_w)                                  (active flows)
//! g = max(floor, min(κ·A₀ / (1 + N + U_w + w·announced),       (a newcomer)
//!                    κ·A₀ − N·R' − w·Σ(outstanding grants)))
//! ```
//!
//! where R' is R with the newcomer counted, and the outstanding grants are
//! those of pending flows plus R for each young one. A newcomer thus gets
//! its share among the flows that will be sending when it starts, never
//! more than what is not yet promised; active flows make room for the
//! expected newcomers at the moment the newcomers start (a rate stamped now
//! acts one RTT from now — exactly when a flow granted now starts sending).
//!
//! **w**, the weight of a newcomer whose size is not known yet, is
//! `min(1, caution · u)`: u is the mean of `min(bytes, C·d)/(C·d)` over the
//! newcomers seen (learned online, gain 1/16, starting at 1), i.e. the
//! share of an RTT of the whole link an average newcomer fills;
//! [`CrowdConfig::caution`] covers that a mean is not a tail. A fresh port
//! (no history) and a port that sees long flows have w = 1: every
//! newcomer counts as a full flow. A port of short flows has w ≪ 1. When
//! more newcomers are in flight than twice the usual number (an average
//! over grants) plus four, w is 1 whatever was learned: that is a crowd.
//!
//! **κ** carries RCP's control law (DESIGN §4.3) — once per control
//! interval `κ ← κ·eˣ` (or `κ·(1 + x)`, as [`RcpConfig::update`](crate::RcpConfig)
//! says for Rcp) with `x = (T/d)(α(C − y') − β·q/d)/C`, clamped to
//! `[R_min/C, R_ceiling/C]`, with y' = y plus the pending grants weighted
//! by w (demand already promised but not arriving yet). When a newcomer is
//! granted while others are there, κ ≤ 1 first (an idle port's κ sits at
//! its ceiling, the code above C; that slack is for one flow, not for a
//! crowd).
//!
//! **floor**: a newcomer that finds no room gets `b/(4(1 + pending))` with
//! `b = floor_budget · C / d`: the floors of any number of newcomers add up
//! to about `b·H(n)/4` (H the harmonic number; 1.2·b for 64), the queue
//! they can build in their first RTT.
//!
//! # Equilibrium
//!
//! With a fixed set of N long flows, U = 0 and R = κ·A₀/N: R is κ times the
//! max-min fair share, and κ obeys RCP's update, so the fixed point is
//! RCP's (y = C, q = 0; κ = 1 when the accounting is exact).
//!
//! One exception: with two or more settled flows and at least 95 % of C
//! arriving, κ does not rise above max(1, κ). KA's rate codes are coarse,
//! so when the code below C/N carries less than C, RCP's law pushes R past
//! the code boundary above C/N; then all N flows jump to the code above at
//! once and build a queue, R falls back, and the cycle repeats. In Fig. 2
//! with this controller (10–15 KA flows) the rule removes that cycle at
//! N = 10 and 12 (queue at most 9 packets, was up to 98 and 81) and makes
//! it rarer at 11, 14 and 15 (100 ms bins with 20+ packets: 9, 17 and 10,
//! were 15, 22 and 16). At 13 it remains (26 such bins, were 23; the
//! cause was not found). On a link less
//! than 95 % busy κ rises as before, so flows below their share (not yet
//! "limited elsewhere") leave at most 5 % of C idle. For a lone flow κ stays
//! at its ceiling, the code above C, as with [`Rcp`](super::Rcp). Fig. 2
//! with this controller keeps its checks (`ka-sim paper fig3-crowd`).
//!
//! # Stability
//!
//! Between flow events R is proportional to κ, whose update is RCP's
//! multiplicative update with the same α, β, T and d: the loop is RCP's
//! loop and inherits its stability (Dukkipati's analysis of RCP with the
//! paper's α = 0.1, β = 1). The feed-forward terms (N, U, announced) change
//! only at flow events — SYN, first signal, first paced packet, the end of
//! a first round trip, FIN or silence — which do not depend on R, y or q,
//! so they close no loop: they move R in steps towards the fair share the
//! new population will have. The one measured per-flow input, "limited
//! elsewhere" (an active flow below half the lowest R of the last RTT for
//! 4 RTTs; released above 70 %), has hysteresis so a flow ramping up is not
//! taken for a limited one. A flow ramping from a small grant is counted
//! as young (weight w), not as limited.
//!
//! # What a lone new flow pays
//!
//! Nothing. On an idle port, N = U = 0 and no SYN is announced: g = κ·A₀,
//! the whole link (κ at its ceiling lets it dither on the code above C, as
//! with [`Rcp`](super::Rcp)), from its first signal, exactly as with RCP;
//! once it is active R = κ·A₀ as well. A newcomer pays only when others
//! are (or are about to be) sending: then it starts at its expected share
//! instead of C, for its first RTT.
//!
//! # A crowd: the bound
//!
//! 64 KA flows starting within 10 ms on an idle link: all 64 SYNs are
//! announced before the first data segment is stamped (a SYN arrives an RTT
//! before the segment), w = 1 (fresh port, or the crowd rule), so every
//! grant is κ·A₀/64 — the queue never grows beyond a few packets and every
//! flow is at C/64 from its first paced packet. Native RCP grants at the
//! SYN itself: the first SYN gets the whole link (it is alone), the others
//! find no room and get floors, and all of them are counted (U, then N), so
//! R is C/64 by the time the first one sends; its first RTT at C plus the
//! floors is the overshoot: about `b·H(64)/4 ≈ 1.2·b`, 120 packets with the
//! default 8 ms at 150 Mbit/s and 100 ms. Both are checked by
//! `ka-sim paper fig3-crowd` and pinned by virtual-time tests.
//!
//! # Light load: the trade-off
//!
//! At Fig. 3's load a newcomer's size is unknown when it is granted, about
//! four others start within the same RTT, and three in four are short. A
//! controller that hands every newcomer the link (RCP) overflows; one that
//! reserves room for every newcomer starves the long ones through their
//! first RTT. Neither information (sizes) nor a faster loop (one RTT) is
//! available to a router, so this is a trade-off, and
//! [`CrowdConfig::caution`] picks the point on it. Measured with
//! `ka-sim paper fig3-crowd` (KA carrier, seeds 1–3, mean FCT per size
//! bucket against the paper's RCP; `docs/RESULTS.md` has every point):
//! caution 2 leaves the queue's 99th percentile at 230–250 packets,
//! caution 3 at 106–146, and flows of 1000+ packets take 1.29 to 1.53
//! times as long as with the paper's RCP from caution 2 to 4. The default,
//! 4, is the cheapest point measured that meets the `fig3-crowd` queue bound (99th percentile ≤ 100 packets) in
//! every seed (99th percentile 43–63 packets, zero drops; 3.5 reaches 161
//! in one seed); its cost is mean FCT 10–54 % longer for flows of 100+
//! packets (they give up part of their share to newcomers that turn out
//! short). The `fig3-crowd` FCT check (within 10 % of the paper's KA) is not met
//! at any point that meets the queue bound.
//!
//! Where the long flows' capacity goes (Fig. 3, seed 1, default caution):
//! while a settled flow exists (a fifth of the time) the link carries on
//! average 53 % of C (6.6 packets/ms), R is 4.1 packets/ms for 1.2
//! settled flows, and U_w·R, what is set aside for pending and young
//! flows, is 8.0 packets/ms while they use about 2. Newcomers get 3.1
//! packets/ms on average (half of them under 3): at a grant, 3.7 others
//! are pending and 4.7 announced. The reservation is
//! a bet that cannot be hedged later. A pending newcomer's rate for its
//! whole first RTT is fixed by its grant, and anything stamped after the
//! grant reaches the others only one RTT later. So whatever of its grant
//! the others do not give up is added to the queue for that RTT if it
//! turns out long, and whatever they give up is lost for that RTT if it
//! turns out short. Two structural variants were measured and moved along
//! the same curve rather than past it (numbers in `docs/RESULTS.md`,
//! "Flash crowds"). The first lends measured slack (C − y − q/d,
//! integrated RCP-style) to the settled flows, within the reservation
//! held for newcomers. The second gives settled flows a rate that does not
//! yield to young flows and gives young flows what is left. Settings of
//! either that brought the 1000–1778-packet bucket to 1.29–1.40× (from
//! 1.54×) and the gap to native RCP under 1.5 RTT left 100–562 packets at
//! 1.07–1.18×. Every one of them pushed the queue's 99th percentile past
//! 100 packets in at least one of seeds 1–6, for KA or for the native-RCP
//! carrier. The settings that kept it under 100 left that bucket at 1.47×
//! or more. So neither is in the controller.
//!
//! What does help is a shorter loop, not more information: a router
//! that also sees the ACKs can lower the rate echo they carry back, so its
//! rate acts when the ACK reaches the sender rather than an RTT after the
//! data left. [`Echo`](super::Echo) does that and meets both checks (KA,
//! Fig. 3: queue 99th percentile 55–67 packets, every bucket's mean FCT
//! within 6 % of the paper RCP's). `Crowd` remains the controller for a
//! router that sees one direction only.
//!
//! Knowing sizes would not help: a simulated oracle that told the
//! controller every connection's size met the FCT check only with the
//! queue's 99th percentile at 156–339 packets. The queue comes from rate
//! peaks of overlapping short flows, which sizes do not reveal
//! (`docs/RESULTS.md`, "Flash crowds").
//!
//! # Limits
//!
//! * At most [`CrowdConfig::max_flows`] connections are followed (default
//!   [`DEFAULT_MAX_FLOWS`], ~150 bytes each); beyond it new connections are
//!   not followed and their traffic is counted RCP's way (rate over R).
//!   SYNs of connections that never send expire after 3 RTTs, so a SYN
//!   flood fills the table for at most that long.
//! * Non-TCP traffic is subtracted from the capacity; it gets R.
//! * The table is a `BTreeMap` keyed by the connection's addresses and
//!   ports: lookups are O(log n) with no hash an attacker could collide,
//!   and runs repeat exactly. Each packet costs one header parse and one
//!   lookup at arrival and one at departure; the bookkeeping sweep runs
//!   once per control interval.

mod config;
mod table;

use std::collections::VecDeque;
use std::time::Duration;

use super::kappa::{self, Ewma};
use super::packet::PacketInfo;
use super::{Measurement, RateController};
use crate::config::RcpConfig;
pub use config::{CrowdConfig, CrowdStats, DEFAULT_CAUTION, DEFAULT_MAX_FLOWS};
use table::{Active, Phase, Table};

/// A full-size packet, bytes (for idle timeouts).
const MTU: f64 = 1500.0;
/// Gain of the occupancy and usual-crowd estimates (one newcomer's weight).
const GAIN: f64 = 1.0 / 16.0;
/// Time constant of the rate estimates of unfollowed traffic.
const Y_TAU: Duration = Duration::from_millis(10);
/// An active flow counts as limited elsewhere below this share of the
/// lowest R of the last RTT (after 4 RTTs of activity) ...
const LIMITED_ENTER: f64 = 0.5;
/// ... and stops counting so above this share.
const LIMITED_EXIT: f64 = 0.7;
/// A young flow counts as a full flow once it has sent this share of what
/// its grant allows in one RTT (`g·d`), and in proportion before (see
/// [`Crowd`], "young").
const YOUNG_SHARE: f64 = 1.0 / 16.0;
/// With two or more settled flows and at least this share of C arriving,
/// κ does not rise above 1 (see [`Crowd`], "Equilibrium").
const FULL_LOAD: f64 = 0.95;
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
    rcp: RcpConfig,
    capacity: f64,
    hi: f64,
    kappa: f64,
    rtt: Duration,
    /// Port time: the latest of packet times and summed intervals.
    now: Duration,
    ticks: Duration,
    interval: Duration,
    table: Table,
    y_nontcp: Ewma,
    y_untracked: Ewma,
    /// Learned occupancy of a newcomer, in [0, 1].
    u: f64,
    /// Usual number of other newcomers in flight at a grant.
    usual: f64,
    rate: f64,
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
        let capacity = if capacity.is_finite() && capacity > 0.0 {
            capacity
        } else {
            0.0
        };
        let mut s = Self {
            table: Table::new(cfg.max_flows),
            cfg,
            rcp,
            capacity,
            hi: capacity,
            kappa: 1.0,
            rtt: Duration::from_millis(100),
            now: Duration::ZERO,
            ticks: Duration::ZERO,
            interval: Duration::from_millis(10),
            y_nontcp: Ewma::default(),
            y_untracked: Ewma::default(),
            u: 1.0,
            usual: 0.0,
            rate: capacity,
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
        if self.newcomers() as f64 > 2.0 * self.usual + 4.0 {
            return 1.0;
        }
        (self.cfg.caution * self.u).clamp(0.0, 1.0)
    }

    /// Connections followed now.
    pub fn followed(&self) -> usize {
        self.table.len()
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

    fn newcomers(&self) -> usize {
        self.table.pending + self.table.announced
    }

    /// A₀: the capacity left to followed flows that are not limited
    /// elsewhere.
    fn a0(&self) -> f64 {
        (self.capacity - self.y_nontcp.get(self.now, Y_TAU) - self.table.limited_m).max(0.0)
    }

    /// N: active flows past their first round trip and not limited
    /// elsewhere, plus unfollowed TCP traffic as a number of flows at R.
    fn settled(&self) -> f64 {
        let t = &self.table;
        let n = t.active.saturating_sub(t.limited).saturating_sub(t.young) as f64;
        n + self.y_untracked.get(self.now, Y_TAU) / self.rate.max(self.lo()).max(1e-9)
    }

    /// U: flows whose demand is not known yet (pending and young).
    fn unknown(&self) -> f64 {
        (self.table.pending + self.table.young) as f64
    }

    /// What the flows of U count for: w each, and a young flow more as
    /// its first-RTT demand grows, `w + (1 − w)·ramp` (one once `ramp` is 1).
    fn unknown_weighted(&self) -> f64 {
        let w = self.weight();
        w * self.unknown() + (1.0 - w) * self.table.young_ramp
    }

    fn refresh(&mut self) {
        let n = self.settled() + self.unknown_weighted();
        self.rate = self.clamp(self.kappa * self.a0() / n.max(1.0));
    }

    /// The grant for the flow being signalled first now (still counted as
    /// announced). Returns (g, whether it is the floor).
    fn grant(&self) -> (f64, bool) {
        let w = self.weight();
        let ka = self.kappa * self.a0();
        let n = self.settled();
        let wu = self.unknown_weighted();
        let others = self.table.announced.saturating_sub(1) as f64;
        let share = ka / (1.0 + n + wu + w * others);
        let after = ka / (n + wu + w).max(1.0);
        let outstanding = self.table.pending_g + self.table.young as f64 * self.rate;
        let room = ka - n * after - w * outstanding;
        let floor = self.capacity * self.cfg.floor_budget.as_secs_f64() * 1e3
            / self.d_ms()
            / (4.0 * (1.0 + self.table.pending as f64));
        // The floor stands in for a room too small, never for the share.
        if room >= floor || share <= room {
            (self.clamp(share.min(room)), false)
        } else {
            (self.clamp(share.min(floor)), true)
        }
    }

    /// One newcomer's size: its bytes as a share of C·d.
    fn learn(&mut self, bytes: u64) {
        let full = self.capacity * self.d_ms();
        if full > 0.0 {
            let x = (bytes as f64 / full).min(1.0);
            self.u += GAIN * (x - self.u);
        }
    }

    /// Expiry, per-flow rates, "limited elsewhere", the end of first round
    /// trips and size samples: once per control interval.
    fn sweep(&mut self) {
        let now = self.now;
        let d = self.rtt;
        let idle_min = (self.interval * 3).max(d * 2);
        let r_min = self.history.iter().copied().fold(self.rate, f64::min);
        let full = (self.capacity * self.d_ms()) as u64;
        let mut sizes = Vec::new();
        self.table.sweep(|f| {
            let packets = |rate: f64| {
                Duration::try_from_secs_f64(4.0 * MTU / rate.max(1e-3) / 1e3)
                    .unwrap_or(Duration::MAX)
            };
            let keep = match f.phase {
                Phase::Announced { at } => now.saturating_sub(at) < d * 3,
                Phase::Pending { at, g } => {
                    now.saturating_sub(at) < (d * 2).saturating_add(packets(g))
                }
                Phase::Active(_) => now.saturating_sub(f.last) < idle_min.max(packets(f.told)),
            };
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
    }

    fn advance_to(&mut self, now: Duration) {
        self.now = self.now.max(now).max(self.ticks);
    }

    /// The multiplier of RCP's update for one interval of `m`: y plus the
    /// demand already granted but not arriving yet.
    fn factor(&self, m: &Measurement) -> f64 {
        let y = m.input_rate + self.weight() * self.table.pending_g;
        kappa::factor(&self.rcp, self.capacity, self.d_ms(), m, y)
    }

    fn kappa_bounds(&self) -> (f64, f64) {
        let c = self.capacity.max(1e-9);
        ((self.lo() / c).min(1.0), (self.hi / c).max(1.0))
    }

    /// κ's bounds for an interval of `m`: as [`Crowd::kappa_bounds`], but
    /// while two or more settled flows keep the link at least
    /// [`FULL_LOAD`] busy, κ does not rise above max(1, κ) (see the module
    /// docs, "Equilibrium").
    fn interval_bounds(&self, m: &Measurement) -> (f64, f64) {
        let (lo, hi) = self.kappa_bounds();
        let y = m.input_rate + self.weight() * self.table.pending_g;
        if self.settled() >= 2.0 && y >= FULL_LOAD * self.capacity {
            (lo, hi.min(self.kappa.max(1.0)))
        } else {
            (lo, hi)
        }
    }

    /// Everything but κ's update, for `n` intervals of `m` ending now.
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

    fn after_intervals(&mut self) {
        self.refresh();
        let window = usize::try_from(self.rtt.as_nanos() / self.interval.as_nanos().max(1))
            .unwrap_or(MAX_HISTORY)
            .clamp(1, MAX_HISTORY);
        self.history.push_back(self.rate);
        while self.history.len() > window {
            self.history.pop_front();
        }
    }
}

impl RateController for Crowd {
    fn on_interval(&mut self, m: &Measurement) -> f64 {
        self.end_intervals(m, 1);
        let (lo, hi) = self.interval_bounds(m);
        self.kappa = (self.kappa * self.factor(m)).clamp(lo, hi);
        self.after_intervals();
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
        self.after_intervals();
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
            let n = (self.settled() + self.unknown_weighted()).max(1.0);
            let (lo, hi) = self.kappa_bounds();
            self.kappa = (rate * n / a0).clamp(lo, hi);
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
            if self.table.get(&key).is_none()
                && !self.table.insert(key, Phase::Announced { at: now }, now)
            {
                self.stats.overflow += 1;
            }
            return;
        }
        if t.fin {
            match self.table.remove(&key) {
                Some(f) => {
                    if let Phase::Active(a) = f.phase
                        && !a.sampled
                        && a.g.is_some()
                    {
                        self.learn(a.bytes.saturating_add(packet.len as u64));
                    }
                    self.refresh();
                }
                None => self.y_untracked.add(now, Y_TAU, packet.len),
            }
            return;
        }
        let d = self.rtt;
        let Some(f) = self.table.get_mut(&key) else {
            if t.payload == 0 {
                // Pure ACKs take no rate.
                self.y_untracked.add(now, Y_TAU, packet.len);
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
            if self.table.insert(key, Phase::Active(a), now) {
                self.stats.adopted += 1;
                self.refresh();
            } else {
                self.stats.overflow += 1;
                self.y_untracked.add(now, Y_TAU, packet.len);
            }
            return;
        };
        f.last = now;
        match f.phase {
            Phase::Announced { .. } => {}
            Phase::Pending { at, g } => {
                // The grant's round trip is over when paced packets come.
                if now.saturating_sub(at) >= d / 2 {
                    let bytes = packet.len as u64;
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
                    self.table.set_phase(&key, Phase::Active(a));
                    self.refresh();
                }
            }
            Phase::Active(ref mut a) => {
                a.bytes = a.bytes.saturating_add(packet.len as u64);
                let mut e = Ewma { v: a.m, at: a.m_at };
                e.add(now, d.max(Duration::from_millis(1)), packet.len);
                a.m = e.v;
                a.m_at = e.at;
                // A young flow counts by its first-RTT demand so far (see
                // the module docs, "young").
                if !a.learned && a.ramp < 1.0 {
                    let ramp = young_ramp(a.bytes, a.g.unwrap_or(f64::INFINITY), d);
                    let b = Active { ramp, ..*a };
                    self.table.set_phase(&key, Phase::Active(b));
                    self.refresh();
                }
            }
        }
    }

    fn rate_for(&mut self, now: Duration, packet: &PacketInfo) -> f64 {
        self.advance_to(now);
        let Some(t) = packet.tcp else {
            return self.rate;
        };
        let Some(phase) = self.table.get(&t.flow).map(|f| f.phase) else {
            return self.rate;
        };
        let r = match phase {
            Phase::Active(_) => self.rate,
            Phase::Pending { g, .. } => g,
            Phase::Announced { .. } => {
                let others = self.newcomers().saturating_sub(1);
                if self.table.active + others > 0 {
                    self.kappa = self.kappa.min(1.0);
                }
                let (g, floor) = self.grant();
                self.usual += GAIN * (others as f64 - self.usual);
                self.stats.grants += 1;
                self.stats.floor_grants += u64::from(floor);
                self.table
                    .set_phase(&t.flow, Phase::Pending { at: self.now, g });
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

#[cfg(test)]
mod tests;

//! What the connection-following controllers ([`Crowd`](super::Crowd),
//! [`Echo`](super::Echo)) share: RCP's loop ([`RcpLoop`]) on a multiplier κ
//! of the fair share, the port's clock and link as the intervals report
//! them, the rate estimates of traffic they do not follow, and the
//! packet and control-interval skeletons ([`Following`], [`on_packet`],
//! [`interval`], [`intervals`]).

use std::time::Duration;

use super::Measurement;
use super::packet::{FlowKey, PacketInfo, TcpInfo};
use super::rcp::RcpConfig;
use super::rcp::{LawInput, MIN_RTT_MS, RcpLoop};

/// Time constant of the rate estimates of unfollowed traffic.
pub(super) const Y_TAU: Duration = Duration::from_millis(10);
/// Gain of the controllers' slow estimates (one newcomer's weight).
pub(super) const GAIN: f64 = 1.0 / 16.0;
/// With two or more settled flows and at least this share of C arriving,
/// κ does not rise above its busy-link ceiling (see each controller's
/// "Equilibrium").
pub(super) const FULL_LOAD: f64 = 0.95;

/// Time constant of the SYN yield's counts ([`SynYield`]).
pub(super) const YIELD_TAU: Duration = Duration::from_secs(10);

/// The *SYN yield* ρ: the share of announced connections (their SYN
/// seen) that went on to send data, over about the last [`YIELD_TAU`].
/// The controllers count connections that have not sent data as ρ each
/// wherever they reserve room for newcomers (see each controller's
/// "SYN streams"): a real crowd sends data (ρ stays 1, so nothing changes
/// for it), a stream of SYNs that never do drives ρ to about
/// `1 / (its SYNs in YIELD_TAU)`.
///
/// `ρ = (D·τ + 1) / (S·τ + 1)`: S resolved connections (first data, or
/// gone without), D of them with data, each an exponentially decayed
/// count per ms with time constant τ = [`YIELD_TAU`] — the `+ 1` is one
/// successful connection of prior, so ρ is 1 until there is evidence and
/// exactly 1 while every connection sends data.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SynYield {
    sent: Ewma,
    resolved: Ewma,
}

impl SynYield {
    /// One announced connection resolved at `now`: it sent data (`sent`)
    /// or left (expired, FIN, RST) without.
    pub fn outcome(&mut self, now: Duration, sent: bool) {
        self.resolved.add(now, YIELD_TAU, 1);
        if sent {
            self.sent.add(now, YIELD_TAU, 1);
        }
    }

    /// ρ at `now`, in (0, 1].
    pub fn get(&self, now: Duration) -> f64 {
        let tau_ms = YIELD_TAU.as_secs_f64() * 1e3;
        let d = self.sent.get(now, YIELD_TAU) * tau_ms;
        let s = self.resolved.get(now, YIELD_TAU) * tau_ms;
        ((d + 1.0) / (s + 1.0)).clamp(f64::MIN_POSITIVE, 1.0)
    }
}

/// An exponentially weighted rate estimate (B/ms) as of `at`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ewma {
    pub v: f64,
    pub at: Duration,
}

impl Ewma {
    /// The estimate at `now`, decayed with time constant `tau`.
    pub fn get(&self, now: Duration, tau: Duration) -> f64 {
        let dt = now.saturating_sub(self.at).as_secs_f64() / tau.as_secs_f64().max(1e-9);
        self.v * (-dt).exp()
    }

    /// `bytes` arrived at `now`.
    pub fn add(&mut self, now: Duration, tau: Duration, bytes: usize) {
        let now = now.max(self.at);
        self.v = self.get(now, tau) + bytes as f64 / (tau.as_secs_f64() * 1e3).max(1e-9);
        self.at = now;
    }
}

/// The state every following controller keeps besides its connections.
#[derive(Debug, Clone)]
pub(super) struct Core {
    /// RCP's knobs (α, β, R_min, the update).
    pub rcp: RcpConfig,
    /// C, B/ms.
    pub capacity: f64,
    /// The ceiling (the code above C), B/ms.
    pub hi: f64,
    /// κ.
    pub kappa: RcpLoop,
    /// d.
    pub rtt: Duration,
    /// Port time as far as the controller has seen it.
    pub now: Duration,
    /// The end of the last control interval.
    pub ticks: Duration,
    /// T.
    pub interval: Duration,
    /// Non-TCP arrivals.
    pub y_nontcp: Ewma,
    /// TCP arrivals of connections not followed.
    pub y_untracked: Ewma,
    /// R, B/ms.
    pub rate: f64,
    /// ρ: how many announced connections go on to send data.
    pub syn_yield: SynYield,
}

impl Core {
    /// A link of `capacity` B/ms (0 if not a positive number), κ = 1.
    pub fn new(rcp: RcpConfig, capacity: f64) -> Self {
        let capacity = if capacity.is_finite() && capacity > 0.0 {
            capacity
        } else {
            0.0
        };
        Self {
            rcp,
            capacity,
            hi: capacity,
            kappa: RcpLoop::new(1.0),
            rtt: Duration::from_millis(100),
            now: Duration::ZERO,
            ticks: Duration::ZERO,
            interval: Duration::from_millis(10),
            y_nontcp: Ewma::default(),
            y_untracked: Ewma::default(),
            rate: capacity,
            syn_yield: SynYield::default(),
        }
    }

    /// R_min, at most C.
    pub fn lo(&self) -> f64 {
        self.rcp.min_rate.min(self.capacity)
    }

    /// `r` within `[lo, hi]` (`lo` if not a number).
    pub fn clamp(&self, r: f64) -> f64 {
        let lo = self.lo();
        if r.is_nan() {
            return lo;
        }
        r.clamp(lo, self.hi.max(lo))
    }

    /// d in milliseconds.
    pub fn d_ms(&self) -> f64 {
        (self.rtt.as_secs_f64() * 1e3).max(MIN_RTT_MS)
    }

    /// Moves the clock to `now` (never back, never before the last tick).
    pub fn advance_to(&mut self, now: Duration) {
        self.now = self.now.max(now).max(self.ticks);
    }

    /// C less the non-TCP traffic.
    pub fn spare(&self) -> f64 {
        self.capacity - self.y_nontcp.get(self.now, Y_TAU)
    }

    /// Unfollowed TCP traffic as a number of flows at R.
    pub fn untracked_flows(&self) -> f64 {
        self.y_untracked.get(self.now, Y_TAU) / self.rate.max(self.lo()).max(1e-9)
    }

    /// κ's bounds: `[R_min/C, ceiling/C]`, with 1 inside.
    pub fn kappa_bounds(&self) -> (f64, f64) {
        let c = self.capacity.max(1e-9);
        ((self.lo() / c).min(1.0), (self.hi / c).max(1.0))
    }

    /// Sets κ to `k` within its bounds.
    pub fn set_kappa(&mut self, k: f64) {
        let (lo, hi) = self.kappa_bounds();
        self.kappa.set(k.clamp(lo, hi));
    }

    /// The idle time after which an active connection told `told` B/ms is
    /// dropped: `max(3T, 2d, 4 packets at told)`.
    pub fn idle_limit(&self, told: f64) -> Duration {
        (self.interval * 3)
            .max(self.rtt * 2)
            .max(super::table::packets_at(told))
    }

    /// Whether a connection announced at `at` (its SYN seen, no rate yet)
    /// is still expected: for 3d.
    pub fn announced_alive(&self, at: Duration) -> bool {
        self.now.saturating_sub(at) < self.rtt * 3
    }

    /// Whether a connection last seen at `last` and told `told` B/ms is
    /// still active (see [`Core::idle_limit`]).
    pub fn active_alive(&self, last: Duration, told: f64) -> bool {
        self.now.saturating_sub(last) < self.idle_limit(told)
    }

    /// ρ now ([`SynYield`]).
    pub fn syn_yield(&self) -> f64 {
        self.syn_yield.get(self.now)
    }

    /// `n` announced connections resolved now, with data (`sent`) or
    /// without.
    pub fn announced_resolved(&mut self, n: usize, sent: bool) {
        for _ in 0..n {
            self.syn_yield.outcome(self.now, sent);
        }
    }

    /// `len` bytes of TCP traffic the controller does not follow.
    pub fn untracked(&mut self, len: usize) {
        self.y_untracked.add(self.now, Y_TAU, len);
    }

    /// A packet arrives at `now`: the clock moves, non-TCP traffic is
    /// counted. Returns its TCP header, if any.
    pub fn arrival(&mut self, now: Duration, packet: &PacketInfo) -> Option<TcpInfo> {
        self.advance_to(now);
        if packet.tcp.is_none() {
            self.y_nontcp.add(self.now, Y_TAU, packet.len);
        }
        packet.tcp
    }

    /// `n` intervals of `m` end now: d, T, C and the ceiling as the port
    /// measured them, and the clock.
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
    }

    /// RCP's multiplier for an interval of `m` with arrivals `y`.
    fn factor(&self, m: &Measurement, y: f64) -> f64 {
        RcpLoop::factor(
            &self.rcp,
            &LawInput {
                interval: m.interval,
                d_ms: self.d_ms(),
                capacity: self.capacity,
                input_rate: y,
                queue_bytes: m.queue_bytes,
            },
        )
    }
}

/// A controller that runs RCP's loop on κ over a table of connections.
pub(super) trait Following {
    /// The shared state.
    fn core(&self) -> &Core;
    /// The shared state, mutably.
    fn core_mut(&mut self) -> &mut Core;
    /// Bookkeeping over the connections, once per batch of intervals
    /// (after the clock moved).
    fn sweep(&mut self);
    /// y as the law sees it for an interval of `m`.
    fn demand(&self, m: &Measurement) -> f64;
    /// κ's bounds for an interval of `m`.
    fn interval_bounds(&self, m: &Measurement) -> (f64, f64);
    /// A₀: the capacity R is a share of (C less what is not shared).
    fn a0(&self) -> f64;
    /// The κ (before its bounds) that makes R `rate`, given A₀ = `a0` > 0.
    fn kappa_for(&self, rate: f64, a0: f64) -> f64;
    /// R from κ and the flows.
    fn refresh(&mut self);
    /// A SYN of connection `key` (the clock is at the packet).
    fn on_syn(&mut self, key: FlowKey);
    /// A FIN or RST `t` (it may carry data), `len` IP bytes.
    fn on_fin(&mut self, t: TcpInfo, len: usize);
    /// Any other segment `t`, `len` IP bytes.
    fn on_segment(&mut self, t: TcpInfo, len: usize);
    /// After κ moved at the end of intervals. Default: [`Following::refresh`].
    fn after_intervals(&mut self) {
        self.refresh();
    }
}

/// [`Following::core`] and [`Following::core_mut`] of a controller with a
/// `core: Core` field, for use inside its `impl Following` block.
macro_rules! core_access {
    () => {
        fn core(&self) -> &Core {
            &self.core
        }

        fn core_mut(&mut self) -> &mut Core {
            &mut self.core
        }
    };
}
pub(super) use core_access;

/// The [`RateController`](super::RateController) methods every
/// [`Following`] controller implements alike (the packet dispatch, the
/// interval law, R, restore, and wanting every packet), for use inside its
/// `impl RateController` block; the controller writes `rate_for` itself.
/// Expects a `core: Core` field and `follow`, `Duration`, `Measurement`
/// and `PacketInfo` in scope.
macro_rules! following_methods {
    () => {
        fn on_packet(&mut self, now: Duration, packet: &PacketInfo) {
            follow::on_packet(self, now, packet);
        }

        fn on_interval(&mut self, m: &Measurement) -> f64 {
            follow::interval(self, m)
        }

        /// Closed form for κ ([`RcpLoop::steps`](super::RcpLoop::steps));
        /// one sweep.
        fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
            follow::intervals(self, m, n)
        }

        fn rate(&self) -> f64 {
            self.core.rate
        }

        /// Sets κ so that R is `rate` (`follow::restore`).
        fn restore(&mut self, rate: f64) {
            follow::restore(self, rate);
        }

        fn wants_packets(&self) -> bool {
            true
        }
    };
}
pub(super) use following_methods;

/// [`RateController::on_packet`](super::RateController::on_packet) of a
/// [`Following`] controller: the clock moves, non-TCP traffic is counted,
/// a TCP segment goes to the hook of its kind.
pub(super) fn on_packet<C: Following>(c: &mut C, now: Duration, packet: &PacketInfo) {
    let Some(t) = c.core_mut().arrival(now, packet) else {
        return;
    };
    if t.syn {
        c.on_syn(t.flow);
    } else if t.fin {
        c.on_fin(t, packet.len);
    } else {
        c.on_segment(t, packet.len);
    }
}

/// [`RateController::restore`](super::RateController::restore) of a
/// [`Following`] controller: κ such that R is `rate` (TCP mode freezes R at
/// its last calm value, see the port's `mode` docs).
pub(super) fn restore<C: Following>(c: &mut C, rate: f64) {
    if !(rate.is_finite() && rate > 0.0) {
        return;
    }
    let a0 = c.a0();
    if a0 > 0.0 {
        let k = c.kappa_for(rate, a0);
        c.core_mut().set_kappa(k);
        c.refresh();
    }
}

/// [`RateController::on_interval`](super::RateController::on_interval) of
/// a [`Following`] controller.
pub(super) fn interval<C: Following>(c: &mut C, m: &Measurement) -> f64 {
    run(c, m, 1, false)
}

/// [`RateController::on_intervals`](super::RateController::on_intervals)
/// of a [`Following`] controller: one sweep, κ in closed form.
pub(super) fn intervals<C: Following>(c: &mut C, m: &Measurement, n: u64) -> f64 {
    if n == 0 {
        return c.core().rate;
    }
    run(c, m, n, true)
}

fn run<C: Following>(c: &mut C, m: &Measurement, n: u64, batch: bool) -> f64 {
    c.core_mut().end_intervals(m, n);
    c.sweep();
    let (lo, hi) = c.interval_bounds(m);
    let f = c.core().factor(m, c.demand(m));
    let kappa = &mut c.core_mut().kappa;
    if batch {
        kappa.steps(f, n, lo, hi);
    } else {
        kappa.step(f, lo, hi);
    }
    c.after_intervals();
    c.core().rate
}

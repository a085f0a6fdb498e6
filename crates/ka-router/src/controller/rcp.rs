//! RCP's control law ([`RcpLoop`], the one every controller of this crate
//! runs) and the paper's controller built on it alone ([`Rcp`]).

use std::time::Duration;

use ka_codec::scale::Scale;

use super::{Measurement, RateController};

/// Which queue length q the RCP update sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum QueueMeasure {
    /// The queue when the control interval ends (DESIGN §3.5, the ns-2
    /// reference code). The default.
    #[default]
    Now,
    /// The *persistent* queue: the smallest queue seen during the last
    /// average RTT d (whole control intervals, at most
    /// [`MAX_WINDOW_INTERVALS`](crate::persist::MAX_WINDOW_INTERVALS) of
    /// them). This is XCP's q ("the queue that does not drain within a
    /// round trip", Katabi et al. 2002; eq. 1 of the XCP-vs-RCP seed
    /// paper), and what RCP's drain term β·q/d is for. The `ka-router`
    /// binary uses it (see [`RcpConfig::queue_target`] for why).
    Persistent,
}

/// How [`Rcp`](crate::Rcp) turns one control interval's measurement into
/// the new rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum RcpUpdate {
    /// `R ← R · (1 + x)`, `x = (T/d)(α(C − y) − βq/d)/C`: DESIGN §3.5 and
    /// the ns-2 reference code, literally. When `x ≤ −1` (a queue of about
    /// a bandwidth-delay product when T = d) R drops to R_min in one step.
    Linear,
    /// `R ← R · eˣ`: the exact solution over T of RCP's own fluid model
    /// `dR/dt = R·(α(C − y) − βq/d)/(d·C)` with the interval's y and q.
    /// The same as [`RcpUpdate::Linear`] to first order in x, so wherever
    /// T ≪ d (the paper's 100 ms RTTs: T = d/10, |x| of a few hundredths)
    /// the two agree to a fraction of a percent per interval; at small
    /// RTTs, where T = d and x reaches −1 and below, it never overshoots
    /// to R_min. The default; see the crate docs ("Small RTTs").
    #[default]
    Exponential,
}

/// Knobs of the RCP controller (DESIGN §3.5).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct RcpConfig {
    /// α, weight of the spare-capacity term. Default 0.1.
    pub alpha: f64,
    /// β, weight of the queue-drain term. Default 1.0.
    pub beta: f64,
    /// R₀ as a fraction of C. Default 0.05.
    pub initial_frac: f64,
    /// R_min in B/ms; R never goes below `min(min_rate, C)`.
    ///
    /// Default: the smallest rate the paper scale can encode (R(24) ≈ 15
    /// B/ms ≈ 120 kbit/s), so a port with KA signalling never goes silent
    /// because of its own R. It used to be half of that, on the reasoning
    /// that below the scale the port should stop signalling (senders fall
    /// back to TCP, paper §II-A) and R would climb back within a few RTTs
    /// "once the load goes away". But the load that drove R there is the
    /// port's own KA flows: silenced, they fall back to TCP (DESIGN §6.3,
    /// "left by silence"), keep the queue standing, and RCP's β·q/d term
    /// holds R at the floor for as long as those flows last. A flash crowd
    /// at a small bandwidth-delay product crashes R that far (RCP reacts
    /// to the transient queue of a join with `e^(−β·q/(C·d))` per RTT);
    /// on the real testbed at 10 Mbit/s and 100 ms (`ka-testbed heavy`)
    /// such lock-ins lasted up to 15 s and filled the 1000-packet queue
    /// (docs/RESULTS.md, "The paper's testbed on real namespaces"). At the
    /// floor the flows now pace at 120 kbit/s each, the queue drains and R
    /// recovers; where even that is too much (a fair share below 120
    /// kbit/s, over 80 flows per 10 Mbit/s), the queue overflows and the
    /// senders fall back to TCP by loss instead of by silence.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::bytes_per_ms"))]
    pub min_rate: f64,
    /// Upper bound of the control interval: T = min(d, max_interval).
    /// Default 10 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub max_interval: Duration,
    /// EWMA gain for the RTT estimate d from RTT samples. Default 0.02.
    /// A KA port's d is the byte-weighted RTT of DESIGN §3.6.2 instead;
    /// the gain applies to the other carriers (native RCP's options).
    pub rtt_gain: f64,
    /// Which queue length the update uses. Default [`QueueMeasure::Now`]
    /// (DESIGN §3.5).
    pub queue_measure: QueueMeasure,
    /// A standing queue this long (at C) is free: q in the formula is
    /// `max(0, q − queue_target · C)`. Default 0 (DESIGN §3.5).
    ///
    /// *Why the `ka-router` binary sets 5 ms (and the persistent queue, and
    /// [`PortConfig::dither`]).* In equilibrium RCP trades queue for spare
    /// capacity, α·(C − y) = β·q/d: every packet of average q leaves
    /// `MTU/(α·d·C)` of the link idle — 0.8 % at the paper's 150 Mbit/s and
    /// 100 ms, but 11.5 % at 20 Mbit/s and d ≈ 50 ms. On a real host
    /// packets reach the port with scheduling jitter (a paced sender that
    /// wakes 2–5 ms late either loses that time or catches up in a burst,
    /// and at 96 % load a burst drains at only 4 % of C), so q is rarely
    /// zero. With DESIGN's rules a single paced KA flow through `ka-router
    /// --rate 20mbit --delay 20ms` got 15–17.7 Mbit/s of the 19.05 its
    /// headers allow; with the persistent queue, a 5 ms target and
    /// dithering it gets 18.2–18.6 (ka-endpoint's `netns` test). The
    /// simulator has no jitter and keeps DESIGN's rules by default (its
    /// scenarios can set all three).
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub queue_target: Duration,
    /// How an interval's measurement updates R. Default
    /// [`RcpUpdate::Exponential`] (a deviation from DESIGN §3.5's literal
    /// formula, [`RcpUpdate::Linear`]; see there).
    pub update: RcpUpdate,
}

impl Default for RcpConfig {
    fn default() -> Self {
        Self {
            alpha: 0.1,
            beta: 1.0,
            initial_frac: 0.05,
            // A hair above R(24), so that float rounding never makes it
            // encode below the smallest code.
            min_rate: Scale::PAPER.rate_of_len(Scale::PAPER.min_len as usize) * (1.0 + 1e-9),
            max_interval: Duration::from_millis(10),
            rtt_gain: 0.02,
            queue_measure: QueueMeasure::Now,
            queue_target: Duration::ZERO,
            update: RcpUpdate::Exponential,
        }
    }
}

/// The smallest d the law divides by (1 ns, in ms): guards against a zero
/// RTT producing infinities.
pub const MIN_RTT_MS: f64 = 1e-6;

/// RCP's control law (DESIGN §3.5) on one multiplied quantity v: once per
/// control interval `v ← v · eˣ` (or `v · (1 + x)`, per
/// [`RcpConfig::update`]) with `x = (T/d) · (α·(C − y) − β·q/d) / C`,
/// clamped to bounds the caller picks.
///
/// [`Rcp`] runs it on the rate R itself; [`Crowd`](super::Crowd) and
/// [`Echo`](super::Echo) run it on a multiplier κ of the fair share, so all
/// three share one loop (and its stability: Dukkipati's analysis of RCP).
/// A new controller that wants RCP's loop embeds one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RcpLoop {
    value: f64,
}

/// What one control interval tells [`RcpLoop::factor`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LawInput {
    /// T, the interval's length.
    pub interval: Duration,
    /// d in milliseconds (at least [`MIN_RTT_MS`]).
    pub d_ms: f64,
    /// C in B/ms.
    pub capacity: f64,
    /// y in B/ms (the arrivals; a controller may add demand it has granted
    /// but not seen arrive yet).
    pub input_rate: f64,
    /// q in bytes.
    pub queue_bytes: usize,
}

impl LawInput {
    /// The input of measurement `m` as the port took it (d from
    /// [`Measurement::rtt`], C from [`Measurement::capacity`]).
    pub fn of(m: &Measurement) -> Self {
        Self {
            interval: m.interval,
            d_ms: (m.rtt.as_secs_f64() * 1e3).max(MIN_RTT_MS),
            capacity: m.capacity,
            input_rate: m.input_rate,
            queue_bytes: m.queue_bytes,
        }
    }
}

impl RcpLoop {
    /// A loop starting at `value`.
    pub fn new(value: f64) -> Self {
        Self { value }
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// Sets the value (e.g. when the port restores R on entering TCP mode).
    pub fn set(&mut self, value: f64) {
        self.value = value;
    }

    /// The per-interval multiplier `1 + x` or `eˣ` ([`RcpUpdate`]), `x =
    /// (T/d)(α(C − y) − βq/d)/C`; 1 when C is not positive or the result is
    /// not a number.
    pub fn factor(rcp: &RcpConfig, i: &LawInput) -> f64 {
        let c = i.capacity;
        if c.is_nan() || c <= 0.0 {
            return 1.0;
        }
        let t = i.interval.as_secs_f64() * 1e3;
        let d = i.d_ms;
        let q = i.queue_bytes as f64;
        let x = (t / d) * (rcp.alpha * (c - i.input_rate) - rcp.beta * q / d) / c;
        let f = match rcp.update {
            RcpUpdate::Linear => 1.0 + x,
            RcpUpdate::Exponential => x.exp(),
        };
        if f.is_nan() { 1.0 } else { f }
    }

    /// One interval with multiplier `f`: `v ← clamp(v·f, lo, hi)` (`lo` if
    /// the product is not a number). Returns the new value.
    pub fn step(&mut self, f: f64, lo: f64, hi: f64) -> f64 {
        let v = self.value * f;
        self.value = if v.is_nan() { lo } else { v.clamp(lo, hi) };
        self.value
    }

    /// `n` intervals with the same multiplier `f`, in closed form: with a
    /// constant multiplier the clamped iteration is monotone, so n steps
    /// equal one step with `fⁿ` (and any `f ≤ 0` sends v to `lo` at the
    /// first step). The result may differ from n separate steps in the last
    /// bits of the mantissa. Returns the new value.
    pub fn steps(&mut self, f: f64, n: u64, lo: f64, hi: f64) -> f64 {
        if n == 0 {
            return self.value;
        }
        let v = if f <= 0.0 {
            lo
        } else {
            // Keep v itself in range first: the closed form assumes it.
            self.value.clamp(lo, hi) * f.powf(n as f64)
        };
        self.value = if v.is_nan() { lo } else { v.clamp(lo, hi) };
        self.value
    }
}

/// The RCP controller: [`RcpLoop`] on R itself, clamped to
/// `[min(R_min, C), R_max]`, starting at `R₀ = initial_frac · C`.
///
/// **Deviation from DESIGN §3.5 (upper clamp).** DESIGN clamps R to C. KA
/// signals R quantised *down* to a code (encode never over-states), and the
/// codes are 6.45 % apart, so with R ≤ C a lone flow is held at the code
/// below C: up to 6.45 % of the link (plus the 1.3 % a split's extra header
/// costs) is never used, e.g. 18.96 of 20 Mbit/s. RCP's own loop fixes this
/// if R may rise to the next code above C (`R_max` =
/// [`Measurement::max_rate`]): the flow then dithers between the two codes
/// around C and the queue term (β·q/d) keeps the average at C with a near
/// empty queue, exactly as N > 1 flows already dither around C/N. With more
/// than one flow the ceiling is never reached, so nothing else changes.
///
/// Knobs: [`RcpConfig`] (α, β, R₀, R_min, the update). Use it for the
/// paper's behaviour; see [`Crowd`](super::Crowd) and [`Echo`](super::Echo)
/// for flash crowds at light load (`docs/controllers.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rcp {
    config: RcpConfig,
    rate: RcpLoop,
}

impl Rcp {
    /// A controller for a link of `capacity` B/ms.
    pub fn new(config: RcpConfig, capacity: f64) -> Self {
        let capacity = if capacity.is_finite() && capacity > 0.0 {
            capacity
        } else {
            0.0
        };
        let lo = config.min_rate.min(capacity);
        let rate = (config.initial_frac * capacity).clamp(lo, capacity);
        Self {
            config,
            rate: RcpLoop::new(rate),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RcpConfig {
        &self.config
    }

    fn bounds(&self, m: &Measurement) -> (f64, f64) {
        let c = m.capacity.max(0.0);
        // The ceiling is never below C (nor NaN).
        let hi = if m.max_rate > c { m.max_rate } else { c };
        (self.config.min_rate.min(c), hi)
    }
}

impl RateController for Rcp {
    fn on_interval(&mut self, m: &Measurement) -> f64 {
        let (lo, hi) = self.bounds(m);
        let f = RcpLoop::factor(&self.config, &LawInput::of(m));
        self.rate.step(f, lo, hi)
    }

    /// Closed form ([`RcpLoop::steps`]).
    fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
        if n == 0 {
            return self.rate.value();
        }
        let (lo, hi) = self.bounds(m);
        let f = RcpLoop::factor(&self.config, &LawInput::of(m));
        self.rate.steps(f, n, lo, hi)
    }

    fn rate(&self) -> f64 {
        self.rate.value()
    }

    fn restore(&mut self, rate: f64) {
        if rate.is_finite() && rate > 0.0 {
            self.rate.set(rate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(y: f64, q: usize) -> Measurement {
        Measurement {
            interval: Duration::from_millis(10),
            rtt: Duration::from_millis(100),
            capacity: 1000.0,
            max_rate: 1000.0,
            input_rate: y,
            queue_bytes: q,
        }
    }

    #[test]
    fn rate_is_stationary_only_at_the_equilibrium_queue() {
        // With y at a load ρ·C below C, R stands still only at
        // q = α(1 − ρ)·C·d/β (DESIGN §3.5.1): here 0.1·0.1·1000·100/1 =
        // 1000 bytes. A longer mean queue drives R down, a shorter one up.
        let mut r = Rcp::new(RcpConfig::default(), 1000.0);
        let r0 = r.rate();
        assert!((r.on_interval(&m(900.0, 1000)) - r0).abs() < 1e-9);
        assert!(r.on_interval(&m(900.0, 1500)) < r0);
        let low = r.rate();
        assert!(r.on_interval(&m(900.0, 500)) > low);
    }

    #[test]
    fn starts_at_initial_fraction() {
        let r = Rcp::new(RcpConfig::default(), 1000.0);
        assert!((r.rate() - 50.0).abs() < 1e-9);
    }

    fn linear() -> RcpConfig {
        RcpConfig {
            update: RcpUpdate::Linear,
            ..RcpConfig::default()
        }
    }

    #[test]
    fn formula_one_step() {
        // y = 500, q = 10_000 bytes: x = 0.1·(0.1·500 − 10000/100)/1000
        let x = 0.1 * (0.1 * 500.0 - 100.0) / 1000.0;
        let mut r = Rcp::new(linear(), 1000.0);
        let got = r.on_interval(&m(500.0, 10_000));
        let want = 50.0 * (1.0 + x);
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        let mut r = Rcp::new(RcpConfig::default(), 1000.0);
        let got = r.on_interval(&m(500.0, 10_000));
        let want = 50.0 * x.exp();
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        // The same to first order: x = −0.5 %, the two differ by x²/2.
        assert!((x.exp() - (1.0 + x)).abs() < 2e-5);
    }

    /// T = d (small RTTs) and a queue above one bandwidth-delay product:
    /// the linear step falls to R_min, the exponential one by e^x.
    #[test]
    fn exponential_update_does_not_collapse_at_t_equal_d() {
        // C = 10 000 B/ms (80 Mbit/s), so that R₀·e^x stays above R_min
        // (≈ 15 B/ms, the smallest encodable rate).
        let big = Measurement {
            interval: Duration::from_millis(1),
            rtt: Duration::from_millis(1),
            // y = 2C, q = 1.2 C·d: x = 0.1·(−1) − 1.2 = −1.3
            capacity: 10_000.0,
            max_rate: 10_000.0,
            input_rate: 20_000.0,
            queue_bytes: 12_000,
        };
        let mut lin = Rcp::new(linear(), 10_000.0);
        assert_eq!(lin.on_interval(&big), RcpConfig::default().min_rate);
        let mut exp = Rcp::new(RcpConfig::default(), 10_000.0);
        let got = exp.on_interval(&big);
        let want = 500.0 * (-1.3f64).exp();
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }

    #[test]
    fn clamps_to_capacity_and_min() {
        let mut r = Rcp::new(RcpConfig::default(), 1000.0);
        for _ in 0..10_000 {
            r.on_interval(&m(0.0, 0));
        }
        assert_eq!(r.rate(), 1000.0);
        for _ in 0..10_000 {
            r.on_interval(&m(5000.0, 1_000_000));
        }
        assert_eq!(r.rate(), RcpConfig::default().min_rate);
    }

    #[test]
    fn ceiling_above_capacity_is_honoured_but_never_below() {
        let mut r = Rcp::new(RcpConfig::default(), 1000.0);
        let up = Measurement {
            max_rate: 1064.0,
            ..m(0.0, 0)
        };
        for _ in 0..10_000 {
            r.on_interval(&up);
        }
        assert_eq!(r.rate(), 1064.0);
        let below = Measurement {
            max_rate: 900.0,
            ..m(0.0, 0)
        };
        r.on_interval(&below);
        assert_eq!(r.rate(), 1000.0, "a ceiling below C is ignored");
    }

    #[test]
    fn batch_matches_iteration() {
        for (cfg, (y, q)) in [linear(), RcpConfig::default()]
            .into_iter()
            .flat_map(|c| [(0.0, 0), (900.0, 0), (1200.0, 3000), (100.0, 50)].map(|m| (c, m)))
        {
            let mut a = Rcp::new(cfg, 1000.0);
            let mut b = a.clone();
            for _ in 0..137 {
                a.on_interval(&m(y, q));
            }
            b.on_intervals(&m(y, q), 137);
            let rel = (a.rate() - b.rate()).abs() / a.rate();
            assert!(rel < 1e-9, "{y} {q}: {} vs {}", a.rate(), b.rate());
        }
    }

    #[test]
    fn huge_negative_factor_goes_to_min() {
        let mut r = Rcp::new(RcpConfig::default(), 1000.0);
        let mm = Measurement {
            queue_bytes: usize::MAX / 2,
            ..m(0.0, 0)
        };
        assert_eq!(r.on_intervals(&mm, 3), RcpConfig::default().min_rate);
    }

    /// A multiplier that is not a number leaves the value alone; a product
    /// that is not one (0 · ∞) falls to the lower bound.
    #[test]
    fn non_numbers_are_contained() {
        let nan = LawInput {
            capacity: f64::NAN,
            ..LawInput::of(&m(0.0, 0))
        };
        assert_eq!(RcpLoop::factor(&RcpConfig::default(), &nan), 1.0);
        let mut l = RcpLoop::new(0.0);
        assert_eq!(l.step(f64::INFINITY, 2.0, 5.0), 2.0);
        assert_eq!(l.steps(f64::INFINITY, 4, 2.0, 5.0), 5.0);
    }
}

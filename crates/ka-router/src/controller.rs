//! Rate controllers (DESIGN §4.3, paper §III-A).
//!
//! The paper insists the KA mechanism is independent of how a router picks
//! its rate ("the router can use whatever scheme"), so the [`crate::Port`]
//! talks to a [`RateController`] trait object. [`Rcp`] is the default: the
//! Rate Control Protocol update as in the reference ns-2 code.
//!
//! Units: rates in bytes per millisecond (B/ms), times in milliseconds as
//! `f64` inside the formula, queue in bytes.

use std::time::Duration;

use crate::config::{RcpConfig, RcpUpdate};

pub mod crowd;
pub mod echo;
mod kappa;
pub mod packet;
#[cfg(test)]
mod test_packets;

pub use crowd::{Crowd, CrowdConfig};
pub use echo::{Echo, EchoConfig, EchoStats};
pub use packet::{FlowKey, PacketInfo, TcpInfo};

/// What the port measured over one control interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// T: the length of the interval that just ended.
    pub interval: Duration,
    /// d: the port's current average RTT (EWMA of RTT indicators).
    pub rtt: Duration,
    /// C: the port's capacity in B/ms.
    pub capacity: f64,
    /// The largest R the controller may advertise, in B/ms: C rounded *up*
    /// to the next rate of the port's code scale (C itself if C is off the
    /// scale). See [`Rcp`] for why this is not C.
    pub max_rate: f64,
    /// y: bytes that arrived at the port during the interval, divided by T,
    /// in B/ms (see the crate docs for what counts as an arrival).
    pub input_rate: f64,
    /// q, in bytes: the persistent queue (smallest over the last d) or the
    /// queue at the end of the interval, per [`RcpConfig::queue_measure`].
    pub queue_bytes: usize,
}

/// Upper bound on the iterations the default [`RateController::on_intervals`]
/// runs for one batch (controllers with a closed form override it).
pub const MAX_BATCH_ITERATIONS: u64 = 65_536;

/// A router rate controller: called once per control interval, returns the
/// rate the port advertises.
///
/// The port calls nothing while it is in TCP mode (the rate is frozen there),
/// so an implementation never has to know about modes.
pub trait RateController: Send {
    /// One control interval ended with measurement `m`; returns the new rate
    /// R in B/ms.
    fn on_interval(&mut self, m: &Measurement) -> f64;

    /// `n` consecutive control intervals with the *same* measurement ended
    /// (the port batches intervals in which nothing arrived and the queue did
    /// not change, e.g. after an idle gap). Returns the new rate.
    ///
    /// The default runs [`on_interval`](Self::on_interval) `min(n,
    /// MAX_BATCH_ITERATIONS)` times, so catching up after any idle gap costs
    /// bounded work; implementations with a closed form should override it.
    fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
        for _ in 0..n.min(MAX_BATCH_ITERATIONS) {
            self.on_interval(m);
        }
        self.rate()
    }

    /// The current rate R in B/ms.
    fn rate(&self) -> f64;

    /// Puts R back to `rate` (B/ms), within the controller's bounds. The
    /// port calls it when it enters TCP mode, with the R it had while its
    /// queue was last short (see the crate's `mode` docs). The default
    /// ignores it (R stays as it is).
    fn restore(&mut self, rate: f64) {
        let _ = rate;
    }

    /// Whether the controller wants [`on_packet`](Self::on_packet) calls.
    /// The port only reads TCP headers for controllers that do. Default
    /// false.
    fn wants_packets(&self) -> bool {
        false
    }

    /// A packet arrived at the port at `now` (port time: since the port
    /// was created), before the queue's verdict — called for every packet
    /// [`Measurement::input_rate`] counts, and also while the port is in
    /// TCP mode. Only called if [`wants_packets`](Self::wants_packets).
    /// Default: nothing.
    fn on_packet(&mut self, now: Duration, packet: &PacketInfo) {
        let _ = (now, packet);
    }

    /// The rate to signal in `packet`, which leaves the port at `now`.
    /// Only called if [`wants_packets`](Self::wants_packets). Default:
    /// [`rate`](Self::rate).
    fn rate_for(&mut self, now: Duration, packet: &PacketInfo) -> f64 {
        let _ = (now, packet);
        self.rate()
    }

    /// Whether the controller wants [`on_reverse`](Self::on_reverse)
    /// calls. Default false.
    fn wants_reverse(&self) -> bool {
        false
    }

    /// A TCP segment of the opposite direction passes the router at `now`
    /// (see [`Port::on_reverse`](crate::Port::on_reverse)): `flow` is the
    /// direction of this port it acknowledges (its source is this port's
    /// destination), `echo` the rate (B/ms) its echo carries if it carries
    /// one the port can lower. Returns the rate to lower that echo to (the
    /// port never raises it). Only called if
    /// [`wants_reverse`](Self::wants_reverse). Default: none.
    fn on_reverse(&mut self, now: Duration, flow: &FlowKey, echo: Option<f64>) -> Option<f64> {
        let _ = (now, flow, echo);
        None
    }
}

/// The RCP controller: `R ← R · eˣ` (or `R · (1 + x)`, DESIGN §4.3's
/// literal formula, per [`RcpConfig::update`]) with
/// `x = (T/d) · (α·(C − y) − β·q/d) / C`, clamped to
/// `[min(R_min, C), R_max]`, starting at `R₀ = initial_frac · C`.
///
/// **Deviation from DESIGN §4.3 (upper clamp).** DESIGN clamps R to C. KA
/// signals R quantised *down* to a code (encode never over-states), and the
/// codes are 6.45 % apart, so with R ≤ C a lone flow is held at the code
/// below C: up to 6.45 % of the link (plus the 1.3 % a split's extra header
/// costs) is never used, e.g. 18.96 of 20 Mbit/s. RCP's own loop fixes this
/// if R may rise to the next code above C (`R_max` =
/// [`Measurement::max_rate`]): the flow then dithers between the two codes
/// around C and the queue term (β·q/d) keeps the average at C with a near
/// empty queue, exactly as N > 1 flows already dither around C/N. With more
/// than one flow the ceiling is never reached, so nothing else changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Rcp {
    config: RcpConfig,
    rate: f64,
}

/// The smallest d the formula divides by (1 ns, in ms): guards against a
/// zero RTT producing infinities.
const MIN_RTT_MS: f64 = 1e-6;

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
        Self { config, rate }
    }

    /// The configuration.
    pub fn config(&self) -> &RcpConfig {
        &self.config
    }

    /// The per-interval multiplier: `1 + x` or `eˣ` ([`RcpUpdate`]), `x =
    /// (T/d)(α(C − y) − βq/d)/C`.
    fn factor(&self, m: &Measurement) -> f64 {
        let c = m.capacity;
        if c.is_nan() || c <= 0.0 {
            return 1.0;
        }
        let t = m.interval.as_secs_f64() * 1e3;
        let d = (m.rtt.as_secs_f64() * 1e3).max(MIN_RTT_MS);
        let q = m.queue_bytes as f64;
        let x = (t / d) * (self.config.alpha * (c - m.input_rate) - self.config.beta * q / d) / c;
        let f = match self.config.update {
            RcpUpdate::Linear => 1.0 + x,
            RcpUpdate::Exponential => x.exp(),
        };
        if f.is_nan() { 1.0 } else { f }
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
        self.rate = (self.rate * self.factor(m)).clamp(lo, hi);
        self.rate
    }

    /// Closed form: with a constant multiplier f the clamped iteration is
    /// monotone, so n steps equal one step with `f^n` (and any `f ≤ 0` sends
    /// R to R_min at the first step). The result may differ from n separate
    /// steps in the last bits of the mantissa.
    fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
        if n == 0 {
            return self.rate;
        }
        let (lo, hi) = self.bounds(m);
        let f = self.factor(m);
        let r = if f <= 0.0 {
            lo
        } else {
            // Keep R itself in range first: the closed form assumes it.
            self.rate.clamp(lo, hi) * f.powf(n as f64)
        };
        self.rate = if r.is_nan() { lo } else { r.clamp(lo, hi) };
        self.rate
    }

    fn rate(&self) -> f64 {
        self.rate
    }

    fn restore(&mut self, rate: f64) {
        if rate.is_finite() && rate > 0.0 {
            self.rate = rate;
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
}

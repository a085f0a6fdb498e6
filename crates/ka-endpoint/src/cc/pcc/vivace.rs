//! Vivace's arithmetic: the utility of one monitor interval, the utility
//! gradient of a pair of rate trials, and the step rule that turns a
//! gradient into a rate change (Dong et al., "PCC Vivace: Online-Learning
//! Congestion Control", NSDI'18, §2 and §4). Rates here are in Mbit/s
//! (10⁶ bit/s), the unit in which the paper's coefficients are given.

/// Vivace's latency-aware utility function (paper eq. (1)):
///
/// ```text
/// u(x, dRTT/dT, L) = x^t − b · x · dRTT/dT − c · x · L
/// ```
///
/// `x` is the sending rate of a monitor interval (Mbit/s), `dRTT/dT` the
/// slope of the RTT samples of that interval's packets over their send
/// times (seconds per second), `L` its loss rate. With `0 < t < 1`,
/// `b ≥ 0` and `c > 0` the paper's Theorem 1 gives senders sharing a
/// bottleneck a unique, fair equilibrium.
///
/// As in the authors' implementation (PCC-Uspace), an RTT gradient below
/// [`VivaceUtility::rtt_gradient_filter`] counts as 0 — including every
/// negative one: a draining queue earns no reward. With the reward, a
/// sender whose trials both drain a queue left by an overshoot prefers the
/// lower rate and keeps stepping down, with a growing change boundary,
/// far below the capacity (in our runs from 21 to 13 Mbit/s on a
/// 20 Mbit/s path); without it, a rate below capacity simply sees no
/// congestion and climbs back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VivaceUtility {
    /// `t` (0.9): the concave throughput reward.
    pub exponent: f64,
    /// `b` (900): weight of the RTT gradient (latency inflation).
    pub rtt_coefficient: f64,
    /// `c` (11.35): weight of the loss rate. A sender at `x` Mbit/s stops
    /// growing where `t·x^(t−1) = c·L`, so random loss up to about
    /// `0.9·x^(−0.1)/11.35` (5 % at 100 Mbit/s) does not hold it back.
    pub loss_coefficient: f64,
    /// RTT gradients below this count as 0 (noise filter: ACK aggregation,
    /// packetisation and the one-packet quantum of a low-rate sender move
    /// the slope by about a hundredth; PCC-Uspace uses 0.02). Default 0.02.
    pub rtt_gradient_filter: f64,
}

impl Default for VivaceUtility {
    fn default() -> Self {
        VivaceUtility {
            exponent: 0.9,
            rtt_coefficient: 900.0,
            loss_coefficient: 11.35,
            rtt_gradient_filter: 0.02,
        }
    }
}

impl VivaceUtility {
    /// `u(x, dRTT/dT, L)` for a rate `x_mbps`, an RTT gradient and a loss
    /// rate (clamped to `[0, 1]`).
    pub fn utility(&self, x_mbps: f64, rtt_gradient: f64, loss: f64) -> f64 {
        let x = if x_mbps.is_finite() {
            x_mbps.max(0.0)
        } else {
            0.0
        };
        let g = self.filtered_gradient(rtt_gradient);
        let l = if loss.is_finite() {
            loss.clamp(0.0, 1.0)
        } else {
            0.0
        };
        x.powf(self.exponent) - self.rtt_coefficient * x * g - self.loss_coefficient * x * l
    }

    /// The RTT gradient the utility uses: 0 below the filter.
    pub fn filtered_gradient(&self, rtt_gradient: f64) -> f64 {
        if rtt_gradient.is_finite() && rtt_gradient >= self.rtt_gradient_filter {
            rtt_gradient
        } else {
            0.0
        }
    }
}

/// What a trial MI measured, for [`pair_gradient`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct TrialStats {
    /// Target rate, Mbit/s.
    pub rate_mbps: f64,
    /// `dRTT/dT`, unfiltered.
    pub rtt_gradient: f64,
    /// Packets (sequence bytes / MSS) lost and accounted for.
    pub lost: f64,
    pub accounted: f64,
}

impl TrialStats {
    fn loss(&self) -> f64 {
        if self.accounted > 0.0 {
            (self.lost / self.accounted).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// The utility gradient of one pair of trials. Loss rates that do not
/// differ significantly — by at most `z` standard errors of the difference
/// of two binomial proportions (pooled estimate) — are replaced by their
/// pooled value in both utilities: under heavy loss, the ±0.1 sampling
/// noise of a loss rate measured over ~50 packets, multiplied by `c·x`,
/// would otherwise decide the sign of the gradient, and the two pairs of a
/// round would disagree by chance.
pub(super) fn pair_gradient(
    u: &VivaceUtility,
    p: &TrialStats,
    q: &TrialStats,
    z: f64,
) -> Option<f64> {
    let (mut lp, mut lq) = (p.loss(), q.loss());
    if p.accounted > 0.0 && q.accounted > 0.0 {
        let pooled = ((p.lost + q.lost) / (p.accounted + q.accounted)).clamp(0.0, 1.0);
        let se = (pooled * (1.0 - pooled) * (1.0 / p.accounted + 1.0 / q.accounted)).sqrt();
        if (lp - lq).abs() <= z * se {
            lp = pooled;
            lq = pooled;
        }
    }
    let up = u.utility(p.rate_mbps, p.rtt_gradient, lp);
    let uq = u.utility(q.rate_mbps, q.rtt_gradient, lq);
    utility_gradient(p.rate_mbps, up, q.rate_mbps, uq)
}

/// The utility gradient of two trials (paper §4.1:
/// `γ = (u(r(1+ε)) − u(r(1−ε))) / (2εr)`, here for any two rates):
/// `(u₁ − u₂) / (x₁ − x₂)`, `None` if the rates are equal.
pub(super) fn utility_gradient(x1: f64, u1: f64, x2: f64, u2: f64) -> Option<f64> {
    let dx = x1 - x2;
    (dx != 0.0 && dx.is_finite()).then(|| (u1 - u2) / dx)
}

/// Vivace's step rule (paper §4.2): gradient ascent `Δr = θ · γ` with
///
/// * the **confidence amplifier** `θ = m(τ) · θ₀`, where `τ` counts the
///   consecutive decisions in the same direction (this one included);
///   the paper asks for a non-decreasing `m` with `m(1) = 1`, and we take
///   the authors' own (WebRTC's PCC module): `m(τ) = τ` up to 3, then
///   `2τ − 3`, and
/// * the **dynamic change boundary** `|Δr| ≤ ω · r`, `ω = ω₀ + k·δ`: each
///   consecutive step that hits the boundary raises `k` by one; a step
///   within it sets `k` to the smallest value whose boundary admits that
///   step.
///
/// A change of direction resets `τ` and `k` (so the first step back is at
/// most `ω₀ · r`).
#[derive(Debug, Clone)]
pub(super) struct Stepper {
    theta0: f64,
    omega0: f64,
    delta: f64,
    /// Consecutive decisions in direction `dir`.
    tau: u32,
    k: u32,
    /// Direction of the last step: 1 up, −1 down, 0 none yet.
    dir: i8,
}

impl Stepper {
    pub(super) fn new(theta0: f64, omega0: f64, delta: f64) -> Self {
        Stepper {
            theta0,
            omega0,
            delta,
            tau: 0,
            k: 0,
            dir: 0,
        }
    }

    /// Forgets the accumulated confidence (an inconclusive trial, an RTO,
    /// a new base rate from outside).
    pub(super) fn reset(&mut self) {
        self.tau = 0;
        self.k = 0;
        self.dir = 0;
    }

    /// The current boundary `ω = ω₀ + k·δ` (for tests and logs).
    pub(super) fn omega(&self) -> f64 {
        self.omega0 + f64::from(self.k) * self.delta
    }

    /// The rate change (Mbit/s) for gradient `gamma` at rate `r` (Mbit/s).
    pub(super) fn step(&mut self, r: f64, gamma: f64) -> f64 {
        let dir: i8 = if gamma > 0.0 {
            1
        } else if gamma < 0.0 {
            -1
        } else {
            return 0.0;
        };
        if !(r > 0.0 && r.is_finite() && gamma.is_finite()) {
            return 0.0;
        }
        if dir != self.dir {
            self.tau = 0;
            self.k = 0;
            self.dir = dir;
        }
        self.tau = self.tau.saturating_add(1);
        let raw = amplifier(self.tau) * self.theta0 * gamma;
        let bound = self.omega() * r;
        if raw.abs() > bound {
            self.k = self.k.saturating_add(1);
            f64::from(dir) * bound
        } else {
            let need = raw.abs() / r;
            let k = ((need - self.omega0) / self.delta).ceil();
            self.k = if k > 0.0 { k as u32 } else { 0 };
            raw
        }
    }
}

/// `m(τ)`: `τ` for `τ ≤ 3`, then `2τ − 3`.
fn amplifier(tau: u32) -> f64 {
    let t = f64::from(tau.max(1));
    if tau <= 3 { t } else { 2.0 * t - 3.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn utility_terms() {
        let u = VivaceUtility::default();
        // no congestion: x^0.9
        assert!(close(u.utility(10.0, 0.0, 0.0), 10f64.powf(0.9)));
        // RTT gradient 0.05 at 10 Mbit/s: −900 · 10 · 0.05 = −450
        assert!(close(u.utility(10.0, 0.05, 0.0), 10f64.powf(0.9) - 450.0));
        // a draining queue earns nothing (one-sided filter)
        assert!(close(u.utility(10.0, -0.05, 0.0), 10f64.powf(0.9)));
        // loss 2 %: −11.35 · 10 · 0.02
        assert!(close(
            u.utility(10.0, 0.0, 0.02),
            10f64.powf(0.9) - 11.35 * 10.0 * 0.02
        ));
        // gradients under the filter are noise
        assert!(close(u.utility(10.0, 0.019, 0.0), 10f64.powf(0.9)));
        assert!(close(
            u.utility(10.0, 0.02, 0.0),
            10f64.powf(0.9) - 900.0 * 10.0 * 0.02
        ));
        // garbage in, finite out
        assert!(u.utility(f64::NAN, f64::INFINITY, f64::NAN).is_finite());
        assert_eq!(u.utility(-3.0, 0.0, 2.0), 0.0);
    }

    #[test]
    fn utility_is_maximal_at_capacity_on_a_drop_tail_path() {
        // One sender on a path of capacity C with an empty queue: above C
        // the queue grows at (x − C)/C seconds per second (the RTT
        // gradient); once full, the excess is lost (L = 1 − C/x). Either
        // way the utility is highest at x = C.
        let u = VivaceUtility::default();
        let c = 20.0;
        let growing = |x: f64| u.utility(x, ((x - c) / c).max(0.0), 0.0);
        let full = |x: f64| u.utility(x, 0.0, (1.0 - c / x).max(0.0));
        let curves: [&dyn Fn(f64) -> f64; 2] = [&growing, &full];
        for f in curves {
            let at_c = f(c);
            for x in [5.0, 10.0, 19.0, 21.0, 25.0, 40.0] {
                assert!(f(x) < at_c, "u({x}) = {} vs u(C) = {at_c}", f(x));
            }
        }
        // and the loss term alone (full queue) tolerates random loss below
        // t·x^(t−1)/c: at 100 Mbit/s about 5 %
        let tolerance = 0.9 * 100f64.powf(-0.1) / 11.35;
        assert!((0.049..0.051).contains(&tolerance), "{tolerance}");
    }

    #[test]
    fn gradient_of_a_pair() {
        // γ = (u(r(1+ε)) − u(r(1−ε))) / (2εr)
        let (r, eps) = (10.0, 0.05);
        let g = utility_gradient(r * (1.0 + eps), 12.0, r * (1.0 - eps), 11.0).unwrap();
        assert!(close(g, 1.0 / (2.0 * eps * r)));
        // order does not matter
        let g2 = utility_gradient(r * (1.0 - eps), 11.0, r * (1.0 + eps), 12.0).unwrap();
        assert!(close(g, g2));
        assert_eq!(utility_gradient(3.0, 1.0, 3.0, 2.0), None);
        // without congestion the gradient is the slope of x^0.9
        let u = VivaceUtility::default();
        let g = gradient_around_10(&u, 0.0, 0.0);
        assert!((g - 0.9 * 10f64.powf(-0.1)).abs() < 1e-3, "{g}");
    }

    /// The utility gradient between 10.5 and 9.5 Mbit/s (no RTT gradient)
    /// at loss rates `loss_hi` and `loss_lo`.
    fn gradient_around_10(u: &VivaceUtility, loss_hi: f64, loss_lo: f64) -> f64 {
        let (hi, lo) = (u.utility(10.5, 0.0, loss_hi), u.utility(9.5, 0.0, loss_lo));
        utility_gradient(10.5, hi, 9.5, lo).unwrap()
    }

    fn trial(rate_mbps: f64, rtt_gradient: f64, lost: f64, accounted: f64) -> TrialStats {
        TrialStats {
            rate_mbps,
            rtt_gradient,
            lost,
            accounted,
        }
    }

    #[test]
    fn pair_gradient_pools_insignificant_loss_differences() {
        let u = VivaceUtility::default();
        // 45 % vs 40 % loss over 50 packets each: within 2 standard errors
        // (≈ 0.099 · 2), so both use the pooled 42.5 % and the gradient is
        // the deterministic t·x^(t−1) − c·L̄ (negative: heavy loss).
        let hi = trial(10.5, 0.0, 22.5, 50.0);
        let lo = trial(9.5, 0.0, 20.0, 50.0);
        let g = pair_gradient(&u, &hi, &lo, 2.0).unwrap();
        let pooled = 42.5 / 100.0;
        let want = (u.utility(10.5, 0.0, pooled) - u.utility(9.5, 0.0, pooled)) / 1.0;
        assert!(close(g, want), "{g} vs {want}");
        assert!(g < -4.0);
        // without pooling, the 5-point difference (sampling noise) would
        // weigh in at more than twice that
        let raw = gradient_around_10(&u, 0.45, 0.40);
        assert!((raw - g).abs() > 1.0, "{raw} vs {g}");
        // a significant difference (0 % vs 20 % of 500 packets) is kept
        let hi = trial(10.5, 0.0, 100.0, 500.0);
        let lo = trial(9.5, 0.0, 0.0, 500.0);
        let g = pair_gradient(&u, &hi, &lo, 2.0).unwrap();
        let want = u.utility(10.5, 0.0, 0.2) - u.utility(9.5, 0.0, 0.0);
        assert!(close(g, want), "{g} vs {want}");
        // the RTT term enters as measured (filtered)
        let hi = trial(10.5, 0.05, 0.0, 100.0);
        let lo = trial(9.5, 0.0, 0.0, 100.0);
        let g = pair_gradient(&u, &hi, &lo, 2.0).unwrap();
        assert!(close(
            g,
            u.utility(10.5, 0.05, 0.0) - u.utility(9.5, 0.0, 0.0)
        ));
        // nothing accounted: no loss term; equal rates: no gradient
        let g = pair_gradient(
            &u,
            &trial(2.0, 0.0, 0.0, 0.0),
            &trial(1.0, 0.0, 0.0, 0.0),
            2.0,
        );
        assert!(close(g.unwrap(), 2f64.powf(0.9) - 1.0));
        assert_eq!(
            pair_gradient(
                &u,
                &trial(1.0, 0.0, 0.0, 9.0),
                &trial(1.0, 0.0, 0.0, 9.0),
                2.0
            ),
            None
        );
    }

    #[test]
    fn amplifier_grows_within_the_boundary() {
        assert_eq!(
            (1..=6).map(amplifier).collect::<Vec<_>>(),
            vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]
        );
        let mut s = Stepper::new(1.0, 0.05, 0.1);
        // at r = 100 the first boundary is 5: steps of m(τ)·θ₀·γ = m(τ)·0.5
        assert!(close(s.step(100.0, 0.5), 0.5));
        assert!(close(s.step(100.0, 0.5), 1.0));
        assert!(close(s.step(100.0, 0.5), 1.5));
        assert_eq!(s.omega(), 0.05);
        assert!(close(s.step(100.0, 0.5), 2.5));
        assert_eq!(s.omega(), 0.05);
        // a change of direction resets the amplifier
        assert!(close(s.step(100.0, -0.5), -0.5));
        assert!(close(s.step(100.0, -0.5), -1.0));
        // zero gradient: no step, state kept
        assert_eq!(s.step(100.0, 0.0), 0.0);
        assert!(close(s.step(100.0, -0.5), -1.5));
        assert!(close(s.step(100.0, -0.5), -2.5));
        s.reset();
        assert!(close(s.step(100.0, -0.5), -0.5));
    }

    #[test]
    fn boundary_grows_while_hit_and_shrinks_to_fit() {
        let mut s = Stepper::new(1.0, 0.05, 0.1);
        // a huge gradient (RTT term) is capped at ω₀·r = 5 % ...
        assert!(close(s.step(20.0, -500.0), -1.0));
        assert!(close(s.omega(), 0.15));
        // ... then at (ω₀ + δ)·r = 15 %, 25 %, ...
        assert!(close(s.step(20.0, -500.0), -3.0));
        assert!(close(s.step(20.0, -500.0), -5.0));
        assert!(close(s.omega(), 0.35));
        // a step within the boundary sets k to the smallest that admits
        // it: τ = 4, |Δr| = m(4)·0.3 = 1.5 = 7.5 % of 20 → k = 1 (ω = 15 %)
        assert!(close(s.step(20.0, -0.3), -1.5));
        assert!(close(s.omega(), 0.15));
        // turning back starts again at ω₀
        assert!(close(s.step(20.0, 500.0), 1.0));
        assert!(close(s.omega(), 0.15));
        // nonsense rates never move
        assert_eq!(s.step(0.0, 1.0), 0.0);
        assert_eq!(s.step(f64::NAN, 1.0), 0.0);
    }
}

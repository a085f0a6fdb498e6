//! The impairment stage (DESIGN §3.10): netem's loss, duplication,
//! corruption, delay jitter and reordering, in the delay line.
//!
//! A port whose [`PortConfig::impair`](crate::PortConfig::impair) is off
//! (the default) has no impairment stage at all: its delay line and its
//! random draws are exactly those of a port built before the stage
//! existed. When any knob is on, every piece the shaper has serialised
//! (a whole packet, or one fragment of a KA split) goes through these
//! steps, each a draw from the stage's own SplitMix64 stream, made only
//! when its knob is above 0:
//!
//! 1. **duplicate** — with probability `duplicate` a copy of the piece is
//!    made. The copy is not serialised again (it takes no link time, like
//!    a link layer that repeats a frame) and is never itself duplicated.
//!    Both copies then go through steps 2–4 independently, in order
//!    (original first).
//! 2. **loss** — with probability `loss` the copy is lost on the wire
//!    after its serialisation (it occupied the link; counted in
//!    [`Counters::drops_impair`](crate::Counters::drops_impair)).
//! 3. **corrupt** — with probability `corrupt` one bit of the copy, drawn
//!    uniformly among all its bits (IP header included, as netem), is
//!    flipped. Nothing recomputes a checksum: the receiver's IP or
//!    transport checksum is what catches it.
//! 4. **delay** — with probability `reorder` the copy leaves as soon as
//!    its serialisation ends (no propagation delay); otherwise after
//!    `delay + J`, J uniform in `[−jitter, +jitter]` (integer
//!    nanoseconds, both ends included; with `jitter_correlation` ρ,
//!    `(1 − ρ)` of such a draw plus `ρ` of the previous J, as netem). The delay line releases pieces in
//!    order of release time (ties in the order they were serialised), so
//!    jitter and `reorder` reorder pieces; a piece that leaves before one
//!    serialised earlier counts in
//!    [`Counters::reordered`](crate::Counters::reordered).
//!
//! **Memory.** Every serialised piece puts at most two entries on the
//! delay line (a copy is never copied again), each released at most
//! `delay + jitter` after its serialisation ended: the delay line holds at
//! most twice the pieces the link serialises in `delay + jitter`, plus
//! what the caller has not collected.

use std::time::Duration;

use crate::ConfigError;
use crate::qdisc::rng::{SplitMix64, mix64};
use crate::shaper::DelayLine;
use crate::stats::Counters;
use crate::time::duration_ns;

/// Knobs of a port's impairment stage (netem's `loss`, `duplicate`,
/// `corrupt`, `reorder` and the jitter of `delay D J`); all off by
/// default. Probabilities are fractions in [0, 1].
///
/// Serialised (feature `serde`) as a table, every key optional:
/// `{ loss = 0.01, duplicate = "1%", jitter = "3ms", reorder = 0.25,
/// corrupt = 0.001, seed = 7 }`; a probability is a number (a fraction) or
/// a string [`parse_probability`] reads (`"1%"`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct ImpairConfig {
    /// Probability that a piece is lost after its serialisation.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::probability"))]
    pub loss: f64,
    /// Probability that a piece is duplicated (the copy is not serialised
    /// again and never duplicated again).
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::probability"))]
    pub duplicate: f64,
    /// Probability that one random bit of a piece is flipped.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::probability"))]
    pub corrupt: f64,
    /// Probability that a piece skips the propagation delay (and the
    /// jitter): it leaves when its serialisation ends. Needs a delay.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::probability"))]
    pub reorder: f64,
    /// Each delayed piece's delay is drawn uniformly from
    /// `delay ± jitter`. At most the port's delay.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub jitter: Duration,
    /// Correlation ρ of successive jitter draws (netem's `delay D J ρ`):
    /// each draw is `(1 − ρ)·U + ρ·previous`, U uniform over
    /// `delay ± jitter`, starting from `delay`. 0 (default): independent
    /// draws. Like netem's, it narrows the spread as ρ grows; every delay
    /// stays within `delay ± jitter`.
    #[cfg_attr(
        feature = "serde",
        serde(
            with = "crate::serde_units::probability",
            skip_serializing_if = "is_zero"
        )
    )]
    pub jitter_correlation: f64,
    /// Seed of the stage's randomness; `None` (default): derived from the
    /// port's [`seed`](crate::PortConfig::seed), so a simulated run repeats
    /// exactly without one.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub seed: Option<u64>,
}

impl ImpairConfig {
    /// No impairment.
    pub const OFF: ImpairConfig = ImpairConfig {
        loss: 0.0,
        duplicate: 0.0,
        corrupt: 0.0,
        reorder: 0.0,
        jitter: Duration::ZERO,
        jitter_correlation: 0.0,
        seed: None,
    };

    /// Whether the stage does nothing (every probability 0, no jitter; the
    /// seed and the jitter's correlation do not matter). A port then has no
    /// impairment stage.
    pub fn is_off(&self) -> bool {
        self.loss == 0.0
            && self.duplicate == 0.0
            && self.corrupt == 0.0
            && self.reorder == 0.0
            && self.jitter.is_zero()
    }

    /// Whether this is [`ImpairConfig::OFF`] exactly (what the serialised
    /// forms leave out).
    pub fn is_default(&self) -> bool {
        *self == ImpairConfig::OFF
    }

    /// Checks the knobs for a port with one-way `delay`: probabilities
    /// finite and in [0, 1], `jitter ≤ delay`, and `reorder` only with a
    /// delay (as netem, which refuses it without one).
    pub fn validate(&self, delay: Duration) -> Result<(), ConfigError> {
        for (name, p) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("corrupt", self.corrupt),
            ("reorder", self.reorder),
            ("jitter_correlation", self.jitter_correlation),
        ] {
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(ConfigError::BadProbability(name));
            }
        }
        if self.jitter > delay {
            return Err(ConfigError::JitterAboveDelay);
        }
        if self.reorder > 0.0 && delay.is_zero() {
            return Err(ConfigError::ReorderWithoutDelay);
        }
        Ok(())
    }

    /// The knobs with every out-of-range value clamped: a non-finite
    /// probability to 0, others into [0, 1], the jitter to the delay.
    pub(crate) fn sanitized(mut self, delay: Duration) -> Self {
        let fix = |p: f64| {
            if p.is_finite() {
                p.clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        self.loss = fix(self.loss);
        self.duplicate = fix(self.duplicate);
        self.corrupt = fix(self.corrupt);
        self.reorder = fix(self.reorder);
        self.jitter_correlation = fix(self.jitter_correlation);
        self.jitter = self.jitter.min(delay);
        self
    }
}

/// Reads a probability: a percentage with `%` (`"1%"`, `"0.5 %"`) or a
/// fraction below 1 (`"0.01"`). A bare number of 1 or more is refused as
/// ambiguous (tc reads `loss 1` as 1 %; write `1%` or `100%`).
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let (v, percent) = ka_codec::units::percent_or_number(s).ok_or_else(|| {
        format!("{s:?}: expected a percentage such as 1% or a fraction such as 0.01")
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "{s:?}: a probability is between 0 and 1 (0% and 100%)"
        ));
    }
    let p = if percent {
        v
    } else if v >= 1.0 {
        return Err(format!(
            "{s:?} is ambiguous: write a percentage (1% or 100%) or a fraction below 1"
        ));
    } else {
        v
    };
    if p > 1.0 {
        return Err(format!("{s:?}: a probability is at most 100%"));
    }
    Ok(p)
}

#[cfg(feature = "serde")]
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// Mixed into the port's seed for the stage's stream, so it never
/// repeats the queue discipline's draws.
const SEED_SALT: u64 = 0x494D_5041_4952_2121;

/// A port's impairment stage (built only when its config is on).
#[derive(Debug, Clone)]
pub(crate) struct Impairer {
    cfg: ImpairConfig,
    delay_ns: u64,
    jitter_ns: u64,
    /// The last jitter draw, as an offset in `0..=2·jitter_ns` (for the
    /// correlation).
    last_jitter: u64,
    rng: SplitMix64,
}

impl Impairer {
    /// The stage of a port with one-way `delay` and seed `port_seed`
    /// (`cfg` sanitised); `None` when `cfg` is off.
    pub(crate) fn new(cfg: ImpairConfig, delay: Duration, port_seed: u64) -> Option<Self> {
        if cfg.is_off() {
            return None;
        }
        let seed = cfg.seed.unwrap_or_else(|| mix64(port_seed ^ SEED_SALT));
        let delay_ns = duration_ns(delay);
        let jitter_ns = duration_ns(cfg.jitter).min(delay_ns);
        Some(Self {
            cfg,
            delay_ns,
            jitter_ns,
            last_jitter: jitter_ns,
            rng: SplitMix64::new(seed),
        })
    }

    /// The least time a piece spends on the delay line after its
    /// serialisation ends.
    pub(crate) fn min_delay_ns(&self) -> u64 {
        if self.cfg.reorder > 0.0 {
            0
        } else {
            self.delay_ns - self.jitter_ns
        }
    }

    /// True with probability `p` (one draw, made only if `p > 0`).
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.next_f64() < p
    }

    /// A uniform draw from `0..n` (`n ≥ 1`; the high half of a 64×64-bit
    /// product, bias below n/2⁶⁴).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.rng.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// `piece`, whose serialisation ended at `end`, goes through the stage
    /// onto `line` (see the module docs for the steps and their order).
    pub(crate) fn transmit(
        &mut self,
        end: u64,
        piece: Vec<u8>,
        line: &mut DelayLine,
        counters: &mut Counters,
    ) {
        let copy = if self.chance(self.cfg.duplicate) {
            counters.duplicated += 1;
            Some(piece.clone())
        } else {
            None
        };
        for p in std::iter::once(piece).chain(copy) {
            self.one(end, p, line, counters);
        }
    }

    fn one(&mut self, end: u64, mut piece: Vec<u8>, line: &mut DelayLine, c: &mut Counters) {
        if self.chance(self.cfg.loss) {
            c.drops_impair += 1;
            return;
        }
        if self.chance(self.cfg.corrupt) {
            let bits = (piece.len() as u64).saturating_mul(8);
            if bits > 0 {
                let bit = self.below(bits);
                if let Some(b) = usize::try_from(bit / 8).ok().and_then(|i| piece.get_mut(i)) {
                    *b ^= 1 << (bit % 8);
                    c.corrupted += 1;
                }
            }
        }
        let delay = if self.chance(self.cfg.reorder) {
            0
        } else if self.jitter_ns > 0 {
            let span = self.jitter_ns.saturating_mul(2).saturating_add(1);
            let mut j = self.below(span);
            let rho = self.cfg.jitter_correlation;
            if rho > 0.0 {
                // A convex combination of two offsets in 0..=2J stays there.
                j = ((1.0 - rho) * j as f64 + rho * self.last_jitter as f64).round() as u64;
                self.last_jitter = j;
            }
            self.delay_ns - self.jitter_ns + j
        } else {
            self.delay_ns
        };
        if line.push(end.saturating_add(delay), piece) {
            c.reordered += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_parse_as_percent_or_fraction() {
        assert_eq!(parse_probability("1%"), Ok(0.01));
        assert_eq!(parse_probability("0.01"), Ok(0.01));
        assert_eq!(parse_probability(" 2.5 %"), Ok(0.025));
        assert_eq!(parse_probability("100%"), Ok(1.0));
        assert_eq!(parse_probability("0"), Ok(0.0));
        for bad in ["1", "5", "101%", "-1%", "-0.1", "nan", "inf%", "often", ""] {
            assert!(parse_probability(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_probability("1").unwrap_err().contains("ambiguous"));
    }

    #[test]
    fn validation() {
        let d = Duration::from_millis(10);
        assert_eq!(ImpairConfig::OFF.validate(Duration::ZERO), Ok(()));
        let mut c = ImpairConfig {
            loss: 0.01,
            jitter: Duration::from_millis(3),
            reorder: 0.1,
            ..ImpairConfig::OFF
        };
        assert_eq!(c.validate(d), Ok(()));
        assert_eq!(
            c.validate(Duration::from_millis(2)),
            Err(ConfigError::JitterAboveDelay)
        );
        c.jitter = Duration::ZERO;
        assert_eq!(
            c.validate(Duration::ZERO),
            Err(ConfigError::ReorderWithoutDelay)
        );
        for p in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
            let c = ImpairConfig {
                corrupt: p,
                ..ImpairConfig::OFF
            };
            assert_eq!(c.validate(d), Err(ConfigError::BadProbability("corrupt")));
            let s = c.sanitized(d);
            assert!((0.0..=1.0).contains(&s.corrupt), "{p} → {}", s.corrupt);
        }
        let s = ImpairConfig {
            jitter: Duration::from_secs(1),
            ..ImpairConfig::OFF
        }
        .sanitized(d);
        assert_eq!(s.jitter, d);
        assert!(ImpairConfig::OFF.is_off());
        assert!(
            ImpairConfig {
                seed: Some(3),
                ..ImpairConfig::OFF
            }
            .is_off()
        );
    }

    #[test]
    fn off_builds_no_stage() {
        assert!(Impairer::new(ImpairConfig::OFF, Duration::from_millis(5), 1).is_none());
        let s = Impairer::new(
            ImpairConfig {
                jitter: Duration::from_millis(2),
                ..ImpairConfig::OFF
            },
            Duration::from_millis(5),
            1,
        );
        assert_eq!(s.map(|s| s.min_delay_ns()), Some(3_000_000));
    }
}

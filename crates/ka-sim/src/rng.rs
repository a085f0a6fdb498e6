//! Seeded random streams and the workload distributions.
//!
//! Every random consumer (one per sender) has its own ChaCha8 stream: the
//! key comes from the run's seed, the ChaCha stream number is the consumer
//! id, so adding a sender or changing one sender's draws never shifts the
//! numbers another sender sees. ChaCha8 is portable (the same bits on every
//! platform) and the distributions use inverse-CDF sampling with nothing
//! but `ln`/`powf`, so a run is reproducible from `(scenario, seed)`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The random stream of consumer `id` in a run with seed `seed`.
pub fn stream(seed: u64, id: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(id);
    rng
}

/// A uniform draw in (0, 1].
fn open01<R: Rng>(rng: &mut R) -> f64 {
    1.0 - rng.random::<f64>()
}

/// An exponential draw with the given mean (≥ 0).
pub fn exponential<R: Rng>(rng: &mut R, mean: f64) -> f64 {
    -mean * open01(rng).ln()
}

/// Bounded Pareto flow sizes, in packets (paper §III-B: "a size drawn from a
/// Pareto distribution"; §III-C2: "between 1 and 2000 packets, mean 100,
/// shape 1.8").
///
/// The distribution is a Pareto (type II, "Lomax") starting at `min`,
/// truncated at `max`: `P(X > x) ∝ (1 + (x − min)/σ)^(−shape)` on
/// `[min, max]`. The four numbers fix it once the *scale σ is derived from
/// the mean*: σ is solved so that the truncated distribution has exactly
/// `mean_pkts`. (A classic Pareto with its scale derived from the mean would
/// start at ≈ 44 packets for the paper's numbers and could never produce
/// the 1-packet flows the paper's "between 1 and 2000" includes.) Draws are
/// rounded to whole packets within `[min, max]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParetoSizes {
    /// Smallest flow, packets (≥ 1).
    pub min_pkts: f64,
    /// Largest flow, packets.
    pub max_pkts: f64,
    /// Pareto shape α (> 0, ≠ 1).
    pub shape: f64,
    /// Target mean, packets: `min < mean < (min + max)/2`.
    pub mean_pkts: f64,
}

/// Why a size distribution cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistError {
    /// A parameter is out of range.
    #[error("bad Pareto parameters: {0}")]
    Bad(&'static str),
}

/// A ready-to-sample bounded Pareto.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundedPareto {
    /// Lower bound (location).
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// Derived scale σ.
    pub scale: f64,
    /// Shape α.
    pub shape: f64,
    /// `1 − P(X > max)` of the untruncated distribution, cached.
    span: f64,
}

/// Mean of a Lomax(σ, α) located at `min` and truncated at `max`.
pub fn bounded_pareto_mean(min: f64, max: f64, scale: f64, shape: f64) -> f64 {
    let d = max - min;
    let s_d = (1.0 + d / scale).powf(-shape);
    // ∫0^D S(y) dy for S(y) = (1 + y/σ)^(−α).
    let int = if (shape - 1.0).abs() < 1e-12 {
        scale * (1.0 + d / scale).ln()
    } else {
        scale / (shape - 1.0) * (1.0 - (1.0 + d / scale).powf(1.0 - shape))
    };
    min + (int - d * s_d) / (1.0 - s_d)
}

impl ParetoSizes {
    /// Solves for the scale and returns a sampler.
    pub fn build(&self) -> Result<BoundedPareto, DistError> {
        let ParetoSizes {
            min_pkts: min,
            max_pkts: max,
            shape,
            mean_pkts: mean,
        } = *self;
        if !(min.is_finite() && max.is_finite() && shape.is_finite() && mean.is_finite()) {
            return Err(DistError::Bad("not finite"));
        }
        if min < 1.0 || max <= min {
            return Err(DistError::Bad("need 1 <= min < max"));
        }
        if shape <= 0.0 || (shape - 1.0).abs() < 1e-9 {
            return Err(DistError::Bad("shape must be > 0 and != 1"));
        }
        if mean <= min || mean >= 0.5 * (min + max) {
            return Err(DistError::Bad("need min < mean < (min + max)/2"));
        }
        // The truncated mean grows monotonically with σ, from min (σ → 0)
        // to (min + max)/2 (σ → ∞). Bisect on log σ.
        let (mut lo, mut hi) = (1e-9f64.ln(), (1e12f64).ln());
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if bounded_pareto_mean(min, max, mid.exp(), shape) < mean {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let scale = (0.5 * (lo + hi)).exp();
        Ok(BoundedPareto {
            min,
            max,
            scale,
            shape,
            span: 1.0 - (1.0 + (max - min) / scale).powf(-shape),
        })
    }
}

impl BoundedPareto {
    /// The distribution's mean before rounding.
    pub fn mean(&self) -> f64 {
        bounded_pareto_mean(self.min, self.max, self.scale, self.shape)
    }

    /// A real-valued draw in `[min, max]`.
    pub fn sample_f64<R: Rng>(&self, rng: &mut R) -> f64 {
        let u = rng.random::<f64>();
        let x = self.min + self.scale * ((1.0 - u * self.span).powf(-1.0 / self.shape) - 1.0);
        x.clamp(self.min, self.max)
    }

    /// A draw rounded to whole packets in `[ceil(min), floor(max)]`.
    pub fn sample_pkts<R: Rng>(&self, rng: &mut R) -> u64 {
        let x = self.sample_f64(rng).round();
        x.clamp(self.min.ceil().max(1.0), self.max.floor()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a: Vec<u64> = (0..4).map(|_| stream(7, 1).random()).collect();
        let mut s1 = stream(7, 1);
        let b: Vec<u64> = (0..4).map(|_| s1.random()).collect();
        let mut s2 = stream(7, 2);
        let c: Vec<u64> = (0..4).map(|_| s2.random()).collect();
        let mut s3 = stream(8, 1);
        let d: Vec<u64> = (0..4).map(|_| s3.random()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1])); // fresh stream each time
        assert_ne!(b, c);
        assert_ne!(b, d);
        assert_eq!(b[0], a[0]);
        // Portable: ChaCha8 with this key/stream gives fixed bits.
        let mut again = stream(7, 1);
        assert_eq!(again.random::<u64>(), b[0]);
    }

    #[test]
    fn exponential_mean() {
        let mut r = stream(1, 0);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| exponential(&mut r, 0.5)).sum::<f64>() / n as f64;
        assert!((m - 0.5).abs() < 0.01, "{m}");
    }

    #[test]
    fn pareto_scale_is_derived_from_the_mean() {
        let p = ParetoSizes {
            min_pkts: 1.0,
            max_pkts: 2000.0,
            shape: 1.8,
            mean_pkts: 100.0,
        }
        .build()
        .unwrap();
        assert!((p.mean() - 100.0).abs() < 1e-6, "{}", p.mean());
        // Untruncated: mean = min + σ/(α − 1) → σ = 99·0.8 = 79.2; the
        // truncation at 2000 removes tail mass, so σ is a bit larger.
        assert!(p.scale > 79.2 && p.scale < 110.0, "{}", p.scale);
        let mut r = stream(3, 9);
        let n = 400_000;
        let draws: Vec<u64> = (0..n).map(|_| p.sample_pkts(&mut r)).collect();
        assert!(draws.iter().all(|&d| (1..=2000).contains(&d)));
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 100.0).abs() < 3.0, "{mean}");
        // The whole range occurs: single-packet flows and near-max ones.
        assert!(draws.contains(&1));
        assert!(draws.iter().any(|&d| d > 1500));
        let small = draws.iter().filter(|&&d| d < 10).count() as f64 / n as f64;
        assert!(small > 0.05 && small < 0.3, "{small}");
    }

    #[test]
    fn pareto_rejects_nonsense() {
        let ok = ParetoSizes {
            min_pkts: 1.0,
            max_pkts: 2000.0,
            shape: 1.8,
            mean_pkts: 100.0,
        };
        for bad in [
            ParetoSizes { shape: 1.0, ..ok },
            ParetoSizes {
                mean_pkts: 3000.0,
                ..ok
            },
            ParetoSizes {
                max_pkts: 0.5,
                ..ok
            },
            ParetoSizes {
                min_pkts: f64::NAN,
                ..ok
            },
        ] {
            assert!(bad.build().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bounded_mean_formula_matches_integration() {
        let (min, max, sc, a): (f64, f64, f64, f64) = (3.0, 500.0, 20.0, 1.5);
        // Numerical integration of x·f(x) over [min, max] for the truncated
        // Lomax density f(x) = α/σ·(1 + (x − min)/σ)^(−α−1) / (1 − S(max)).
        let s_max = (1.0 + (max - min) / sc).powf(-a);
        let n = 400_000;
        let dx = (max - min) / n as f64;
        let mut s = 0.0;
        for i in 0..n {
            let x = min + (i as f64 + 0.5) * dx;
            s += x * a / sc * (1.0 + (x - min) / sc).powf(-a - 1.0) / (1.0 - s_max) * dx;
        }
        assert!(
            (s - bounded_pareto_mean(min, max, sc, a)).abs() < 0.01,
            "{s}"
        );
    }
}

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
    /// An empirical CDF is malformed.
    #[error("bad size CDF: {0}")]
    Cdf(&'static str),
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

/// An empirical flow-size distribution: a CDF given as points
/// `[size_pkts, cumulative probability]`, sampled by inverse transform with
/// linear interpolation between the points (as the data-centre simulators
/// that ship these CDFs do, e.g. HPCC's `traffic_gen`). The first point's
/// probability may be above 0: that mass sits at its size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CdfSizes {
    /// `[size_pkts, P(X <= size)]`, sizes ≥ 1 and non-decreasing,
    /// probabilities non-decreasing from ≥ 0 to exactly 1; at most
    /// [`MAX_CDF_POINTS`] points.
    pub cdf: Vec<[f64; 2]>,
}

/// The most points a [`CdfSizes`] may have.
pub const MAX_CDF_POINTS: usize = 1000;

/// Flow sizes of an on-off or Poisson workload: a bounded Pareto
/// (`{ min_pkts, max_pkts, shape, mean_pkts }`) or an empirical CDF
/// (`{ cdf = [[size, p], …] }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Sizes {
    /// Bounded Pareto (the paper's).
    Pareto(ParetoSizes),
    /// Empirical CDF (e.g. a data-centre workload).
    Cdf(CdfSizes),
}

/// A ready-to-sample size distribution.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    /// Bounded Pareto.
    Pareto(BoundedPareto),
    /// Empirical CDF: validated points.
    Cdf(Vec<[f64; 2]>),
}

impl Sizes {
    /// Checks the parameters and returns a sampler.
    pub fn build(&self) -> Result<SizeDist, DistError> {
        match self {
            Sizes::Pareto(p) => p.build().map(SizeDist::Pareto),
            Sizes::Cdf(c) => c.build().map(SizeDist::Cdf),
        }
    }
}

impl CdfSizes {
    fn build(&self) -> Result<Vec<[f64; 2]>, DistError> {
        let pts = &self.cdf;
        if pts.is_empty() || pts.len() > MAX_CDF_POINTS {
            return Err(DistError::Cdf("need 1 to 1000 points"));
        }
        let mut prev = [1.0, 0.0];
        for &[x, p] in pts {
            if !(x.is_finite() && p.is_finite()) {
                return Err(DistError::Cdf("not finite"));
            }
            if x < prev[0] || p < prev[1] || p > 1.0 {
                return Err(DistError::Cdf(
                    "sizes must be >= 1 and probabilities in [0, 1], both non-decreasing",
                ));
            }
            prev = [x, p];
        }
        if prev[1] != 1.0 {
            return Err(DistError::Cdf("the last probability must be 1"));
        }
        Ok(pts.clone())
    }
}

impl SizeDist {
    /// The distribution's mean before rounding, packets.
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Pareto(p) => p.mean(),
            SizeDist::Cdf(pts) => {
                let Some(first) = pts.first() else {
                    return 0.0;
                };
                let mut m = first[0] * first[1];
                for w in pts.windows(2) {
                    if let [a, b] = w {
                        m += (b[1] - a[1]) * 0.5 * (a[0] + b[0]);
                    }
                }
                m
            }
        }
    }

    /// A draw rounded to whole packets (at least 1).
    pub fn sample_pkts<R: Rng>(&self, rng: &mut R) -> u64 {
        match self {
            SizeDist::Pareto(p) => p.sample_pkts(rng),
            SizeDist::Cdf(pts) => {
                let u = rng.random::<f64>();
                // The first point whose probability reaches u; interpolate
                // from the one before it.
                let i = pts.partition_point(|p| p[1] < u);
                let x = match (i.checked_sub(1).and_then(|j| pts.get(j)), pts.get(i)) {
                    (Some(a), Some(b)) if b[1] > a[1] => {
                        a[0] + (b[0] - a[0]) * (u - a[1]) / (b[1] - a[1])
                    }
                    (_, Some(b)) => b[0],
                    (Some(a), None) => a[0],
                    (None, None) => 1.0,
                };
                x.round().max(1.0) as u64
            }
        }
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

    /// The web-search CDF of `other-dc-light.toml` (in packets).
    fn web() -> CdfSizes {
        CdfSizes {
            cdf: vec![
                [1.0, 0.0],
                [7.0, 0.15],
                [14.0, 0.2],
                [21.0, 0.3],
                [35.0, 0.4],
                [55.0, 0.53],
                [138.0, 0.6],
                [691.0, 0.7],
                [1381.0, 0.8],
                [3453.0, 0.9],
                [6906.0, 0.97],
                [20718.0, 1.0],
            ],
        }
    }

    #[test]
    fn cdf_sizes_follow_the_cdf() {
        let d = Sizes::Cdf(web()).build().unwrap();
        let mut r = stream(5, 1);
        let n = 200_000;
        let mut draws: Vec<u64> = (0..n).map(|_| d.sample_pkts(&mut r)).collect();
        draws.sort_unstable();
        assert!(draws[0] >= 1 && draws[n - 1] <= 20718);
        // The empirical CDF at the CDF's points, within sampling error (the
        // standard error of a proportion is at most 0.0011 here).
        // Draws are rounded: a draw is <= x if the real value is < x + 0.5.
        let cdf = web().cdf;
        let f = |y: f64| {
            cdf.windows(2).find(|w| y < w[1][0]).map_or(1.0, |w| {
                w[0][1] + (w[1][1] - w[0][1]) * (y - w[0][0]) / (w[1][0] - w[0][0])
            })
        };
        for &[x, _] in &cdf {
            let got = draws.partition_point(|&d| d as f64 <= x) as f64 / n as f64;
            let want = f(x + 0.5);
            assert!(
                (got - want).abs() < 0.006,
                "P(X <= {x}) = {got}, want {want}"
            );
        }
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!(
            (mean - d.mean()).abs() < 0.03 * d.mean(),
            "{mean} vs {}",
            d.mean()
        );
        // A point mass at the first size.
        let at = Sizes::Cdf(CdfSizes {
            cdf: vec![[3.0, 0.5], [5.0, 1.0]],
        })
        .build()
        .unwrap();
        // P(3) = 0.5 (the mass) + P(3 < X < 3.5) = 0.625.
        let small = (0..10_000).filter(|_| at.sample_pkts(&mut r) == 3).count();
        assert!((5_950..6_550).contains(&small), "{small}");
    }

    #[test]
    fn cdf_sizes_reject_nonsense() {
        for bad in [
            vec![],
            vec![[5.0, 0.5]],
            vec![[5.0, 0.5], [4.0, 1.0]],
            vec![[5.0, 0.6], [6.0, 0.5], [7.0, 1.0]],
            vec![[0.5, 0.0], [6.0, 1.0]],
            vec![[1.0, 0.0], [f64::NAN, 1.0]],
            vec![[1.0, 0.0], [6.0, 1.5]],
        ] {
            assert!(
                Sizes::Cdf(CdfSizes { cdf: bad.clone() }).build().is_err(),
                "{bad:?}"
            );
        }
        let many = vec![[1.0, 1.0]; MAX_CDF_POINTS + 1];
        assert!(Sizes::Cdf(CdfSizes { cdf: many }).build().is_err());
    }

    #[test]
    fn sizes_parse_either_form() {
        #[derive(Deserialize)]
        struct W {
            sizes: Sizes,
        }
        let p: W = toml::from_str(
            "sizes = { min_pkts = 1, max_pkts = 2000, shape = 1.8, mean_pkts = 100 }",
        )
        .unwrap();
        assert!(matches!(p.sizes, Sizes::Pareto(_)));
        let c: W = toml::from_str("sizes = { cdf = [[1, 0.0], [10, 1.0]] }").unwrap();
        assert_eq!(
            c.sizes,
            Sizes::Cdf(CdfSizes {
                cdf: vec![[1.0, 0.0], [10.0, 1.0]]
            })
        );
        assert!(toml::from_str::<W>("sizes = { cdf = [[1, 0.0]], shape = 2 }").is_err());
    }
}

//! `exp` and `ln` for `core`, usable in `const` context.
//!
//! `f64::exp`/`f64::ln` live in `std` (they call the platform's libm), so a
//! `no_std` crate cannot use them, and even with `std` their last bit may
//! differ between platforms. These two functions are plain Rust, use only
//! IEEE-754 `+ − × ÷` (which Rust evaluates identically at compile time and at
//! run time, with or without `std`), and are used by every build, so the rate
//! table computed at compile time and the float path evaluated at run time
//! produce bit-identical numbers everywhere.
//!
//! Accuracy: relative error below 1e-15 for normal inputs (tests check
//! ≤ 1e-13 against `std` over the whole range).
//!
//! Method (the classic fdlibm structure, with plain series instead of the
//! minimax polynomials):
//! * `exp(x)`: `x = k·ln2 + r`, `|r| ≤ ln2/2` (Cody–Waite split of `ln2` so
//!   `r` is computed almost exactly), `e^r` by its Taylor series to degree 15
//!   (truncation error < 1e-19), then scale by `2^k` through the exponent bits.
//! * `ln(x)`: `x = m·2^e` with `m ∈ [√½, √2)`, `ln m = 2·atanh(s)` with
//!   `s = (m−1)/(m+1)`, `|s| ≤ 0.1716`, series to `s^27` (truncation < 1e-22),
//!   result `e·ln2_hi + (ln m + e·ln2_lo)`.

/// `ln 2`, upper part: 32 significant bits, so `k·LN2_HI` is exact for
/// `|k| < 2^20`.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
/// `ln 2 − LN2_HI`.
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// `1 / ln 2`.
const LOG2_E: f64 = core::f64::consts::LOG2_E;
/// `√2`.
const SQRT2: f64 = core::f64::consts::SQRT_2;
/// `2^54`, to normalise subnormal inputs of `ln`.
const TWO54: f64 = 18_014_398_509_481_984.0;
/// Above this, `exp` overflows to `+∞`.
const EXP_OVERFLOW: f64 = 709.782_712_893_384;
/// Below this, `exp` underflows to `0`.
const EXP_UNDERFLOW: f64 = -745.133_219_101_941_1;
/// Degree of the Taylor polynomial of `e^r` (`0.347^15/15! < 1e-19`).
const EXP_DEGREE: usize = 15;
/// Number of odd terms of the `atanh` series (`0.0295^14/29 < 1e-22`).
const ATANH_TERMS: usize = 14;

/// `1/n!` for `n = 0..=EXP_DEGREE`.
#[allow(clippy::indexing_slicing)] // 1 ≤ n ≤ EXP_DEGREE by the loop bound
const INV_FACT: [f64; EXP_DEGREE + 1] = {
    let mut c = [1.0; EXP_DEGREE + 1];
    let mut n = 1;
    while n <= EXP_DEGREE {
        c[n] = c[n - 1] / n as f64;
        n += 1;
    }
    c
};

/// `1/(2j+1)` for `j = 0..ATANH_TERMS`.
#[allow(clippy::indexing_slicing)] // j < ATANH_TERMS by the loop bound
const ATANH_COEF: [f64; ATANH_TERMS] = {
    let mut c = [1.0; ATANH_TERMS];
    let mut j = 0;
    while j < ATANH_TERMS {
        c[j] = 1.0 / (2 * j + 1) as f64;
        j += 1;
    }
    c
};

/// `2^k` for `k ∈ [−1022, 1023]`, built from the exponent bits.
const fn pow2(k: i32) -> f64 {
    // The callers keep k in range, so the biased exponent is in 1..=2046.
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `v · 2^k` for `v ∈ [0.5, 2]` and `k ∈ [−1080, 1025]`.
const fn scale2(v: f64, k: i32) -> f64 {
    if k > 1023 {
        v * pow2(1023) * pow2(k - 1023)
    } else if k < -1022 {
        // Subnormal result: scale in two steps (the last one rounds once).
        v * pow2(k + 64) * pow2(-64)
    } else {
        v * pow2(k)
    }
}

/// `e^x`.
#[allow(clippy::indexing_slicing)] // constant indices ≤ EXP_DEGREE, the array's last
pub(crate) const fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > EXP_OVERFLOW {
        return f64::INFINITY;
    }
    if x < EXP_UNDERFLOW {
        return 0.0;
    }
    // k = round(x / ln 2); |k| ≤ 1075 here.
    let t = x * LOG2_E;
    let k = if t >= 0.0 {
        (t + 0.5) as i32
    } else {
        (t - 0.5) as i32
    };
    let kf = k as f64;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    // Horner form of Σ r^n/n!.
    let mut sum = INV_FACT[EXP_DEGREE];
    let mut n = EXP_DEGREE;
    while n > 0 {
        n -= 1;
        sum = sum * r + INV_FACT[n];
    }
    scale2(sum, k)
}

/// Natural logarithm; `NaN` for negative or `NaN` input, `−∞` for 0.
#[allow(clippy::indexing_slicing)] // j < ATANH_TERMS, the array's length
pub(crate) const fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return x;
    }
    let mut bits = x.to_bits();
    let mut e: i32 = 0;
    if bits >> 52 == 0 {
        // Subnormal: make it normal first (exact).
        bits = (x * TWO54).to_bits();
        e = -54;
    }
    e += ((bits >> 52) & 0x7ff) as i32 - 1023;
    // Mantissa in [1, 2).
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | (1023_u64 << 52));
    if m > SQRT2 {
        m *= 0.5; // exact
        e += 1;
    }
    // m − 1 is exact (Sterbenz); s carries ≈ 1.5 ulp.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // atanh(s)/s = Σ s2^j / (2j+1), Horner from the last term.
    let mut j = ATANH_TERMS;
    let mut q = 0.0;
    while j > 0 {
        j -= 1;
        q = ATANH_COEF[j] + s2 * q;
    }
    let ln_m = 2.0 * s * q;
    let ef = e as f64;
    ef * LN2_HI + (ln_m + ef * LN2_LO)
}

#[cfg(test)]
mod tests {
    use super::{exp, ln};
    use proptest::prelude::*;

    fn rel_err(got: f64, want: f64) -> f64 {
        if got == want {
            0.0
        } else {
            ((got - want) / want).abs()
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(ln(1.0), 0.0);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(1000.0), f64::INFINITY);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(ln(-1.0).is_nan());
        assert!(ln(f64::NAN).is_nan());
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln(2.0), core::f64::consts::LN_2);
        // Not correctly rounded, but within 2 ulp.
        assert!(rel_err(exp(1.0), core::f64::consts::E) <= 4.5e-16);
    }

    #[test]
    fn dense_grid_against_std() {
        // Every input the codec uses (L/a for L ≤ 2040, ratios up to 1e7)
        // and far beyond.
        let mut x = -700.0_f64;
        while x < 709.0 {
            assert!(rel_err(exp(x), x.exp()) <= 1e-13, "exp({x})");
            x += 0.0137;
        }
        let mut y = 1e-300_f64;
        while y < 1e300 {
            assert!(rel_err(ln(y), y.ln()) <= 1e-13, "ln({y})");
            y *= 1.0173;
        }
        // Near 1, where ln → 0 and relative error is hardest.
        for i in 1..10_000 {
            let d = f64::from(i) * 1e-9;
            for v in [1.0 + d, 1.0 - d] {
                assert!(rel_err(ln(v), v.ln()) <= 1e-13, "ln({v})");
            }
        }
    }

    #[test]
    fn subnormals() {
        let tiny = f64::from_bits(1); // 4.9e-324
        assert!(rel_err(ln(tiny), tiny.ln()) <= 1e-13);
        let sub = 1e-310_f64;
        assert!(rel_err(ln(sub), sub.ln()) <= 1e-13);
        // exp into the subnormal range: absolute error within one subnormal ulp
        // of the std result, relative error tight while still large.
        let e = exp(-710.0);
        assert!(rel_err(e, (-710.0_f64).exp()) <= 1e-10);
    }

    #[test]
    fn const_evaluation_matches_runtime() {
        const C_EXP: f64 = exp(7.8125);
        const C_LN: f64 = ln(30_741.0);
        assert_eq!(
            C_EXP.to_bits(),
            exp(core::hint::black_box(7.8125)).to_bits()
        );
        assert_eq!(
            C_LN.to_bits(),
            ln(core::hint::black_box(30_741.0)).to_bits()
        );
    }

    proptest! {
        #[test]
        fn exp_matches_std(x in -708.0_f64..709.0) {
            prop_assert!(rel_err(exp(x), x.exp()) <= 1e-13, "exp({})", x);
        }

        #[test]
        fn ln_matches_std(x in f64::MIN_POSITIVE..f64::MAX) {
            prop_assert!(rel_err(ln(x), x.ln()) <= 1e-13, "ln({})", x);
        }

        #[test]
        fn ln_matches_std_any_positive_bits(bits in 1_u64..0x7ff0_0000_0000_0000) {
            let x = f64::from_bits(bits);
            prop_assert!(rel_err(ln(x), x.ln()) <= 1e-13, "ln({})", x);
        }

        #[test]
        fn ln_inverts_exp(x in -700.0_f64..700.0) {
            let back = ln(exp(x));
            prop_assert!((back - x).abs() <= 1e-13 * x.abs().max(1.0));
        }
    }
}

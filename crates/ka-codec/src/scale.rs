//! Rate ↔ leading-fragment length (paper §II-A, DESIGN §2.1).
//!
//! A KA router tells the sender a rate `R` (bytes per millisecond, B/ms;
//! 1 B/ms = 8 kbit/s) by fragmenting a packet so that the leading fragment
//! carries `L` payload bytes, with
//!
//! ```text
//! decode:  R(L) = b · e^(L/a)                          (paper: a = 128, b = 12.4392)
//! encode:  L(R) = 8 · floor(a · ln(R/b) / 8), at most max_len; below min_len: None
//! ```
//!
//! `L` is a multiple of 8 (IPv4 fragment offsets count 8-byte units), so on the
//! wire and in the KA-Rate TCP option a length travels as [`Code`], i.e. `L/8`
//! in one byte. With [`Scale::PAPER`] the codes are `L ∈ {24, 32, …, 1480}`:
//! 183 codes from 120.04 kbit/s to 10.46 Gbit/s.
//!
//! Two interchangeable implementations exist for any [`Scale`]:
//!
//! * the float path, [`Scale::encode`] / [`Scale::decode`], which evaluates
//!   `ln`/`exp` (the crate's own, see below);
//! * the table path, [`RateTable`], which looks `decode` up in an array and
//!   does `encode` as a binary search over the same array: no `ln`/`exp` per
//!   packet. [`RateTable::PAPER`] is computed at compile time.
//!
//! **They agree bit for bit.** `encode` is defined as "the largest code `L`
//! whose decoded rate `R(L)` does not exceed `R`", which is exactly
//! `8·floor(a·ln(R/b)/8)` in real arithmetic; the float path computes that
//! with `ln`, and when the result lies within rounding distance of a code
//! boundary it decides against the very `decode` values the table holds. So
//! `decode(encode(R)) ≤ R` holds without exception (a router never
//! over-states the rate), `encode(decode(L)) = L` for every code, and the two
//! paths give identical answers for every input. (Evaluating the formula naively would turn `R = R(L)` into `L − 8`
//! whenever `ln` rounds down by one ulp.)
//!
//! `f64::ln`/`f64::exp` are not in `core`; the crate carries its own
//! (`|relative error| < 1e-15`, checked ≤ 1e-13 against `std` in the tests)
//! and uses them in every build, so `std` and `no_std` builds produce identical
//! numbers.
//!
//! [`Code`] is scale-independent (it is just `L/8`), but whether a code is
//! *valid* depends on the scale: [`Code::from_len`] / [`Code::from_wire`] check
//! against [`Scale::PAPER`], [`Scale::code_from_len`] /
//! [`Scale::code_from_wire`] against any scale.

mod math;
mod table;

use core::fmt;

pub use table::RateTable;

/// Bytes per millisecond → bits per second (`× 8000`).
#[inline]
pub const fn bytes_per_ms_to_bps(bytes_per_ms: f64) -> f64 {
    bytes_per_ms * 8000.0
}

/// Bits per second → bytes per millisecond (`÷ 8000`).
#[inline]
pub const fn bps_to_bytes_per_ms(bps: f64) -> f64 {
    bps / 8000.0
}

/// A leading-fragment payload length `L` as it travels on the wire: `L/8` in
/// one byte (the `code` byte of the KA-Rate option).
///
/// Ordered like `L` (and so like the rate it stands for), which is what a
/// router needs to "only ever shrink" a leading fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code(u8);

impl Code {
    /// The smallest code of [`Scale::PAPER`]: L = 24 (wire 3), 120.04 kbit/s.
    pub const MIN: Code = Code(3);
    /// The largest code of [`Scale::PAPER`]: L = 1480 (wire 185), 10.46 Gbit/s.
    pub const MAX: Code = Code(185);

    /// The code for payload length `len` if it is valid for [`Scale::PAPER`]
    /// (a multiple of 8 in `24..=1480`).
    #[inline]
    pub const fn from_len(len: usize) -> Option<Code> {
        Scale::PAPER.code_from_len(len)
    }

    /// The code for wire byte `wire` (= L/8) if it is valid for
    /// [`Scale::PAPER`] (`3..=185`).
    #[inline]
    pub const fn from_wire(wire: u8) -> Option<Code> {
        Scale::PAPER.code_from_wire(wire)
    }

    /// The payload length `L` of the leading fragment, in bytes.
    #[inline]
    #[allow(clippy::len_without_is_empty)] // a length, not a container
    pub const fn len(self) -> usize {
        self.0 as usize * 8
    }

    /// The wire form, `L/8`.
    #[inline]
    pub const fn wire(self) -> u8 {
        self.0
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L={} (code {})", self.len(), self.0)
    }
}

/// Why a [`Scale`] cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaleError {
    /// `a` or `b` is not a finite number above 0.
    BadParameter,
    /// `step` is 0 or not a multiple of 8.
    BadStep,
    /// `min_len` is 0 or not a multiple of 8.
    BadMinLen,
    /// `max_len` is below `min_len`, not reachable from `min_len` in whole
    /// steps, or above 2040 (its code would not fit in one byte).
    BadMaxLen,
}

impl fmt::Display for ScaleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScaleError::BadParameter => "scale parameters a and b must be finite and > 0",
            ScaleError::BadStep => "scale step must be a non-zero multiple of 8",
            ScaleError::BadMinLen => "scale min_len must be a non-zero multiple of 8",
            ScaleError::BadMaxLen => {
                "scale max_len must be >= min_len, min_len + k*step, and <= 2040"
            }
        })
    }
}

impl core::error::Error for ScaleError {}

/// The largest `L` whose code (`L/8`) fits in one byte.
pub const MAX_ENCODABLE_LEN: u16 = 255 * 8;

/// The parameters of the rate ↔ length map `R(L) = b·e^(L/a)`.
///
/// The fields are public so a deployment can write its own scale; every
/// function checks [`Scale::validate`] and treats an invalid scale as having
/// no codes (`encode` → `None`, [`Scale::code_count`] → 0,
/// [`RateTable::new`] → `Err`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// Length constant `a` in bytes (paper: 128).
    pub a: f64,
    /// Rate constant `b` in B/ms, the rate of `L = 0` (paper: 12.4392).
    pub b: f64,
    /// Smallest code length in bytes (paper: 24, room for a TCP header).
    pub min_len: u16,
    /// Largest code length in bytes (paper: 1480 = 1500 − 20).
    pub max_len: u16,
    /// Distance between codes in bytes, a multiple of 8 (paper: 8).
    pub step: u16,
}

impl Scale {
    /// The paper's scale: `a = 128`, `b = 12.4392`, `L ∈ 24..=1480` step 8
    /// (183 codes, 120.04 kbit/s … 10.46 Gbit/s).
    pub const PAPER: Scale = Scale {
        a: 128.0,
        b: 12.4392,
        min_len: 24,
        max_len: 1480,
        step: 8,
    };

    /// A checked scale.
    pub const fn new(
        a: f64,
        b: f64,
        min_len: u16,
        max_len: u16,
        step: u16,
    ) -> Result<Scale, ScaleError> {
        let s = Scale {
            a,
            b,
            min_len,
            max_len,
            step,
        };
        match s.validate() {
            Ok(()) => Ok(s),
            Err(e) => Err(e),
        }
    }

    /// Checks that the scale describes a usable set of codes.
    ///
    /// Cheap (integer and comparison work only), as the per-packet functions
    /// call it. An absurd but valid scale may decode its top codes to `+∞`;
    /// `encode` still works (it never picks a code whose rate exceeds the
    /// input).
    pub const fn validate(&self) -> Result<(), ScaleError> {
        // Comparisons are false for NaN, so NaN fails too.
        if !(self.a > 0.0 && self.a < f64::INFINITY && self.b > 0.0 && self.b < f64::INFINITY) {
            return Err(ScaleError::BadParameter);
        }
        if self.step == 0 || !self.step.is_multiple_of(8) {
            return Err(ScaleError::BadStep);
        }
        if self.min_len == 0 || !self.min_len.is_multiple_of(8) {
            return Err(ScaleError::BadMinLen);
        }
        if self.max_len < self.min_len
            || !(self.max_len - self.min_len).is_multiple_of(self.step)
            || self.max_len > MAX_ENCODABLE_LEN
        {
            return Err(ScaleError::BadMaxLen);
        }
        Ok(())
    }

    /// `true` if [`Scale::validate`] passes.
    #[inline]
    pub const fn is_valid(&self) -> bool {
        self.validate().is_ok()
    }

    /// The number of codes (183 for [`Scale::PAPER`]); 0 for an invalid scale.
    pub const fn code_count(&self) -> usize {
        if !self.is_valid() {
            return 0;
        }
        ((self.max_len - self.min_len) / self.step) as usize + 1
    }

    /// The code with index `i` (0 = `min_len`), if `i < code_count()`.
    pub const fn code_at(&self, i: usize) -> Option<Code> {
        if i >= self.code_count() {
            return None;
        }
        // < 2040/8 by validate().
        Some(Code(
            ((self.min_len as usize + i * self.step as usize) / 8) as u8,
        ))
    }

    /// The index of `code` in this scale (0 = `min_len`), if it is a code of
    /// this scale.
    pub const fn index_of(&self, code: Code) -> Option<usize> {
        if !self.contains(code) {
            return None;
        }
        Some((code.len() - self.min_len as usize) / self.step as usize)
    }

    /// The smallest code, or `None` for an invalid scale.
    #[inline]
    pub const fn min_code(&self) -> Option<Code> {
        self.code_at(0)
    }

    /// The largest code, or `None` for an invalid scale.
    #[inline]
    pub const fn max_code(&self) -> Option<Code> {
        match self.code_count() {
            0 => None,
            n => self.code_at(n - 1),
        }
    }

    /// `true` if `code` is one of this scale's codes.
    pub const fn contains(&self, code: Code) -> bool {
        let len = code.len();
        self.is_valid()
            && len >= self.min_len as usize
            && len <= self.max_len as usize
            && (len - self.min_len as usize).is_multiple_of(self.step as usize)
    }

    /// The code for payload length `len`, if it is one of this scale's codes.
    pub const fn code_from_len(&self, len: usize) -> Option<Code> {
        if !len.is_multiple_of(8) || len > MAX_ENCODABLE_LEN as usize {
            return None;
        }
        let code = Code((len / 8) as u8);
        if self.contains(code) {
            Some(code)
        } else {
            None
        }
    }

    /// The code for wire byte `wire` (= L/8), if it is one of this scale's
    /// codes.
    #[inline]
    pub const fn code_from_wire(&self, wire: u8) -> Option<Code> {
        let code = Code(wire);
        if self.contains(code) {
            Some(code)
        } else {
            None
        }
    }

    /// The next larger code (`L + step`), if there is one.
    pub const fn next_code(&self, code: Code) -> Option<Code> {
        match self.index_of(code) {
            Some(i) => self.code_at(i + 1),
            None => None,
        }
    }

    /// `b · e^(len/a)` in B/ms, the formula for any length (valid code or
    /// not). The single expression both paths evaluate.
    #[inline]
    pub const fn rate_of_len(&self, len: usize) -> f64 {
        self.b * math::exp(len as f64 / self.a)
    }

    /// Decode, float path: the rate `code` stands for, in B/ms.
    ///
    /// Evaluates the formula for any code; whether the code belongs to the
    /// scale is the job of the constructors ([`Scale::code_from_len`] …).
    #[inline]
    pub const fn decode(&self, code: Code) -> f64 {
        self.rate_of_len(code.len())
    }

    /// Encode, float path: the largest code whose rate does not exceed
    /// `bytes_per_ms`, clamped to the top code (so any rate at or above the
    /// top rate gives the top code, `+∞` included).
    ///
    /// `None` if the rate is below the lowest code's rate (not encodable: the
    /// router must not fragment), `NaN`, or the scale is invalid.
    pub fn encode(&self, bytes_per_ms: f64) -> Option<Code> {
        let count = self.code_count();
        if count == 0 || bytes_per_ms.is_nan() {
            return None;
        }
        let top = count - 1;
        let step = f64::from(self.step);
        // The real-arithmetic answer, as a fractional code index. Negative
        // rates give NaN, 0 gives −∞, +∞ gives +∞.
        let x = self.a * math::ln(bytes_per_ms / self.b);
        let steps = (x - f64::from(self.min_len)) / step;
        // Fast path: `steps` is off by far less than `guard` (the math is
        // accurate to ~1e-15 relative; the bound is 1000× that), so unless it
        // lies within `guard` of a whole number its floor is exact.
        let guard = 1e-12 * (self.a / step) * (1.0 + f64::from(self.max_len) / self.a);
        if steps > top as f64 + guard {
            return self.code_at(top);
        }
        if steps > guard && steps < top as f64 {
            let i = steps as usize; // floor, as steps > 0
            let frac = steps - i as f64;
            if frac > guard && frac < 1.0 - guard {
                return self.code_at(i);
            }
        }
        // Near a boundary: decide against the decode values themselves (the
        // very numbers the table holds), which makes encode exact.
        if bytes_per_ms < self.rate_at(0) {
            return None;
        }
        let mut i = if steps >= top as f64 {
            top
        } else if steps > 0.0 {
            steps as usize
        } else {
            0
        };
        while i < top && self.rate_at(i + 1) <= bytes_per_ms {
            i += 1;
        }
        while i > 0 && self.rate_at(i) > bytes_per_ms {
            i -= 1;
        }
        self.code_at(i)
    }

    /// The code a packet with `payload_len` bytes of IP payload can carry
    /// when the router wants to signal `wanted`.
    ///
    /// Both fragments must be non-empty, so only codes with `L < payload_len`
    /// fit: `wanted` if it does, otherwise the largest code below
    /// `payload_len` (the router saturates rather than sending no signal; a
    /// 1500-byte IPv4 packet has 1480 payload bytes and carries at most 1472).
    /// `None` if no code fits (`payload_len ≤ min_len`) or `wanted` is not a
    /// code of this scale.
    pub const fn carrier_code(&self, wanted: Code, payload_len: usize) -> Option<Code> {
        if !self.contains(wanted) {
            return None;
        }
        if wanted.len() < payload_len {
            return Some(wanted);
        }
        let min = self.min_len as usize;
        if payload_len <= min {
            return None;
        }
        // Largest min + k·step ≤ payload_len − 1; below `wanted`, so in range.
        self.code_at((payload_len - 1 - min) / self.step as usize)
    }

    /// All codes, smallest first (183 for [`Scale::PAPER`]).
    #[inline]
    pub const fn codes(&self) -> Codes {
        Codes {
            scale: *self,
            front: 0,
            back: self.code_count(),
        }
    }

    /// Decode of the code with index `i`.
    #[inline]
    const fn rate_at(&self, i: usize) -> f64 {
        self.rate_of_len(self.min_len as usize + i * self.step as usize)
    }
}

impl Default for Scale {
    fn default() -> Self {
        Scale::PAPER
    }
}

/// Iterator over the codes of a [`Scale`], from [`Scale::codes`].
#[derive(Clone, Debug)]
pub struct Codes {
    scale: Scale,
    front: usize,
    back: usize,
}

impl Iterator for Codes {
    type Item = Code;

    fn next(&mut self) -> Option<Code> {
        if self.front >= self.back {
            return None;
        }
        let c = self.scale.code_at(self.front);
        self.front += 1;
        c
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back.saturating_sub(self.front);
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Codes {
    fn next_back(&mut self) -> Option<Code> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.scale.code_at(self.back)
    }
}

impl ExactSizeIterator for Codes {}

impl core::iter::FusedIterator for Codes {}

/// Encode with the paper's scale, table path ([`RateTable::PAPER`]).
#[inline]
pub fn encode(bytes_per_ms: f64) -> Option<Code> {
    RateTable::paper().encode(bytes_per_ms)
}

/// Decode with the paper's scale, table path ([`RateTable::PAPER`]): B/ms.
#[inline]
pub fn decode(code: Code) -> f64 {
    RateTable::paper().decode(code)
}

/// [`Scale::carrier_code`] for the paper's scale.
#[inline]
pub const fn carrier_code(wanted: Code, payload_len: usize) -> Option<Code> {
    Scale::PAPER.carrier_code(wanted, payload_len)
}

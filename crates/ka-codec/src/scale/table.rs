//! The precomputed rate table: decode is an array lookup, encode a binary
//! search; no `ln`/`exp` per packet.

use super::{Code, Codes, Scale, ScaleError};

/// Precomputed rates for every code of a [`Scale`].
///
/// `decode` is one array lookup (indexed by the wire byte `L/8`); `encode` is
/// a branch-free binary search over the same values (8 probes). Fixed-size
/// arrays only, no allocation: 4 KiB plus the scale.
///
/// The values are computed by the same expression as [`Scale::decode`], so the
/// table and the float path agree bit for bit (see the [module
/// docs](crate::scale)).
#[derive(Clone, Debug, PartialEq)]
pub struct RateTable {
    scale: Scale,
    /// `rates[w] = b·e^(8w/a)` for every wire byte `w` (valid code or not).
    rates: [f64; 256],
    /// `by_index[i]` = rate of the code with index `i`; `+∞` past the last.
    by_index: [f64; 256],
    /// Wire byte of the smallest code.
    first: u8,
    /// `step / 8`.
    stride: u8,
    /// Number of codes (≥ 1).
    count: u16,
}

/// Backing storage of [`RateTable::paper`].
static PAPER_TABLE: RateTable = RateTable::PAPER;

// The paper's scale is valid, so building its table unchecked is sound.
const _: () = assert!(Scale::PAPER.is_valid());

impl RateTable {
    /// The table for [`Scale::PAPER`], computed at compile time.
    pub const PAPER: RateTable = RateTable::build(&Scale::PAPER);

    /// A `'static` reference to [`RateTable::PAPER`] (one shared copy).
    #[inline]
    pub fn paper() -> &'static RateTable {
        &PAPER_TABLE
    }

    /// Builds the table for any valid scale (usable in `const`).
    pub const fn new(scale: &Scale) -> Result<RateTable, ScaleError> {
        match scale.validate() {
            Ok(()) => Ok(RateTable::build(scale)),
            Err(e) => Err(e),
        }
    }

    /// Builds the table; `scale` must be valid.
    #[allow(clippy::indexing_slicing)] // indices < 256 = the arrays' length (see below)
    const fn build(scale: &Scale) -> RateTable {
        let mut rates = [0.0; 256];
        let mut w = 0;
        while w < 256 {
            rates[w] = scale.rate_of_len(w * 8);
            w += 1;
        }
        let first = scale.min_len as usize / 8;
        let stride = scale.step as usize / 8;
        let count = scale.code_count();
        let mut by_index = [f64::INFINITY; 256];
        let mut i = 0;
        while i < count {
            // i < count ≤ 255 and first + i·stride ≤ max_len/8 ≤ 255.
            by_index[i] = rates[first + i * stride];
            i += 1;
        }
        RateTable {
            scale: *scale,
            rates,
            by_index,
            first: first as u8,
            stride: stride as u8,
            count: count as u16,
        }
    }

    /// The scale this table was built from.
    #[inline]
    pub const fn scale(&self) -> &Scale {
        &self.scale
    }

    /// The number of codes (183 for the paper's scale).
    #[inline]
    pub const fn code_count(&self) -> usize {
        self.count as usize
    }

    /// All codes, smallest first.
    #[inline]
    pub const fn codes(&self) -> Codes {
        self.scale.codes()
    }

    /// The smallest code.
    #[inline]
    pub const fn min_code(&self) -> Code {
        Code(self.first)
    }

    /// The largest code.
    #[inline]
    pub const fn max_code(&self) -> Code {
        // ≤ 255 because the scale validated max_len ≤ 2040.
        Code((self.first as usize + (self.count as usize - 1) * self.stride as usize) as u8)
    }

    /// Decode, table path: the rate `code` stands for, in B/ms. One lookup.
    ///
    /// Like [`Scale::decode`], gives the formula's value for any code.
    #[inline]
    pub fn decode(&self, code: Code) -> f64 {
        // A u8 index into a 256-array: always in bounds (the branch folds away).
        self.rates
            .get(usize::from(code.wire()))
            .copied()
            .unwrap_or(f64::NAN)
    }

    /// Encode, table path: identical to [`Scale::encode`] (largest code whose
    /// rate is ≤ `bytes_per_ms`, clamped to the top code; `None` below the
    /// lowest code's rate or for `NaN`), by binary search.
    ///
    /// The search runs a fixed 8 steps over 256 slots (slots past the last
    /// code hold `+∞`), each a compare and a conditional move: no branch
    /// depends on the rate.
    #[inline]
    pub fn encode(&self, bytes_per_ms: f64) -> Option<Code> {
        if bytes_per_ms.is_nan() || bytes_per_ms < self.rate_at(0) {
            return None;
        }
        // Invariant: by_index[lo] ≤ bytes_per_ms. Each step tries lo + half;
        // after the 8 steps lo is the largest such index. The halves sum to
        // 255, so every probe is in bounds (`& 0xFF` lets the compiler see it).
        let mut lo = 0_usize;
        let mut half = 128_usize;
        while half > 0 {
            let probe = (lo + half) & 0xFF;
            let r = self.rate_at(probe);
            lo = if r <= bytes_per_ms { probe } else { lo };
            half /= 2;
        }
        // A `+∞` input also passes the padding: clamp to the top code.
        let last = usize::from(self.count).saturating_sub(1);
        Some(Code(self.wire_at(lo.min(last))))
    }

    /// [`Scale::carrier_code`] for this table's scale.
    #[inline]
    pub const fn carrier_code(&self, wanted: Code, payload_len: usize) -> Option<Code> {
        self.scale.carrier_code(wanted, payload_len)
    }

    /// Wire byte of the code with index `i < count`.
    #[inline]
    fn wire_at(&self, i: usize) -> u8 {
        (usize::from(self.first) + i * usize::from(self.stride)) as u8
    }

    /// Rate of the code with index `i` (`+∞` from `count` on).
    #[inline]
    fn rate_at(&self, i: usize) -> f64 {
        self.by_index.get(i).copied().unwrap_or(f64::INFINITY)
    }
}

impl Default for RateTable {
    fn default() -> Self {
        RateTable::PAPER
    }
}

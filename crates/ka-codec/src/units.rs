//! Human units for command lines and logs (`no_std`, no allocation).
//!
//! Parsers (`1.5gbit`, `50ms`, `10MiB`, …) and `Display` wrappers
//! ([`Rate`], [`ByteSize`]; for CSV files, where the simulator and the
//! trace tool must agree to the byte, [`Trimmed`] and [`Seconds`]). Rules
//! shared by every parser:
//!
//! * A number is digits with an optional decimal point (`1500`, `1.5`, `.5`);
//!   no sign, no exponent. Whitespace around it and between number and unit
//!   is allowed.
//! * Decimal fractions are exact: `1.5gbit` is exactly 1 500 000 000 bit/s.
//!   A fraction finer than the result's resolution (1 bit/s, 1 byte, 1 ns) is
//!   refused ([`UnitError::TooPrecise`]) rather than rounded.
//! * Prefixes: `k`, `m`, `g`, `t` (any case) are ×10³ steps; `ki`, `mi`, `gi`,
//!   `ti` are ×2¹⁰ steps. For rates and sizes `m` is *mega* (there is no milli).
//!
//! **Rates are bits per second.** `bit`, `bits`, `bit/s`, `bits/s`, `bps` and
//! `b/s` all mean bits, so `10mbps` is 10 megabits/s. This differs from `tc`,
//! where `mbps` means megabytes: to avoid that trap, byte rates (`MBps`,
//! `MB/s`, `mbyte`, a capital `B`) are refused ([`UnitError::RateInBytes`]),
//! and a bare `b` (`100mb`) is refused as ambiguous. A bare number is bit/s.
//!
//! **Sizes are bytes**: `B`, `byte`, `bytes` or nothing; `10M` = `10MB` =
//! 10⁶ bytes, `10MiB` = `10Mi` = 2²⁰·10. A lowercase `b` (`10Mb`, bits) is
//! refused ([`UnitError::SizeInBits`]).
//!
//! **Durations**: `ns`, `us` (or `µs`), `ms`, `s` (or `sec`), `min`, `h`. A bare
//! `0` needs no unit; any other number does. `m` alone is refused (write `min`
//! for minutes, `ms` for milliseconds).

use core::fmt::{self, Write as _};
use core::time::Duration;

/// Why a human-unit string could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnitError {
    /// The string is empty or only whitespace.
    Empty,
    /// The string does not start with a number (`1500`, `1.5`, `.5`).
    InvalidNumber,
    /// The value does not fit (u64 bit/s, u64 bytes, `Duration`).
    Overflow,
    /// More decimal places than the result's resolution (1 bit/s, 1 byte,
    /// 1 ns) can hold.
    TooPrecise,
    /// Not a rate unit.
    UnknownRateUnit,
    /// A byte rate (`MBps`, `MB/s`, `mbyte`); rates are written in bits.
    RateInBytes,
    /// `b` alone (`100mb`): bits or bytes is unclear.
    AmbiguousRateUnit,
    /// Not a size unit.
    UnknownSizeUnit,
    /// A lowercase `b` in a size (`10Mb`): sizes are bytes (`B`).
    SizeInBits,
    /// Not a duration unit.
    UnknownDurationUnit,
    /// A non-zero duration without a unit.
    MissingDurationUnit,
    /// `m` alone: minutes or milliseconds is unclear.
    AmbiguousMinutes,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitError::Empty => "empty value",
            UnitError::InvalidNumber => {
                "expected a number (digits with an optional decimal point, e.g. 1500 or 1.5) followed by a unit"
            }
            UnitError::Overflow => "value too large",
            UnitError::TooPrecise => {
                "more decimal places than the resolution (1 bit/s, 1 byte, 1 ns) can hold"
            }
            UnitError::UnknownRateUnit => {
                "unknown rate unit; accepted: bit, bits, bit/s, bps or b/s (all bits per second) with an optional \
                 prefix k, m, g, t (x1000) or ki, mi, gi, ti (x1024), e.g. 100mbit, 20Mbit/s, 10mbps, 1.5gbit, \
                 500kbit, 123bit; a bare number is bit/s"
            }
            UnitError::RateInBytes => {
                "byte rates (MBps, MB/s, mbyte) are not accepted: write the rate in bits, e.g. 80mbit \
                 (note: bps means bits per second here)"
            }
            UnitError::AmbiguousRateUnit => {
                "ambiguous rate unit `b`: write bit, bit/s or bps (bits per second), e.g. 100mbit"
            }
            UnitError::UnknownSizeUnit => {
                "unknown size unit; accepted: B, byte, bytes or nothing, with an optional prefix k, m, g, t \
                 (x1000) or ki, mi, gi, ti (x1024), e.g. 1500, 10M, 10MB, 10MiB, 4KiB, 1G"
            }
            UnitError::SizeInBits => {
                "a lowercase b means bits; sizes are bytes: write B (e.g. 10MB) or nothing (10M)"
            }
            UnitError::UnknownDurationUnit => {
                "unknown duration unit; accepted: ns, us, µs, ms, s, sec, min, h, e.g. 50ms, 1.5s, 250us, 2min"
            }
            UnitError::MissingDurationUnit => {
                "a duration needs a unit (ns, us, ms, s, min, h); only 0 may be written without one"
            }
            UnitError::AmbiguousMinutes => {
                "ambiguous duration unit `m`: write min for minutes or ms for milliseconds"
            }
        })
    }
}

impl core::error::Error for UnitError {}

/// At most this many significant fraction digits (keeps every product
/// within `u128`: 10²⁴ · 2⁴⁸ < 2¹²⁸).
const MAX_FRAC_DIGITS: usize = 24;

/// A non-negative decimal `int + frac / 10^frac_digits`.
#[derive(Clone, Copy, Debug)]
struct Decimal {
    int: u128,
    frac: u128,
    frac_digits: u32,
}

impl Decimal {
    /// `self × unit`, exactly; [`UnitError::TooPrecise`] if not whole.
    fn times(self, unit: u128) -> Result<u128, UnitError> {
        let whole = self.int.checked_mul(unit).ok_or(UnitError::Overflow)?;
        let pow = 10_u128.pow(self.frac_digits); // frac_digits ≤ 24
        let frac = self.frac.checked_mul(unit).ok_or(UnitError::Overflow)?;
        if frac % pow != 0 {
            return Err(UnitError::TooPrecise);
        }
        whole.checked_add(frac / pow).ok_or(UnitError::Overflow)
    }

    fn is_zero(self) -> bool {
        self.int == 0 && self.frac == 0
    }
}

fn digits_value(digits: &str) -> Result<u128, UnitError> {
    digits.bytes().try_fold(0_u128, |acc, d| {
        acc.checked_mul(10)
            .and_then(|v| v.checked_add(u128::from(d - b'0')))
            .ok_or(UnitError::Overflow)
    })
}

/// Splits `s` into its leading number and the (trimmed) unit after it.
fn split_number(s: &str) -> Result<(Decimal, &str), UnitError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(UnitError::Empty);
    }
    let int_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (int_str, rest) = s.split_at(int_end);
    let (frac_str, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            after.split_at(end)
        }
        None => ("", rest),
    };
    if int_str.is_empty() && frac_str.is_empty() {
        return Err(UnitError::InvalidNumber);
    }
    let frac_str = frac_str.trim_end_matches('0');
    if frac_str.len() > MAX_FRAC_DIGITS {
        return Err(UnitError::TooPrecise);
    }
    let num = Decimal {
        int: digits_value(int_str)?,
        frac: digits_value(frac_str)?,
        frac_digits: frac_str.len() as u32,
    };
    Ok((num, rest.trim_start()))
}

/// Splits an SI/IEC prefix (`k`, `ki`, … any case) off `unit`: returns the
/// multiplier and the rest (multiplier 1 and `unit` itself if none).
fn split_prefix(unit: &str) -> (u128, &str) {
    let mut chars = unit.chars();
    let power = match chars.next().map(|c| c.to_ascii_lowercase()) {
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        _ => return (1, unit),
    };
    let rest = chars.as_str();
    match rest.strip_prefix(['i', 'I']) {
        Some(after) => (1_u128 << (10 * power), after),
        None => (10_u128.pow(3 * power), rest),
    }
}

fn to_u64(v: u128) -> Result<u64, UnitError> {
    u64::try_from(v).map_err(|_| UnitError::Overflow)
}

/// Parses a rate in bits per second: `100mbit`, `1gbit`, `20Mbit/s`,
/// `500kbit`, `1.5gbit`, `123bit`, `10mbps` (= 10 megabits/s), `8000`.
/// See the [module docs](self) for the full grammar.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(s)?;
    let (mult, base) = split_prefix(unit);
    let is_bits = if unit.is_empty()
        || ["bit", "bits", "bit/s", "bits/s"]
            .iter()
            .any(|b| base.eq_ignore_ascii_case(b))
    {
        true
    } else if let Some(tail) = base.strip_prefix('b') {
        if tail.eq_ignore_ascii_case("ps") || tail == "/s" {
            true
        } else if tail.is_empty() {
            return Err(UnitError::AmbiguousRateUnit);
        } else {
            false
        }
    } else {
        false
    };
    if !is_bits {
        let bytes_like = base.starts_with('B')
            || ["byte", "bytes", "byte/s", "bytes/s"]
                .iter()
                .any(|b| base.eq_ignore_ascii_case(b));
        return Err(if bytes_like {
            UnitError::RateInBytes
        } else {
            UnitError::UnknownRateUnit
        });
    }
    to_u64(num.times(mult)?)
}

/// Parses a size in bytes: `1500`, `10M` and `10MB` (10⁶·10), `10MiB`
/// (2²⁰·10), `4KiB`, `1G`. See the [module docs](self).
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(s)?;
    let (mult, base) = split_prefix(unit);
    let ok = base.is_empty()
        || base == "B"
        || base.eq_ignore_ascii_case("byte")
        || base.eq_ignore_ascii_case("bytes");
    if !ok {
        // Lowercase `b…` that is not `byte…`: bits (`10Mb`, `10mbit`).
        let bits_like = base.starts_with('b')
            && !base
                .get(..4)
                .is_some_and(|p| p.eq_ignore_ascii_case("byte"));
        return Err(if bits_like {
            UnitError::SizeInBits
        } else {
            UnitError::UnknownSizeUnit
        });
    }
    to_u64(num.times(mult)?)
}

/// Parses a duration: `50ms`, `1s`, `250us`, `1.5s`, `2min`, `0`. See the
/// [module docs](self).
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    const NS: u128 = 1;
    const US: u128 = 1_000;
    const MS: u128 = 1_000_000;
    const S: u128 = 1_000_000_000;
    let (num, unit) = split_number(s)?;
    let per_unit = if unit.is_empty() {
        if num.is_zero() {
            return Ok(Duration::ZERO);
        }
        return Err(UnitError::MissingDurationUnit);
    } else if unit.eq_ignore_ascii_case("ns") {
        NS
    } else if unit.eq_ignore_ascii_case("us") || unit == "µs" || unit == "μs" {
        US
    } else if unit.eq_ignore_ascii_case("ms") {
        MS
    } else if unit.eq_ignore_ascii_case("s") || unit.eq_ignore_ascii_case("sec") {
        S
    } else if unit.eq_ignore_ascii_case("min") {
        60 * S
    } else if unit.eq_ignore_ascii_case("h") {
        3600 * S
    } else if unit.eq_ignore_ascii_case("m") {
        return Err(UnitError::AmbiguousMinutes);
    } else {
        return Err(UnitError::UnknownDurationUnit);
    };
    let nanos = num.times(per_unit)?;
    let secs = u64::try_from(nanos / S).map_err(|_| UnitError::Overflow)?;
    // < 10⁹, fits u32.
    let sub = (nanos % S) as u32;
    Ok(Duration::new(secs, sub))
}

/// A rate for display in human units: `120.04 kbit/s`, `245.92 Mbit/s`,
/// `9.82 Gbit/s`.
///
/// Picks bit/s, kbit/s, Mbit/s, Gbit/s or Tbit/s by magnitude (decimal
/// prefixes); two decimals unless a precision is given (`{:.0}`); honours
/// width and alignment (`{:>14}`).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Rate {
    bps: f64,
}

impl Rate {
    /// A rate in bits per second.
    #[inline]
    pub const fn from_bps(bps: f64) -> Rate {
        Rate { bps }
    }

    /// A rate in bytes per millisecond (the codec's unit; × 8000 bit/s).
    #[inline]
    pub const fn from_bytes_per_ms(bytes_per_ms: f64) -> Rate {
        Rate {
            bps: crate::scale::bytes_per_ms_to_bps(bytes_per_ms),
        }
    }

    /// Bits per second.
    #[inline]
    pub const fn bps(self) -> f64 {
        self.bps
    }

    /// Bytes per millisecond.
    #[inline]
    pub const fn bytes_per_ms(self) -> f64 {
        crate::scale::bps_to_bytes_per_ms(self.bps)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(f64, &str); 4] = [
            (1e12, "Tbit/s"),
            (1e9, "Gbit/s"),
            (1e6, "Mbit/s"),
            (1e3, "kbit/s"),
        ];
        let mag = if self.bps < 0.0 { -self.bps } else { self.bps };
        let (div, unit) = UNITS
            .iter()
            .copied()
            .find(|&(d, _)| mag >= d)
            .unwrap_or((1.0, "bit/s"));
        pad_number(f, self.bps / div, unit)
    }
}

/// Formats bits per second in human units (see [`Rate`]).
#[inline]
pub const fn format_rate(bps: u64) -> Rate {
    Rate::from_bps(bps as f64)
}

/// A byte count for display: `1500 B` below 1000, else `1.50 kB`, `10.00 MB`,
/// … (decimal prefixes, two decimals unless a precision is given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 5] = [
            (1_000_000_000_000_000, "PB"),
            (1_000_000_000_000, "TB"),
            (1_000_000_000, "GB"),
            (1_000_000, "MB"),
            (1_000, "kB"),
        ];
        match UNITS.iter().copied().find(|&(d, _)| self.0 >= d) {
            Some((div, unit)) => pad_number(f, self.0 as f64 / div as f64, unit),
            None => {
                let mut buf = StackBuf::new();
                match write!(buf, "{} B", self.0) {
                    Ok(()) => pad_str(f, buf.as_str()),
                    Err(_) => write!(f, "{} B", self.0),
                }
            }
        }
    }
}

/// Formats a byte count in human units (see [`ByteSize`]).
#[inline]
pub const fn format_bytes(bytes: u64) -> ByteSize {
    ByteSize(bytes)
}

/// A number as the simulator's and the trace tool's CSV files write it:
/// an integral value below 10¹⁵ without a fraction, any other rounded to 6
/// decimals with the trailing zeros (and a bare point) cut, `-0` as `0`; a
/// value that is not finite writes nothing. Ignores width and precision.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Trimmed(pub f64);

impl fmt::Display for Trimmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if !v.is_finite() {
            return Ok(());
        }
        // `as i64` truncates (exactly, below 10¹⁵): integral iff unchanged.
        // (`f64::trunc` is not in `core`.)
        if v.abs() < 1e15 && v == (v as i64) as f64 {
            return write!(f, "{}", v as i64);
        }
        let mut buf = StackBuf::new();
        if write!(buf, "{v:.6}").is_err() {
            // Too long for the stack buffer: |v| ≥ 10⁵⁶, an integral value
            // whose six decimals are all zeros.
            return write!(f, "{v:.0}");
        }
        let s = buf.as_str().trim_end_matches('0').trim_end_matches('.');
        f.write_str(if s == "-0" { "0" } else { s })
    }
}

/// Nanoseconds written as exact decimal seconds without trailing zeros
/// (`1500000000` → `1.5`, `0` → `0`), as the CSV files write times.
/// Ignores width and precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seconds(pub u64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NS_PER_SEC: u64 = 1_000_000_000;
        let (whole, frac) = (self.0 / NS_PER_SEC, self.0 % NS_PER_SEC);
        if frac == 0 {
            return write!(f, "{whole}");
        }
        let mut digits = StackBuf::new();
        write!(digits, "{frac:09}")?;
        write!(f, "{whole}.{}", digits.as_str().trim_end_matches('0'))
    }
}

/// Writes `value unit` with the formatter's precision (default 2), padded to
/// its width.
fn pad_number(f: &mut fmt::Formatter<'_>, value: f64, unit: &str) -> fmt::Result {
    let prec = f.precision().unwrap_or(2);
    let mut buf = StackBuf::new();
    match write!(buf, "{value:.prec$} {unit}") {
        Ok(()) => pad_str(f, buf.as_str()),
        // Too long for the stack buffer (absurd values): write unpadded.
        Err(_) => write!(f, "{value:.prec$} {unit}"),
    }
}

/// Writes `s` padded to the formatter's width with its fill and alignment
/// (left by default). Unlike `Formatter::pad`, the precision (already used for
/// the number) does not truncate.
fn pad_str(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    let len = s.chars().count();
    let pad = f.width().unwrap_or(0).saturating_sub(len);
    let (before, after) = match f.align() {
        Some(fmt::Alignment::Right) => (pad, 0),
        Some(fmt::Alignment::Center) => (pad / 2, pad - pad / 2),
        Some(fmt::Alignment::Left) | None => (0, pad),
    };
    let fill = f.fill();
    for _ in 0..before {
        f.write_char(fill)?;
    }
    f.write_str(s)?;
    for _ in 0..after {
        f.write_char(fill)?;
    }
    Ok(())
}

/// A small fixed-capacity string, for padding composite output without
/// allocating.
struct StackBuf {
    buf: [u8; 64],
    len: usize,
}

impl StackBuf {
    const fn new() -> StackBuf {
        StackBuf {
            buf: [0; 64],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        self.buf
            .get(..self.len)
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or("")
    }
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A share written as a percentage (`"60%"`, `"0.5 %"`) or as a plain
/// number (`"0.6"`): the value as a fraction (`60%` → 0.6) and whether it
/// was written with `%`. `None` if it is not a number. No range check:
/// each knob (probabilities, RWM shares and δ) has its own.
pub fn percent_or_number(s: &str) -> Option<(f64, bool)> {
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(n) => n.trim_end().parse::<f64>().ok().map(|v| (v / 100.0, true)),
        None => t.parse::<f64>().ok().map(|v| (v, false)),
    }
}

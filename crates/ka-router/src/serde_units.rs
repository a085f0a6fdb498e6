//! Human units in the serialised configuration (feature `serde`): the one
//! place that turns durations and rates into what a person types in a
//! ka-sim scenario or a `ka-router --config` file (`"10ms"`, `"20mbit"`,
//! ka-codec's [`units`](ka_codec::units) grammar) and back.
//!
//! Used as `#[serde(with = "crate::serde_units::duration")]` and so on.
//! Written forms are exact: a value reads back bit for bit.

use std::time::Duration;

use ka_codec::units::{parse_duration, parse_rate};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize as _, Serializer};

/// `d` in the largest unit that divides it exactly (`"250us"`, `"5ms"`,
/// `"2s"`, `"0ms"`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0ms".into();
    }
    for (per, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns.is_multiple_of(per) {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

/// `bps` bit/s in the largest decimal prefix that divides it exactly
/// (`"20mbit"`, `"1500kbit"`, `"123bit"`).
pub fn format_rate(bps: u64) -> String {
    if bps == 0 {
        return "0bit".into();
    }
    for (per, unit) in [
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ] {
        if bps.is_multiple_of(per) {
            return format!("{}{unit}", bps / per);
        }
    }
    format!("{bps}bit")
}

/// A [`Duration`] as a string with a unit (`"10ms"`).
pub mod duration {
    use super::*;

    /// Writes `d` ([`format_duration`]).
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Reads `"10ms"`, `"1.5s"`, `"250us"`, `"0"`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map_err(|e| de::Error::custom(format!("{s:?}: {e} (e.g. 10ms)")))
    }
}

/// An optional [`Duration`] (absent = `None`; use with
/// `skip_serializing_if = "Option::is_none"` and `default`).
pub mod opt_duration {
    use super::*;

    /// Writes `Some(d)` as [`format_duration`]; `None` as nothing.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    /// Reads what [`duration::deserialize`]
    /// reads.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

/// A rate in bit/s (`u64`) as a string with a unit (`"20mbit"`), or a bare
/// number of bit/s.
pub mod rate_bps {
    use super::*;

    /// Writes `bps` ([`format_rate`]).
    pub fn serialize<S: Serializer>(bps: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_rate(*bps))
    }

    /// Reads `"20mbit"`, `"1.5gbit"`, or a number of bit/s.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(RateVisitor)
    }
}

struct RateVisitor;

impl Visitor<'_> for RateVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a rate such as \"20mbit\" or a number of bit/s")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        parse_rate(v).map_err(|e| E::custom(format!("{v:?}: {e}")))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom("a rate cannot be negative"))
    }
}

/// A probability (`f64`, a fraction): a number, or a string
/// [`parse_probability`](crate::impair::parse_probability) reads (`"1%"`,
/// `"0.01"`). Written as the number, which reads back exactly.
pub mod probability {
    use super::*;

    /// Writes the fraction.
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*v)
    }

    /// Reads a fraction (`0.01`, `0`, `1`) or a string (`"1%"`).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(NumberOrText {
            expecting: "a probability: a fraction such as 0.01 or a string such as \"1%\"",
            parse: crate::impair::parse_probability,
        })
    }
}

/// A rate in B/ms (`f64`, the controllers' unit): a number of B/ms, or a
/// string with a bit rate unit (`"120kbit"` = 15 B/ms). Written as the
/// number, which reads back exactly.
pub mod bytes_per_ms {
    use super::*;

    /// Writes the number of B/ms.
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*v)
    }

    /// Reads a number of B/ms or a bit rate with a unit.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(NumberOrText {
            expecting: "a number of bytes per ms or a rate such as \"120kbit\"",
            parse: |v| {
                parse_rate(v)
                    .map(|bps| bps as f64 / 8000.0)
                    .map_err(|e| format!("{v:?}: {e}"))
            },
        })
    }
}

/// An `f64` written as a number (taken as it is) or as text that `parse`
/// reads (with its unit or `%`).
struct NumberOrText {
    expecting: &'static str,
    parse: fn(&str) -> Result<f64, String>,
}

impl Visitor<'_> for NumberOrText {
    type Value = f64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        (self.parse)(v).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
}

/// One rate for both directions (`"900mbit"`) or one per direction
/// (`["1gbit", "100mbit"]`), as `[u64; 2]` bit/s. Written as the pair.
pub mod rate_pair {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        One(#[serde(with = "super::rate_bps")] u64),
        Two(
            #[serde(with = "super::rate_bps")] u64,
            #[serde(with = "super::rate_bps")] u64,
        ),
    }

    /// Writes `[forward, reverse]`.
    pub fn serialize<S: Serializer>(v: &[u64; 2], s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple as _;
        let mut t = s.serialize_tuple(2)?;
        for r in v {
            t.serialize_element(&format_rate(*r))?;
        }
        t.end()
    }

    /// Reads one rate or a pair.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; 2], D::Error> {
        Ok(match Form::deserialize(d)? {
            Form::One(r) => [r, r],
            Form::Two(a, b) => [a, b],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_forms_read_back_exactly() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(5),
            Duration::from_micros(2500),
            Duration::from_secs(300),
            Duration::from_nanos(1_000_000_001),
        ] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{d:?}");
        }
        assert_eq!(format_duration(Duration::from_micros(2500)), "2500us");
        for r in [0, 123, 1_500_000, 20_000_000, 1_000_000_000] {
            assert_eq!(parse_rate(&format_rate(r)), Ok(r), "{r}");
        }
        assert_eq!(format_rate(20_000_000), "20mbit");
    }
}

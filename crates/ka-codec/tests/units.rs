//! Human units: accepted forms, refused forms with the right error, no panics.

use std::time::Duration;

use ka_codec::UnitError;
use ka_codec::units::{
    ByteSize, Rate, Seconds, Trimmed, format_bytes, format_rate, parse_bytes, parse_duration,
    parse_rate,
};
use proptest::prelude::*;

#[test]
fn rates_accepted() {
    let cases: &[(&str, u64)] = &[
        ("100mbit", 100_000_000),
        ("1gbit", 1_000_000_000),
        ("20Mbit/s", 20_000_000),
        ("500kbit", 500_000),
        ("1.5gbit", 1_500_000_000),
        ("123bit", 123),
        ("10mbps", 10_000_000),
        ("10Mbps", 10_000_000),
        ("10 Mb/s", 10_000_000),
        ("8000", 8000),
        (" 2.5 Gbits/s ", 2_500_000_000),
        ("1kibit", 1024),
        ("1Mibit", 1 << 20),
        ("1tbit", 1_000_000_000_000),
        ("0.001kbit", 1),
        (".5kbit", 500),
        ("7.bit", 7),
        ("0", 0),
        ("1.50000000000000000000000000000000gbit", 1_500_000_000),
        ("18446744073709551615", u64::MAX),
    ];
    for (s, want) in cases {
        assert_eq!(parse_rate(s), Ok(*want), "{s}");
    }
}

#[test]
fn rates_refused() {
    use UnitError::*;
    let cases: &[(&str, UnitError)] = &[
        ("", Empty),
        ("   ", Empty),
        ("mbit", InvalidNumber),
        ("-1mbit", InvalidNumber),
        (".mbit", InvalidNumber),
        ("1e6", UnknownRateUnit),
        ("10MBps", RateInBytes),
        ("10MB/s", RateInBytes),
        ("10B", RateInBytes),
        ("10mbyte", RateInBytes),
        ("10 bytes/s", RateInBytes),
        ("100mb", AmbiguousRateUnit),
        ("100b", AmbiguousRateUnit),
        ("100m", UnknownRateUnit),
        ("100furlongs", UnknownRateUnit),
        ("100 mbit x", UnknownRateUnit),
        ("1.5bit", TooPrecise),
        ("0.0001kbit", TooPrecise),
        ("18446744073709551616", Overflow),
        ("20000000tbit", Overflow),
        ("99999999999999999999999999999999999999999999bit", Overflow),
    ];
    for (s, err) in cases {
        assert_eq!(parse_rate(s), Err(*err), "{s}");
    }
}

#[test]
fn sizes() {
    let ok: &[(&str, u64)] = &[
        ("10M", 10_000_000),
        ("10MB", 10_000_000),
        ("10MiB", 10 << 20),
        ("10Mi", 10 << 20),
        ("1500", 1500),
        ("1500B", 1500),
        ("1500 bytes", 1500),
        ("4KiB", 4096),
        ("4k", 4000),
        ("1G", 1_000_000_000),
        ("1.5GiB", 3 << 29),
        ("2TB", 2_000_000_000_000),
        ("0.5KiB", 512),
    ];
    for (s, want) in ok {
        assert_eq!(parse_bytes(s), Ok(*want), "{s}");
    }
    use UnitError::*;
    let bad: &[(&str, UnitError)] = &[
        ("10Mb", SizeInBits),
        ("10mbit", SizeInBits),
        ("10b", SizeInBits),
        ("10MBps", UnknownSizeUnit),
        ("10X", UnknownSizeUnit),
        ("1.5B", TooPrecise),
        ("", Empty),
        ("B", InvalidNumber),
        ("100000000TB", Overflow),
    ];
    for (s, err) in bad {
        assert_eq!(parse_bytes(s), Err(*err), "{s}");
    }
}

#[test]
fn durations() {
    let ok: &[(&str, Duration)] = &[
        ("50ms", Duration::from_millis(50)),
        ("1s", Duration::from_secs(1)),
        ("250us", Duration::from_micros(250)),
        ("250µs", Duration::from_micros(250)),
        ("1.5s", Duration::from_millis(1500)),
        ("0", Duration::ZERO),
        ("0.0", Duration::ZERO),
        ("2min", Duration::from_secs(120)),
        ("1h", Duration::from_secs(3600)),
        ("10ns", Duration::from_nanos(10)),
        ("0.5 sec", Duration::from_millis(500)),
        ("1.000000001s", Duration::new(1, 1)),
        ("18446744073709551615s", Duration::new(u64::MAX, 0)),
    ];
    for (s, want) in ok {
        assert_eq!(parse_duration(s), Ok(*want), "{s}");
    }
    use UnitError::*;
    let bad: &[(&str, UnitError)] = &[
        ("2m", AmbiguousMinutes),
        ("50", MissingDurationUnit),
        ("50 parsecs", UnknownDurationUnit),
        ("1.0000000001s", TooPrecise),
        ("18446744073709551616s", Overflow),
        ("", Empty),
        ("ms", InvalidNumber),
    ];
    for (s, err) in bad {
        assert_eq!(parse_duration(s), Err(*err), "{s}");
    }
}

#[test]
fn errors_explain_what_is_accepted() {
    let msg = UnitError::UnknownRateUnit.to_string();
    assert!(msg.contains("100mbit") && msg.contains("bps"), "{msg}");
    assert!(UnitError::RateInBytes.to_string().contains("bits"));
    assert!(UnitError::UnknownDurationUnit.to_string().contains("ms"));
    assert!(UnitError::AmbiguousMinutes.to_string().contains("min"));
    assert!(UnitError::UnknownSizeUnit.to_string().contains("MiB"));
    let e: Box<dyn std::error::Error> = Box::new(UnitError::Overflow);
    assert_eq!(e.to_string(), "value too large");
}

#[test]
fn formatting() {
    assert_eq!(format_rate(100_000_000).to_string(), "100.00 Mbit/s");
    assert_eq!(format_rate(999).to_string(), "999.00 bit/s");
    assert_eq!(format!("{:.0}", format_rate(1_500_000_000)), "2 Gbit/s");
    assert_eq!(format!("{:.3}", format_rate(1_500_000_000)), "1.500 Gbit/s");
    assert_eq!(Rate::from_bps(f64::NAN).to_string(), "NaN bit/s");
    // Absurd values still format (too long for the padding buffer).
    assert!(Rate::from_bps(1e300).to_string().ends_with("Tbit/s"));
    assert_eq!(format_bytes(1500).to_string(), "1.50 kB");
    assert_eq!(format_bytes(999).to_string(), "999 B");
    assert_eq!(format!("{:>8}", ByteSize(12)), "    12 B");
    assert_eq!(format!("{:^10}", ByteSize(10_000_000)), " 10.00 MB ");
    assert_eq!(format_bytes(u64::MAX).to_string(), "18446.74 PB");
}

#[test]
fn parse_format_round_trip_examples() {
    for bps in [1_u64, 999, 120_036, 100_000_000, 9_820_000_000] {
        // format with enough precision to parse back exactly
        let s = format!("{:.9}", format_rate(bps)).replace(' ', "");
        assert_eq!(parse_rate(&s), Ok(bps), "{s}");
    }
}

proptest! {
    #[test]
    fn parsers_never_panic(s in any::<String>()) {
        let _ = parse_rate(&s);
        let _ = parse_bytes(&s);
        let _ = parse_duration(&s);
    }

    #[test]
    fn parsers_never_panic_on_unit_like(s in "[0-9.]{0,30}[ ]?[kKmMgGtTiIbB/sSpPyYtTeEnNuUµh]{0,8}") {
        let _ = parse_rate(&s);
        let _ = parse_bytes(&s);
        let _ = parse_duration(&s);
    }

    #[test]
    fn integers_round_trip(v in any::<u64>()) {
        prop_assert_eq!(parse_rate(&format!("{v}bit")), Ok(v));
        prop_assert_eq!(parse_bytes(&format!("{v}B")), Ok(v));
        prop_assert_eq!(parse_duration(&format!("{v}ns")), Ok(Duration::from_nanos(v)));
    }

    #[test]
    fn decimal_megabits(int in 0_u64..100_000, frac in 0_u32..1_000_000) {
        let s = format!("{int}.{frac:06}mbit");
        prop_assert_eq!(parse_rate(&s), Ok(int * 1_000_000 + u64::from(frac)));
    }
}

/// What [`Trimmed`] writes, by its definition: format with 6 decimals, cut.
fn trimmed_by_definition(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// What [`Seconds`] writes, by its definition.
fn seconds_by_definition(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let f = format!("{frac:09}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

#[test]
fn csv_numbers() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (-0.0, "0"),
        (1500.0, "1500"),
        (-2.0, "-2"),
        (0.5, "0.5"),
        (1.0 / 3.0, "0.333333"),
        (-1e-7, "0"),
        (2.0000004, "2"),
        (1e15, "1000000000000000"),
        (1e20, "100000000000000000000"),
        (f64::NAN, ""),
        (f64::INFINITY, ""),
    ];
    for &(v, want) in cases {
        assert_eq!(Trimmed(v).to_string(), want, "{v:?}");
    }
    for v in [f64::MAX, f64::MIN, 1e56, -1e57, 1e300, f64::MIN_POSITIVE] {
        assert_eq!(Trimmed(v).to_string(), trimmed_by_definition(v), "{v:?}");
    }
    assert_eq!(Seconds(0).to_string(), "0");
    assert_eq!(Seconds(1_500_000_000).to_string(), "1.5");
    assert_eq!(Seconds(2_000_000_001).to_string(), "2.000000001");
    assert_eq!(
        Seconds(u64::MAX).to_string(),
        seconds_by_definition(u64::MAX)
    );
}

proptest! {
    #[test]
    fn csv_numbers_match_their_definition(v in proptest::num::f64::ANY, ns in any::<u64>()) {
        prop_assert_eq!(Trimmed(v).to_string(), trimmed_by_definition(v));
        prop_assert_eq!(Seconds(ns).to_string(), seconds_by_definition(ns));
    }

    #[test]
    fn csv_numbers_of_usual_size(v in -1e16f64..1e16, ns in 0u64..10_000_000_000_000) {
        prop_assert_eq!(Trimmed(v).to_string(), trimmed_by_definition(v));
        prop_assert_eq!(Seconds(ns).to_string(), seconds_by_definition(ns));
    }
}

//! Rate ↔ length: paper vectors, exactness at boundaries, table/float agreement.

use std::hint::black_box;

use ka_codec::scale::{self, Code, RateTable, Scale, ScaleError};
use ka_codec::{Rate, bps_to_bytes_per_ms, bytes_per_ms_to_bps};
use proptest::prelude::*;

const PAPER: Scale = Scale::PAPER;

fn code(len: usize) -> Code {
    Code::from_len(len).unwrap()
}

/// The largest f64 below `x` (x > 0, finite).
fn next_down(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

fn next_up(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1)
}

/// Deterministic 64-bit PRNG (splitmix64).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1_u64 << 53) as f64
    }
}

#[test]
fn paper_vectors() {
    let r24 = PAPER.decode(code(24));
    assert!((r24 - 15.0045).abs() < 1e-4, "R(24) = {r24}");
    assert!((bytes_per_ms_to_bps(r24) - 120_036.0).abs() < 1.0);
    let r1000 = PAPER.decode(code(1000));
    assert!((r1000 - 30_741.0).abs() < 1.0, "R(1000) = {r1000}");
    assert!((bytes_per_ms_to_bps(r1000) / 1e6 - 245.9).abs() < 0.05);
    let r1472 = PAPER.decode(code(1472));
    assert!((r1472 - 1_227_945.0).abs() < 1.0, "R(1472) = {r1472}");
    assert!((bytes_per_ms_to_bps(r1472) / 1e9 - 9.82).abs() < 0.005);
    // The same numbers through the table.
    for l in [24, 1000, 1472] {
        assert_eq!(RateTable::PAPER.decode(code(l)), PAPER.decode(code(l)));
    }
}

#[test]
fn rate_display_matches_paper_units() {
    let show = |l| Rate::from_bytes_per_ms(PAPER.decode(code(l))).to_string();
    assert_eq!(show(24), "120.04 kbit/s");
    assert_eq!(show(1000), "245.93 Mbit/s");
    assert_eq!(show(1472), "9.82 Gbit/s");
    assert_eq!(show(1480), "10.46 Gbit/s");
    assert_eq!(format!("{:.1}", Rate::from_bps(1500.0)), "1.5 kbit/s");
    assert_eq!(format!("{:>14}|", Rate::from_bps(12.0)), "   12.00 bit/s|");
    assert_eq!(format!("{:<12}|", Rate::from_bps(2e12)), "2.00 Tbit/s |");
}

#[test]
fn unit_conversions() {
    assert_eq!(bytes_per_ms_to_bps(1.0), 8000.0);
    assert_eq!(bps_to_bytes_per_ms(120_000.0), 15.0);
    assert_eq!(Rate::from_bps(8000.0).bytes_per_ms(), 1.0);
}

#[test]
fn lowest_paper_rate_120kbit_is_not_encodable() {
    let r = bps_to_bytes_per_ms(120_000.0); // 15 B/ms < R(24) = 15.0045
    assert_eq!(PAPER.encode(r), None);
    assert_eq!(RateTable::PAPER.encode(r), None);
    assert_eq!(scale::encode(r), None);
    // Just at R(24) it is.
    let r24 = PAPER.decode(code(24));
    assert_eq!(PAPER.encode(r24), Some(code(24)));
    assert_eq!(PAPER.encode(next_down(r24)), None);
    assert_eq!(RateTable::PAPER.encode(next_down(r24)), None);
}

#[test]
fn top_of_the_scale() {
    // 10 Gbit/s lies between R(1472) = 9.82 and R(1480) = 10.46 Gbit/s, so the
    // never-over-state rule gives 1472; rates from R(1480) up saturate at 1480.
    let ten_g = bps_to_bytes_per_ms(10e9);
    assert_eq!(PAPER.encode(ten_g), Some(code(1472)));
    assert_eq!(RateTable::PAPER.encode(ten_g), Some(code(1472)));
    let r1480 = PAPER.decode(code(1480));
    for r in [
        r1480,
        bps_to_bytes_per_ms(100e9),
        1e300,
        f64::MAX,
        f64::INFINITY,
    ] {
        assert_eq!(PAPER.encode(r), Some(Code::MAX), "{r}");
        assert_eq!(RateTable::PAPER.encode(r), Some(Code::MAX), "{r}");
    }
    assert_eq!(PAPER.encode(next_down(r1480)), Some(code(1472)));
}

#[test]
fn not_encodable_inputs() {
    for r in [0.0, -0.0, -1.0, f64::NAN, f64::NEG_INFINITY, 1e-300, 15.0] {
        assert_eq!(PAPER.encode(r), None, "{r}");
        assert_eq!(RateTable::PAPER.encode(r), None, "{r}");
    }
}

#[test]
fn exactly_183_codes() {
    assert_eq!(PAPER.code_count(), 183);
    assert_eq!(RateTable::PAPER.code_count(), 183);
    let codes: Vec<Code> = PAPER.codes().collect();
    assert_eq!(codes.len(), 183);
    assert_eq!(PAPER.codes().len(), 183);
    assert_eq!(codes.first().map(|c| c.len()), Some(24));
    assert_eq!(codes.last().map(|c| c.len()), Some(1480));
    assert!(codes.windows(2).all(|w| w[1].len() == w[0].len() + 8));
    let back: Vec<Code> = PAPER.codes().rev().collect();
    assert_eq!(back.iter().rev().copied().collect::<Vec<_>>(), codes);
    assert_eq!(PAPER.min_code(), Some(Code::MIN));
    assert_eq!(PAPER.max_code(), Some(Code::MAX));
    assert_eq!(RateTable::PAPER.min_code(), Code::MIN);
    assert_eq!(RateTable::PAPER.max_code(), Code::MAX);
}

#[test]
fn code_wire_form() {
    let c = code(1000);
    assert_eq!(c.wire(), 125);
    assert_eq!(c.len(), 1000);
    assert_eq!(Code::from_wire(125), Some(c));
    assert_eq!(c.to_string(), "L=1000 (code 125)");
    assert_eq!(Code::from_wire(2), None);
    assert_eq!(Code::from_wire(3).map(Code::len), Some(24));
    assert_eq!(Code::from_wire(185).map(Code::len), Some(1480));
    assert_eq!(Code::from_wire(186), None);
    assert_eq!(Code::from_wire(0), None);
    assert_eq!(Code::from_wire(255), None);
    for bad in [0, 16, 23, 25, 1001, 1488, 2040, 4096, usize::MAX] {
        assert_eq!(Code::from_len(bad), None, "{bad}");
    }
    // Every wire byte: valid exactly for 3..=185, and then len = 8·wire.
    for w in 0..=255_u8 {
        let c = Code::from_wire(w);
        assert_eq!(c.is_some(), (3..=185).contains(&w));
        if let Some(c) = c {
            assert_eq!(c.len(), usize::from(w) * 8);
            assert_eq!(Code::from_len(c.len()), Some(c));
        }
    }
}

#[test]
fn carrier_rule() {
    let top = Code::MAX;
    // A 1500-byte IPv4 packet has payload 1480: carries at most 1472.
    assert_eq!(scale::carrier_code(top, 1480), Some(code(1472)));
    assert_eq!(scale::carrier_code(code(1472), 1480), Some(code(1472)));
    assert_eq!(scale::carrier_code(code(880), 1480), Some(code(880)));
    // Payload must exceed L (both fragments non-empty).
    assert_eq!(scale::carrier_code(code(880), 880), Some(code(872)));
    assert_eq!(scale::carrier_code(code(880), 881), Some(code(880)));
    assert_eq!(scale::carrier_code(code(880), 500), Some(code(496)));
    assert_eq!(scale::carrier_code(top, 25), Some(code(24)));
    for p in [0, 1, 23, 24] {
        assert_eq!(scale::carrier_code(code(24), p), None, "payload {p}");
        assert_eq!(scale::carrier_code(top, p), None, "payload {p}");
    }
    // A code that is not the scale's is refused.
    let other = Scale::new(128.0, 12.4392, 16, 1480, 8).unwrap();
    let c16 = other.code_from_len(16).unwrap();
    assert_eq!(PAPER.carrier_code(c16, 1480), None);
    assert_eq!(
        RateTable::PAPER.carrier_code(code(1480), 1480),
        Some(code(1472))
    );
}

#[test]
fn decode_strictly_increasing_and_encode_inverts_decode() {
    let mut prev = 0.0;
    for c in PAPER.codes() {
        let r = PAPER.decode(c);
        assert!(r > prev, "{c}");
        prev = r;
        assert_eq!(PAPER.encode(r), Some(c), "float {c}");
        assert_eq!(RateTable::PAPER.encode(r), Some(c), "table {c}");
        assert_eq!(scale::encode(r), Some(c));
        assert_eq!(scale::decode(c), r);
        // Just below the boundary: the code below (or nothing).
        let below = PAPER.codes().take_while(|&d| d < c).last();
        assert_eq!(PAPER.encode(next_down(r)), below, "float below {c}");
        assert_eq!(
            RateTable::PAPER.encode(next_down(r)),
            below,
            "table below {c}"
        );
        // Just above: still this code.
        assert_eq!(PAPER.encode(next_up(r)), Some(c));
        assert_eq!(RateTable::PAPER.encode(next_up(r)), Some(c));
    }
}

#[test]
fn table_and_float_agree_near_every_boundary() {
    // The float path switches between its ln-only fast path and the exact
    // check somewhere within ~1e-10 of a boundary: probe both sides of it.
    for c in PAPER.codes() {
        let bits = PAPER.decode(c).to_bits();
        for ulps in [
            1_u64,
            2,
            3,
            10,
            100,
            1_000,
            10_000,
            1_000_000,
            100_000_000,
            10_000_000_000,
        ] {
            for r in [f64::from_bits(bits - ulps), f64::from_bits(bits + ulps)] {
                let float = PAPER.encode(r);
                assert_eq!(float, RateTable::PAPER.encode(r), "{c} ± {ulps} ulp");
                assert!(float.is_none_or(|f| PAPER.decode(f) <= r));
            }
        }
    }
}

#[test]
fn table_and_float_agree_on_1e5_random_rates() {
    let mut rng = SplitMix(0x4B41_2025);
    let lo = PAPER.decode(Code::MIN).ln();
    let hi = PAPER.decode(Code::MAX).ln();
    for i in 0..100_000 {
        let r = match i % 4 {
            // Log-uniform over the scale and a bit beyond.
            0 | 1 => ((lo - 1.0) + rng.unit() * (hi - lo + 2.0)).exp(),
            // Exactly on a code boundary, or one ulp off it.
            2 => {
                let c = PAPER.code_at((rng.next() % 183) as usize).unwrap();
                let r = PAPER.decode(c);
                match rng.next() % 3 {
                    0 => r,
                    1 => next_down(r),
                    _ => next_up(r),
                }
            }
            // Any bit pattern at all (NaN, negative, subnormal, huge).
            _ => f64::from_bits(rng.next()),
        };
        let float = PAPER.encode(r);
        let table = RateTable::PAPER.encode(r);
        assert_eq!(float, table, "rate {r:e}");
        if let Some(c) = float {
            assert!(PAPER.decode(c) <= r, "over-states {r:e}");
        }
    }
}

#[test]
fn const_table_equals_runtime_table() {
    let runtime = RateTable::new(black_box(&Scale::PAPER)).unwrap();
    assert_eq!(runtime, RateTable::PAPER);
    assert_eq!(RateTable::paper(), &RateTable::PAPER);
    assert_eq!(RateTable::default(), RateTable::PAPER);
    assert_eq!(Scale::default(), Scale::PAPER);
    assert_eq!(runtime.scale(), &Scale::PAPER);
    // Decode through the table equals the float formula bit for bit, for every
    // wire byte (valid or not).
    for w in 0..=255_u8 {
        let c = Scale::new(128.0, 12.4392, 8, 2040, 8)
            .unwrap()
            .code_from_wire(w);
        if let Some(c) = c {
            assert_eq!(
                RateTable::PAPER.decode(c).to_bits(),
                PAPER.decode(c).to_bits()
            );
        }
    }
}

#[test]
fn other_scales_work() {
    // Coarser codes: step 16 from 32 to 2032.
    let s = Scale::new(200.0, 3.0, 32, 2032, 16).unwrap();
    let t = RateTable::new(&s).unwrap();
    assert_eq!(s.code_count(), 126);
    assert_eq!(t.code_count(), 126);
    let codes: Vec<Code> = s.codes().collect();
    assert_eq!(codes.len(), 126);
    assert!(codes.iter().all(|c| c.len() % 16 == 0 && s.contains(*c)));
    assert_eq!(s.code_from_len(40), None); // not on the 16-grid
    assert_eq!(s.code_from_len(48).map(Code::len), Some(48));
    assert_eq!(
        s.next_code(s.code_from_len(48).unwrap()).map(Code::len),
        Some(64)
    );
    assert_eq!(s.next_code(s.max_code().unwrap()), None);
    for c in &codes {
        let r = s.decode(*c);
        assert_eq!(t.decode(*c), r);
        assert_eq!(s.encode(r), Some(*c));
        assert_eq!(t.encode(r), Some(*c));
        // 1 % above a code is still that code (codes are e^(16/200) = 8.3 % apart).
        assert_eq!(s.encode(r * 1.01), Some(*c));
        assert_eq!(t.encode(r * 1.01), Some(*c));
    }
    assert_eq!(
        s.carrier_code(s.code_from_len(1024).unwrap(), 1000)
            .map(Code::len),
        Some(992)
    );
    let mut rng = SplitMix(7);
    for _ in 0..10_000 {
        let r = (rng.unit() * 20.0).exp();
        assert_eq!(s.encode(r), t.encode(r), "{r}");
    }
}

#[test]
fn invalid_scales_are_refused() {
    let p = Scale::PAPER;
    let cases = [
        (Scale { a: f64::NAN, ..p }, ScaleError::BadParameter),
        (Scale { a: 0.0, ..p }, ScaleError::BadParameter),
        (Scale { b: -1.0, ..p }, ScaleError::BadParameter),
        (
            Scale {
                b: f64::INFINITY,
                ..p
            },
            ScaleError::BadParameter,
        ),
        (Scale { step: 0, ..p }, ScaleError::BadStep),
        (Scale { step: 12, ..p }, ScaleError::BadStep),
        (Scale { min_len: 0, ..p }, ScaleError::BadMinLen),
        (Scale { min_len: 20, ..p }, ScaleError::BadMinLen),
        (Scale { max_len: 16, ..p }, ScaleError::BadMaxLen),
        (Scale { max_len: 2048, ..p }, ScaleError::BadMaxLen),
        (Scale { step: 24, ..p }, ScaleError::BadMaxLen), // 1480 − 24 not a multiple of 24
    ];
    for (s, err) in cases {
        assert_eq!(s.validate(), Err(err), "{s:?}");
        assert_eq!(RateTable::new(&s), Err(err));
        assert_eq!(Scale::new(s.a, s.b, s.min_len, s.max_len, s.step), Err(err));
        assert_eq!(s.code_count(), 0);
        assert_eq!(s.codes().count(), 0);
        assert_eq!(s.encode(1000.0), None);
        assert_eq!(s.min_code(), None);
        assert!(!err.to_string().is_empty());
    }
}

proptest! {
    #[test]
    fn decode_encode_brackets_rate(r in 15.0045_f64..1.31e6) {
        let r1480 = PAPER.decode(Code::MAX);
        prop_assume!(r >= PAPER.decode(Code::MIN));
        let c = PAPER.encode(r).unwrap();
        prop_assert!(PAPER.decode(c) <= r);
        if r < r1480 {
            let next = PAPER.next_code(c).unwrap();
            prop_assert_eq!(next.len(), c.len() + 8);
            prop_assert!(r < PAPER.decode(next));
        } else {
            prop_assert_eq!(c, Code::MAX);
        }
    }

    #[test]
    fn table_equals_float_for_any_bits(bits in any::<u64>()) {
        let r = f64::from_bits(bits);
        prop_assert_eq!(PAPER.encode(r), RateTable::PAPER.encode(r));
    }

    #[test]
    fn table_equals_float_log_uniform(x in 0.0_f64..16.0) {
        let r = x.exp();
        prop_assert_eq!(PAPER.encode(r), RateTable::PAPER.encode(r));
    }

    #[test]
    fn carrier_code_fits_and_never_raises(w in 3_u8..=185, payload in 0_usize..3000) {
        let wanted = Code::from_wire(w).unwrap();
        match scale::carrier_code(wanted, payload) {
            Some(c) => {
                prop_assert!(c.len() < payload);
                prop_assert!(c <= wanted);
                prop_assert!(PAPER.contains(c));
                // The largest such code: the next one would not fit or exceed wanted.
                if c < wanted {
                    prop_assert!(c.len() + 8 >= payload);
                }
            }
            None => prop_assert!(payload <= 24),
        }
    }

    #[test]
    fn code_constructors_never_panic(len in any::<usize>(), w in any::<u8>()) {
        let _ = Code::from_len(len);
        let _ = Code::from_wire(w);
        let _ = PAPER.code_from_len(len);
    }
}

//! RTT indicators (paper §II-B, DESIGN §2.2).

use std::time::Duration;

use ka_codec::rtt::{self, INDICATOR_BASE, INDICATOR_MAX, MAX_K};
use proptest::prelude::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn constants() {
    assert_eq!(INDICATOR_BASE, 600);
    assert_eq!(MAX_K, 11);
    assert_eq!(INDICATOR_MAX, 611);
}

#[test]
fn classify_ipv4_needs_df_and_600_to_611() {
    for k in 0..=11_u8 {
        assert_eq!(rtt::classify(600 + usize::from(k), true), Some(k));
        assert_eq!(rtt::classify(600 + usize::from(k), false), None);
    }
    for len in [0, 20, 599, 612, 1500, usize::MAX] {
        assert_eq!(rtt::classify(len, true), None, "{len}");
    }
}

#[test]
fn classify_ipv6_by_length_alone() {
    for k in 0..=11_u8 {
        assert_eq!(rtt::classify_v6(600 + usize::from(k)), Some(k));
    }
    assert_eq!(rtt::classify_v6(599), None);
    assert_eq!(rtt::classify_v6(612), None);
    assert_eq!(rtt::classify_v6(40 + 1460), None);
}

#[test]
fn k_for_rtt_vectors() {
    let cases = [
        (Duration::ZERO, 0),
        (Duration::from_micros(1_999), 0),
        (ms(1), 0),
        (ms(2), 1),
        (Duration::from_micros(3_999), 1),
        (ms(4), 2),
        (ms(7), 2),
        (ms(8), 3),
        (ms(100), 6),
        (ms(127), 6),
        (ms(128), 7),
        (ms(1023), 9),
        (ms(1024), 10),
        (Duration::from_micros(2_047_999), 10),
        (ms(2048), 11),
        (ms(60_000), 11),
        (Duration::MAX, 11),
    ];
    for (rtt, k) in cases {
        assert_eq!(rtt::k_for_rtt(rtt), k, "{rtt:?}");
        assert_eq!(rtt::indicator_len(rtt), 600 + usize::from(k), "{rtt:?}");
    }
}

#[test]
fn rtt_for_k_vectors() {
    let expect = [1, 3, 6, 12, 24, 48, 96, 192, 384, 768, 1536, 3072];
    for (k, want) in expect.iter().enumerate() {
        assert_eq!(rtt::rtt_for_k(k as u8), ms(*want), "k={k}");
    }
    // Out of range saturates at k = 11.
    assert_eq!(rtt::rtt_for_k(12), ms(3072));
    assert_eq!(rtt::rtt_for_k(255), ms(3072));
}

#[test]
fn round_trip_through_the_router() {
    // What the router takes lies in the range the endpoint meant (k ≥ 1).
    for k in 1..=10_u8 {
        let taken = rtt::rtt_for_k(k);
        assert_eq!(rtt::k_for_rtt(taken), k);
        assert!(taken >= ms(1 << k) && taken < ms(2 << k));
    }
    assert_eq!(rtt::k_for_rtt(rtt::rtt_for_k(0)), 0);
    assert_eq!(rtt::k_for_rtt(rtt::rtt_for_k(11)), 11);
}

proptest! {
    #[test]
    fn indicator_classifies_back(nanos in any::<u64>()) {
        let rtt = Duration::from_nanos(nanos);
        let len = rtt::indicator_len(rtt);
        prop_assert_eq!(rtt::classify(len, true), Some(rtt::k_for_rtt(rtt)));
        prop_assert_eq!(rtt::classify_v6(len), Some(rtt::k_for_rtt(rtt)));
        let k = rtt::k_for_rtt(rtt);
        if k > 0 && k < 11 {
            prop_assert!(rtt >= ms(1 << k) && rtt < ms(2 << k));
        }
    }

    #[test]
    fn classify_never_panics(len in any::<usize>(), df in any::<bool>()) {
        let k = rtt::classify(len, df);
        prop_assert!(k.is_none_or(|k| k <= 11));
    }
}

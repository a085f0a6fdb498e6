//! Unit tests of [`Echo`](super::Echo).

use super::*;
use crate::controller::test_packets::{C, MS, data, fin, interval_at, key, syn};

/// The port's ceiling (the code above C).
const HI: f64 = 19_500.0;
/// When [`echo`]'s idle warm-up ends.
const T0: Duration = Duration::from_secs(4);

fn interval(y: f64) -> Measurement {
    interval_at(y, HI)
}

fn echo() -> Echo {
    let mut e = Echo::new(EchoConfig::default(), RcpConfig::default(), C);
    // An idle port for T0: κ climbs to its ceiling.
    for _ in 0..400 {
        e.on_interval(&interval(0.0));
    }
    e
}

/// Flow `i`: SYN at `t`, SYN-ACK back, first data out, its echo (carrying
/// the ceiling) back: returns the rate the echo is lowered to.
fn open(e: &mut Echo, i: u16, t: Duration) -> f64 {
    e.on_packet(t, &syn(i));
    assert_eq!(e.on_reverse(t + 50 * MS, &key(i), None), None);
    e.on_packet(t + 100 * MS, &data(i));
    assert_eq!(
        e.rate_for(t + 100 * MS, &data(i)),
        HI,
        "echoed: the ACK decides"
    );
    e.on_reverse(t + 200 * MS, &key(i), Some(HI)).unwrap()
}

/// Flow `i` (young) gets an echo of its paced data at `t`: it settles.
fn settle(e: &mut Echo, i: u16, t: Duration) -> f64 {
    e.on_packet(t, &data(i));
    e.on_reverse(t, &key(i), Some(HI)).unwrap()
}

#[test]
fn a_lone_newcomer_gets_the_whole_link() {
    let mut e = echo();
    let g = open(&mut e, 1, T0);
    assert!((g - HI).abs() < 1e-6, "{g}");
    // Its paced data's ACKs come back: it is settled, still alone.
    let r = settle(&mut e, 1, T0 + 300 * MS);
    assert!(r >= C * 0.999, "{r}");
    assert_eq!(e.stats().starts, 1);
}

#[test]
fn settled_flows_make_room_at_once_and_get_it_back_at_the_fin() {
    let mut e = echo();
    for i in 0..4 {
        open(&mut e, i, T0);
    }
    for i in 0..4 {
        settle(&mut e, i, T0 + 300 * MS);
    }
    e.on_interval(&interval(C));
    let before = e.rate();
    assert!(
        (before * 4.0 - e.core.kappa.value() * C).abs() < 1.0,
        "{before}"
    );
    // A newcomer starts: its share among five, and the four settled flows
    // are told the rest on their very next ACK.
    let g = open(&mut e, 9, T0 + 400 * MS);
    assert!((g - e.core.kappa.value() * C / 5.0).abs() < 1.0, "{g}");
    let r = e.on_reverse(T0 + 600 * MS + MS, &key(0), Some(HI)).unwrap();
    assert!(
        (r * 4.0 + g - e.core.kappa.value() * C).abs() < 1.0,
        "{r} {g}"
    );
    // The newcomer was short: its FIN gives the room back at once.
    e.on_packet(T0 + 600 * MS + 2 * MS, &fin(9));
    let r = e
        .on_reverse(T0 + 600 * MS + 3 * MS, &key(0), Some(HI))
        .unwrap();
    assert!((r - before).abs() < 1.0, "{r} vs {before}");
}

#[test]
fn a_crowd_of_64_is_split_at_the_first_start() {
    let mut e = echo();
    let t = |i: u16| T0 + Duration::from_micros(156 * u64::from(i));
    for i in 0..64 {
        e.on_packet(t(i), &syn(i));
    }
    // All SYN-ACKs pass before the first echo of data.
    for i in 0..64 {
        e.on_reverse(t(i) + 100 * MS, &key(i), None);
    }
    let mut sum = 0.0;
    for i in 0..64 {
        e.on_packet(t(i) + 100 * MS, &data(i));
        let g = e.on_reverse(t(i) + 200 * MS, &key(i), Some(HI)).unwrap();
        // C/64 while the others waiting are a crowd; the last few, once
        // fewer than five wait, their share among those already started.
        let bound = if i < 59 {
            C / 64.0
        } else {
            C / f64::from(i + 1)
        };
        assert!(g <= bound * 1.001, "flow {i}: {g}");
        sum += g;
    }
    assert!((C * 0.95..=C * 1.005).contains(&sum), "{sum}");
    assert_eq!(e.stats().floor_starts, 0);
}

#[test]
fn newcomers_at_ordinary_rates_do_not_reserve_for_each_other() {
    let mut e = echo();
    // Two connections wait at any time (their SYN-ACKs seen): that is the
    // usual number once learned, and is not counted in the grants.
    let mut t = T0;
    let mut last = 0.0;
    for i in 0..40u16 {
        e.on_packet(t, &syn(i));
        e.on_reverse(t, &key(i), None);
        if i >= 2 {
            let j = i - 2;
            last = e.on_reverse(t, &key(j), Some(HI)).unwrap();
            e.on_packet(t, &fin(j));
        }
        t += 20 * MS;
    }
    assert!(last > 0.9 * C, "a lone starter still gets the link: {last}");
}

#[test]
fn a_flow_limited_elsewhere_leaves_its_share_to_the_others() {
    let mut e = echo();
    for i in 0..3 {
        open(&mut e, i, T0);
    }
    for i in 0..3 {
        settle(&mut e, i, T0 + 300 * MS);
    }
    e.on_interval(&interval(C));
    // Flow 2's echoes come back at 1000 B/ms: another router's rate.
    e.on_packet(T0 + 310 * MS, &data(2));
    e.on_reverse(T0 + 310 * MS, &key(2), Some(1000.0));
    e.on_interval(&interval(C));
    let r = e.rate();
    assert!(
        (r * 2.0 + 1000.0 - e.core.kappa.value() * C).abs() < 1.0,
        "{r}"
    );
}

#[test]
fn forward_stamps_decide_where_no_echo_returns() {
    let mut e = echo();
    // A connection whose ACKs never pass this router.
    e.on_packet(T0, &syn(1));
    e.on_packet(T0 + 100 * MS, &data(1));
    let g = e.rate_for(T0 + 100 * MS, &data(1));
    assert!(g <= C * 1.1, "{g}");
    // Of two echoed ones, flow 2's echoes stop: 2 RTTs later its data
    // carries R again, while flow 3's still carries the ceiling.
    open(&mut e, 2, T0);
    open(&mut e, 3, T0);
    settle(&mut e, 2, T0 + 300 * MS);
    settle(&mut e, 3, T0 + 300 * MS);
    assert_eq!(e.rate_for(T0 + 310 * MS, &data(2)), HI);
    for k in 0..25 {
        let t = T0 + 310 * MS + k * 10 * MS;
        e.on_interval(&interval(C));
        e.on_packet(t, &data(2));
        e.on_packet(t, &data(3));
        e.on_reverse(t, &key(3), Some(HI));
    }
    let r = e.rate_for(T0 + 560 * MS, &data(2));
    assert!(r < C && (r - e.rate()).abs() < 1e-9, "{r}");
    assert_eq!(e.rate_for(T0 + 560 * MS, &data(3)), HI);
}

#[test]
fn the_table_is_capped() {
    let cfg = EchoConfig {
        max_flows: 8,
        ..EchoConfig::default()
    };
    let mut e = Echo::new(cfg, RcpConfig::default(), C);
    for i in 0..20 {
        e.on_packet(Duration::from_micros(u64::from(i)), &syn(i));
    }
    assert_eq!(e.followed(), 8);
    assert_eq!(e.stats().overflow, 12);
    // Unannounced SYNs expire after 3 RTTs.
    for _ in 0..40 {
        e.on_interval(&interval(0.0));
    }
    assert_eq!(e.followed(), 0);
}

#[test]
fn bad_knobs_are_refused_or_clamped() {
    assert!(
        EchoConfig {
            target: 1.5,
            ..EchoConfig::default()
        }
        .validate()
        .is_err()
    );
    assert!(
        EchoConfig {
            max_flows: 0,
            ..EchoConfig::default()
        }
        .validate()
        .is_err()
    );
    let e = Echo::new(
        EchoConfig {
            target: f64::NAN,
            max_flows: 0,
            ..EchoConfig::default()
        },
        RcpConfig::default(),
        C,
    );
    assert_eq!(e.config().target, EchoConfig::default().target);
    assert_eq!(e.config().max_flows, 1);
}

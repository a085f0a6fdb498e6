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

/// Dead SYN `n` of a stream (a four-tuple of its own, never data).
fn dead_syn(n: u32) -> PacketInfo {
    let mut p = syn(0);
    if let Some(t) = p.tcp.as_mut() {
        t.flow = FlowKey {
            sport: n as u16,
            dport: 1_000 + (n >> 16) as u16,
            ..FlowKey::default()
        };
    }
    p
}

/// What [`settled_under_syns`] saw.
struct SynRun {
    /// The rate flow 1's echoes carried, per interval.
    rates: Vec<f64>,
    /// Flow 2's grant at its start and its rate at the end, if it came.
    newcomer: Option<(f64, f64)>,
}

/// When [`settled_under_syns`]'s newcomer sends its SYN (interval index:
/// 10 s into the stream).
const NEWCOMER_AT: u32 = 1000;

/// Flow 1 settled, then 20 s of 10 ms intervals, flow 1 sending at what it
/// is told (its data echoed each interval); `syns` SYNs per interval, each
/// of a four-tuple of its own that never sends data (their SYN-ACKs pass
/// back if `answered`). With `newcomer`, a real flow 2 opens 10 s in
/// (SYN, SYN-ACK 50 ms later, data at 100 ms, its echo at 200 ms) and
/// then sends at what it is told.
fn settled_under_syns(syns: u32, answered: bool, newcomer: bool) -> SynRun {
    let mut e = echo();
    open(&mut e, 1, T0);
    settle(&mut e, 1, T0 + 300 * MS);
    let mut n = 0u32;
    let mut rates = Vec::new();
    let (mut g2, mut r2) = (None, 0.0);
    for k in 0..2000u32 {
        let t = T0 + 300 * MS + 10 * MS * k;
        for j in 0..syns {
            let at = t + Duration::from_micros(u64::from(10_000 * j / syns.max(1)));
            let p = dead_syn(n);
            e.on_packet(at, &p);
            e.rate_for(at, &p);
            if answered && let Some(tcp) = p.tcp {
                e.on_reverse(at + 50 * MS, &tcp.flow, None);
            }
            n += 1;
        }
        let f2 = k.checked_sub(NEWCOMER_AT).filter(|_| newcomer);
        match f2 {
            Some(0) => e.on_packet(t, &syn(2)),
            Some(5) => assert_eq!(e.on_reverse(t, &key(2), None), None),
            Some(10) => e.on_packet(t, &data(2)),
            _ => {}
        }
        // The flows send at what they were told.
        let y = rates.last().copied().unwrap_or(C) + r2;
        e.on_interval(&interval(y));
        e.on_packet(t + 10 * MS, &data(1));
        rates.push(e.on_reverse(t + 10 * MS, &key(1), Some(HI)).unwrap());
        if let Some(i) = f2.filter(|&i| i >= 20) {
            e.on_packet(t + 10 * MS, &data(2));
            r2 = e.on_reverse(t + 10 * MS, &key(2), Some(HI)).unwrap();
            if i == 20 {
                g2 = Some(r2);
            }
        }
    }
    SynRun {
        rates,
        newcomer: g2.map(|g| (g, r2)),
    }
}

#[test]
fn a_syn_stream_takes_a_bounded_share_from_a_settled_flow() {
    // 1000 SYN/s that never send data, for 20 s.
    let calm = *settled_under_syns(0, false, false).rates.last().unwrap();
    assert!(calm > 0.9 * C, "alone, flow 1 has the link: {calm}");
    for answered in [false, true] {
        let rates = settled_under_syns(10, answered, false).rates;
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        // The first 3d (here 300 ms) of a stream look like a flash crowd.
        let worst = rates[100..].iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            mean >= 0.9 * calm,
            "answered {answered}: mean {mean} of {calm}"
        );
        assert!(
            worst >= 0.9 * calm,
            "answered {answered}: {worst} of {calm}"
        );
    }
}

#[test]
fn a_real_newcomer_still_starts_at_its_share_during_a_syn_stream() {
    for answered in [false, true] {
        let run = settled_under_syns(10, answered, true);
        let (g, end) = run.newcomer.unwrap();
        let r1 = *run.rates.last().unwrap();
        // Its first echo gives it about half the link, and flow 1 makes
        // room at once; they end sharing it.
        assert!(g >= 0.4 * C, "answered {answered}: grant {g}");
        let made_room = run.rates[(NEWCOMER_AT + 21) as usize];
        assert!(made_room <= 0.6 * C, "answered {answered}: {made_room}");
        assert!(
            (r1 - end).abs() <= 0.1 * C,
            "answered {answered}: {r1} vs {end}"
        );
        assert!(r1 + end >= 0.9 * C, "answered {answered}: {r1} + {end}");
    }
}

#[test]
fn the_syn_yield_learns_from_what_announced_connections_do() {
    let mut e = echo();
    // Ten short connections whose only data rides on their FIN: all sent
    // data, so ρ stays exactly 1 (nothing changes for real traffic).
    for i in 0..10 {
        e.on_packet(T0, &syn(i));
        e.on_packet(
            T0 + 100 * MS,
            &crate::controller::test_packets::pkt(i, false, true, 500),
        );
    }
    assert_eq!(e.core.syn_yield(), 1.0);
    // Ten SYNs that never send data expire after 3d: ρ ≈ 11/21.
    for n in 0..10 {
        e.on_packet(T0 + 200 * MS, &dead_syn(n));
    }
    for _ in 0..60 {
        e.on_interval(&interval(0.0));
    }
    assert_eq!(e.followed(), 0);
    let rho = e.core.syn_yield();
    assert!((0.45..0.6).contains(&rho), "{rho}");
}

//! Unit tests of [`Crowd`](super::Crowd).

use super::*;

use crate::controller::test_packets::{C, MS, data, fin, interval_at, pkt, syn};

fn interval(y: f64) -> Measurement {
    interval_at(y, C)
}

fn crowd(caution: f64) -> Crowd {
    let cfg = CrowdConfig {
        caution,
        ..CrowdConfig::default()
    };
    Crowd::new(cfg, RcpConfig::default(), C)
}

#[test]
fn a_lone_newcomer_gets_the_whole_link() {
    let mut c = crowd(DEFAULT_CAUTION);
    c.on_packet(MS, &syn(1));
    c.on_packet(100 * MS, &data(1));
    let g = c.rate_for(100 * MS, &data(1));
    assert!((g - C).abs() < 1e-6, "{g}");
    assert_eq!(c.stats().grants, 1);
    // Its later packets carry the same grant until it sends at it.
    assert_eq!(c.rate_for(101 * MS, &data(1)), g);
    // Then it is active, alone: R is the link too.
    c.on_packet(200 * MS, &data(1));
    assert!((c.rate_for(200 * MS, &data(1)) - C).abs() < 1e-6);
}

#[test]
fn ka_crowd_of_64_is_split_at_the_first_grant() {
    let mut c = crowd(DEFAULT_CAUTION);
    for i in 0..64 {
        c.on_packet(Duration::from_micros(156 * u64::from(i)), &syn(i));
    }
    let mut sum = 0.0;
    for i in 0..64 {
        let t = 100 * MS + Duration::from_micros(156 * u64::from(i));
        c.on_packet(t, &data(i));
        let g = c.rate_for(t, &data(i));
        assert!((g - C / 64.0).abs() / (C / 64.0) < 0.01, "flow {i}: {g}");
        sum += g;
    }
    assert!(sum <= C * 1.001, "{sum}");
    // Active flows get the same share.
    assert!(
        (c.rate() - C / 64.0).abs() / (C / 64.0) < 0.01,
        "{}",
        c.rate()
    );
}

#[test]
fn native_crowd_is_bounded_by_the_floor_budget() {
    // Native RCP grants at the SYN: nobody is announced in advance.
    let mut c = crowd(DEFAULT_CAUTION);
    let mut grants = Vec::new();
    for i in 0..64 {
        let t = Duration::from_micros(156 * u64::from(i));
        c.on_packet(t, &syn(i));
        grants.push(c.rate_for(t, &syn(i)));
    }
    assert!((grants[0] - C).abs() < 1e-6, "the first is alone");
    let rest: f64 = grants[1..].iter().sum();
    // floors: b/(4(1 + k)) with b = C · 8 ms / 100 ms, k = 1..63, but
    // at least R_min
    let b = C * 0.08;
    let lo = RcpConfig::default().min_rate;
    let bound: f64 = (2..=64).map(|k| (b / 4.0 / k as f64).max(lo)).sum();
    assert!(rest <= bound * 1.0001, "{rest} > {bound}");
    assert!(rest < 0.3 * b * 4.0);
    assert_eq!(c.stats().floor_grants, 63);
    // Every one of them counts now: R for active flows is C/64.
    assert!((c.rate() - C / 64.0).abs() / (C / 64.0) < 0.01);
}

#[test]
fn long_flows_share_the_link_and_r_follows_departures() {
    let mut c = crowd(DEFAULT_CAUTION);
    // Ten connections already running (adopted: no SYN seen).
    let mut t = MS;
    for i in 0..10 {
        c.on_packet(t, &data(i));
    }
    for _ in 0..30 {
        t += 10 * MS;
        for i in 0..10 {
            c.on_packet(t, &data(i));
        }
        c.on_interval(&interval(C));
    }
    assert_eq!(c.stats().adopted, 10);
    assert!(
        (c.rate() - C / 10.0).abs() / (C / 10.0) < 0.02,
        "{}",
        c.rate()
    );
    // Two leave: the others get their share at once.
    c.on_packet(t, &fin(0));
    c.on_packet(t, &fin(1));
    assert!(
        (c.rate() - C / 8.0).abs() / (C / 8.0) < 0.02,
        "{}",
        c.rate()
    );
    assert_eq!(c.followed(), 8);
}

#[test]
fn short_newcomers_lower_the_weight_and_a_crowd_restores_it() {
    let mut c = crowd(1.0);
    assert_eq!(c.weight(), 1.0, "a fresh port trusts nobody");
    let mut t = MS;
    for i in 0..200u16 {
        // SYN, first segment, ten more after the RTT, FIN: 17 KB,
        // 0.8 % of C·d.
        c.on_packet(t, &syn(i));
        c.on_packet(t + 100 * MS, &data(i));
        c.rate_for(t + 100 * MS, &data(i));
        for k in 0..10 {
            c.on_packet(t + 200 * MS + k * MS, &data(i));
        }
        c.on_packet(t + 211 * MS, &fin(i));
        t += 250 * MS;
        c.on_interval(&interval(0.0));
    }
    assert!(c.occupancy() < 0.05, "{}", c.occupancy());
    assert!(c.weight() < 0.05);
    // Thirty SYNs at once are far more than usual: a crowd.
    for i in 1000..1030 {
        c.on_packet(t, &syn(i));
    }
    assert_eq!(c.weight(), 1.0);
}

#[test]
fn the_table_is_capped_and_unused_syns_expire() {
    let cfg = CrowdConfig {
        max_flows: 4,
        ..CrowdConfig::default()
    };
    let mut c = Crowd::new(cfg, RcpConfig::default(), C);
    for i in 0..10 {
        c.on_packet(MS, &syn(i));
    }
    assert_eq!(c.followed(), 4);
    assert_eq!(c.stats().overflow, 6);
    // No data for three RTTs: gone.
    for _ in 0..31 {
        c.on_interval(&interval(0.0));
    }
    assert_eq!(c.followed(), 0);
}

#[test]
fn pure_acks_and_non_tcp_are_not_followed() {
    let mut c = crowd(DEFAULT_CAUTION);
    c.on_packet(MS, &pkt(1, false, false, 0));
    c.on_packet(
        MS,
        &PacketInfo {
            len: 1500,
            tcp: None,
        },
    );
    assert_eq!(c.followed(), 0);
    assert_eq!(
        c.rate_for(
            MS,
            &PacketInfo {
                len: 1500,
                tcp: None
            }
        ),
        c.rate()
    );
}

#[test]
fn restore_sets_r_and_idle_batches_match_steps() {
    let mut a = crowd(DEFAULT_CAUTION);
    a.restore(C / 3.0);
    assert!((a.rate() - C / 3.0).abs() < 1e-6);
    let mut b = a.clone();
    for _ in 0..50 {
        a.on_interval(&interval(0.0));
    }
    b.on_intervals(&interval(0.0), 50);
    assert!((a.rate() - b.rate()).abs() / a.rate() < 1e-9);
    // Idle: κ climbs at RCP's pace, e^0.01 per interval here (the
    // default update is RCP's exponential one).
    let want = C / 3.0 * (0.01f64 * 50.0).exp();
    assert!((a.rate() - want).abs() / want < 1e-6, "{}", a.rate());
}

#[test]
fn a_young_flow_counts_by_its_first_rtt_demand() {
    // Caution 0: a newcomer of unknown size weighs nothing (w = 0), so
    // what it counts for is its ramp alone.
    let mut c = crowd(0.0);
    c.on_packet(MS, &data(0)); // a settled flow (adopted)
    assert!((c.rate() - C).abs() < 1e-6);
    c.on_packet(MS, &syn(1));
    c.on_packet(100 * MS, &data(1));
    let g = c.rate_for(100 * MS, &data(1));
    assert!(g > 0.0 && g < C / 2.0, "{g}");
    // Its first paced packet: it counts for len / (g·d/16) of a flow.
    let full = g * 100.0 / 16.0;
    c.on_packet(200 * MS, &data(1));
    let ramp = (1500.0 / full).min(1.0);
    assert!(ramp < 1.0, "{ramp}");
    let want = C / (1.0 + ramp);
    assert!(
        (c.rate() - want).abs() / want < 1e-6,
        "{} vs {want}",
        c.rate()
    );
    // More of its first RTT's demand: it counts fully.
    let mut t = 200 * MS;
    while c.rate() > C / 2.0 + 1e-6 {
        t += MS;
        c.on_packet(t, &data(1));
        assert!(t < 210 * MS, "{}", c.rate());
    }
    assert!((c.rate() - C / 2.0).abs() / (C / 2.0) < 1e-6);
    // It leaves: the settled flow gets the link back.
    c.on_packet(t, &fin(1));
    assert!((c.rate() - C).abs() < 1e-6, "{}", c.rate());
}

#[test]
fn kappa_stays_at_one_on_a_full_link_and_rises_on_an_idle_one() {
    let mut c = crowd(DEFAULT_CAUTION);
    let mut t = MS;
    // Each flow sends about its share (12 packets per 10 ms), so none
    // counts as limited elsewhere; `y` is what the interval reports.
    let mut step = |c: &mut Crowd, y: f64| {
        t += 10 * MS;
        for k in 0..12 {
            for i in 0..10 {
                c.on_packet(t + k * 800 * Duration::from_micros(1), &data(i));
            }
        }
        // A ceiling above C, as a KA port's code above C.
        c.on_interval(&Measurement {
            max_rate: 1.5 * C,
            ..interval(y)
        })
    };
    for _ in 0..30 {
        step(&mut c, C);
    }
    let fair = C / 10.0;
    assert!((c.rate() - fair).abs() / fair < 1e-6, "{}", c.rate());
    // 96 % busy (a KA code just below the fair share): RCP's law would
    // raise R above C/10, where every flow jumps to the code above at once.
    for _ in 0..50 {
        step(&mut c, 0.96 * C);
    }
    assert!((c.rate() - fair).abs() / fair < 1e-6, "{}", c.rate());
    // Half the link unused: κ rises as RCP's R would.
    for _ in 0..50 {
        step(&mut c, 0.5 * C);
    }
    assert!(c.rate() > 1.1 * fair, "{}", c.rate());
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

/// When [`active_under_syns`]'s newcomer sends its SYN (interval index:
/// 10 s into the stream).
const NEWCOMER_AT: u32 = 1000;

/// Flow 1 active, then 20 s of 10 ms intervals, flow 1 sending at what it
/// is told (a data packet of it each interval); `syns` SYNs per interval,
/// each of a four-tuple of its own that never sends data, granted a rate
/// at the SYN if `native` (RCP's carrier stamps the SYN; KA's stamps the
/// first data). With `newcomer`, a real flow 2 sends its SYN 10 s in and
/// data from 100 ms later. Returns the rates flow 1 was given per
/// interval, and flow 2's first and last.
fn active_under_syns(syns: u32, native: bool, newcomer: bool) -> (Vec<f64>, Option<(f64, f64)>) {
    let mut c = crowd(DEFAULT_CAUTION);
    let t0 = Duration::from_secs(1);
    c.on_packet(t0, &syn(1));
    c.on_packet(t0 + 100 * MS, &data(1));
    c.rate_for(t0 + 100 * MS, &data(1));
    let mut n = 0u32;
    let mut rates = Vec::new();
    let (mut g2, mut r2) = (None, 0.0);
    for k in 0..2000u32 {
        let t = t0 + 200 * MS + 10 * MS * k;
        for j in 0..syns {
            let at = t + Duration::from_micros(u64::from(10_000 * j / syns.max(1)));
            let p = dead_syn(n);
            c.on_packet(at, &p);
            if native {
                c.rate_for(at, &p);
            }
            n += 1;
        }
        let f2 = k.checked_sub(NEWCOMER_AT).filter(|_| newcomer);
        if f2 == Some(0) {
            c.on_packet(t, &syn(2));
            if native {
                g2 = Some(c.rate_for(t, &syn(2)));
            }
        }
        // The flows send at what they were told.
        let y = rates.last().copied().unwrap_or(C) + r2;
        c.on_interval(&interval(y));
        c.on_packet(t + 10 * MS, &data(1));
        rates.push(c.rate_for(t + 10 * MS, &data(1)));
        if f2.is_some_and(|i| i >= 10) {
            c.on_packet(t + 10 * MS, &data(2));
            r2 = c.rate_for(t + 10 * MS, &data(2));
            g2.get_or_insert(r2);
        }
    }
    (rates, g2.map(|g| (g, r2)))
}

#[test]
fn a_syn_stream_takes_a_bounded_share_from_an_active_flow() {
    // 1000 SYN/s that never send data, for 20 s. With grants at the SYN
    // (native), the stream's first seconds cost more: until its SYNs have
    // gone unanswered by data for a while, their grants look like real
    // newcomers' (see the module docs, "SYN streams").
    for (native, from) in [(false, 100), (true, 500)] {
        let calm = *active_under_syns(0, native, false).0.last().unwrap();
        assert!(calm > 0.9 * C, "alone, flow 1 has the link: {calm}");
        let rates = active_under_syns(10, native, false).0;
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let worst = rates[from..].iter().copied().fold(f64::INFINITY, f64::min);
        assert!(mean >= 0.9 * calm, "native {native}: mean {mean} of {calm}");
        assert!(worst >= 0.9 * calm, "native {native}: {worst} of {calm}");
    }
}

#[test]
fn a_real_newcomer_still_gets_its_share_during_a_syn_stream() {
    for native in [false, true] {
        let (rates, newcomer) = active_under_syns(10, native, true);
        let (g, end) = newcomer.unwrap();
        let r1 = *rates.last().unwrap();
        assert!(g >= 0.4 * C, "native {native}: grant {g}");
        assert!(
            (r1 - end).abs() <= 0.1 * C,
            "native {native}: {r1} vs {end}"
        );
        assert!(r1 + end >= 0.9 * C, "native {native}: {r1} + {end}");
    }
}

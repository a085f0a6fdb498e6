//! Tests of the behaviour judge and the byte-weighted RTT (virtual time).

use super::*;

const MS: u64 = 1_000_000;
/// d of the tests: 24 ms (indicator code 4, 16..32 ms).
const D: u64 = 24 * MS;
/// R the port signals: 10 Mbit/s = 1250 bytes/ms.
const R: f64 = 1250.0;
const PKT: usize = 1500;

fn key(port: u16) -> FlowKey {
    FlowKey::v4([10, 0, 0, 1], [10, 0, 0, 2], port, 5001, 6)
}

fn arrival(port: u16, bytes: usize, indicator: Option<u8>) -> Arrival {
    Arrival {
        key: Some(key(port)),
        bytes,
        indicator,
        hinted: false,
        signalling: true,
        rate: R,
    }
}

/// Drives one flow paced at `factor · R` for `ms` milliseconds from `t0`,
/// with an indicator (code 4) every 100 ms; ticks every 10 ms. Returns the
/// first time (ns) a packet was judged foreign.
fn pace(j: &mut FlowJudge, port: u16, factor: f64, t0: u64, ms: u64) -> Option<u64> {
    let gap = (PKT as f64 / (factor * R) * 1e6) as u64;
    let mut t = t0;
    let mut next_ind = t0;
    let mut next_tick = t0 + 10 * MS;
    let mut first = None;
    while t < t0 + ms * MS {
        while next_tick <= t {
            j.on_interval(next_tick, 10 * MS, D, R);
            next_tick += 10 * MS;
        }
        let ind = (t >= next_ind).then(|| {
            next_ind += 100 * MS;
            4
        });
        let bytes = if ind.is_some() { 604 } else { PKT };
        if j.on_arrival(t, &arrival(port, bytes, ind)) && first.is_none() {
            first = Some(t);
        }
        t += gap;
    }
    first
}

#[test]
fn paced_flow_at_its_signal_is_never_foreign() {
    let mut j = FlowJudge::new(1, true, D);
    assert_eq!(pace(&mut j, 1, 1.0, 0, 5_000), None);
    // 6.45 % above (the next code up, dithering) is no reason either.
    assert_eq!(pace(&mut j, 2, 1.0645, 5_000 * MS, 5_000), None);
}

#[test]
fn flow_at_twice_its_signal_is_foreign_within_one_d() {
    let mut j = FlowJudge::new(1, true, D);
    assert_eq!(pace(&mut j, 1, 1.0, 0, 1_000), None);
    // The same flow doubles its rate at 1 s.
    let at = pace(&mut j, 1, 2.0, 1_000 * MS, 1_000).expect("judged foreign");
    assert!(at - 1_000 * MS <= D, "after {} ms", (at - 1_000 * MS) / MS);
    // A new flow at 2 R from its first packet, too.
    let mut j = FlowJudge::new(1, true, D);
    let at = pace(&mut j, 9, 2.0, 0, 1_000).expect("judged foreign");
    assert!(at <= D, "after {} ms", at / MS);
}

#[test]
fn flow_without_indicators_is_foreign_and_df_is_a_hint() {
    let mut j = FlowJudge::new(1, true, D);
    // Below R, but never an indicator: foreign once it has sent more than
    // R · 250 ms + 16 packets.
    let gap = (PKT as f64 / (0.8 * R) * 1e6) as u64;
    let mut t = 0;
    let mut first = None;
    while t < 1_000 * MS {
        // a KA flow beside it at 0.8 R, with its indicators
        let ind = (t % (100 * MS) < gap).then_some(4);
        j.on_arrival(t, &arrival(7, PKT, ind));
        if j.on_arrival(t, &arrival(1, PKT, None)) && first.is_none() {
            first = Some(t);
        }
        t += gap;
    }
    let at = first.expect("silent flow judged foreign");
    assert!((250 * MS..=400 * MS).contains(&at), "{} ms", at / MS);
    // The DF hint judges at the first packet, with behaviour judging off.
    let mut j = FlowJudge::new(1, false, D);
    // a KA flow is active (verdicts protect KA flows)
    j.on_arrival(0, &arrival(7, 604, Some(4)));
    let mut a = arrival(2, PKT, None);
    assert!(!j.on_arrival(0, &a));
    a.hinted = true;
    assert!(j.on_arrival(MS, &a));
    // and the verdict lasts about one d after the last hinted packet
    a.hinted = false;
    assert!(j.on_arrival(2 * MS, &a));
    assert!(!j.on_arrival(2 * MS + 3 * D, &a));
}

#[test]
fn table_is_bounded_and_collisions_only_add_caution() {
    let j = FlowJudge::new(7, true, D);
    assert_eq!(j.memory_bytes(), JUDGE_SLOTS * 24);
    assert_eq!(std::mem::size_of::<Slot>(), 24);
    // Find two flows sharing a slot.
    let i0 = j.index(&key(1));
    let other = (2..u16::MAX)
        .find(|&p| j.index(&key(p)) == i0)
        .expect("a collision among 65k ports");
    // Each flow alone at R is fine; together they look like one flow at
    // 2 R: foreign. A flow alone is never judged more harshly than with a
    // partner.
    let mut alone = FlowJudge::new(7, true, D);
    assert_eq!(pace(&mut alone, 1, 1.0, 0, 2_000), None);
    let mut shared = FlowJudge::new(7, true, D);
    let gap = (PKT as f64 / R * 1e6) as u64;
    let mut t = 0;
    let mut any = false;
    while t < 2_000 * MS {
        let ind = (t % (100 * MS) < gap).then_some(4);
        any |= shared.on_arrival(t, &arrival(1, PKT, ind));
        any |= shared.on_arrival(t + gap / 2, &arrival(other, PKT, ind));
        t += gap;
    }
    assert!(any, "the shared slot crosses the rate bound");
    // Many more flows than slots: memory unchanged.
    let mut many = FlowJudge::new(7, true, D);
    for p in 0..20_000u16 {
        many.on_arrival(u64::from(p) * 1000, &arrival(p, PKT, Some(4)));
    }
    assert_eq!(many.memory_bytes(), JUDGE_SLOTS * 24);
}

/// A real flow at 2 Mbit/s with RTT 24 ms (code 4) and `forged`
/// indicators per second of code `k` from their own source, for 10 s;
/// returns the RTT estimates (ms) of the last 5 s.
fn forged_run(k: &[u8], per_second: u64) -> Vec<f64> {
    let mut j = FlowJudge::new(3, true, 100 * MS);
    let rate = 250.0; // 2 Mbit/s in bytes/ms
    let gap = (PKT as f64 / rate * 1e6) as u64;
    let forge_gap = 1_000 * MS / per_second;
    let mut t = 0;
    let mut next_forge = 0;
    let mut next_ind = 0;
    let mut next_tick = 10 * MS;
    let mut out = Vec::new();
    let mut n = 0usize;
    while t < 10_000 * MS {
        while next_forge <= t {
            let code = k.get(n % k.len()).copied().unwrap_or(0);
            n += 1;
            let mut a = arrival(
                40_000 + (n % 50) as u16,
                600 + usize::from(code),
                Some(code),
            );
            a.key = Some(FlowKey::v4(
                [192, 0, 2, 66],
                [10, 0, 0, 2],
                a.key.map_or(0, |k| k.sport),
                80,
                6,
            ));
            j.on_arrival(next_forge, &a);
            next_forge += forge_gap;
        }
        while next_tick <= t {
            if let Some(d) = j.on_interval(next_tick, 10 * MS, D, rate)
                && next_tick > 5_000 * MS
            {
                out.push(d);
            }
            next_tick += 10 * MS;
        }
        let ind = (t >= next_ind).then(|| {
            next_ind += 100 * MS;
            4
        });
        j.on_arrival(t, &arrival(1, if ind.is_some() { 604 } else { PKT }, ind));
        t += gap;
    }
    out
}

#[test]
fn forged_indicators_keep_d_within_twice_the_true_rtt() {
    for forged in [&[11_u8][..], &[0], &[0, 11]] {
        let ds = forged_run(forged, 20);
        assert!(!ds.is_empty());
        for d in ds {
            assert!((12.0..=48.0).contains(&d), "forged {forged:?}: d = {d} ms");
        }
    }
    // Without forgery d is exactly the indicator's value.
    let ds = forged_run(&[4], 1);
    assert!(ds.iter().all(|&d| (d - 24.0).abs() < 1e-9), "{ds:?}");
}

#[test]
fn interquartile_mean_ignores_a_minority() {
    let mut h = [0.0; CODES];
    h[4] = 80.0;
    h[11] = 20.0;
    assert_eq!(interquartile_mean(&h), Some(24.0));
    h[11] = 0.0;
    h[0] = 20.0;
    assert_eq!(interquartile_mean(&h), Some(24.0));
    // Two real RTTs half and half: their mean.
    let mut h = [0.0; CODES];
    h[4] = 50.0;
    h[6] = 50.0;
    assert_eq!(interquartile_mean(&h), Some(60.0));
    assert_eq!(interquartile_mean(&[0.0; CODES]), None);
}

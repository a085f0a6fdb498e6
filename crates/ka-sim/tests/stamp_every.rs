//! Signalling once per RTT (paper §V, DESIGN §3.9) through the whole
//! simulator: `ka-sim paper fig2-stamp` shortened to Fig. 2's first epoch
//! (10 flows, 10 s). The once-per-RTT variants keep Fig. 2's verdicts, and
//! the bottleneck port writes at least 10× fewer signals (KA leading
//! fragments, lowered RCP options) than per packet; the per-packet
//! variants are the `fig2` scenarios unchanged.

use ka_sim::paper::stamp::{MIN_REDUCTION, signals_written};
use ka_sim::paper::{self, Experiment, StampInterval};
use ka_sim::run::run_scenario;

#[test]
fn fig2_once_per_rtt_keeps_the_verdicts_with_ten_times_fewer_signals() {
    let exp = StampInterval::Fig2;
    let mut results = Vec::new();
    for (name, text) in exp.variants() {
        let mut s = paper::scenario(text, None, Some(10.0)).unwrap();
        exp.prepare(name, &mut s);
        let want = if name.ends_with("-rtt") {
            "rtt"
        } else {
            "packet"
        };
        assert_eq!(s.router.stamp_every.to_string(), want, "{name}");
        results.push((name, run_scenario(&s, None).unwrap()));
    }
    let get = |n: &str| &results.iter().find(|r| r.0 == n).unwrap().1;
    for (pkt, rtt) in [("ka", "ka-rtt"), ("rcp", "rcp-rtt")] {
        let (p, q) = (signals_written(get(pkt)), signals_written(get(rtt)));
        assert!(
            p as f64 >= MIN_REDUCTION * q as f64 && q > 0,
            "{pkt}: {p} signals per packet, {rtt}: {q}"
        );
        let skipped = get(rtt).hops[0].forward.signals_skipped;
        assert!(skipped > 9 * q, "{rtt}: {skipped} held back, {q} signalled");
        assert_eq!(get(pkt).hops[0].forward.signals_skipped, 0);
    }
    let claims = exp.claims(&results);
    assert_eq!(claims.len(), 4 * 4 + 2);
    // Fig. 2's "utilisation >= 98 %" does not hold with the core's default
    // gains, signalled per packet or per RTT alike (DESIGN §3.5.1): the
    // verdict that must be kept there is the per-packet variant's.
    let full = |c: &&ka_sim::paper::claims::Claim| c.what.contains(">= 98 %");
    for c in claims.iter().filter(|c| !full(c)) {
        assert!(c.pass, "{}", c.line());
    }
    let full_verdicts: Vec<bool> = claims.iter().filter(full).map(|c| c.pass).collect();
    assert_eq!(full_verdicts.len(), 4);
    assert_eq!(full_verdicts[0], full_verdicts[1], "ka vs ka-rtt");
    assert_eq!(full_verdicts[2], full_verdicts[3], "rcp vs rcp-rtt");
}

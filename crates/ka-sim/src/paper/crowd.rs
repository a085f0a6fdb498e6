//! Explicit rate without flash-crowd overflow. `ka-sim paper
//! fig3-crowd` runs the echo controller (`ka_router::Echo`: RCP's law, and
//! the rate written into the echoes of the ACKs that pass the router back)
//! where the paper's RCP overflows, with the paper's RCP on the same
//! scenarios as the reference:
//!
//! | variants | scenario | what |
//! |---|---|---|
//! | `ka-1..3`, `rcp-1..3` | `fig3-crowd-{ka,rcp}.toml` | Fig. 3's light load, echo controller, KA and native-RCP carrier, seeds s, s+1, s+2 |
//! | `paper-ka-1..3`, `paper-rcp-1..3` | the same files | the same with the paper's RCP (today's Fig. 3) |
//! | `crowd64-{ka,rcp}`, `crowd64-paper-{ka,rcp}` | `fig3-crowd-64-{ka,rcp}.toml` | 64 flows start within 10 ms on an idle link |
//! | `fig2-{ka,rcp}` | `fig3-crowd-fig2-{ka,rcp}.toml` | Fig. 2 (a flow joins every 10 s) with the echo controller |
//!
//! The checks, `[PASS]`/`[FAIL]`:
//!
//! * Fig. 3, each carrier, three seeds: 99th percentile of the bottleneck
//!   queue (the largest queue of each 100 ms bin) ≤ 100 packets, no drops;
//!   KA flows in KA mode ≥ 99 % of the time after they first entered it.
//! * Fig. 3, the three seeds pooled, every quarter-decade size bucket with
//!   ≥ 20 flows in both runs: the echo controller's KA mean FCT within
//!   10 % of the paper RCP's KA (or better), and at most the paper's native
//!   RCP + 1.5 RTT.
//! * The 64-flow crowd, each carrier: queue peak ≤ 300 packets, no drops,
//!   every flow at C/64 ± 10 % (its mean rate at the receiver, from the
//!   first 100 ms bin that starts 5 RTTs after the last start to the end);
//!   and the paper's RCP does overflow there (the problem).
//! * Fig. 2 with the echo controller: Fig. 2's checks (`crate::paper::claims`).
//!
//! For a controller that sees only the data (`ka_router::Crowd`, which
//! the scenarios can select with `controller = "crowd"`) the light-load
//! checks pull in opposite directions (`docs/controllers.md`, Crowd,
//! "Light load: the trade-off"); `docs/RESULTS.md` has its numbers.

use serde_json::{Value, json};

use super::{Experiment, fct_curve, find, group_fct, mean_in, series_curve};
use crate::engine::{secs, to_secs};
use crate::paper::Figure;
use crate::paper::claims::{Claim, bucket_gaps, bucket_label, pooled_buckets, rtt_s};
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::Panel;
use crate::results::report;
use crate::scenario::Scenario;
use ka_router::ControllerKind;

const FIG3_KA: &str = include_str!("../../scenarios/fig3-crowd-ka.toml");
const FIG3_RCP: &str = include_str!("../../scenarios/fig3-crowd-rcp.toml");
const C64_KA: &str = include_str!("../../scenarios/fig3-crowd-64-ka.toml");
const C64_RCP: &str = include_str!("../../scenarios/fig3-crowd-64-rcp.toml");
const FIG2_KA: &str = include_str!("../../scenarios/fig3-crowd-fig2-ka.toml");
const FIG2_RCP: &str = include_str!("../../scenarios/fig3-crowd-fig2-rcp.toml");

/// Seeds of the Fig. 3 variants (the scenario's seed, +1, +2).
pub const SEEDS: usize = 3;
/// Queue bound at Fig. 3's load: 99th percentile, packets.
pub const P99_BOUND: f64 = 100.0;
/// Queue bound of the 64-flow crowd: peak, packets.
pub const CROWD_BOUND: f64 = 300.0;
/// Mean FCT per bucket at most this factor of the paper RCP's KA.
pub const FCT_FACTOR: f64 = 1.10;

/// The experiment (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlashCrowd;

/// Fig. 3 variant names: (carrier, "paper" for the reference, seed index 1…).
fn fig3_variants() -> Vec<(&'static str, &'static str)> {
    vec![
        ("ka-1", FIG3_KA),
        ("ka-2", FIG3_KA),
        ("ka-3", FIG3_KA),
        ("rcp-1", FIG3_RCP),
        ("rcp-2", FIG3_RCP),
        ("rcp-3", FIG3_RCP),
        ("paper-ka-1", FIG3_KA),
        ("paper-ka-2", FIG3_KA),
        ("paper-ka-3", FIG3_KA),
        ("paper-rcp-1", FIG3_RCP),
        ("paper-rcp-2", FIG3_RCP),
        ("paper-rcp-3", FIG3_RCP),
    ]
}

/// The bottleneck queue's 100 ms bins (their largest queue), packets.
fn queue_bins(r: &RunResult) -> Vec<f64> {
    r.series
        .points(Metric::QueuePkts, "port:bottleneck")
        .into_iter()
        .map(|p| p.1)
        .collect()
}

fn drops(r: &RunResult) -> u64 {
    r.hops.first().map_or(0, |h| h.forward.drops_queue)
}

fn p99(r: &RunResult) -> Option<f64> {
    metrics::percentile(&queue_bins(r), 0.99)
}

fn ka_kept(r: &RunResult) -> Option<f64> {
    metrics::ka_kept_frac(&r.flows, secs(r.sim_seconds))
}

/// The 64-flow crowd: (queue peak, drops, worst deviation of a flow's mean
/// rate from C/64, the flow count that had a rate in the window).
fn crowd64(r: &RunResult) -> (f64, u64, f64, usize) {
    let cap = r.hops.first().map_or(0.0, |h| h.capacity_bps as f64);
    let n = r.flows.len().max(1);
    let fair = cap / n as f64;
    let last = r.flows.iter().map(|f| to_secs(f.start)).fold(0.0, f64::max);
    let rtt = r.flows.first().map_or(0.1, |f| to_secs(f.path.base_rtt));
    let from = last + 5.0 * rtt;
    let bin = r.scenario.bin_s;
    let mut worst: f64 = 0.0;
    let mut with_rate = 0;
    for f in &r.flows {
        let v: Vec<f64> = r
            .series
            .points(Metric::WireBps, &format!("flow:{}", f.id))
            .into_iter()
            .filter(|&(t, _)| t - bin >= from - 1e-9)
            .map(|p| p.1)
            .collect();
        if let Some(m) = metrics::mean(&v) {
            with_rate += 1;
            worst = worst.max((m - fair).abs() / fair);
        }
    }
    let peak = queue_bins(r).into_iter().fold(0.0, f64::max);
    (peak, drops(r), worst, with_rate)
}

fn list<T>(v: &[Option<T>], f: impl Fn(&T) -> String) -> String {
    v.iter()
        .map(|x| x.as_ref().map_or("n/a".into(), &f))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The runs of one Fig. 3 family ("ka", "paper-rcp", …), seeds in order.
fn family<'a>(results: &'a [(&str, RunResult)], prefix: &str) -> Vec<&'a RunResult> {
    (1..=SEEDS)
        .filter_map(|k| find(results, &format!("{prefix}-{k}")))
        .collect()
}

fn queue_claims(results: &[(&str, RunResult)], carrier: &str, out: &mut Vec<Claim>) {
    let runs = family(results, carrier);
    if runs.is_empty() {
        return;
    }
    let paper = family(results, &format!("paper-{carrier}"));
    let q: Vec<Option<f64>> = runs.iter().map(|r| p99(r)).collect();
    let qp: Vec<Option<f64>> = paper.iter().map(|r| p99(r)).collect();
    out.push(Claim::new(
        format!(
            "fig3-crowd/{carrier}: 99th-percentile queue <= {P99_BOUND} packets in each of {} seeds",
            runs.len()
        ),
        format!(
            "{} packets (paper RCP: {})",
            list(&q, |v| format!("{v:.0}")),
            list(&qp, |v| format!("{v:.0}"))
        ),
        runs.len() == SEEDS && q.iter().all(|v| v.is_some_and(|v| v <= P99_BOUND)),
    ));
    let d: Vec<Option<u64>> = runs.iter().map(|r| Some(drops(r))).collect();
    let dp: Vec<Option<u64>> = paper.iter().map(|r| Some(drops(r))).collect();
    out.push(Claim::new(
        format!("fig3-crowd/{carrier}: no drops at the bottleneck"),
        format!(
            "{} (paper RCP: {})",
            list(&d, u64::to_string),
            list(&dp, u64::to_string)
        ),
        d.iter().all(|v| *v == Some(0)),
    ));
    if carrier == "ka" {
        let k: Vec<Option<f64>> = runs.iter().map(|r| ka_kept(r)).collect();
        let kp: Vec<Option<f64>> = paper.iter().map(|r| ka_kept(r)).collect();
        let pc = |v: &f64| format!("{:.2} %", 100.0 * v);
        out.push(Claim::new(
            "fig3-crowd/ka: KA flows in KA mode >= 99 % of their time after first entering it",
            format!("{} (paper RCP: {})", list(&k, pc), list(&kp, pc)),
            k.iter().all(|v| v.is_some_and(|v| v >= 0.99)),
        ));
    }
}

fn fct_claims(results: &[(&str, RunResult)], out: &mut Vec<Claim>) {
    let ka = family(results, "ka");
    let paper_ka = family(results, "paper-ka");
    let paper_rcp = family(results, "paper-rcp");
    if ka.is_empty() {
        return;
    }
    let mine = pooled_buckets(&ka, "ka");
    if !paper_ka.is_empty() {
        let theirs = pooled_buckets(&paper_ka, "ka");
        let mut worst: Option<(f64, String)> = None;
        let mut fails = Vec::new();
        for &(b, n, m) in &mine {
            let Some(&(_, nt, mt)) = theirs.iter().find(|x| x.0 == b) else {
                continue;
            };
            if n < 20 || nt < 20 {
                continue;
            }
            let ratio = m / mt;
            if worst.as_ref().is_none_or(|w| ratio > w.0) {
                worst = Some((ratio, bucket_label(b)));
            }
            if ratio > FCT_FACTOR {
                fails.push(format!("{} x{ratio:.2}", bucket_label(b)));
            }
        }
        let (r, at) = worst.unwrap_or((f64::NAN, String::new()));
        out.push(Claim::new(
            format!(
                "fig3-crowd/ka: mean FCT within {:.0} % of the paper RCP's KA in every bucket with >= 20 flows ({} seeds pooled)",
                100.0 * (FCT_FACTOR - 1.0),
                ka.len()
            ),
            format!("largest ratio {r:.3} (bucket {at} pkts); over: {fails:?}"),
            fails.is_empty() && r.is_finite(),
        ));
    }
    if !paper_rcp.is_empty() {
        let theirs = pooled_buckets(&paper_rcp, "rcp");
        let slack = 1.5 * ka.first().map_or(0.1, |r| rtt_s(r));
        let (worst, fails) = bucket_gaps(&mine, &theirs, 20, slack);
        let (g, at) = worst.unwrap_or((f64::NAN, String::new()));
        out.push(Claim::new(
            "fig3-crowd/ka: mean FCT <= the paper's native RCP + 1.5 RTT in every bucket with >= 20 flows",
            format!("largest gap {g:.3} s (bucket {at} pkts); failing: {fails:?}"),
            fails.is_empty() && g.is_finite(),
        ));
    }
}

fn crowd64_claims(results: &[(&str, RunResult)], out: &mut Vec<Claim>) {
    for carrier in ["ka", "rcp"] {
        if let Some(r) = find(results, &format!("crowd64-{carrier}")) {
            let (peak, d, worst, with) = crowd64(r);
            out.push(Claim::new(
                format!(
                    "crowd64/{carrier}: 64 flows in 10 ms: queue peak <= {CROWD_BOUND} packets, no drops"
                ),
                format!("peak {peak:.0} packets, {d} drops"),
                peak <= CROWD_BOUND && d == 0,
            ));
            out.push(Claim::new(
                format!(
                    "crowd64/{carrier}: every flow at C/64 +- 10 % from 5 RTTs after the last start"
                ),
                format!(
                    "worst flow {:.1} % off ({with} of {} flows measured)",
                    100.0 * worst,
                    r.flows.len()
                ),
                worst <= 0.10 && with == r.flows.len() && with > 0,
            ));
        }
        if let Some(r) = find(results, &format!("crowd64-paper-{carrier}")) {
            let (peak, d, _, _) = crowd64(r);
            out.push(Claim::new(
                format!(
                    "crowd64/{carrier}: the paper's RCP overflows in the same crowd (the problem)"
                ),
                format!("peak {peak:.0} packets, {d} drops"),
                d > 0,
            ));
        }
    }
}

impl Experiment for FlashCrowd {
    fn name(&self) -> &'static str {
        "fig3-crowd"
    }

    fn about(&self) -> &'static str {
        "Flash crowds: the echo controller at Fig. 3's load (3 seeds), in a 64-flow crowd and in Fig. 2, against the paper's RCP"
    }

    fn title(&self) -> String {
        "Explicit rate without flash-crowd overflow: echo controller vs the paper's RCP".into()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        let mut v = fig3_variants();
        v.extend([
            ("crowd64-ka", C64_KA),
            ("crowd64-rcp", C64_RCP),
            ("crowd64-paper-ka", C64_KA),
            ("crowd64-paper-rcp", C64_RCP),
            ("fig2-ka", FIG2_KA),
            ("fig2-rcp", FIG2_RCP),
        ]);
        v
    }

    fn prepare(&self, variant: &str, s: &mut Scenario) {
        s.variant = variant.to_string();
        if variant.contains("paper") {
            s.router.controller = ControllerKind::Rcp;
        }
        if let Some(k) = variant
            .rsplit('-')
            .next()
            .and_then(|k| k.parse::<u64>().ok())
        {
            s.seed = s.seed.wrapping_add(k.saturating_sub(1));
        }
        if variant.starts_with("fig2") {
            Figure::Fig2.prepare(variant, s);
        }
    }

    fn headline(&self, r: &RunResult) -> Value {
        let v = r.scenario.variant.as_str();
        if v.starts_with("fig2") {
            return super::headline(Figure::Fig2, r);
        }
        if v.starts_with("crowd64") {
            let (peak, d, worst, with) = crowd64(r);
            return json!({
                "queue_peak_pkts": peak,
                "drops": d,
                "worst_flow_deviation_from_fair_share": worst,
                "flows_measured": with,
                "utilization": mean_in(r, Metric::Utilization, "link:bottleneck", 0.0, r.sim_seconds),
            });
        }
        let q = queue_bins(r);
        json!({
            "queue_pkts": {
                "median": metrics::percentile(&q, 0.5),
                "p99": metrics::percentile(&q, 0.99),
                "max": q.iter().copied().reduce(f64::max),
                "bins_over_100": q.iter().filter(|&&x| x > 100.0).count(),
            },
            "drops": drops(r),
            "ka_mode_after_first_entry": ka_kept(r),
            "utilization": mean_in(r, Metric::Utilization, "link:bottleneck", 0.0, r.sim_seconds),
            "groups": group_fct(r),
        })
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        let mut out = Vec::new();
        queue_claims(results, "ka", &mut out);
        queue_claims(results, "rcp", &mut out);
        fct_claims(results, &mut out);
        crowd64_claims(results, &mut out);
        for carrier in ["ka", "rcp"] {
            if let Some(r) = find(results, &format!("fig2-{carrier}")) {
                out.extend(crate::paper::claims::fig2(&format!("echo {carrier}"), r));
            }
        }
        out
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        let mut fct = Vec::new();
        for (v, label, group) in [
            ("paper-ka-1", "KA, paper RCP", "ka"),
            ("ka-1", "KA, echo", "ka"),
            ("paper-rcp-1", "native RCP, paper RCP", "rcp"),
            ("rcp-1", "native RCP, echo", "rcp"),
        ] {
            if let Some(r) = find(results, v) {
                fct.push(fct_curve(r, label, group));
            }
        }
        let time = |title: &str, curves| Panel {
            title: title.into(),
            x_label: "time (s)".into(),
            y_label: "packets".into(),
            curves,
            ..Panel::default()
        };
        let queue = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .filter_map(|(v, label)| {
                    find(results, v)
                        .map(|r| series_curve(r, label, Metric::QueuePkts, "port:bottleneck", 1.0))
                })
                .collect()
        };
        vec![
            report::fct_size_panel(fct),
            time(
                "Bottleneck queue at Fig. 3's load (seed 1; max per 100 ms)",
                queue(&[("paper-ka-1", "KA, paper RCP"), ("ka-1", "KA, echo")]),
            ),
            time(
                "64 flows start within 10 ms at t = 4 s",
                queue(&[
                    ("crowd64-paper-ka", "KA, paper RCP"),
                    ("crowd64-ka", "KA, echo"),
                    ("crowd64-paper-rcp", "native RCP, paper RCP"),
                    ("crowd64-rcp", "native RCP, echo"),
                ])
                .into_iter()
                .map(|mut c: crate::results::plot::Curve| {
                    // the idle seconds before the crowd are flat
                    c.points.retain(|p| p.0 > 3.8);
                    c
                })
                .collect(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_get_their_seed_controller_and_name() {
        let e = FlashCrowd;
        for (v, text) in e.variants() {
            let mut s = crate::paper::scenario(text, Some(10), None).unwrap();
            e.prepare(v, &mut s);
            assert_eq!(s.variant, v);
            let paper = s.router.controller == ControllerKind::Rcp;
            assert_eq!(paper, v.contains("paper"), "{v}");
            if !paper {
                assert!(
                    matches!(s.router.controller, ControllerKind::Echo(_)),
                    "{v}"
                );
            }
            let want = match v.rsplit('-').next() {
                Some("2") => 11,
                Some("3") => 12,
                _ => 10,
            };
            assert_eq!(s.seed, want, "{v}");
        }
        let mut s = crate::paper::scenario(FIG2_KA, None, Some(30.0)).unwrap();
        e.prepare("fig2-ka", &mut s);
        assert_eq!(s.groups[1].count, 2, "one joining flow per 10 s");
    }

    #[test]
    fn buckets_pool_runs() {
        assert_eq!(bucket_label(8), "100-177");
        assert_eq!(bucket_label(0), "1-1");
    }
}

//! The paper's testbed experiments (§IV-A, Figs 8–10), simulated: the four
//! schemes the paper compares on its testbed — `ka` (KA endpoints through a
//! KA router with a drop-tail queue), `cubic` (CUBIC through drop-tail),
//! `cubic-fqcodel-ecn` (CUBIC with ECN through FQ-CoDel) and `pcc` (PCC
//! Vivace through drop-tail) — at the testbed's two loads:
//!
//! * `testbed-light` (Fig. 8): 100 Mbit/s, 100 ms RTT, 8 on-off senders with
//!   the simulation's traffic (off time Exp(0.5 s), bounded-Pareto sizes of
//!   1–2000 packets, mean 100), 3 minutes;
//! * `testbed-heavy` (Figs 9–10): 10 Mbit/s, 100 ms RTT, 8 on-off senders,
//!   mean flow 1 MB, mean off time 8 s, 15 minutes (the scenario files say why).
//!
//! This is the simulated half of `ka-testbed` (`examples/ka-testbed`), which
//! runs the same scenarios — built from these files with the same
//! [`Overrides`] — on real network namespaces with the `ka-router` binary,
//! the `ka-endpoint` driver and the Linux kernel's CUBIC, and compares the
//! two scheme by scheme. So everything here that judges a run takes plain
//! [`RunResult`]s, simulated or assembled from a real run.
//!
//! The scenarios differ from `aqm-*` in two ways that matter for the
//! comparison with real runs: TCP has ka-endpoint's modern defaults (IW10,
//! like Linux) at both loads, and the KA port has the `ka-router` binary's
//! knobs (persistent queue, 5 ms queue target, dithered codes).

use serde_json::{Value, json};

use super::{
    Experiment, fig9_cubic_claim, fig9_ka_claim, fig10_claim, fig10_quantiles_claim, find,
    flow_rates, group_fct, mean_fct_from, mean_fct_in, mean_in, pct, queue_delays_ms,
};
use crate::paper::claims::Claim;
use crate::results::RunResult;
use crate::results::metrics::Metric;
use crate::results::plot::{Curve, Panel};
use crate::results::report;
use crate::scenario::{Scenario, ScenarioError, Topology};

/// The testbed's two loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestbedLoad {
    /// Light load (Fig. 8).
    Light,
    /// Heavy load (Figs 9–10).
    Heavy,
}

/// The schemes (variant name, plot label), in the paper's legend order.
pub const SCHEMES: [(&str, &str); 6] = [
    ("ka", "Kick-Ass"),
    ("ka-crowd", "Kick-Ass, crowd controller"),
    ("ka-echo", "Kick-Ass, echo controller"),
    ("cubic", "CUBIC"),
    ("cubic-fqcodel-ecn", "CUBIC on FQ-CoDel + ECN"),
    ("pcc", "PCC"),
];

/// The KA schemes the claims are checked for, with how the checks name
/// them: the paper's RCP (`ka`), the crowd controller (`ka-crowd`) and
/// the echo controller (`ka-echo`).
pub const KA_SCHEMES: [(&str, &str); 3] = [
    ("ka", "KA (paper RCP)"),
    ("ka-crowd", "KA (crowd controller)"),
    ("ka-echo", "KA (echo controller)"),
];

/// Flow-size buckets (packets, `lo..hi`) of the per-bucket comparisons:
/// decades, so that each holds enough flows of a few-minute run.
pub const SIZE_BUCKETS: [(u64, u64); 4] = [(1, 10), (10, 100), (100, 1000), (1000, u64::MAX)];

/// The plot label of scheme `name` (the name itself if unknown).
pub fn label(name: &str) -> &str {
    SCHEMES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(name, |(_, l)| l)
}

/// Changes to a testbed scenario that keep its shape: what a machine that
/// cannot run the paper's numbers scales, and what a short run shortens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overrides {
    /// Bottleneck rate, Mbit/s.
    pub capacity_mbps: Option<f64>,
    /// Number of on-off senders.
    pub senders: Option<usize>,
    /// Run time, s.
    pub duration_s: Option<f64>,
    /// Seed.
    pub seed: Option<u64>,
}

impl TestbedLoad {
    /// `light` or `heavy`.
    pub fn short_name(self) -> &'static str {
        match self {
            TestbedLoad::Light => "light",
            TestbedLoad::Heavy => "heavy",
        }
    }

    /// The scenario file of `scheme` (one of [`SCHEMES`]).
    pub fn scenario_text(self, scheme: &str) -> Option<&'static str> {
        let text = match (self, scheme) {
            (TestbedLoad::Light, "ka") => include_str!("../../scenarios/testbed-light-ka.toml"),
            (TestbedLoad::Light, "ka-crowd") => {
                include_str!("../../scenarios/testbed-light-ka-crowd.toml")
            }
            (TestbedLoad::Light, "ka-echo") => {
                include_str!("../../scenarios/testbed-light-ka-echo.toml")
            }
            (TestbedLoad::Light, "cubic") => {
                include_str!("../../scenarios/testbed-light-cubic.toml")
            }
            (TestbedLoad::Light, "cubic-fqcodel-ecn") => {
                include_str!("../../scenarios/testbed-light-cubic-fqcodel-ecn.toml")
            }
            (TestbedLoad::Light, "pcc") => include_str!("../../scenarios/testbed-light-pcc.toml"),
            (TestbedLoad::Heavy, "ka") => include_str!("../../scenarios/testbed-heavy-ka.toml"),
            (TestbedLoad::Heavy, "ka-crowd") => {
                include_str!("../../scenarios/testbed-heavy-ka-crowd.toml")
            }
            (TestbedLoad::Heavy, "ka-echo") => {
                include_str!("../../scenarios/testbed-heavy-ka-echo.toml")
            }
            (TestbedLoad::Heavy, "cubic") => {
                include_str!("../../scenarios/testbed-heavy-cubic.toml")
            }
            (TestbedLoad::Heavy, "cubic-fqcodel-ecn") => {
                include_str!("../../scenarios/testbed-heavy-cubic-fqcodel-ecn.toml")
            }
            (TestbedLoad::Heavy, "pcc") => include_str!("../../scenarios/testbed-heavy-pcc.toml"),
            _ => return None,
        };
        Some(text)
    }

    /// The scenario of `scheme` with `o` applied, validated.
    pub fn scenario(self, scheme: &str, o: &Overrides) -> Result<Scenario, ScenarioError> {
        let text = self.scenario_text(scheme).ok_or_else(|| {
            let known: Vec<&str> = SCHEMES.iter().map(|s| s.0).collect();
            ScenarioError::Invalid(format!(
                "unknown scheme `{scheme}` (known: {})",
                known.join(", ")
            ))
        })?;
        let mut s = Scenario::from_toml(text)?;
        if let Some(c) = o.capacity_mbps
            && let Topology::Dumbbell(d) = &mut s.topology
        {
            d.capacity_mbps = c;
        }
        if let Some(n) = o.senders {
            for g in &mut s.groups {
                g.track = g.track.min(n);
                g.count = n;
            }
        }
        if let Some(d) = o.duration_s {
            s.duration_s = d;
        }
        if let Some(seed) = o.seed {
            s.seed = seed;
        }
        s.validate()?;
        Ok(s)
    }
}

fn secs(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.3} s"))
}

/// The headline numbers of one run (simulated or real).
pub fn headline(r: &RunResult) -> Value {
    let q = queue_delays_ms(r);
    let rates = flow_rates(r);
    let hop = r.hops.first();
    let buckets: Vec<Value> = SIZE_BUCKETS
        .iter()
        .map(|&(lo, hi)| {
            let (m, n) = mean_fct_in(r, lo, hi);
            json!({"min_pkts": lo, "max_pkts": (hi != u64::MAX).then_some(hi - 1), "flows": n, "mean_fct_s": m})
        })
        .collect();
    json!({
        "utilization": mean_in(r, Metric::Utilization, "link:bottleneck", 0.0, r.sim_seconds),
        "queue_delay_ms": {
            "median": pct(&q, 0.5),
            "p95": pct(&q, 0.95),
            "mean": crate::results::metrics::mean(&q),
        },
        "drops": hop.map(|h| h.forward.drops_queue),
        "aqm_drops": hop.map(|h| h.forward.drops_aqm),
        "ecn_marks": hop.map(|h| h.forward.ecn_marks),
        "flow_throughput_mbps": {
            "median": pct(&rates, 0.5).map(|v| v / 1e6),
            "mean": crate::results::metrics::mean(&rates).map(|v| v / 1e6),
        },
        "mean_fct_s_100_plus_pkts": mean_fct_from(r, 100),
        "fct_by_size": buckets,
        "groups": group_fct(r),
    })
}

/// The paper's testbed claims over the schemes that ran (simulated or
/// real), with the thresholds of the reproduction:
///
/// * light (Fig. 8): KA's mean FCT for flows of ≥ 100 packets at most 0.6×
///   CUBIC's (paper ≈ 0.5×); CUBIC on FQ-CoDel + ECN within 20 % of CUBIC
///   (paper: no better); PCC's at least CUBIC's (paper: slower);
/// * heavy (Figs 9–10): KA's queueing delay median < 5 ms and 95th
///   percentile < 50 ms (paper: near 0); CUBIC's 95th percentile > 500 ms
///   (paper: above 1 s); KA's median per-flow throughput at least CUBIC's.
pub fn claims(load: TestbedLoad, results: &[(&str, &RunResult)]) -> Vec<Claim> {
    let get = |v: &str| results.iter().find(|(n, _)| *n == v).map(|(_, r)| *r);
    let mut out = Vec::new();
    let Some(cubic) = get("cubic") else {
        return out;
    };
    match load {
        TestbedLoad::Light => {
            let c = mean_fct_from(cubic, 100);
            for (v, who) in KA_SCHEMES {
                let Some(ka) = get(v) else { continue };
                let k = mean_fct_from(ka, 100);
                let ratio = k.zip(c).map(|(k, c)| k / c);
                out.push(Claim::new(
                    format!(
                        "{who}: mean FCT for flows of >= 100 packets <= 0.6x CUBIC's (paper Fig. 8: ~0.5x)"
                    ),
                    format!(
                        "KA {}, CUBIC {} ({})",
                        secs(k),
                        secs(c),
                        ratio.map_or("n/a".into(), |r| format!("{r:.2}x"))
                    ),
                    ratio.is_some_and(|r| r <= 0.6),
                ));
            }
            if let Some(fq) = get("cubic-fqcodel-ecn") {
                let f = mean_fct_from(fq, 100);
                out.push(Claim::new(
                    "CUBIC on FQ-CoDel + ECN: mean FCT (>= 100 packets) within 20 % of CUBIC's (paper Fig. 8: no better)",
                    format!("FQ-CoDel + ECN {}, CUBIC {}", secs(f), secs(c)),
                    matches!((f, c), (Some(f), Some(c)) if (f - c).abs() <= 0.2 * c),
                ));
            }
            if let Some(pcc) = get("pcc") {
                let p = mean_fct_from(pcc, 100);
                out.push(Claim::new(
                    "PCC's mean FCT (>= 100 packets) at least CUBIC's (paper Fig. 8: PCC slower)",
                    format!("PCC {}, CUBIC {}", secs(p), secs(c)),
                    matches!((p, c), (Some(p), Some(c)) if p >= c),
                ));
            }
        }
        TestbedLoad::Heavy => {
            let qc = queue_delays_ms(cubic);
            let c95 = pct(&qc, 0.95);
            out.push(fig9_cubic_claim(c95));
            for (v, who) in KA_SCHEMES {
                let Some(ka) = get(v) else { continue };
                let qk = queue_delays_ms(ka);
                let (k50, k95) = (pct(&qk, 0.5), pct(&qk, 0.95));
                let (rk, rc) = (flow_rates(ka), flow_rates(cubic));
                let (mk, mc) = (pct(&rk, 0.5), pct(&rc, 0.5));
                for mut claim in [
                    fig9_ka_claim(k50, k95),
                    fig10_claim(mk, mc),
                    fig10_quantiles_claim(&rk, &rc),
                ] {
                    claim.what = format!("{who}: {}", claim.what);
                    out.push(claim);
                }
            }
        }
    }
    out
}

/// A CDF curve of `sorted` values, each multiplied by `scale`.
pub fn cdf_curve(label: String, sorted: &[f64], scale: f64) -> Curve {
    let n = sorted.len().max(1) as f64;
    Curve {
        label,
        points: sorted
            .iter()
            .enumerate()
            .map(|(i, &v)| (v * scale, (i + 1) as f64 / n))
            .collect(),
    }
}

/// Fig. 8: mean FCT against flow size (quarter-decade buckets), one curve
/// per labelled run.
pub fn fct_panel(runs: &[(String, &RunResult)]) -> Panel {
    let mut p = report::fct_size_panel(
        runs.iter()
            .map(|(l, r)| Curve {
                label: l.clone(),
                points: crate::results::plot::fct_by_size(r.flows.iter()),
            })
            .collect(),
    );
    p.title = "Mean flow completion time by flow size (paper Fig. 8)".into();
    p
}

/// Fig. 9: CDF of the queueing delay at the bottleneck (per 100 ms bin).
pub fn queue_cdf_panel(runs: &[(String, &RunResult)]) -> Panel {
    Panel {
        title: "CDF of the queueing delay at the bottleneck, 100 ms bins (paper Fig. 9)".into(),
        x_label: "queueing delay (ms)".into(),
        y_label: "CDF".into(),
        curves: runs
            .iter()
            .map(|(l, r)| cdf_curve(l.clone(), &queue_delays_ms(r), 1.0))
            .collect(),
        y_range: Some((0.0, 1.02)),
        ..Panel::default()
    }
}

/// Fig. 10: CDF of the flows' average throughput (size / FCT).
pub fn throughput_cdf_panel(runs: &[(String, &RunResult)]) -> Panel {
    Panel {
        title: "CDF of the average throughput of each flow (paper Fig. 10)".into(),
        x_label: "flow throughput (Mbit/s)".into(),
        y_label: "CDF".into(),
        curves: runs
            .iter()
            .map(|(l, r)| cdf_curve(l.clone(), &flow_rates(r), 1e-6))
            .collect(),
        y_range: Some((0.0, 1.02)),
        ..Panel::default()
    }
}

/// The panels of a load: light — Fig. 8 and the queueing-delay CDF; heavy —
/// Figs 9 and 10 and the mean FCT by size.
pub fn panels(load: TestbedLoad, runs: &[(String, &RunResult)]) -> Vec<Panel> {
    match load {
        TestbedLoad::Light => {
            let mut q = queue_cdf_panel(runs);
            q.title = "CDF of the queueing delay at the bottleneck, 100 ms bins".into();
            vec![fct_panel(runs), q]
        }
        TestbedLoad::Heavy => vec![
            queue_cdf_panel(runs),
            throughput_cdf_panel(runs),
            fct_panel(runs),
        ],
    }
}

impl Experiment for TestbedLoad {
    fn name(&self) -> &'static str {
        match self {
            TestbedLoad::Light => "testbed-light",
            TestbedLoad::Heavy => "testbed-heavy",
        }
    }

    fn about(&self) -> &'static str {
        match self {
            TestbedLoad::Light => {
                "The paper's testbed, light load (Fig. 8): KA, CUBIC, CUBIC on FQ-CoDel+ECN, PCC at 100 Mbit/s, 8 senders"
            }
            TestbedLoad::Heavy => {
                "The paper's testbed, heavy load (Figs 9-10): KA, CUBIC, CUBIC on FQ-CoDel+ECN, PCC at 10 Mbit/s, 1 MB flows"
            }
        }
    }

    fn title(&self) -> String {
        match self {
            TestbedLoad::Light => "Testbed, light load (100 Mbit/s, 8 on-off senders), simulated",
            TestbedLoad::Heavy => {
                "Testbed, heavy load (10 Mbit/s, 8 senders, 1 MB flows), simulated"
            }
        }
        .into()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        SCHEMES
            .iter()
            .filter_map(|(v, _)| Some((*v, self.scenario_text(v)?)))
            .collect()
    }

    fn headline(&self, r: &RunResult) -> Value {
        headline(r)
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        let refs: Vec<(&str, &RunResult)> = results.iter().map(|(n, r)| (*n, r)).collect();
        claims(*self, &refs)
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        let runs: Vec<(String, &RunResult)> = SCHEMES
            .iter()
            .filter_map(|(v, l)| Some((l.to_string(), find(results, v)?)))
            .collect();
        panels(*self, &runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_scale_the_scenario_and_keep_its_shape() {
        let o = Overrides {
            capacity_mbps: Some(40.0),
            senders: Some(2),
            duration_s: Some(20.0),
            seed: Some(7),
        };
        for load in [TestbedLoad::Light, TestbedLoad::Heavy] {
            for (scheme, _) in SCHEMES {
                let s = load.scenario(scheme, &o).unwrap();
                assert_eq!(s.variant, scheme);
                assert_eq!(s.duration_s, 20.0);
                assert_eq!(s.seed, 7);
                let Topology::Dumbbell(d) = &s.topology else {
                    panic!("{scheme}: not a dumbbell")
                };
                assert_eq!(d.capacity_mbps, 40.0);
                assert_eq!(d.rtt_ms, 100.0);
                assert_eq!(s.groups.len(), 1);
                assert_eq!(s.groups[0].count, 2);
                assert!(s.groups[0].track <= 2);
            }
        }
        let err = TestbedLoad::Light.scenario("bbr", &o).unwrap_err();
        assert!(err.to_string().contains("unknown scheme"), "{err}");
    }

    #[test]
    fn schemes_map_to_the_paper_s_kinds_and_queues() {
        use crate::scenario::{FlowKind, PortKind};
        use ka_router::qdisc::QdiscConfig;
        for load in [TestbedLoad::Light, TestbedLoad::Heavy] {
            let get = |v| load.scenario(v, &Overrides::default()).unwrap();
            let d = |s: &Scenario| match &s.topology {
                Topology::Dumbbell(d) => d.clone(),
                _ => panic!("not a dumbbell"),
            };
            let ka = get("ka");
            assert_eq!(ka.groups[0].kind, FlowKind::Ka);
            assert_eq!(d(&ka).port, PortKind::Ka);
            let fq = get("cubic-fqcodel-ecn");
            assert_eq!(fq.groups[0].kind, FlowKind::TcpCubic);
            assert!(matches!(d(&fq).queue, QdiscConfig::FqCodel(_)));
            assert_eq!(fq.tcp.ecn, Some(true));
            assert_eq!(get("cubic").tcp.ecn, None);
            assert_eq!(get("pcc").groups[0].kind, FlowKind::Pcc);
            for v in ["cubic", "pcc"] {
                assert_eq!(d(&get(v)).port, PortKind::Droptail, "{v}");
                assert_eq!(d(&get(v)).queue, QdiscConfig::DropTail, "{v}");
            }
            let (cap, dur) = match load {
                TestbedLoad::Light => (100.0, 180.0),
                TestbedLoad::Heavy => (10.0, 900.0),
            };
            assert_eq!(d(&ka).capacity_mbps, cap);
            assert_eq!(ka.duration_s, dur);
            assert_eq!(ka.groups[0].count, 8);
        }
    }
}

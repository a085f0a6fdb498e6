//! Queue disciplines against Kick-Ass (DESIGN §3.1, §4.2, §4.3): the paper compares
//! KA with "CUBIC on FQ-CoDel with ECN" on its testbed (§IV-A, Figs 8–10),
//! and the XCP-vs-RCP seed runs TCP over RED (§5.1). Two experiments, each
//! with four variants — `ka` (KA endpoints through a KA port with its
//! drop-tail queue), `cubic` (CUBIC over drop-tail), `cubic-fqcodel-ecn`
//! (CUBIC with ECN over FQ-CoDel), `cubic-red` (CUBIC over RED, which then
//! drops: the senders do not negotiate ECN):
//!
//! * `aqm-light`: the paper's light load (Fig. 3's setting: 150 Mbit/s,
//!   100 ms, 32 on-off senders, mean flow 100 packets), the paper's ns-3
//!   TCP profile;
//! * `aqm-heavy`: the testbed's heavy load (10 Mbit/s, 100 ms, 8 on-off
//!   senders, mean flow 1 MB, mean off time 8 s), modern TCP defaults
//!   with HyStart, 900 s, the KA port with the `ka-router` binary's knobs:
//!   the same KA router and duration as `testbed-heavy`.
//!
//! The plot has the mean FCT by flow size and the CDF of the queueing
//! delay (the mean sojourn of the packets the bottleneck dequeued in each
//! 100 ms bin; a bin in which nothing was dequeued counts as 0).

use serde_json::{Value, json};

use super::fmt_ms as ms;
use super::{
    Experiment, fig9_cubic_claim, fig9_ka_claim, fig10_claim, fig10_quantiles_claim, find,
    flow_rates, group_fct, mean_fct_from, mean_in, pct, queue_delays_ms,
};
use crate::paper::claims::Claim;
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{Curve, Panel};
use crate::results::report;

/// The two experiments of this file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aqm {
    /// The paper's light load (Fig. 3 setting).
    Light,
    /// The testbed's heavy load (Figs 9–10 setting).
    Heavy,
}

/// Variant names and plot labels, in plot order.
const VARIANTS: [(&str, &str); 4] = [
    ("ka", "KA"),
    ("cubic", "CUBIC, drop-tail"),
    ("cubic-fqcodel-ecn", "CUBIC, FQ-CoDel + ECN"),
    ("cubic-red", "CUBIC, RED"),
];

impl Experiment for Aqm {
    fn name(&self) -> &'static str {
        match self {
            Aqm::Light => "aqm-light",
            Aqm::Heavy => "aqm-heavy",
        }
    }

    fn about(&self) -> &'static str {
        match self {
            Aqm::Light => {
                "KA vs CUBIC on drop-tail, FQ-CoDel+ECN and RED at the paper's light load (Fig. 3 setting)"
            }
            Aqm::Heavy => {
                "KA vs CUBIC on drop-tail, FQ-CoDel+ECN and RED at the testbed's heavy load (Figs 9-10 setting)"
            }
        }
    }

    fn title(&self) -> String {
        match self {
            Aqm::Light => "Queue disciplines at light load (150 Mbit/s, 32 on-off senders)",
            Aqm::Heavy => "Queue disciplines at heavy load (10 Mbit/s, 8 senders, 1 MB flows)",
        }
        .into()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        match self {
            Aqm::Light => vec![
                ("ka", include_str!("../../scenarios/aqm-light-ka.toml")),
                (
                    "cubic",
                    include_str!("../../scenarios/aqm-light-cubic.toml"),
                ),
                (
                    "cubic-fqcodel-ecn",
                    include_str!("../../scenarios/aqm-light-cubic-fqcodel-ecn.toml"),
                ),
                (
                    "cubic-red",
                    include_str!("../../scenarios/aqm-light-cubic-red.toml"),
                ),
            ],
            Aqm::Heavy => vec![
                ("ka", include_str!("../../scenarios/aqm-heavy-ka.toml")),
                (
                    "cubic",
                    include_str!("../../scenarios/aqm-heavy-cubic.toml"),
                ),
                (
                    "cubic-fqcodel-ecn",
                    include_str!("../../scenarios/aqm-heavy-cubic-fqcodel-ecn.toml"),
                ),
                (
                    "cubic-red",
                    include_str!("../../scenarios/aqm-heavy-cubic-red.toml"),
                ),
            ],
        }
    }

    fn headline(&self, r: &RunResult) -> Value {
        let q = queue_delays_ms(r);
        let rates = flow_rates(r);
        let hop = r.hops.first();
        json!({
            "utilization": mean_in(r, Metric::Utilization, "link:bottleneck", 0.0, r.sim_seconds),
            "queue_delay_ms": {
                "median": pct(&q, 0.5),
                "p95": pct(&q, 0.95),
                "mean": metrics::mean(&q),
            },
            "mean_sojourn_ms_all_packets": hop.and_then(|h| h.sojourn.mean_s()).map(|s| s * 1e3),
            "drops": hop.map(|h| h.forward.drops_queue),
            "aqm_drops": hop.map(|h| h.forward.drops_aqm),
            "ecn_marks": hop.map(|h| h.forward.ecn_marks),
            "flow_throughput_mbps": {
                "median": pct(&rates, 0.5).map(|v| v / 1e6),
                "mean": metrics::mean(&rates).map(|v| v / 1e6),
            },
            "mean_fct_s_100_plus_pkts": mean_fct_from(r, 100),
            "groups": group_fct(r),
        })
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        match self {
            Aqm::Light => light_claims(results),
            Aqm::Heavy => heavy_claims(results),
        }
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        let mut fct = Vec::new();
        let mut cdf = Vec::new();
        for (v, label) in VARIANTS {
            let Some(r) = find(results, v) else {
                continue;
            };
            fct.push(Curve {
                label: label.into(),
                points: crate::results::plot::fct_by_size(r.flows.iter()),
            });
            let q = queue_delays_ms(r);
            let n = q.len().max(1) as f64;
            cdf.push(Curve {
                label: label.into(),
                points: q
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| (d, (i + 1) as f64 / n))
                    .collect(),
            });
        }
        vec![
            report::fct_size_panel(fct),
            Panel {
                title: "CDF of the queueing delay at the bottleneck (100 ms bins)".into(),
                x_label: "queueing delay (ms)".into(),
                y_label: "CDF".into(),
                curves: cdf,
                y_range: Some((0.0, 1.02)),
                ..Panel::default()
            },
        ]
    }
}

fn secs(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.3} s"))
}

/// Light load (paper Fig. 8's setting, simulated): KA's FCT against
/// CUBIC's, and the AQMs "no better than CUBIC" — at 30 % load with the
/// paper's TCP (ssthresh 64 KB) queues stay short, so the disciplines have
/// little to do.
fn light_claims(results: &[(&str, RunResult)]) -> Vec<Claim> {
    let mut out = Vec::new();
    let Some(cubic) = find(results, "cubic") else {
        return out;
    };
    let c = mean_fct_from(cubic, 100);
    if let Some(ka) = find(results, "ka") {
        let k = mean_fct_from(ka, 100);
        out.push(Claim::new(
            "KA's mean FCT for flows of >= 100 packets below CUBIC's on drop-tail (paper Fig. 8: ~0.5x)",
            format!("KA {}, CUBIC {}", secs(k), secs(c)),
            matches!((k, c), (Some(k), Some(c)) if k < c),
        ));
    }
    for (v, label) in [
        ("cubic-fqcodel-ecn", "FQ-CoDel + ECN"),
        ("cubic-red", "RED"),
    ] {
        if let Some(r) = find(results, v) {
            let a = mean_fct_from(r, 100);
            out.push(Claim::new(
                format!(
                    "CUBIC on {label}: mean FCT (>= 100 packets) within 20 % of drop-tail CUBIC's (paper Fig. 8: no better)"
                ),
                format!("{label} {}, drop-tail {}", secs(a), secs(c)),
                matches!((a, c), (Some(a), Some(c)) if (a - c).abs() <= 0.2 * c),
            ));
        }
    }
    out
}

/// Heavy load (paper Figs 9–10's setting, simulated): queueing delays and
/// per-flow throughput.
fn heavy_claims(results: &[(&str, RunResult)]) -> Vec<Claim> {
    let mut out = Vec::new();
    let q = |v: &str| find(results, v).map(queue_delays_ms);
    let (Some(ka), Some(cubic)) = (find(results, "ka"), find(results, "cubic")) else {
        return out;
    };
    let (qk, qc) = (q("ka").unwrap_or_default(), q("cubic").unwrap_or_default());
    let (k50, k95, c95) = (pct(&qk, 0.5), pct(&qk, 0.95), pct(&qc, 0.95));
    out.push(fig9_ka_claim(k50, k95));
    out.push(fig9_cubic_claim(c95));
    let (rk, rc) = (flow_rates(ka), flow_rates(cubic));
    out.push(fig10_claim(pct(&rk, 0.5), pct(&rc, 0.5)));
    out.push(fig10_quantiles_claim(&rk, &rc));
    if let Some(fq) = q("cubic-fqcodel-ecn") {
        let (f50, f95) = (pct(&fq, 0.5), pct(&fq, 0.95));
        out.push(Claim::new(
            "FQ-CoDel + ECN holds CUBIC's median queueing delay under 15 ms (CoDel target 5 ms)",
            ms(f50),
            f50.is_some_and(|v| v < 15.0),
        ));
        out.push(Claim::new(
            "FQ-CoDel + ECN: CUBIC's 95th-percentile queueing delay under a fifth of drop-tail's",
            format!("FQ-CoDel {}, drop-tail {}", ms(f95), ms(c95)),
            matches!((f95, c95), (Some(f), Some(c)) if f < c / 5.0),
        ));
        let marks = find(results, "cubic-fqcodel-ecn")
            .and_then(|r| r.hops.first())
            .map_or(0, |h| h.forward.ecn_marks);
        out.push(Claim::new(
            "FQ-CoDel marks CE on the ECN flows' packets (and drops none)",
            format!("{marks} marks"),
            marks > 0,
        ));
    }
    if let Some(red) = q("cubic-red") {
        let r95 = pct(&red, 0.95);
        out.push(Claim::new(
            "RED keeps CUBIC's 95th-percentile queueing delay below drop-tail's",
            format!("RED {}, drop-tail {}", ms(r95), ms(c95)),
            matches!((r95, c95), (Some(r), Some(c)) if r < c),
        ));
    }
    out
}

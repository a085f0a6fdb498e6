//! `dcc-fig2`: the DCC seed's Fig. 2 in its most faithful reading
//! (`dcc-fig2-ns2-*.toml`; DESIGN §5.3, `docs/RESULTS.md` "DCC"), run over
//! [`SEEDS`] seeds, and its check stated with a 95 % confidence interval.
//!
//! Variants, each for seeds `s01` … `s10` (seed = the run's seed + k − 1):
//! `lccp-sNN` (LCCP over the direct feedback channel, `feedback =
//! "direct"`), `lccp-ack-sNN` (the same with the rate riding the
//! end-to-end ACKs, `feedback = "ack"`) and `tcp-sNN` (ns-2's TCP end to
//! end, no middleboxes).
//!
//! The check is on the per-seed gain `g = (T − L)/T` (T, L: TCP's and
//! LCCP's mean FCT with the same seed, i.e. the same arrival times): its
//! mean over the seeds at least 25 % (the seed: "30% to 40% faster"),
//! with the interval `mean ± t₀.₉₇₅,ₙ₋₁ · s/√n` printed. The mechanism is
//! printed with it: TCP's retransmission timeouts and the middle link's
//! idle time while a flow is unfinished ([`idle_while_busy_s`]).

use serde_json::{Value, json};

use super::dcc_stats::{fct_cdf_panel, fcts, mean_of, middle_bps, windows};
use crate::engine::to_secs;
use crate::paper::claims::Claim;
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{Curve, Panel};
use crate::scenario::Scenario;
use crate::scenario::dcc::LccpFeedback;

/// Seeds per variant.
pub const SEEDS: usize = 10;

/// The bound of the FCT check: LCCP's mean gain over TCP at least this.
pub const LCCP_GAIN: f64 = 0.25;

/// The LCCP scenario (direct feedback; `lccp-ack` switches it to `ack`).
pub const LCCP_TOML: &str = include_str!("../../scenarios/dcc-fig2-ns2-lccp.toml");
/// The end-to-end TCP scenario.
pub const TCP_TOML: &str = include_str!("../../scenarios/dcc-fig2-ns2-tcp.toml");

/// The variant kinds, their plot labels.
pub const KINDS: [(&str, &str); 3] = [
    ("lccp", "LCCP, direct feedback"),
    ("lccp-ack", "LCCP, feedback on the ACKs"),
    ("tcp", "TCP (ns-2) end to end"),
];

/// Variant names: every kind for seeds `s01` … `s10`.
const VARIANTS: [&str; 3 * SEEDS] = [
    "lccp-s01",
    "lccp-s02",
    "lccp-s03",
    "lccp-s04",
    "lccp-s05",
    "lccp-s06",
    "lccp-s07",
    "lccp-s08",
    "lccp-s09",
    "lccp-s10",
    "lccp-ack-s01",
    "lccp-ack-s02",
    "lccp-ack-s03",
    "lccp-ack-s04",
    "lccp-ack-s05",
    "lccp-ack-s06",
    "lccp-ack-s07",
    "lccp-ack-s08",
    "lccp-ack-s09",
    "lccp-ack-s10",
    "tcp-s01",
    "tcp-s02",
    "tcp-s03",
    "tcp-s04",
    "tcp-s05",
    "tcp-s06",
    "tcp-s07",
    "tcp-s08",
    "tcp-s09",
    "tcp-s10",
];

/// A variant's kind and seed index (1-based): `lccp-ack-s03` → (`lccp-ack`, 3).
pub fn split(variant: &str) -> Option<(&str, usize)> {
    let (kind, k) = variant.rsplit_once("-s")?;
    Some((kind, k.parse().ok()?))
}

/// The variants and their scenario texts.
pub fn variants() -> Vec<(&'static str, &'static str)> {
    VARIANTS
        .iter()
        .map(|&v| {
            let text = if v.starts_with("tcp") {
                TCP_TOML
            } else {
                LCCP_TOML
            };
            (v, text)
        })
        .collect()
}

/// Sets a variant's seed (the run's seed + k − 1), its name and, for
/// `lccp-ack`, the feedback channel.
pub fn prepare(variant: &str, s: &mut Scenario) {
    let Some((kind, k)) = split(variant) else {
        return;
    };
    s.seed = s.seed.saturating_add(k.saturating_sub(1) as u64);
    s.variant = variant.to_string();
    if kind == "lccp-ack"
        && let crate::scenario::Topology::Dcc(d) = &mut s.topology
    {
        d.feedback = LccpFeedback::Ack;
    }
}

/// Seconds the middle link was idle while at least one sized flow had
/// started and not yet completed (from the per-bin utilisation): the link
/// time a scheme wastes while there is work.
pub fn idle_while_busy_s(r: &RunResult) -> f64 {
    let bin = to_secs(r.series.bin);
    let spans: Vec<(f64, f64)> = r
        .flows
        .iter()
        .filter(|f| f.size_bytes.is_some())
        .map(|f| (to_secs(f.start), f.end.map_or(f64::INFINITY, to_secs)))
        .collect();
    r.series
        .points(Metric::Utilization, "link:middle")
        .iter()
        .filter(|&&(t, _)| spans.iter().any(|&(a, e)| a < t && e > t - bin))
        .map(|&(_, u)| (1.0 - u).clamp(0.0, 1.0) * bin)
        .sum()
}

/// Retransmission timeouts of the sized flows' senders.
pub fn rtos(r: &RunResult) -> u64 {
    r.flows
        .iter()
        .filter(|f| f.size_bytes.is_some())
        .map(|f| f.rtos)
        .sum()
}

/// The extra headline numbers of a `dcc-fig2` variant.
pub fn headline_extra(r: &RunResult) -> Value {
    json!({
        "rtos": rtos(r),
        "middle_idle_while_busy_s": idle_while_busy_s(r),
    })
}

/// Two-sided 97.5 % quantile of Student's t with `dof` degrees of freedom
/// (1.96 beyond 30).
pub fn t975(dof: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    dof.checked_sub(1)
        .and_then(|i| T.get(i))
        .copied()
        .unwrap_or(1.96)
}

/// Mean and half-width of the 95 % confidence interval of `v` (half-width
/// 0 for one value).
pub fn mean_ci95(v: &[f64]) -> Option<(f64, f64)> {
    let m = metrics::mean(v)?;
    let n = v.len();
    if n < 2 {
        return Some((m, 0.0));
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    Some((m, t975(n - 1) * (var / n as f64).sqrt()))
}

/// Per seed (1-based, ascending) the results of `kind`.
fn by_seed<'a>(results: &'a [(&str, RunResult)], kind: &str) -> Vec<(usize, &'a RunResult)> {
    let mut v: Vec<_> = results
        .iter()
        .filter_map(|(name, r)| {
            let (k, s) = split(name)?;
            (k == kind).then_some((s, r))
        })
        .collect();
    v.sort_by_key(|p| p.0);
    v
}

fn all_done(r: &RunResult) -> bool {
    r.flows
        .iter()
        .filter(|f| f.size_bytes.is_some())
        .all(|f| f.end.is_some())
}

/// The per-seed gains of `kind` over `tcp`, and whether every flow of
/// both completed.
fn gains(results: &[(&str, RunResult)], kind: &str) -> (Vec<f64>, bool) {
    let tcp = by_seed(results, "tcp");
    let mut done = true;
    let mut g = Vec::new();
    for (s, r) in by_seed(results, kind) {
        let Some((_, t)) = tcp.iter().find(|p| p.0 == s) else {
            continue;
        };
        done &= all_done(r) && all_done(t);
        if let (Some(l), Some(t)) = (metrics::mean(&fcts(r)), metrics::mean(&fcts(t))) {
            g.push((t - l) / t);
        }
    }
    (g, done)
}

fn mean_fct_over_seeds(results: &[(&str, RunResult)], kind: &str) -> Option<f64> {
    let v: Vec<f64> = by_seed(results, kind)
        .iter()
        .filter_map(|(_, r)| metrics::mean(&fcts(r)))
        .collect();
    metrics::mean(&v)
}

fn pct(v: Option<(f64, f64)>) -> String {
    v.map_or("n/a".into(), |(m, h)| {
        format!(
            "{:.1} % (95 % CI {:.1} … {:.1} %)",
            100.0 * m,
            100.0 * (m - h),
            100.0 * (m + h)
        )
    })
}

/// The checks (see the module docs).
pub fn claims(results: &[(&str, RunResult)]) -> Vec<Claim> {
    let mut out = Vec::new();
    let per_kind = |kind: &str, f: &dyn Fn(&RunResult) -> f64| -> Option<f64> {
        let v: Vec<f64> = by_seed(results, kind).iter().map(|(_, r)| f(r)).collect();
        metrics::mean(&v)
    };
    let (g, done) = gains(results, "lccp");
    let (g_ack, _) = gains(results, "lccp-ack");
    let ci = mean_ci95(&g);
    let s = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.2} s"));
    out.push(Claim::new(
        "LCCP (direct feedback) mean FCT at least 25 % below end-to-end TCP's, mean over seeds of (TCP - LCCP)/TCP (seed Fig. 2: 30-40 % faster)",
        format!(
            "{} over {} seeds (mean FCT LCCP {}, TCP {}; LCCP with feedback on the ACKs: {}, {}); per run: TCP {:.1} RTOs and {:.1} s of middle-link idle time while flows wait, LCCP {:.1} and {:.1} s",
            pct(ci),
            g.len(),
            s(mean_fct_over_seeds(results, "lccp")),
            s(mean_fct_over_seeds(results, "tcp")),
            pct(mean_ci95(&g_ack)),
            s(mean_fct_over_seeds(results, "lccp-ack")),
            per_kind("tcp", &|r| rtos(r) as f64).unwrap_or(f64::NAN),
            per_kind("tcp", &idle_while_busy_s).unwrap_or(f64::NAN),
            per_kind("lccp", &|r| rtos(r) as f64).unwrap_or(f64::NAN),
            per_kind("lccp", &idle_while_busy_s).unwrap_or(f64::NAN),
        ),
        done && ci.is_some_and(|(m, _)| m >= LCCP_GAIN),
    ));
    let jain = |kind: &str| {
        per_kind(kind, &|r| {
            mean_of(&windows(r, middle_bps(r)).jain).unwrap_or(f64::NAN)
        })
    };
    let j = jain("lccp");
    out.push(Claim::new(
        "Jain's index of concurrent flows' rates >= 0.95 with LCCP, mean over seeds (seed: no starvation of new flows)",
        format!(
            "LCCP {:.3} (TCP {:.3})",
            j.unwrap_or(f64::NAN),
            jain("tcp").unwrap_or(f64::NAN)
        ),
        j.is_some_and(|j| j >= super::dcc_stats::LCCP_JAIN),
    ));
    out
}

/// (a) the FCT CDF of every kind, all seeds pooled; (b) each seed's mean
/// FCT per kind.
pub fn panels(results: &[(&str, RunResult)]) -> Vec<Panel> {
    let mut cdf = Vec::new();
    let mut per_seed = Vec::new();
    for (kind, label) in KINDS {
        let runs = by_seed(results, kind);
        if runs.is_empty() {
            continue;
        }
        let mut f: Vec<f64> = runs.iter().flat_map(|(_, r)| fcts(r)).collect();
        f.sort_by(f64::total_cmp);
        let n = f.len().max(1) as f64;
        cdf.push(Curve {
            label: label.into(),
            points: f
                .iter()
                .enumerate()
                .map(|(i, &t)| (t, (i + 1) as f64 / n))
                .collect(),
        });
        per_seed.push(Curve {
            label: label.into(),
            points: runs
                .iter()
                .filter_map(|(s, r)| Some((*s as f64, metrics::mean(&fcts(r))?)))
                .collect(),
        });
    }
    vec![
        fct_cdf_panel(
            "(a) CDF of the flow completion time, all seeds (seed Fig. 2)",
            cdf,
        ),
        Panel {
            title: "(b) Mean FCT per seed".into(),
            x_label: "seed index".into(),
            y_label: "mean FCT (s)".into(),
            curves: per_seed,
            markers: true,
            ..Panel::default()
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_split_into_kind_and_seed() {
        assert_eq!(split("lccp-ack-s03"), Some(("lccp-ack", 3)));
        assert_eq!(split("tcp-s10"), Some(("tcp", 10)));
        assert_eq!(split("lccp"), None);
        assert_eq!(variants().len(), 3 * SEEDS);
    }

    #[test]
    fn confidence_interval_of_known_values() {
        // n = 4, mean 2.5, s = 1.291: half-width 3.182 · 1.291 / 2.
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((m - 2.5).abs() < 1e-12);
        assert!((h - 3.182 * (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-9);
        assert_eq!(mean_ci95(&[3.0]), Some((3.0, 0.0)));
        assert_eq!(mean_ci95(&[]), None);
        assert!((t975(40) - 1.96).abs() < 1e-12);
    }
}

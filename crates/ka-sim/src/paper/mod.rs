//! Reproductions of published experiments: the Kick-Ass paper's figures
//! (§III) and the seed papers' (XCP vs RCP, RWM, DCC), each an
//! [`Experiment`] — a set of scenario variants (TOML files in
//! `crates/ka-sim/scenarios/`), headline numbers, acceptance checks
//! printed `[PASS]`/`[FAIL]`, and a combined plot. `ka-sim paper NAME`
//! runs one; [`experiments`] lists them all.
//!
//! | name | variants (subdirectories) | scenario files |
//! |---|---|---|
//! | fig2 | `ka/`, `rcp/`, `ka-fast/`, `rcp-fast/` | `fig2-ka.toml`, `fig2-rcp.toml`, `fig2-*-fast.toml` (α 0.4, β 0.5) |
//! | fig3 | `ka/`, `rcp/`, `tcp/` | `fig3-*.toml` |
//! | fig4 | `tcp-alone/`, `mixed/` | `fig4-*.toml` |
//! | fig5 | `mixed/` | `fig5-mixed.toml` |
//! | fig7 | `mixed/` | `fig7-mixed.toml` (the topology of Fig. 6) |
//! | aqm-light, aqm-heavy | `ka/`, `cubic/`, `cubic-fqcodel-ecn/`, `cubic-red/` | `aqm-*.toml` ([`Aqm`]) |
//! | fig3-crowd | `ka-1..3/`, `rcp-1..3/`, `paper-*/`, `crowd64-*/`, `fig2-*/` | `fig3-crowd-*.toml` ([`FlashCrowd`]) |
//! | xcp-fig4 … xcp-fig7 | two of `tcp/`, `xcp/`, `xcp-rate/`, `rcp/`, `ka/` | `xcp-transient-*.toml` ([`XcpTransient`]) |
//! | xcp-fig8 | `tcp/`, `xcp/`, `rcp/`, `rcp-fig7/`, `rcp-deep/`, `ka/` | `xcp-fig8-*.toml` ([`XcpFct`]) |
//! | testbed-light, testbed-heavy | `ka/`, `ka-crowd/`, `ka-echo/`, `cubic/`, `cubic-fqcodel-ecn/`, `pcc/` | `testbed-*.toml` ([`TestbedLoad`]; the simulated half of `ka-testbed`) |
//! | dcc-fig2 | `lccp-s01..10/`, `lccp-ack-s01..10/`, `tcp-s01..10/` | `dcc-fig2-ns2-*.toml` ([`Dcc`], [`dcc_seeds`]: seeds 1-10, 95 % CI) |
//! | dcc-fig2-modern | `lccp/`, `lccp-rcp/`, `tcp/` (+ `xcp/` with the `xcp` port kind) | `dcc-fig2-{lccp,lccp-rcp,tcp,xcp}.toml` ([`Dcc`]) |
//! | dcc-udp | `lccp-alone/`, `lccp-udp/`, `tcp-alone/`, `tcp-udp/` | `dcc-udp-*.toml` ([`Dcc`]) |
//! | other-rtt, other-5bn, other-dc | `light-{ka,rcp,tcp}/`, `heavy-{ka,rcp,tcp}/` | `other-*.toml` ([`Other`]) |
//! | fig3-era, fig4-era | the figure's variants and the same with `-era` | `fig3-*.toml`, `fig4-*.toml` ([`Era`]: every endpoint on the `ns3-18` TCP profile, DESIGN §9.2) |
//! | fig2-stamp, fig3-stamp | `ka/`, `ka-rtt/`, `rcp/`, `rcp-rtt/` (+ `tcp/` for fig3) | `fig2-*.toml`, `fig3-*.toml` with `-rtt` ([`StampInterval`]: signalling once per RTT, paper §V) |
//!
//! A new experiment is a new file here implementing [`Experiment`] plus one
//! line in [`experiments`].

mod aqm;
pub mod claims;
mod crowd;
pub mod dcc;
pub mod dcc_seeds;
pub(crate) mod dcc_stats;
pub mod era;
mod figures;
mod other;
pub mod stamp;
pub mod testbed;
mod xcp;
mod xcp_fct;

pub use aqm::Aqm;
pub use crowd::FlashCrowd;
pub use dcc::Dcc;
pub use era::Era;
pub use figures::{Figure, combined_panels, headline, variants};
pub use other::{Other, max_min_rates};
pub use stamp::StampInterval;
pub use testbed::TestbedLoad;
pub use xcp::XcpTransient;
pub use xcp_fct::XcpFct;

use std::path::Path;

use serde_json::{Value, json};

use crate::engine::to_secs;
use crate::paper::claims::Claim;
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{self, Curve, Panel};
use crate::results::report;
use crate::run::Progress;
use crate::run::segment::{self, Segments};
use crate::scenario::Scenario;

/// One reproducible experiment (see the module docs).
pub trait Experiment: Sync {
    /// The name `ka-sim paper NAME` takes (also the name of the combined
    /// plot and JSON files).
    fn name(&self) -> &'static str;

    /// One line for `--help` and listings.
    fn about(&self) -> &'static str;

    /// The combined plot's title.
    fn title(&self) -> String;

    /// The variants: (subdirectory, scenario TOML text).
    fn variants(&self) -> Vec<(&'static str, &'static str)>;

    /// Adjusts a variant's scenario after the seed and duration overrides
    /// (e.g. more arriving flows for a longer run). Default: nothing.
    fn prepare(&self, variant: &str, scenario: &mut Scenario) {
        let _ = (variant, scenario);
    }

    /// How to cut a variant's run in time and run the pieces in parallel
    /// ([`segment`]). Default: one segment, an ordinary
    /// run.
    fn segments(&self, scenario: &Scenario) -> Segments {
        let _ = scenario;
        Segments::ONE
    }

    /// The headline numbers of one variant.
    fn headline(&self, r: &RunResult) -> Value;

    /// The acceptance checks over all variants that ran.
    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim>;

    /// The panels of the combined plot.
    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel>;
}

/// Every experiment `ka-sim paper` knows, in listing order.
pub fn experiments() -> Vec<&'static dyn Experiment> {
    vec![
        &Figure::Fig2,
        &Figure::Fig3,
        &Figure::Fig4,
        &Figure::Fig5,
        &Figure::Fig7,
        &Aqm::Light,
        &Aqm::Heavy,
        &FlashCrowd,
        &XcpTransient::Fig4,
        &XcpTransient::Fig5,
        &XcpTransient::Fig6,
        &XcpTransient::Fig7,
        &XcpFct,
        &TestbedLoad::Light,
        &TestbedLoad::Heavy,
        &Dcc::Fig2,
        &Dcc::Fig2Modern,
        &Dcc::Udp,
        &Other::Rtt,
        &Other::FiveBn,
        &Other::Dc,
        &StampInterval::Fig2,
        &StampInterval::Fig3,
        &Era::Fig3,
        &Era::Fig4,
    ]
}

/// The experiment called `name`, or an error listing the known ones.
pub fn find_experiment(name: &str) -> Result<&'static dyn Experiment, String> {
    experiments()
        .into_iter()
        .find(|e| e.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = experiments().iter().map(|e| e.name()).collect();
            format!("unknown experiment `{name}` (known: {})", names.join(", "))
        })
}

/// The scenario of one variant (or any scenario TOML), with optional seed
/// and duration overrides, validated after them.
pub fn scenario(
    toml_text: &str,
    seed: Option<u64>,
    duration: Option<f64>,
) -> Result<Scenario, crate::scenario::ScenarioError> {
    let mut s = Scenario::from_toml(toml_text)?;
    if let Some(seed) = seed {
        s.seed = seed;
    }
    if let Some(d) = duration {
        s.duration_s = d;
    }
    s.validate()?;
    Ok(s)
}

/// Runs every variant of `fig` into `out/<variant>/`, then writes the
/// combined plot `out/<fig>.svg` and `out/<fig>.json` (all headlines).
/// Variants that cannot run (e.g. a missing endpoint feature) get an
/// `ERROR.txt` and make the whole call fail after the others have run.
pub fn run_figure(
    fig: &dyn Experiment,
    out: &Path,
    seed: Option<u64>,
    duration: Option<f64>,
    progress: bool,
) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(out).map_err(|e| crate::results::output::with_path(out, e))?;
    let mut lines = Vec::new();
    let mut results: Vec<(&str, RunResult)> = Vec::new();
    let mut errors = Vec::new();
    let mut all = serde_json::Map::new();
    let fig_name = fig.name();
    for (name, text) in fig.variants() {
        let dir = out.join(name);
        let mut s = scenario(text, seed, duration)?;
        fig.prepare(name, &mut s);
        let mut p = Progress::new(&format!("{fig_name}/{name}"));
        let seg = fig.segments(&s);
        let run = segment::run_segmented(&s, &seg, progress.then_some(&mut p));
        match run {
            Ok(r) => {
                let h = fig.headline(&r);
                all.insert(name.to_string(), h.clone());
                let sum = report::write_all(&dir, &r, h)?;
                let line = report::one_line(&sum);
                if progress {
                    eprintln!("{line}");
                }
                lines.push(line);
                results.push((name, r));
            }
            Err(e) => {
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join("ERROR.txt"), format!("{e}\n"))?;
                let line = format!("{fig_name}/{name}: FAILED: {e}");
                if progress {
                    eprintln!("{line}");
                }
                lines.push(line);
                errors.push(format!("{name}: {e}"));
            }
        }
    }
    let claims = fig.claims(&results);
    for c in &claims {
        let line = c.line();
        if progress {
            eprintln!("{line}");
        }
        lines.push(line);
    }
    all.insert(
        "claims".to_string(),
        Value::Array(
            claims
                .iter()
                .map(crate::paper::claims::Claim::to_json)
                .collect(),
        ),
    );
    let json = serde_json::to_string_pretty(&Value::Object(all))?;
    std::fs::write(out.join(format!("{fig_name}.json")), json + "\n")?;
    let panels = fig.panels(&results);
    plot::write_svg(&out.join(format!("{fig_name}.svg")), &fig.title(), &panels)?;
    if !errors.is_empty() {
        anyhow::bail!(
            "{fig_name}: {} variant(s) failed: {}",
            errors.len(),
            errors.join("; ")
        );
    }
    Ok(lines)
}

/// Per-bin queueing delays (ms) at the hop named `bottleneck`, sorted: the
/// mean sojourn of the packets dequeued in each `utilization` bin, a bin in
/// which nothing was dequeued counting as 0.
pub fn queue_delays_ms(r: &RunResult) -> Vec<f64> {
    let soj = r.series.points(Metric::SojournMs, "port:bottleneck");
    let mut it = soj.iter().peekable();
    let mut out: Vec<f64> = r
        .series
        .points(Metric::Utilization, "link:bottleneck")
        .iter()
        .map(|&(t, _)| {
            while it.peek().is_some_and(|&&(ts, _)| ts < t - 1e-9) {
                it.next();
            }
            match it.peek() {
                Some(&&(ts, v)) if (ts - t).abs() < 1e-9 => v,
                _ => 0.0,
            }
        })
        .collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Per-flow average throughput (bit/s: size / FCT) of the completed sized
/// flows, sorted.
pub fn flow_rates(r: &RunResult) -> Vec<f64> {
    let mut v: Vec<f64> = r
        .flows
        .iter()
        .filter_map(|f| {
            let fct = to_secs(f.fct()?);
            (fct > 0.0).then(|| f.size_bytes.unwrap_or(0) as f64 * 8.0 / fct)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// A value in milliseconds for a claim's text ("n/a" if missing).
pub fn fmt_ms(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.1} ms"))
}

/// A rate in bit/s as Mbit/s for a claim's text ("n/a" if missing).
pub fn fmt_mbps(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{:.2} Mbit/s", v / 1e6))
}

/// The paper's Fig. 9 check on KA: median queueing delay `k50` < 5 ms and
/// 95th percentile `k95` < 50 ms (shared by `aqm-heavy` and the testbed).
pub fn fig9_ka_claim(k50: Option<f64>, k95: Option<f64>) -> Claim {
    Claim::new(
        "KA's queueing delay near 0 (paper Fig. 9): median < 5 ms, 95th percentile < 50 ms",
        format!("median {}, p95 {}", fmt_ms(k50), fmt_ms(k95)),
        k50.is_some_and(|v| v < 5.0) && k95.is_some_and(|v| v < 50.0),
    )
}

/// The paper's Fig. 9 check on CUBIC over drop-tail: 95th-percentile
/// queueing delay `c95` > 500 ms.
pub fn fig9_cubic_claim(c95: Option<f64>) -> Claim {
    Claim::new(
        "CUBIC on drop-tail fills the buffer (paper Fig. 9: above 1 s): 95th percentile > 500 ms",
        fmt_ms(c95),
        c95.is_some_and(|v| v > 500.0),
    )
}

/// The paper's Fig. 10 check: KA's median per-flow throughput `mk` at
/// least CUBIC's `mc` (bit/s).
pub fn fig10_claim(mk: Option<f64>, mc: Option<f64>) -> Claim {
    Claim::new(
        "KA's median per-flow throughput at least CUBIC's (paper Fig. 10)",
        format!("KA {}, CUBIC {}", fmt_mbps(mk), fmt_mbps(mc)),
        matches!((mk, mc), (Some(k), Some(c)) if k >= c),
    )
}

/// The slides' form of Fig. 10 ("KA above CUBIC in > 80 % of cases"): the
/// share of the quantiles 1 %, 2 % … 99 % at which KA's per-flow throughput
/// (sorted `ka`) is at least CUBIC's (sorted `cubic`), at least 0.8.
pub fn fig10_quantiles_claim(ka: &[f64], cubic: &[f64]) -> Claim {
    let share = quantile_share_above(ka, cubic);
    Claim::new(
        "KA's per-flow throughput CDF at or above CUBIC's over >= 80 % of its quantiles (paper's slides on Fig. 10: \"> 80 % of cases\")",
        share.map_or("n/a".into(), |s| {
            format!("{:.0} % of the quantiles 1..99 %", 100.0 * s)
        }),
        share.is_some_and(|s| s >= 0.8),
    )
}

/// The share of the quantiles 1 % … 99 % at which sorted `a` is at least
/// sorted `b`; `None` if either is empty.
pub fn quantile_share_above(a: &[f64], b: &[f64]) -> Option<f64> {
    let mut above = 0usize;
    for k in 1..=99 {
        let p = k as f64 / 100.0;
        if pct(a, p)? >= pct(b, p)? {
            above += 1;
        }
    }
    Some(above as f64 / 99.0)
}

/// The `p`-quantile (0…1, nearest rank) of `sorted`.
pub fn pct(sorted: &[f64], p: f64) -> Option<f64> {
    metrics::percentile(sorted, p)
}

/// Mean FCT (s) of the completed flows of at least `min_pkts` packets.
pub fn mean_fct_from(r: &RunResult, min_pkts: u64) -> Option<f64> {
    mean_fct_in(r, min_pkts, u64::MAX).0
}

/// Mean FCT (s) of the completed flows of `lo..hi` packets, and how many
/// there were.
pub fn mean_fct_in(r: &RunResult, lo: u64, hi: u64) -> (Option<f64>, usize) {
    let v = fcts_in(r, lo, hi);
    (metrics::mean(&v), v.len())
}

/// FCTs (s) of the completed flows of `lo..hi` packets, in flow order.
pub fn fcts_in(r: &RunResult, lo: u64, hi: u64) -> Vec<f64> {
    r.flows
        .iter()
        .filter(|f| f.size_pkts.is_some_and(|s| s >= lo && s < hi))
        .filter_map(|f| f.fct())
        .map(to_secs)
        .collect()
}

/// Mean of a series over bins ending in `(from, to]`.
pub fn mean_in(r: &RunResult, metric: Metric, entity: &str, from: f64, to: f64) -> Option<f64> {
    r.series.mean_between(metric, entity, from, to)
}

/// Mean throughput (bit/s) of the given flows' bins ending in `(from, to]`.
pub fn flows_rate(r: &RunResult, ids: &[u32], from: f64, to: f64) -> Option<f64> {
    let v: Vec<f64> = ids
        .iter()
        .flat_map(|id| {
            r.series
                .points(Metric::ThroughputBps, &format!("flow:{id}"))
        })
        .filter(|&(t, _)| t > from + 1e-9 && t <= to + 1e-9)
        .map(|p| p.1)
        .collect();
    metrics::mean(&v)
}

/// Per group: kind, flows, completed, mean FCT overall and in three size
/// ranges, mean slowdown.
pub fn group_fct(r: &RunResult) -> Value {
    let mut m = serde_json::Map::new();
    for (gi, g) in r.scenario.groups.iter().enumerate() {
        let flows: Vec<_> = r.flows.iter().filter(|f| f.group == gi).collect();
        let fct = |lo: u64, hi: u64| {
            let v: Vec<f64> = flows
                .iter()
                .filter(|f| f.size_pkts.is_some_and(|s| s >= lo && s < hi))
                .filter_map(|f| f.fct())
                .map(to_secs)
                .collect();
            metrics::mean(&v)
        };
        let slow: Vec<f64> = flows
            .iter()
            .filter_map(|f| metrics::slowdown(f, r.scenario.packet_bytes, r.rho))
            .collect();
        m.insert(
            g.name.clone(),
            json!({
                "kind": g.kind.label(),
                "flows": flows.len(),
                "completed": flows.iter().filter(|f| f.end.is_some()).count(),
                "mean_fct_s": fct(0, u64::MAX),
                "mean_fct_s_1_to_9_pkts": fct(1, 10),
                "mean_fct_s_10_to_99_pkts": fct(10, 100),
                "mean_fct_s_100_plus_pkts": fct(100, u64::MAX),
                "mean_slowdown": metrics::mean(&slow),
            }),
        );
    }
    Value::Object(m)
}

/// The result of variant `name`, if it ran.
pub fn find<'a>(results: &'a [(&str, RunResult)], name: &str) -> Option<&'a RunResult> {
    results.iter().find(|(n, _)| *n == name).map(|(_, r)| r)
}

/// One series as a plot curve, values multiplied by `scale`.
pub fn series_curve(r: &RunResult, label: &str, metric: Metric, entity: &str, scale: f64) -> Curve {
    Curve {
        label: label.to_string(),
        points: r
            .series
            .points(metric, entity)
            .into_iter()
            .map(|(t, v)| (t, v * scale))
            .collect(),
    }
}

/// Mean FCT by flow size of the flows of group `group` (none if no group
/// has that name), as a curve.
pub fn fct_curve(r: &RunResult, label: &str, group: &str) -> Curve {
    let gi = r.scenario.groups.iter().position(|g| g.name == group);
    Curve {
        label: label.to_string(),
        points: plot::fct_by_size(r.flows.iter().filter(|f| Some(f.group) == gi)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_share_counts_where_ka_is_ahead() {
        let b: Vec<f64> = (1..=100).map(f64::from).collect();
        // Everywhere above, everywhere below, and above from the median up.
        let up: Vec<f64> = b.iter().map(|x| x + 0.5).collect();
        let down: Vec<f64> = b.iter().map(|x| x - 0.5).collect();
        let cross: Vec<f64> = b
            .iter()
            .map(|x| if *x > 50.0 { x + 1.0 } else { x - 1.0 })
            .collect();
        assert_eq!(quantile_share_above(&up, &b), Some(1.0));
        assert_eq!(quantile_share_above(&down, &b), Some(0.0));
        let s = quantile_share_above(&cross, &b).unwrap();
        assert!((s - 49.0 / 99.0).abs() < 0.02, "{s}");
        assert!(fig10_quantiles_claim(&up, &b).pass);
        assert!(!fig10_quantiles_claim(&cross, &b).pass);
        assert_eq!(quantile_share_above(&[], &b), None);
    }

    #[test]
    fn registry_names_are_unique_and_found() {
        let all = experiments();
        for (i, e) in all.iter().enumerate() {
            assert!(
                all[..i].iter().all(|o| o.name() != e.name()),
                "{}",
                e.name()
            );
            assert_eq!(find_experiment(e.name()).map(|f| f.name()), Ok(e.name()));
            assert!(!e.variants().is_empty());
            for (v, text) in e.variants() {
                let mut s = scenario(text, None, Some(1.0))
                    .unwrap_or_else(|err| panic!("{}/{v}: {err}", e.name()));
                e.prepare(v, &mut s);
                assert_eq!(s.name, e.name(), "{}/{v}", e.name());
            }
        }
        let err = find_experiment("fig6").map(|e| e.name()).unwrap_err();
        assert!(err.contains("fig2") && err.contains("fig7"), "{err}");
    }
}

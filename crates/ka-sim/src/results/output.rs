//! Writing a run's results: `flows.csv`, `series.csv`, `summary.json` and
//! `scenario.toml` (the scenario as run).
//!
//! Everything is formatted deterministically (integers, exact nanosecond
//! times, values with at most 6 decimals), so two runs of the same scenario
//! and seed produce byte-identical files — except the wall-clock fields of
//! `summary.json` (`wall_seconds`, `speedup`, `events_per_second`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::results::RunResult;
use crate::results::metrics::{self, Metric, fmt_secs, fmt_val};
use crate::scenario::PortKind;

/// The exact header of `flows.csv`.
pub const FLOWS_HEADER: &str =
    "flow,kind,size_pkts,size_bytes,start_s,end_s,fct_s,slowdown,ka_time_frac";
/// The exact header of `series.csv`.
pub const SERIES_HEADER: &str = "time_s,metric,entity,value";
/// Keys of `summary.json` that depend on the wall clock.
pub const WALL_CLOCK_KEYS: [&str; 3] = ["wall_seconds", "speedup", "events_per_second"];

/// Per-kind flow statistics.
#[derive(Debug, Clone, Serialize)]
pub struct KindSummary {
    /// Flows started.
    pub flows: usize,
    /// Flows completed.
    pub completed: usize,
    /// Mean FCT of completed flows, s.
    pub mean_fct_s: Option<f64>,
    /// Median FCT, s.
    pub median_fct_s: Option<f64>,
    /// 99th-percentile FCT, s.
    pub p99_fct_s: Option<f64>,
    /// Mean slowdown (FCT / FCT_PS).
    pub mean_slowdown: Option<f64>,
    /// Median slowdown.
    pub median_slowdown: Option<f64>,
    /// Mean fraction of lifetime in KA mode.
    pub mean_ka_time_frac: Option<f64>,
}

/// Per-hop statistics.
#[derive(Debug, Clone, Serialize)]
pub struct HopSummary {
    /// Hop name.
    pub name: String,
    /// Forward capacity, bit/s.
    pub capacity_bps: u64,
    /// Forward signalling.
    pub port: &'static str,
    /// Mean utilisation over all bins.
    pub mean_utilization: Option<f64>,
    /// Mean of the per-bin queue maxima, packets.
    pub mean_queue_pkts: Option<f64>,
    /// Largest queue seen, packets.
    pub max_queue_pkts: Option<f64>,
    /// Forward queue discipline.
    pub qdisc: &'static str,
    /// Drops at the forward port's hard limit (drop-tail: queue full).
    pub drops: u64,
    /// Early (AQM) drops at the forward port.
    pub aqm_drops: u64,
    /// CE marks at the forward port.
    pub ecn_marks: u64,
    /// Mean queueing delay at the forward port, ms (packets dequeued).
    pub mean_sojourn_ms: Option<f64>,
    /// Drop-tail drops at the reverse port.
    pub reverse_drops: u64,
    /// Packets the forward port split.
    pub fragments_made: u64,
    /// Forward port mode changes.
    pub mode_changes: u64,
    /// Fraction of bins ending in KA mode (KA ports only).
    pub ka_mode_frac: Option<f64>,
    /// Packets (pieces) the forward port sent.
    pub packets_out: u64,
    /// Receive-window modulation at the hop's far router, if any
    /// ([`crate::results::rwmstats::stats_json`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwm: Option<serde_json::Value>,
    /// What the hop's impairment stages did (DESIGN §3.10), per direction:
    /// `{ "forward": { "lost", "duplicated", "corrupted", "reordered" },
    /// "reverse": … }`; left out when neither direction did anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impair: Option<serde_json::Value>,
}

/// [`HopSummary::impair`]: `None` when neither port's impairment stage
/// counted anything.
fn impair_json(
    forward: &ka_router::Counters,
    reverse: &ka_router::Counters,
) -> Option<serde_json::Value> {
    let one = |c: &ka_router::Counters| {
        serde_json::json!({
            "lost": c.drops_impair,
            "duplicated": c.duplicated,
            "corrupted": c.corrupted,
            "reordered": c.reordered,
        })
    };
    let any =
        |c: &ka_router::Counters| c.drops_impair + c.duplicated + c.corrupted + c.reordered > 0;
    (any(forward) || any(reverse))
        .then(|| serde_json::json!({ "forward": one(forward), "reverse": one(reverse) }))
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Variant label.
    pub variant: String,
    /// Seed.
    pub seed: u64,
    /// Simulated seconds.
    pub simulated_seconds: f64,
    /// Wall-clock seconds (not deterministic).
    pub wall_seconds: f64,
    /// Simulated / wall seconds (not deterministic).
    pub speedup: f64,
    /// Events per wall second (not deterministic).
    pub events_per_second: f64,
    /// Events processed.
    pub events: u64,
    /// Packets put on links.
    pub packet_transmissions: u64,
    /// Stale (lazily cancelled) timer entries among `events`.
    pub stale_timers: u64,
    /// Timer entries that fired before the node was due (re-armed).
    pub early_timers: u64,
    /// Largest event-heap size.
    pub max_heap: u64,
    /// Engine timer stalls (0 in a healthy run).
    pub timer_stalls: u64,
    /// Unroutable packets (0 in a healthy run).
    pub unroutable: u64,
    /// ρ used for slowdowns.
    pub rho: f64,
    /// Where ρ came from.
    pub rho_source: String,
    /// Flows started.
    pub flows: usize,
    /// Flows completed.
    pub flows_completed: usize,
    /// Flow statistics by kind (`ka`, `rcp`, `tcp-newreno`, `tcp-cubic`,
    /// `tcp-bbr`, `xcp`, `xcp-rate`, `pcc`, ...).
    pub by_kind: BTreeMap<String, KindSummary>,
    /// Flow statistics by group name.
    pub by_group: BTreeMap<String, KindSummary>,
    /// Per hop.
    pub hops: Vec<HopSummary>,
    /// Scenario-specific headline numbers.
    pub headline: serde_json::Value,
}

fn kind_summary<'a>(
    flows: impl Iterator<Item = &'a crate::model::world::FlowRecord>,
    r: &RunResult,
) -> KindSummary {
    let end = crate::engine::secs(r.sim_seconds);
    let flows: Vec<_> = flows.collect();
    let fcts: Vec<f64> = flows
        .iter()
        .filter(|f| f.size_pkts.is_some())
        .filter_map(|f| f.fct())
        .map(crate::engine::to_secs)
        .collect();
    let slow: Vec<f64> = flows
        .iter()
        .filter_map(|f| metrics::slowdown(f, r.scenario.packet_bytes, r.rho))
        .collect();
    let ka: Vec<f64> = flows
        .iter()
        .map(|f| metrics::ka_time_frac(f, end))
        .collect();
    KindSummary {
        flows: flows.len(),
        completed: flows.iter().filter(|f| f.end.is_some()).count(),
        mean_fct_s: metrics::mean(&fcts),
        median_fct_s: metrics::median(&fcts),
        p99_fct_s: metrics::percentile(&fcts, 0.99),
        mean_slowdown: metrics::mean(&slow),
        median_slowdown: metrics::median(&slow),
        mean_ka_time_frac: metrics::mean(&ka),
    }
}

/// Builds the summary with the given headline numbers.
pub fn summary(r: &RunResult, headline: serde_json::Value) -> Summary {
    let mut by_kind = BTreeMap::new();
    let mut kinds: Vec<_> = r.flows.iter().map(|f| f.kind).collect();
    kinds.sort_by_key(|k| k.label());
    kinds.dedup();
    for k in kinds {
        by_kind.insert(
            k.label().to_string(),
            kind_summary(r.flows.iter().filter(|f| f.kind == k), r),
        );
    }
    let mut by_group = BTreeMap::new();
    for (gi, g) in r.scenario.groups.iter().enumerate() {
        by_group.insert(
            g.name.clone(),
            kind_summary(r.flows.iter().filter(|f| f.group == gi), r),
        );
    }
    let hops = r
        .hops
        .iter()
        .map(|h| {
            let util: Vec<f64> = r
                .series
                .points(Metric::Utilization, &format!("link:{}", h.name))
                .into_iter()
                .map(|p| p.1)
                .collect();
            let q: Vec<f64> = r
                .series
                .points(Metric::QueuePkts, &format!("port:{}", h.name))
                .into_iter()
                .map(|p| p.1)
                .collect();
            HopSummary {
                name: h.name.clone(),
                capacity_bps: h.capacity_bps,
                port: port_label(h.port),
                mean_utilization: metrics::mean(&util),
                mean_queue_pkts: metrics::mean(&q),
                max_queue_pkts: q.iter().copied().reduce(f64::max),
                qdisc: h.qdisc,
                drops: h.forward.drops_queue,
                aqm_drops: h.forward.drops_aqm,
                ecn_marks: h.forward.ecn_marks,
                mean_sojourn_ms: h.sojourn.mean_s().map(|s| s * 1e3),
                reverse_drops: h.reverse.drops_queue,
                fragments_made: h.forward.fragments_made,
                mode_changes: h.forward.mode_changes,
                ka_mode_frac: (h.port == PortKind::Ka).then_some(h.ka_mode_frac),
                packets_out: h.forward.packets_out,
                rwm: h.rwm.as_ref().map(crate::results::rwmstats::stats_json),
                impair: impair_json(&h.forward, &h.reverse),
            }
        })
        .collect();
    let wall = r.wall_seconds.max(1e-9);
    Summary {
        scenario: r.scenario.name.clone(),
        variant: r.scenario.variant.clone(),
        seed: r.scenario.seed,
        simulated_seconds: r.sim_seconds,
        wall_seconds: r.wall_seconds,
        speedup: r.sim_seconds / wall,
        events_per_second: r.engine.events as f64 / wall,
        events: r.engine.events,
        packet_transmissions: r.engine.transmissions,
        stale_timers: r.engine.stale_timers,
        early_timers: r.engine.early_timers,
        max_heap: r.engine.max_heap,
        timer_stalls: r.engine.timer_stalls,
        unroutable: r.unroutable,
        rho: r.rho,
        rho_source: r.rho_source.to_string(),
        flows: r.flows.len(),
        flows_completed: r.flows.iter().filter(|f| f.end.is_some()).count(),
        by_kind,
        by_group,
        hops,
        headline,
    }
}

/// The label of a port kind.
pub fn port_label(k: PortKind) -> &'static str {
    match k {
        PortKind::Ka => "ka",
        PortKind::Rcp => "rcp",
        PortKind::Droptail => "droptail",
        PortKind::Xcp => "xcp",
    }
}

/// `flows.csv` as a string.
pub fn flows_csv(r: &RunResult) -> String {
    let end = crate::engine::secs(r.sim_seconds);
    let mut s = String::with_capacity(64 * (r.flows.len() + 1));
    s.push_str(FLOWS_HEADER);
    s.push('\n');
    for f in &r.flows {
        let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            f.id,
            f.kind.label(),
            opt(f.size_pkts),
            opt(f.size_bytes),
            fmt_secs(f.start),
            f.end.map(fmt_secs).unwrap_or_default(),
            f.fct().map(fmt_secs).unwrap_or_default(),
            metrics::slowdown(f, r.scenario.packet_bytes, r.rho)
                .map(fmt_val)
                .unwrap_or_default(),
            fmt_val(metrics::ka_time_frac(f, end)),
        );
    }
    s
}

/// `series.csv` as a string.
pub fn series_csv(r: &RunResult) -> String {
    let mut s = String::with_capacity(40 * (r.series.rows.len() + 1));
    s.push_str(SERIES_HEADER);
    s.push('\n');
    for row in &r.series.rows {
        let entity = r
            .series
            .entities
            .get(row.entity as usize)
            .map(String::as_str)
            .unwrap_or("");
        let _ = writeln!(
            s,
            "{},{},{},{}",
            fmt_secs(row.t),
            row.metric.name(),
            entity,
            fmt_val(row.value)
        );
    }
    s
}

/// Writes `flows.csv`, `series.csv`, `summary.json` and `scenario.toml`
/// into `dir` (created if needed). Returns the summary.
pub fn write_run(dir: &Path, r: &RunResult, headline: serde_json::Value) -> io::Result<Summary> {
    fs::create_dir_all(dir).map_err(|e| with_path(dir, e))?;
    write_file(&dir.join("flows.csv"), flows_csv(r))?;
    write_file(&dir.join("series.csv"), series_csv(r))?;
    let sum = summary(r, headline);
    let json = serde_json::to_string_pretty(&sum).map_err(io::Error::other)?;
    write_file(&dir.join("summary.json"), json + "\n")?;
    write_file(&dir.join("scenario.toml"), r.scenario.to_toml())?;
    Ok(sum)
}

/// `fs::write`, with the path in the error ("File exists (os error 17)"
/// alone does not say which).
pub fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    fs::write(path, contents).map_err(|e| with_path(path, e))
}

/// `e` with `path` in front of its message, same kind.
pub fn with_path(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

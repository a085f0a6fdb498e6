//! What a run produces and how it is reported: the run's result
//! ([`RunResult`]), the time-binned series and per-flow metrics
//! ([`metrics`]), the receive-window modulation counters ([`rwmstats`]),
//! the output files ([`output`]: `flows.csv`, `series.csv`,
//! `summary.json`), the SVG plots ([`plot`]) and the whole result
//! directory ([`report`]).

pub mod metrics;
pub mod output;
pub mod plot;
pub mod report;
pub mod rwmstats;

use ka_router::Counters;

use crate::engine::EngineStats;
use crate::model::world::FlowRecord;
use crate::scenario::{PortKind, Scenario, Workload};
use metrics::Series;

/// The results of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The scenario as run.
    pub scenario: Scenario,
    /// Every flow, by id.
    pub flows: Vec<FlowRecord>,
    /// The time series.
    pub series: Series,
    /// Per hop: name, forward capacity, signalling, forward and reverse
    /// port counters, fraction of bins in KA mode.
    pub hops: Vec<HopResult>,
    /// Engine counters.
    pub engine: EngineStats,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Wall-clock seconds the run took (the only non-deterministic output).
    pub wall_seconds: f64,
    /// ρ used for `FCT_PS`.
    pub rho: f64,
    /// Where ρ came from: "scenario", "poisson" or "measured".
    pub rho_source: &'static str,
    /// Packets routers could not route (0 in a correct topology).
    pub unroutable: u64,
}

/// Per-hop results.
#[derive(Debug, Clone)]
pub struct HopResult {
    /// Hop name.
    pub name: String,
    /// Forward capacity, bit/s.
    pub capacity_bps: u64,
    /// Forward signalling.
    pub port: PortKind,
    /// The forward port's queue discipline ("droptail", "red", "fq-codel").
    pub qdisc: &'static str,
    /// Queueing delays at the forward port over the whole run.
    pub sojourn: ka_router::SojournHistogram,
    /// Forward port counters at the end.
    pub forward: Counters,
    /// Reverse port counters at the end.
    pub reverse: Counters,
    /// Fraction of bins that ended with the forward port in KA mode.
    pub ka_mode_frac: f64,
    /// Counters of the receive-window modulation on the hop's far router.
    pub rwm: Option<ka_router::rwm::RwmStats>,
}

/// ρ for `FCT_PS` (see [`Scenario::rho`]).
pub fn offered_load(scenario: &Scenario, flows: &[FlowRecord]) -> (f64, &'static str) {
    if let Some(r) = scenario.rho {
        return (r, "scenario");
    }
    let sized: Vec<&Workload> = scenario
        .groups
        .iter()
        .map(|g| &g.workload)
        .filter(|w| !matches!(w, Workload::LongLived { .. }))
        .collect();
    if let Some(Workload::Poisson { load, .. }) = sized.first()
        && sized
            .iter()
            .all(|w| matches!(w, Workload::Poisson { load: l, .. } if l == load))
    {
        return (*load, "poisson");
    }
    let Some(first) = flows.iter().find(|f| f.size_pkts.is_some()) else {
        return (0.0, "measured");
    };
    let cap = first.path.bottleneck_bps.max(1) as f64;
    let bytes: f64 = flows
        .iter()
        .filter_map(|f| f.size_pkts)
        .map(|p| (p * scenario.packet_bytes as u64) as f64)
        .sum();
    let rho = bytes * 8.0 / (cap * scenario.duration_s);
    (rho.clamp(0.0, 0.99), "measured")
}

//! `ka-trace` (ka-router's capture analyser) writes `flows.csv` and
//! `series.csv` with ka-sim's columns, so the same plotting works on a
//! capture and on a simulation; the metric names both have mean the same.

use ka_sim::results::output::{FLOWS_HEADER, SERIES_HEADER};

#[test]
fn ka_trace_writes_ka_sims_columns() {
    assert_eq!(ka_router::trace::output::FLOWS_HEADER, FLOWS_HEADER);
    assert_eq!(ka_router::trace::output::SERIES_HEADER, SERIES_HEADER);
}

#[test]
fn shared_metric_names_match() {
    use ka_sim::results::metrics::Metric;
    let sim: Vec<&str> = [
        Metric::ThroughputBps,
        Metric::RateBps,
        Metric::KaMode,
        Metric::WireBps,
    ]
    .iter()
    .map(|m| m.name())
    .collect();
    for name in sim {
        assert!(
            ka_router::trace::output::METRICS.contains(&name),
            "{name} missing from ka-trace's series"
        );
    }
}

//! Time-parallel runs (`ka_sim::run::segment`): the stitched result of a
//! Poisson scenario cut into segments is deterministic, covers the run
//! once, and its first segment is exactly the beginning of the ordinary
//! run (same seed, causal simulator).

use ka_sim::engine::to_secs;
use ka_sim::results::metrics::Metric;
use ka_sim::run::run_scenario;
use ka_sim::run::segment::{Segments, run_segmented};
use ka_sim::scenario::Scenario;

const TEXT: &str = r#"
name = "segments"
duration_s = 60.0

[topology]
kind = "dumbbell"
capacity_mbps = 20.0
rtt_ms = 40.0
port = "droptail"

[[group]]
name = "tcp"
kind = "tcp-newreno"
count = 8
[group.workload]
type = "poisson"
load = 0.5
sizes = { min_pkts = 1, max_pkts = 200, shape = 1.2, mean_pkts = 10 }
"#;

#[test]
fn segments_stitch_into_one_run() {
    let s = Scenario::from_toml(TEXT).unwrap();
    let seg = Segments {
        count: 2,
        warmup_s: 5.0,
        drain_s: 5.0,
    };
    let a = run_segmented(&s, &seg, None).unwrap();
    let b = run_segmented(&s, &seg, None).unwrap();
    assert_eq!(
        ka_sim::results::output::flows_csv(&a),
        ka_sim::results::output::flows_csv(&b)
    );
    assert_eq!(
        ka_sim::results::output::series_csv(&a),
        ka_sim::results::output::series_csv(&b)
    );
    // Shares: 25 s and 30 s; segment 0 keeps [0, 30) global, segment 1
    // [30, 60) (its local [5, 35) shifted by 25 s).
    let boundary = 30.0;
    assert!(a.flows.len() > 500, "{} flows", a.flows.len());
    for (i, f) in a.flows.iter().enumerate() {
        assert_eq!(f.id as usize, i);
        assert!(to_secs(f.start) < 60.0);
    }
    assert!(a.flows.windows(2).all(|w| w[0].start <= w[1].start));
    let later = a
        .flows
        .iter()
        .filter(|f| to_secs(f.start) >= boundary)
        .count();
    assert!(later > 200, "{later} flows after the boundary");
    // Every utilisation bin once, (0, 60] in 0.1 s steps.
    let util = a.series.points(Metric::Utilization, "link:bottleneck");
    assert_eq!(util.len(), 600);
    assert!(
        util.windows(2)
            .all(|w| (w[1].0 - w[0].0 - 0.1).abs() < 1e-6)
    );
    // Segment 0 is the ordinary run's beginning: the same flows, with the
    // same completion times where they completed before it ended (35 s).
    let plain = run_scenario(&s, None).unwrap();
    let mut compared = 0;
    for f in a.flows.iter().filter(|f| to_secs(f.start) < boundary) {
        let g = plain
            .flows
            .iter()
            .find(|g| g.start == f.start && g.sender == f.sender)
            .expect("the same flow in the ordinary run");
        assert_eq!(g.size_pkts, f.size_pkts);
        if f.end.is_some_and(|e| to_secs(e) < 35.0) {
            assert_eq!(g.end, f.end);
            compared += 1;
        }
    }
    assert!(compared > 300, "{compared}");
    // Counters are sums over the segments (more than the kept flows need).
    assert!(a.engine.events > 0 && a.hops[0].forward.packets_out > 0);
}

#[test]
fn tracked_flows_cannot_be_segmented() {
    let s = Scenario::from_toml(&TEXT.replace("count = 8", "count = 8\ntrack = 1")).unwrap();
    let seg = Segments {
        count: 2,
        warmup_s: 5.0,
        drain_s: 5.0,
    };
    assert!(run_segmented(&s, &seg, None).is_err());
}

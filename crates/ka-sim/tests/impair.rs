//! The router's impairment stage (DESIGN §3.10) on a simulated hop: the
//! scenario's `impair` table reaches the hop's port, its losses,
//! duplicates and reorderings are counted, the run repeats exactly, and
//! TCP still delivers.

use ka_sim::results::metrics::Metric;
use ka_sim::results::output;
use ka_sim::scenario::Scenario;
use ka_sim::{RunResult, run_scenario};

/// A 20 Mbit/s, 20 ms hop with the keys `impair` and one CUBIC flow.
fn text(impair: &str) -> String {
    format!(
        r#"
name = "impair"
duration_s = 4.0

[topology]
kind = "line"
[[topology.hops]]
name = "lossy"
capacity_mbps = 20.0
delay_ms = 20.0
queue_pkts = 200
port = "droptail"
{impair}

[[group]]
name = "cubic"
kind = "tcp-cubic"
count = 1
track = 1
[group.workload]
type = "long-lived"
"#
    )
}

fn scenario(impair: &str) -> Scenario {
    Scenario::from_toml(&text(impair)).unwrap()
}

fn run(impair: &str) -> RunResult {
    run_scenario(&scenario(impair), None).unwrap()
}

#[test]
fn impairments_reach_the_hop_and_repeat_exactly() {
    let lossy = r#"impair = { loss = "1%", duplicate = "1%", jitter = "2ms" }"#;
    let a = run(lossy);
    let f = &a.hops[0].forward;
    assert!(f.drops_impair > 0, "{f:?}");
    assert!(f.duplicated > 0, "{f:?}");
    assert!(f.reordered > 0, "{f:?}");
    let lost = f.drops_impair as f64 / (f.packets_out + f.drops_impair - f.duplicated) as f64;
    assert!((0.003..0.03).contains(&lost), "loss {lost}");
    // The reverse port has none.
    let r = &a.hops[0].reverse;
    assert_eq!((r.drops_impair, r.duplicated, r.reordered), (0, 0, 0));
    // CUBIC still moves data through 1 % loss.
    let thr = a
        .series
        .mean_between(Metric::ThroughputBps, "flow:0", 1.0, 4.0)
        .unwrap();
    assert!(thr > 1e6, "goodput {thr}");
    // Same scenario, same seed: the same run.
    let b = run(lossy);
    assert_eq!(output::flows_csv(&a), output::flows_csv(&b));
    assert_eq!(output::series_csv(&a), output::series_csv(&b));
    assert_eq!(a.hops[0].forward, b.hops[0].forward);
    // Off: nothing counted, and another run than the lossy one.
    let off = run("");
    let f = &off.hops[0].forward;
    assert_eq!((f.drops_impair, f.duplicated, f.reordered), (0, 0, 0));
    assert_ne!(output::series_csv(&off), output::series_csv(&a));
}

#[test]
fn bad_impairments_are_refused() {
    for (bad, why) in [
        ("impair = { loss = 1.5 }", "loss"),
        ("impair = { loss = \"101%\" }", "at most 100%"),
        ("reverse_impair = { corrupt = -0.1 }", "corrupt"),
        ("impair = { jitter = \"21ms\" }", "jitter"),
        ("impair = { lost = 0.1 }", "lost"),
    ] {
        let e = Scenario::from_toml(&text(bad)).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
    // In range: a written scenario reads back the same.
    let s = scenario("impair = { loss = 0.01, jitter = \"20ms\", reorder = \"5%\", seed = 3 }");
    assert_eq!(Scenario::from_toml(&s.to_toml()).unwrap(), s);
}

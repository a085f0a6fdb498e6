//! BBR flows (ka-endpoint's BBR v1, plain TCP without KA, flow kind
//! `tcp-bbr`) on a drop-tail dumbbell: utilisation with a short queue
//! alone, and coexistence with CUBIC.

use ka_sim::results::metrics::Metric;
use ka_sim::scenario::Scenario;
use ka_sim::{RunResult, run_scenario};

mod support;
use support::{ScenarioToml, long_lived};

/// Bottleneck capacity of these tests, bit/s.
const C: f64 = 20e6;

/// Goodput share of a full packet (1448 of 1500 bytes).
const PAYLOAD: f64 = 1448.0 / 1500.0;

/// The bottleneck's drop-tail buffer, packets (1.5 BDP at 20 Mbit/s and
/// 40 ms).
const BUFFER: usize = 100;

fn run(text: &str) -> RunResult {
    run_scenario(&Scenario::from_toml(text).unwrap(), None).unwrap()
}

fn mean(r: &RunResult, metric: Metric, entity: &str, from: f64, to: f64) -> f64 {
    r.series.mean_between(metric, entity, from, to).unwrap()
}

/// One long-lived flow of `kind` alone on the dumbbell for 20 s.
fn alone(kind: &str) -> RunResult {
    let text = ScenarioToml::new(kind, 20.0)
        .dumbbell(C / 1e6, 40.0, BUFFER, "droptail")
        .group(kind, kind, 1, 1, &long_lived(""))
        .text();
    run(&text)
}

#[test]
fn one_bbr_flow_fills_the_link_with_a_short_queue() {
    let r = alone("tcp-bbr");
    assert_eq!(r.flows[0].kind.label(), "tcp-bbr");
    let goodput = mean(&r, Metric::ThroughputBps, "flow:0", 2.0, 20.0);
    let q = mean(&r, Metric::QueuePkts, "port:bottleneck", 2.0, 20.0);
    let fwd = r.hops[0].forward;
    let loss = fwd.drops_queue as f64 / fwd.packets_in as f64;
    eprintln!(
        "tcp-bbr alone: goodput {:.2} Mbit/s ({:.1} % of C·payload), mean queue {q:.1} packets, loss {:.3} %",
        goodput / 1e6,
        100.0 * goodput / (C * PAYLOAD),
        100.0 * loss
    );
    assert!(goodput >= 0.9 * C * PAYLOAD, "goodput {goodput}");
    // BBR's signature: the queue stays far below the buffer a loss-based
    // controller fills.
    assert!(q < 0.25 * BUFFER as f64, "mean queue {q} packets");
    assert!(loss < 0.01, "loss {loss}");
    // CUBIC on the same path keeps a standing queue several times longer.
    let cubic = alone("tcp-cubic");
    let cq = mean(&cubic, Metric::QueuePkts, "port:bottleneck", 2.0, 20.0);
    eprintln!("tcp-cubic alone: mean queue {cq:.1} packets");
    assert!(q < 0.5 * cq, "bbr queue {q} vs cubic {cq}");
}

#[test]
fn bbr_and_cubic_both_get_goodput() {
    let text = ScenarioToml::new("bbr-cubic", 40.0)
        .dumbbell(C / 1e6, 40.0, BUFFER, "droptail")
        .group("bbr", "tcp-bbr", 1, 1, &long_lived(""))
        .group("cubic", "tcp-cubic", 1, 1, &long_lived(""))
        .text();
    let r = run(&text);
    let bbr = mean(&r, Metric::ThroughputBps, "flow:0", 10.0, 40.0);
    let cubic = mean(&r, Metric::ThroughputBps, "flow:1", 10.0, 40.0);
    eprintln!(
        "tcp-bbr vs tcp-cubic: {:.2} and {:.2} Mbit/s",
        bbr / 1e6,
        cubic / 1e6
    );
    assert!(bbr + cubic >= 0.9 * C * PAYLOAD, "together {}", bbr + cubic);
    // No fairness claim: only that neither starves.
    assert!(bbr.min(cubic) >= 0.1 * C * PAYLOAD, "{bbr} vs {cubic}");
}

/// Delay jitter in both directions (±3 ms on a 6 ms path, as the
/// real-network impairment test uses) puts `RTprop` near zero. With a
/// fixed three-segment allowance over `2 · BtlBw · RTprop` the window
/// collapsed to the minimum and BBR ran at 7 Mbit/s of 1 Gbit/s; with
/// Linux's rate-scaled quantization budget and ACK-aggregation allowance
/// (DESIGN §6.4.1) it keeps a window the path can use.
#[test]
fn bbr_keeps_its_window_through_delay_jitter_in_both_directions() {
    let mut text = ScenarioToml::new("bbr-jitter", 4.0)
        .dumbbell(1000.0, 6.0, 1000, "droptail")
        .group("bbr", "tcp-bbr", 1, 1, &long_lived(""))
        .text();
    text = text.replace(
        "port = \"droptail\"",
        "port = \"droptail\"\nimpair = { jitter = \"3ms\" }\nreverse_impair = { jitter = \"3ms\" }",
    );
    assert!(text.contains("reverse_impair"), "{text}");
    let r = run(&text);
    let goodput = mean(&r, Metric::ThroughputBps, "flow:0", 1.0, 4.0);
    eprintln!(
        "tcp-bbr through ±3 ms both ways: {:.1} Mbit/s",
        goodput / 1e6
    );
    assert!(goodput >= 100e6, "goodput {goodput}");
}

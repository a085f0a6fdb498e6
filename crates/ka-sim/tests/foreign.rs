//! "Never worse than TCP" (DESIGN §3.6.1): one KA flow against one legacy
//! flow (CUBIC, BBR, NewReno) through a KA port, compared with a CUBIC flow
//! in the KA flow's place against the same competitor. 20 Mbit/s, 20 ms;
//! the first flow from 0 s, the competitor from 5 s; goodputs over the
//! overlap (5–40 s, the window of the table in DESIGN §3.6.1).
//!
//! The reference swings with the window: over 5–30 s the CUBIC flow gets
//! 8.6 Mbit/s against BBR's 10.2, over 5–40 s 11.2 against 7.7, while KA
//! and BBR split the link evenly in both. So the bounds below hold for
//! this scenario and window; they are a regression check, not a law.

use ka_sim::results::metrics::Metric;
use ka_sim::scenario::Scenario;
use ka_sim::{RunResult, run_scenario};

/// Simulated seconds.
const END: f64 = 40.0;
/// The competitor's start, s.
const JOIN: f64 = 5.0;

fn scenario(first: &str, competitor: &str, queue: usize, df_hint: bool) -> String {
    format!(
        r#"
name = "foreign-{first}-vs-{competitor}"
seed = 1
duration_s = {END}

[tcp]
hystart = true

[router]
mode.df_hint = {df_hint}

[topology]
kind = "dumbbell"
capacity_mbps = 20.0
rtt_ms = 20.0
queue_pkts = {queue}
port = "ka"

[[group]]
name = "first"
kind = "{first}"
count = 1
track = 1
[group.workload]
type = "long-lived"

[[group]]
name = "competitor"
kind = "{competitor}"
count = 1
track = 1
[group.workload]
type = "long-lived"
start_s = {JOIN}
"#
    )
}

/// Goodputs (bit/s) of the first flow and the competitor over the overlap.
fn goodputs(first: &str, competitor: &str, queue: usize, df_hint: bool) -> (f64, f64) {
    let text = scenario(first, competitor, queue, df_hint);
    let r: RunResult = run_scenario(&Scenario::from_toml(&text).unwrap(), None).unwrap();
    let g = |e: &str| {
        r.series
            .mean_between(Metric::ThroughputBps, e, JOIN, END)
            .unwrap()
    };
    (g("flow:0"), g("flow:1"))
}

/// With a 100-packet buffer the KA flow gets at least 0.8 of what a CUBIC
/// flow gets in its place against every competitor; the competitor gets at
/// least 0.9 of what it gets against that CUBIC flow, or of its fair half
/// of the link where it takes more than half from CUBIC, against BBR and
/// CUBIC, and 0.81 against NewReno (with RACK in the endpoint the KA flow,
/// in TCP mode a NewReno flow that no longer takes reordering for loss,
/// holds 12.9 Mbit/s where a CUBIC flow holds 11.3; DESIGN §3.6.1). BBR v1
/// with Linux's quantization budget and ACK-aggregation allowance takes
/// two-thirds of this link from a CUBIC flow (13.2 against 6.0 Mbit/s)
/// and half from a KA flow (9.2 against 10.1): the KA flow does not give
/// up its fair share to match CUBIC's loss.
#[test]
fn ka_keeps_a_tcp_share_against_one_legacy_flow() {
    let fair_half = 20e6 * 1448.0 / 1500.0 / 2.0;
    for (competitor, competitor_floor) in
        [("tcp-bbr", 0.9), ("tcp-newreno", 0.8), ("tcp-cubic", 0.9)]
    {
        let (ka, against_ka) = goodputs("ka", competitor, 100, true);
        let (cubic, against_cubic) = goodputs("tcp-cubic", competitor, 100, true);
        eprintln!(
            "{competitor}: KA {:.2} vs {:.2}; CUBIC {:.2} vs {:.2} Mbit/s",
            ka / 1e6,
            against_ka / 1e6,
            cubic / 1e6,
            against_cubic / 1e6
        );
        assert!(ka >= 0.8 * cubic, "{competitor}: KA {ka}, CUBIC {cubic}");
        assert!(
            against_ka >= competitor_floor * against_cubic.min(fair_half),
            "{competitor}: {against_ka} against KA, {against_cubic} against CUBIC"
        );
    }
}

/// BBR keeps the queue short, so only behaviour tells it apart. Without
/// DF hints, in a deep buffer, the floor holds the KA flow at C/2 until
/// contention mode (DESIGN §3.6.3) makes it a TCP flow, which then takes
/// what a CUBIC flow in its place takes, and BBR keeps what it keeps
/// beside CUBIC (before the judge: KA 0.17, BBR 18.4 Mbit/s; with the
/// floor alone an even split, KA 0.8 of CUBIC's).
#[test]
fn bbr_without_df_gets_what_it_gets_beside_cubic() {
    let (ka, bbr) = goodputs("ka", "tcp-bbr", 1000, false);
    let (cubic, bbr_ref) = goodputs("tcp-cubic", "tcp-bbr", 1000, false);
    eprintln!(
        "KA {:.2}, BBR {:.2} | CUBIC {:.2}, BBR {:.2} Mbit/s",
        ka / 1e6,
        bbr / 1e6,
        cubic / 1e6,
        bbr_ref / 1e6
    );
    assert!(ka >= 0.8 * cubic, "KA {ka}, CUBIC in its place {cubic}");
    assert!(
        bbr >= 0.9 * bbr_ref,
        "BBR {bbr} beside KA, {bbr_ref} beside CUBIC"
    );
}

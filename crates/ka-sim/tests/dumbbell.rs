//! End-to-end runs on the real router and endpoint cores: small dumbbells
//! where the right answer is known.

use ka_sim::results::metrics::Metric;
use ka_sim::scenario::Scenario;
use ka_sim::{RunResult, run_scenario};

mod support;
use support::{ScenarioToml, long_lived, on_off};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap()
}

fn run(text: &str) -> RunResult {
    run_scenario(&scenario(text), None).unwrap()
}

/// Mean of a flow's throughput over bins ending in (from, to].
fn rate(r: &RunResult, flow: u32, from: f64, to: f64) -> f64 {
    r.series
        .mean_between(Metric::ThroughputBps, &format!("flow:{flow}"), from, to)
        .unwrap()
}

const PAYLOAD: f64 = 1448.0 / 1500.0;

/// The goodput (bit/s) of a flow paced at the largest KA rate code that
/// does not exceed `bps`: KA signals `decode(encode(R))` (encoding never
/// over-states, DESIGN §2.1), up to 6.25 % below R.
fn quantized_goodput(bps: f64) -> f64 {
    let code = ka_codec::scale::encode(bps / 8000.0).unwrap();
    ka_codec::scale::decode(code) * 8000.0 * PAYLOAD
}

#[test]
fn one_ka_flow_reaches_capacity_within_a_few_rtts() {
    // R₀ = C (initial_frac = 1): the first signal already carries C, so the
    // flow must be paced at C right after it. 20 Mbit/s, RTT 40 ms.
    let r = run(&ScenarioToml::new("one-flow", 1.5)
        .set("bin_s = 0.04")
        .dumbbell(20.0, 40.0, 100, "ka")
        .router("rcp.initial_frac = 1.0")
        .group("ka", "ka", 1, 1, &long_lived(""))
        .text());
    // C = 2500 B/ms encodes as L = 672, R(672) = 2369 B/ms (94.8 % of C).
    let c = quantized_goodput(20e6);
    assert!(c > 0.93 * 20e6 * PAYLOAD && c < 20e6 * PAYLOAD);
    // Handshake (1 RTT) + first signalled data (1 RTT) + pacing: by the
    // 5th RTT (0.2 s) the flow runs at C and stays there.
    let thr = r.series.points(Metric::ThroughputBps, "flow:0");
    let first_full = thr
        .iter()
        .position(|&(_, v)| v > 0.95 * c)
        .expect("flow never reached C");
    assert!(
        thr[first_full].0 <= 0.2 + 1e-9,
        "reached C only at {} s",
        thr[first_full].0
    );
    // Steady state: the router's ceiling is one code above C (ka-router's
    // deviation from DESIGN §3.5), so a lone flow dithers between the codes
    // below and above C: at least the code below, at most C less the
    // 20-byte header each split adds.
    let late = rate(&r, 0, 0.5, 1.5);
    let split_cap = 20e6 * 1448.0 / 1520.0;
    assert!(
        late >= 0.99 * c && late <= 1.01 * split_cap,
        "steady rate {late} vs quantized C {c} and C {split_cap}"
    );
    assert_eq!(r.flows[0].kind.label(), "ka");
    assert!(r.flows[0].ka_mode, "the flow should end in KA mode");
    assert_eq!(r.hops[0].forward.drops_queue, 0);
}

#[test]
fn one_ka_flow_with_paper_defaults_converges_to_capacity() {
    // Default R₀ = 5 % of C: R follows dR/dt ≈ R·α(C − R)/(C·d), a logistic
    // curve with time constant d/α = 1 s (d = 100 ms until indicators pull
    // it down), so 5 % → 95 % of C takes about 6 s.
    let r = run(&ScenarioToml::new("one-flow-default", 10.0)
        .dumbbell(20.0, 40.0, 100, "ka")
        .group("ka", "ka", 1, 1, &long_lived(""))
        .text());
    let c = quantized_goodput(20e6);
    assert!(
        rate(&r, 0, 0.2, 0.4) < 0.2 * c,
        "R₀ = 5 % of C: the start is slow"
    );
    let late = rate(&r, 0, 8.0, 10.0);
    assert!(
        (late - c).abs() < 0.02 * c,
        "rate after 8 s: {late} vs quantized C {c}"
    );
}

#[test]
fn n_ka_flows_share_within_five_percent() {
    let r = run(&ScenarioToml::new("share", 8.0)
        .dumbbell(40.0, 40.0, 200, "ka")
        .group("ka", "ka", 4, 4, &long_lived("stagger_s = 0.5"))
        .text());
    let rates: Vec<f64> = (0..4).map(|f| rate(&r, f, 5.0, 8.0)).collect();
    let mean = rates.iter().sum::<f64>() / 4.0;
    for (i, &x) in rates.iter().enumerate() {
        assert!(
            (x - mean).abs() < 0.05 * mean,
            "flow {i}: {x} vs mean {mean} ({rates:?})"
        );
    }
    let total: f64 = rates.iter().sum();
    assert!(total > 0.93 * 40e6 * PAYLOAD, "total {total}");
    let util = r
        .series
        .mean_between(Metric::Utilization, "link:bottleneck", 5.0, 8.0)
        .unwrap();
    assert!(util > 0.95 && util <= 1.0 + 1e-9, "utilization {util}");
    // Paced at the signalled rate: the queue stays small.
    let q = r
        .series
        .mean_between(Metric::QueuePkts, "port:bottleneck", 5.0, 8.0)
        .unwrap();
    assert!(q < 20.0, "mean queue {q}");
}

/// Light load: six on-off KA senders and six on-off TCP senders.
fn on_off_mix() -> String {
    let sizes = on_off(0.3, [1.0, 400.0], 1.8, 40.0);
    ScenarioToml::new("light", 10.0)
        .dumbbell(50.0, 40.0, 200, "ka")
        .group("ka", "ka", 6, 0, &sizes)
        .group("tcp", "tcp-newreno", 6, 0, &sizes)
        .text()
}

#[test]
fn sized_flows_complete_and_ka_beats_tcp_on_large_flows() {
    let r = run(&on_off_mix());
    assert!(r.flows.len() > 50, "{} flows", r.flows.len());
    let done: Vec<_> = r.flows.iter().filter(|f| f.end.is_some()).collect();
    assert!(
        done.len() + 12 >= r.flows.len(),
        "only {} of {} done",
        done.len(),
        r.flows.len()
    );
    for f in &done {
        // Never faster than the handshake plus one-way delay.
        assert!(
            f.fct().unwrap() >= 60_000_000,
            "flow {} fct {:?}",
            f.id,
            f.fct()
        );
        assert_eq!(f.received, f.size_bytes.unwrap());
    }
    // Flows of ≥ 40 packets need several slow-start rounds in TCP; KA is
    // paced at the signalled rate after one RTT — once RCP has raised R
    // from R₀ = 5 % of C (a few seconds at this light load).
    let mean_fct = |kind: &str| {
        let v: Vec<f64> = done
            .iter()
            .filter(|f| f.kind.label() == kind && f.size_pkts.unwrap() >= 40)
            .filter(|f| f.start > 4_000_000_000)
            .map(|f| f.fct().unwrap() as f64 / 1e9)
            .collect();
        assert!(v.len() >= 5, "{kind}: {} big flows", v.len());
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (ka, tcp) = (mean_fct("ka"), mean_fct("tcp-newreno"));
    assert!(ka < tcp, "KA {ka} s vs TCP {tcp} s");
    // KA flows spend time in KA mode, TCP flows never.
    let frac = |kind: &str| {
        r.flows
            .iter()
            .filter(|f| f.kind.label() == kind && f.end.is_some())
            .map(|f| ka_sim::results::metrics::ka_time_frac(f, 10_000_000_000))
            .sum::<f64>()
    };
    assert!(frac("ka") > 0.0);
    assert_eq!(frac("tcp-newreno"), 0.0);
}

#[test]
fn runs_are_byte_identical_files() {
    let s = scenario(&on_off_mix());
    let base = std::env::temp_dir().join(format!("ka-sim-det-{}", std::process::id()));
    let mut outs = Vec::new();
    for i in 0..2 {
        let dir = base.join(i.to_string());
        let r = run_scenario(&s, None).unwrap();
        ka_sim::results::report::write_all(&dir, &r, serde_json::json!({})).unwrap();
        outs.push(dir);
    }
    let mut names: Vec<_> = std::fs::read_dir(&outs[0])
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in names {
        let a = std::fs::read(outs[0].join(&name)).unwrap();
        let b = std::fs::read(outs[1].join(&name)).unwrap();
        if name == "summary.json" {
            let strip = |bytes: &[u8]| {
                let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
                for k in ka_sim::results::output::WALL_CLOCK_KEYS {
                    v.as_object_mut().unwrap().remove(k);
                }
                v
            };
            assert_eq!(strip(&a), strip(&b));
        } else {
            assert!(a == b, "{name:?} differs between two runs");
        }
    }
    let flows = std::fs::read_to_string(outs[0].join("flows.csv")).unwrap();
    assert_eq!(
        flows.lines().next().unwrap(),
        "flow,kind,size_pkts,size_bytes,start_s,end_s,fct_s,slowdown,ka_time_frac"
    );
    let series = std::fs::read_to_string(outs[0].join("series.csv")).unwrap();
    assert_eq!(series.lines().next().unwrap(), "time_s,metric,entity,value");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_different_seed_gives_different_flows() {
    let mut s = scenario(&on_off_mix());
    s.duration_s = 2.0;
    let a = run_scenario(&s, None).unwrap();
    s.seed = 2;
    let b = run_scenario(&s, None).unwrap();
    let sizes = |r: &RunResult| r.flows.iter().map(|f| f.size_pkts).collect::<Vec<_>>();
    assert_ne!(sizes(&a), sizes(&b));
}

#[test]
fn long_lived_epochs_start_and_stop_on_time() {
    let epochs = "start_s = 0.5\nstagger_s = 0.1\non_s = 0.5\nperiod_s = 1.0\nrepeat = 2";
    let r = run(&ScenarioToml::new("epochs", 3.0)
        .dumbbell(20.0, 20.0, 100, "droptail")
        .group("tcp", "tcp-cubic", 2, 2, &long_lived(epochs))
        .text());
    let starts: Vec<u64> = r.flows.iter().map(|f| f.start).collect();
    assert_eq!(
        starts,
        vec![500_000_000, 600_000_000, 1_500_000_000, 1_600_000_000]
    );
    let stops: Vec<Option<u64>> = r.flows.iter().map(|f| f.stop).collect();
    assert_eq!(
        stops,
        vec![
            Some(1_000_000_000),
            Some(1_100_000_000),
            Some(2_000_000_000),
            Some(2_100_000_000)
        ]
    );
    assert!(r.flows.iter().all(|f| f.kind.label() == "tcp-cubic"));
    // The first host's flows start on an empty link. (The second host's SYN
    // may be lost in the first one's slow-start overshoot and then waits
    // for the 1 s initial RTO, longer than its 0.5 s on-time.)
    assert!(r.flows[0].received > 0 && r.flows[2].received > 0);
    // Nothing is sent after the last stop (plus what was in flight).
    let late = r
        .series
        .mean_between(Metric::Utilization, "link:bottleneck", 2.3, 3.0)
        .unwrap();
    assert_eq!(late, 0.0);
}

#[test]
fn ka_router_switches_to_tcp_mode_while_tcp_cross_traffic_lasts() {
    // Paper Fig. 5 in miniature: KA flows alone, then with TCP flows that
    // ignore the signal and fill the queue, then alone again.
    let r = run(&ScenarioToml::new("mini-fig5", 16.0)
        .dumbbell(20.0, 40.0, 100, "ka")
        .router("rcp.initial_frac = 0.1")
        .group("ka", "ka", 8, 8, &long_lived("stagger_s = 0.2"))
        .group(
            "tcp",
            "tcp-newreno",
            8,
            0,
            &long_lived("start_s = 6.0\non_s = 4.0"),
        )
        .text());
    let mode = |a: f64, b: f64| {
        r.series
            .mean_between(Metric::KaMode, "port:bottleneck", a, b)
            .unwrap()
    };
    assert!(mode(4.0, 6.0) > 0.99, "KA epoch before: {}", mode(4.0, 6.0));
    assert!(mode(7.0, 10.0) < 0.5, "TCP epoch: {}", mode(7.0, 10.0));
    assert!(
        mode(13.0, 16.0) > 0.99,
        "KA epoch after: {}",
        mode(13.0, 16.0)
    );
    // The KA flow follows: KA mode alone, TCP mode with cross traffic.
    let flow = |a: f64, b: f64| {
        r.series
            .mean_between(Metric::KaMode, "flow:0", a, b)
            .unwrap()
    };
    assert!(flow(4.0, 6.0) > 0.9 && flow(7.5, 10.0) < 0.5 && flow(13.0, 16.0) > 0.9);
    // Alone again, the KA flows get the fair share back: 20/8 Mbit/s,
    // less code quantisation and RCP's queue term (a standing queue of a
    // few paced packets keeps R a few per cent below C/N).
    let alone = rate(&r, 0, 13.0, 16.0);
    assert!(alone > 0.8 * 2.5e6 * PAYLOAD && alone < 2.5e6, "{alone}");
    let rates: Vec<f64> = (0..8).map(|f| rate(&r, f, 13.0, 16.0)).collect();
    let jain = ka_sim::results::metrics::jain(&rates).unwrap();
    assert!(jain > 0.99, "{rates:?}");
}

/// Native RCP (DESIGN §7.1) knows its rate from the SYN-ACK, KA one RTT
/// later (from the echo of its first data): for flows a little larger than
/// KA's initial window the two differ by about one RTT, RCP finishing in
/// about 1.5 RTT.
#[test]
fn native_rcp_is_one_rtt_ahead_of_ka() {
    let text = |port: &str, kind: &str| {
        ScenarioToml::new("rcp-vs-ka", 6.0)
            .dumbbell(20.0, 40.0, 100, port)
            .router("rcp.initial_frac = 1.0")
            .group("g", kind, 2, 0, &on_off(0.2, [12.0, 40.0], 1.8, 20.0))
            .text()
    };
    let mean = |r: &RunResult| {
        let v: Vec<f64> = r
            .flows
            .iter()
            .filter_map(|f| f.fct())
            .map(|t| t as f64 / 1e9)
            .collect();
        assert!(v.len() > 20, "{} flows", v.len());
        v.iter().sum::<f64>() / v.len() as f64
    };
    let rcp = run(&text("rcp", "rcp"));
    let ka = run(&text("ka", "ka"));
    assert!(rcp.flows.iter().all(|f| f.kind.label() == "rcp"));
    assert!(
        rcp.hops[0].forward.rcp_options_lowered > 200,
        "{:?}",
        rcp.hops[0].forward
    );
    let (r, k) = (mean(&rcp), mean(&ka));
    assert!(r < 1.5 * 0.04 + 0.02, "RCP {r} s");
    let gap = k - r;
    assert!(
        gap > 0.7 * 0.04 && gap < 1.3 * 0.04,
        "KA {k} s vs RCP {r} s"
    );
}

//! Receive-window modulation in the simulator (DESIGN §5.2): the real
//! `ka_router::rwm::Rwm` on the receivers' router of a dumbbell, with the
//! RTT taken from the simulated handshakes, against four CUBIC bulk flows.

use ka_sim::scenario::Scenario;
use ka_sim::{RunResult, run_scenario};

/// Four CUBIC transfers of `pkts` packets each through a 50 Mbit/s, 20 ms
/// dumbbell with a 1000-packet drop-tail queue and 64 MiB endpoint
/// buffers; `rwm` is the hop's `rwm` table (or nothing).
fn run(rwm: Option<&str>, pkts: u64) -> RunResult {
    let rwm = rwm.map_or(String::new(), |t| format!("rwm = {t}\n"));
    let text = format!(
        r#"
name = "rwm-test"
duration_s = 30.0

[tcp]
buffer_bytes = 67108864

[topology]
kind = "dumbbell"
capacity_mbps = 50.0
rtt_ms = 20.0
queue_pkts = 1000
port = "droptail"
{rwm}
[[group]]
name = "cubic"
kind = "tcp-cubic"
count = 4
[group.workload]
type = "long-lived"
size_pkts = {pkts}
"#
    );
    run_scenario(&Scenario::from_toml(&text).unwrap(), None).unwrap()
}

fn goodputs(r: &RunResult) -> Vec<f64> {
    r.flows
        .iter()
        .map(|f| {
            let fct = f.fct().expect("flow did not finish") as f64 / 1e9;
            f.size_bytes.unwrap() as f64 * 8.0 / fct
        })
        .collect()
}

fn jain(v: &[f64]) -> f64 {
    let s: f64 = v.iter().sum();
    s * s / (v.len() as f64 * v.iter().map(|x| x * x).sum::<f64>())
}

/// Without RWM, CUBIC fills the queue; with it, the queue stays within a
/// couple of milliseconds, the flows share evenly and fill the link, and
/// the windows each flow is held to are C·RTT/4 (seed Eq. 1).
#[test]
fn rwm_keeps_cubic_out_of_the_queue() {
    let pkts = 4000; // 5.8 MB each: 4 s at 12.5 Mbit/s
    let plain = run(None, pkts);
    let with = run(Some("{ delta = 0.0 }"), pkts);
    let sojourn = |r: &RunResult| r.hops[0].sojourn.mean_s().unwrap() * 1e3;
    let (q_plain, q_with) = (sojourn(&plain), sojourn(&with));
    let g = goodputs(&with);
    let sum: f64 = g.iter().sum();
    eprintln!(
        "mean sojourn {q_plain:.2} ms without, {q_with:.2} ms with RWM; goodputs with {:?} \
         (sum {:.2} Mbit/s, Jain {:.4}); without {:?}; rwm {:?}",
        g.iter()
            .map(|x| (x / 1e4).round() / 100.0)
            .collect::<Vec<_>>(),
        sum / 1e6,
        jain(&g),
        goodputs(&plain)
            .iter()
            .map(|x| (x / 1e4).round() / 100.0)
            .collect::<Vec<_>>(),
        with.hops[0].rwm
    );
    assert!(plain.hops[0].rwm.is_none());
    assert!(q_plain > 40.0, "CUBIC alone queued only {q_plain:.2} ms");
    assert!(q_with < 2.0, "with RWM the queue averaged {q_with:.2} ms");
    assert!(jain(&g) >= 0.99, "Jain {:.4}", jain(&g));
    assert!(sum >= 0.9 * 50e6, "sum of goodputs {sum}");
    assert_eq!(
        with.hops[0].forward.drops_queue, 0,
        "RWM flows never overflow"
    );
    let s = with.hops[0].rwm.expect("rwm stats");
    // Untracked: only each connection's last ACK, after both FINs removed it.
    assert_eq!((s.handshakes, s.untracked, s.closed), (4, 4, 4));
    // The handshake RTT as the receivers' router sees it: SYN → SYN-ACK →
    // ACK, i.e. the 20 ms path plus serialisation (and, for the flows
    // whose ACK follows another flow's first window through the
    // bottleneck, that wait).
    let (lo, hi) = (
        s.handshake_rtt_min_ns as f64 / 1e6,
        s.handshake_rtt_max_ns as f64 / 1e6,
    );
    assert!(lo >= 20.0 && hi < 22.0, "handshake RTTs {lo}…{hi} ms");
    // Data travels forward, ACKs reverse: the ACKs' windows get rewritten.
    assert!(s.windows_rewritten[1] > 1000, "{:?}", s.windows_rewritten);
}

/// δ = −50 % halves the windows: the flows then fill only about half the
/// link (the cap, not the congestion control, sets their rate) and never
/// queue. Each flow's cap, 15 625 bytes, is 7 units of the receivers'
/// 2 KiB window scale (64 MiB buffers: shift 11), so 14 336 bytes per
/// 20 ms: 4 · 5.7 Mbit/s ≈ 46 % of C at most.
#[test]
fn delta_sets_the_rate() {
    let r = run(Some("{ delta = -0.5 }"), 1500);
    let sum: f64 = goodputs(&r).iter().sum();
    assert!(
        (0.35 * 50e6..0.47 * 50e6).contains(&sum),
        "sum of goodputs {sum} with half-size windows"
    );
    let q = r.hops[0].sojourn.mean_s().unwrap() * 1e3;
    assert!(q < 0.5, "queue {q} ms below the capacity");
}

/// `rwm` on a `line` hop and the other new knobs round-trip through the
/// TOML the run writes out, and bad values are refused.
#[test]
fn scenario_knobs_round_trip() {
    let text = r#"
name = "rwm-line"
duration_s = 1.0
[tcp]
buffer_bytes = 8388608
[topology]
kind = "line"
[[topology.hops]]
name = "wan"
capacity_mbps = 100.0
delay_ms = 10.0
rwm = { classes = [{ name = "web", ports = [80, 443], share = 0.6 }], delta = 0.1 }
[[group]]
name = "g"
kind = "tcp-cubic"
count = 1
[group.workload]
type = "long-lived"
size_pkts = 10
"#;
    let s = Scenario::from_toml(text).unwrap();
    assert_eq!(Scenario::from_toml(&s.to_toml()).unwrap(), s);
    let hop = &s.topology.hops()[0];
    let c = hop.rwm.clone().unwrap().for_ports(100_000_000, 100_000_000);
    assert_eq!((c.classes[0].share, c.delta), (0.6, 0.1));
    for (from, to) in [
        ("share = 0.6", "share = 1.6"),
        ("delta = 0.1", "delta = -2.0"),
        ("buffer_bytes = 8388608", "buffer_bytes = 100"),
        ("size_pkts = 10", "size_pkts = 0"),
        // A CBR source has no size.
        ("kind = \"tcp-cubic\"", "kind = \"udp-cbr\"\ncbr_mbps = 1.0"),
    ] {
        let bad = text.replace(from, to);
        assert!(Scenario::from_toml(&bad).is_err(), "{to} accepted");
    }
    // ... and without size_pkts the UDP group is fine.
    let udp = text
        .replace("kind = \"tcp-cubic\"", "kind = \"udp-cbr\"\ncbr_mbps = 1.0")
        .replace("size_pkts = 10\n", "");
    assert!(Scenario::from_toml(&udp).is_ok());
}

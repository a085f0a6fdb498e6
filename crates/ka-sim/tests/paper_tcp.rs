//! The paper scenarios' TCP profile (the `[tcp]` table of
//! `scenarios/fig*.toml`) at connection start, where it must do what ns-3's
//! `TcpSocketBase` does (docs/RESULTS.md, "Paper TCP vs ns-3").

use ka_sim::run::run_scenario;
use ka_sim::scenario::{Scenario, TcpKnobs};

mod support;
use support::lone_tcp_flows_toml;

/// The `[tcp]` table of the paper's Fig. 3 TCP scenario.
fn paper_tcp() -> TcpKnobs {
    Scenario::from_toml(include_str!("../scenarios/fig3-tcp.toml"))
        .unwrap()
        .tcp
}

/// FCTs (s) of on-off TCP flows of exactly `packets` full packets each,
/// one sender alone on the paper's dumbbell (150 Mbit/s, RTT 100 ms), with
/// `tcp`.
fn lone_flow_fcts(packets: u32, tcp: TcpKnobs) -> Vec<f64> {
    let text = lone_tcp_flows_toml(packets);
    let mut s = Scenario::from_toml(&text).unwrap();
    s.tcp = tcp;
    let r = run_scenario(&s, None).unwrap();
    assert!(
        r.flows
            .iter()
            .all(|f| f.size_pkts == Some(u64::from(packets)))
    );
    let fcts: Vec<f64> = r
        .flows
        .iter()
        .filter_map(|f| f.fct())
        .map(|t| t as f64 / 1e9)
        .collect();
    assert!(!fcts.is_empty(), "no {packets}-packet flow completed");
    fcts
}

#[test]
fn paper_tcp_sends_two_segments_in_two_and_a_half_rtts() {
    // Handshake (1 RTT), segment 1 and its ACK (1 RTT), segment 2 (½ RTT):
    // ns-3 acknowledges the first data segment at once (TcpSocketBase
    // presets its delayed-ACK counter when the handshake completes), so
    // the sender's window of 1 opens after one RTT, not after the 200 ms
    // delayed-ACK timer. The slack is serialisation (< 0.5 ms).
    let fcts = lone_flow_fcts(2, paper_tcp());
    assert!(fcts.len() >= 5, "{} flows", fcts.len());
    for fct in &fcts {
        assert!((0.250..0.2505).contains(fct), "2-packet FCT {fct} s");
    }
    // Without the first quick ACK the same flows wait the timer.
    let mut waits = paper_tcp();
    waits.quick_ack_first_data = Some(false);
    for fct in lone_flow_fcts(2, waits) {
        assert!((0.450..0.4505).contains(&fct), "without: {fct} s");
    }
}

#[test]
fn paper_tcp_lone_flows_finish_when_ns3_newreno_does() {
    // FCTs of lone flows in ns-3.44 (TcpNewReno, the same settings and
    // dumbbell): `scripts/ns3-crosscheck.sh --lone`, recorded in
    // docs/RESULTS.md. They pin the connection start, slow start with
    // per-ACK growth and delayed ACKs, the crossing of ssthresh 65 535
    // (46 segments of 1448 bytes) and congestion avoidance. ns-3's
    // point-to-point links add a 2-byte PPP header per packet, so its
    // times are up to ~20 µs longer.
    let ns3 = [
        (1, 0.150113),
        (2, 0.250220),
        (3, 0.250301),
        (4, 0.350408),
        (10, 0.550704),
        (50, 0.852230),
        (100, 1.052846),
        (200, 1.254183),
        (500, 1.856513),
        (1000, 2.857191),
        (2000, 4.656970),
    ];
    for (packets, want) in ns3 {
        for fct in lone_flow_fcts(packets, paper_tcp()) {
            assert!(
                (fct - want).abs() < 1e-4,
                "{packets} packets: {fct} s, ns-3 {want} s"
            );
        }
    }
}

//! XCP flow kinds (`xcp`, `xcp-rate`, `xcp-rate-pure`, DESIGN §7.2) on the real endpoint
//! cores, end to end through the router's XCP stage (port kind `xcp`).
//!
//! The first test runs them through a drop-tail port (no XCP router), so
//! the feedback comes back as each sender asked it; it checks the plumbing:
//! the kinds parse and label their flows, flow sizes leave room for the
//! 16-byte option, every byte arrives, and no flow enters KA mode. The
//! second puts an XCP router in the path and checks XCP's allocation: the
//! flows share the link equally with a short queue, and the port lowered
//! the senders' requests. Negotiation and the option itself are tested on
//! the same cores in `ka-endpoint`'s `tests/xcp.rs`; the router stage on
//! its own in `ka-router`'s `tests/xcp_fluid.rs`.

use ka_sim::results::metrics::Metric;
use ka_sim::run::run_scenario;
use ka_sim::scenario::{FlowKind, Scenario};

mod support;
use support::{ScenarioToml, long_lived, on_off};

#[test]
fn xcp_flows_complete_without_ka() {
    let text = ScenarioToml::new("xcp-plumbing", 6.0)
        .dumbbell(20.0, 40.0, 1000, "droptail")
        .group("xcp", "xcp", 2, 0, &on_off(0.2, [5.0, 200.0], 1.5, 40.0))
        .group(
            "xcp-rate",
            "xcp-rate",
            2,
            0,
            &on_off(0.2, [5.0, 200.0], 1.5, 40.0),
        )
        .group(
            "xcp-rate-pure",
            "xcp-rate-pure",
            2,
            0,
            &on_off(0.2, [5.0, 200.0], 1.5, 40.0),
        )
        .text();
    let s = Scenario::from_toml(&text).unwrap();
    assert_eq!(s.groups[0].kind, FlowKind::Xcp);
    assert_eq!(s.groups[1].kind, FlowKind::XcpRate);
    let r = run_scenario(&s, None).unwrap();
    assert_eq!(s.groups[2].kind, FlowKind::XcpRatePure);
    for (kind, label) in [
        (FlowKind::Xcp, "xcp"),
        (FlowKind::XcpRate, "xcp-rate"),
        (FlowKind::XcpRatePure, "xcp-rate-pure"),
    ] {
        let flows: Vec<_> = r.flows.iter().filter(|f| f.kind == kind).collect();
        let done: Vec<_> = flows.iter().filter(|f| f.end.is_some()).collect();
        assert!(
            done.len() >= 10,
            "{label}: only {} flows finished",
            done.len()
        );
        for f in &done {
            assert_eq!(f.kind.label(), label);
            assert_eq!(Some(f.received), f.size_bytes, "{label} flow {}", f.id);
            assert_eq!(f.ka_time, 0, "an XCP flow does no KA");
            // Flow sizes count whole packets: the payload of a full
            // 1500-byte packet with the XCP option (1500 − 20 − 16 − 20 − 12).
            assert_eq!(f.size_bytes.unwrap() % 1432, 0);
        }
    }
}

/// Two window-based and two rate-based XCP flows through an XCP port
/// (20 Mbit/s, RTT 40 ms, BDP ≈ 67 packets; the second pair starts at 2 s):
/// from 6 s on every flow gets C/4 within 10 %, the link is used, the queue
/// stays a few packets, and nothing is dropped.
#[test]
fn xcp_router_shares_the_link_equally() {
    let text = ScenarioToml::new("xcp-router", 10.0)
        .dumbbell(20.0, 40.0, 10_000, "xcp")
        .router("xcp.alpha = 0.4\nxcp.beta = 0.226")
        .group("xcp", "xcp", 2, 2, &long_lived(""))
        .group("xcp-rate", "xcp-rate", 2, 2, &long_lived("start_s = 2.0"))
        .text();
    let s = Scenario::from_toml(&text).unwrap();
    let r = run_scenario(&s, None).unwrap();
    let hop = &r.hops[0];
    assert!(hop.forward.xcp_feedback_lowered > 1000, "{:?}", hop.forward);
    assert_eq!(hop.forward.drops_queue, 0);
    let fair = 20e6 / 4.0;
    for f in &r.flows {
        let rate = r
            .series
            .mean_between(Metric::WireBps, &format!("flow:{}", f.id), 6.0, 10.0)
            .unwrap();
        assert!(
            (rate - fair).abs() < 0.1 * fair,
            "flow {} ({}): {rate:.0} bit/s, fair {fair:.0}",
            f.id,
            f.kind.label()
        );
    }
    let util = r
        .series
        .mean_between(Metric::Utilization, "link:bottleneck", 6.0, 10.0)
        .unwrap();
    assert!(util > 0.95, "utilisation {util}");
    let queue = r
        .series
        .mean_between(Metric::QueuePkts, "port:bottleneck", 6.0, 10.0)
        .unwrap();
    assert!(queue < 10.0, "mean queue {queue} packets");
}

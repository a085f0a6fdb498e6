//! XCP flow kinds (`xcp`, `xcp-rate`, DESIGN §8.4) on the real endpoint
//! cores. The ports here are no XCP routers (that signalling stage does not
//! exist yet), so the feedback comes back as each sender asked it; what is
//! checked is the plumbing: the kinds parse and label their flows, flow
//! sizes leave room for the 16-byte option, every byte arrives, and no flow
//! enters KA mode. Negotiation and the option itself are tested on the same
//! cores in `ka-endpoint`'s `tests/xcp.rs`.

use ka_sim::scenario::{FlowKind, Scenario};
use ka_sim::sim::run_scenario;

mod support;
use support::{ScenarioToml, on_off};

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
        .text();
    let s = Scenario::from_toml(&text).unwrap();
    assert_eq!(s.groups[0].kind, FlowKind::Xcp);
    assert_eq!(s.groups[1].kind, FlowKind::XcpRate);
    let r = run_scenario(&s, None).unwrap();
    for (kind, label) in [(FlowKind::Xcp, "xcp"), (FlowKind::XcpRate, "xcp-rate")] {
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

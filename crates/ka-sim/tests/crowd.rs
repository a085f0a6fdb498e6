//! The flash-crowd worst case through the whole simulator (real endpoints, real
//! router ports, ACKs back through the router): 64 flows start within 10 ms
//! on an idle 150 Mbit/s link. With the crowd and the echo controllers the
//! queue stays short and nothing is dropped; with the paper's RCP the same
//! crowd fills the 1000-packet queue.

use ka_router::{ControllerKind, CrowdConfig, EchoConfig};
use ka_sim::results::metrics::Metric;
use ka_sim::run::run_scenario;
use ka_sim::scenario::Scenario;

/// (queue peak, drops) of the 64-flow crowd, 4.8 s (the crowd starts at
/// 4 s).
fn crowd(text: &str, controller: ControllerKind) -> (f64, u64) {
    let mut s = Scenario::from_toml(text).unwrap();
    s.duration_s = 4.8;
    s.router.controller = controller;
    let r = run_scenario(&s, None).unwrap();
    let peak = r
        .series
        .points(Metric::QueuePkts, "port:bottleneck")
        .into_iter()
        .fold(0.0, |m, p| f64::max(m, p.1));
    (peak, r.hops[0].forward.drops_queue)
}

#[test]
fn sixty_four_flows_in_ten_ms_stay_bounded_with_crowd_and_echo() {
    for text in [
        include_str!("../scenarios/fig3-crowd-64-ka.toml"),
        include_str!("../scenarios/fig3-crowd-64-rcp.toml"),
    ] {
        for c in [
            ControllerKind::Crowd(CrowdConfig::default()),
            ControllerKind::Echo(EchoConfig::default()),
        ] {
            let (peak, drops) = crowd(text, c);
            assert_eq!(drops, 0, "{c:?} {text}");
            assert!(peak <= 300.0, "{c:?}: peak {peak}");
        }
        let (peak, drops) = crowd(text, ControllerKind::Rcp);
        assert!(
            drops > 0 && peak >= 999.0,
            "RCP: peak {peak}, {drops} drops"
        );
    }
}

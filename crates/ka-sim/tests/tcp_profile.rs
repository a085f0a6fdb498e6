//! Named TCP profiles (`[tcp] profile`, a group's `tcp_profile`;
//! DESIGN §9.2): what they set, what overrides them, and what they do to a
//! lone flow.

use ka_endpoint::TcpConfig;
use ka_sim::run::run_scenario;
use ka_sim::scenario::{NS2_WINDOW_BYTES, Scenario, TcpKnobs, TcpProfile};

mod support;
use support::{ScenarioToml, lone_tcp_flows_toml, on_off};

/// `knobs` resolved (with a group profile `group`) and applied to a
/// default connection config.
fn config(knobs: &TcpKnobs, group: Option<TcpProfile>) -> TcpConfig {
    let mut t = TcpConfig::default();
    knobs.resolve(group).apply(&mut t);
    t
}

/// A 10 Mbit/s dumbbell with one NewReno on-off group, as TOML.
fn one_tcp_group() -> String {
    ScenarioToml::new("p", 1.0)
        .dumbbell(10.0, 100.0, 100, "droptail")
        .group(
            "tcp",
            "tcp-newreno",
            1,
            0,
            &on_off(0.5, [1.0, 10.0], 1.8, 3.0),
        )
        .text()
}

#[test]
fn modern_is_the_endpoint_defaults() {
    assert_eq!(TcpProfile::Modern.knobs(), TcpKnobs::default());
    let modern = TcpKnobs {
        profile: Some(TcpProfile::Modern),
        ..TcpKnobs::default()
    };
    let want = format!("{:?}", TcpConfig::default());
    assert_eq!(format!("{:?}", config(&modern, None)), want);
    assert_eq!(format!("{:?}", config(&TcpKnobs::default(), None)), want);
    // No profile anywhere: the knobs are returned as they are.
    let some = TcpKnobs {
        min_rto_ms: Some(300.0),
        ..TcpKnobs::default()
    };
    assert_eq!(some.resolve(None), some);
}

#[test]
fn tail_loss_probes_are_a_knob_off_by_default() {
    assert!(!TcpConfig::default().tlp, "the paper's ns-3 TCP has none");
    let on = TcpKnobs {
        tlp: Some(true),
        ..TcpKnobs::default()
    };
    assert!(config(&on, None).tlp);
    let text = one_tcp_group().replace("[topology]", "[tcp]\ntlp = true\n\n[topology]");
    let s = Scenario::from_toml(&text).unwrap();
    assert_eq!(s.tcp.tlp, Some(true));
    // unset, it is not written back (scenario.toml of old runs unchanged)
    assert!(
        !toml::to_string(&TcpKnobs::default())
            .unwrap()
            .contains("tlp")
    );
}

#[test]
fn ns3_18_sets_the_old_defaults() {
    let t = config(
        &TcpKnobs {
            profile: Some(TcpProfile::Ns3_18),
            ..TcpKnobs::default()
        },
        None,
    );
    assert_eq!(t.initial_window_segments, 1);
    assert_eq!(t.initial_ssthresh, Some(65_535));
    assert_eq!(t.delayed_ack, Some(std::time::Duration::from_millis(200)));
    assert_eq!(t.min_rto, std::time::Duration::from_millis(200));
    assert!(!t.sack && !t.timestamps && !t.window_scale && !t.byte_counting);
    assert!(t.quick_ack_first_data && !t.window_update_on_read);
    assert_eq!((t.send_buffer, t.recv_buffer), (131_072, 131_072));
}

#[test]
fn explicit_knobs_override_and_group_profile_replaces() {
    let text = one_tcp_group()
        .replace(
            "[topology]",
            "[tcp]\nprofile = \"ns3-18\"\nmin_rto_ms = 1000.0\n\n[topology]",
        )
        .replace("count = 1\n", "count = 1\ntcp_profile = \"ns2\"\n");
    let s = Scenario::from_toml(&text).unwrap();
    assert_eq!(s.tcp.profile, Some(TcpProfile::Ns3_18));
    assert_eq!(s.groups[0].tcp_profile, Some(TcpProfile::Ns2));
    // Scenario-wide: ns3-18 with the explicit min RTO.
    let t = config(&s.tcp, None);
    assert_eq!(t.min_rto, std::time::Duration::from_secs(1));
    assert_eq!(t.initial_window_segments, 1);
    // The group's profile replaces the scenario's; the explicit knob stays.
    let g = config(&s.tcp, s.groups[0].tcp_profile);
    assert_eq!(g.min_rto, std::time::Duration::from_secs(1));
    assert_eq!(g.initial_window_segments, 2);
    assert_eq!(g.recv_buffer, NS2_WINDOW_BYTES);
    assert_eq!(g.delayed_ack, None);
    // The profile survives the round trip through scenario.toml.
    let back = Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    assert!(Scenario::from_toml(&text.replace("\"ns2\"", "\"ns-2\"")).is_err());
}

/// FCTs (s) and sizes (bytes) of on-off flows of exactly `packets` full
/// packets, one TCP sender alone on a 150 Mbit/s, 100 ms dumbbell, its
/// group on `profile`.
fn lone_flows(packets: u32, profile: &str) -> Vec<(f64, u64)> {
    let text = lone_tcp_flows_toml(packets).replace(
        "count = 1\n",
        &format!("count = 1\ntcp_profile = \"{profile}\"\n"),
    );
    let s = Scenario::from_toml(&text).unwrap();
    let r = run_scenario(&s, None).unwrap();
    let v: Vec<(f64, u64)> = r
        .flows
        .iter()
        .filter_map(|f| Some((f.fct()? as f64 / 1e9, f.size_bytes?)))
        .collect();
    assert!(v.len() >= 3, "{profile}: {} flows", v.len());
    v
}

#[test]
fn ns3_18_lone_flow_without_timestamps() {
    // Without timestamps a 1500-byte packet carries 1460 bytes, and a flow
    // of N packets is N of them. Two segments take 2.5 RTT as in ns-3: the
    // first data segment is acknowledged at once.
    for (fct, bytes) in lone_flows(2, "ns3-18") {
        assert_eq!(bytes, 2 * 1460);
        assert!((0.250..0.2505).contains(&fct), "2-packet FCT {fct} s");
    }
}

#[test]
fn ns2_window_caps_a_lone_flow() {
    // 100 packets of 1460 bytes through a 20 000-byte window (13 segments)
    // from an initial window of 2 without delayed ACKs: after the
    // handshake (1 RTT), rounds of 2, 4, 8, then 13 segments: 10 rounds,
    // the last starting 1 + 9 RTT in and arriving half an RTT later
    // (10.5 RTT, plus serialisation). The modern profile (IW10, byte
    // counting) needs about half of that.
    let ns2: Vec<f64> = lone_flows(100, "ns2").iter().map(|v| v.0).collect();
    let modern: Vec<f64> = lone_flows(100, "modern").iter().map(|v| v.0).collect();
    for fct in &ns2 {
        assert!((1.05..1.06).contains(fct), "ns2 100-packet FCT {fct} s");
    }
    for fct in &modern {
        assert!(*fct < 0.6, "modern 100-packet FCT {fct} s");
    }
}

#[test]
fn mss_knob_sets_the_segment_not_the_flow_size() {
    let with = |mss: usize| {
        ScenarioToml::new("m", 12.0)
            .dumbbell(150.0, 100.0, 1000, "droptail")
            .group(
                "tcp",
                "tcp-newreno",
                1,
                0,
                &on_off(0.5, [20.0, 20.4], 1.8, 20.1),
            )
            .text()
            .replace(
                "[topology]",
                &format!("[tcp]\nprofile = \"ns3-18\"\nmss_bytes = {mss}\n\n[topology]"),
            )
    };
    assert!(Scenario::from_toml(&with(1461)).is_err());
    assert!(Scenario::from_toml(&with(87)).is_err());
    let s = Scenario::from_toml(&with(536)).unwrap();
    assert_eq!(config(&s.tcp, None).mtu, 576);
    // The same 20-packet flows (20 × 1460 bytes) take longer in 536-byte
    // segments: 55 of them instead of 20, from the same one-segment start.
    let r = run_scenario(&s, None).unwrap();
    let small: Vec<(f64, u64)> = r
        .flows
        .iter()
        .filter_map(|f| Some((f.fct()? as f64 / 1e9, f.size_bytes?)))
        .collect();
    let full = lone_flows(20, "ns3-18");
    assert!(!small.is_empty());
    for (fct, bytes) in &small {
        assert_eq!(*bytes, 20 * 1460);
        assert!(
            *fct > full[0].0 + 0.15,
            "536-byte segments {fct} s vs {}",
            full[0].0
        );
    }
}

//! Scenario parsing and validation tests.

use super::*;
use ka_router::qdisc::{FqCodelConfig, QdiscConfig, RedConfig};

const FIG3: &str = r#"
name = "fig3"
variant = "ka"
duration_s = 60.0

[topology]
kind = "dumbbell"
capacity_mbps = 150.0
rtt_ms = 100.0
port = "ka"

[[group]]
name = "ka"
kind = "ka"
count = 32
[group.workload]
type = "on-off"
off_mean_s = 0.5
sizes = { min_pkts = 1, max_pkts = 2000, shape = 1.8, mean_pkts = 100 }
"#;

#[test]
fn parses_with_defaults() {
    let s = Scenario::from_toml(FIG3).unwrap();
    assert_eq!(s.seed, 1);
    assert_eq!(s.bin_s, 0.1);
    assert_eq!(s.packet_bytes, 1500);
    let hops = s.topology.hops();
    assert_eq!(hops.len(), 1);
    assert_eq!(hops[0].name, "bottleneck");
    assert_eq!(hops[0].delay_ms, 50.0);
    assert_eq!(hops[0].queue_pkts, 1000);
    assert_eq!(hops[0].reverse_port, PortKind::Droptail);
    assert_eq!(s.groups[0].kind, FlowKind::Ka);
    assert!(matches!(s.groups[0].workload, Workload::OnOff { .. }));
    // Round trip through TOML.
    let again = Scenario::from_toml(&s.to_toml()).unwrap();
    assert_eq!(again, s);
}

#[test]
fn rejects_unknown_fields_and_bad_values() {
    let typo = FIG3.replace("count = 32", "count = 32\ncuont = 1");
    assert!(matches!(
        Scenario::from_toml(&typo),
        Err(ScenarioError::Parse(_))
    ));
    let typo = FIG3.replace("rtt_ms = 100.0", "rtt_ms = 100.0\nrtt = 3");
    assert!(Scenario::from_toml(&typo).is_err());
    let bad = FIG3.replace("duration_s = 60.0", "duration_s = -1.0");
    assert!(matches!(
        Scenario::from_toml(&bad),
        Err(ScenarioError::Invalid(_))
    ));
    // Numbers that used to run as something else: a NaN or negative RTT
    // as 0 ms, a huge duration clamped, a huge count allocated until the
    // process died.
    for (from, to) in [
        ("rtt_ms = 100.0", "rtt_ms = nan"),
        ("rtt_ms = 100.0", "rtt_ms = -5.0"),
        ("count = 32", "count = 32\nrtt_ms = [-5.0, 10.0]"),
        ("count = 32", "count = 32\nrtt_ms = nan"),
        ("duration_s = 60.0", "duration_s = 1e15"),
        ("count = 32", "count = 1000000000"),
    ] {
        assert!(FIG3.contains(from), "{from}");
        let bad = FIG3.replace(from, to);
        let e = Scenario::from_toml(&bad).unwrap_err();
        assert!(matches!(e, ScenarioError::Invalid(_)), "{to}: {e}");
    }
    let bad = FIG3.replace("mean_pkts = 100", "mean_pkts = 5000");
    assert!(Scenario::from_toml(&bad).is_err());
    let bad = FIG3.replace("count = 32", "count = 32\nfrom = 1");
    assert!(Scenario::from_toml(&bad).is_err());
}

#[test]
fn kinds_and_topologies() {
    let t = FIG3
        .replace("kind = \"ka\"\ncount", "kind = \"tcp\"\ncount")
        .replace(
            "kind = \"dumbbell\"",
            "kind = \"ka-legacy\"\nka_delay_ms = 5.0",
        )
        .replace("port = \"ka\"\n", "");
    let s = Scenario::from_toml(&t).unwrap();
    assert_eq!(s.groups[0].kind, FlowKind::TcpNewReno);
    let pcc = Scenario::from_toml(&FIG3.replace("kind = \"ka\"\ncount", "kind = \"pcc\"\ncount"))
        .unwrap();
    assert_eq!(pcc.groups[0].kind, FlowKind::Pcc);
    assert_eq!(FlowKind::Pcc.label(), "pcc");
    let hops = s.topology.hops();
    assert_eq!(hops.len(), 2);
    assert_eq!((hops[0].name.as_str(), hops[0].delay_ms), ("ka", 5.0));
    assert_eq!((hops[1].port, hops[1].delay_ms), (PortKind::Droptail, 45.0));
    let p = Topology::ParkingLot(ParkingLot {
        bottlenecks: 5,
        capacity_mbps: 100.0,
        rtt_ms: 100.0,
        queue_pkts: 100,
        port: PortKind::Ka,
        queue: QdiscConfig::DropTail,
        access: Access::default(),
    });
    let hops = p.hops();
    assert_eq!(hops.len(), 5);
    assert_eq!(hops[4].name, "hop5");
    assert!((hops.iter().map(|h| h.delay_ms).sum::<f64>() - 50.0).abs() < 1e-9);
}

/// `[tcp] ecn` turns ECN on (or off) for the endpoints it is applied
/// to; unset leaves the endpoint's default.
#[test]
fn tcp_ecn_knob() {
    use ka_endpoint::{EcnMode, TcpConfig};
    let with = |v: &str| FIG3.replace("[topology]", &format!("[tcp]\necn = {v}\n\n[topology]"));
    for (text, want) in [
        (with("true"), EcnMode::On),
        (with("false"), EcnMode::Off),
        (FIG3.to_string(), TcpConfig::default().ecn),
    ] {
        let s = Scenario::from_toml(&text).unwrap();
        let mut t = TcpConfig::default();
        s.tcp.apply(&mut t);
        assert_eq!(t.ecn, want, "{:?}", s.tcp.ecn);
    }
    assert_eq!(TcpConfig::default().ecn, EcnMode::Accept);
    assert!(Scenario::from_toml(&with("1")).is_err());
}

/// `[tcp] initial_rto_ms` and `min_rto_ms` reach the endpoint's
/// config; a zero initial RTO is refused.
#[test]
fn tcp_rto_knobs() {
    use ka_endpoint::TcpConfig;
    use std::time::Duration;
    let with = |v: &str| FIG3.replace("[topology]", &format!("[tcp]\n{v}\n\n[topology]"));
    let s = Scenario::from_toml(&with("initial_rto_ms = 10.0\nmin_rto_ms = 5.0")).unwrap();
    let mut t = TcpConfig::default();
    s.tcp.apply(&mut t);
    assert_eq!(t.initial_rto, Duration::from_millis(10));
    assert_eq!(t.min_rto, Duration::from_millis(5));
    assert_ne!(TcpConfig::default().initial_rto, t.initial_rto);
    assert!(Scenario::from_toml(&with("initial_rto_ms = 0.0")).is_err());
}

#[test]
fn finite_long_lived_flows() {
    let lived = |extra: &str| {
        FIG3.replace(
            "type = \"on-off\"\noff_mean_s = 0.5\nsizes = { min_pkts = 1, max_pkts = 2000, shape = 1.8, mean_pkts = 100 }",
            &format!("type = \"long-lived\"\nstart_s = 10.0\n{extra}"),
        )
    };
    let s = Scenario::from_toml(&lived("size_pkts = 5000")).unwrap();
    assert!(matches!(
        s.groups[0].workload,
        Workload::LongLived {
            size_pkts: Some(5000),
            ..
        }
    ));
    assert_eq!(Scenario::from_toml(&s.to_toml()).unwrap(), s);
    assert!(Scenario::from_toml(&lived("size_pkts = 0")).is_err());
    assert!(Scenario::from_toml(&lived("size_pkts = 10\non_s = 5.0")).is_err());
    // Unbounded flows do not write the key.
    let s = Scenario::from_toml(&lived("")).unwrap();
    assert!(!s.to_toml().contains("size_pkts"));
}

#[test]
fn rtt_spread() {
    let r = RttSpec::Range([10.0, 250.0]);
    assert_eq!(r.for_host(0, 5), 10.0);
    assert_eq!(r.for_host(4, 5), 250.0);
    assert_eq!(r.for_host(2, 5), 130.0);
    assert_eq!(RttSpec::Fixed(7.0).for_host(3, 9), 7.0);
}

/// A hop's `queue` is `ka_router::qdisc::QdiscConfig` itself: its kinds,
/// unset knobs at the router's defaults, durations with units, typos and
/// bad values refused.
#[test]
fn hop_queues_are_the_router_s_disciplines() {
    #[derive(serde::Deserialize)]
    struct W {
        queue: QdiscConfig,
    }
    let parse = |s: &str| toml::from_str::<W>(s).map(|w| w.queue);
    assert_eq!(
        parse(r#"queue = { kind = "droptail" }"#).unwrap(),
        QdiscConfig::DropTail
    );
    let QdiscConfig::Red(r) = parse(r#"queue = { kind = "red", max_p = 0.2 }"#).unwrap() else {
        panic!("red");
    };
    assert_eq!(r.max_p, 0.2);
    assert_eq!(r.min_th, RedConfig::default().min_th);
    let QdiscConfig::FqCodel(f) =
        parse(r#"queue = { kind = "fq-codel", target = "2.5ms", ecn = false }"#).unwrap()
    else {
        panic!("fq-codel");
    };
    assert_eq!(f.target, std::time::Duration::from_micros(2500));
    assert!(!f.ecn);
    assert_eq!(f.flows, FqCodelConfig::default().flows);
    assert!(parse(r#"queue = { kind = "fq_codel" }"#).is_err());
    assert!(parse(r#"queue = { kind = "red", min = 3 }"#).is_err());
    assert!(parse(r#"queue = { kind = "fq-codel", target = 5 }"#).is_err());
    let text = include_str!("../../scenarios/fig2-ka.toml");
    let bad = text.replace(
        "port = \"ka\"",
        "port = \"ka\"\nqueue = { kind = \"red\", min_th = 800.0, max_th = 700.0 }",
    );
    let e = Scenario::from_toml(&bad).unwrap_err().to_string();
    assert!(e.contains("hop bottleneck") && e.contains("max_th"), "{e}");
}

/// `[router]` is `ka_router::RouterConfig`: a controller by name or with
/// its knobs, nested RCP and XCP knobs with units; unknown keys and bad
/// knobs are refused.
#[test]
fn router_table_is_the_router_s_config() {
    use ka_router::{ControllerKind, QueueMeasure};
    let with = |router: &str| {
        let text = include_str!("../../scenarios/fig2-ka.toml");
        Scenario::from_toml(&format!("{text}\n[router]\n{router}\n"))
    };
    let s = with("controller = \"echo\"").unwrap();
    assert!(matches!(s.router.controller, ControllerKind::Echo(_)));
    let s = with(
        "controller = { kind = \"crowd\", caution = 2.5 }\n\
         rcp = { queue_measure = \"persistent\", queue_target = \"5ms\" }\n\
         xcp.gamma = 0.2",
    )
    .unwrap();
    let ControllerKind::Crowd(c) = s.router.controller else {
        panic!("{:?}", s.router.controller);
    };
    assert_eq!(c.caution, 2.5);
    assert_eq!(s.router.rcp.queue_measure, QueueMeasure::Persistent);
    assert_eq!(
        s.router.rcp.queue_target,
        std::time::Duration::from_millis(5)
    );
    assert_eq!(s.router.xcp.gamma, 0.2);
    // What a run writes reads back as the same scenario.
    assert_eq!(Scenario::from_toml(&s.to_toml()).unwrap(), s);
    assert!(with("crowd_caution = 2.0").is_err());
    assert!(with("controller = { kind = \"crowd\", caution = -1.0 }").is_err());
    assert!(with("controller = \"xyz\"").is_err());
}

/// `[router] stamp_every` (DESIGN §3.9): `"packet"`, `"rtt"` or a
/// duration; it reads back from what a run writes, and the default is not
/// written, so scenarios from before it existed write the same bytes.
#[test]
fn stamp_every_reads_writes_and_keeps_old_scenarios_unchanged() {
    use ka_router::StampEvery;
    use std::time::Duration;
    let with = |router: &str| {
        let text = include_str!("../../scenarios/fig2-ka.toml");
        Scenario::from_toml(&format!("{text}\n[router]\n{router}\n"))
    };
    for (v, want) in [
        ("\"rtt\"", StampEvery::Rtt),
        ("\"packet\"", StampEvery::Packet),
        ("\"10ms\"", StampEvery::Every(Duration::from_millis(10))),
        ("\"250us\"", StampEvery::Every(Duration::from_micros(250))),
    ] {
        let s = with(&format!("stamp_every = {v}")).unwrap();
        assert_eq!(s.router.stamp_every, want, "{v}");
        assert_eq!(Scenario::from_toml(&s.to_toml()).unwrap(), s, "{v}");
        assert_eq!(
            s.to_toml().contains("stamp_every"),
            want != StampEvery::Packet,
            "{v}"
        );
    }
    assert!(with("stamp_every = \"sometimes\"").is_err());
    assert!(
        with("stamp_every = \"0ms\"").is_err(),
        "zero would mean packet"
    );
    let rtt = Scenario::from_toml(include_str!("../../scenarios/fig2-ka-rtt.toml")).unwrap();
    assert_eq!(rtt.router.stamp_every, StampEvery::Rtt);
}

#[test]
fn memory_estimate_refuses_what_the_machine_cannot_hold() {
    use super::limits::{BASE_BYTES, HOST_BYTES, check_memory};
    let big = FIG3.replace("count = 32", "count = 100000");
    let s = Scenario::from_toml(&big).unwrap();
    assert_eq!(s.hosts(), 100_000);
    assert_eq!(s.estimated_bytes(), 100_000 * HOST_BYTES + BASE_BYTES);
    let e = check_memory(&s, Some(8 << 30)).unwrap_err();
    assert!(
        matches!(
            e,
            ScenarioError::Memory {
                hosts: 100_000,
                available_mib: 8192,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("MiB"), "{e}");
    assert!(check_memory(&s, Some(64 << 30)).is_ok());
    assert!(check_memory(&s, None).is_ok());
}

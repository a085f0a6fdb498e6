//! Real-network tests of the queue disciplines (DESIGN §3.1, §4.2, §4.3, §6.4): the
//! Linux kernel's CUBIC, with ECN on in both namespaces (`net.ipv4.tcp_ecn
//! = 1`, set inside the namespaces only), through `ka-router --rate 20mbit
//! --delay 20ms` with FQ-CoDel and with a 1000-packet drop-tail queue.
//! Needs root, `/dev/net/tun` and iproute2; skipped loudly otherwise.
//!
//! What they show: FQ-CoDel keeps CUBIC's queue near CoDel's 5 ms target by
//! marking CE (no drops while marking works), drop-tail lets CUBIC fill
//! hundreds of milliseconds of buffer, and FQ-CoDel's flow queues share the
//! link fairly between two CUBIC flows.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::path::Path;
use std::time::Duration;

use ka_router::shell::testbed::{ADDR_A, Side, Testbed};
use netns_common::{
    cubic_senders, listeners, metric_value, scrape_metrics, testbed_or_skip, transfers_intact, v4,
};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// What one run through the router measured.
struct Run {
    /// Per flow: goodput in bit/s.
    goodputs: Vec<f64>,
    /// Share of forward packets that waited ≤ 15 ms / ≤ 100 ms.
    within_15ms: f64,
    within_100ms: f64,
    /// Forward-direction drops (hard limit + AQM) and CE marks, from the
    /// router's metrics.
    drops: f64,
    marks: f64,
    /// Forward TCP data packets in the capture carrying CE.
    ce_in_capture: usize,
}

/// Starts the router with `qdisc_args`, ECN on in both namespaces, and
/// `flows` concurrent kernel-CUBIC transfers of `bytes` each from A to B.
fn run(tb: &mut Testbed, qdisc_args: &[&str], flows: u16, bytes: u64) -> Run {
    let metrics = format!("127.0.0.1:{}", netns_common::free_local_port());
    let pcap = tb.path("qdisc.pcap");
    let mut args = vec![
        "--rate",
        "20mbit",
        "--delay",
        "20ms",
        "--signal",
        "none",
        "--metrics",
        &metrics,
        "--pcap",
        pcap.to_str().unwrap(),
    ];
    args.extend_from_slice(qdisc_args);
    tb.start_router(Path::new(ROUTER), &args)
        .expect("router up");
    for side in [Side::A, Side::B] {
        tb.sysctl(side, "net.ipv4.tcp_ecn", "1").unwrap();
    }
    let mut receivers = listeners(tb, flows);
    let mut senders = cubic_senders(tb, flows, bytes);
    let timeout = Duration::from_secs(30 + 5 * u64::from(flows) * bytes / 1_000_000);
    let got = transfers_intact(&mut receivers, &mut senders, bytes, timeout);
    let text = scrape_metrics(&metrics);
    let fwd = |name: &str| {
        metric_value(&text, &format!("{name}{{direction=\"forward\"}}"))
            .unwrap_or_else(|| panic!("{name} missing from the metrics:\n{text}"))
    };
    let bucket = |le: &str| {
        metric_value(
            &text,
            &format!("ka_router_sojourn_seconds_bucket{{le=\"{le}\",direction=\"forward\"}}"),
        )
        .unwrap_or_else(|| panic!("sojourn bucket {le} missing:\n{text}"))
    };
    let count = fwd("ka_router_sojourn_seconds_count");
    assert!(count > 1000.0, "only {count} packets dequeued");
    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "router: {}", exit.stderr);
    eprintln!("{}", exit.stdout.trim());
    let ce_in_capture = netns_common::read_pcap(&pcap)
        .iter()
        .filter(|c| {
            v4(&c.data).is_some_and(|h| h.src == ADDR_A.octets() && h.total_len > 1000)
                && c.data.get(1).is_some_and(|tos| tos & 3 == 3)
        })
        .count();
    let run = Run {
        goodputs: got
            .iter()
            .map(|r| bytes as f64 * 8.0 / r.num("secs"))
            .collect(),
        within_15ms: bucket("0.015") / count,
        within_100ms: bucket("0.1") / count,
        drops: fwd("ka_router_drops_queue_total") + fwd("ka_router_drops_aqm_total"),
        marks: fwd("ka_router_ecn_marks_total"),
        ce_in_capture,
    };
    eprintln!(
        "{qdisc_args:?}: goodputs {:?} Mbit/s, sojourn ≤ 15 ms {:.1} %, ≤ 100 ms {:.1} %, \
         drops {}, CE marks {} ({} CE data packets captured)",
        run.goodputs
            .iter()
            .map(|g| (g / 1e4).round() / 100.0)
            .collect::<Vec<_>>(),
        run.within_15ms * 100.0,
        run.within_100ms * 100.0,
        run.drops,
        run.marks,
        run.ce_in_capture
    );
    run
}

/// One CUBIC flow with ECN: FQ-CoDel marks instead of dropping and holds
/// the 95th-percentile queueing delay under 15 ms; the same transfer
/// through a 1000-packet drop-tail queue waits over 100 ms at the 95th
/// percentile.
#[test]
fn kernel_cubic_ecn_through_fq_codel_vs_droptail() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("kernel_cubic_ecn_through_fq_codel_vs_droptail") else {
        return;
    };
    let fq = run(&mut tb, &["--qdisc", "fq-codel"], 1, 20_000_000);
    assert!(fq.marks > 0.0, "FQ-CoDel never marked");
    assert!(
        fq.ce_in_capture > 0,
        "no CE-marked data packet in the capture"
    );
    assert_eq!(fq.drops, 0.0, "drops while ECN marking works");
    assert!(
        fq.within_15ms >= 0.95,
        "95th-percentile sojourn above 15 ms ({:.1} % within)",
        fq.within_15ms * 100.0
    );
    assert!(fq.goodputs[0] >= 0.8 * 20e6, "goodput {}", fq.goodputs[0]);
    drop(tb);

    let Some(mut tb) = testbed_or_skip("kernel_cubic_ecn_through_fq_codel_vs_droptail") else {
        return;
    };
    let dt = run(
        &mut tb,
        &["--qdisc", "droptail", "--queue", "1000"],
        1,
        20_000_000,
    );
    assert_eq!(dt.marks, 0.0, "drop-tail never marks");
    assert!(
        dt.within_100ms < 0.95,
        "drop-tail's 95th-percentile sojourn is not above 100 ms ({:.1} % within)",
        dt.within_100ms * 100.0
    );
}

/// Two concurrent CUBIC flows through FQ-CoDel get goodputs within 10 % of
/// each other (DRR over the flows' queues).
#[test]
fn two_cubic_flows_share_fq_codel_fairly() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("two_cubic_flows_share_fq_codel_fairly") else {
        return;
    };
    let r = run(&mut tb, &["--qdisc", "fq-codel"], 2, 12_000_000);
    let (a, b) = (r.goodputs[0], r.goodputs[1]);
    assert!(
        (a - b).abs() <= 0.1 * a.max(b),
        "goodputs {a} and {b} differ by more than 10 %"
    );
}

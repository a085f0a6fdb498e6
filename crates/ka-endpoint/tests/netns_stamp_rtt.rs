//! Real-network test: signalling once per RTT (`ka-router --stamp-every
//! rtt`, paper §V, DESIGN §3.9) seen from both ends. `ka-endpoint` →
//! `ka-endpoint` through the router with a capture; `ka-trace`'s analysis
//! of the capture (`ka_router::trace`, an independent parser) shows the
//! flow's signal at least once per RTT while it sends, far fewer leading
//! fragments than data packets, and the sender reports ≥ 95 % of the
//! transfer in KA mode (DESIGN §6.3: the silence rule allows one more gap
//! while signals come once per RTT). Needs root, `/dev/net/tun` and
//! iproute2; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::time::Duration;

use netns_common::{Proc, Side, endpoint_receiver, endpoint_testbed, serial};

/// Removes the capture's directory however the test ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// 20 Mbit/s, 20 ms each way: the sender's RTT indicators give the router
/// the flow's RTT (≈ 40 ms plus queueing), the interval it stamps at.
#[test]
fn stamp_every_rtt_signals_each_flow_once_per_rtt() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("ka-stamp-rtt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let _cleanup = RemoveOnDrop(dir.clone());
    let pcap = dir.join("ka.pcap");
    let pcap_arg = pcap.to_str().expect("utf-8 path").to_owned();
    let Some(mut tb) = endpoint_testbed(
        "stamp_every_rtt_signals_each_flow_once_per_rtt",
        &[
            "--rate",
            "20mbit",
            "--delay",
            "20ms",
            "--stamp-every",
            "rtt",
            "--pcap",
            &pcap_arg,
        ],
    ) else {
        return;
    };
    let (mut recv, to) = endpoint_receiver(&tb);
    let mut send = Proc::endpoint_json(&tb, Side::A, "send", &["--to", &to, "--bytes", "10M"]);
    let j = send.json(Duration::from_secs(60));
    let st = send.wait_exit(Duration::from_secs(15));
    assert!(st.success(), "sender exit {st}: {}", send.stderr_so_far());
    let r = recv.json(Duration::from_secs(10));
    assert_eq!(r["bytes"], 10_000_000, "{r}");
    let st = recv.terminate();
    assert!(st.success(), "receiver: {}", recv.stderr_so_far());
    let router = tb.stop_router().expect("stopping the router");
    assert!(router.status.success(), "router: {}", router.stderr);
    eprintln!("sender: {j}");
    assert_eq!(j["ka_enabled"], true, "{j}");
    let ka_frac = j["ka_time_frac"].as_f64().expect("ka_time_frac");
    assert!(
        ka_frac >= 0.95,
        "only {:.1} % of the transfer in KA mode: {j}",
        ka_frac * 100.0
    );

    let out = dir.join("trace");
    let opts = ka_router::trace::Options {
        progress: false,
        ..Default::default()
    };
    let report = ka_router::trace::run(&pcap, &out, &opts).expect("ka-trace on the capture");
    let flow = report
        .flows
        .iter()
        .find(|f| f.is_ka())
        .expect("the KA flow in the capture");
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    let signals: Vec<f64> = events
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut c = l.split(',');
            let t = c.next()?.parse::<f64>().ok()?;
            let id = c.next()?.parse::<usize>().ok()?;
            let _src = c.next()?;
            (id == flow.id && c.next()? == "ka_signal").then_some(t)
        })
        .collect();
    let data_pkts = flow.dir[flow.sender()].data_pkts;
    let rtt = flow.rtt_estimate();
    let gaps: Vec<f64> = signals.windows(2).map(|w| w[1] - w[0]).collect();
    let max_gap = gaps.iter().copied().fold(0.0, f64::max);
    eprintln!(
        "{} leading fragments for {data_pkts} data packets, RTT {:.1} ms, largest gap {:.1} ms",
        signals.len(),
        rtt * 1e3,
        max_gap * 1e3
    );
    assert!(signals.len() > 20, "{} signals", signals.len());
    // once per RTT: at least ten times fewer than packets
    assert!(
        signals.len() * 10 <= data_pkts as usize,
        "{} leading fragments for {data_pkts} data packets",
        signals.len()
    );
    // and never more than one RTT plus one interval (the RTT) apart
    assert!(
        max_gap <= 2.0 * rtt,
        "the flow went {:.1} ms without a signal (RTT {:.1} ms)",
        max_gap * 1e3,
        rtt * 1e3
    );
}

//! Real-network test of the robust d (DESIGN §3.6.2): a third party (A's
//! kernel, not the KA flow) sends 20 forged RTT indicators per second —
//! UDP with DF, total length 600 (k = 0, "under 2 ms") and 611 (k = 11,
//! "over 2 s") alternately — through `ka-router --rate 20mbit --delay
//! 20ms` while a KA flow (ka-endpoint → ka-endpoint) runs. The router's d
//! (its `ka_router_rtt_seconds` metric, sampled every 100 ms) has its
//! median within 2× of the 40 ms base RTT and never reaches the forged
//! values, and the KA flow's goodput is not more than 5 % below the same
//! flow's without the forgeries. (A sample-weighted average of
//! the indicators went to 2.1 s under 611-byte forgeries, §3.6.2.) Needs
//! root, `/dev/net/tun` and iproute2; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use netns_common::{
    Proc, Side, endpoint_receiver, endpoint_testbed, free_local_port, harness, metric_value,
    scrape_metrics, serial,
};

/// Forged indicators per second.
const FORGED_PER_S: u64 = 20;
/// Two 20 ms delay lines.
const BASE_RTT_MS: f64 = 40.0;
/// The router's d metric, forward direction.
const D_SERIES: &str = "ka_router_rtt_seconds{direction=\"forward\"}";

#[test]
fn netns_role_helper() {
    if harness::role().as_deref() == Some("forge") {
        forge(harness::role_param("to"), harness::role_param("secs"));
        return;
    }
    netns_common::role_main()
}

/// Role `forge`: for `secs` seconds, every 1/`FORGED_PER_S` s one UDP
/// datagram with DF to `to`, of total length 600 and 611 in turn.
fn forge(to: SocketAddr, secs: u64) {
    use rustix::net::sockopt::{Ipv4PathMtuDiscovery, set_ip_mtu_discover};
    let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
    set_ip_mtu_discover(&s, Ipv4PathMtuDiscovery::DO).expect("IP_MTU_DISCOVER");
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        let due = start + Duration::from_micros(sent * 1_000_000 / FORGED_PER_S);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            // pacing the forgeries, not synchronisation
            std::thread::sleep(wait);
        }
        // 20 bytes IPv4 + 8 UDP + payload = 600 or 611
        let len = if sent.is_multiple_of(2) { 572 } else { 583 };
        s.send_to(&vec![0x4b; len], to).expect("send_to");
        sent += 1;
    }
    harness::say(format!("RESULT sent={sent}"));
}

/// Samples the router's d every 100 ms until `stop` is set.
fn sample_d(metrics: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<f64>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            if let Some(d) = metric_value(&scrape_metrics(&metrics), D_SERIES) {
                out.push(d * 1e3);
            }
            // the sampling period, not synchronisation
            std::thread::sleep(Duration::from_millis(100));
        }
        out
    })
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

fn range(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(0.0, f64::max),
    )
}

#[test]
fn forged_indicators_move_neither_d_nor_the_ka_flow() {
    let _serial = serial();
    let metrics = format!("127.0.0.1:{}", free_local_port());
    let Some(tb) = endpoint_testbed(
        "forged_indicators_move_neither_d_nor_the_ka_flow",
        &["--rate", "20mbit", "--delay", "20ms", "--metrics", &metrics],
    ) else {
        return;
    };
    let (mut recv, to) = endpoint_receiver(&tb);
    let send = |bytes: &str| {
        let mut p = Proc::endpoint_json(&tb, Side::A, "send", &["--to", &to, "--bytes", bytes]);
        let j = p.json(Duration::from_secs(120));
        let st = p.wait_exit(Duration::from_secs(15));
        assert!(st.success(), "sender exit {st}: {}", p.stderr_so_far());
        assert_eq!(j["ka_enabled"], true, "{j}");
        j["goodput_bps"].as_f64().expect("goodput_bps") / 1e6
    };
    let warm = send("2M");
    eprintln!("warm-up: {warm:.2} Mbit/s");
    let target = SocketAddr::new(tb.addr(Side::B).into(), 9);
    // Up to three tries (wall-clock goodput on a shared 2-core VM varies
    // from run to run, see netns_syn_stream.rs); the goodput bound must hold
    // in one of them, each with its own baseline right before it; the
    // bounds on d in all of them. The goodput bound is one-sided (no loss
    // beyond 5 %): the run-to-run noise goes both ways (measured +5.6 %
    // beside the forgeries in one run).
    let mut tries = Vec::new();
    for _ in 0..3 {
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = sample_d(metrics.clone(), stop.clone());
        let alone = send("10M");
        stop.store(true, Ordering::Relaxed);
        let d_alone = sampler.join().expect("sampler");
        let indicators_before = metric_value(
            &scrape_metrics(&metrics),
            "ka_router_indicators_total{direction=\"forward\"}",
        )
        .unwrap_or(0.0);

        let mut forger = Proc::role(
            &tb,
            Side::A,
            "forge",
            &[("to", target.to_string()), ("secs", "6".into())],
        );
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = sample_d(metrics.clone(), stop.clone());
        let under = send("10M");
        stop.store(true, Ordering::Relaxed);
        let d_under = sampler.join().expect("sampler");
        let r = forger.result(Duration::from_secs(30));
        let sent: u64 = r.get("sent").parse().expect("sent");
        let indicators = metric_value(
            &scrape_metrics(&metrics),
            "ka_router_indicators_total{direction=\"forward\"}",
        )
        .unwrap_or(0.0)
            - indicators_before;
        let (lo, hi) = range(&d_under);
        let med = median(&d_under);
        let within = d_under
            .iter()
            .filter(|&&d| (BASE_RTT_MS / 2.0..=2.0 * BASE_RTT_MS).contains(&d))
            .count();
        eprintln!(
            "alone {alone:.2} Mbit/s (d median {:.1} ms, range {:?}); beside {sent} forged \
             indicators ({indicators} indicators counted) {under:.2} Mbit/s, d median {med:.1} ms, \
             range {lo:.1}..{hi:.1} ms, {within} of {} samples within 2× of {BASE_RTT_MS} ms",
            median(&d_alone),
            range(&d_alone),
            d_under.len()
        );
        assert!(
            indicators >= sent as f64,
            "the router counted {indicators} indicators for {sent} forged ones"
        );
        assert!(
            d_under.len() >= 10 && (BASE_RTT_MS / 2.0..=2.0 * BASE_RTT_MS).contains(&med),
            "d's median {med:.1} ms under the forgeries is not within 2× of {BASE_RTT_MS} ms: \
             {d_under:?}"
        );
        // What the forgeries claim, 1 ms and 3072 ms, d never reaches: its
        // excursions (to 768–1536 ms in some runs, with and without the
        // forgeries alike) are the KA flow's own indicators when the loaded
        // host stalls the endpoints and their smoothed RTT grows.
        assert!(
            lo > 2.0 && hi < 3072.0,
            "d reached {lo:.1}..{hi:.1} ms under the forgeries: {d_under:?}"
        );
        tries.push((alone, under));
        if under >= 0.95 * alone {
            break;
        }
    }
    let st = recv.terminate();
    assert!(st.success(), "receiver: {}", recv.stderr_so_far());
    assert!(
        tries.iter().any(|(alone, under)| *under >= 0.95 * alone),
        "goodput alone vs beside the forged indicators (Mbit/s): {tries:?}"
    );
}

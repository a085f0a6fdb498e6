//! Real-network test: KA through a reordering path. `ka-router --rate
//! 50mbit --delay 10ms --reorder 2%` (both directions: 2 % of the packets
//! skip the 10 ms delay line and overtake up to ~40 packets in flight) —
//! the "reordering" case of "never worse than TCP" (DESIGN §6.9: RACK with
//! DSACK-driven reordering windows; duplicate-ACK counting took each
//! reordering for a loss, left KA mode and made 8 Mbit/s of 50). Needs
//! root, `/dev/net/tun` and iproute2; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::time::{Duration, Instant};

use netns_common::{
    PORT, Proc, Side, endpoint_receiver, endpoint_testbed, forward_count, payload, serial,
    sha256_hex,
};

/// The impaired path: 50 Mbit/s, 10 ms each way, 2 % of packets reordered.
const REORDERING: [&str; 6] = ["--rate", "50mbit", "--delay", "10ms", "--reorder", "2%"];

/// Bytes of the measured transfers (`KA_REORDER_BYTES` overrides; the
/// record in docs/RESULTS.md used 200 MB).
fn bytes() -> usize {
    std::env::var("KA_REORDER_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000_000)
}

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// KA (ka-endpoint → ka-endpoint) and then kernel CUBIC (kernel →
/// kernel) through the same reordering router: the KA transfer is
/// byte-exact, spends ≥ 90 % of its time in KA mode, makes few spurious
/// retransmissions (below), and gets ≥ 0.9× the kernel's goodput.
#[test]
fn ka_through_two_percent_reordering_keeps_ka_mode_and_kernel_goodput() {
    let _serial = serial();
    let Some(mut tb) = endpoint_testbed(
        "ka_through_two_percent_reordering_keeps_ka_mode_and_kernel_goodput",
        &REORDERING,
    ) else {
        return;
    };
    let bytes = bytes();
    let (mut recv, to) = endpoint_receiver(&tb);
    let send = |what: &[&str]| {
        let mut args = vec!["--to", to.as_str()];
        args.extend_from_slice(what);
        let mut p = Proc::endpoint_json(&tb, Side::A, "send", &args);
        let j = p.json(Duration::from_secs(300));
        let st = p.wait_exit(Duration::from_secs(15));
        assert!(st.success(), "sender exit {st}: {}", p.stderr_so_far());
        j
    };
    // a warm-up flow: the router's RCP converges on C (see netns.rs)
    let warm = send(&["--bytes", "2M"]);
    eprintln!("warm-up flow: {warm}");
    let r = recv.json(Duration::from_secs(10));
    assert_eq!(r["bytes"], 2_000_000, "{r}");
    let st = recv.terminate();
    assert!(st.success(), "receiver exit {st}: {}", recv.stderr_so_far());
    let warm_bytes = warm["bytes"].as_u64().unwrap_or(0);

    // the measured KA flow: a file, written out by a one-flow receiver
    let data = payload(bytes);
    let want = sha256_hex(&data);
    let file = tb.path("payload.bin");
    std::fs::write(&file, &data).expect("writing the payload");
    drop(data);
    let out = tb.path("received.bin");
    let mut recv = Proc::endpoint_json(
        &tb,
        Side::B,
        "recv",
        &[
            "--listen",
            &PORT.to_string(),
            "--once",
            "--out",
            out.to_str().expect("utf-8 path"),
        ],
    );
    recv.wait_stderr("listening on", Duration::from_secs(20));
    let ka = send(&["--file", file.to_str().expect("utf-8 path")]);
    eprintln!("KA flow: {ka}");
    let r = recv.json(Duration::from_secs(10));
    assert_eq!(r["bytes"], bytes as u64, "{r}");
    assert_eq!(ka["ka_enabled"], true, "{ka}");
    let st = recv.wait_exit(Duration::from_secs(15));
    assert!(st.success(), "receiver exit {st}: {}", recv.stderr_so_far());
    let got = std::fs::read(&out).expect("reading --out");
    assert_eq!(got.len(), bytes, "bytes written to --out");
    assert_eq!(sha256_hex(&got), want, "KA payload corrupted on the way");
    drop(got);

    // kernel CUBIC over the same path
    let kto = format!("{}:{PORT}", tb.addr(Side::B));
    let mut krecv = Proc::role(&tb, Side::B, "recv", &[("listen", kto.clone())]);
    krecv.stdout_line(Duration::from_secs(20), |l| l.contains("LISTENING"));
    let start = Instant::now();
    let mut ksend = Proc::role(
        &tb,
        Side::A,
        "send",
        &[
            ("to", kto),
            ("bytes", bytes.to_string()),
            ("cc", "cubic".into()),
        ],
    );
    let kr = krecv.result(Duration::from_secs(300));
    let ks = ksend.result(Duration::from_secs(20));
    let kernel_secs = start.elapsed().as_secs_f64();
    assert_eq!(kr.get("bytes"), bytes.to_string(), "kernel byte count");
    assert_eq!(kr.get("sha256"), ks.get("sha256"), "kernel payload");
    let kernel_bps = bytes as f64 * 8.0 / kernel_secs;

    let router = tb.stop_router().expect("stopping the router");
    assert!(router.status.success(), "router: {}", router.stderr);
    let reordered = forward_count(&router.stdout, "reordered ");
    let packets_in = forward_count(&router.stdout, "in ");
    eprintln!("router: {}", router.stdout.trim());
    // The forward direction carried the warm-up, the KA flow and the
    // kernel flow; the KA flow's share of the reordered packets is its
    // share of the bytes.
    let total = (warm_bytes + 2 * bytes as u64) as f64;
    let ka_reordered = reordered as f64 * bytes as f64 / total;
    assert!(
        reordered as f64 > 0.01 * packets_in as f64,
        "the router reordered {reordered} of {packets_in} packets"
    );

    let ka_frac = ka["ka_time_frac"].as_f64().expect("ka_time_frac");
    let spurious = ka["spurious_retransmits"].as_u64().expect("spurious");
    let ka_bps = ka["goodput_bps"].as_f64().expect("goodput_bps");
    eprintln!(
        "KA {:.1} Mbit/s, {:.1} % in KA mode, {spurious} spurious retransmissions \
         for ~{ka_reordered:.0} reordered packets; kernel CUBIC {:.1} Mbit/s",
        ka_bps / 1e6,
        ka_frac * 100.0,
        kernel_bps / 1e6
    );
    assert!(
        ka_frac >= 0.9,
        "only {:.1} % of the transfer in KA mode: {ka}",
        ka_frac * 100.0
    );
    // RACK's first reordering, before any DSACK has shown it the path's
    // reordering, may mark up to one flight spuriously (at 50 Mbit/s, 20 ms
    // and the router's ~15 ms queue, ~150 packets); after that, at most
    // 1 % of the reordered packets. Measured: 2-3 in most 50 MB runs, 60
    // in one; 13 for 4137 in a 200 MB run (docs/RESULTS.md).
    assert!(
        spurious as f64 <= 0.01 * ka_reordered + 150.0,
        "{spurious} spurious retransmissions for ~{ka_reordered:.0} reordered packets: {ka}"
    );
    assert!(
        ka_bps >= 0.9 * kernel_bps,
        "KA {:.1} Mbit/s against kernel CUBIC's {:.1}",
        ka_bps / 1e6,
        kernel_bps / 1e6
    );
}

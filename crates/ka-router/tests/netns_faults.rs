//! Live faults against the real binaries (root, namespaces; skipped loudly
//! otherwise): the router killed mid-transfer and restarted onto the
//! testbed's devices, which by then live in the namespaces.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ka_router::shell::testbed::{ADDR_B, Side, wait_for};
use netns_common::{Proc, testbed_or_skip};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");
const PORT: u16 = 5001;

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// A crash (SIGKILL) of the router in the middle of a kernel TCP transfer,
/// then a restart with `--in-netns`/`--out-netns`: the transfer completes
/// with every byte exact, and the restarted router signals again (leading
/// fragments) within 2 s of attaching and ends in KA mode. Without the
/// namespace options the restart must fail and say where the devices are,
/// instead of creating fresh devices connected to nothing.
#[test]
fn router_killed_and_restarted_mid_transfer() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("router_killed_and_restarted_mid_transfer") else {
        return;
    };
    let metrics = format!("127.0.0.1:{}", netns_common::free_local_port());
    let common = ["--rate", "20mbit", "--delay", "10ms"];
    let mut first: Vec<&str> = common.to_vec();
    first.extend(["--metrics", &metrics]);
    tb.start_router(Path::new(ROUTER), &first)
        .expect("router up");
    // DF clear, so the router may fragment (signal) the sender's packets.
    tb.sysctl(Side::A, "net.ipv4.ip_no_pmtu_disc", "1").unwrap();

    let bytes = 30_000_000u64;
    let mut recv = Proc::role(
        &tb,
        Side::B,
        "recv",
        &[("listen", format!("{ADDR_B}:{PORT}"))],
    );
    recv.said("LISTENING", Duration::from_secs(20));
    let mut send = Proc::role(
        &tb,
        Side::A,
        "send",
        &[
            ("to", format!("{ADDR_B}:{PORT}")),
            ("bytes", bytes.to_string()),
        ],
    );
    // Under way: 2 MB through the router (about a second at 20 Mbit/s).
    let series = "ka_router_bytes_out_total{direction=\"forward\"}";
    wait_for(Duration::from_secs(30), "2 MB through the router", || {
        let text = netns_common::scrape_metrics(&metrics);
        Ok(netns_common::metric_value(&text, series).unwrap_or(0.0) >= 2e6)
    })
    .unwrap();
    tb.kill_router().unwrap();

    // The devices now live in the namespaces: a plain restart refuses.
    let plain = std::process::Command::new(ROUTER)
        .args(["--in", &tb.dev_a, "--out", &tb.dev_b])
        .args(common)
        .output()
        .unwrap();
    assert!(!plain.status.success());
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(
        err.contains("is not in this network namespace") && err.contains("--in-netns"),
        "{err}"
    );

    let stamps = tb.path("stamps-after.csv");
    let mut again: Vec<&str> = common.to_vec();
    again.extend(["--stamp-log", stamps.to_str().unwrap()]);
    tb.restart_router(Path::new(ROUTER), &again, 1)
        .expect("restarted router attaches");
    let attached = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();

    let r = recv.result(Duration::from_secs(90));
    let s = send.result(Duration::from_secs(20));
    assert_eq!(r.get("bytes"), bytes.to_string(), "bytes lost");
    assert_eq!(r.get("sha256"), s.get("sha256"), "payload corrupted");

    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "{}", exit.stderr);
    let forward = exit
        .stdout
        .lines()
        .find(|l| l.starts_with("forward"))
        .unwrap_or_default()
        .to_string();
    assert!(forward.contains("mode KA"), "{forward}");
    let log = std::fs::read_to_string(&stamps).unwrap();
    let first_stamp_ns: u128 = log
        .lines()
        .nth(1)
        .and_then(|l| l.split(',').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no leading fragment after the restart:\n{forward}"));
    let after = Duration::from_nanos(first_stamp_ns as u64).saturating_sub(attached);
    eprintln!(
        "first signal {:.3} s after the restarted router attached",
        after.as_secs_f64()
    );
    assert!(after <= Duration::from_secs(2), "{after:?}");
}

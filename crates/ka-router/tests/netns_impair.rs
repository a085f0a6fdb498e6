//! Real-network test of the impairment stage (DESIGN §3.10): a kernel TCP
//! transfer (BBR where the kernel has it) through `ka-router --rate 100mbit --delay 10ms --jitter 3ms
//! --loss 1% --duplicate 1%` (each direction) arrives byte for byte, and
//! the router's final counters show the losses, duplicates and
//! reorderings it made. Needs root, `/dev/net/tun` and iproute2; skipped
//! loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::path::Path;
use std::time::{Duration, Instant};

use ka_router::shell::testbed::{ADDR_B, Side};
use netns_common::{Proc, listeners, testbed_or_skip, transfers_intact};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// The number after `key` (e.g. `"impair "`) in a summary line.
fn count_after(line: &str, key: &str) -> u64 {
    let (_, rest) = line
        .split_once(key)
        .unwrap_or_else(|| panic!("no {key:?} in {line:?}"));
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?} in {line:?}"))
}

#[test]
fn kernel_tcp_arrives_intact_through_loss_jitter_and_duplicates() {
    let _serial = netns_common::serial();
    let Some(mut tb) =
        testbed_or_skip("kernel_tcp_arrives_intact_through_loss_jitter_and_duplicates")
    else {
        return;
    };
    tb.start_router(
        Path::new(ROUTER),
        &[
            "--rate",
            "100mbit",
            "--delay",
            "10ms",
            "--jitter",
            "3ms",
            "--loss",
            "1%",
            "--duplicate",
            "1%",
        ],
    )
    .expect("router up");
    let bytes = 20_000_000;
    let start = Instant::now();
    let mut receivers = listeners(&tb, 1);
    // BBR where the kernel has it: loss-based CUBIC runs at about 6 Mbit/s
    // through 1 % loss (27 s for these 20 MB), BBR near the link rate.
    let mut params = vec![
        ("to", format!("{ADDR_B}:5001")),
        ("bytes", bytes.to_string()),
    ];
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    if available.split_whitespace().any(|c| c == "bbr") {
        params.push(("cc", "bbr".into()));
    }
    let mut senders = vec![Proc::role(&tb, Side::A, "send", &params)];
    transfers_intact(&mut receivers, &mut senders, bytes, Duration::from_secs(60));
    let took = start.elapsed();
    let exit = tb.stop_router().expect("router stops");
    assert!(exit.status.success(), "router: {}", exit.stderr);
    let out = exit.stdout;
    eprintln!("{} in {took:?}\n{}", bytes, out.trim());
    let forward = out
        .lines()
        .find(|l| l.starts_with("forward"))
        .unwrap_or_else(|| panic!("no forward summary in {out:?}"));
    let (lost, duplicated, reordered, packets_in) = (
        count_after(forward, "impair "),
        count_after(forward, "duplicated "),
        count_after(forward, "reordered "),
        count_after(forward, "in "),
    );
    // About 14 000 data packets each way through 1 % loss and duplication.
    assert!(lost > 0 && duplicated > 0, "{forward}");
    assert!(
        reordered > 0,
        "3 ms of jitter at 100 Mbit/s reorders: {forward}"
    );
    let share = |n: u64| n as f64 / packets_in as f64;
    assert!(
        (0.002..0.03).contains(&share(lost)) && (0.002..0.03).contains(&share(duplicated)),
        "lost {lost}, duplicated {duplicated} of {packets_in}"
    );
    // The ACK direction is impaired too.
    let reverse = out
        .lines()
        .find(|l| l.starts_with("reverse"))
        .unwrap_or_else(|| panic!("no reverse summary in {out:?}"));
    assert!(count_after(reverse, "impair ") > 0, "{reverse}");
}

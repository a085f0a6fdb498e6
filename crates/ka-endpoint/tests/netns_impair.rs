//! Real-network test: bulk transfers through the router's impairment stage
//! (`ka-router --loss 1% --duplicate 1% --jitter 3ms`, both directions):
//! the userspace stack's and the kernel's bytes arrive exact. Needs root,
//! `/dev/net/tun` and iproute2; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::time::{Duration, Instant};

use netns_common::{PORT, Proc, Side, endpoint_testbed, payload, serial, sha256_hex};

/// 1 % loss, 1 % duplication and 3 ms ± 3 ms of delay (so reordering) in
/// each direction, at 1 Gbit/s.
const IMPAIRED: [&str; 10] = [
    "--rate",
    "1gbit",
    "--delay",
    "3ms",
    "--jitter",
    "3ms",
    "--loss",
    "1%",
    "--duplicate",
    "1%",
];

/// Bytes from the environment variable `var`, else `default`.
fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// `ka-endpoint send --file` (A) → kernel receiver (B), then a kernel
/// sender (A) → kernel receiver (B), through the impaired router.
#[test]
fn endpoint_and_kernel_bytes_exact_through_loss_jitter_and_duplicates() {
    let _serial = serial();
    let Some(tb) = endpoint_testbed(
        "endpoint_and_kernel_bytes_exact_through_loss_jitter_and_duplicates",
        &IMPAIRED,
    ) else {
        return;
    };
    // 200 MB each. Nearly every packet is reordered by the jitter; with
    // RACK and DSACK (DESIGN §6.9) ka-endpoint (CUBIC) makes about
    // 25 Mbit/s here against 1 % loss (duplicate-ACK counting, which took
    // the reordering for loss, made 7.5 Mbit/s), 200 MB in about a minute;
    // the kernel (BBR) takes ~20 s. KA_IMPAIR_ENDPOINT_BYTES /
    // _KERNEL_BYTES change the sizes.
    let bytes = size("KA_IMPAIR_ENDPOINT_BYTES", 200_000_000);
    let kernel_bytes = size("KA_IMPAIR_KERNEL_BYTES", 200_000_000);
    let cc = std::env::var("KA_IMPAIR_CC").unwrap_or_else(|_| "cubic".into());
    let data = payload(bytes);
    let file = tb.path("payload.bin");
    std::fs::write(&file, &data).expect("writing the payload");
    let want = sha256_hex(&data);
    drop(data);
    let to = format!("{}:{PORT}", tb.addr(Side::B));

    let start = Instant::now();
    let mut recv = Proc::role(&tb, Side::B, "recv", &[("listen", to.clone())]);
    recv.stdout_line(Duration::from_secs(20), |l| l.contains("LISTENING"));
    let mut send = Proc::endpoint_json(
        &tb,
        Side::A,
        "send",
        &["--to", &to, "--file", file.to_str().unwrap(), "--cc", &cc],
    );
    let r = recv.result(Duration::from_secs(600));
    assert_eq!(r.get("bytes"), bytes.to_string(), "ka-endpoint: byte count");
    assert_eq!(r.get("sha256"), want, "ka-endpoint: payload corrupted");
    let j = send.json(Duration::from_secs(20));
    eprintln!(
        "ka-endpoint ({cc}): {bytes} B in {:?}: {j}",
        start.elapsed()
    );

    let start = Instant::now();
    let mut recv = Proc::role(&tb, Side::B, "recv", &[("listen", to.clone())]);
    recv.stdout_line(Duration::from_secs(20), |l| l.contains("LISTENING"));
    // The namespace's default congestion control (BBR here: loss-based
    // CUBIC would need minutes through 1 % loss).
    let mut ksend = Proc::role(
        &tb,
        Side::A,
        "send",
        &[("to", to.clone()), ("bytes", kernel_bytes.to_string())],
    );
    let r = recv.result(Duration::from_secs(300));
    let s = ksend.result(Duration::from_secs(20));
    assert_eq!(
        r.get("bytes"),
        kernel_bytes.to_string(),
        "kernel: byte count"
    );
    assert_eq!(
        r.get("sha256"),
        s.get("sha256"),
        "kernel: payload corrupted"
    );
    eprintln!("kernel: {kernel_bytes} B in {:?}", start.elapsed());
}

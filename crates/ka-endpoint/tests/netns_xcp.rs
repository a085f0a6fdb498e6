//! Real-network tests of `ka-endpoint --cc xcp` / `--cc xcp-rate` (DESIGN
//! §7.2): two network namespaces joined by the `ka-router` binary (which
//! forwards the IPv4 XCP option untouched: it is no XCP router), wiring in
//! `netns_common`. Needs root, `/dev/net/tun` and iproute2; skipped loudly
//! otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::time::Duration;

use netns_common::{Proc, Side, serial};

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// `ka-endpoint send --cc xcp` → Linux kernel TCP: the kernel ignores
/// XCP-Permitted, so the sender falls back to plain TCP (NewReno) and the
/// data arrives byte-exact.
#[test]
fn xcp_sender_falls_back_against_kernel_tcp() {
    let _serial = serial();
    let Some(tb) = netns_common::endpoint_testbed(
        "xcp_sender_falls_back_against_kernel_tcp",
        &["--rate", "100mbit"],
    ) else {
        return;
    };
    const BYTES: usize = 5_000_000;
    let (_, mut send) = netns_common::endpoint_sends_file_to_kernel(&tb, BYTES, &["--cc", "xcp"]);
    let j = send.json(Duration::from_secs(20));
    assert_eq!(j["bytes"], BYTES as u64, "{j}");
    assert_eq!(
        j["xcp_enabled"], false,
        "the kernel does not speak XCP: {j}"
    );
    assert_eq!(j["ka_enabled"], false, "an XCP sender offers no KA: {j}");
    let st = send.wait_exit(Duration::from_secs(15));
    assert!(st.success(), "sender exit {st}: {}", send.stderr_so_far());
    eprintln!("xcp endpoint → kernel: {j}");
}

/// `ka-endpoint send --cc xcp` and `--cc xcp-rate` → `ka-endpoint recv`
/// through a real router: XCP is negotiated on both ends, the IPv4 option
/// crosses the kernels' forwarding and the router, and every byte arrives.
#[test]
fn xcp_between_two_endpoints() {
    let _serial = serial();
    let Some(tb) = netns_common::endpoint_testbed(
        "xcp_between_two_endpoints",
        &["--rate", "100mbit", "--delay", "10ms"],
    ) else {
        return;
    };
    let (mut recv, to) = netns_common::endpoint_receiver(&tb);
    for cc in ["xcp", "xcp-rate"] {
        let mut send = Proc::endpoint_json(
            &tb,
            Side::A,
            "send",
            &["--to", &to, "--bytes", "4M", "--cc", cc],
        );
        let j = send.json(Duration::from_secs(60));
        let st = send.wait_exit(Duration::from_secs(15));
        assert!(st.success(), "sender exit {st}: {}", send.stderr_so_far());
        let r = recv.json(Duration::from_secs(20));
        assert_eq!(j["bytes"], 4_000_000, "{j}");
        assert_eq!(r["bytes"], 4_000_000, "{r}");
        assert_eq!(j["xcp_enabled"], true, "--cc {cc}: {j}");
        assert_eq!(r["xcp_enabled"], true, "--cc {cc}: {r}");
        assert_eq!(j["ka_enabled"], false, "{j}");
        eprintln!("--cc {cc}: {j}");
    }
    let st = recv.terminate();
    assert!(st.success(), "receiver exit {st}: {}", recv.stderr_so_far());
}

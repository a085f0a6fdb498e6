//! Helpers for the endpoint's real-network tests: the router shell's
//! two-namespace [`Testbed`] with a `ka-router` in the middle, plus what it
//! takes to put a `ka-endpoint` behind either side.
//!
//! Wiring — the recipe docs/usage/endpoint.md documents, with no extra
//! routes: the testbed puts `10.77.0.1/24` (A) and `10.77.0.2/24` (B) on the router's
//! devices. A `ka-endpoint` in A owns `10.77.0.101` on its own TUN device
//! with `--addr 10.77.0.101/30`, so A's kernel side of that device is
//! `10.77.0.102/30` and A routes `10.77.0.100/30` into it (longest prefix
//! beats the testbed's /24); one in B owns `10.77.0.201` (`/30`, kernel side
//! `.202`). Each namespace forwards (`net.ipv4.ip_forward=1`). Everyone else
//! reaches an endpoint on-link through the testbed's /24, i.e. through the
//! router. The endpoints' addresses are never local to a kernel, so no
//! kernel ever answers (RSTs) for them; kernel TCP in A/B keeps using
//! `10.77.0.1`/`.2`.
//!
//! Processes, kernel-TCP roles (the test binary re-executed in a namespace;
//! the including file declares a `netns_role_helper` test that calls
//! [`role_main`]) and the `serial()` lock come from the router's tests'
//! [`harness`], included here.

#![allow(dead_code)]

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

pub use ka_router::shell::testbed::{Side, Testbed};

#[path = "../../../ka-router/tests/netns_common/harness.rs"]
pub mod harness;
#[allow(unused_imports)]
pub use harness::{
    Proc, RoleResult, free_local_port, metric_value, payload, router_bin, scrape_metrics, serial,
    sha256_hex,
};
use harness::{accept_one, drain, finish, role_command, role_param, say};

/// The counter after `label` on the router's final `forward` summary line
/// (its stdout at exit).
pub fn forward_count(stdout: &str, label: &str) -> u64 {
    stdout
        .lines()
        .find(|l| l.starts_with("forward"))
        .and_then(|l| l.split(label).nth(1))
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{label}` count in router output: {stdout}"))
}

/// The userspace stack's address behind `side`.
pub fn endpoint_addr(side: Side) -> Ipv4Addr {
    match side {
        Side::A => Ipv4Addr::new(10, 77, 0, 101),
        Side::B => Ipv4Addr::new(10, 77, 0, 201),
    }
}

/// `--addr` for an endpoint behind `side`.
pub fn endpoint_cidr(side: Side) -> String {
    format!("{}/30", endpoint_addr(side))
}

/// The endpoint's TUN device name (namespaces are private, so fixed).
pub const ENDPOINT_DEV: &str = "kaep0";

/// The `ka-endpoint` binary under test.
pub const ENDPOINT_BIN: &str = env!("CARGO_BIN_EXE_ka-endpoint");

/// A testbed with a `ka-router` running `router_args`, forwarding on in
/// both namespaces (module docs); `None` (after a loud message) when real-network
/// tests cannot run here.
pub fn endpoint_testbed(test: &str, router_args: &[&str]) -> Option<Testbed> {
    if !harness::available_or_skip(test) {
        return None;
    }
    let router = router_bin();
    let mut tb = Testbed::new().expect("creating the testbed");
    tb.start_router(&router, router_args)
        .expect("starting ka-router");
    for side in [Side::A, Side::B] {
        tb.sysctl(side, "net.ipv4.ip_forward", "1")
            .expect("ip_forward");
    }
    Some(tb)
}

/// The port the tests' receivers listen on.
pub const PORT: u16 = 5001;

/// `ka-endpoint recv --listen PORT` behind B, listening, and the address
/// to send to.
pub fn endpoint_receiver(tb: &Testbed) -> (Proc, String) {
    let mut recv = Proc::endpoint_json(tb, Side::B, "recv", &["--listen", &PORT.to_string()]);
    recv.wait_stderr("listening on", Duration::from_secs(20));
    (recv, format!("{}:{PORT}", endpoint_addr(Side::B)))
}

/// `ka-endpoint send` behind A (with `extra` options) of `bytes` bytes of
/// [`payload`] from a file to a Linux kernel TCP receiver in B: checks
/// that they arrive byte-exact, and returns the receiver's result and the
/// sender (for its JSON and exit).
pub fn endpoint_sends_file_to_kernel(
    tb: &Testbed,
    bytes: usize,
    extra: &[&str],
) -> (RoleResult, Proc) {
    let data = payload(bytes);
    let file = tb.path("payload.bin");
    std::fs::write(&file, &data).expect("writing the payload");
    let to = format!("{}:{PORT}", tb.addr(Side::B));
    let mut recv = Proc::role(tb, Side::B, "recv", &[("listen", to.clone())]);
    recv.stdout_line(Duration::from_secs(20), |l| l.contains("LISTENING"));
    let mut args = vec!["--to", &to, "--file", file.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let send = Proc::endpoint_json(tb, Side::A, "send", &args);
    let r = recv.result(Duration::from_secs(60));
    assert_eq!(r.get("bytes"), bytes.to_string(), "receiver byte count");
    assert_eq!(
        r.get("sha256"),
        sha256_hex(&data),
        "payload corrupted on the way"
    );
    (r, send)
}

impl Proc {
    /// `ka-endpoint ARGS…` in `side`'s namespace.
    pub fn endpoint(tb: &Testbed, side: Side, args: &[&str]) -> Proc {
        let mut cmd = tb.command(side, ENDPOINT_BIN);
        // KA_TEST_ENDPOINT_LOG=debug shows the endpoints' mode changes in a
        // failing test's output
        let log = std::env::var("KA_TEST_ENDPOINT_LOG").unwrap_or_else(|_| "info".into());
        cmd.args(args)
            .env("RUST_LOG", log)
            .env("RUST_BACKTRACE", "0");
        Proc::spawn(
            &format!(
                "ka-endpoint {} in {side:?}",
                args.first().copied().unwrap_or("")
            ),
            cmd,
        )
    }

    /// `ka-endpoint SUBCOMMAND --tun kaep0 --addr <side's /30> ARGS… --json`
    /// in `side`'s namespace (the wiring of the module docs).
    pub fn endpoint_json(tb: &Testbed, side: Side, subcommand: &str, args: &[&str]) -> Proc {
        let cidr = endpoint_cidr(side);
        let mut all = vec![subcommand, "--tun", ENDPOINT_DEV, "--addr", &cidr];
        all.extend_from_slice(args);
        all.push("--json");
        Proc::endpoint(tb, side, &all)
    }

    /// A kernel-TCP role (see [`role_main`]) in `side`'s namespace.
    pub fn role(tb: &Testbed, side: Side, role: &str, params: &[(&str, String)]) -> Proc {
        Proc::spawn(
            &format!("kernel {role} in {side:?}"),
            role_command(tb, side, role, params),
        )
    }

    /// The next JSON object `ka-endpoint --json` printed.
    pub fn json(&mut self, timeout: Duration) -> serde_json::Value {
        let l = self.stdout_line(timeout, |l| l.trim_start().starts_with('{'));
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("bad JSON {l:?}: {e}"))
    }
}

/// Entry point of the kernel-TCP role processes.
pub fn role_main() {
    let Some(role) = harness::role() else {
        return;
    };
    match role.as_str() {
        "recv" => kernel_receiver(role_param("listen")),
        "send" => kernel_sender(role_param("to"), role_param("bytes")),
        other => panic!("unknown role {other}"),
    }
}

/// Accepts one connection, reads it to EOF hashing, closes.
fn kernel_receiver(listen: SocketAddr) {
    let (mut c, peer) = accept_one(listen);
    let d = drain(&mut c);
    say(format!(
        "RESULT bytes={} sha256={} secs={} peer={peer}",
        d.bytes, d.sha256, d.secs
    ));
}

/// Connects (retrying while the far side comes up), sends `bytes` of
/// [`harness::Payload`], half-closes, waits for the peer's close.
fn kernel_sender(to: SocketAddr, bytes: usize) {
    let mut c = harness::connect_retrying(to);
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    // an explicit congestion control (`cc`, e.g. `cubic`: a namespace may
    // only default to reno or bbr), set per socket as root
    if let Some(cc) = harness::role_param_opt("cc") {
        rustix::net::sockopt::set_tcp_congestion(&c, &cc).expect("TCP_CONGESTION");
    }
    let data = payload(bytes);
    let start = Instant::now();
    c.write_all(&data).expect("write");
    finish(&mut c);
    let secs = start.elapsed().as_secs_f64();
    say(format!(
        "RESULT bytes={bytes} sha256={} secs={secs}",
        sha256_hex(&data)
    ));
}

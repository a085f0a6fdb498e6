//! `ka-endpoint probe` on real Linux paths (DESIGN §6.7): a prober
//! namespace and a receiver namespace (each a `ka-endpoint` on its own TUN
//! device), joined through a middle namespace that forwards, with a
//! 1400-byte MTU towards the receiver. Three middles:
//!
//! 1. clean — the probe finds the path MTU (1400, and the ICMP that says
//!    so), DF respected, fragments and their leading lengths intact;
//! 2. conntrack into an overlay — an nftables `ct state` rule makes the
//!    middle reassemble every fragmented datagram (nf_defrag), and it
//!    forwards into a VXLAN tunnel (as container hosts do): the kernel
//!    fragments again at the largest piece's size, and the probe reports
//!    the signal erased. (Forwarded straight out of a veth, the same
//!    conntrack middle re-emits the original fragments unchanged — Linux
//!    6.18 reuses their geometry when the egress device needs no extra
//!    headroom — and the probe finds the signal preserved; measured, see
//!    DESIGN §6.7, not asserted here because it depends on the kernel.)
//! 3. fragment filter — nftables drops every IP fragment: the probe
//!    reports fragments not delivered.
//!
//! Needs root, `/dev/net/tun`, iproute2 and nftables (`nft`); skipped loudly
//! otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::process::Command;
use std::time::{Duration, Instant};

use netns_common::{ENDPOINT_BIN, Proc};

/// The prober's and the receiver's TUN device (namespaces are private).
const DEV: &str = "kapr0";
const PROBER: &str = "10.91.10.1/30";
const RECEIVER: &str = "10.91.20.1";
const PORT: u16 = 5001;

/// Three namespaces, deleted on drop (also when the test fails).
struct Path {
    ns: [String; 3],
}

impl Drop for Path {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("running {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Path {
    /// prober (P) — middle (M, `nft` ruleset `rules` if any) — receiver
    /// (R); the M–R link has MTU 1400. `vxlan`: M reaches the receiver's
    /// prefix through a VXLAN tunnel over that link (MTU 1350).
    fn new(tag: &str, rules: Option<&str>, vxlan: bool) -> Path {
        let id = std::process::id();
        let ns = ["p", "m", "r"].map(|r| format!("kaprobe{id}{tag}{r}"));
        let path = Path { ns: ns.clone() };
        let [p, m, r] = [&ns[0], &ns[1], &ns[2]].map(String::as_str);
        for n in [p, m, r] {
            sh(&["ip", "netns", "add", n]);
            sh(&["ip", "-n", n, "link", "set", "lo", "up"]);
            sh(&[
                "ip",
                "netns",
                "exec",
                n,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
            ]);
        }
        sh(&[
            "ip", "-n", p, "link", "add", "vp", "type", "veth", "peer", "name", "vm1", "netns", m,
        ]);
        sh(&[
            "ip", "-n", m, "link", "add", "vm2", "mtu", "1400", "type", "veth", "peer", "name",
            "vr", "mtu", "1400", "netns", r,
        ]);
        for (n, dev, addr) in [
            (p, "vp", "10.91.1.1/24"),
            (m, "vm1", "10.91.1.254/24"),
            (m, "vm2", "10.91.2.254/24"),
            (r, "vr", "10.91.2.1/24"),
        ] {
            sh(&["ip", "-n", n, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", n, "link", "set", dev, "up"]);
        }
        // Prober and receiver route everything through the middle; the
        // middle reaches each end's /30 through that end.
        for (n, to, via) in [
            (p, "default", "10.91.1.254"),
            (r, "default", "10.91.2.254"),
            (m, "10.91.10.0/30", "10.91.1.1"),
            (m, "10.91.20.0/30", "10.91.2.1"),
        ] {
            sh(&["ip", "-n", n, "route", "add", to, "via", via]);
        }
        if vxlan {
            for (n, local, remote, dev, addr) in [
                (m, "10.91.2.254", "10.91.2.1", "vm2", "10.91.3.254/24"),
                (r, "10.91.2.1", "10.91.2.254", "vr", "10.91.3.1/24"),
            ] {
                sh(&[
                    "ip", "-n", n, "link", "add", "vx0", "type", "vxlan", "id", "42", "local",
                    local, "remote", remote, "dstport", "4789", "dev", dev,
                ]);
                sh(&["ip", "-n", n, "addr", "add", addr, "dev", "vx0"]);
                sh(&["ip", "-n", n, "link", "set", "vx0", "up"]);
            }
            sh(&[
                "ip",
                "-n",
                m,
                "route",
                "replace",
                "10.91.20.0/30",
                "via",
                "10.91.3.1",
            ]);
        }
        if let Some(rules) = rules {
            let out = Command::new("ip")
                .args(["netns", "exec", m, "nft", rules])
                .output()
                .expect("running nft");
            assert!(
                out.status.success(),
                "nft {rules:?} in {m}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        path
    }

    fn endpoint(&self, i: usize, args: &[&str]) -> Proc {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns[i], ENDPOINT_BIN])
            .args(args)
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "0");
        Proc::spawn(&format!("ka-endpoint {} in {}", args[0], self.ns[i]), cmd)
    }

    /// Starts the receiver, runs the probe twice (lines, then JSON), and
    /// returns the printed lines and the JSON report.
    fn probe(&self) -> (Vec<String>, serde_json::Value) {
        let cidr = format!("{RECEIVER}/30");
        let port = PORT.to_string();
        let mut recv = self.endpoint(
            2,
            &["recv", "--tun", DEV, "--addr", &cidr, "--listen", &port],
        );
        recv.wait_stderr("listening on", Duration::from_secs(20));
        let to = format!("{RECEIVER}:{PORT}");
        let run = |json: bool| {
            let mut args = vec![
                "probe",
                "--tun",
                DEV,
                "--addr",
                PROBER,
                "--to",
                &to,
                "--timeout",
                "8s",
            ];
            if json {
                args.push("--json");
            }
            let t = Instant::now();
            let mut p = self.endpoint(0, &args);
            let st = p.wait_exit(Duration::from_secs(15));
            let took = t.elapsed();
            let out = p.stdout_so_far();
            assert!(st.success(), "probe failed: {out:?}\n{}", p.stderr_so_far());
            assert!(took < Duration::from_secs(9), "the probe took {took:?}");
            out
        };
        let lines = run(false);
        let json = run(true);
        assert_eq!(json.len(), 1, "--json prints one object: {json:?}");
        let v: serde_json::Value = serde_json::from_str(&json[0]).expect("JSON");
        eprintln!("--- {} ---", self.ns[1]);
        for l in &lines {
            eprintln!("{l}");
        }
        eprintln!("{v}");
        drop(recv);
        (lines, v)
    }
}

/// Any `ct` expression makes the namespace track connections, and so
/// defragment everything at PREROUTING.
const CONNTRACK: &str = "add table ip ka; \
    add chain ip ka probechain { type filter hook forward priority 0; }; \
    add rule ip ka probechain ct state new,established,related counter accept";

/// Drops non-leading fragments (offset ≠ 0) and leading ones (MF set).
const DROP_FRAGMENTS: &str = "add table ip ka; \
    add chain ip ka probechain { type filter hook forward priority 0; }; \
    add rule ip ka probechain ip frag-off & 0x1fff != 0 drop; \
    add rule ip ka probechain ip frag-off & 0x2000 != 0 drop";

/// Whether this test can run; says loudly why not.
fn can_run(test: &str) -> bool {
    if !netns_common::harness::available_or_skip(test) {
        return false;
    }
    if Command::new("nft").arg("--version").output().is_err() {
        eprintln!("!! SKIPPING real-network test {test}: nftables (`nft`) is not installed");
        return false;
    }
    true
}

#[test]
fn probe_clean_reassembling_and_fragment_dropping_paths() {
    if !can_run("probe_clean_reassembling_and_fragment_dropping_paths") {
        return;
    }
    let _serial = netns_common::serial();

    // 1. clean
    let path = Path::new("c", None, false);
    let (lines, v) = path.probe();
    drop(path);
    assert_eq!(v["connected"], true);
    assert_eq!(v["ka_negotiated"], true);
    assert_eq!(v["fragments_delivered"], "yes");
    assert_eq!(v["leading_fragment"], "preserved");
    assert_eq!(v["indicators_pass"], "yes");
    assert_eq!(v["path_mtu"], 1400);
    assert_eq!(v["icmp_mtu"], 1400);
    assert_eq!(v["df_respected"], "yes");
    assert_eq!(v["ka_usable"], true);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("verdict: KA signals cross this path"))
    );

    // 2. a middle that reassembles (conntrack's defragmentation) and
    // forwards into a VXLAN overlay
    let path = Path::new("d", Some(CONNTRACK), true);
    let (lines, v) = path.probe();
    drop(path);
    assert_eq!(v["fragments_delivered"], "yes");
    assert_eq!(v["leading_fragment"], "erased");
    assert_eq!(v["ka_usable"], false);
    assert_eq!(v["indicators_pass"], "yes");
    assert_eq!(v["path_mtu"], 1350, "VXLAN takes 50 bytes");
    let c24 = v["codes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["sent_len"] == 24)
        .unwrap();
    assert_eq!(c24["preserved"], false, "{c24}");
    assert!(lines.iter().any(|l| l.contains("ERASED")));

    // 3. a middle that drops fragments
    let path = Path::new("f", Some(DROP_FRAGMENTS), false);
    let (lines, v) = path.probe();
    drop(path);
    assert_eq!(v["fragments_delivered"], "no");
    assert_eq!(v["ka_usable"], false);
    assert_eq!(v["indicators_pass"], "yes");
    assert_eq!(v["path_mtu"], 1400);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("fragmented packets delivered: NO"))
    );
}

//! Real-network test of bridge mode: namespaces A and B joined by two veth
//! pairs through namespace M, where `ka-router --bridge` forwards between
//! M's two ends (a bump in the wire: no addresses, no routes in M). Linux
//! TCP on both ends. Needs root, iproute2 and ethtool; skipped loudly
//! otherwise.
//!
//! ```text
//!  A: vA0 10.78.0.1 ── vA1 ┐ M: ka-router --bridge vA1 vB1 ┌ vB1 ── vB0 10.78.0.2 :B
//! ```

#![cfg(all(feature = "cli", target_os = "linux"))]

// The shared helpers re-export host meters this file does not use.
#[allow(unused_imports)]
mod netns_common;

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use ka_codec::{Code, Scale};
use ka_router::shell::testbed::{checked, wait_for};
use netns_common::{Proc, v4};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");
/// Namespace and interface names start with this, then `<pid>x<n>`.
const PREFIX: &str = "kbr";
const ADDR_A: &str = "10.78.0.1";
const ADDR_B: &str = "10.78.0.2";

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

fn ip(args: &[&str]) {
    checked(Command::new("ip").args(args)).unwrap_or_else(|e| panic!("{e}"));
}

/// Three namespaces and two veth pairs; everything is removed on drop
/// (also when a test panics), and leftovers of dead test processes by the
/// next `new`.
struct BridgeBed {
    /// Namespace and veth names: `<id>a`, `<id>m`, `<id>b`; `<id>a0`, …
    id: String,
    dir: PathBuf,
    router: Option<Child>,
}

impl BridgeBed {
    fn ns(&self, x: char) -> String {
        format!("{}{x}", self.id)
    }

    fn dev(&self, x: &str) -> String {
        format!("{}{x}", self.id)
    }

    fn new() -> BridgeBed {
        remove_stale();
        static N: AtomicU32 = AtomicU32::new(0);
        let id = format!(
            "{PREFIX}{}x{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed) % 100
        );
        let dir = std::env::temp_dir().join(format!("ka-bridgebed-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        let bed = BridgeBed {
            id,
            dir,
            router: None,
        };
        let (a, m, b) = (bed.ns('a'), bed.ns('m'), bed.ns('b'));
        for ns in [&a, &m, &b] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        let (a0, a1, b0, b1) = (bed.dev("a0"), bed.dev("a1"), bed.dev("b0"), bed.dev("b1"));
        ip(&[
            "link", "add", &a0, "netns", &a, "type", "veth", "peer", "name", &a1, "netns", &m,
        ]);
        ip(&[
            "link", "add", &b0, "netns", &b, "type", "veth", "peer", "name", &b1, "netns", &m,
        ]);
        ip(&["-n", &a, "addr", "add", &format!("{ADDR_A}/24"), "dev", &a0]);
        ip(&["-n", &b, "addr", "add", &format!("{ADDR_B}/24"), "dev", &b0]);
        // M stays silent on its ports (docs/usage/router.md, bridge mode).
        for d in [&a1, &b1] {
            checked(Command::new("ip").args([
                "netns",
                "exec",
                &m,
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{d}.disable_ipv6=1"),
            ]))
            .unwrap();
        }
        for (ns, d) in [(&a, &a0), (&b, &b0), (&m, &a1), (&m, &b1)] {
            ip(&["-n", ns, "link", "set", d, "up"]);
        }
        // A veth hands partially checksummed packets to its peer unless the
        // sender computes checksums itself.
        for (ns, d) in [(&a, &a0), (&b, &b0)] {
            checked(
                Command::new("ip").args(["netns", "exec", ns, "ethtool", "-K", d, "tx", "off"]),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        bed
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn sysctl(&self, x: char, key: &str, value: &str) {
        checked(Command::new("ip").args([
            "netns",
            "exec",
            &self.ns(x),
            "sysctl",
            "-qw",
            &format!("{key}={value}"),
        ]))
        .unwrap();
    }

    /// `ka-router --bridge <a1> <b1> ARGS…` in M; waits until it has
    /// attached.
    fn start_router(&mut self, args: &[&str]) {
        let err = self.path("router.err");
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns('m'), ROUTER, "--bridge"])
            .arg(self.dev("a1"))
            .arg(self.dev("b1"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(self.path("router.out")).unwrap())
            .stderr(File::create(&err).unwrap())
            .spawn()
            .unwrap();
        self.router = Some(child);
        let router = self.router.as_mut().unwrap();
        wait_for(Duration::from_secs(20), "the router to attach", || {
            if let Some(st) = router.try_wait()? {
                panic!(
                    "router exited ({st}): {}",
                    std::fs::read_to_string(&err).unwrap_or_default()
                );
            }
            Ok(std::fs::read_to_string(&err)?.contains("bridging Ethernet interfaces"))
        })
        .unwrap();
    }

    /// SIGTERM the router; (stdout, stderr).
    fn stop_router(&mut self) -> (String, String) {
        let mut c = self.router.take().expect("router running");
        let _ = Command::new("sh")
            .args(["-c", &format!("kill -TERM {}", c.id())])
            .status();
        let end = Instant::now() + Duration::from_secs(10);
        let st = loop {
            if let Some(st) = c.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > end {
                let _ = c.kill();
                break c.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = std::fs::read_to_string(self.path("router.out")).unwrap_or_default();
        let err = std::fs::read_to_string(self.path("router.err")).unwrap_or_default();
        assert!(st.success(), "router exit {st}: {err}");
        (out, err)
    }
}

impl Drop for BridgeBed {
    fn drop(&mut self) {
        if let Some(mut c) = self.router.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for x in ['a', 'm', 'b'] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(x)])
                .stderr(Stdio::null())
                .status();
        }
        if std::env::var_os("KA_TESTBED_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Deletes namespaces of bridge beds whose test process is gone.
fn remove_stale() {
    let out = Command::new("ip").args(["netns", "list"]).output();
    let Ok(out) = out else { return };
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = l.split_whitespace().next() else {
            continue;
        };
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

/// Skips (loudly) unless root, iproute2 and ethtool are there.
fn available(test: &str) -> bool {
    if !netns_common::harness::available_or_skip(test) {
        return false;
    }
    if Command::new("ethtool").arg("--version").output().is_err() {
        eprintln!("!! SKIPPING real-network test {test}: ethtool is not installed");
        return false;
    }
    true
}

/// One IPv4 packet B's interface received from A.
#[derive(Debug, Clone, Copy)]
struct Seen {
    h: netns_common::V4,
    /// Destination port, when the packet carries the TCP header.
    dport: Option<u16>,
}

/// Captures on `dev` in namespace `ns` (a thread that moved itself there)
/// until the returned flag is set; the IPv4 packets from `src`.
fn capture(
    ns: &str,
    dev: &str,
    src: [u8; 4],
) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<Seen>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let (ns, dev, stop2) = (ns.to_owned(), dev.to_owned(), Arc::clone(&stop));
    let h = std::thread::spawn(move || {
        let f = File::open(format!("/var/run/netns/{ns}")).expect("netns file");
        rustix::thread::move_into_link_name_space(
            f.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .expect("setns");
        let iface = pnet_datalink::interfaces()
            .into_iter()
            .find(|i| i.name == dev)
            .expect("capture interface");
        // Our own socket with a 32 MiB receive buffer (root may exceed
        // rmem_max), so a capture thread kept off the CPU for a while on a
        // busy host loses nothing; pnet binds it.
        let sock = rustix::net::socket(
            rustix::net::AddressFamily::PACKET,
            rustix::net::SocketType::RAW,
            None,
        )
        .expect("packet socket");
        rustix::net::sockopt::set_socket_recv_buffer_size_force(&sock, 32 << 20)
            .expect("SO_RCVBUFFORCE");
        let cfg = pnet_datalink::Config {
            read_timeout: Some(Duration::from_millis(50)),
            read_buffer_size: 65_536,
            socket_fd: Some(std::os::fd::IntoRawFd::into_raw_fd(sock)),
            ..Default::default()
        };
        let Ok(pnet_datalink::Channel::Ethernet(_, mut rx)) = pnet_datalink::channel(&iface, cfg)
        else {
            panic!("capture channel");
        };
        ready_tx.send(()).unwrap();
        let mut seen = Vec::new();
        while !stop2.load(Ordering::Relaxed) {
            let Ok(frame) = rx.next() else { continue };
            if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
                continue;
            }
            let Some(h) = v4(&frame[14..]) else { continue };
            if h.src != src {
                continue;
            }
            let l4 = 14 + h.header_len;
            let dport = (h.offset == 0 && h.protocol == 6 && frame.len() >= l4 + 4)
                .then(|| u16::from_be_bytes([frame[l4 + 2], frame[l4 + 3]]));
            seen.push(Seen { h, dport });
        }
        seen
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("capture ready");
    (stop, h)
}

/// Receiver in B on `port`, sender in A: `bytes`, exactly; the receiver's
/// result.
fn transfer(bed: &BridgeBed, port: u16, bytes: u64) -> netns_common::RoleResult {
    let mut recv = Proc::role_in(
        &bed.ns('b'),
        "recv",
        &[("listen", format!("{ADDR_B}:{port}"))],
    );
    recv.said("LISTENING", Duration::from_secs(20));
    let mut send = Proc::role_in(
        &bed.ns('a'),
        "send",
        &[
            ("to", format!("{ADDR_B}:{port}")),
            ("bytes", bytes.to_string()),
        ],
    );
    let r = recv.result(Duration::from_secs(60));
    let s = send.result(Duration::from_secs(20));
    assert_eq!(r.get("bytes"), bytes.to_string(), "byte count");
    assert_eq!(
        r.get("sha256"),
        s.get("sha256"),
        "payload corrupted on the way"
    );
    r
}

/// ARP through the bridge, 20 MB of kernel TCP (DF clear) at 20 Mbit/s with
/// KA leading fragments of valid codes arriving at B, then DF-set traffic
/// that is never fragmented.
#[test]
fn bridge_forwards_shapes_and_stamps_between_veth_pairs() {
    let _serial = netns_common::serial();
    if !available("bridge_forwards_shapes_and_stamps_between_veth_pairs") {
        return;
    }
    let mut bed = BridgeBed::new();
    let stamps = bed.path("stamps.csv");
    bed.start_router(&["--rate", "20mbit", "--stamp-log", stamps.to_str().unwrap()]);
    let (stop, cap) = capture(&bed.ns('b'), &bed.dev("b0"), [10, 78, 0, 1]);

    // 1. DF clear: the router may fragment.
    bed.sysctl('a', "net.ipv4.ip_no_pmtu_disc", "1");
    let bytes = 20_000_000u64;
    let r = transfer(&bed, 5001, bytes);
    let rate = 20e6;
    let goodput = bytes as f64 * 8.0 / r.num("secs");
    eprintln!("goodput through the bridge {:.2} Mbit/s", goodput / 1e6);
    assert!(goodput <= rate, "not shaped: {goodput} bit/s");
    // A loose floor: this checks that the bridge forwards, not how well a
    // busy host paces (netns_router does that for the same core).
    assert!(goodput >= 0.5 * rate, "bridge far below C: {goodput} bit/s");

    // 2. DF set (path-MTU discovery on): never fragmented.
    bed.sysctl('a', "net.ipv4.ip_no_pmtu_disc", "0");
    transfer(&bed, 5002, 3_000_000);

    stop.store(true, Ordering::Relaxed);
    let seen = cap.join().expect("capture thread");
    let (out, _) = bed.stop_router();
    eprintln!("{}", out.trim());

    // ARP resolved through the bridge (it is what made the transfers
    // possible) and was passed untouched: A knows B's real MAC.
    let neigh = Command::new("ip")
        .args(["-n", &bed.ns('a'), "neigh", "show", ADDR_B])
        .output()
        .unwrap();
    let neigh = String::from_utf8_lossy(&neigh.stdout).to_string();
    // (sysfs shows the devices of the reader's namespace.)
    let mac_b = Command::new("ip")
        .args(["netns", "exec", &bed.ns('b'), "cat"])
        .arg(format!("/sys/class/net/{}/address", bed.dev("b0")))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap();
    assert_eq!(mac_b.len(), 17, "{mac_b:?}");
    assert!(
        neigh.contains(&format!("lladdr {mac_b}")),
        "A's neighbour entry {neigh:?}, B is {mac_b}"
    );
    let bridged: u64 = out
        .split("non-IP frames bridged ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no counter in {out}"));
    assert!(bridged >= 2, "ARP request and reply are passed: {bridged}");

    // KA leading fragments with valid codes, no higher than C, all of the
    // DF-clear flow; each with exactly one trailing piece.
    let top = Scale::PAPER.encode(rate / 8000.0).unwrap().len();
    let leading: Vec<&Seen> = seen.iter().filter(|s| s.h.mf && s.h.offset == 0).collect();
    let trailing = seen.iter().filter(|s| s.h.offset != 0).count();
    for s in &leading {
        let l = s.h.total_len - s.h.header_len;
        let code = Code::from_len(l).unwrap_or_else(|| panic!("L = {l} is not a code"));
        assert!(code.len() <= top, "L = {l} above C's code {top}");
        assert!(!s.h.df);
        assert_eq!(s.dport, Some(5001), "a fragment of the DF-set flow");
    }
    eprintln!(
        "B received {} packets from A: {} leading fragments, {trailing} trailing",
        seen.len(),
        leading.len()
    );
    assert!(
        leading.len() >= 1000,
        "only {} leading fragments at B",
        leading.len()
    );
    assert_eq!(leading.len(), trailing);
    // The router's own record agrees with what arrived.
    let logged = std::fs::read_to_string(&stamps).unwrap().lines().count() - 1;
    assert_eq!(logged, leading.len(), "stamp log vs leading fragments at B");
    // DF-set packets: never fragmented; the DF flow's data all DF.
    let mut df_data = 0;
    for s in &seen {
        if s.h.df {
            assert!(
                !s.h.mf && s.h.offset == 0,
                "DF packet fragmented: {:?}",
                s.h
            );
        }
        if s.dport == Some(5002) && s.h.total_len > 1000 {
            assert!(s.h.df, "data of the DF flow without DF: {:?}", s.h);
            df_data += 1;
        }
    }
    assert!(df_data > 1000, "only {df_data} DF data packets seen at B");
}

/// The bridge refuses what it cannot bridge, with a clear message.
#[test]
fn bridge_rejects_missing_and_identical_interfaces() {
    let _serial = netns_common::serial();
    if !available("bridge_rejects_missing_and_identical_interfaces") {
        return;
    }
    let bed = BridgeBed::new();
    let run = |a: &str, b: &str| {
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &bed.ns('m'),
                ROUTER,
                "--bridge",
                a,
                b,
                "--rate",
                "1mbit",
            ])
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let e = run(&bed.dev("a1"), "nosuchif0");
    assert!(e.contains("no interface nosuchif0"), "{e}");
    let e = run(&bed.dev("a1"), &bed.dev("a1"));
    assert!(e.contains("two different interfaces"), "{e}");
    let e = run("lo", &bed.dev("a1"));
    assert!(e.contains("loopback"), "{e}");
}

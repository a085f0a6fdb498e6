//! Helpers for real-network tests over [`ka_router::shell::testbed`].
//!
//! Traffic endpoints run inside the namespaces by re-executing the current
//! test binary (`ip netns exec NS <test-exe> netns_role_helper --exact`) with
//! `KA_NETNS_ROLE` set: each test file that includes this module declares
//!
//! ```ignore
//! #[test]
//! fn netns_role_helper() { netns_common::role_main() }
//! ```
//!
//! which does nothing in a normal run. No tools beyond iproute2 are needed.
//! Include from another crate's tests with
//! `#[path = "…/ka-router/tests/netns_common/mod.rs"] mod netns_common;`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use ka_router::shell::host::{StealMeter, oversubscribed as host_oversubscribed};
use ka_router::shell::testbed::{Side, Testbed, unavailable};
use sha2::{Digest, Sha256};

/// Name of the helper test every including file must declare.
pub const ROLE_TEST: &str = "netns_role_helper";
const ROLE_ENV: &str = "KA_NETNS_ROLE";
/// Marks the lines a role prints for the parent.
const MARK: &str = "@@ka ";

/// Serialises the real-network tests of one test binary: they measure
/// wall-clock timing on a 2-CPU machine, and a second testbed pushing
/// traffic at the same time is load we would be inflicting on ourselves.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A testbed, or `None` after printing why real-network tests are skipped.
pub fn testbed_or_skip(test: &str) -> Option<Testbed> {
    if let Some(why) = unavailable() {
        eprintln!();
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!("!! SKIPPING real-network test {test}: {why}");
        eprintln!("!! (needs root, /dev/net/tun and iproute2; CI runs it as root)");
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        return None;
    }
    Some(Testbed::new().expect("creating the testbed"))
}

/// A role process inside a namespace; killed on drop. Its stdout is read
/// line by line on a thread.
pub struct RoleProcess {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    name: String,
}

impl Drop for RoleProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `role` in `side`'s namespace with `KA_ROLE_<KEY>=value` parameters.
pub fn spawn_role(tb: &Testbed, side: Side, role: &str, params: &[(&str, String)]) -> RoleProcess {
    let mut cmd = tb
        .self_command(side, ROLE_TEST)
        .expect("test executable path");
    cmd.env(ROLE_ENV, role);
    for (k, v) in params {
        cmd.env(format!("KA_ROLE_{}", k.to_uppercase()), v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning a role process");
    let out = child.stdout.take().expect("piped stdout");
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    RoleProcess {
        child,
        lines,
        seen: Vec::new(),
        name: format!("{role} in {side:?}"),
    }
}

impl RoleProcess {
    /// Wait (at most `timeout`) for a stdout line starting with `prefix`;
    /// returns the rest of it.
    pub fn line(&mut self, prefix: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    // The test harness may print `test … ` in front.
                    let said = l.split_once(MARK).map(|(_, s)| s);
                    if let Some(rest) = said.and_then(|s| s.strip_prefix(prefix)) {
                        return rest.trim().to_owned();
                    }
                    self.seen.push(l);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "{}: no {prefix:?} line within {timeout:?}; saw {:?}",
                        self.name, self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{}: exited ({:?}) without a {prefix:?} line; saw {:?}",
                    self.name,
                    self.child.try_wait(),
                    self.seen
                ),
            }
        }
    }

    /// The `RESULT key=value …` line, parsed.
    pub fn result(&mut self, timeout: Duration) -> RoleResult {
        RoleResult(
            self.line("RESULT", timeout)
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )
    }
}

/// `key=value` pairs a role reported.
#[derive(Debug)]
pub struct RoleResult(Vec<(String, String)>);

impl RoleResult {
    /// The value of `key` (panics if missing).
    pub fn get(&self, key: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {key} in {:?}", self.0))
    }

    /// The value of `key` parsed as a number.
    pub fn num(&self, key: &str) -> f64 {
        self.get(key).parse().expect("a number")
    }
}

/// Entry point of the role processes (called from `netns_role_helper`).
pub fn role_main() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let p = |k: &str| std::env::var(format!("KA_ROLE_{}", k.to_uppercase())).unwrap_or_default();
    match role.as_str() {
        "recv" => receiver(p("listen").parse().expect("KA_ROLE_LISTEN")),
        "send" => sender(
            p("to").parse().expect("KA_ROLE_TO"),
            p("bytes").parse().expect("KA_ROLE_BYTES"),
        ),
        "udp" => udp(
            p("to").parse().expect("KA_ROLE_TO"),
            p("count").parse().expect("KA_ROLE_COUNT"),
        ),
        other => panic!("unknown role {other}"),
    }
}

mod payload;
pub use payload::Payload;

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{MARK}{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// Accept one connection; measure one application-level round trip (we send
/// a byte, the sender echoes it); then read to EOF, hashing.
fn receiver(listen: SocketAddr) {
    let l = TcpListener::bind(listen).expect("bind");
    say("LISTENING".into());
    let (mut c, _) = l.accept().expect("accept");
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    c.set_nodelay(true).expect("nodelay");
    let t = Instant::now();
    c.write_all(b"?").expect("ping");
    let mut one = [0u8; 1];
    c.read_exact(&mut one).expect("pong");
    let rtt = t.elapsed();
    let start = Instant::now();
    let (mut n, mut h, mut buf) = (0u64, Sha256::new(), vec![0u8; 1 << 18]);
    loop {
        let k = c.read(&mut buf).expect("read");
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    say(format!(
        "RESULT bytes={n} sha256={} secs={secs} rtt_ms={}",
        hex::encode(h.finalize()),
        rtt.as_secs_f64() * 1e3
    ));
}

/// Connect, echo the receiver's byte, send `bytes` of [`Payload`], close.
fn sender(to: SocketAddr, bytes: u64) {
    let mut c = TcpStream::connect_timeout(&to, Duration::from_secs(10)).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut one = [0u8; 1];
    c.read_exact(&mut one).expect("ping");
    c.write_all(&one).expect("pong");
    let (mut left, mut h, mut g, mut buf) =
        (bytes, Sha256::new(), Payload::new(), vec![0u8; 1 << 16]);
    while left > 0 {
        let k = left.min(buf.len() as u64) as usize;
        g.fill(&mut buf[..k]);
        c.write_all(&buf[..k]).expect("write");
        h.update(&buf[..k]);
        left -= k as u64;
    }
    c.shutdown(std::net::Shutdown::Write).expect("shutdown");
    // Wait for the receiver's close so everything has been delivered.
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    say(format!(
        "RESULT bytes={bytes} sha256={}",
        hex::encode(h.finalize())
    ));
}

/// Send `count` 100-byte UDP datagrams to `to`.
fn udp(to: SocketAddr, count: u32) {
    let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
    for _ in 0..count {
        let _ = s.send_to(&[0x55; 100], to);
    }
    say(format!("RESULT sent={count}"));
}

/// One captured packet: wall-clock timestamp and raw IP bytes.
pub struct Captured {
    /// Time since the Unix epoch.
    pub ts: Duration,
    /// The IP packet.
    pub data: Vec<u8>,
}

/// All packets of a `LINKTYPE_RAW` pcap file.
pub fn read_pcap(path: &Path) -> Vec<Captured> {
    let f = std::fs::File::open(path).expect("pcap file");
    let mut r = pcap_file::pcap::PcapReader::new(f).expect("pcap header");
    assert_eq!(u32::from(r.header().datalink), 101, "LINKTYPE_RAW");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.expect("pcap record");
        out.push(Captured {
            ts: p.timestamp,
            data: p.data.into_owned(),
        });
    }
    out
}

/// The IPv4 header fields the tests look at.
#[derive(Debug, Clone, Copy)]
pub struct V4 {
    /// Source address.
    pub src: [u8; 4],
    /// Total length.
    pub total_len: usize,
    /// Header length.
    pub header_len: usize,
    /// Don't Fragment.
    pub df: bool,
    /// More Fragments.
    pub mf: bool,
    /// Fragment offset in bytes.
    pub offset: usize,
    /// Protocol number.
    pub protocol: u8,
}

/// Parse an IPv4 header (`None` for anything else).
pub fn v4(p: &[u8]) -> Option<V4> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    let flags = u16::from_be_bytes([p[6], p[7]]);
    Some(V4 {
        src: [p[12], p[13], p[14], p[15]],
        total_len: usize::from(u16::from_be_bytes([p[2], p[3]])),
        header_len: usize::from(p[0] & 0x0f) * 4,
        df: flags & 0x4000 != 0,
        mf: flags & 0x2000 != 0,
        offset: usize::from(flags & 0x1fff) * 8,
        protocol: p[9],
    })
}

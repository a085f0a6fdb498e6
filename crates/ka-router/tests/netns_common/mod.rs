//! Helpers for real-network tests over [`ka_router::shell::testbed`]:
//! the [`harness`] the endpoint's tests share (processes in namespaces,
//! kernel-TCP roles, the `serial()` lock), this crate's roles, and pcap
//! reading. No tools beyond iproute2 are needed.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

#[allow(unused_imports)]
pub use ka_io::host::{StealMeter, oversubscribed as host_oversubscribed};
use ka_router::shell::testbed::{Side, Testbed};
use sha2::{Digest, Sha256};

pub mod harness;
#[allow(unused_imports)]
pub use harness::{
    Payload, Proc, RoleResult, free_local_port, metric_value, scrape_metrics, serial,
};
use harness::{accept_one, drain, finish, hex, role_command, role_command_in, role_param, say};

/// A testbed, or `None` after printing why real-network tests are skipped.
pub fn testbed_or_skip(test: &str) -> Option<Testbed> {
    if !harness::available_or_skip(test) {
        return None;
    }
    Some(Testbed::new().expect("creating the testbed"))
}

/// `n` kernel-TCP receivers in B's namespace, listening on
/// `ADDR_B:5001…` and ready.
pub fn listeners(tb: &Testbed, n: u16) -> Vec<Proc> {
    (0..n)
        .map(|i| {
            let mut r = Proc::role(
                tb,
                Side::B,
                "recv",
                &[(
                    "listen",
                    format!("{}:{}", ka_router::shell::testbed::ADDR_B, 5001 + i),
                )],
            );
            r.said("LISTENING", Duration::from_secs(20));
            r
        })
        .collect()
}

/// `n` kernel-CUBIC senders in A's namespace, sender `i` sending `bytes`
/// to the listener on port `5001 + i` ([`listeners`]).
pub fn cubic_senders(tb: &Testbed, n: u16, bytes: u64) -> Vec<Proc> {
    (0..n)
        .map(|i| {
            Proc::role(
                tb,
                Side::A,
                "send",
                &[
                    (
                        "to",
                        format!("{}:{}", ka_router::shell::testbed::ADDR_B, 5001 + i),
                    ),
                    ("bytes", bytes.to_string()),
                    ("cc", "cubic".into()),
                ],
            )
        })
        .collect()
}

/// Waits up to `timeout` for every receiver's result and then the
/// senders'; asserts that each transfer arrived whole (`bytes`, the
/// sender's sha256). Returns the receivers' results.
pub fn transfers_intact(
    receivers: &mut [Proc],
    senders: &mut [Proc],
    bytes: u64,
    timeout: Duration,
) -> Vec<RoleResult> {
    let got: Vec<RoleResult> = receivers.iter_mut().map(|r| r.result(timeout)).collect();
    let sent: Vec<RoleResult> = senders
        .iter_mut()
        .map(|s| s.result(Duration::from_secs(20)))
        .collect();
    for (r, s) in got.iter().zip(&sent) {
        assert_eq!(r.get("bytes"), bytes.to_string(), "bytes lost");
        assert_eq!(r.get("sha256"), s.get("sha256"), "payload corrupted");
    }
    got
}

impl Proc {
    /// Starts `role` (see [`role_main`]) in `side`'s namespace with
    /// `KA_ROLE_<KEY>=value` parameters; its stderr goes to the test's own.
    pub fn role(tb: &Testbed, side: Side, role: &str, params: &[(&str, String)]) -> Proc {
        Proc::spawn_inheriting_stderr(
            &format!("{role} in {side:?}"),
            role_command(tb, side, role, params),
        )
    }
}

impl Proc {
    /// Starts `role` in network namespace `ns`; see [`Proc::role`].
    pub fn role_in(ns: &str, role: &str, params: &[(&str, String)]) -> Proc {
        Proc::spawn_inheriting_stderr(
            &format!("{role} in {ns}"),
            role_command_in(ns, role, params),
        )
    }
}

/// Entry point of the role processes (called from `netns_role_helper`).
pub fn role_main() {
    let Some(role) = harness::role() else {
        return;
    };
    match role.as_str() {
        "recv" => receiver(role_param("listen")),
        "send" => sender(role_param("to"), role_param("bytes")),
        "udp" => udp(role_param("to"), role_param("count")),
        other => panic!("unknown role {other}"),
    }
}

/// Accept one connection; measure one application-level round trip (we send
/// a byte, the sender echoes it); then read to EOF, hashing.
fn receiver(listen: SocketAddr) {
    let (mut c, _) = accept_one(listen);
    c.set_nodelay(true).expect("nodelay");
    let t = Instant::now();
    c.write_all(b"?").expect("ping");
    let mut one = [0u8; 1];
    c.read_exact(&mut one).expect("pong");
    let rtt = t.elapsed();
    let d = drain(&mut c);
    say(format!(
        "RESULT bytes={} sha256={} secs={} rtt_ms={}",
        d.bytes,
        d.sha256,
        d.secs,
        rtt.as_secs_f64() * 1e3
    ));
}

/// Connect, echo the receiver's byte, send `bytes` of [`Payload`], close.
/// With the optional `KA_ROLE_CC` parameter, the socket uses that kernel
/// congestion control (`TCP_CONGESTION`, e.g. `cubic`: the namespace's
/// default is the host's, bbr here).
fn sender(to: SocketAddr, bytes: u64) {
    let mut c = TcpStream::connect_timeout(&to, Duration::from_secs(10)).expect("connect");
    if let Some(cc) = harness::role_param_opt("cc") {
        rustix::net::sockopt::set_tcp_congestion(&c, &cc).expect("TCP_CONGESTION");
        let now = rustix::net::sockopt::tcp_congestion(&c).expect("TCP_CONGESTION");
        assert_eq!(now, cc, "the kernel did not take congestion control {cc}");
    }
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
    finish(&mut c);
    say(format!(
        "RESULT bytes={bytes} sha256={}",
        hex(&h.finalize())
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

/// A kernel-TCP transfer of `bytes` from A to B on port 5001, under way:
/// the receiver listening in B (ready), then the sender started in A.
/// Finish it with [`Transfer::intact`].
pub struct Transfer {
    recv: Proc,
    send: Proc,
    bytes: u64,
}

impl Transfer {
    /// Starts the transfer (see [`Transfer`]).
    pub fn start(tb: &Testbed, bytes: u64) -> Transfer {
        let b = ka_router::shell::testbed::ADDR_B;
        let mut recv = Proc::role(tb, Side::B, "recv", &[("listen", format!("{b}:5001"))]);
        recv.said("LISTENING", Duration::from_secs(20));
        let send = Proc::role(
            tb,
            Side::A,
            "send",
            &[("to", format!("{b}:5001")), ("bytes", bytes.to_string())],
        );
        Transfer { recv, send, bytes }
    }

    /// Waits up to `timeout` for the receiver and asserts every byte
    /// arrived as sent (count and sha256); the receiver's result.
    pub fn intact(mut self, timeout: Duration) -> RoleResult {
        let r = self.recv.result(timeout);
        let s = self.send.result(Duration::from_secs(20));
        assert_eq!(r.get("bytes"), self.bytes.to_string(), "bytes lost");
        assert_eq!(r.get("sha256"), s.get("sha256"), "payload corrupted");
        r
    }
}

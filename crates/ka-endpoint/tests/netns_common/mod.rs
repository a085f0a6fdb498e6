//! Helpers for the endpoint's real-network tests: the router shell's
//! two-namespace [`Testbed`] with a `ka-router` in the middle, plus what it
//! takes to put a `ka-endpoint` behind either side.
//!
//! Wiring — the recipe the README documents, with no extra routes: the
//! testbed puts `10.77.0.1/24` (A) and `10.77.0.2/24` (B) on the router's
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
//! Kernel TCP peers run by re-executing the test binary in a namespace with
//! `KA_EP_ROLE` set (the including file declares a `netns_role_helper` test
//! that calls [`role_main`]).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub use ka_router::shell::testbed::{Side, Testbed};
use sha2::{Digest, Sha256};

/// Name of the helper test each including file must declare.
pub const ROLE_TEST: &str = "netns_role_helper";
const ROLE_ENV: &str = "KA_EP_ROLE";
const MARK: &str = "@@ka-ep ";

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

/// Serialises the real-network tests of one test binary: they measure
/// timing on a shared machine.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `ka-router` binary, built on first use into this test's target
/// directory (`cargo build --profile test -p ka-router --bin ka-router`; a
/// no-op when it is up to date). Cargo does not hold its lock while tests
/// run, so this nested build does not deadlock.
pub fn router_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("KA_ROUTER_BIN") {
            return PathBuf::from(p);
        }
        let exe = std::env::current_exe().expect("test executable");
        // <target>/<profile>/deps/<test-exe>
        let profile_dir = exe.parent().and_then(Path::parent).expect("profile dir");
        let target_dir = profile_dir.parent().expect("target dir");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_owned());
        let t = Instant::now();
        let out = Command::new(cargo)
            .args([
                "build",
                "--profile",
                "test",
                "-p",
                "ka-router",
                "--bin",
                "ka-router",
            ])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .output()
            .expect("running cargo to build ka-router");
        assert!(
            out.status.success(),
            "building ka-router failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("ka-router binary ready in {:?}", t.elapsed());
        profile_dir.join("ka-router")
    })
    .clone()
}

/// A testbed with a `ka-router` running `router_args`, forwarding on in
/// both namespaces (module docs); `None` (after a loud message) when real-network
/// tests cannot run here.
pub fn endpoint_testbed(test: &str, router_args: &[&str]) -> Option<Testbed> {
    if let Some(why) = ka_router::shell::testbed::unavailable() {
        eprintln!();
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!("!! SKIPPING real-network test {test}: {why}");
        eprintln!("!! (needs root, /dev/net/tun and iproute2; CI runs it as root)");
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
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

/// A process in a namespace; killed on drop. Stdout and stderr are read
/// line by line on threads.
pub struct Proc {
    child: Child,
    out: Receiver<String>,
    err: Receiver<String>,
    seen_out: Vec<String>,
    seen_err: Vec<String>,
    name: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lines(r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Proc {
    /// Starts `cmd` (stdout and stderr piped).
    pub fn spawn(name: &str, mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {name}: {e}"));
        let out = lines(child.stdout.take().expect("stdout"));
        let err = lines(child.stderr.take().expect("stderr"));
        Proc {
            child,
            out,
            err,
            seen_out: Vec::new(),
            seen_err: Vec::new(),
            name: name.to_owned(),
        }
    }

    /// `ka-endpoint ARGS…` in `side`'s namespace.
    pub fn endpoint(tb: &Testbed, side: Side, args: &[&str]) -> Proc {
        let mut cmd = tb.command(side, ENDPOINT_BIN);
        cmd.args(args)
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "0");
        Proc::spawn(
            &format!(
                "ka-endpoint {} in {side:?}",
                args.first().copied().unwrap_or("")
            ),
            cmd,
        )
    }

    /// A kernel-TCP role (see [`role_main`]) in `side`'s namespace.
    pub fn role(tb: &Testbed, side: Side, role: &str, params: &[(&str, String)]) -> Proc {
        let mut cmd = tb.self_command(side, ROLE_TEST).expect("test executable");
        cmd.env(ROLE_ENV, role);
        for (k, v) in params {
            cmd.env(format!("KA_EP_{}", k.to_uppercase()), v);
        }
        Proc::spawn(&format!("kernel {role} in {side:?}"), cmd)
    }

    fn diagnostics(&mut self) -> String {
        while let Ok(l) = self.err.try_recv() {
            self.seen_err.push(l);
        }
        format!(
            "{} (exit {:?})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.name,
            self.child.try_wait(),
            self.seen_out.join("\n"),
            self.seen_err.join("\n")
        )
    }

    /// Waits (at most `timeout`) for a stderr line containing `needle`.
    pub fn wait_stderr(&mut self, needle: &str, timeout: Duration) {
        let end = Instant::now() + timeout;
        loop {
            match self
                .err
                .recv_timeout(end.saturating_duration_since(Instant::now()))
            {
                Ok(l) => {
                    let hit = l.contains(needle);
                    self.seen_err.push(l);
                    if hit {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no {needle:?} on stderr within {timeout:?}: {}",
                        self.diagnostics()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "exited without {needle:?} on stderr: {}",
                        self.diagnostics()
                    )
                }
            }
        }
    }

    /// The next stdout line satisfying `pick` (at most `timeout`).
    pub fn stdout_line(&mut self, timeout: Duration, pick: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            match self
                .out
                .recv_timeout(end.saturating_duration_since(Instant::now()))
            {
                Ok(l) => {
                    let hit = pick(&l);
                    self.seen_out.push(l.clone());
                    if hit {
                        return l;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no expected stdout line within {timeout:?}: {}",
                        self.diagnostics()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "exited without the expected stdout line: {}",
                        self.diagnostics()
                    )
                }
            }
        }
    }

    /// The next JSON object `ka-endpoint --json` printed.
    pub fn json(&mut self, timeout: Duration) -> serde_json::Value {
        let l = self.stdout_line(timeout, |l| l.trim_start().starts_with('{'));
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("bad JSON {l:?}: {e}"))
    }

    /// The `RESULT key=value …` line of a kernel role.
    pub fn result(&mut self, timeout: Duration) -> Vec<(String, String)> {
        let l = self.stdout_line(timeout, |l| l.contains(&format!("{MARK}RESULT")));
        let rest = l
            .split_once(&format!("{MARK}RESULT"))
            .map(|(_, r)| r)
            .unwrap_or("");
        rest.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Waits (at most `timeout`) for the process to exit; its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let end = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st;
            }
            if Instant::now() >= end {
                panic!("did not exit within {timeout:?}: {}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM and waits (at most 10 s) for the exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.wait_exit(Duration::from_secs(10))
    }

    /// Everything seen on stderr so far (for assertions and messages).
    pub fn stderr_so_far(&mut self) -> String {
        while let Ok(l) = self.err.try_recv() {
            self.seen_err.push(l);
        }
        self.seen_err.join("\n")
    }
}

/// A value from a role's `RESULT` line.
pub fn get<'a>(kv: &'a [(String, String)], key: &str) -> &'a str {
    kv.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {kv:?}"))
}

#[path = "../../../ka-router/tests/netns_common/payload.rs"]
mod payload;
pub use payload::Payload;

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `n` bytes of [`Payload`].
pub fn payload(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    Payload::new().fill(&mut v);
    v
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{MARK}{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// Entry point of the kernel-TCP role processes.
pub fn role_main() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let p = |k: &str| std::env::var(format!("KA_EP_{}", k.to_uppercase())).unwrap_or_default();
    match role.as_str() {
        "recv" => kernel_receiver(p("listen").parse().expect("KA_EP_LISTEN")),
        "send" => kernel_sender(
            p("to").parse().expect("KA_EP_TO"),
            p("bytes").parse().expect("KA_EP_BYTES"),
        ),
        other => panic!("unknown role {other}"),
    }
}

/// Accepts one connection, reads it to EOF hashing, closes.
fn kernel_receiver(listen: SocketAddr) {
    let l = TcpListener::bind(listen).expect("bind");
    say("LISTENING".into());
    let (mut c, peer) = l.accept().expect("accept");
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
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
    let hash: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    say(format!(
        "RESULT bytes={n} sha256={hash} secs={secs} peer={peer}"
    ));
}

/// Connects (retrying while the far side comes up), sends `bytes` of
/// [`Payload`], half-closes, waits for the peer's close.
fn kernel_sender(to: SocketAddr, bytes: usize) {
    let end = Instant::now() + Duration::from_secs(15);
    let mut c = loop {
        match TcpStream::connect_timeout(&to, Duration::from_secs(5)) {
            Ok(c) => break c,
            Err(e) if Instant::now() < end => {
                eprintln!("connect {to}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("connect {to}: {e}"),
        }
    };
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let data = payload(bytes);
    let start = Instant::now();
    c.write_all(&data).expect("write");
    c.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    let secs = start.elapsed().as_secs_f64();
    say(format!(
        "RESULT bytes={bytes} sha256={} secs={secs}",
        sha256_hex(&data)
    ));
}

//! The part of the real-network test helpers several crates use: the router's
//! `netns_common` declares it as a submodule, the endpoint's includes it
//! with `#[path = "…/ka-router/tests/netns_common/harness.rs"] mod harness;`.
//! `ka-examples`' testbed test includes it the same way. Only `std`,
//! `sha2`, `ka_router` and `ka_io` may be used here (the dependencies all
//! three have).
//!
//! Kernel-TCP peers ("roles") run by re-executing the current test binary
//! in a namespace (`ip netns exec NS <test-exe> netns_role_helper --exact`,
//! see [`role_command`]) with `KA_NETNS_ROLE` set and their parameters in
//! `KA_ROLE_<KEY>`; they report to the parent with [`say`]. Each test file
//! that includes the helpers declares
//!
//! ```ignore
//! #[test]
//! fn netns_role_helper() { netns_common::role_main() }
//! ```
//!
//! which does nothing in a normal run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub use ka_io::cli::Payload;
use ka_router::shell::testbed::{Side, Testbed, unavailable};
use sha2::{Digest, Sha256};

/// Name of the helper test every including file must declare.
pub const ROLE_TEST: &str = "netns_role_helper";
/// Names the role a re-executed test binary plays.
const ROLE_ENV: &str = "KA_NETNS_ROLE";
/// Prefix of a role's parameters (`KA_ROLE_<KEY>`).
const PARAM_ENV: &str = "KA_ROLE_";
/// Marks the lines a role prints for the parent.
const MARK: &str = "@@ka ";

/// The `ka-router` binary, built on first use into this test's target
/// directory (`cargo build --profile test -p ka-router --bin ka-router`; a
/// no-op when it is up to date). Cargo does not hold its lock while tests
/// run, so this nested build does not deadlock. `KA_ROUTER_BIN` overrides.
/// (The router's own tests use `CARGO_BIN_EXE_ka-router` instead.)
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

/// Serialises the real-network tests of one test binary: they measure
/// wall-clock timing on a 2-CPU machine, and a second testbed pushing
/// traffic at the same time is load we would be inflicting on ourselves.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether real-network tests can run here; if not, says loudly that
/// `test` is skipped and why.
pub fn available_or_skip(test: &str) -> bool {
    let Some(why) = unavailable() else {
        return true;
    };
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!! SKIPPING real-network test {test}: {why}");
    eprintln!("!! (needs root, /dev/net/tun and iproute2; CI runs it as root)");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    false
}

/// The command that runs `role` in `side`'s namespace with
/// `KA_ROLE_<KEY>=value` parameters.
pub fn role_command(tb: &Testbed, side: Side, role: &str, params: &[(&str, String)]) -> Command {
    role_command_in(tb.ns(side), role, params)
}

/// The command that runs `role` in network namespace `ns` (any namespace,
/// not only a [`Testbed`]'s) with `KA_ROLE_<KEY>=value` parameters.
pub fn role_command_in(ns: &str, role: &str, params: &[(&str, String)]) -> Command {
    let exe = std::env::current_exe().expect("test executable path");
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]).arg(exe).args([
        ROLE_TEST,
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ]);
    cmd.env(ROLE_ENV, role);
    for (k, v) in params {
        cmd.env(format!("{PARAM_ENV}{}", k.to_uppercase()), v);
    }
    cmd
}

/// The role this process is to play (`None` in a normal test run).
pub fn role() -> Option<String> {
    std::env::var(ROLE_ENV).ok()
}

/// The role parameter `key`, parsed (panics if missing or malformed).
pub fn role_param<T: FromStr>(key: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    let var = format!("{PARAM_ENV}{}", key.to_uppercase());
    let v = std::env::var(&var).unwrap_or_default();
    v.parse().unwrap_or_else(|e| panic!("{var}={v:?}: {e:?}"))
}

/// The role parameter `key` if it was given (and not empty).
pub fn role_param_opt(key: &str) -> Option<String> {
    let var = format!("{PARAM_ENV}{}", key.to_uppercase());
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

/// Prints a marked line for the parent ([`Proc::said`]).
pub fn say(line: String) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{MARK}{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// Binds `listen`, tells the parent `LISTENING`, accepts one connection
/// and gives it a 30 s read timeout.
pub fn accept_one(listen: SocketAddr) -> (TcpStream, SocketAddr) {
    let l = TcpListener::bind(listen).expect("bind");
    say("LISTENING".into());
    let (c, peer) = l.accept().expect("accept");
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    (c, peer)
}

/// What [`drain`] read.
pub struct Drained {
    /// Bytes read.
    pub bytes: u64,
    /// Their SHA-256, hex.
    pub sha256: String,
    /// Seconds from the start of the read to EOF.
    pub secs: f64,
}

/// Reads `c` to EOF, counting and hashing.
pub fn drain(c: &mut impl Read) -> Drained {
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
    Drained {
        bytes: n,
        secs: start.elapsed().as_secs_f64(),
        sha256: hex(&h.finalize()),
    }
}

/// Half-closes `c` and waits for the peer's close, so everything has been
/// delivered.
pub fn finish(c: &mut TcpStream) {
    c.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// `n` bytes of [`Payload`].
pub fn payload(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    Payload::new().fill(&mut v);
    v
}

/// The lines `r` yields, read on a thread.
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

/// A process (in a namespace); killed on drop. Its stdout, and its stderr
/// unless that goes to the test's own, are read line by line on threads.
pub struct Proc {
    child: Child,
    out: Receiver<String>,
    /// `None` when stderr is inherited.
    err: Option<Receiver<String>>,
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

impl Proc {
    /// Starts `cmd` with stdout and stderr piped.
    pub fn spawn(name: &str, cmd: Command) -> Proc {
        Proc::start(name, cmd, Stdio::piped())
    }

    /// Starts `cmd` with stdout piped and stderr going to the test's own.
    pub fn spawn_inheriting_stderr(name: &str, cmd: Command) -> Proc {
        Proc::start(name, cmd, Stdio::inherit())
    }

    fn start(name: &str, mut cmd: Command, stderr: Stdio) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {name}: {e}"));
        let out = lines(child.stdout.take().expect("stdout"));
        let err = child.stderr.take().map(lines);
        Proc {
            child,
            out,
            err,
            seen_out: Vec::new(),
            seen_err: Vec::new(),
            name: name.to_owned(),
        }
    }

    fn diagnostics(&mut self) -> String {
        let err = match &self.err {
            Some(_) => self.stderr_so_far(),
            None => "(not captured)".to_owned(),
        };
        format!(
            "{} (exit {:?})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.name,
            self.child.try_wait(),
            self.seen_out.join("\n"),
            err
        )
    }

    /// The next line on stderr (`on_stderr`) or stdout that satisfies
    /// `pick`, waiting at most `timeout`; panics with the diagnostics,
    /// naming `what` was expected, otherwise.
    fn next_line(
        &mut self,
        on_stderr: bool,
        what: &str,
        timeout: Duration,
        pick: impl Fn(&str) -> bool,
    ) -> String {
        let (rx, seen, stream) = if on_stderr {
            let Some(rx) = &self.err else {
                panic!("{}: stderr is not captured", self.name)
            };
            (rx, &mut self.seen_err, "stderr")
        } else {
            (&self.out, &mut self.seen_out, "stdout")
        };
        let end = Instant::now() + timeout;
        let exited = loop {
            match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
                Ok(l) => {
                    let hit = pick(&l);
                    seen.push(l.clone());
                    if hit {
                        return l;
                    }
                }
                Err(RecvTimeoutError::Timeout) => break false,
                Err(RecvTimeoutError::Disconnected) => break true,
            }
        };
        if exited {
            panic!("exited without {what} on {stream}: {}", self.diagnostics())
        }
        panic!(
            "no {what} on {stream} within {timeout:?}: {}",
            self.diagnostics()
        )
    }

    /// Waits (at most `timeout`) for a stderr line containing `needle`.
    pub fn wait_stderr(&mut self, needle: &str, timeout: Duration) {
        self.next_line(true, &format!("{needle:?}"), timeout, |l| {
            l.contains(needle)
        });
    }

    /// The next stdout line satisfying `pick` (at most `timeout`).
    pub fn stdout_line(&mut self, timeout: Duration, pick: impl Fn(&str) -> bool) -> String {
        self.next_line(false, "expected line", timeout, pick)
    }

    /// Waits (at most `timeout`) for a line a role [`say`]s that starts
    /// with `prefix`; returns the rest of it.
    pub fn said(&mut self, prefix: &str, timeout: Duration) -> String {
        // The test harness may print `test … ` in front of the mark.
        let rest = |l: &str| {
            l.split_once(MARK)
                .and_then(|(_, s)| s.strip_prefix(prefix))
                .map(|r| r.trim().to_owned())
        };
        let l = self.next_line(false, &format!("{prefix:?} line"), timeout, |l| {
            rest(l).is_some()
        });
        rest(&l).unwrap_or_default()
    }

    /// A role's `RESULT key=value …` line, parsed.
    pub fn result(&mut self, timeout: Duration) -> RoleResult {
        RoleResult(
            self.said("RESULT", timeout)
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )
    }

    /// Waits (at most `timeout`) for the process to exit; its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
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
    pub fn terminate(&mut self) -> ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.wait_exit(Duration::from_secs(10))
    }

    /// Every stdout line received so far (those [`Proc::stdout_line`]
    /// and [`Proc::said`] already looked at included), without waiting.
    pub fn stdout_so_far(&mut self) -> Vec<String> {
        while let Ok(l) = self.out.try_recv() {
            self.seen_out.push(l);
        }
        self.seen_out.clone()
    }

    /// Everything seen on stderr so far (for assertions and messages).
    pub fn stderr_so_far(&mut self) -> String {
        if let Some(err) = &self.err {
            while let Ok(l) = err.try_recv() {
                self.seen_err.push(l);
            }
        }
        self.seen_err.join("\n")
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

/// The Prometheus text `ka-router --metrics ADDR` serves right now.
pub fn scrape_metrics(addr: &str) -> String {
    let mut c = TcpStream::connect(addr).expect("metrics endpoint");
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("metrics request");
    let mut s = String::new();
    c.read_to_string(&mut s).expect("metrics response");
    s
}

/// The value of one series (name with labels, exactly as exposed) in a
/// metrics text, if present.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)
            .filter(|rest| rest.starts_with(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// A free TCP port on loopback for `--metrics` (bound and released).
pub fn free_local_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// `[1732112233.123456] 64 bytes from …: icmp_seq=3 ttl=63 time=20.3 ms`
/// (a line of `ping -D`) → (receive time since the epoch, RTT in ms).
pub fn ping_line(l: &str) -> Option<(f64, f64)> {
    let ts = l.strip_prefix('[')?.split(']').next()?.parse().ok()?;
    let rtt = l
        .split("time=")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((ts, rtt))
}

/// Connects to `to`, retrying every 100 ms for up to 15 s while the far
/// side comes up; panics (failing the role) after that.
pub fn connect_retrying(to: SocketAddr) -> TcpStream {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        match TcpStream::connect_timeout(&to, Duration::from_secs(5)) {
            Ok(c) => return c,
            Err(e) if Instant::now() < end => {
                eprintln!("connect {to}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("connect {to}: {e}"),
        }
    }
}

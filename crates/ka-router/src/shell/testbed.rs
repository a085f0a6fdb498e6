//! A two-namespace testbed joined by a router (DESIGN §8.2).
//!
//! Mahimahi's wiring: two TUN devices are created in the root namespace
//! (`ip tuntap add`), a router process attaches to both, then each device is
//! moved into its own network namespace, addressed and brought up there. The
//! router is the only wire between namespace A (`10.77.0.1/24` on `dev_a`) and
//! namespace B (`10.77.0.2/24` on `dev_b`); both ends sit in one /24, so each
//! side reaches the other on-link (a TUN device needs no neighbour
//! resolution). Namespaces are private, so every testbed can use the same
//! addresses; names carry the process id and a counter so parallel tests never
//! collide.
//!
//! Everything is undone on drop — the router is stopped, namespaces and
//! devices deleted — also when a test panics. Testbeds left behind by a killed
//! process (whose pid no longer exists) are removed by the next
//! [`Testbed::new`]. Requires root (or `CAP_NET_ADMIN` + `CAP_SYS_ADMIN`),
//! `/dev/net/tun` and iproute2's `ip`.
//!
//! Used by `crates/ka-router/tests/netns*.rs`; the endpoint's tests can use
//! it too (`ka-router` with feature `cli`), starting any program that attaches
//! to [`Testbed::dev_a`] / [`Testbed::dev_b`] — or their own in-process
//! router — followed by [`Testbed::wait_attached`] and [`Testbed::wire`].

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Namespace and device names start with this, then `<pid>x<n>` and `a`/`b`.
pub const PREFIX: &str = "katb";
/// Address of namespace A's end.
pub const ADDR_A: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Address of namespace B's end.
pub const ADDR_B: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// Prefix length of the shared subnet.
pub const PREFIX_LEN: u8 = 24;
/// How long to wait for the router to attach.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(20);

/// One end of the testbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Namespace A, behind the router's `--in` device.
    A,
    /// Namespace B, behind the router's `--out` device.
    B,
}

/// Why a testbed cannot run here (`None` from [`unavailable`] = it can).
pub fn unavailable() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid_root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        == Some("0");
    if !euid_root {
        return Some("not running as root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("iproute2 `ip` is not available".into()),
    }
}

/// Run a command, turning a non-zero exit into an error with its stderr.
pub fn checked(cmd: &mut Command) -> io::Result<Output> {
    let out = cmd.stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(io::Error::other(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn ip(args: &[&str]) -> io::Result<Output> {
    checked(Command::new("ip").args(args))
}

/// Poll `cond` every few milliseconds until it holds or `timeout` passes.
pub fn wait_for(
    timeout: Duration,
    what: &str,
    mut cond: impl FnMut() -> io::Result<bool>,
) -> io::Result<()> {
    let end = Instant::now() + timeout;
    loop {
        if cond()? {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("timed out after {timeout:?} waiting for {what}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a stopped router left behind.
#[derive(Debug)]
pub struct RouterExit {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr (logs).
    pub stderr: String,
}

/// A pair of namespaces joined by a router; see the module docs.
#[derive(Debug)]
pub struct Testbed {
    /// Name of namespace A.
    pub ns_a: String,
    /// Name of namespace B.
    pub ns_b: String,
    /// TUN device that ends up in A (the router's `--in`).
    pub dev_a: String,
    /// TUN device that ends up in B (the router's `--out`).
    pub dev_b: String,
    dir: PathBuf,
    router: Option<Child>,
    /// The running router's log files: `<stem>.out`, `<stem>.err`.
    log_stem: String,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl Testbed {
    /// Create both namespaces (loopback up) and both TUN devices (in the root
    /// namespace, `ip tuntap add … mode tun`), plus a scratch directory for
    /// logs and captures ([`Testbed::path`]).
    pub fn new() -> io::Result<Self> {
        remove_stale();
        let id = format!(
            "{PREFIX}{}x{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed) % 100
        );
        let dir = std::env::temp_dir().join(format!("ka-testbed-{id}"));
        std::fs::create_dir_all(&dir)?;
        let tb = Testbed {
            ns_a: format!("{id}a"),
            ns_b: format!("{id}b"),
            dev_a: format!("{id}a"),
            dev_b: format!("{id}b"),
            dir,
            router: None,
            log_stem: "router".into(),
        };
        for (ns, dev) in [(&tb.ns_a, &tb.dev_a), (&tb.ns_b, &tb.dev_b)] {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["tuntap", "add", "dev", dev, "mode", "tun"])?;
            // No IPv6 from the root namespace's kernel while the router
            // holds the device there: moving it into its namespace takes it
            // down, and a packet the router is writing then fails (EIO).
            // Best effort: a kernel without IPv6 has no such file.
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
        }
        Ok(tb)
    }

    /// A file in this testbed's scratch directory (removed on drop unless
    /// `KA_TESTBED_KEEP` is set).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The address of `side`'s end.
    pub fn addr(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::A => ADDR_A,
            Side::B => ADDR_B,
        }
    }

    /// The namespace of `side`.
    pub fn ns(&self, side: Side) -> &str {
        match side {
            Side::A => &self.ns_a,
            Side::B => &self.ns_b,
        }
    }

    /// Start `program --in <dev_a> --out <dev_b> <args…>` (its stdout/stderr
    /// go to `router.out`/`router.err` in the scratch directory), wait until
    /// it has attached to both devices, then [`Testbed::wire`] them.
    pub fn start_router<S: AsRef<OsStr>>(&mut self, program: &Path, args: &[S]) -> io::Result<()> {
        let child = Command::new(program)
            .arg("--in")
            .arg(&self.dev_a)
            .arg("--out")
            .arg(&self.dev_b)
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(self.path("router.out"))?)
            .stderr(File::create(self.path("router.err"))?)
            .spawn()?;
        self.router = Some(child);
        self.wait_attached()?;
        self.wire()
    }

    /// Wait until something holds both devices open (each reports carrier),
    /// failing early if the router started by [`Testbed::start_router`]
    /// exits.
    pub fn wait_attached(&mut self) -> io::Result<()> {
        let devs = [self.dev_a.clone(), self.dev_b.clone()];
        let router = &mut self.router;
        let dir = &self.dir;
        wait_for(ATTACH_TIMEOUT, "the router to attach", || {
            let exited = router.as_mut().map(Child::try_wait).transpose()?.flatten();
            if let Some(st) = exited {
                let err = std::fs::read_to_string(dir.join("router.err")).unwrap_or_default();
                return Err(io::Error::other(format!(
                    "router exited early ({st}): {err}"
                )));
            }
            Ok(devs.iter().all(|d| {
                std::fs::read_to_string(format!("/sys/class/net/{d}/carrier"))
                    .is_ok_and(|s| s.trim() == "1")
            }))
        })
    }

    /// Move each device into its namespace, address it and bring it up.
    ///
    /// IPv6 stays off on both devices until both are up: a device's kernel
    /// sends IPv6 (MLD, neighbour discovery) the moment it goes up, and the
    /// router would write that to the other device while it is still down
    /// (`EIO`, counted as a write error).
    pub fn wire(&mut self) -> io::Result<()> {
        let sides = [
            (Side::A, self.ns_a.clone(), self.dev_a.clone()),
            (Side::B, self.ns_b.clone(), self.dev_b.clone()),
        ];
        for (side, ns, dev) in &sides {
            let addr = format!("{}/{PREFIX_LEN}", self.addr(*side));
            ip(&["link", "set", dev, "netns", ns])?;
            ip(&["-n", ns, "addr", "add", &addr, "dev", dev])?;
        }
        let ipv6 = |on: bool| -> io::Result<()> {
            for (side, _, dev) in &sides {
                let key = format!("net.ipv6.conf.{dev}.disable_ipv6");
                self.sysctl(*side, &key, if on { "0" } else { "1" })?;
            }
            Ok(())
        };
        ipv6(false)?;
        for (_, ns, dev) in &sides {
            ip(&["-n", ns, "link", "set", dev, "mtu", "1500", "up"])?;
        }
        ipv6(true)
    }

    /// A command that runs `program` inside `side`'s namespace
    /// (`ip netns exec`).
    pub fn command(&self, side: Side, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.arg("netns").arg("exec").arg(self.ns(side)).arg(program);
        c
    }

    /// Run `args` inside `side`'s namespace and check it succeeded.
    pub fn run(&self, side: Side, args: &[&str]) -> io::Result<Output> {
        let (program, rest) = args
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
        checked(self.command(side, program).args(rest))
    }

    /// Set a sysctl inside `side`'s namespace (`net.*` keys are per
    /// namespace).
    pub fn sysctl(&self, side: Side, key: &str, value: &str) -> io::Result<()> {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        // `sh -c` so the write happens inside the namespace's /proc/sys view.
        self.run(side, &["sh", "-c", &format!("echo {value} > {path}")])
            .map(|_| ())
    }

    /// Re-run the current test executable inside `side`'s namespace with only
    /// test `test_name` (`--exact`), e.g. a helper test that acts as a sender
    /// or receiver when an environment variable says so.
    pub fn self_command(&self, side: Side, test_name: &str) -> io::Result<Command> {
        let exe = std::env::current_exe()?;
        let mut c = self.command(side, exe);
        c.args([test_name, "--exact", "--nocapture", "--test-threads", "1"]);
        Ok(c)
    }

    /// Stop the router with SIGTERM (SIGKILL after 10 s) and collect its
    /// output.
    pub fn stop_router(&mut self) -> io::Result<RouterExit> {
        let mut child = self
            .router
            .take()
            .ok_or_else(|| io::Error::other("no router running"))?;
        let status = terminate(&mut child)?;
        Ok(RouterExit {
            status,
            stdout: std::fs::read_to_string(self.path(&format!("{}.out", self.log_stem)))
                .unwrap_or_default(),
            stderr: std::fs::read_to_string(self.path(&format!("{}.err", self.log_stem)))
                .unwrap_or_default(),
        })
    }
}

impl Testbed {
    /// The running router's process id (`None` if none runs).
    pub fn router_pid(&self) -> Option<u32> {
        self.router.as_ref().map(Child::id)
    }

    /// Kill the router with SIGKILL, as a crash would: no summary, and the
    /// devices (persistent, made by `ip tuntap add`) stay in their
    /// namespaces with their addresses, without carrier.
    pub fn kill_router(&mut self) -> io::Result<ExitStatus> {
        let mut child = self
            .router
            .take()
            .ok_or_else(|| io::Error::other("no router running"))?;
        child.kill()?;
        child.wait()
    }

    /// Start `program` again on the wired devices, which now live in the
    /// namespaces: `--in <dev_a> --in-netns <ns_a> --out <dev_b> --out-netns
    /// <ns_b> <args…>` (its output goes to `router-N.out`/`.err`, `N`
    /// counting restarts), and wait until both devices have carrier again.
    pub fn restart_router<S: AsRef<OsStr>>(
        &mut self,
        program: &Path,
        args: &[S],
        n: u32,
    ) -> io::Result<()> {
        if self.router.is_some() {
            return Err(io::Error::other("a router is still running"));
        }
        let child = Command::new(program)
            .args(["--in", &self.dev_a, "--in-netns", &self.ns_a])
            .args(["--out", &self.dev_b, "--out-netns", &self.ns_b])
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(self.path(&format!("router-{n}.out")))?)
            .stderr(File::create(self.path(&format!("router-{n}.err")))?)
            .spawn()?;
        self.router = Some(child);
        self.log_stem = format!("router-{n}");
        let pairs = [
            (self.ns_a.clone(), self.dev_a.clone()),
            (self.ns_b.clone(), self.dev_b.clone()),
        ];
        let router = &mut self.router;
        wait_for(ATTACH_TIMEOUT, "the restarted router to attach", || {
            if let Some(st) = router.as_mut().map(Child::try_wait).transpose()?.flatten() {
                return Err(io::Error::other(format!("router exited early ({st})")));
            }
            let mut up = true;
            for (ns, dev) in &pairs {
                let out = ip(&["-n", ns, "link", "show", "dev", dev])?;
                up &= !String::from_utf8_lossy(&out.stdout).contains("NO-CARRIER");
            }
            Ok(up)
        })
    }
}

/// SIGTERM, wait up to 10 s, then SIGKILL.
fn terminate(child: &mut Child) -> io::Result<ExitStatus> {
    if let Some(st) = child.try_wait()? {
        return Ok(st);
    }
    // The shell's built-in `kill`: no procps needed, and no `unsafe` here.
    let _ = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", child.id())])
        .stderr(Stdio::null())
        .status();
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill()?;
    child.wait()
}

fn delete(ns: &str, dev: &str) {
    let quiet = |args: &[&str]| {
        let _ = Command::new("ip")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    };
    quiet(&["-n", ns, "link", "del", dev]);
    quiet(&["link", "del", dev]);
    quiet(&["netns", "del", ns]);
}

/// Remove namespaces and devices of testbeds whose process is gone.
fn remove_stale() {
    let list = |args: &[&str]| -> Vec<String> {
        Command::new("ip")
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                // `ip netns list`: "name (id: 3)"; `ip -o link`: "7: name: <…"
                let name = if args.first() == Some(&"netns") {
                    l.split_whitespace().next()
                } else {
                    l.split(": ")
                        .nth(1)
                        .map(|n| n.split('@').next().unwrap_or(n))
                };
                name.map(str::to_owned)
            })
            .collect()
    };
    let dead = |name: &str| -> bool {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            return false;
        };
        let Some((pid, _)) = rest.split_once('x') else {
            return false;
        };
        !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !Path::new(&format!("/proc/{pid}")).exists()
    };
    for ns in list(&["netns", "list"]).iter().filter(|n| dead(n)) {
        delete(ns, ns);
    }
    for dev in list(&["-o", "link"]).iter().filter(|n| dead(n)) {
        delete(dev, dev);
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Some(mut c) = self.router.take() {
            let _ = terminate(&mut c);
        }
        delete(&self.ns_a, &self.dev_a);
        delete(&self.ns_b, &self.dev_b);
        if std::env::var_os("KA_TESTBED_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("testbed files kept in {}", self.dir.display());
        }
    }
}

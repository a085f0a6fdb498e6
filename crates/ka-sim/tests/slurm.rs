//! A sweep's Slurm job array on a real Slurm cluster: a one-node cluster
//! (munged, slurmctld, slurmd) started entirely in a temporary directory,
//! `ka-sim sweep --slurm --shards 4`, the printed `sbatch` command, the
//! array's four tasks, `ka-sim merge`; the merged `sweep.csv` (and plot)
//! must equal the one-process run's byte for byte.
//!
//! Needs root (the daemons run as root with their state in the temporary
//! directory) and the installed `munged`, `slurmctld`, `slurmd` and the
//! Slurm client commands (Debian: `apt-get install slurm-wlm munge`).
//! Without root it prints a loud SKIP; without the programs too, except
//! under CI (`CI=true`), where a missing program fails the test. Every
//! process it started is stopped and the directory removed when it ends,
//! pass or fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SWEEP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sweep-tiny.toml");
const KA_SIM: &str = env!("CARGO_BIN_EXE_ka-sim");

/// Bound on the cluster coming up (daemons start in well under a second).
const UP_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound on the array job (the six tiny points take seconds).
const JOB_TIMEOUT: Duration = Duration::from_secs(300);
/// Polling interval of the waits above.
const POLL: Duration = Duration::from_millis(200);

fn skip(why: &str) {
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!! SKIPPING real-Slurm test sweep_array_on_a_one_node_cluster: {why}");
    eprintln!("!! (needs root and slurm-wlm + munge installed; CI runs it as root)");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
}

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// `tool` on `PATH` or in the sbin directories (daemons live there).
fn find(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn hostname() -> String {
    let h = fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_else(|_| "localhost".into());
    h.trim()
        .split('.')
        .next()
        .unwrap_or("localhost")
        .to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port")
}

/// The cluster: its directory and daemons. Dropping it stops every process
/// it started (each daemon's process group, then any process still
/// carrying this cluster's `SLURM_CONF`: job steps that `slurmstepd` put
/// in sessions of their own) and removes the directory.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    /// (name, child); each child leads its own process group.
    daemons: Vec<(&'static str, Child)>,
}

impl Cluster {
    fn tmp() -> Cluster {
        let dir = std::env::temp_dir().join(format!("ka-slurm-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for sub in ["", "munge", "state", "spool", "out"] {
            fs::create_dir_all(dir.join(sub)).unwrap();
        }
        Cluster {
            conf: dir.join("slurm.conf"),
            dir,
            daemons: Vec::new(),
        }
    }

    fn spawn(&mut self, name: &'static str, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let log = fs::File::create(self.dir.join(format!("{name}.out"))).unwrap();
        let child = cmd
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Panics (with the daemon's output) if a daemon has exited.
    fn check_alive(&mut self) {
        let mut dead = None;
        for (name, child) in &mut self.daemons {
            if let Ok(Some(status)) = child.try_wait() {
                dead = Some((*name, status));
                break;
            }
        }
        if let Some((name, status)) = dead {
            panic!(
                "{name} exited ({status}):\n{}\n{}",
                self.log(&format!("{name}.out")),
                self.log(&format!("{name}.log"))
            );
        }
    }

    fn log(&self, name: &str) -> String {
        let text = fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("--- {name} (last lines)\n{}", tail.join("\n"))
    }

    /// A Slurm client command against this cluster.
    fn slurm(&self, tool: &Path, args: &[&str]) -> Output {
        Command::new(tool)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", tool.display()))
    }

    /// Polls `ready` every [`POLL`] until it is true, at most `limit`.
    fn wait(&mut self, what: &str, limit: Duration, mut ready: impl FnMut(&Self) -> bool) {
        let t0 = Instant::now();
        loop {
            self.check_alive();
            if ready(self) {
                eprintln!("{what}: {:.1} s", t0.elapsed().as_secs_f64());
                return;
            }
            if t0.elapsed() > limit {
                panic!(
                    "{what}: not within {limit:?}\n{}\n{}",
                    self.log("slurmctld.log"),
                    self.log("slurmd.log")
                );
            }
            std::thread::sleep(POLL);
        }
    }

    fn kill_group(child: &mut Child) {
        let pgid = format!("-{}", child.id());
        let signal = |sig: &str| {
            let _ = Command::new("kill")
                .args([sig, "--", &pgid])
                .stderr(Stdio::null())
                .status();
        };
        signal("-TERM");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal("-KILL");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Processes (other than this one) whose environment names this
    /// cluster's configuration: only this cluster's daemons start those.
    fn stragglers(&self) -> Vec<String> {
        let needle = format!("SLURM_CONF={}\0", self.conf.display()).into_bytes();
        let me = std::process::id().to_string();
        let Ok(procs) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()) && *pid != me)
            .filter(|pid| {
                fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle))
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd first (no new job steps), munged last (the others use it).
        while let Some((_, mut child)) = self.daemons.pop() {
            Self::kill_group(&mut child);
        }
        for _ in 0..2 {
            let left = self.stragglers();
            if left.is_empty() {
                break;
            }
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(&left)
                .stderr(Stdio::null())
                .status();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

struct Tools {
    munged: PathBuf,
    slurmctld: PathBuf,
    slurmd: PathBuf,
    sbatch: PathBuf,
    sinfo: PathBuf,
    scontrol: PathBuf,
    squeue: PathBuf,
}

fn tools() -> Result<Tools, String> {
    let get = |t: &str| find(t).ok_or_else(|| format!("`{t}` not found"));
    Ok(Tools {
        munged: get("munged")?,
        slurmctld: get("slurmctld")?,
        slurmd: get("slurmd")?,
        sbatch: get("sbatch")?,
        sinfo: get("sinfo")?,
        scontrol: get("scontrol")?,
        squeue: get("squeue")?,
    })
}

fn slurm_conf(c: &Cluster, host: &str, cpus: usize) -> String {
    let d = c.dir.display();
    format!(
        "# One-node test cluster of crates/ka-sim/tests/slurm.rs.
ClusterName=kasimtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munged.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
",
        ctld_port = free_port(),
        slurmd_port = free_port(),
    )
}

fn run_ok(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn ka_sim(args: &[&str]) -> Output {
    run_ok(Command::new(KA_SIM).args(args))
}

#[test]
fn sweep_array_on_a_one_node_cluster() {
    if !is_root() {
        skip("not root");
        return;
    }
    let t = match tools() {
        Ok(t) => t,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true but {why}: .ci/run installs slurm-wlm and munge")
        }
        Err(why) => {
            skip(&why);
            return;
        }
    };
    let t0 = Instant::now();
    let mut c = Cluster::tmp();
    let host = hostname();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    fs::write(&c.conf, slurm_conf(&c, &host, cpus)).unwrap();

    // munged as root (--force) on a key and socket of its own.
    let key = c.dir.join("munge/munge.key");
    let mut bytes = vec![0u8; 1024];
    std::io::Read::read_exact(&mut fs::File::open("/dev/urandom").unwrap(), &mut bytes).unwrap();
    fs::write(&key, &bytes).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o400)).unwrap();
    }
    let m = c.dir.join("munge");
    let arg = |k: &str, f: &str| format!("--{k}={}", m.join(f).display());
    c.spawn(
        "munged",
        Command::new(&t.munged).args([
            "--foreground".to_string(),
            "--force".into(),
            arg("key-file", "munge.key"),
            arg("socket", "munged.socket"),
            arg("pid-file", "munged.pid"),
            arg("log-file", "munged.log"),
            arg("seed-file", "munged.seed"),
        ]),
    );
    let socket = m.join("munged.socket");
    c.wait("munged socket", UP_TIMEOUT, |_| socket.exists());

    let conf = c.conf.clone();
    c.spawn(
        "slurmctld",
        Command::new(&t.slurmctld).arg("-D").arg("-f").arg(&conf),
    );
    c.spawn(
        "slurmd",
        Command::new(&t.slurmd)
            .arg("-D")
            .arg("-f")
            .arg(&conf)
            .args(["-N", &host]),
    );
    c.wait("slurmctld answers", UP_TIMEOUT, |c| {
        let o = c.slurm(&t.scontrol, &["ping"]);
        String::from_utf8_lossy(&o.stdout).contains("is UP")
    });
    c.wait("node idle", UP_TIMEOUT, |c| {
        let o = c.slurm(&t.sinfo, &["-h", "-N", "-o", "%t"]);
        String::from_utf8_lossy(&o.stdout).trim() == "idle"
    });

    // The reference: the whole sweep in this process's child, merged.
    let one = c.dir.join("out/one");
    let one_s = one.to_str().unwrap();
    ka_sim(&["sweep", SWEEP, "--out", one_s, "--jobs", "2"]);
    ka_sim(&["merge", one_s]);

    // The job array: the command ka-sim prints, submitted as printed.
    let array = c.dir.join("out/array");
    let array_s = array.to_str().unwrap();
    let o = ka_sim(&["sweep", SWEEP, "--out", array_s, "--slurm", "--shards", "4"]);
    let printed = String::from_utf8(o.stdout).unwrap();
    let script = printed
        .trim()
        .strip_prefix("sbatch ")
        .unwrap_or_else(|| panic!("not an sbatch command: {printed}"))
        .to_string();
    assert!(Path::new(&script).is_absolute() && Path::new(&script).exists());
    let o = c.slurm(&t.sbatch, &["--parsable", &script]);
    assert!(
        o.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let id = String::from_utf8_lossy(&o.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()),
        "job id {id}"
    );

    // Done when squeue lists the four tasks, all in a final state.
    let states = |c: &Cluster| -> Vec<String> {
        let o = c.slurm(&t.squeue, &["-h", "-j", &id, "--states=all", "-o", "%i %T"]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let busy = [
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
    ];
    let t_job = Instant::now();
    c.wait("job array finished", JOB_TIMEOUT, |c| {
        let s = states(c);
        s.len() == 4 && s.iter().all(|l| !busy.iter().any(|b| l.ends_with(b)))
    });
    let job_s = t_job.elapsed().as_secs_f64();
    let s = states(&c);
    let logs: Vec<String> = fs::read_dir(array.join("slurm-logs"))
        .map(|d| {
            d.flatten()
                .map(|e| {
                    format!(
                        "--- {}\n{}",
                        e.path().display(),
                        fs::read_to_string(e.path()).unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(
        s.iter().all(|l| l.ends_with(" COMPLETED")),
        "array tasks: {s:?}\n{}",
        logs.join("\n")
    );
    assert_eq!(logs.len(), 4, "one log per array task");

    ka_sim(&["merge", array_s]);
    for f in ["sweep.csv", "sweep.svg"] {
        let a = fs::read(one.join(f)).unwrap();
        let b = fs::read(array.join(f)).unwrap();
        assert!(
            a == b,
            "{f}: the array's merge differs from the single run's"
        );
    }
    let csv = fs::read_to_string(array.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    eprintln!(
        "slurm test: job array {job_s:.1} s, whole test {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

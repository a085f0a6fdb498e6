//! The short version of `ka-testbed` in the normal test run: the light-load
//! experiment with two schemes (KA and kernel CUBIC), two senders and 20 s
//! each, on real network namespaces, plus its simulation. Checks the
//! outputs' invariants (every flow's bytes arrive whole, FCTs positive, the
//! router's queue sampled, ka-sim's columns) and that nothing is left
//! behind; and that Ctrl-C (SIGINT) mid-run tears everything down.
//!
//! Needs root, `/dev/net/tun` and iproute2 (CI runs as root); skipped
//! loudly otherwise.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ka_sim::results::output::{FLOWS_HEADER, SERIES_HEADER};

const TESTBED: &str = env!("CARGO_BIN_EXE_ka-testbed");

/// The real-network helpers the router's and the endpoint's tests share:
/// `serial()` (one real-network run at a time: they time things on a
/// 2-CPU machine), the loud skip, and the `ka-router` binary built on
/// first use.
#[allow(dead_code)]
#[path = "../../crates/ka-router/tests/netns_common/harness.rs"]
mod harness;
use harness::{available_or_skip as available, router_bin, serial};

/// Names of the namespaces and links the testbed of process `pid` made.
fn leftovers(pid: u32) -> Vec<String> {
    let prefix = format!("katb{pid}x");
    let list = |args: &[&str]| {
        let o = Command::new("ip").args(args).output().expect("ip");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let mut v: Vec<String> = list(&["netns", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_owned)
        .collect();
    v.extend(
        list(&["-o", "link"])
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .filter(|n| n.starts_with(&prefix))
            .map(str::to_owned),
    );
    v
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ka-testbed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn csv(path: &Path) -> (String, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().to_owned();
    let rows = lines
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    (header, rows)
}

/// Checks one run directory (`real/<scheme>` or `sim/<scheme>`); returns
/// the number of completed flows.
fn check_run(dir: &Path, kind: &str, duration_s: f64) -> usize {
    let (h, flows) = csv(&dir.join("flows.csv"));
    assert_eq!(h, FLOWS_HEADER, "{}", dir.display());
    assert!(
        flows.len() >= 5,
        "{}: only {} flows",
        dir.display(),
        flows.len()
    );
    let mut completed = 0;
    for f in &flows {
        assert_eq!(f.len(), 9, "{f:?}");
        assert_eq!(f[1], kind, "{f:?}");
        let (pkts, bytes): (u64, u64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        assert_eq!(bytes, pkts * 1448, "flow size in bytes: {f:?}");
        let start: f64 = f[4].parse().unwrap();
        assert!((0.0..duration_s).contains(&start), "{f:?}");
        if !f[6].is_empty() {
            completed += 1;
            let (end, fct): (f64, f64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
            assert!(fct > 0.0, "FCT not positive: {f:?}");
            assert!(
                (end - start - fct).abs() < 1e-6 && end <= duration_s + 1e-9,
                "{f:?}"
            );
            // At least half an RTT of propagation plus the handshake's RTT.
            assert!(fct >= 0.1, "FCT below one RTT: {f:?}");
        }
    }
    assert!(
        completed >= 5,
        "{}: {completed} flows completed",
        dir.display()
    );
    let (h, series) = csv(&dir.join("series.csv"));
    assert_eq!(h, SERIES_HEADER);
    let count = |metric: &str, entity: &str| {
        series
            .iter()
            .filter(|r| {
                r.get(1).map(String::as_str) == Some(metric)
                    && r.get(2).map(String::as_str) == Some(entity)
            })
            .count()
    };
    let bins = (duration_s / 0.1) as usize;
    for metric in ["utilization", "queue_pkts"] {
        let n = count(
            metric,
            if metric == "utilization" {
                "link:bottleneck"
            } else {
                "port:bottleneck"
            },
        );
        assert!(
            n >= bins * 8 / 10,
            "{}: {n} {metric} samples of {bins} bins",
            dir.display()
        );
    }
    assert!(
        count("sojourn_ms", "port:bottleneck") > 0,
        "{}: no queueing delays",
        dir.display()
    );
    assert!(
        series
            .iter()
            .any(|r| r.get(1).map(String::as_str) == Some("throughput_bps")),
        "{}: no tracked flow's throughput",
        dir.display()
    );
    for f in ["summary.json", "scenario.toml", "timeseries.svg"] {
        assert!(dir.join(f).exists(), "{} missing in {}", f, dir.display());
    }
    completed
}

/// KA and kernel CUBIC, 2 senders, 20 s each, real and simulated.
#[test]
fn short_light_run_keeps_its_invariants_and_cleans_up() {
    let _serial = serial();
    if !available("short_light_run_keeps_its_invariants_and_cleans_up") {
        return;
    }
    let out = scratch("short");
    let t = Instant::now();
    let child = Command::new(TESTBED)
        .args([
            "light",
            "--schemes",
            "ka,cubic",
            "--senders",
            "2",
            "--duration",
            "20s",
        ])
        .arg("--router")
        .arg(router_bin())
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting ka-testbed");
    let pid = child.id();
    let o = child.wait_with_output().expect("ka-testbed");
    let stdout = String::from_utf8_lossy(&o.stdout);
    eprintln!("{stdout}");
    assert!(
        o.status.success(),
        "ka-testbed failed ({}): see above",
        o.status
    );
    eprintln!("ka-testbed took {:?}", t.elapsed());
    assert!(
        leftovers(pid).is_empty(),
        "left behind: {:?}",
        leftovers(pid)
    );
    // The runner's own invariant checks: all printed and passing.
    let invariants: Vec<&str> = stdout.lines().filter(|l| l.contains("(real):")).collect();
    assert_eq!(
        invariants.len(),
        8,
        "4 invariants per scheme: {invariants:?}"
    );
    assert!(
        invariants.iter().all(|l| l.starts_with("[PASS]")),
        "{invariants:?}"
    );
    assert!(
        stdout.lines().any(|l| l.contains("sim vs real, ka")),
        "{stdout}"
    );
    for (scheme, kind) in [("ka", "ka"), ("cubic", "tcp-cubic")] {
        let real = check_run(&out.join("real").join(scheme), kind, 20.0);
        let sim = check_run(&out.join("sim").join(scheme), kind, 20.0);
        // The same random streams: about as many flows in both halves.
        let (lo, hi) = (real.min(sim) as f64, real.max(sim) as f64);
        assert!(
            lo >= 0.7 * hi,
            "{scheme}: {real} real vs {sim} simulated flows"
        );
        assert!(out.join("real").join(scheme).join("router.out").exists());
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("testbed-light.json")).unwrap())
            .unwrap();
    assert!(
        json["real/ka"]["queue_delay_ms"]["median"].is_number(),
        "{json}"
    );
    assert!(json["sim_vs_real"]["cubic"].is_array(), "{json}");
    for f in [
        "testbed-light.svg",
        "testbed-light-sim.svg",
        "sim-vs-real.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// SIGINT while a scheme runs: the runner stops, says so, exits non-zero,
/// and its namespaces and devices are gone.
#[test]
fn ctrl_c_tears_everything_down() {
    let _serial = serial();
    if !available("ctrl_c_tears_everything_down") {
        return;
    }
    let out = scratch("sigint");
    let mut child = Command::new(TESTBED)
        .args([
            "light",
            "--schemes",
            "ka",
            "--senders",
            "2",
            "--duration",
            "60s",
            "--no-sim",
        ])
        .arg("--router")
        .arg(router_bin())
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ka-testbed");
    let pid = child.id();
    // Running: its namespaces exist and the senders' devices are up.
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let here = leftovers(pid);
        if here.len() >= 2 && out.join("real/ka/senders.log").exists() {
            break;
        }
        assert!(Instant::now() < end, "the testbed never came up: {here:?}");
        assert!(
            child.try_wait().unwrap().is_none(),
            "ka-testbed exited early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().expect("ka-testbed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "exit status {}: {err}", o.status);
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        leftovers(pid).is_empty(),
        "left behind: {:?}",
        leftovers(pid)
    );
    let _ = std::fs::remove_dir_all(&out);
}

//! One scenario on real network namespaces.
//!
//! The testbed (`ka_router::shell::testbed::Testbed`: namespaces A and B
//! joined only by two TUN devices and the `ka-router` binary) gets the
//! scenario's bottleneck as router flags — `--rate C`, `--delay RTT/2`
//! (the round trip is twice that; this kernel has no netem), `--queue`,
//! `--signal ka|none|rcp|xcp` (the reverse direction, which carries the
//! ACKs, stays drop-tail as in the simulator) — and everything else the
//! simulator's ports are built from (the scenario's `[router]` table, the
//! bottleneck's queue discipline and RWM) as `--config router.toml`, the
//! same types serialised ([`router_file`]); it polls the router's metrics
//! ([`crate::metrics`]).
//! Namespace settings: `ip_forward` (the userspace hosts sit behind their
//! own TUN devices), `tcp_no_metrics_save` (every kernel flow starts fresh,
//! like the simulator's, instead of from the ssthresh cached for the
//! destination), `tcp_ecn=1` when the scenario's `[tcp]` asks for ECN, and
//! and the kernel hosts pick their congestion control per socket. Then the receiver ([`crate::hosts`]) in
//! B, the senders in A with time zero one second ahead, and at
//! `t0 + duration` everything stops; what the hosts printed becomes a
//! `RunResult` ([`crate::assemble`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use ka_io::host::StealMeter;
use ka_router::RouterFile;
use ka_router::shell::testbed::{Side, Testbed};
use ka_sim::results::RunResult;
use ka_sim::scenario::{PortKind, Scenario, Topology, Workload};

use crate::hosts::MAX_SENDERS;
use crate::metrics::{self, POLL, Poller};
use crate::procs::{self, Child};
use crate::wire::now_ns;

/// How the real runs are made.
#[derive(Debug, Clone)]
pub struct RealOpts {
    /// The `ka-router` binary.
    pub router: PathBuf,
    /// This program (re-run as the host processes).
    pub me: PathBuf,
    /// `--realtime` priority for the router's pacing thread.
    pub realtime: Option<u8>,
}

/// What a real run leaves besides its `RunResult`.
#[derive(Debug, Clone)]
pub struct RealRun {
    /// The results, in the simulator's form.
    pub result: RunResult,
    /// Notes on the host during the run (JSON).
    pub host: serde_json::Value,
    /// The run's invariants ([`crate::checks::sanity`]).
    pub sanity: Vec<ka_sim::paper::claims::Claim>,
}

/// The router's configuration file for `s`: its `[router]` knobs and the
/// bottleneck's queue discipline and RWM, the same types the simulator
/// builds its ports from (`ka_router::RouterFile`, `ka-router --config`).
pub fn router_file(s: &Scenario) -> anyhow::Result<String> {
    let Topology::Dumbbell(d) = &s.topology else {
        bail!("the testbed builds dumbbell scenarios only (one bottleneck)");
    };
    let file = RouterFile {
        router: s.router,
        qdisc: Some(d.queue),
        rwm: d.rwm.clone(),
        // The bottleneck's impairments, each direction its own (the
        // reverse one written out whenever either is on, as the router
        // otherwise gives the reverse direction the forward's).
        impair: (!d.impair.is_default()).then_some(d.impair),
        reverse_impair: (!(d.impair.is_default() && d.reverse_impair.is_default()))
            .then_some(d.reverse_impair),
    };
    Ok(toml::to_string(&file)?)
}

/// The router flags for `s`'s bottleneck, with its knobs in the file
/// `config` ([`router_file`]); errors for what the testbed cannot build.
pub fn router_args(
    s: &Scenario,
    metrics: &str,
    realtime: Option<u8>,
    config: &Path,
) -> anyhow::Result<Vec<String>> {
    let Topology::Dumbbell(d) = &s.topology else {
        bail!("the testbed builds dumbbell scenarios only (one bottleneck)");
    };
    if d.reverse_port != PortKind::Droptail {
        bail!("the testbed's reverse direction is a plain drop-tail port");
    }
    let signal = match d.port {
        PortKind::Ka => "ka",
        PortKind::Droptail => "none",
        PortKind::Rcp => "rcp",
        PortKind::Xcp => "xcp",
    };
    let mut a: Vec<String> = vec![
        "--rate".into(),
        format!("{}", (d.capacity_mbps * 1e6).round() as u64),
        "--delay".into(),
        format!("{}us", (d.rtt_ms * 500.0).round() as u64),
        "--queue".into(),
        d.queue_pkts.to_string(),
        "--signal".into(),
        signal.into(),
        "--metrics".into(),
        metrics.into(),
        "--reverse-qdisc".into(),
        "droptail".into(),
        "--config".into(),
        config.display().to_string(),
    ];
    if let Some(p) = realtime {
        a.extend(["--realtime".into(), p.to_string()]);
    }
    Ok(a)
}

/// Checks that the testbed can play `s`'s hosts.
fn check_hosts(s: &Scenario) -> anyhow::Result<()> {
    let [g] = s.groups.as_slice() else {
        bail!("the testbed runs scenarios with exactly one sender group");
    };
    if !matches!(g.workload, Workload::OnOff { .. }) {
        bail!("the testbed runs on-off workloads only");
    }
    if g.count == 0 || g.count > MAX_SENDERS {
        bail!("1 to {MAX_SENDERS} senders, not {}", g.count);
    }
    if g.rtt_ms.is_some() || g.from != 0 || g.to.is_some_and(|t| t != 1) {
        bail!("every sender has the path's RTT and crosses the one bottleneck");
    }
    if let Topology::Dumbbell(d) = &s.topology
        && (d.access.delay_ms != 0.0 || d.access.rate_mbps < 10.0 * d.capacity_mbps)
    {
        bail!("access links must be fast and without delay (the testbed has none)");
    }
    Ok(())
}

fn write_scenario(s: &Scenario, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let p = dir.join("scenario.toml");
    std::fs::write(&p, s.to_toml())?;
    Ok(p)
}

fn host_command(
    tb: &Testbed,
    side: Side,
    o: &RealOpts,
    role: &str,
    scenario: &Path,
    t0: u64,
) -> Command {
    let mut c = tb.command(side, &o.me);
    c.arg("host")
        .args(["--role", role])
        .arg("--scenario")
        .arg(scenario)
        .args(["--t0-ns", &t0.to_string()])
        .env("RUST_LOG", "warn");
    c
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Runs `s` on a fresh testbed; writes the hosts' logs, the router's output
/// and the scenario into `dir`. `label` prefixes the progress lines.
pub fn run(s: &Scenario, dir: &Path, o: &RealOpts, label: &str) -> anyhow::Result<RealRun> {
    check_hosts(s)?;
    let metrics_addr = format!("127.0.0.1:{}", free_port()?);
    let scenario_file = write_scenario(s, dir)?;
    let config = dir.join("router.toml");
    std::fs::write(&config, router_file(s)?)?;
    let args = router_args(s, &metrics_addr, o.realtime, &config)?;
    procs::check_stop()?;
    let mut tb = Testbed::new().context("creating the namespaces (needs root)")?;
    eprintln!(
        "{label}: testbed {} / {}: {} {}",
        tb.ns_a,
        tb.ns_b,
        o.router.display(),
        args.join(" ")
    );
    tb.start_router(&o.router, &args)
        .with_context(|| format!("starting {}", o.router.display()))?;
    for side in [Side::A, Side::B] {
        tb.sysctl(side, "net.ipv4.ip_forward", "1")?;
        tb.sysctl(side, "net.ipv4.tcp_no_metrics_save", "1")?;
        if s.tcp.ecn == Some(true) {
            tb.sysctl(side, "net.ipv4.tcp_ecn", "1")?;
        }
    }
    let result = drive(s, dir, o, &mut tb, &scenario_file, &metrics_addr, label);
    // The router's own account, also after a failure.
    let exit = tb.stop_router();
    if let Ok(x) = &exit {
        std::fs::write(dir.join("router.out"), &x.stdout)?;
        std::fs::write(dir.join("router.err"), &x.stderr)?;
    }
    drop(tb);
    let mut run = result?;
    if let Ok(x) = exit {
        run.host["router_exit"] = serde_json::json!(x.status.to_string());
    }
    Ok(run)
}

fn drive(
    s: &Scenario,
    dir: &Path,
    o: &RealOpts,
    tb: &mut Testbed,
    scenario_file: &Path,
    metrics_addr: &str,
    label: &str,
) -> anyhow::Result<RealRun> {
    let mut poller = Poller::new(metrics_addr);
    poller.poll()?;
    // Time zero a few seconds ahead: the receiver and the senders' devices
    // come up meanwhile (a sender that is late just starts its first off
    // period late).
    let t0 = now_ns() + 3_000_000_000;
    let mut recv = Child::spawn(
        "receiver",
        host_command(tb, Side::B, o, "recv", scenario_file, t0),
        &dir.join("receiver.log"),
    )?;
    recv.wait_line("\"listening\"", Duration::from_secs(30))?;
    let mut send = Child::spawn(
        "senders",
        host_command(tb, Side::A, o, "send", scenario_file, t0),
        &dir.join("senders.log"),
    )?;
    let duration_ns = (s.duration_s * 1e9) as u64;
    let end = t0 + duration_ns;
    let wall = Instant::now();
    let steal = StealMeter::start();
    let load0 = loadavg();
    let mut last_report = Instant::now();
    while now_ns() < end {
        procs::check_stop()?;
        poller.poll()?;
        if let Some(st) = send.drain()?
            && now_ns() + 200_000_000 < end
        {
            bail!("the senders exited early ({st}): {}", send.log_tail());
        }
        if let Some(st) = recv.drain()? {
            bail!("the receiver exited ({st}): {}", recv.log_tail());
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            let t = now_ns().saturating_sub(t0) as f64 / 1e9;
            let started = send.seen.iter().filter(|l| l.contains("\"start\"")).count();
            let ended = recv.seen.iter().filter(|l| l.contains("\"end\"")).count();
            eprintln!(
                "{label}: {t:.0}/{:.0} s, {started} flows started, {ended} complete",
                s.duration_s
            );
        }
        std::thread::sleep(POLL);
    }
    poller.poll()?;
    let steal_frac = steal.fraction();
    let load1 = loadavg();
    send.finish(Duration::from_secs(5))?;
    // Ends that arrive now are past the run's end and do not count, but
    // the lines are collected for the record.
    std::thread::sleep(Duration::from_millis(300));
    let _ = recv.drain()?;
    recv.finish(Duration::ZERO)?;
    let host = serde_json::json!({
        "cpu_steal_frac": steal_frac,
        "loadavg_start": load0,
        "loadavg_end": load1,
        "wall_seconds": wall.elapsed().as_secs_f64(),
        "pacing_releases_within_1ms": metrics::lateness_within_1ms(&poller.last),
        "metrics_publications": poller.samples.len(),
    });
    std::fs::write(dir.join("metrics-final.txt"), &poller.last)?;
    let result = crate::assemble::run_result(
        s,
        t0,
        &send.seen,
        &recv.seen,
        &poller,
        wall.elapsed().as_secs_f64(),
    )?;
    let sanity = crate::checks::sanity(label, &send.seen, &recv.seen, &result);
    Ok(RealRun {
        result,
        host,
        sanity,
    })
}

fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every testbed scheme's router gets the simulator's own port
    /// configuration: the file reads back as the scenario's `[router]`,
    /// queue and RWM, and the flags carry only the link.
    #[test]
    fn the_router_runs_what_the_simulator_ran() {
        use ka_sim::paper::testbed::{Overrides, TestbedLoad};
        for load in [TestbedLoad::Light, TestbedLoad::Heavy] {
            for v in [
                "ka",
                "ka-crowd",
                "ka-echo",
                "cubic",
                "cubic-fqcodel-ecn",
                "pcc",
            ] {
                let s = load.scenario(v, &Overrides::default()).unwrap();
                let Topology::Dumbbell(d) = &s.topology else {
                    panic!("{v}: not a dumbbell");
                };
                let back: RouterFile = toml::from_str(&router_file(&s).unwrap()).unwrap();
                assert_eq!(back.router, s.router, "{v}");
                assert_eq!(back.qdisc, Some(d.queue), "{v}");
                assert_eq!(back.rwm, d.rwm, "{v}");
                let a = router_args(&s, "127.0.0.1:1", None, Path::new("r.toml")).unwrap();
                assert_eq!(a.last().map(String::as_str), Some("r.toml"), "{v}");
                assert!(!a.iter().any(|f| f == "--controller" || f == "--qdisc"));
            }
        }
    }
}

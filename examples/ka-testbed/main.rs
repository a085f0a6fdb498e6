//! `ka-testbed`: the paper's testbed experiments (§IV-A, Figs 8–10) on real
//! network namespaces, with the same scenarios simulated beside them.
//!
//! ```text
//! sudo ka-testbed light --out results/testbed-light     # Fig. 8, 6 schemes x 3 min
//! sudo ka-testbed heavy --out results/testbed-heavy     # Figs 9-10, 6 schemes x 15 min
//! sudo ka-testbed run my-scenario.toml --out DIR        # any one-bottleneck on-off scenario
//! ```
//!
//! For every scheme — `ka` (KA endpoints through a KA router with the
//! paper's RCP), `ka-crowd` (the same with `--controller crowd`), `ka-echo`
//! (the same with `--controller echo`),
//! `cubic` (the Linux kernel's CUBIC through drop-tail), `cubic-fqcodel-ecn`
//! (kernel CUBIC with ECN through FQ-CoDel), `pcc` (`ka-endpoint`'s PCC
//! Vivace through drop-tail) — the runner takes the scenario of
//! `ka-sim paper testbed-light|testbed-heavy` (`crates/ka-sim/scenarios/
//! testbed-*.toml`, with `--rate`, `--senders`, `--duration`, `--seed`
//! applied), runs it on a fresh two-namespace testbed with the `ka-router`
//! binary ([`real`]), then simulates the very same scenario, and writes
//! for both `real/<scheme>/` and `sim/<scheme>/` with ka-sim's files
//! (`flows.csv`, `series.csv`, `summary.json`, `scenario.toml`, plots).
//! At the end it prints the checks `[PASS]`/`[FAIL]`: each run's
//! invariants, the paper's claims on the real runs and on the simulated
//! ones, and the simulation against the real run per scheme and size
//! bucket ([`checks`]); and draws `testbed-<load>.svg` (the paper's
//! figures from the real runs), `testbed-<load>-sim.svg` and
//! `sim-vs-real.svg`. All numbers go to `testbed-<load>.json`.
//!
//! Why one process tree and these parts: the hosts are this same program
//! re-run inside the namespaces ([`hosts`]), so senders, receiver and
//! runner share one flow format ([`wire`]) and the simulator's random
//! streams; the router is the real binary, watched through its metrics
//! ([`metrics`]); KA and PCC hosts run `ka-endpoint`'s TUN driver (the
//! code of `ka-endpoint send/recv`, one userspace host per sender, many
//! flows per host — the binary sends one flow per process), CUBIC runs
//! in the kernel. Ctrl-C or SIGTERM stops everything and removes every
//! namespace and device ([`procs`]); so does any error.
//!
//! Needs root, `/dev/net/tun` and iproute2, and the `ka-router` binary
//! (next to this one by default: `cargo build --release -p ka-router -p
//! ka-examples`).

mod assemble;
mod checks;
mod hosts;
mod metrics;
mod procs;
mod real;
mod wire;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use ka_sim::paper::claims::Claim;
use ka_sim::paper::testbed::{self, Overrides, SCHEMES, TestbedLoad};
use ka_sim::results::RunResult;
use ka_sim::results::plot::{self, Panel};
use ka_sim::results::report;
use ka_sim::run;
use ka_sim::scenario;
use ka_sim::scenario::Scenario;
use serde_json::{Value, json};

const UNITS: &str = "Rates in bit/s with a unit (100mbit, 20mbit, 1.5gbit); durations with one \
(180s, 5min is 300s, 20s). Needs root, /dev/net/tun and iproute2. Example, the CI's short run: \
ka-testbed light --schemes ka,cubic --senders 2 --duration 20s --out /tmp/tb";

#[derive(Parser)]
#[command(
    name = "ka-testbed",
    version,
    about = "The paper's testbed experiments (Kick-Ass §IV-A, Figs 8-10) on real network namespaces, \
             with the same scenarios simulated beside them",
    after_help = UNITS
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Light load (Fig. 8): 100 Mbit/s, 100 ms RTT, 8 on-off senders (off time Exp(0.5 s),
    /// sizes 1-2000 packets, mean 100), 3 minutes per scheme. Compares mean FCT by flow size.
    Light(Opts),
    /// Heavy load (Figs 9-10): 10 Mbit/s, 100 ms RTT, 8 on-off senders (off time Exp(8 s),
    /// mean flow 1 MB), 15 minutes per scheme (sizes are heavy-tailed, so shorter runs give
    /// unstable queue percentiles). Compares queueing delay and per-flow throughput.
    Heavy(Opts),
    /// Any scenario file with one dumbbell bottleneck and one group of on-off senders
    /// (kinds ka, pcc, tcp-cubic, tcp-newreno): runs it for real and simulated.
    Run {
        /// The scenario (ka-sim's TOML format).
        file: PathBuf,
        #[command(flatten)]
        opts: Opts,
    },
    /// A scenario's hosts inside a namespace (started by the runner itself).
    #[command(hide = true)]
    Host(hosts::HostArgs),
}

/// Options of `light`, `heavy` and `run`.
#[derive(Args, Clone)]
struct Opts {
    /// Output directory (created): real/SCHEME/, sim/SCHEME/, plots, testbed-LOAD.json.
    #[arg(long)]
    out: PathBuf,
    /// Schemes to run, comma-separated (light/heavy): ka (the paper's RCP), ka-crowd (the crowd
    /// controller), ka-echo (the echo controller), cubic, cubic-fqcodel-ecn, pcc.
    #[arg(long, value_delimiter = ',', default_values_t = SCHEMES.map(|s| s.0.to_string()))]
    schemes: Vec<String>,
    /// Bottleneck rate [default: the scenario's, 100mbit light / 10mbit heavy].
    #[arg(long, value_parser = rate)]
    rate: Option<u64>,
    /// Number of on-off senders (1-24) [default: the scenario's, 8].
    #[arg(long)]
    senders: Option<usize>,
    /// Run time per scheme [default: the scenario's, 180s light / 900s heavy].
    #[arg(long, value_parser = duration)]
    duration: Option<Duration>,
    /// Seed of the workload's random streams (the same flows in both halves) [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// RCP alpha of the KA router, in both halves [default: the router's 0.1].
    #[arg(long)]
    alpha: Option<f64>,
    /// RCP beta of the KA router, in both halves [default: the router's 1.0].
    #[arg(long)]
    beta: Option<f64>,
    /// Skip the simulations (real runs and their checks only).
    #[arg(long)]
    no_sim: bool,
    /// The ka-router binary [default: next to this program, else on PATH].
    #[arg(long, value_name = "PATH")]
    router: Option<PathBuf>,
    /// Real-time priority of the router's pacing thread (SCHED_FIFO; 0 = none). Keeps the
    /// shaper punctual while the hosts load the CPUs.
    #[arg(long, default_value_t = 10)]
    realtime: u8,
}

fn rate(s: &str) -> Result<u64, String> {
    match ka_codec::units::parse_rate(s) {
        Ok(0) => Err("the rate must be above 0".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(format!("{e} (try e.g. 100mbit, 20mbit)")),
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    match ka_codec::units::parse_duration(s) {
        Ok(d) if d >= Duration::from_secs(5) => Ok(d),
        Ok(_) => Err("at least 5s".into()),
        Err(e) => Err(format!("{e} (try e.g. 180s, 20s)")),
    }
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Host(a) => hosts::main(a).map(|()| true),
        Cmd::Light(o) => experiment(Some(TestbedLoad::Light), None, &o),
        Cmd::Heavy(o) => experiment(Some(TestbedLoad::Heavy), None, &o),
        Cmd::Run { file, opts } => experiment(None, Some(&file), &opts),
    };
    match r {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("ka-testbed: error: {e:#}");
            std::process::exit(2);
        }
    }
}

/// The `ka-router` binary to use.
fn router_bin(o: &Opts) -> anyhow::Result<PathBuf> {
    if let Some(p) = &o.router {
        return Ok(p.clone());
    }
    let me = std::env::current_exe()?;
    if let Some(p) = me
        .parent()
        .map(|d| d.join("ka-router"))
        .filter(|p| p.exists())
    {
        return Ok(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("ka-router"))
            .find(|p| p.exists())
    });
    on_path.context(
        "no ka-router binary next to ka-testbed or on PATH: build it (cargo build --release -p ka-router) or pass --router",
    )
}

fn overrides(o: &Opts) -> Overrides {
    Overrides {
        capacity_mbps: o.rate.map(|r| r as f64 / 1e6),
        senders: o.senders,
        duration_s: o.duration.map(|d| d.as_secs_f64()),
        seed: o.seed,
    }
}

/// The (scheme name, scenario) pairs to run.
fn scenarios(
    load: Option<TestbedLoad>,
    file: Option<&Path>,
    o: &Opts,
) -> anyhow::Result<Vec<(String, Scenario)>> {
    let ov = overrides(o);
    let knobs = |s: &mut Scenario| {
        if let Some(v) = o.alpha {
            s.router.rcp.alpha = v;
        }
        if let Some(v) = o.beta {
            s.router.rcp.beta = v;
        }
    };
    let mut out = Vec::new();
    match (load, file) {
        (Some(load), _) => {
            for name in &o.schemes {
                let mut s = load.scenario(name, &ov)?;
                knobs(&mut s);
                s.validate()?;
                out.push((name.clone(), s));
            }
        }
        (None, Some(f)) => {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let mut s = ka_sim::paper::scenario(&text, o.seed, ov.duration_s)?;
            if let (Some(c), scenario::Topology::Dumbbell(d)) = (ov.capacity_mbps, &mut s.topology)
            {
                d.capacity_mbps = c;
            }
            if let Some(n) = ov.senders {
                for g in &mut s.groups {
                    g.count = n;
                    g.track = g.track.min(n);
                }
            }
            knobs(&mut s);
            s.validate()?;
            let name = if s.variant.is_empty() {
                s.name.clone()
            } else {
                s.variant.clone()
            };
            out.push((name, s));
        }
        (None, None) => bail!("nothing to run"),
    }
    Ok(out)
}

/// Runs an experiment; Ok(false) if an invariant of a real run failed.
fn experiment(load: Option<TestbedLoad>, file: Option<&Path>, o: &Opts) -> anyhow::Result<bool> {
    if let Some(why) = ka_router::shell::testbed::unavailable() {
        bail!("real-network runs need root, /dev/net/tun and iproute2: {why}");
    }
    let runs = scenarios(load, file, o)?;
    procs::watch_signals()?;
    let ropts = real::RealOpts {
        router: router_bin(o)?,
        me: std::env::current_exe()?,
        realtime: (o.realtime > 0).then_some(o.realtime),
    };
    let name = match load {
        Some(l) => format!("testbed-{}", l.short_name()),
        None => runs.first().map_or("run".into(), |r| r.1.name.clone()),
    };
    std::fs::create_dir_all(&o.out)?;
    let mut real_runs: Vec<(String, RunResult)> = Vec::new();
    let mut sanity: Vec<Claim> = Vec::new();
    let mut all = serde_json::Map::new();
    for (scheme, s) in &runs {
        let dir = o.out.join("real").join(scheme);
        let label = format!("{name}/{scheme} (real)");
        eprintln!(
            "{label}: {} senders, {:.0} s{}",
            s.groups.first().map_or(0, |g| g.count),
            s.duration_s,
            match &s.topology {
                scenario::Topology::Dumbbell(d) =>
                    format!(", {} Mbit/s, {} ms RTT", d.capacity_mbps, d.rtt_ms),
                _ => String::new(),
            }
        );
        let run = real::run(s, &dir, &ropts, &label)?;
        let mut h = testbed::headline(&run.result);
        h["host"] = run.host.clone();
        let sum = report::write_all(&dir, &run.result, h.clone())?;
        eprintln!(
            "{label}: {} flows ({} completed), written to {}",
            sum.flows,
            sum.flows_completed,
            dir.display()
        );
        for c in &run.sanity {
            eprintln!("{}", c.line());
        }
        sanity.extend(run.sanity.iter().cloned());
        all.insert(format!("real/{scheme}"), h);
        real_runs.push((scheme.clone(), run.result));
    }
    let mut sim_runs: Vec<(String, RunResult)> = Vec::new();
    if !o.no_sim {
        for (scheme, s) in &runs {
            procs::check_stop()?;
            let label = format!("{name}/{scheme} (sim)");
            let mut p = run::Progress::new(&label);
            let r = run::run_scenario(s, Some(&mut p))?;
            let dir = o.out.join("sim").join(scheme);
            let h = testbed::headline(&r);
            let sum = report::write_all(&dir, &r, h.clone())?;
            eprintln!("{}", report::one_line(&sum));
            all.insert(format!("sim/{scheme}"), h);
            sim_runs.push((scheme.clone(), r));
        }
    }
    let claims = report_all(
        load, &name, &o.out, &real_runs, &sim_runs, &sanity, &mut all,
    )?;
    let invariants_ok = sanity.iter().all(|c| c.pass);
    println!();
    for c in &claims {
        println!("{}", c.line());
    }
    eprintln!(
        "\nresults in {} ({name}.json, {name}.svg, real/ and sim/)",
        o.out.display()
    );
    Ok(invariants_ok)
}

fn refs(v: &[(String, RunResult)]) -> Vec<(&str, &RunResult)> {
    v.iter().map(|(n, r)| (n.as_str(), r)).collect()
}

fn labelled<'a>(v: &'a [(String, RunResult)], suffix: &str) -> Vec<(String, &'a RunResult)> {
    v.iter()
        .map(|(n, r)| (format!("{}{suffix}", testbed::label(n)), r))
        .collect()
}

/// Checks, combined plots and the JSON; returns every check in print order.
fn report_all(
    load: Option<TestbedLoad>,
    name: &str,
    out: &Path,
    real: &[(String, RunResult)],
    simr: &[(String, RunResult)],
    sanity: &[Claim],
    all: &mut serde_json::Map<String, Value>,
) -> anyhow::Result<Vec<Claim>> {
    let mut claims: Vec<Claim> = sanity.to_vec();
    if let Some(load) = load {
        for mut c in testbed::claims(load, &refs(real)) {
            c.what = format!("real: {}", c.what);
            claims.push(c);
        }
        for mut c in testbed::claims(load, &refs(simr)) {
            c.what = format!("sim: {}", c.what);
            claims.push(c);
        }
        let title = |what: &str| format!("Testbed, {} load: {what}", load.short_name());
        plot::write_svg(
            &out.join(format!("{name}.svg")),
            &title("real network namespaces"),
            &testbed::panels(load, &labelled(real, "")),
        )?;
        if !simr.is_empty() {
            plot::write_svg(
                &out.join(format!("{name}-sim.svg")),
                &title("ka-sim, same scenarios"),
                &testbed::panels(load, &labelled(simr, "")),
            )?;
        }
    }
    let mut table = serde_json::Map::new();
    let mut panels = Vec::new();
    for (scheme, r) in real {
        let Some((_, s)) = simr.iter().find(|(n, _)| n == scheme) else {
            continue;
        };
        let cmp = checks::buckets(s, r);
        claims.push(checks::sim_vs_real(&format!("sim vs real, {scheme}"), &cmp));
        table.insert(
            scheme.clone(),
            Value::Array(
                cmp.iter()
                    .map(|b| {
                        json!({"bucket_pkts": b.name(), "real_mean_fct_s": b.real.0, "real_flows": b.real.1,
                               "sim_mean_fct_s": b.sim.0, "sim_flows": b.sim.1, "real_over_sim": b.ratio(),
                               "diff_in_std_errors": b.z(), "agrees": b.agrees()})
                    })
                    .collect(),
            ),
        );
        let mut p = testbed::fct_panel(&[
            (format!("{} (real)", testbed::label(scheme)), r),
            (format!("{} (sim)", testbed::label(scheme)), s),
        ]);
        p.title = format!(
            "{}: mean FCT by flow size, real and simulated",
            testbed::label(scheme)
        );
        panels.push(p);
        if load == Some(TestbedLoad::Heavy) {
            let mut q = testbed::queue_cdf_panel(&[
                (format!("{} (real)", testbed::label(scheme)), r),
                (format!("{} (sim)", testbed::label(scheme)), s),
            ]);
            q.title = format!(
                "{}: queueing delay CDF, real and simulated",
                testbed::label(scheme)
            );
            panels.push(q);
        }
    }
    if !panels.is_empty() {
        plot::write_svg(
            &out.join("sim-vs-real.svg"),
            "Simulation vs real network",
            &panels,
        )?;
    }
    if load.is_none() && !real.is_empty() {
        // A custom scenario: its FCT by size, real and simulated.
        let mut runs: Vec<(String, &RunResult)> = labelled(real, " (real)");
        runs.extend(labelled(simr, " (sim)"));
        let p: Panel = testbed::fct_panel(&runs);
        plot::write_svg(&out.join(format!("{name}.svg")), name, &[p])?;
    }
    all.insert("sim_vs_real".into(), Value::Object(table));
    all.insert(
        "claims".into(),
        Value::Array(claims.iter().map(Claim::to_json).collect()),
    );
    std::fs::write(
        out.join(format!("{name}.json")),
        serde_json::to_string_pretty(&Value::Object(std::mem::take(all)))? + "\n",
    )?;
    Ok(claims)
}

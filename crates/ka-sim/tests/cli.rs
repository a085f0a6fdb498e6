//! The `ka-sim` binary: `run` and `sweep` (with shards) on tiny scenarios.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{ScenarioToml, on_off};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ka-sim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ka_sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ka-sim"))
        .args(args)
        .output()
        .unwrap()
}

/// A 1 s run of two on-off KA senders on a 10 Mbit/s dumbbell.
fn tiny() -> String {
    ScenarioToml::new("tiny", 1.0)
        .dumbbell(10.0, 20.0, 50, "ka")
        .group("ka", "ka", 2, 1, &on_off(0.1, [1.0, 50.0], 1.5, 10.0))
        .text()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn run_writes_every_output() {
    let d = tmp("run");
    let file = write(&d, "tiny.toml", &tiny());
    let out = d.join("out");
    let o = ka_sim(&["run", &file, "--out", out.to_str().unwrap(), "--seed", "3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "flows.csv",
        "series.csv",
        "summary.json",
        "scenario.toml",
        "timeseries.svg",
        "fct.svg",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let sum: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(sum["seed"], 3);
    assert_eq!(sum["scenario"], "tiny");
    assert!(sum["flows"].as_u64().unwrap() > 0);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_input_fails_with_a_message() {
    let d = tmp("bad");
    let file = write(
        &d,
        "bad.toml",
        &tiny().replace("count = 2", "count = 2\nbogus = 1"),
    );
    let o = ka_sim(&["run", &file, "--out", d.join("o").to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus"));
    let o = ka_sim(&["paper", "fig6", "--out", d.join("p").to_str().unwrap()]);
    assert!(!o.status.success());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sweep_shards_cover_the_grid_once() {
    let d = tmp("sweep");
    let text = format!("{}\n[sweep]\nseed = [1, 2, 3]\n", tiny());
    let file = write(&d, "sweep.toml", &text);
    let out = d.join("out");
    let o = out.to_str().unwrap();
    for shard in ["0/2", "1/2"] {
        let r = ka_sim(&["sweep", &file, "--out", o, "--jobs", "1", "--shard", shard]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    for p in ["p0", "p1", "p2"] {
        assert!(out.join(p).join("flows.csv").exists(), "{p}");
    }
    let a = std::fs::read_to_string(out.join("results-0-of-2.csv")).unwrap();
    let b = std::fs::read_to_string(out.join("results-1-of-2.csv")).unwrap();
    let rows = |s: &str| {
        s.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&a), vec!["0", "2"]);
    assert_eq!(rows(&b), vec!["1"]);
    let points = std::fs::read_to_string(out.join("points.csv")).unwrap();
    assert_eq!(points, "point,dir,seed\n0,p0,1\n1,p1,2\n2,p2,3\n");
    // The seed axis really changes the run.
    let f0 = std::fs::read_to_string(out.join("p0/flows.csv")).unwrap();
    let f1 = std::fs::read_to_string(out.join("p1/flows.csv")).unwrap();
    assert_ne!(f0, f1);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_output_path_in_the_way_is_named_before_anything_runs() {
    let d = tmp("outfile");
    let file = write(&d, "tiny.toml", &tiny());
    let blocker = write(&d, "not-a-dir", "");
    for cmd in ["run", "sweep"] {
        let args: Vec<&str> = if cmd == "run" {
            vec!["run", &file, "--out", &blocker]
        } else {
            vec!["sweep", &file, "--out", &blocker]
        };
        let o = ka_sim(&args);
        assert!(!o.status.success(), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("creating the output directory {blocker}")),
            "{cmd}: {err}"
        );
        // Nothing was simulated: no progress line.
        assert!(!err.contains("sim "), "{cmd} ran first: {err}");
    }
}

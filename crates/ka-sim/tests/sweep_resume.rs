//! A sweep's merged table (`ka-sim merge`) is byte-identical however the
//! sweep ran: in one process, in four shards, interrupted in every way a
//! killed run can leave a point and then resumed, half by shard and half
//! by `--resume`, or as the array tasks of the `--slurm` script (run here
//! by hand; `tests/slurm.rs` submits it to a real Slurm cluster).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SWEEP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sweep-tiny.toml");

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ka-sim-resume-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ka_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ka-sim"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn sweep(file: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["sweep", file, "--out", s(out)];
    args.extend_from_slice(extra);
    ok(ka_sim(&args))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `sweep.csv` and `sweep.svg` after a successful merge.
fn merged(out: &Path) -> (String, Vec<u8>) {
    ok(ka_sim(&["merge", s(out)]));
    (
        std::fs::read_to_string(out.join("sweep.csv")).unwrap(),
        std::fs::read(out.join("sweep.svg")).unwrap(),
    )
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn single_sharded_resumed_and_array_runs_merge_identically() {
    let d = tmp("same");

    // One process.
    let one = d.join("one");
    sweep(SWEEP, &one, &["--jobs", "2"]);
    let (csv, svg) = merged(&one);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "{csv}");
    assert_eq!(
        lines[0],
        "point,dir,group.0.workload.off_mean_s,seed,\
         flows,completed,first_hop_utilization,mean_fct_s,mean_slowdown"
    );
    assert!(lines[1].starts_with("0,p0,0.05,1,"), "{}", lines[1]);
    assert!(lines[6].starts_with("5,p5,0.2,3,"), "{}", lines[6]);
    // A row carries the numbers of its own point's run.
    for (i, line) in lines[1..].iter().enumerate() {
        let sum: serde_json::Value =
            serde_json::from_str(&read(one.join(format!("p{i}/summary.json")))).unwrap();
        let flows = line.split(',').nth(4).unwrap();
        assert_eq!(flows, sum["flows"].to_string(), "p{i}");
        assert!(sum["flows"].as_u64().unwrap() > 0);
    }
    assert!(svg.starts_with(b"<svg"));
    // The points really differ (the axes reach the scenario).
    let rows: std::collections::BTreeSet<&str> = lines[1..]
        .iter()
        .map(|l| l.split_once(",p").unwrap().1)
        .collect();
    assert_eq!(rows.len(), 6);

    // Four shards, four processes.
    let four = d.join("four");
    for i in 0..4 {
        sweep(SWEEP, &four, &["--jobs", "1", "--shard", &format!("{i}/4")]);
    }
    assert_eq!(merged(&four), (csv.clone(), svg.clone()), "4 shards");

    // Interrupted: a whole run, then each way a kill can leave a point.
    let part = d.join("part");
    sweep(SWEEP, &part, &["--jobs", "2"]);
    let results = read(part.join("results-0-of-1.csv"));
    assert_eq!(results, read(one.join("results-0-of-1.csv")));
    // p1: killed after its files, before the marker's rename (a temp left).
    std::fs::remove_file(part.join("p1/point.csv")).unwrap();
    std::fs::write(part.join("p1/.point.csv.tmp.node7.4242.0"), "point,dir,gr").unwrap();
    // p3: killed while writing its files.
    std::fs::remove_file(part.join("p3/point.csv")).unwrap();
    let flows = read(part.join("p3/flows.csv"));
    std::fs::write(part.join("p3/flows.csv"), &flows[..flows.len() / 2]).unwrap();
    // p4: never started.
    std::fs::remove_dir_all(part.join("p4")).unwrap();
    // p0 is complete; a mark in a file shows whether it is run again.
    std::fs::write(part.join("p0/series.csv"), "not run again\n").unwrap();
    let e = ka_sim(&["merge", s(&part)]);
    assert!(!e.status.success());
    let msg = stderr(&e);
    assert!(msg.contains("3 of 6 points"), "{msg}");
    for p in ["p1 (", "p3 (", "p4 ("] {
        assert!(msg.contains(p), "{p} not named: {msg}");
    }
    for p in ["p0 (", "p2 (", "p5 ("] {
        assert!(!msg.contains(p), "{p} named: {msg}");
    }
    let o = sweep(SWEEP, &part, &["--jobs", "2", "--resume"]);
    let msg = stderr(&o);
    for p in ["p0", "p2", "p5"] {
        assert!(
            msg.contains(&format!("{p}: complete, not run again")),
            "{msg}"
        );
    }
    for p in ["p1", "p3", "p4"] {
        assert!(!msg.contains(&format!("{p}: complete")), "{msg}");
    }
    assert_eq!(read(part.join("p0/series.csv")), "not run again\n");
    assert_eq!(
        read(part.join("p3/flows.csv")),
        read(one.join("p3/flows.csv"))
    );
    assert!(!part.join("p1/.point.csv.tmp.node7.4242.0").exists());
    assert_eq!(read(part.join("results-0-of-1.csv")), results);
    assert_eq!(merged(&part), (csv.clone(), svg.clone()), "resumed");

    // A mix: one shard, then the rest by --resume in one process.
    let mix = d.join("mix");
    sweep(SWEEP, &mix, &["--shard", "0/3"]);
    let o = sweep(SWEEP, &mix, &["--resume"]);
    let msg = stderr(&o);
    assert!(
        msg.contains("p0: complete")
            && msg.contains("p3: complete")
            && !msg.contains("p1: complete"),
        "{msg}"
    );
    assert_eq!(merged(&mix), (csv.clone(), svg.clone()), "shard + resume");

    // The --slurm script, its four array tasks run by hand.
    let array = d.join("array");
    let o = sweep(SWEEP, &array, &["--slurm", "--shards", "4", "--time", "10"]);
    assert!(!array.join("p0").exists(), "--slurm runs nothing");
    let script = array.canonicalize().unwrap().join("sweep.sbatch");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("sbatch {}\n", s(&script))
    );
    let text = read(&script);
    let exe = Path::new(env!("CARGO_BIN_EXE_ka-sim"))
        .canonicalize()
        .unwrap();
    let file = Path::new(SWEEP).canonicalize().unwrap();
    assert!(text.contains("#SBATCH --array=0-3\n#SBATCH"), "{text}");
    assert!(text.contains("#SBATCH --time=10\n"), "{text}");
    assert!(
        text.contains(&format!("exec {} sweep {} --out ", s(&exe), s(&file))),
        "{text}"
    );
    for i in 0..4 {
        let o = Command::new("bash")
            .arg(&script)
            .env("SLURM_ARRAY_TASK_ID", i.to_string())
            .env_remove("SLURM_CPUS_PER_TASK")
            .output()
            .unwrap();
        ok(o);
    }
    assert_eq!(merged(&array), (csv, svg), "array tasks");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_changed_sweep_file_runs_its_points_again() {
    let d = tmp("changed");
    let out = d.join("out");
    sweep(SWEEP, &out, &["--shard", "0/3"]);
    let o = sweep(SWEEP, &out, &["--shard", "0/3", "--resume"]);
    let msg = stderr(&o);
    assert!(
        msg.contains("p0: complete") && msg.contains("p3: complete"),
        "{msg}"
    );
    // The same grid with another base scenario: nothing counts as done.
    let changed = d.join("changed.toml");
    std::fs::write(
        &changed,
        read(SWEEP).replace("duration_s = 1.0", "duration_s = 0.5"),
    )
    .unwrap();
    let o = sweep(s(&changed), &out, &["--shard", "0/3", "--resume"]);
    assert!(
        !stderr(&o).contains("complete, not run again"),
        "{}",
        stderr(&o)
    );
    let sum: serde_json::Value = serde_json::from_str(&read(out.join("p3/summary.json"))).unwrap();
    assert_eq!(sum["simulated_seconds"], 0.5);
    // Merge reads the grid the output directory was last run with.
    let e = ka_sim(&["merge", s(&out)]);
    assert!(!e.status.success());
    let msg = stderr(&e);
    assert!(
        msg.contains("4 of 6 points")
            && msg.contains("p1 (group.0.workload.off_mean_s=0.05,seed=2)")
            && !msg.contains("p3 ("),
        "{msg}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn slurm_options_need_slurm_and_valid_values() {
    let d = tmp("opts");
    let out = d.join("out");
    for bad in [
        vec!["--partition", "debug"],
        vec!["--shards", "2"],
        vec!["--slurm", "--shard", "0/2"],
        vec!["--slurm", "--resume"],
        vec!["--slurm", "--shards", "0"],
        vec!["--slurm", "--mem", "1G extra"],
    ] {
        let mut args = vec!["sweep", SWEEP, "--out", s(&out)];
        args.extend(bad.iter());
        let o = ka_sim(&args);
        assert!(!o.status.success(), "{bad:?} accepted");
        assert!(!stderr(&o).is_empty());
    }
    let o = ka_sim(&["merge", s(&d)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no sweep.toml"), "{}", stderr(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

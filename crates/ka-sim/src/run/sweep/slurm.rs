//! A Slurm job array that runs a sweep: `ka-sim sweep FILE --out DIR
//! --slurm` writes `DIR/sweep.sbatch`, one array task per shard, each
//! running
//!
//! ```text
//! ka-sim sweep FILE --out DIR --shard $SLURM_ARRAY_TASK_ID/N --resume
//! ```
//!
//! with absolute paths (the running `ka-sim` binary, the sweep file, the
//! output directory), so the script runs from any working directory on any
//! node that sees the same paths (a shared file system). `--resume` makes
//! a task that was killed (time limit, preemption, node failure) safe to
//! submit again: it runs only the points it had not finished
//! (`point` module). The tasks' logs go to `DIR/slurm-logs/`, which the
//! script's writer creates (Slurm does not create the directory of
//! `--output`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Grid, SweepError, io_err};

/// The script's file name in the output directory.
pub const SCRIPT: &str = "sweep.sbatch";

/// The array tasks' log directory in the output directory.
pub const LOGS: &str = "slurm-logs";

/// Largest default number of array tasks: Slurm's default `MaxArraySize`
/// (1001) allows task indices 0–1000.
pub const MAX_DEFAULT_SHARDS: usize = 1000;

/// The job array's resources.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SlurmJob {
    /// Array tasks (shards); `None`: one per grid point, at most
    /// [`MAX_DEFAULT_SHARDS`].
    pub shards: Option<usize>,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time` (Slurm's formats, e.g. `30`, `2:00:00`, `1-0`).
    pub time: Option<String>,
    /// `--mem` (e.g. `2G`).
    pub mem: Option<String>,
    /// CPUs per task, each running one grid point at a time (`--jobs`).
    pub cpus: Option<usize>,
}

impl SlurmJob {
    /// The number of array tasks for `grid`.
    pub fn shard_count(&self, grid: &Grid) -> usize {
        self.shards
            .unwrap_or_else(|| grid.points().min(MAX_DEFAULT_SHARDS))
            .max(1)
    }
}

/// `s` quoted for a POSIX shell (unchanged when nothing needs quoting).
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:=@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn path_str(p: &Path) -> Result<&str, SweepError> {
    p.to_str()
        .ok_or_else(|| SweepError::Slurm(format!("{}: path is not UTF-8", p.display())))
}

/// One `#SBATCH` option value: sbatch reads these lines itself, without a
/// shell, so a value must be one word.
fn option(name: &str, v: &str) -> Result<String, SweepError> {
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(SweepError::Slurm(format!(
            "--{name} `{v}`: expected one word"
        )));
    }
    Ok(format!("#SBATCH --{name}={v}\n"))
}

/// The script's text: `exe` (the ka-sim binary), `file` (the sweep file)
/// and `out` must be absolute.
pub fn script(
    grid: &Grid,
    job: &SlurmJob,
    exe: &Path,
    file: &Path,
    out: &Path,
) -> Result<String, SweepError> {
    for p in [exe, file, out] {
        if !p.is_absolute() {
            return Err(SweepError::Slurm(format!(
                "{}: the script needs absolute paths",
                p.display()
            )));
        }
    }
    let n = job.shard_count(grid);
    let cpus = job.cpus.unwrap_or(1).max(1);
    let (exe_s, file_s, out_s) = (path_str(exe)?, path_str(file)?, path_str(out)?);
    let logs = out.join(LOGS);
    let script = out.join(SCRIPT);
    let name: String = grid
        .name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(
        s,
        "# A ka-sim sweep as a Slurm job array, one task per shard."
    );
    let _ = writeln!(
        s,
        "# Written by `ka-sim sweep --slurm`: {} points in {n} shards.",
        grid.points()
    );
    let _ = writeln!(s, "#   submit:  sbatch {}", shell_quote(path_str(&script)?));
    let _ = writeln!(
        s,
        "#   then:    {} merge {}",
        shell_quote(exe_s),
        shell_quote(out_s)
    );
    let _ = writeln!(
        s,
        "# A task that was killed can be submitted again (e.g. `sbatch --array=3 ...`):"
    );
    let _ = writeln!(
        s,
        "# with --resume it runs only the points it had not finished."
    );
    s.push_str(&option("job-name", &format!("ka-sweep-{name}"))?);
    s.push_str(&option("array", &format!("0-{}", n - 1))?);
    s.push_str(&option("cpus-per-task", &cpus.to_string())?);
    s.push_str(&option(
        "output",
        &format!("{}/%A_%a.out", path_str(&logs)?),
    )?);
    if let Some(p) = &job.partition {
        s.push_str(&option("partition", p)?);
    }
    if let Some(t) = &job.time {
        s.push_str(&option("time", t)?);
    }
    if let Some(m) = &job.mem {
        s.push_str(&option("mem", m)?);
    }
    s.push_str("set -euo pipefail\n");
    let _ = writeln!(
        s,
        "exec {} sweep {} --out {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\" --resume --jobs \"${{SLURM_CPUS_PER_TASK:-{cpus}}}\"",
        shell_quote(exe_s),
        shell_quote(file_s),
        shell_quote(out_s),
    );
    Ok(s)
}

/// Writes the script (and the log directory) into `out`, which is created;
/// returns the script's path. `exe` and `file` are made absolute.
pub fn write(
    grid: &Grid,
    job: &SlurmJob,
    exe: &Path,
    file: &Path,
    out: &Path,
) -> Result<PathBuf, SweepError> {
    let logs = out.join(LOGS);
    std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
    let out = out.canonicalize().map_err(io_err(out))?;
    let exe = exe.canonicalize().map_err(io_err(exe))?;
    let file = file.canonicalize().map_err(io_err(file))?;
    let text = script(grid, job, &exe, &file, &out)?;
    let path = out.join(SCRIPT);
    super::point::write_atomic(&path, text.as_bytes()).map_err(io_err(&path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(io_err(&path))?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWEEP: &str = tiny_sweep!(
        "tiny sweep",
        r#"seed = [1, 2, 3]
"#
    );

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c_d.toml"), "/a/b-c_d.toml");
        assert_eq!(shell_quote("/my dir/x"), "'/my dir/x'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn script_runs_every_shard_with_resume() {
        let g = Grid::from_toml(SWEEP).unwrap();
        let job = SlurmJob {
            shards: Some(2),
            partition: Some("debug".into()),
            time: Some("10:00".into()),
            mem: None,
            cpus: None,
        };
        let s = script(
            &g,
            &job,
            Path::new("/opt/ka/ka-sim"),
            Path::new("/data/my sweep.toml"),
            Path::new("/scratch/out"),
        )
        .unwrap();
        assert!(s.starts_with("#!/bin/bash\n"));
        for line in [
            "#SBATCH --job-name=ka-sweep-tiny_sweep\n",
            "#SBATCH --array=0-1\n",
            "#SBATCH --cpus-per-task=1\n",
            "#SBATCH --output=/scratch/out/slurm-logs/%A_%a.out\n",
            "#SBATCH --partition=debug\n",
            "#SBATCH --time=10:00\n",
            "exec /opt/ka/ka-sim sweep '/data/my sweep.toml' --out /scratch/out \
             --shard \"${SLURM_ARRAY_TASK_ID}/2\" --resume --jobs \"${SLURM_CPUS_PER_TASK:-1}\"\n",
        ] {
            assert!(s.contains(line), "{line} not in\n{s}");
        }
        assert!(!s.contains("--mem"));
        // Every #SBATCH line comes before the first command (sbatch stops
        // reading options there).
        let first_cmd = s.find("set -euo").unwrap();
        assert!(s.rfind("#SBATCH").unwrap() < first_cmd);
        // Default: one task per point.
        let s = script(
            &g,
            &SlurmJob::default(),
            Path::new("/k"),
            Path::new("/f"),
            Path::new("/o"),
        )
        .unwrap();
        assert!(s.contains("#SBATCH --array=0-2\n") && s.contains("}/3\""));
    }

    #[test]
    fn bad_options_and_relative_paths_are_rejected() {
        let g = Grid::from_toml(SWEEP).unwrap();
        let abs = Path::new("/x");
        let job = SlurmJob {
            mem: Some("2G\n#SBATCH --x".into()),
            ..SlurmJob::default()
        };
        assert!(script(&g, &job, abs, abs, abs).is_err());
        let rel = Path::new("out");
        assert!(script(&g, &SlurmJob::default(), abs, abs, rel).is_err());
    }
}

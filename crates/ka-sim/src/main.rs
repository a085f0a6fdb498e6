//! `ka-sim`: run the paper's scenarios, any scenario file, or a sweep.
//!
//! ```text
//! ka-sim paper <NAME> --out DIR [--seed N] [--duration SECONDS]
//! ka-sim paper list
//! ka-sim run FILE.toml --out DIR [--seed N] [--duration SECONDS]
//! ka-sim sweep FILE.toml --out DIR [--jobs N] [--shard i/N] [--resume]
//! ka-sim sweep FILE.toml --out DIR --slurm [--shards N] [--partition P] [--time T] [--mem M] [--jobs N]
//! ka-sim merge DIR
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use ka_sim::paper::{self, Experiment};
use ka_sim::results::report;
use ka_sim::run;
use ka_sim::run::sweep::slurm::{self, SlurmJob};
use ka_sim::run::sweep::{self, Shard};

#[derive(Parser)]
#[command(
    name = "ka-sim",
    version,
    about = "Deterministic simulator of Kick-Ass on the real router and endpoint cores"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Reproduce a published experiment: a figure of the Kick-Ass paper or of
    /// a seed paper (one subdirectory per variant plus a combined plot and
    /// the acceptance checks). `ka-sim paper list` names them all.
    Paper {
        /// The experiment (e.g. fig3), or `list` to name them all.
        figure: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run one scenario file.
    Run {
        /// Scenario TOML.
        file: PathBuf,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run a parameter grid (a scenario file with a `[sweep]` table), or
    /// with --slurm write a Slurm job array that runs it. `ka-sim merge`
    /// then gathers the points into one table.
    Sweep {
        /// Sweep TOML.
        file: PathBuf,
        /// Output directory (one subdirectory per grid point).
        #[arg(long)]
        out: PathBuf,
        /// Parallel runs (default: all cores). With --slurm: CPUs per
        /// array task (`#SBATCH --cpus-per-task`), its points running that
        /// many at a time (default 1).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only shard i of N (0-based): the points whose index is i
        /// modulo N, e.g. `--shard 3/10` for the 4th of 10 Slurm array
        /// tasks.
        #[arg(long, conflicts_with = "slurm")]
        shard: Option<Shard>,
        /// Do not run points whose results in --out are already complete
        /// (their marker `p<i>/point.csv` is written last, atomically, and
        /// matches this sweep file), so an interrupted sweep or shard
        /// continues where it stopped.
        #[arg(long, conflicts_with = "slurm")]
        resume: bool,
        /// Run nothing: write a Slurm job-array script, sweep.sbatch in the
        /// --out directory (one array task per shard, each running this
        /// sweep with `--shard $SLURM_ARRAY_TASK_ID/N --resume`, absolute
        /// paths), and print the `sbatch` command that submits it.
        #[arg(long)]
        slurm: bool,
        /// With --slurm: number of array tasks (shards), default one per
        /// grid point (at most 1000, Slurm's default MaxArraySize).
        #[arg(long, requires = "slurm", value_parser = clap::value_parser!(u64).range(1..))]
        shards: Option<u64>,
        /// With --slurm: the partition (`#SBATCH --partition`); default:
        /// the cluster's default partition.
        #[arg(long, requires = "slurm")]
        partition: Option<String>,
        /// With --slurm: time limit per array task (`#SBATCH --time`, e.g.
        /// `30`, `2:00:00`, `1-0`); default: the partition's.
        #[arg(long, requires = "slurm")]
        time: Option<String>,
        /// With --slurm: memory per array task (`#SBATCH --mem`, e.g. `2G`);
        /// default: the partition's.
        #[arg(long, requires = "slurm")]
        mem: Option<String>,
    },
    /// Gather a sweep's points into DIR/sweep.csv (one row per grid point:
    /// its parameters and headline numbers, in grid order) and a summary
    /// plot DIR/sweep.svg, whichever runs or shards wrote them. Fails,
    /// naming the missing points, if the sweep is incomplete.
    Merge {
        /// The sweep's output directory (the --out of `ka-sim sweep`).
        dir: PathBuf,
    },
}

/// Output directory and overrides of `paper` and `run`.
#[derive(Args)]
struct RunArgs {
    /// Output directory (required, except for `paper list`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Override the seed (default: the scenario's; the paper's use 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Override the simulated seconds (default: the scenario's; for
    /// `paper`, the paper's).
    #[arg(long)]
    duration: Option<f64>,
}

impl RunArgs {
    /// The output directory, created now so that a path that cannot hold
    /// results fails before the simulation runs.
    fn out(&self) -> Result<PathBuf> {
        let out = self
            .out
            .clone()
            .context("--out DIR is required (where the results go)")?;
        out_dir(&out)?;
        Ok(out)
    }
}

/// Creates `dir` (and its parents) or says which path is in the way.
fn out_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the output directory {}", dir.display()))
}

fn read(file: &Path) -> Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Paper { figure, .. } if figure == "list" => {
            for e in paper::experiments() {
                println!("{:<14} {}", e.name(), e.about());
            }
        }
        Cmd::Paper { figure, run } => {
            let figure: &dyn Experiment =
                paper::find_experiment(&figure).map_err(anyhow::Error::msg)?;
            let out = run.out()?;
            paper::run_figure(figure, &out, run.seed, run.duration, true)?;
            let figure = figure.name();
            eprintln!(
                "plots: {} (combined) and {}/<variant>/{{timeseries,fct}}.svg",
                out.join(format!("{figure}.svg")).display(),
                out.display()
            );
            eprintln!(
                "numbers: {} (headline numbers and claim checks); flows.csv, series.csv, summary.json per variant",
                out.join(format!("{figure}.json")).display()
            );
        }
        Cmd::Run { file, run } => {
            let out = run.out()?;
            let s = paper::scenario(&read(&file)?, run.seed, run.duration)?;
            let label = if s.variant.is_empty() {
                s.name.clone()
            } else {
                format!("{}/{}", s.name, s.variant)
            };
            let mut progress = run::Progress::new(&label);
            let r = run::run_scenario(&s, Some(&mut progress))?;
            let sum = report::write_all(&out, &r, serde_json::Value::Null)?;
            eprintln!("{}", report::one_line(&sum));
        }
        Cmd::Sweep {
            file,
            out,
            jobs,
            shard,
            resume,
            slurm,
            shards,
            partition,
            time,
            mem,
        } => {
            let grid = sweep::Grid::from_toml(&read(&file)?)?;
            if grid.points() == 0 {
                bail!("empty sweep");
            }
            if slurm {
                let job = SlurmJob {
                    shards: shards.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                    partition,
                    time,
                    mem,
                    cpus: jobs,
                };
                let exe = std::env::current_exe().context("locating the ka-sim binary")?;
                let script = slurm::write(&grid, &job, &exe, &file, &out)?;
                let dir = script.parent().unwrap_or(&out);
                eprintln!(
                    "wrote {}: a job array of {} tasks over the {} grid points",
                    script.display(),
                    job.shard_count(&grid),
                    grid.points()
                );
                // stdout: the command alone, so that scripts can run it.
                println!("sbatch {}", slurm::shell_quote(&script.to_string_lossy()));
                eprintln!(
                    "when every array task has finished: {} merge {}",
                    slurm::shell_quote(&exe.to_string_lossy()),
                    slurm::shell_quote(&dir.to_string_lossy())
                );
                return Ok(());
            }
            let shard = shard.unwrap_or(Shard { index: 0, count: 1 });
            out_dir(&out)?;
            let lines = sweep::run(&grid, &out, jobs, shard, resume)?;
            for l in lines {
                eprintln!("{l}");
            }
            if grid.missing(&out).is_empty() {
                eprintln!(
                    "all {} points complete: `ka-sim merge {}` writes sweep.csv and sweep.svg",
                    grid.points(),
                    out.display()
                );
            }
        }
        Cmd::Merge { dir } => {
            let m = sweep::merge(&dir)?;
            eprintln!(
                "{} points: {} and {}",
                m.points,
                m.csv.display(),
                m.plot.display()
            );
        }
    }
    Ok(())
}

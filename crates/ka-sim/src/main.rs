//! `ka-sim`: run the paper's scenarios, any scenario file, or a sweep.
//!
//! ```text
//! ka-sim paper <NAME> --out DIR [--seed N] [--duration SECONDS]
//! ka-sim paper list
//! ka-sim run FILE.toml --out DIR [--seed N] [--duration SECONDS]
//! ka-sim sweep FILE.toml --out DIR [--jobs N] [--shard i/N]
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use ka_sim::paper::{self, Experiment};
use ka_sim::results::report;
use ka_sim::run;
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
    /// Run a parameter grid (a scenario file with a `[sweep]` table).
    Sweep {
        /// Sweep TOML.
        file: PathBuf,
        /// Output directory (one subdirectory per grid point).
        #[arg(long)]
        out: PathBuf,
        /// Parallel runs (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only shard i of N (0-based), e.g. `--shard 3/10` for the 4th
        /// of 10 Slurm array tasks.
        #[arg(long)]
        shard: Option<Shard>,
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
        } => {
            let grid = sweep::Grid::from_toml(&read(&file)?)?;
            if grid.points() == 0 {
                bail!("empty sweep");
            }
            let shard = shard.unwrap_or(Shard { index: 0, count: 1 });
            out_dir(&out)?;
            let lines = sweep::run(&grid, &out, jobs, shard)?;
            for l in lines {
                eprintln!("{l}");
            }
        }
    }
    Ok(())
}

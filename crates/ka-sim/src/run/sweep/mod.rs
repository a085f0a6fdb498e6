//! Parameter sweeps: a scenario file plus a `[sweep]` table whose keys are
//! dotted paths into the scenario and whose values are lists.
//!
//! ```toml
//! name = "load-sweep"
//! duration_s = 30.0
//! # … a normal scenario …
//!
//! [sweep]
//! seed = [1, 2, 3]
//! "topology.capacity_mbps" = [100.0, 150.0]
//! "group.0.workload.off_mean_s" = [0.25, 0.5, 1.0]
//! ```
//!
//! The grid is the Cartesian product, axes in key order (sorted), the last
//! axis varying fastest; point `i` is written to `OUT/p<i>` (zero-padded),
//! and, once all its files are written, its marker `OUT/p<i>/point.csv`
//! ([`point`]: when a point counts as complete). `--shard i/N` runs the
//! points whose index is `i` modulo `N`, so a Slurm array `--array=0-(N-1)`
//! with `--shard $SLURM_ARRAY_TASK_ID/N` covers the grid exactly once
//! ([`slurm`] writes that script). Every shard writes `sweep.toml` (the
//! sweep file), `points.csv` (the whole grid; the same bytes from every
//! shard) and `results-<i>-of-<N>.csv` (its points). With `resume`, points
//! already complete are not run again. [`merge()`] gathers every point's
//! marker into `OUT/sweep.csv` and `OUT/sweep.svg`, whichever runs wrote
//! them (DESIGN §9.1).

/// A one-second sweep scenario for the unit tests: name `$name`, two TCP
/// long-lived senders on the default dumbbell, then `[sweep]` with `$axes`.
#[cfg(test)]
macro_rules! tiny_sweep {
    ($name:literal, $axes:literal) => {
        concat!(
            "name = \"",
            $name,
            "\"\nduration_s = 1.0\n[topology]\nkind = \"dumbbell\"\n[[group]]\nname = \"a\"\n",
            "kind = \"tcp\"\ncount = 2\n[group.workload]\ntype = \"long-lived\"\n[sweep]\n",
            $axes
        )
    };
}

pub mod merge;
pub mod point;
pub mod slurm;

use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rayon::prelude::*;

pub use merge::{Merged, merge};
use point::{Headline, MARKER, write_atomic};

use crate::results::report;
use crate::run;
use crate::scenario::{Scenario, ScenarioError};

/// Name of the sweep file's copy in the output directory (what
/// [`merge()`] reads the grid from).
pub const SWEEP_FILE: &str = "sweep.toml";

/// What can go wrong in a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// Reading or writing a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The sweep file or one of its points is not a valid scenario.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The thread pool could not be built.
    #[error("thread pool: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    /// A directory given to [`merge()`] holds no sweep.
    #[error(
        "{}: no {SWEEP_FILE}, so not the output directory of a sweep (`ka-sim sweep FILE --out DIR` writes it)",
        dir.display()
    )]
    NotASweep {
        /// The directory.
        dir: PathBuf,
    },
    /// Some points have no complete result.
    #[error("{}", incomplete_message(dir, *total, missing))]
    Incomplete {
        /// The sweep's output directory.
        dir: PathBuf,
        /// Points in the grid.
        total: usize,
        /// The missing points: directory name and parameters.
        missing: Vec<String>,
    },
    /// An option of the Slurm script is unusable.
    #[error("--slurm: {0}")]
    Slurm(String),
}

/// Most missing points an [`SweepError::Incomplete`] message names one by one.
const MAX_NAMED: usize = 50;

fn incomplete_message(dir: &Path, total: usize, missing: &[String]) -> String {
    let mut s = format!(
        "sweep in {} is incomplete: {} of {total} points have no complete result: ",
        dir.display(),
        missing.len()
    );
    s.push_str(
        &missing
            .iter()
            .take(MAX_NAMED)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
    );
    if missing.len() > MAX_NAMED {
        s.push_str(&format!(" and {} more", missing.len() - MAX_NAMED));
    }
    s.push_str(
        "; run the sweep (or the Slurm array tasks) again with --resume to finish them, then merge",
    );
    s
}

/// The [`SweepError::Io`] for `path`.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SweepError + '_ {
    move |source| SweepError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One shard of a sweep: `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 0 ≤ index < count.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard `{s}`: expected i/N"))?;
        let index: usize = i.trim().parse().map_err(|e| format!("shard index: {e}"))?;
        let count: usize = n.trim().parse().map_err(|e| format!("shard count: {e}"))?;
        if count == 0 || index >= count {
            return Err(format!("shard `{s}`: need 0 <= i < N"));
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether grid point `i` belongs to this shard.
    pub fn contains(&self, i: usize) -> bool {
        i % self.count == self.index
    }
}

/// A parsed sweep.
#[derive(Debug, Clone)]
pub struct Grid {
    text: String,
    base: toml::Table,
    axes: Vec<(String, Vec<toml::Value>)>,
}

fn set_path(v: &mut toml::Value, path: &str, new: toml::Value) -> Result<(), ScenarioError> {
    let bad = || ScenarioError::Invalid(format!("sweep key `{path}` does not name a value"));
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    let Some((last, init)) = parts.split_last() else {
        return Err(bad());
    };
    for p in init {
        cur = match cur {
            toml::Value::Table(t) => t
                .entry(p.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new())),
            toml::Value::Array(a) => {
                let i: usize = p.parse().map_err(|_| bad())?;
                a.get_mut(i).ok_or_else(bad)?
            }
            _ => return Err(bad()),
        };
    }
    match cur {
        toml::Value::Table(t) => {
            t.insert(last.to_string(), new);
        }
        toml::Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| bad())?;
            *a.get_mut(i).ok_or_else(bad)? = new;
        }
        _ => return Err(bad()),
    }
    Ok(())
}

fn value_label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Grid {
    /// Parses a sweep file; every grid point is checked to be a valid
    /// scenario.
    pub fn from_toml(text: &str) -> Result<Grid, ScenarioError> {
        let mut base: toml::Table =
            toml::from_str(text).map_err(|e| ScenarioError::Parse(e.to_string()))?;
        let sweep = match base.remove("sweep") {
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err(ScenarioError::Invalid("`sweep` must be a table".into())),
            None => toml::Table::new(),
        };
        let mut axes = Vec::new();
        for (k, v) in sweep {
            match v {
                toml::Value::Array(a) if !a.is_empty() => axes.push((k, a)),
                _ => {
                    return Err(ScenarioError::Invalid(format!(
                        "sweep `{k}`: expected a non-empty list"
                    )));
                }
            }
        }
        axes.sort_by(|a, b| a.0.cmp(&b.0));
        let g = Grid {
            text: text.to_string(),
            base,
            axes,
        };
        for i in 0..g.points() {
            g.point(i)?;
        }
        Ok(g)
    }

    /// The sweep file's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The scenario's `name` (empty if unset).
    pub fn name(&self) -> &str {
        self.base
            .get("name")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
    }

    /// Number of grid points.
    pub fn points(&self) -> usize {
        self.axes.iter().map(|a| a.1.len()).product()
    }

    /// Axis names, in grid order.
    pub fn axes(&self) -> Vec<&str> {
        self.axes.iter().map(|a| a.0.as_str()).collect()
    }

    /// The axis values of point `i` (last axis fastest).
    pub fn coordinates(&self, mut i: usize) -> Vec<&toml::Value> {
        let mut out = vec![None; self.axes.len()];
        for (k, (_, vals)) in self.axes.iter().enumerate().rev() {
            out[k] = vals.get(i % vals.len());
            i /= vals.len();
        }
        out.into_iter().flatten().collect()
    }

    /// The scenario of point `i`.
    pub fn point(&self, i: usize) -> Result<Scenario, ScenarioError> {
        let mut v = toml::Value::Table(self.base.clone());
        for ((key, _), val) in self.axes.iter().zip(self.coordinates(i)) {
            set_path(&mut v, key, val.clone())?;
        }
        let mut s = Scenario::from_value(v)?;
        let coords = self.coordinate_labels(i);
        if !coords.is_empty() {
            let tag = coords.join(",");
            s.variant = if s.variant.is_empty() {
                tag
            } else {
                format!("{},{tag}", s.variant)
            };
        }
        Ok(s)
    }

    /// Zero-padded directory name of point `i`.
    pub fn dir_name(&self, i: usize) -> String {
        let width = self.points().saturating_sub(1).to_string().len().max(1);
        format!("p{i:0width$}")
    }

    /// `points.csv`: `point,dir,<axis>…`.
    pub fn points_csv(&self) -> String {
        let mut s = self.params_header();
        s.push('\n');
        for i in 0..self.points() {
            s.push_str(&self.params_row(i));
            s.push('\n');
        }
        s
    }

    /// Point `i` and its parameters, e.g. `p03 (seed=2,topology.rtt_ms=50.0)`.
    pub fn describe(&self, i: usize) -> String {
        format!(
            "{} ({})",
            self.dir_name(i),
            self.coordinate_labels(i).join(",")
        )
    }

    /// Point `i`'s coordinates as `axis=value` labels, in axis order.
    fn coordinate_labels(&self, i: usize) -> Vec<String> {
        self.axes
            .iter()
            .zip(self.coordinates(i))
            .map(|((k, _), v)| format!("{k}={}", value_label(v)))
            .collect()
    }

    /// Points of the grid without a complete result in `out`.
    pub fn missing(&self, out: &Path) -> Vec<usize> {
        (0..self.points())
            .filter(|&i| self.completed(out, i).is_none())
            .collect()
    }
}

/// Runs this shard's points with `jobs` threads (default: all cores);
/// returns one line per point, in point order. With `resume`, a point
/// whose result in `out` is already complete ([`Grid::completed`]) is not
/// run again; the shard's `results-<i>-of-<N>.csv` lists it all the same,
/// so its bytes do not depend on how often the shard was interrupted.
pub fn run(
    grid: &Grid,
    out: &Path,
    jobs: Option<usize>,
    shard: Shard,
    resume: bool,
) -> Result<Vec<String>, SweepError> {
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let path = out.join(SWEEP_FILE);
    write_atomic(&path, grid.text().as_bytes()).map_err(io_err(&path))?;
    let path = out.join("points.csv");
    write_atomic(&path, grid.points_csv().as_bytes()).map_err(io_err(&path))?;
    let mine: Vec<usize> = (0..grid.points()).filter(|&i| shard.contains(i)).collect();
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(j) = jobs {
        builder = builder.num_threads(j.max(1));
    }
    let pool = builder.build()?;
    let results: Vec<Result<(String, String), SweepError>> = pool.install(|| {
        mine.par_iter()
            .map(|&i| {
                let name = grid.dir_name(i);
                if resume && let Some(h) = grid.completed(out, i) {
                    let line = format!("{name}: complete, not run again");
                    eprintln!("{line}");
                    return Ok((line, format!("{i},{name},{}", h.csv())));
                }
                let (line, h) = run_point(grid, out, i)?;
                eprintln!("{line}");
                Ok((line, format!("{i},{name},{}", h.csv())))
            })
            .collect()
    });
    let mut lines = Vec::new();
    let mut csv = format!("point,dir,{}\n", point::HEADLINE_HEADER);
    for r in results {
        let (line, row) = r?;
        lines.push(line);
        csv.push_str(&row);
        csv.push('\n');
    }
    let path = out.join(format!("results-{}-of-{}.csv", shard.index, shard.count));
    write_atomic(&path, csv.as_bytes()).map_err(io_err(&path))?;
    Ok(lines)
}

/// Runs point `i` into `out/p<i>`: first its old marker goes, then the
/// result files are written, then the new marker (atomically).
fn run_point(grid: &Grid, out: &Path, i: usize) -> Result<(String, Headline), SweepError> {
    let name = grid.dir_name(i);
    let dir = out.join(&name);
    let marker = dir.join(MARKER);
    match std::fs::remove_file(&marker) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_err(&marker)(e)),
        _ => {}
    }
    point::remove_stale_temps(&dir, MARKER);
    let s = grid.point(i)?;
    let r = run::run_scenario(&s, None)?;
    // DCC points carry the mechanism of the seed's Fig. 2 in their
    // `summary.json` (retransmission timeouts, the middle link's idle time
    // while flows wait); other points have no headline.
    let headline = match s.topology {
        crate::scenario::Topology::Dcc(_) => crate::paper::dcc_seeds::headline_extra(&r),
        _ => serde_json::Value::Null,
    };
    let sum = report::write_all(&dir, &r, headline).map_err(io_err(&dir))?;
    let h = Headline::from_summary(&sum);
    let text = grid
        .marker_text(i, &h)
        .ok_or_else(|| SweepError::Scenario(ScenarioError::Invalid(format!("sweep point {i}"))))?;
    write_atomic(&marker, text.as_bytes()).map_err(io_err(&marker))?;
    Ok((format!("{name}: {}", report::one_line(&sum)), h))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWEEP: &str = tiny_sweep!(
        "s",
        r#"seed = [1, 2]
"topology.capacity_mbps" = [100.0, 150.0, 200.0]
"group.0.count" = [1, 4]
"#
    );

    #[test]
    fn grid_points_and_paths() {
        let g = Grid::from_toml(SWEEP).unwrap();
        assert_eq!(g.points(), 12);
        assert_eq!(
            g.axes(),
            vec!["group.0.count", "seed", "topology.capacity_mbps"]
        );
        let p = g.point(0).unwrap();
        assert_eq!((p.groups[0].count, p.seed), (1, 1));
        let p = g.point(11).unwrap();
        assert_eq!((p.groups[0].count, p.seed), (4, 2));
        assert_eq!(p.topology.hops()[0].capacity_mbps, 200.0);
        assert_eq!(
            p.variant,
            "group.0.count=4,seed=2,topology.capacity_mbps=200.0"
        );
        let p = g.point(1).unwrap();
        assert_eq!(p.topology.hops()[0].capacity_mbps, 150.0);
        assert_eq!(g.dir_name(3), "p03");
        let csv = g.points_csv();
        assert!(
            csv.starts_with(
                "point,dir,group.0.count,seed,topology.capacity_mbps\n0,p00,1,1,100.0\n"
            )
        );
    }

    #[test]
    fn bad_sweeps_are_rejected() {
        assert!(Grid::from_toml(&SWEEP.replace("\"group.0.count\"", "\"group.7.count\"")).is_err());
        assert!(Grid::from_toml(&SWEEP.replace("seed = [1, 2]", "seed = 3")).is_err());
        assert!(Grid::from_toml(&SWEEP.replace("[1, 4]", "[0, -1]")).is_err());
    }

    #[test]
    fn shards_partition_the_grid() {
        let s: Shard = "2/5".parse().unwrap();
        assert_eq!(s, Shard { index: 2, count: 5 });
        assert!("5/5".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        for p in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.contains(p)).count(), 1);
        }
    }
}

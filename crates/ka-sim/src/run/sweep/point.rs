//! When a grid point counts as done: its *marker*, `OUT/p<i>/point.csv`.
//!
//! A point's run writes its result files into `OUT/p<i>/` and then, last,
//! the marker: one CSV header and one row holding the point's parameters,
//! its headline numbers and a fingerprint of the scenario it ran. The
//! marker is written to a temporary file in the same directory, flushed to
//! disk and renamed over `point.csv`; a rename within one file system is
//! atomic, so a run killed at any instant (a Slurm time limit, a
//! preemption, Ctrl-C) leaves either no marker or a whole one, never a half
//! point that looks complete. Before a point is (re)run its old marker is
//! removed first, so files being overwritten are never covered by a marker
//! either.
//!
//! A marker counts only if it matches the grid being run: the same header
//! (axes), the same point index, directory and axis values, and the same
//! fingerprint of the point's whole scenario as run (`Scenario::to_toml`,
//! every default filled in). Changing anything in the sweep file therefore
//! makes the affected points run again under `--resume` and count as
//! missing in `ka-sim merge`.

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::Grid;
use crate::results::metrics::{fmt_val, mean};
use crate::results::output::Summary;

/// File name of a point's marker inside its directory.
pub const MARKER: &str = "point.csv";

/// Column names of the headline numbers (after the point's parameters).
pub const HEADLINE_HEADER: &str = "flows,completed,first_hop_utilization,mean_fct_s,mean_slowdown";

/// The headline numbers of one finished point, as written in the CSVs
/// (`fmt_val` text; empty where there is no value, e.g. no flow completed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    /// Flows started.
    pub flows: String,
    /// Flows completed.
    pub completed: String,
    /// Mean utilisation of the first hop.
    pub first_hop_utilization: String,
    /// Mean FCT (s), averaged over flow kinds.
    pub mean_fct_s: String,
    /// Mean slowdown, averaged over flow kinds.
    pub mean_slowdown: String,
}

fn mean_of(it: impl Iterator<Item = f64>) -> String {
    let v: Vec<f64> = it.collect();
    mean(&v).map(fmt_val).unwrap_or_default()
}

impl Headline {
    /// The headline numbers of a run's summary.
    pub fn from_summary(sum: &Summary) -> Self {
        Headline {
            flows: sum.flows.to_string(),
            completed: sum.flows_completed.to_string(),
            first_hop_utilization: sum
                .hops
                .first()
                .and_then(|h| h.mean_utilization)
                .map(fmt_val)
                .unwrap_or_default(),
            mean_fct_s: mean_of(sum.by_kind.values().filter_map(|k| k.mean_fct_s)),
            mean_slowdown: mean_of(sum.by_kind.values().filter_map(|k| k.mean_slowdown)),
        }
    }

    /// The five values joined by commas (the columns of [`HEADLINE_HEADER`]).
    pub fn csv(&self) -> String {
        [
            self.flows.as_str(),
            &self.completed,
            &self.first_hop_utilization,
            &self.mean_fct_s,
            &self.mean_slowdown,
        ]
        .join(",")
    }

    fn parse(fields: &[&str]) -> Option<Self> {
        let [flows, completed, util, fct, slowdown] = fields else {
            return None;
        };
        Some(Headline {
            flows: flows.to_string(),
            completed: completed.to_string(),
            first_hop_utilization: util.to_string(),
            mean_fct_s: fct.to_string(),
            mean_slowdown: slowdown.to_string(),
        })
    }
}

/// FNV-1a (64 bit) of `text`, as 16 hex digits: a stable fingerprint that
/// does not depend on the Rust version (unlike `std`'s hashers).
pub fn fingerprint(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Writes `bytes` to `path` so that `path` holds either its old content or
/// all of `bytes`, never part: a temporary file beside it, flushed to disk,
/// renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |tmp| {
        let mut f = std::fs::OpenOptions::new().write(true).open(tmp)?;
        f.write_all(bytes)
    })
}

/// Like [`write_atomic`], with `write` filling the temporary file (given
/// its path; it exists, empty).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = unique_temp(path)?;
    let written = write(&tmp)
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Creates a new empty file `.NAME.tmp.<host>.<pid>.<n>` beside `path`.
/// Shards on several nodes share the output directory and process ids
/// repeat across nodes, so the name has the host in it and the file is
/// created exclusively (a name taken anyway is skipped, never reused).
fn unique_temp(path: &Path) -> io::Result<PathBuf> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{}: not a file path", path.display())))?
        .to_string_lossy();
    let host: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let mut last = None;
    for _ in 0..100 {
        let tmp = path.with_file_name(format!(
            ".{name}.tmp.{host}.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(_) => return Ok(tmp),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// Removes temporary files [`write_atomic`] left in `dir` for `name` (a
/// run killed between creating and renaming one).
pub fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Grid {
    /// `point,dir,<axis>…`: the parameter columns of `points.csv`,
    /// `sweep.csv` and the markers.
    pub fn params_header(&self) -> String {
        let mut s = String::from("point,dir");
        for a in self.axes() {
            s.push(',');
            s.push_str(a);
        }
        s
    }

    /// Point `i`'s parameter columns (commas inside a value become `;`).
    pub fn params_row(&self, i: usize) -> String {
        let mut s = format!("{i},{}", self.dir_name(i));
        for v in self.coordinates(i) {
            s.push(',');
            s.push_str(&super::value_label(v).replace(',', ";"));
        }
        s
    }

    /// The fingerprint of point `i`'s scenario as run.
    pub fn point_fingerprint(&self, i: usize) -> Option<String> {
        self.point(i).ok().map(|s| fingerprint(&s.to_toml()))
    }

    /// The marker of point `i` with headline numbers `h`.
    pub(super) fn marker_text(&self, i: usize, h: &Headline) -> Option<String> {
        let fp = self.point_fingerprint(i)?;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{},{HEADLINE_HEADER},scenario_fingerprint",
            self.params_header()
        );
        let _ = writeln!(s, "{},{},{fp}", self.params_row(i), h.csv());
        Some(s)
    }

    /// Point `i`'s headline numbers if its results in `out` are complete:
    /// its marker exists and matches this grid (see the module docs).
    pub fn completed(&self, out: &Path, i: usize) -> Option<Headline> {
        let text = std::fs::read_to_string(out.join(self.dir_name(i)).join(MARKER)).ok()?;
        let mut lines = text.lines();
        let header = lines.next()?;
        let row = lines.next()?;
        if lines.next().is_some()
            || header
                != format!(
                    "{},{HEADLINE_HEADER},scenario_fingerprint",
                    self.params_header()
                )
        {
            return None;
        }
        let rest = row.strip_prefix(&self.params_row(i))?.strip_prefix(',')?;
        let fields: Vec<&str> = rest.split(',').collect();
        let (fp, headline) = fields.split_last()?;
        if Some(*fp) != self.point_fingerprint(i).as_deref() {
            return None;
        }
        Headline::parse(headline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWEEP: &str = tiny_sweep!(
        "s",
        r#"seed = [1, 2]
"#
    );

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ka-sim-point-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn headline() -> Headline {
        Headline {
            flows: "2".into(),
            completed: "0".into(),
            first_hop_utilization: "0.97".into(),
            mean_fct_s: String::new(),
            mean_slowdown: String::new(),
        }
    }

    #[test]
    fn fingerprint_is_fnv1a() {
        // FNV-1a 64 test vectors.
        assert_eq!(fingerprint(""), "cbf29ce484222325");
        assert_eq!(fingerprint("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn atomic_write_replaces_whole_and_leaves_no_temp() {
        let d = tmp("atomic");
        let p = d.join("x.csv");
        write_atomic(&p, b"old").unwrap();
        write_atomic(&p, b"new content").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new content");
        let names: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        std::fs::write(d.join(".x.csv.tmp.1.2"), "half").unwrap();
        remove_stale_temps(&d, "x.csv");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_marker_counts_only_for_its_own_point_and_grid() {
        let g = Grid::from_toml(SWEEP).unwrap();
        let d = tmp("marker");
        assert_eq!(g.completed(&d, 1), None, "no marker");
        std::fs::create_dir_all(d.join("p1")).unwrap();
        let m = g.marker_text(1, &headline()).unwrap();
        assert!(m.starts_with(
            "point,dir,seed,flows,completed,first_hop_utilization,mean_fct_s,mean_slowdown,scenario_fingerprint\n1,p1,2,2,0,0.97,,,"
        ));
        std::fs::write(d.join("p1").join(MARKER), &m).unwrap();
        assert_eq!(g.completed(&d, 1), Some(headline()));
        // Point 0's marker in point 1's directory does not count.
        let m0 = g.marker_text(0, &headline()).unwrap();
        std::fs::write(d.join("p1").join(MARKER), &m0).unwrap();
        assert_eq!(g.completed(&d, 1), None);
        // A truncated marker does not count.
        std::fs::write(d.join("p1").join(MARKER), &m[..m.len() - 5]).unwrap();
        assert_eq!(g.completed(&d, 1), None);
        // The same point of a changed scenario does not count.
        std::fs::write(d.join("p1").join(MARKER), &m).unwrap();
        let changed =
            Grid::from_toml(&SWEEP.replace("duration_s = 1.0", "duration_s = 2.0")).unwrap();
        assert_eq!(changed.completed(&d, 1), None);
        assert_eq!(g.completed(&d, 1), Some(headline()));
        std::fs::remove_dir_all(&d).unwrap();
    }
}

//! `ka-sim merge DIR`: one table and one plot of a whole sweep.
//!
//! The grid comes from `DIR/sweep.toml` (every sweep run writes it), each
//! point's numbers from its marker `DIR/p<i>/point.csv` (`point` module),
//! so it does not matter which process wrote a point: one run, any number
//! of shards, runs interrupted and resumed. The output depends only on the
//! grid and the points' results, so it is byte-identical however the sweep
//! was run:
//!
//! * `DIR/sweep.csv`: `point,dir,<axis>…,flows,completed,
//!   first_hop_utilization,mean_fct_s,mean_slowdown`, one row per point in
//!   grid order;
//! * `DIR/sweep.svg`: mean FCT, mean slowdown and first-hop utilisation
//!   against the first numeric axis other than `seed`, one curve per
//!   combination of the other axes (if there is no such axis: against the
//!   grid index, one curve).
//!
//! If any point has no complete result, nothing is written and the error
//! names the missing points.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::point::{HEADLINE_HEADER, Headline, write_atomic, write_atomic_with};
use super::{Grid, SWEEP_FILE, SweepError, io_err, value_label};
use crate::results::plot::{self, Curve, Panel};

/// What [`merge()`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// Grid points (rows of the table).
    pub points: usize,
    /// `DIR/sweep.csv`.
    pub csv: PathBuf,
    /// `DIR/sweep.svg`.
    pub plot: PathBuf,
}

/// Merges the sweep in `dir` into `dir/sweep.csv` and `dir/sweep.svg`.
pub fn merge(dir: &Path) -> Result<Merged, SweepError> {
    let file = dir.join(SWEEP_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SweepError::NotASweep {
                dir: dir.to_path_buf(),
            });
        }
        Err(e) => return Err(io_err(&file)(e)),
    };
    let grid = Grid::from_toml(&text)?;
    let mut rows = Vec::with_capacity(grid.points());
    let mut missing = Vec::new();
    for i in 0..grid.points() {
        match grid.completed(dir, i) {
            Some(h) => rows.push(h),
            None => missing.push(grid.describe(i)),
        }
    }
    if !missing.is_empty() {
        return Err(SweepError::Incomplete {
            dir: dir.to_path_buf(),
            total: grid.points(),
            missing,
        });
    }
    let mut csv = format!("{},{HEADLINE_HEADER}\n", grid.params_header());
    for (i, h) in rows.iter().enumerate() {
        csv.push_str(&format!("{},{}\n", grid.params_row(i), h.csv()));
    }
    let csv_path = dir.join("sweep.csv");
    write_atomic(&csv_path, csv.as_bytes()).map_err(io_err(&csv_path))?;
    let plot_path = dir.join("sweep.svg");
    let title = format!("{}: sweep of {} points", grid.name(), grid.points());
    write_atomic_with(&plot_path, |tmp| {
        plot::write_svg(tmp, &title, &panels(&grid, &rows))
    })
    .map_err(io_err(&plot_path))?;
    Ok(Merged {
        points: grid.points(),
        csv: csv_path,
        plot: plot_path,
    })
}

/// The x axis of the summary plot: the first axis whose values are all
/// numbers, other than `seed` (seeds are repetitions, not a parameter).
fn x_axis(grid: &Grid) -> Option<usize> {
    grid.axes.iter().position(|(k, vals)| {
        k != "seed"
            && vals
                .iter()
                .all(|v| matches!(v, toml::Value::Integer(_) | toml::Value::Float(_)))
    })
}

fn number(v: &toml::Value) -> f64 {
    match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        _ => f64::NAN,
    }
}

/// The three panels of `sweep.svg`; `rows[i]` is point `i`'s headline.
fn panels(grid: &Grid, rows: &[Headline]) -> Vec<Panel> {
    let x = x_axis(grid);
    let x_label = x.and_then(|k| grid.axes().get(k).map(|s| s.to_string()));
    // Curves keyed by the other axes' values, in order of first appearance.
    let mut order: Vec<String> = Vec::new();
    let mut members: BTreeMap<String, Vec<(f64, usize)>> = BTreeMap::new();
    for i in 0..rows.len() {
        let coords = grid.coordinates(i);
        let mut label = Vec::new();
        let mut xv = i as f64;
        for (k, (name, v)) in grid.axes().iter().zip(&coords).enumerate() {
            if Some(k) == x {
                xv = number(v);
            } else {
                label.push(format!("{name}={}", value_label(v)));
            }
        }
        // Without a numeric axis, x is the grid index: one curve.
        let label = if x.is_some() {
            label.join(", ")
        } else {
            String::new()
        };
        if !members.contains_key(&label) {
            order.push(label.clone());
        }
        members.entry(label).or_default().push((xv, i));
    }
    let value = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
    let metric = |title: &str, y_label: &str, get: &dyn Fn(&Headline) -> &str| {
        let curves = order
            .iter()
            .map(|label| {
                let mut pts: Vec<(f64, f64)> = members
                    .get(label)
                    .map(|m| {
                        m.iter()
                            .filter_map(|&(xv, i)| rows.get(i).map(|h| (xv, value(get(h)))))
                            .collect()
                    })
                    .unwrap_or_default();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Curve {
                    label: label.clone(),
                    points: pts,
                }
            })
            .collect();
        Panel {
            title: title.to_string(),
            x_label: x_label.clone().unwrap_or_else(|| "grid point".into()),
            y_label: y_label.to_string(),
            curves,
            markers: true,
            ..Panel::default()
        }
    };
    vec![
        metric("(a) Mean flow completion time", "mean FCT (s)", &|h| {
            &h.mean_fct_s
        }),
        metric("(b) Mean slowdown", "mean slowdown", &|h| &h.mean_slowdown),
        metric("(c) Utilisation of the first hop", "utilisation", &|h| {
            &h.first_hop_utilization
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWEEP: &str = tiny_sweep!(
        "s",
        r#"seed = [1, 2]
"topology.capacity_mbps" = [200.0, 100.0]
"group.0.kind" = ["tcp", "ka"]
"#
    );

    fn h(fct: &str) -> Headline {
        Headline {
            flows: "1".into(),
            completed: "1".into(),
            first_hop_utilization: "0.5".into(),
            mean_fct_s: fct.into(),
            mean_slowdown: String::new(),
        }
    }

    #[test]
    fn plot_uses_a_numeric_axis_other_than_seed() {
        let g = Grid::from_toml(SWEEP).unwrap();
        // Axes: group.0.kind, seed, topology.capacity_mbps.
        assert_eq!(x_axis(&g), Some(2));
        let rows: Vec<Headline> = (0..g.points()).map(|i| h(&i.to_string())).collect();
        let p = panels(&g, &rows);
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].x_label, "topology.capacity_mbps");
        let c = &p[0].curves;
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].label, "group.0.kind=tcp, seed=1");
        // Points sorted by x: capacity 100 is point 1, 200 is point 0.
        assert_eq!(c[0].points, vec![(100.0, 1.0), (200.0, 0.0)]);
        // Empty values break the line instead of plotting 0.
        assert!(p[1].curves[0].points.iter().all(|p| p.1.is_nan()));
        let only_seed = Grid::from_toml(&SWEEP.replace(
            "\"topology.capacity_mbps\" = [200.0, 100.0]\n\"group.0.kind\" = [\"tcp\", \"ka\"]\n",
            "",
        ))
        .unwrap();
        assert_eq!(x_axis(&only_seed), None);
        let p = panels(&only_seed, &[h("1"), h("2")]);
        assert_eq!(p[0].x_label, "grid point");
        assert_eq!(p[0].curves.len(), 1);
    }

    #[test]
    fn incomplete_sweeps_name_their_missing_points() {
        let d = std::env::temp_dir().join(format!("ka-sim-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        assert!(matches!(merge(&d), Err(SweepError::NotASweep { .. })));
        std::fs::write(d.join(SWEEP_FILE), SWEEP).unwrap();
        let g = Grid::from_toml(SWEEP).unwrap();
        for i in [0, 1, 2, 4, 5, 6, 7] {
            std::fs::create_dir_all(d.join(g.dir_name(i))).unwrap();
            let m = g.marker_text(i, &h("0.1")).unwrap();
            std::fs::write(d.join(g.dir_name(i)).join("point.csv"), m).unwrap();
        }
        let e = merge(&d).unwrap_err().to_string();
        assert!(
            e.contains("1 of 8 points")
                && e.contains("p3 (group.0.kind=tcp,seed=2,topology.capacity_mbps=100.0)"),
            "{e}"
        );
        assert!(!d.join("sweep.csv").exists());
        std::fs::create_dir_all(d.join("p3")).unwrap();
        std::fs::write(d.join("p3/point.csv"), g.marker_text(3, &h("0.3")).unwrap()).unwrap();
        let m = merge(&d).unwrap();
        assert_eq!(m.points, 8);
        let csv = std::fs::read_to_string(&m.csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 9);
        assert_eq!(
            lines[0],
            "point,dir,group.0.kind,seed,topology.capacity_mbps,\
             flows,completed,first_hop_utilization,mean_fct_s,mean_slowdown"
        );
        assert_eq!(lines[4], "3,p3,tcp,2,100.0,1,1,0.5,0.3,");
        assert!(
            std::fs::read_to_string(&m.plot)
                .unwrap()
                .starts_with("<svg")
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}

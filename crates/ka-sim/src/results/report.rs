//! Everything a run writes: the data files ([`crate::results::output`]) plus the
//! generic per-run plots.
//!
//! * `timeseries.svg`: (a) throughput of the tracked flows, (b) utilisation
//!   of every forward hop, (c) queue of every forward hop; grey where the
//!   first KA port is in TCP mode.
//! * `fct.svg` (when sized flows completed): mean FCT against flow size for
//!   every group.

use std::io;
use std::path::Path;

use crate::results::RunResult;
use crate::results::metrics::Metric;
use crate::results::output::{self, Summary};
use crate::results::plot::{self, Curve, Panel};
use crate::scenario::PortKind;

/// Most tracked flows drawn in `timeseries.svg`.
pub const MAX_PLOTTED_FLOWS: usize = 8;

/// Writes data files and plots into `dir`; returns the summary.
pub fn write_all(dir: &Path, r: &RunResult, headline: serde_json::Value) -> io::Result<Summary> {
    let sum = output::write_run(dir, r, headline)?;
    let title = if r.scenario.variant.is_empty() {
        r.scenario.name.clone()
    } else {
        format!("{} — {}", r.scenario.name, r.scenario.variant)
    };
    plot::write_svg(&dir.join("timeseries.svg"), &title, &timeseries_panels(r))?;
    let fct = fct_panel(r);
    if fct.curves.iter().any(|c| !c.points.is_empty()) {
        plot::write_svg(&dir.join("fct.svg"), &title, &[fct])?;
    }
    Ok(sum)
}

/// Grey intervals: bins where the first KA hop's port ended in TCP mode.
pub fn tcp_mode_shading(r: &RunResult) -> Vec<(f64, f64)> {
    r.hops
        .iter()
        .find(|h| h.port == PortKind::Ka)
        .map(|h| plot::zero_intervals(&r.series, Metric::KaMode, &format!("port:{}", h.name)))
        .unwrap_or_default()
}

/// Throughput of tracked flows (Mbit/s) over time.
pub fn flow_curves(r: &RunResult, max: usize) -> Vec<Curve> {
    r.series
        .entities
        .iter()
        .filter(|e| e.starts_with("flow:"))
        .take(max)
        .map(|e| {
            let id: usize = e[5..].parse().unwrap_or(usize::MAX);
            let label = match r.flows.get(id) {
                Some(f) => format!("{} ({})", e, f.kind.label()),
                None => e.clone(),
            };
            Curve {
                label,
                points: r
                    .series
                    .points(Metric::ThroughputBps, e)
                    .into_iter()
                    .map(|(t, v)| (t, v / 1e6))
                    .collect(),
            }
        })
        .collect()
}

fn hop_curves(r: &RunResult, metric: Metric, prefix: &str) -> Vec<Curve> {
    r.hops
        .iter()
        .map(|h| Curve {
            label: h.name.clone(),
            points: r.series.points(metric, &format!("{prefix}:{}", h.name)),
        })
        .collect()
}

/// The three panels of `timeseries.svg`.
pub fn timeseries_panels(r: &RunResult) -> Vec<Panel> {
    let shade = tcp_mode_shading(r);
    vec![
        Panel {
            title: "(a) Throughput of tracked flows".into(),
            x_label: "time (s)".into(),
            y_label: "Mbit/s".into(),
            curves: flow_curves(r, MAX_PLOTTED_FLOWS),
            shade: shade.clone(),
            ..Panel::default()
        },
        Panel {
            title: "(b) Link utilization".into(),
            x_label: "time (s)".into(),
            y_label: "utilization".into(),
            curves: hop_curves(r, Metric::Utilization, "link"),
            shade: shade.clone(),
            y_range: Some((0.0, 1.1)),
            ..Panel::default()
        },
        Panel {
            title: "(c) Queue".into(),
            x_label: "time (s)".into(),
            y_label: "packets".into(),
            curves: hop_curves(r, Metric::QueuePkts, "port"),
            shade,
            ..Panel::default()
        },
    ]
}

/// Mean FCT against size for every group.
pub fn fct_panel(r: &RunResult) -> Panel {
    let curves = r
        .scenario
        .groups
        .iter()
        .enumerate()
        .map(|(gi, g)| Curve {
            label: format!("{} ({})", g.name, g.kind.label()),
            points: plot::fct_by_size(r.flows.iter().filter(|f| f.group == gi)),
        })
        .collect();
    fct_size_panel(curves)
}

/// The "Mean flow completion time" panel (log-log, mean FCT against flow
/// size) over `curves`.
pub fn fct_size_panel(curves: Vec<Curve>) -> Panel {
    Panel {
        title: "Mean flow completion time".into(),
        x_label: "flow size (packets)".into(),
        y_label: "mean FCT (s)".into(),
        curves,
        log_x: true,
        log_y: true,
        markers: true,
        ..Panel::default()
    }
}

/// A one-line description of a finished run.
pub fn one_line(s: &Summary) -> String {
    let label = if s.variant.is_empty() {
        s.scenario.clone()
    } else {
        format!("{}/{}", s.scenario, s.variant)
    };
    format!(
        "{label}: {:.0} s simulated in {:.1} s ({:.0}x), {} events, {} flows ({} completed)",
        s.simulated_seconds, s.wall_seconds, s.speedup, s.events, s.flows, s.flows_completed
    )
}

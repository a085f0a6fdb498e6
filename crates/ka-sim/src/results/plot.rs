//! SVG plots (plotters, SVG backend only; text is left to the viewer's
//! fonts, so nothing needs system fonts at build or run time).
//!
//! A figure is a column of [`Panel`]s, like the paper's sub-figures (a),
//! (b), (c). Log axes are drawn by plotting `log10` of the data on a linear
//! axis with powers-of-ten labels, so one code path serves both.

use std::io;
use std::path::Path;

use plotters::prelude::*;

use crate::engine::to_secs;
use crate::model::world::FlowRecord;
use crate::results::metrics::{Metric, Series};

/// One line of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Legend label.
    pub label: String,
    /// Points (x, y); a non-finite y breaks the line (e.g. between two
    /// flows drawn as one curve).
    pub points: Vec<(f64, f64)>,
}

/// One sub-figure.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Panel {
    /// Caption, e.g. "(a) Throughput of a single flow".
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Lines.
    pub curves: Vec<Curve>,
    /// Shaded x intervals (e.g. router in TCP mode).
    pub shade: Vec<(f64, f64)>,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// Draw point markers as well as lines.
    pub markers: bool,
    /// Fixed y range (linear units); default: 0 … max·1.1.
    pub y_range: Option<(f64, f64)>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn perr<E: std::fmt::Debug>(e: E) -> io::Error {
    io::Error::other(format!("plot: {e:?}"))
}

fn tr(v: f64, log: bool) -> Option<f64> {
    if log {
        (v > 0.0).then(|| v.log10())
    } else {
        v.is_finite().then_some(v)
    }
}

fn axis_label(v: f64, log: bool) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-2..1e4).contains(&a) {
        format!("{x:.0e}")
    } else if a >= 100.0 || (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// Writes a figure with `panels` stacked vertically.
pub fn write_svg(path: &Path, title: &str, panels: &[Panel]) -> io::Result<()> {
    let height = 60 + 300 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(perr)?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (area, p) in areas.iter().zip(panels) {
        draw_panel(area, p)?;
    }
    root.present().map_err(perr)?;
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &Panel,
) -> io::Result<()>
where
    DB::ErrorType: 'static,
{
    // Each curve as runs of drawable points, split at non-finite y.
    let runs: Vec<Vec<Vec<(f64, f64)>>> = p
        .curves
        .iter()
        .map(|c| {
            let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for &(x, y) in &c.points {
                if !y.is_finite() {
                    if out.last().is_some_and(|r| !r.is_empty()) {
                        out.push(Vec::new());
                    }
                    continue;
                }
                if let (Some(x), Some(y)) = (tr(x, p.log_x), tr(y, p.log_y))
                    && let Some(r) = out.last_mut()
                {
                    r.push((x, y));
                }
            }
            out
        })
        .collect();
    let all = runs.iter().flatten().flatten();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    for &(a, b) in &p.shade {
        if let (Some(a), Some(b)) = (tr(a, p.log_x), tr(b, p.log_x)) {
            x0 = x0.min(a);
            x1 = x1.max(b);
        }
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if y0 > y1 {
        (y0, y1) = (0.0, 1.0);
    }
    if !p.log_y {
        y0 = y0.min(0.0);
        y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    } else {
        y0 = y0.floor();
        y1 = y1.ceil().max(y0 + 1.0);
    }
    if let Some((a, b)) = p.y_range
        && let (Some(a), Some(b)) = (tr(a, p.log_y), tr(b, p.log_y))
    {
        (y0, y1) = (a, b);
    }
    if p.log_x {
        x0 = x0.floor();
        x1 = x1.ceil().max(x0 + 1.0);
    } else if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let labels = |log: bool, a: f64, b: f64| {
        if log {
            ((b - a).round() as usize + 1).clamp(2, 12)
        } else {
            10
        }
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(perr)?;
    let (lx, ly) = (p.log_x, p.log_y);
    let fx = move |v: &f64| axis_label(*v, lx);
    let fy = move |v: &f64| axis_label(*v, ly);
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .x_labels(labels(p.log_x, x0, x1))
        .y_labels(labels(p.log_y, y0, y1))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(perr)?;
    let shade: Vec<(f64, f64)> = p
        .shade
        .iter()
        .filter_map(|&(a, b)| Some((tr(a, lx)?, tr(b, lx)?)))
        .collect();
    chart
        .draw_series(shade.iter().map(|&(a, b)| {
            Rectangle::new(
                [(a, y0), (b, y1)],
                RGBColor(215, 215, 215).mix(0.6).filled(),
            )
        }))
        .map_err(perr)?;
    for (i, (c, runs)) in p.curves.iter().zip(runs).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let style = ShapeStyle::from(&color).stroke_width(2);
        for (k, pts) in runs.iter().enumerate() {
            let series = chart
                .draw_series(LineSeries::new(pts.clone(), style))
                .map_err(perr)?;
            if k == 0 {
                series
                    .label(c.label.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
            if p.markers {
                chart
                    .draw_series(pts.iter().map(|&pt| Circle::new(pt, 3, color.filled())))
                    .map_err(perr)?;
            }
        }
    }
    if p.curves.iter().any(|c| !c.label.is_empty()) {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(perr)?;
    }
    Ok(())
}

/// Intervals (in seconds) where a 1/0 series is 0, one bin per point.
pub fn zero_intervals(series: &Series, metric: Metric, entity: &str) -> Vec<(f64, f64)> {
    let bin = to_secs(series.bin);
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (t, v) in series.points(metric, entity) {
        if v < 0.5 {
            let start = (t - bin).max(0.0);
            match out.last_mut() {
                Some(last) if (last.1 - start).abs() < bin * 0.01 => last.1 = t,
                _ => out.push((start, t)),
            }
        }
    }
    out
}

/// Mean FCT (s) against flow size (packets), with sizes grouped into
/// log-spaced buckets (4 per factor of ten); x is the mean size in a bucket.
pub fn fct_by_size<'a>(flows: impl Iterator<Item = &'a FlowRecord>) -> Vec<(f64, f64)> {
    let mut buckets: Vec<(f64, f64, u64)> = Vec::new(); // (sum size, sum fct, n)
    for f in flows {
        let (Some(size), Some(fct)) = (f.size_pkts, f.fct()) else {
            continue;
        };
        let b = ((size.max(1) as f64).log10() * 4.0).floor() as usize;
        if buckets.len() <= b {
            buckets.resize(b + 1, (0.0, 0.0, 0));
        }
        let e = &mut buckets[b];
        e.0 += size as f64;
        e.1 += to_secs(fct);
        e.2 += 1;
    }
    buckets
        .into_iter()
        .filter(|b| b.2 > 0)
        .map(|(s, f, n)| (s / n as f64, f / n as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_intervals_merge_adjacent_bins() {
        let mut s = Series::new(100_000_000);
        let e = s.entity("port:x");
        for (i, v) in [1.0, 0.0, 0.0, 1.0, 0.0].iter().enumerate() {
            s.push((i as u64 + 1) * 100_000_000, Metric::KaMode, e, *v);
        }
        let z = zero_intervals(&s, Metric::KaMode, "port:x");
        assert_eq!(z.len(), 2);
        assert!((z[0].0 - 0.1).abs() < 1e-9 && (z[0].1 - 0.3).abs() < 1e-9);
        assert!((z[1].0 - 0.4).abs() < 1e-9 && (z[1].1 - 0.5).abs() < 1e-9);
    }

    #[test]
    fn writes_an_svg() {
        let dir = std::env::temp_dir().join(format!("ka-sim-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.svg");
        let panel = Panel {
            title: "(a) test".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            curves: vec![Curve {
                label: "line".into(),
                points: vec![(1.0, 1.0), (10.0, 5.0), (100.0, 2.0)],
            }],
            shade: vec![(2.0, 3.0)],
            log_x: true,
            markers: true,
            ..Panel::default()
        };
        write_svg(&path, "Figure", &[panel.clone(), Panel::default()]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("(a) test") && svg.contains("line"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

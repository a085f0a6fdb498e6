//! One SVG timeline per flow (plotters, SVG backend, the style of
//! ka-sim's figures): rates in Mbit/s over time — the sender's IP rate on
//! the wire, the rate leading fragments signalled (lowest per bin, dots),
//! the rate the receiver echoed — with the bins where the sender was
//! inferred to be in KA mode shaded; a second panel has the RTT
//! indicators' values.

use std::io;
use std::path::Path;

use plotters::prelude::*;

use super::flows::Flow;
use super::output::flow_rows;

fn perr<E: std::error::Error + Send + Sync + 'static>(e: E) -> io::Error {
    io::Error::other(e.to_string())
}

/// Writes `flow`'s timeline to `path`.
pub fn write_flow_svg(path: &Path, f: &Flow, bin_s: f64) -> io::Result<()> {
    let rows = flow_rows(f, bin_s);
    let pick = |m: usize, scale: f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.1 == m)
            .map(|&(k, _, v)| ((k as f64 + 1.0) * bin_s, v * scale))
            .collect()
    };
    let wire = pick(0, 1e-6);
    let signal = pick(2, 1e-6);
    let echo = pick(4, 1e-6);
    let mode = pick(3, 1.0);
    let rtt = pick(6, 1.0);
    let x1 = rows
        .iter()
        .map(|r| (r.0 as f64 + 1.0) * bin_s)
        .fold(0.0f64, f64::max)
        .max(bin_s);
    let x0 = rows
        .iter()
        .map(|r| r.0 as f64 * bin_s)
        .fold(f64::MAX, f64::min)
        .min(x1 - bin_s);
    let y1 = wire
        .iter()
        .chain(&signal)
        .chain(&echo)
        .map(|p| p.1)
        .fold(0.0f64, f64::max)
        * 1.1;
    let y1 = if y1 > 0.0 { y1 } else { 1.0 };

    let (src, dst) = f.ends();
    let title = format!(
        "flow {}: {}:{} → {}:{} ({})",
        f.id,
        src.0,
        src.1,
        dst.0,
        dst.1,
        f.kind()
    );
    let root = SVGBackend::new(path, (900, 660)).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    let root = root.titled(&title, ("sans-serif", 20)).map_err(perr)?;
    let (top, bottom) = root.split_vertically(430);

    let mut chart = ChartBuilder::on(&top)
        .caption(
            "rates (shaded: sender inferred in KA mode)",
            ("sans-serif", 15),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("Mbit/s")
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(perr)?;
    let shade = RGBColor(200, 235, 200).mix(0.6);
    chart
        .draw_series(
            mode.iter()
                .filter(|p| p.1 > 0.5)
                .map(|&(x, _)| Rectangle::new([(x - bin_s, 0.0), (x, y1)], shade.filled())),
        )
        .map_err(perr)?;
    let blue = RGBColor(31, 119, 180);
    let orange = RGBColor(255, 127, 14);
    let red = RGBColor(214, 39, 40);
    chart
        .draw_series(LineSeries::new(wire.iter().copied(), blue.stroke_width(2)))
        .map_err(perr)?
        .label("sender IP rate on the wire")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue));
    chart
        .draw_series(LineSeries::new(
            echo.iter().copied(),
            orange.stroke_width(2),
        ))
        .map_err(perr)?
        .label("KA-Rate echoed by the receiver")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], orange));
    chart
        .draw_series(signal.iter().map(|&p| Circle::new(p, 2, red.filled())))
        .map_err(perr)?
        .label("rate signalled (leading fragments, lowest per bin)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 3, red.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(perr)?;

    let r1 = rtt.iter().map(|p| p.1).fold(0.0f64, f64::max) * 1.2;
    let r1 = if r1 > 0.0 { r1 } else { 1.0 };
    let mut chart = ChartBuilder::on(&bottom)
        .caption(
            "RTT indicators (ms, the value a router takes)",
            ("sans-serif", 15),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, 0.0..r1)
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("ms")
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(perr)?;
    chart
        .draw_series(rtt.iter().map(|&p| Cross::new(p, 3, BLACK.stroke_width(1))))
        .map_err(perr)?;
    root.present().map_err(perr)?;
    Ok(())
}

//! The OpenMetrics families the metrics endpoint writes: one gauge or
//! counter family with a row per label set (shared by `metrics` and
//! `rwm_metrics`).

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// One row of a family: its label and its value.
pub(super) type Row = ([(&'static str, &'static str); 1], f64);

pub(super) fn gauge(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: &[Row],
) -> std::fmt::Result {
    let g = ConstGauge::new(0.0f64);
    let mut m = enc.encode_descriptor(name, help, None, g.metric_type())?;
    for (labels, v) in rows {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

pub(super) fn counter(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: &[([(&'static str, &'static str); 1], u64)],
) -> std::fmt::Result {
    let c = ConstCounter::new(0u64);
    let mut m = enc.encode_descriptor(name, help, None, c.metric_type())?;
    for (labels, v) in rows {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

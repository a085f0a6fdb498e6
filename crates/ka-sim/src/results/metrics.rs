//! Time-binned series, flow statistics and `FCT_PS`.

use std::collections::HashMap;

use crate::engine::{SimTime, to_secs};
use crate::model::world::FlowRecord;
use ka_codec::units;

/// A `series.csv` metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Goodput read by a tracked flow's receiver in the bin, bit/s
    /// (entity `flow:<id>`).
    ThroughputBps,
    /// Bytes a forward hop port sent in the bin / (C · bin), 0…1
    /// (entity `link:<name>`). Bytes count when they leave the port, i.e.
    /// after the hop's propagation delay; fragment headers count.
    Utilization,
    /// Largest queue seen at the port during the bin, packets (entity
    /// `port:<name>`).
    QueuePkts,
    /// 1 in KA mode, 0 in TCP mode, at the end of the bin: router ports with
    /// KA signalling (`port:<name>`) and KA endpoints (`flow:<id>`).
    KaMode,
    /// The rate R a signalling port advertises at the end of the bin, bit/s
    /// (`port:<name>`).
    RateBps,
    /// IP bytes of a tracked flow arriving at its receiver host in the bin,
    /// bit/s (`flow:<id>`): the flow's share of the path's bottleneck,
    /// headers, fragment headers and retransmissions included. Attributed
    /// per receiving host to the flow it last delivered data of, so exact
    /// when a receiver serves one flow at a time (the long-lived scenarios).
    WireBps,
    /// Mean queueing delay (sojourn: enqueue to start of transmission) of
    /// the packets a forward hop port dequeued in the bin, ms (`port:<name>`;
    /// no row for a bin in which nothing was dequeued). Whatever the queue
    /// discipline.
    SojournMs,
    /// Packets a forward hop port's queue discipline marked CE in the bin
    /// (`port:<name>`).
    Marks,
    /// The capacity C of a port whose capacity moves (a DCC middlebox's
    /// aggregate port, [`crate::scenario::dcc`]) at the end of the bin, bit/s
    /// (`port:<name>`; forward hop ports only).
    CapacityBps,
}

impl Metric {
    /// The name written to `series.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::ThroughputBps => "throughput_bps",
            Metric::Utilization => "utilization",
            Metric::QueuePkts => "queue_pkts",
            Metric::KaMode => "ka_mode",
            Metric::RateBps => "rate_bps",
            Metric::WireBps => "wire_bps",
            Metric::SojournMs => "sojourn_ms",
            Metric::Marks => "marks",
            Metric::CapacityBps => "capacity_bps",
        }
    }
}

/// One `series.csv` row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// End of the bin.
    pub t: SimTime,
    /// Metric.
    pub metric: Metric,
    /// Index into [`Series::entities`].
    pub entity: u32,
    /// Value.
    pub value: f64,
}

/// All series rows of a run, in the order they were sampled.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Bin width.
    pub bin: SimTime,
    /// Entity names (`flow:3`, `port:bottleneck`, …).
    pub entities: Vec<String>,
    index: HashMap<String, u32>,
    /// Rows.
    pub rows: Vec<Row>,
}

impl Series {
    /// An empty series with bins of `bin`.
    pub fn new(bin: SimTime) -> Self {
        Self {
            bin,
            ..Self::default()
        }
    }

    /// The index of an entity name (interned).
    pub fn entity(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.entities.len() as u32;
        self.entities.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    /// Appends a row.
    pub fn push(&mut self, t: SimTime, metric: Metric, entity: u32, value: f64) {
        self.rows.push(Row {
            t,
            metric,
            entity,
            value,
        });
    }

    /// `(time_s, value)` points of one metric and entity.
    pub fn points(&self, metric: Metric, entity: &str) -> Vec<(f64, f64)> {
        let Some(&e) = self.index.get(entity) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter(|r| r.metric == metric && r.entity == e)
            .map(|r| (to_secs(r.t), r.value))
            .collect()
    }

    /// Mean of a metric/entity over bins ending in `(from, to]` seconds.
    pub fn mean_between(&self, metric: Metric, entity: &str, from: f64, to: f64) -> Option<f64> {
        let pts: Vec<f64> = self
            .points(metric, entity)
            .into_iter()
            .filter(|&(t, _)| t > from + 1e-12 && t <= to + 1e-12)
            .map(|(_, v)| v)
            .collect();
        (!pts.is_empty()).then(|| pts.iter().sum::<f64>() / pts.len() as f64)
    }
}

/// Processor-sharing flow completion time (DESIGN §9):
/// `FCT_PS(L) = 1.5·RTT + L / (C·(1−ρ))`, with L in bytes and C in bit/s.
pub fn fct_ps(rtt: SimTime, len_bytes: u64, capacity_bps: u64, rho: f64) -> f64 {
    let rho = rho.clamp(0.0, 0.99);
    let c = capacity_bps.max(1) as f64 / 8.0;
    1.5 * to_secs(rtt) + len_bytes as f64 / (c * (1.0 - rho))
}

/// FCT / FCT_PS of a completed sized flow. `packet_bytes` converts its size
/// in packets to the bytes it occupies on the wire.
pub fn slowdown(f: &FlowRecord, packet_bytes: usize, rho: f64) -> Option<f64> {
    let fct = f.fct()?;
    let pkts = f.size_pkts?;
    let ideal = fct_ps(
        f.path.base_rtt,
        pkts * packet_bytes as u64,
        f.path.bottleneck_bps,
        rho,
    );
    Some(to_secs(fct) / ideal)
}

/// Fraction of a flow's lifetime spent in KA mode.
pub fn ka_time_frac(f: &FlowRecord, run_end: SimTime) -> f64 {
    let end = f.end.or(f.stop).unwrap_or(run_end).min(run_end);
    let life = end.saturating_sub(f.start);
    if life == 0 {
        0.0
    } else {
        (f.ka_time as f64 / life as f64).clamp(0.0, 1.0)
    }
}

/// Of the time KA flows spent after first entering KA mode (until their
/// sender stopped, or `run_end`), the share spent in KA mode: 1 when no
/// flow ever fell back to TCP mode (loss or silence). `None` if no flow
/// entered KA mode.
pub fn ka_kept_frac<'a>(
    flows: impl IntoIterator<Item = &'a FlowRecord>,
    run_end: SimTime,
) -> Option<f64> {
    let (mut ka, mut span) = (0u64, 0u64);
    for f in flows {
        let Some(first) = f.ka_first else {
            continue;
        };
        let stop = f.stop.unwrap_or(run_end).min(run_end);
        span += stop.saturating_sub(first);
        ka += f.ka_time;
    }
    (span > 0).then(|| (ka as f64 / span as f64).min(1.0))
}

/// Formats nanoseconds as seconds, exactly, without trailing zeros
/// (`1500000000` → `1.5`, `0` → `0`); see [`units::Seconds`].
pub fn fmt_secs(t: SimTime) -> String {
    units::Seconds(t).to_string()
}

/// Formats a value: integers without a fraction, others with 6 decimals
/// and no trailing zeros. Deterministic; non-finite values are empty (see
/// [`units::Trimmed`]).
pub fn fmt_val(v: f64) -> String {
    units::Trimmed(v).to_string()
}

/// Mean of a slice (None if empty).
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Median of a slice (None if empty).
pub fn median(v: &[f64]) -> Option<f64> {
    percentile(v, 0.5)
}

/// The `p`-quantile (nearest rank) of a slice (None if empty).
pub fn percentile(v: &[f64], p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p.clamp(0.0, 1.0) * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s.get(rank - 1).copied()
}

/// Jain's fairness index of positive rates (1 = perfectly fair).
pub fn jain(x: &[f64]) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    (s2 > 0.0).then(|| s * s / (x.len() as f64 * s2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NodeId;
    use crate::model::world::PathInfo;
    use crate::scenario::FlowKind;

    #[test]
    fn fct_ps_formula() {
        // 100 packets of 1500 B on 150 Mbit/s, RTT 100 ms, ρ = 0.4:
        // 0.15 s + 150000 B / (18.75 MB/s · 0.6) = 0.15 + 0.013333… s.
        let v = fct_ps(100_000_000, 150_000, 150_000_000, 0.4);
        assert!((v - (0.15 + 150_000.0 / (18_750_000.0 * 0.6))).abs() < 1e-12);
        // ρ = 0: just the transmission time.
        assert!((fct_ps(0, 18_750_000, 150_000_000, 0.0) - 1.0).abs() < 1e-12);
        // ρ ≥ 1 is clamped, never infinite.
        assert!(fct_ps(0, 1, 8, 1.0).is_finite());
    }

    #[test]
    fn slowdown_of_a_flow() {
        let f = FlowRecord {
            id: 0,
            kind: FlowKind::Ka,
            group: 0,
            sender: NodeId(0),
            tracked: false,
            size_pkts: Some(10),
            size_bytes: Some(14_480),
            start: 1_000_000_000,
            end: Some(1_300_000_000),
            stop: None,
            received: 14_480,
            bin_bytes: 0,
            bin_wire_bytes: 0,
            ka_mode: false,
            ka_time: 150_000_000,
            ka_first: Some(1_100_000_000),
            rtos: 0,
            path: PathInfo {
                base_rtt: 100_000_000,
                bottleneck_bps: 150_000_000,
                first_hop: 0,
            },
        };
        let ideal = 0.15 + 15_000.0 / 18_750_000.0;
        assert!((slowdown(&f, 1500, 0.0).unwrap() - 0.3 / ideal).abs() < 1e-12);
        assert!((ka_time_frac(&f, 5_000_000_000) - 0.5).abs() < 1e-12);
        let unfinished = FlowRecord { end: None, ..f };
        assert_eq!(slowdown(&unfinished, 1500, 0.0), None);
        assert!((ka_time_frac(&unfinished, 2_000_000_000) - 0.15).abs() < 1e-12);
        // KA from 1.1 s, sender stopped at 1.3 s, 0.15 s of it in KA mode.
        let stopped = FlowRecord {
            stop: Some(1_300_000_000),
            ..f.clone()
        };
        let never = FlowRecord {
            ka_first: None,
            ..f.clone()
        };
        let kept = ka_kept_frac([&stopped, &never], 5_000_000_000).unwrap();
        assert!((kept - 0.75).abs() < 1e-12, "{kept}");
        assert_eq!(ka_kept_frac([&never], 5_000_000_000), None);
    }

    #[test]
    fn formatting_is_exact() {
        assert_eq!(fmt_secs(0), "0");
        assert_eq!(fmt_secs(1_500_000_000), "1.5");
        assert_eq!(fmt_secs(300_000_000), "0.3");
        assert_eq!(fmt_secs(12_000_000_001), "12.000000001");
        assert_eq!(fmt_val(150_000_000.0), "150000000");
        assert_eq!(fmt_val(0.25), "0.25");
        assert_eq!(fmt_val(1.0 / 3.0), "0.333333");
        assert_eq!(fmt_val(-0.0000001), "0");
        assert_eq!(fmt_val(f64::NAN), "");
    }

    #[test]
    fn stats_helpers() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.99), Some(4.0));
        assert_eq!(mean(&[]), None);
        assert!((jain(&[1.0, 1.0, 1.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        let mut s = Series::new(100);
        let e = s.entity("flow:1");
        assert_eq!(s.entity("flow:1"), e);
        s.push(100, Metric::ThroughputBps, e, 2.0);
        s.push(200, Metric::ThroughputBps, e, 4.0);
        assert_eq!(s.points(Metric::ThroughputBps, "flow:1").len(), 2);
        assert_eq!(
            s.mean_between(Metric::ThroughputBps, "flow:1", 0.0, 1.0),
            Some(3.0)
        );
    }
}

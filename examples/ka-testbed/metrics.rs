//! The router's sampled state: `ka-router --metrics` polled every
//! [`POLL`], turned into the simulator's per-bin series.
//!
//! The router refreshes its core state (queue, rate, mode, marks, the
//! sojourn histogram) every 100 ms and says when in
//! `ka_router_core_published_seconds`. Each new publication closes one
//! bin, timed by the router's clock: the bin's queueing delay is the mean
//! sojourn of the packets dequeued since the previous publication (the
//! histogram's sum and count differences) — exactly what the simulator
//! writes as `sojourn_ms` — and nothing dequeued means no row (an idle
//! bin, which the delay CDFs count as 0, like the simulator's). The
//! utilisation comes from the live byte counter (`ka_router_bytes_out`)
//! between the polls that saw two publications; the queue is the one at
//! the publication (the simulator's is the bin's maximum).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::Context as _;
use ka_router::Counters;
use ka_router::stats::{SOJOURN_BOUNDS_S, SojournHistogram};
use ka_sim::results::metrics::{Metric, Series};
use ka_sim::scenario::PortKind;

use crate::wire::now_ns;

/// How often the runner polls the metrics (well below the router's 100 ms,
/// so every publication is seen).
pub const POLL: Duration = Duration::from_millis(20);

/// The Prometheus text `ka-router --metrics ADDR` serves now.
pub fn scrape(addr: &str) -> anyhow::Result<String> {
    let mut c = TcpStream::connect(addr).with_context(|| format!("metrics at {addr}"))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: ka\r\n\r\n")?;
    let mut s = String::new();
    c.read_to_string(&mut s)?;
    Ok(s)
}

/// The value of `series` (name with labels, as exposed) in a metrics text.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)
            .filter(|rest| rest.starts_with(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// A forward-direction series' value (0 if absent).
fn fwd(text: &str, name: &str) -> f64 {
    value(text, &format!("{name}{{direction=\"forward\"}}")).unwrap_or(0.0)
}

/// One poll that saw a new publication.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When the router published, ns since the epoch.
    pub published_ns: u64,
    /// When we read it.
    pub scraped_ns: u64,
    /// Forward sojourn histogram sum (s) and count.
    pub sojourn_sum_s: f64,
    /// Packets dequeued so far.
    pub sojourn_count: f64,
    /// Queue at the publication, packets.
    pub queue_pkts: f64,
    /// 1 in KA mode.
    pub mode: f64,
    /// Advertised rate, bit/s.
    pub rate_bps: f64,
    /// CE marks so far.
    pub marks: f64,
    /// Bytes sent so far (live counter).
    pub bytes_out: f64,
}

/// Polls a router's metrics and keeps one [`Sample`] per publication.
#[derive(Debug)]
pub struct Poller {
    addr: String,
    /// The samples, in order.
    pub samples: Vec<Sample>,
    /// The latest text.
    pub last: String,
    failures: u32,
}

impl Poller {
    /// A poller of `addr` (`127.0.0.1:PORT`).
    pub fn new(addr: &str) -> Self {
        Poller {
            addr: addr.to_owned(),
            samples: Vec::new(),
            last: String::new(),
            failures: 0,
        }
    }

    /// One poll; an error only after 50 failures in a row (the router is
    /// gone), single failures are skipped.
    pub fn poll(&mut self) -> anyhow::Result<()> {
        let text = match scrape(&self.addr) {
            Ok(t) => t,
            Err(e) => {
                self.failures += 1;
                if self.failures >= 50 {
                    return Err(e.context("the router's metrics stopped answering"));
                }
                return Ok(());
            }
        };
        self.failures = 0;
        let scraped_ns = now_ns();
        let published = value(&text, "ka_router_core_published_seconds").unwrap_or(0.0);
        let published_ns = (published * 1e9) as u64;
        if published_ns > 0
            && self
                .samples
                .last()
                .is_none_or(|s| s.published_ns != published_ns)
        {
            self.samples.push(Sample {
                published_ns,
                scraped_ns,
                sojourn_sum_s: fwd(&text, "ka_router_sojourn_seconds_sum"),
                sojourn_count: fwd(&text, "ka_router_sojourn_seconds_count"),
                queue_pkts: fwd(&text, "ka_router_queue_packets"),
                mode: fwd(&text, "ka_router_mode"),
                rate_bps: 8.0 * fwd(&text, "ka_router_rate_bytes_per_second"),
                marks: fwd(&text, "ka_router_ecn_marks_total"),
                bytes_out: fwd(&text, "ka_router_bytes_out_total"),
            });
        }
        self.last = text;
        Ok(())
    }
}

/// Per-bin rows for the hop `bottleneck` (entities `link:bottleneck`,
/// `port:bottleneck`), bins ending in `(t0, t0 + duration]`; returns the
/// fraction of those bins that ended in KA mode.
pub fn push_rows(
    series: &mut Series,
    samples: &[Sample],
    t0_ns: u64,
    duration_ns: u64,
    capacity_bps: f64,
    port: PortKind,
) -> f64 {
    let link = series.entity("link:bottleneck");
    let port_e = series.entity("port:bottleneck");
    let (mut bins, mut ka) = (0u64, 0u64);
    for w in samples.windows(2) {
        let [a, b] = w else { continue };
        let Some(t) = b
            .published_ns
            .checked_sub(t0_ns)
            .filter(|&t| t > 0 && t <= duration_ns)
        else {
            continue;
        };
        let dt = b.scraped_ns.saturating_sub(a.scraped_ns) as f64 / 1e9;
        let util = if dt > 0.0 {
            ((b.bytes_out - a.bytes_out) * 8.0 / (capacity_bps * dt)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        series.push(t, Metric::Utilization, link, util);
        series.push(t, Metric::QueuePkts, port_e, b.queue_pkts);
        bins += 1;
        if port == PortKind::Ka {
            ka += u64::from(b.mode > 0.5);
            series.push(t, Metric::KaMode, port_e, b.mode);
        }
        if port != PortKind::Droptail {
            series.push(t, Metric::RateBps, port_e, b.rate_bps);
        }
        let n = b.sojourn_count - a.sojourn_count;
        if n > 0.0 {
            let mean_ms = (b.sojourn_sum_s - a.sojourn_sum_s) / n * 1e3;
            series.push(t, Metric::SojournMs, port_e, mean_ms.max(0.0));
        }
        series.push(t, Metric::Marks, port_e, (b.marks - a.marks).max(0.0));
    }
    if bins == 0 {
        0.0
    } else {
        ka as f64 / bins as f64
    }
}

/// One direction's port counters from a metrics text (`direction` is
/// `forward` or `reverse`).
pub fn counters(text: &str, direction: &str) -> Counters {
    let v = |name: &str| -> u64 {
        value(text, &format!("{name}{{direction=\"{direction}\"}}")).unwrap_or(0.0) as u64
    };
    Counters {
        packets_in: v("ka_router_packets_in_total"),
        bytes_in: v("ka_router_bytes_in_total"),
        packets_out: v("ka_router_packets_out_total"),
        bytes_out: v("ka_router_bytes_out_total"),
        drops_queue: v("ka_router_drops_queue_total"),
        drops_aqm: v("ka_router_drops_aqm_total"),
        ecn_marks: v("ka_router_ecn_marks_total"),
        drops_ttl: v("ka_router_drops_ttl_total"),
        drops_malformed: v("ka_router_drops_malformed_total"),
        non_ip: v("ka_router_non_ip_total"),
        fragments_made: v("ka_router_fragments_total"),
        indicators_seen: v("ka_router_indicators_total"),
        mode_changes: v("ka_router_mode_changes_total"),
        rcp_options_lowered: v("ka_router_rcp_options_lowered_total"),
        unstampable: v("ka_router_unstampable_total"),
        ..Counters::default()
    }
}

/// The forward sojourn histogram from a metrics text (the exposition's
/// cumulative buckets turned back into per-bucket counts).
pub fn sojourn(text: &str) -> SojournHistogram {
    // (bound, cumulative count) of the forward buckets, whatever the
    // bounds' number formatting.
    let mut cum: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("ka_router_sojourn_seconds_bucket{le=\"")?;
            let (bound, rest) = rest.split_once('"')?;
            let v = rest.strip_prefix(",direction=\"forward\"} ")?;
            Some((bound.parse().ok()?, v.trim().parse::<f64>().ok()? as u64))
        })
        .collect();
    cum.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut h = SojournHistogram::default();
    let mut below = 0u64;
    for (bound, c) in cum {
        let i = SOJOURN_BOUNDS_S
            .iter()
            .position(|&b| b == bound)
            .unwrap_or(SOJOURN_BOUNDS_S.len());
        if let Some(slot) = h.counts.get_mut(i) {
            *slot += c.saturating_sub(below);
        }
        below = below.max(c);
    }
    h.count = fwd(text, "ka_router_sojourn_seconds_count") as u64;
    h.sum_ns = (fwd(text, "ka_router_sojourn_seconds_sum") * 1e9) as u64;
    h
}

/// The pacing lateness quantiles the router exposes, for the run's notes:
/// the share of releases at most 1 ms late.
pub fn lateness_within_1ms(text: &str) -> Option<f64> {
    let n = value(text, "ka_router_pacing_lateness_seconds_count")?;
    let ok = value(
        text,
        "ka_router_pacing_lateness_seconds_bucket{le=\"0.001\"}",
    )?;
    (n > 0.0).then(|| ok / n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ka_router_sojourn_seconds_sum{direction=\"forward\"} 0.0406\n\
        ka_router_sojourn_seconds_count{direction=\"forward\"} 3\n\
        ka_router_sojourn_seconds_bucket{le=\"0.0002\",direction=\"forward\"} 0\n\
        ka_router_sojourn_seconds_bucket{le=\"0.0005\",direction=\"forward\"} 2\n\
        ka_router_sojourn_seconds_bucket{le=\"0.05\",direction=\"forward\"} 3\n\
        ka_router_drops_queue_total{direction=\"forward\"} 7\n\
        ka_router_drops_queue_total{direction=\"reverse\"} 1\n";

    #[test]
    fn parses_values_counters_and_the_histogram() {
        assert_eq!(
            value(
                TEXT,
                "ka_router_sojourn_seconds_count{direction=\"forward\"}"
            ),
            Some(3.0)
        );
        assert_eq!(value(TEXT, "ka_router_missing"), None);
        assert_eq!(counters(TEXT, "forward").drops_queue, 7);
        assert_eq!(counters(TEXT, "reverse").drops_queue, 1);
        let h = sojourn(TEXT);
        assert_eq!(h.count, 3);
        assert_eq!(h.counts.iter().sum::<u64>(), 3);
        let i05 = SOJOURN_BOUNDS_S.iter().position(|&b| b == 0.0005).unwrap();
        assert_eq!(h.counts[i05], 2);
        assert_eq!(h.fraction_at_most(0.0005), Some(2.0 / 3.0));
        assert_eq!(h.sum_ns, 40_600_000);
    }

    fn sample(pub_ms: u64, count: f64, sum_s: f64, bytes: f64) -> Sample {
        Sample {
            published_ns: pub_ms * 1_000_000,
            scraped_ns: pub_ms * 1_000_000 + 5_000_000,
            sojourn_sum_s: sum_s,
            sojourn_count: count,
            queue_pkts: 4.0,
            mode: 1.0,
            rate_bps: 5e6,
            marks: 0.0,
            bytes_out: bytes,
        }
    }

    #[test]
    fn rows_per_publication_with_idle_bins_left_out() {
        let s = [
            sample(1000, 10.0, 0.010, 0.0),
            sample(1100, 20.0, 0.030, 125_000.0), // 10 packets of 2 ms: 2 ms
            sample(1200, 20.0, 0.030, 125_000.0), // idle
            sample(1300, 30.0, 0.040, 187_500.0),
        ];
        let mut series = Series::new(100_000_000);
        let frac = push_rows(
            &mut series,
            &s,
            1_000_000_000,
            10_000_000_000,
            10e6,
            PortKind::Ka,
        );
        assert_eq!(frac, 1.0);
        let soj = series.points(Metric::SojournMs, "port:bottleneck");
        assert_eq!(soj.len(), 2, "{soj:?}");
        assert!((soj[0].0 - 0.1).abs() < 1e-9 && (soj[0].1 - 2.0).abs() < 1e-9);
        let util = series.points(Metric::Utilization, "link:bottleneck");
        assert_eq!(util.len(), 3);
        assert!((util[0].1 - 1.0).abs() < 1e-9, "{util:?}");
        assert_eq!(util[1].1, 0.0);
        assert!((util[2].1 - 0.5).abs() < 1e-9);
    }
}

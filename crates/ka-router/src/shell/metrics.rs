//! Prometheus metrics: `GET /metrics` on a minimal HTTP/1.1 responder.
//!
//! The exposition is OpenMetrics text from `prometheus-client` (Prometheus
//! scrapes it natively). Every series carries `direction="forward"` (in → out,
//! `--rate`) or `direction="reverse"` (out → in, `--reverse-rate`). Values are
//! read on each scrape from [`SharedStats`]: the shell counters are live, the
//! core state is at most ~100 ms old.
//!
//! The responder reads at most [`MAX_REQUEST`] bytes of request head, answers
//! one request per connection, and gives a client [`CLIENT_TIMEOUT`] to send
//! it, so a stranger cannot make it allocate or wait without bound.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::exposition::{Row, counter, gauge};
use super::stats::{CoreStats, Direction, IoStats, LATENESS_BOUNDS_US, SharedStats};

/// Largest request head the responder reads.
pub const MAX_REQUEST: usize = 8 * 1024;
/// Time a client has to send its request and receive the answer.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug)]
struct RouterCollector(Arc<SharedStats>);

impl Collector for RouterCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let (core, published) = self.0.core_at();
        let dirs: Vec<(Direction, &CoreStats, IoStats)> = Direction::ALL
            .iter()
            .zip(core.iter())
            .map(|(d, c)| (*d, c, self.0.io(*d).load()))
            .collect();
        let g = |f: &dyn Fn(&CoreStats, &IoStats) -> f64| -> Vec<Row> {
            dirs.iter()
                .map(|(d, c, io)| ([("direction", d.label())], f(c, io)))
                .collect()
        };
        let c = |f: &dyn Fn(&CoreStats, &IoStats) -> u64| -> Vec<([(&'static str, &'static str); 1], u64)> {
            dirs.iter()
                .map(|(d, c, io)| ([("direction", d.label())], f(c, io)))
                .collect()
        };
        gauge(
            &mut enc,
            "ka_router_rate_bytes_per_second",
            "Rate R the port advertises (RCP fair share), bytes/s",
            &g(&|c, _| c.rate_bps / 8.0),
        )?;
        gauge(
            &mut enc,
            "ka_router_capacity_bytes_per_second",
            "Link capacity C the port shapes to, bytes/s",
            &g(&|c, _| c.capacity_bps / 8.0),
        )?;
        gauge(
            &mut enc,
            "ka_router_mode",
            "Port mode: 1 = KA (stamping rates), 0 = TCP (queue over threshold, not stamping)",
            &g(&|c, _| if c.ka_mode { 1.0 } else { 0.0 }),
        )?;
        gauge(
            &mut enc,
            "ka_router_queue_packets",
            "Packets in the drop-tail queue",
            &g(&|c, _| c.queue_packets as f64),
        )?;
        gauge(
            &mut enc,
            "ka_router_queue_bytes",
            "Bytes in the drop-tail queue",
            &g(&|c, _| c.queue_bytes as f64),
        )?;
        gauge(
            &mut enc,
            "ka_router_rtt_seconds",
            "Average path RTT d used by the controller (from RTT indicators, else --rtt)",
            &g(&|c, _| c.rtt.as_secs_f64()),
        )?;
        gauge(
            &mut enc,
            "ka_router_signal_length_bytes",
            "Leading-fragment payload length L stamped now (encodes R); 0 = not signalling",
            &g(&|c, _| c.signal_len as f64),
        )?;
        counter(
            &mut enc,
            "ka_router_leading_fragments_out",
            "KA leading fragments written (offset 0, more fragments), stamped here or upstream",
            &c(&|_, io| io.leading_out),
        )?;
        counter(
            &mut enc,
            "ka_router_link_frames_passed",
            "Bridge mode: non-IP frames (ARP, LLDP, ...) passed untouched and unshaped",
            &c(&|_, io| io.link_passed),
        )?;
        counter(
            &mut enc,
            "ka_router_packets_in",
            "Packets read from the input device",
            &c(&|_, io| io.packets_in),
        )?;
        counter(
            &mut enc,
            "ka_router_bytes_in",
            "Bytes read from the input device",
            &c(&|_, io| io.bytes_in),
        )?;
        counter(
            &mut enc,
            "ka_router_packets_out",
            "Packets written to the output device (each fragment counts)",
            &c(&|_, io| io.packets_out),
        )?;
        counter(
            &mut enc,
            "ka_router_bytes_out",
            "Bytes written to the output device",
            &c(&|_, io| io.bytes_out),
        )?;
        counter(
            &mut enc,
            "ka_router_fragments",
            "Packets split into a rate-carrying leading fragment and the rest",
            &c(&|c, _| c.fragments),
        )?;
        counter(
            &mut enc,
            "ka_router_drops",
            "Packets dropped by the core (queue full, AQM, TTL expired, malformed, impairment loss)",
            &c(&|c, _| c.drops()),
        )?;
        counter(
            &mut enc,
            "ka_router_drops_queue",
            "Packets dropped because the queue was full",
            &c(&|c, _| c.drops_queue),
        )?;
        counter(
            &mut enc,
            "ka_router_drops_aqm",
            "Packets dropped early by the queue discipline's AQM (RED probability, CoDel control law)",
            &c(&|c, _| c.drops_aqm),
        )?;
        counter(
            &mut enc,
            "ka_router_ecn_marks",
            "Packets the queue discipline marked CE (RFC 3168) instead of dropping",
            &c(&|c, _| c.ecn_marks),
        )?;
        gauge(
            &mut enc,
            "ka_router_flow_queues",
            "FQ-CoDel flow queues holding packets (0 for single-queue disciplines)",
            &g(&|c, _| c.active_flows.unwrap_or(0) as f64),
        )?;
        counter(
            &mut enc,
            "ka_router_drops_ttl",
            "Packets dropped because TTL / hop limit ran out",
            &c(&|c, _| c.drops_ttl),
        )?;
        counter(
            &mut enc,
            "ka_router_drops_malformed",
            "Packets dropped as malformed",
            &c(&|c, _| c.drops_malformed),
        )?;
        counter(
            &mut enc,
            "ka_router_drops_impair",
            "Packets the impairment stage lost after serialisation (--loss)",
            &c(&|c, _| c.drops_impair),
        )?;
        counter(
            &mut enc,
            "ka_router_duplicated",
            "Packets the impairment stage duplicated (--duplicate)",
            &c(&|c, _| c.duplicated),
        )?;
        counter(
            &mut enc,
            "ka_router_corrupted",
            "Packets the impairment stage corrupted by flipping one bit (--corrupt)",
            &c(&|c, _| c.corrupted),
        )?;
        counter(
            &mut enc,
            "ka_router_reordered",
            "Packets that left ahead of one serialised before them (--jitter, --reorder)",
            &c(&|c, _| c.reordered),
        )?;
        counter(
            &mut enc,
            "ka_router_input_overflow",
            "Packets the kernel dropped because the device's transmit queue towards the router was full",
            &c(&|_, io| io.input_overflow),
        )?;
        counter(
            &mut enc,
            "ka_router_indicators",
            "RTT-indicator packets seen",
            &c(&|c, _| c.indicators),
        )?;
        counter(
            &mut enc,
            "ka_router_mode_changes",
            "KA/TCP mode switches",
            &c(&|c, _| c.mode_changes),
        )?;
        counter(
            &mut enc,
            "ka_router_non_ip",
            "Packets that were neither IPv4 nor IPv6, dropped on arrival",
            &c(&|c, _| c.non_ip),
        )?;
        counter(
            &mut enc,
            "ka_router_rcp_options_lowered",
            "Native-RCP rate options lowered to this port's rate",
            &c(&|c, _| c.rcp_options_lowered),
        )?;
        counter(
            &mut enc,
            "ka_router_echoes_lowered",
            "Rate echoes of returning ACKs lowered to this port's rate (controller echo)",
            &c(&|c, _| c.echoes_lowered),
        )?;
        counter(
            &mut enc,
            "ka_router_xcp_feedback_lowered",
            "XCP options whose feedback this port lowered",
            &c(&|c, _| c.xcp_feedback_lowered),
        )?;
        counter(
            &mut enc,
            "ka_router_signals_skipped",
            "Packets --stamp-every let go unsignalled: their flow had a signal within its interval",
            &c(&|c, _| c.signals_skipped),
        )?;
        counter(
            &mut enc,
            "ka_router_unstampable",
            "Packets that should have been stamped but whose options / extension headers could not be walked",
            &c(&|c, _| c.unstampable),
        )?;
        counter(
            &mut enc,
            "ka_router_write_errors",
            "Failed writes to the output device (e.g. EIO while it is down); never fatal",
            &c(&|_, io| io.write_errors),
        )?;
        counter(
            &mut enc,
            "ka_router_read_errors",
            "Failed reads from the input device",
            &c(&|_, io| io.read_errors),
        )?;
        {
            let h = Histogram::new(std::iter::empty());
            let mut m = enc.encode_descriptor(
                "ka_router_sojourn_seconds",
                "Queueing delay of dequeued packets (enqueue to start of transmission), any queue discipline",
                None,
                h.metric_type(),
            )?;
            for (d, core, _) in &dirs {
                let s = &core.sojourn;
                // Per-bucket counts: the encoder makes them cumulative.
                let buckets: Vec<(f64, u64)> = s
                    .counts
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let bound = crate::stats::SOJOURN_BOUNDS_S
                            .get(i)
                            .copied()
                            .unwrap_or(f64::INFINITY);
                        (bound, *n)
                    })
                    .collect();
                m.encode_family(&[("direction", d.label())])?
                    .encode_histogram::<NoLabelSet>(
                        s.sum_ns as f64 / 1e9,
                        s.count,
                        &buckets,
                        None,
                    )?;
            }
        }
        super::rwm_metrics::encode(&mut enc, self.0.rwm().as_ref())?;
        {
            // No labels: one time for both directions' core state.
            let at = published
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0.0, |d| d.as_secs_f64());
            let g = ConstGauge::new(at);
            let m = enc.encode_descriptor(
                "ka_router_core_published_seconds",
                "Unix time at which the core-state series (rate, mode, queue, drops, marks, sojourn) \
                 were last refreshed (about every 100 ms; 0 before the first refresh)",
                None,
                g.metric_type(),
            )?;
            g.encode(m)?;
        }
        let l = self.0.lateness.load();
        // Per-bucket counts: the encoder makes them cumulative.
        let buckets: Vec<(f64, u64)> = l
            .buckets
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let bound = LATENESS_BOUNDS_US
                    .get(i)
                    .map_or(f64::INFINITY, |us| *us as f64 / 1e6);
                (bound, *n)
            })
            .collect();
        let h = Histogram::new(std::iter::empty());
        let mut m = enc.encode_descriptor(
            "ka_router_pacing_lateness_seconds",
            "How late the pacing thread woke for a due packet (both directions)",
            None,
            h.metric_type(),
        )?;
        m.encode_histogram::<NoLabelSet>(l.sum_ns as f64 / 1e9, l.count(), &buckets, None)?;
        Ok(())
    }
}

/// The current exposition text for `stats`.
pub fn encode_metrics(stats: &Arc<SharedStats>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(RouterCollector(Arc::clone(stats))));
    let mut out = String::with_capacity(8 * 1024);
    // Encoding into a String cannot fail; an error would only mean a bug in
    // a collector, in which case the partial text is still served.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// Serve `GET /metrics` on `listener` until the task is dropped.
pub async fn serve_metrics(listener: TcpListener, stats: Arc<SharedStats>) -> io::Result<()> {
    loop {
        let (conn, peer) = listener.accept().await?;
        let stats = Arc::clone(&stats);
        tokio::spawn(async move {
            match tokio::time::timeout(CLIENT_TIMEOUT, answer(conn, &stats)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(%peer, "metrics client: {e}"),
                Err(_) => tracing::debug!(%peer, "metrics client timed out"),
            }
        });
    }
}

async fn answer(mut conn: TcpStream, stats: &Arc<SharedStats>) -> io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_REQUEST {
            return respond(
                &mut conn,
                "431 Request Header Fields Too Large",
                "text/plain",
                "",
            )
            .await;
        }
        let n = conn.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(buf.get(..n).unwrap_or(&[]));
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (parts.next().unwrap_or(&[]), parts.next().unwrap_or(&[]));
    let path = target.split(|&b| b == b'?').next().unwrap_or(&[]);
    match (method, path) {
        (b"GET", b"/metrics") => {
            respond(&mut conn, "200 OK", CONTENT_TYPE, &encode_metrics(stats)).await
        }
        (b"GET", _) => respond(&mut conn, "404 Not Found", "text/plain", "try /metrics\n").await,
        _ => respond(&mut conn, "405 Method Not Allowed", "text/plain", "").await,
    }
}

async fn respond(conn: &mut TcpStream, status: &str, ctype: &str, body: &str) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(body.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::stats::IoCounters;

    fn sample() -> Arc<SharedStats> {
        let s = Arc::new(SharedStats::default());
        s.publish([
            CoreStats {
                capacity_bps: 20e6,
                rate_bps: 8e6,
                ka_mode: true,
                queue_packets: 12,
                fragments: 34,
                drops_queue: 5,
                drops_ttl: 1,
                drops_aqm: 7,
                ecn_marks: 9,
                signals_skipped: 21,
                active_flows: Some(3),
                rtt: Duration::from_millis(40),
                sojourn: {
                    let mut h = crate::SojournHistogram::default();
                    h.record(300_000); // 0.3 ms: the 0.5 ms bucket
                    h.record(300_000);
                    h.record(40_000_000); // 40 ms: the 50 ms bucket
                    h
                },
                ..CoreStats::default()
            },
            CoreStats::default(),
        ]);
        IoCounters::add(&s.io(Direction::Reverse).write_errors, 3);
        s.lateness.record(Duration::from_micros(30));
        s.lateness.record(Duration::from_millis(30));
        s
    }

    #[test]
    fn exposition_has_the_required_series() {
        let text = encode_metrics(&sample());
        for line in [
            "ka_router_rate_bytes_per_second{direction=\"forward\"} 1000000.0",
            "ka_router_mode{direction=\"forward\"} 1.0",
            "ka_router_mode{direction=\"reverse\"} 0.0",
            "ka_router_queue_packets{direction=\"forward\"} 12.0",
            "ka_router_fragments_total{direction=\"forward\"} 34",
            "ka_router_drops_total{direction=\"forward\"} 13",
            "ka_router_drops_aqm_total{direction=\"forward\"} 7",
            "ka_router_ecn_marks_total{direction=\"forward\"} 9",
            "ka_router_signals_skipped_total{direction=\"forward\"} 21",
            "ka_router_flow_queues{direction=\"forward\"} 3.0",
            "ka_router_flow_queues{direction=\"reverse\"} 0.0",
            "ka_router_sojourn_seconds_count{direction=\"forward\"} 3",
            "ka_router_sojourn_seconds_bucket{le=\"0.0002\",direction=\"forward\"} 0",
            "ka_router_sojourn_seconds_bucket{le=\"0.0005\",direction=\"forward\"} 2",
            "ka_router_sojourn_seconds_bucket{le=\"0.05\",direction=\"forward\"} 3",
            "ka_router_sojourn_seconds_count{direction=\"reverse\"} 0",
            "ka_router_drops_total{direction=\"reverse\"} 0",
            "ka_router_rtt_seconds{direction=\"forward\"} 0.04",
            "ka_router_write_errors_total{direction=\"reverse\"} 3",
            "ka_router_packets_in_total{direction=\"forward\"} 0",
            "ka_router_pacing_lateness_seconds_count 2",
            "ka_router_pacing_lateness_seconds_bucket{le=\"0.00005\"} 1",
            "ka_router_pacing_lateness_seconds_bucket{le=\"0.005\"} 1",
            "ka_router_pacing_lateness_seconds_bucket{le=\"+Inf\"} 2",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert!(text.ends_with("# EOF\n"));
        // `sample()` published just now.
        let published: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("ka_router_core_published_seconds "))
            .expect("publication time")
            .parse()
            .unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            (0.0..60.0).contains(&(now - published)),
            "published at {published}, now {now}"
        );
    }

    #[test]
    fn publication_time_is_zero_before_the_first_publication() {
        let text = encode_metrics(&Arc::new(SharedStats::default()));
        assert!(
            text.lines()
                .any(|l| l == "ka_router_core_published_seconds 0.0"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn http_get_metrics_and_404() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve_metrics(listener, sample()));
        let get = |path: &'static str| async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            c.read_to_string(&mut out).await.unwrap();
            out
        };
        let ok = get("/metrics").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("ka_router_mode{direction=\"forward\"} 1.0"));
        let body = ok.split("\r\n\r\n").nth(1).unwrap();
        let len: usize = ok
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), len);
        assert!(get("/").await.starts_with("HTTP/1.1 404"));
        server.abort();
    }
}

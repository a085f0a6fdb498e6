//! The receive-window modulation series of `GET /metrics` (only with
//! `--rwm`): flows tracked, windows rewritten, flows evicted and the rest
//! of [`RwmStats`].

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::exposition::counter;
use super::stats::Direction;
use crate::rwm::RwmStats;

fn plain_gauge(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    v: u64,
) -> std::fmt::Result {
    let g = ConstGauge::new(v as f64);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

fn plain_counter(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    v: u64,
) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

/// Writes the RWM series (nothing when `rwm` is `None`).
pub(super) fn encode(enc: &mut DescriptorEncoder<'_>, rwm: Option<&RwmStats>) -> std::fmt::Result {
    let Some(s) = rwm else {
        return Ok(());
    };
    plain_gauge(
        enc,
        "ka_router_rwm_flows",
        "Established TCP connections RWM tracks (handshake seen)",
        s.flows,
    )?;
    plain_gauge(
        enc,
        "ka_router_rwm_active_flows",
        "Tracked connections active within the active window (they share their class's capacity)",
        s.active_flows,
    )?;
    plain_gauge(
        enc,
        "ka_router_rwm_half_open",
        "Handshakes in progress RWM tracks",
        s.half_open,
    )?;
    plain_gauge(
        enc,
        "ka_router_rwm_closed_kept",
        "Connections closed by RST or FIN kept so that one that goes on sending is modulated again",
        s.closed_kept,
    )?;
    counter(
        enc,
        "ka_router_rwm_windows_rewritten",
        "TCP receive windows lowered to the flow's BDP share, by the direction the segment travelled",
        &Direction::ALL.map(|d| {
            (
                [("direction", d.label())],
                s.windows_rewritten.get(d.index()).copied().unwrap_or(0),
            )
        }),
    )?;
    for (name, help, v) in [
        (
            "ka_router_rwm_handshakes",
            "Handshakes completed and their RTT measured",
            s.handshakes,
        ),
        (
            "ka_router_rwm_flows_evicted",
            "Idle connections evicted because the flow table was full",
            s.evicted,
        ),
        (
            "ka_router_rwm_half_open_evicted",
            "Half-open handshakes evicted for newer SYNs (a SYN flood shows here)",
            s.evicted_half_open,
        ),
        (
            "ka_router_rwm_flows_refused",
            "Handshakes completed while the table was full of active connections (left untracked)",
            s.refused,
        ),
        (
            "ka_router_rwm_flows_closed",
            "Connections that left modulation on an accepted RST or after both FINs",
            s.closed,
        ),
        (
            "ka_router_rwm_rst_fin_rejected",
            "RST and FIN segments ignored because the receiver would not accept them (bad TCP checksum or sequence number outside the inferred window)",
            s.rst_fin_rejected,
        ),
        (
            "ka_router_rwm_flows_readmitted",
            "Closed connections modulated again because they went on sending data",
            s.readmitted,
        ),
        (
            "ka_router_rwm_flows_expired",
            "Connections and handshakes forgotten after their timeout",
            s.expired + s.expired_half_open,
        ),
        (
            "ka_router_rwm_segments",
            "TCP segments RWM looked at",
            s.segments,
        ),
        (
            "ka_router_rwm_untracked_segments",
            "TCP segments of connections whose handshake RWM did not see (left alone)",
            s.untracked,
        ),
    ] {
        plain_counter(enc, name, help, v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::shell::metrics::encode_metrics;
    use crate::shell::stats::SharedStats;

    #[test]
    fn rwm_series_only_with_rwm() {
        let s = Arc::new(SharedStats::default());
        assert!(!encode_metrics(&s).contains("ka_router_rwm"));
        s.publish_rwm(Some(crate::rwm::RwmStats {
            flows: 4,
            windows_rewritten: [0, 1234],
            evicted: 2,
            rst_fin_rejected: 3,
            ..Default::default()
        }));
        let text = encode_metrics(&s);
        for line in [
            "ka_router_rwm_flows 4.0",
            "ka_router_rwm_windows_rewritten_total{direction=\"reverse\"} 1234",
            "ka_router_rwm_windows_rewritten_total{direction=\"forward\"} 0",
            "ka_router_rwm_flows_evicted_total 2",
            "ka_router_rwm_rst_fin_rejected_total 3",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}

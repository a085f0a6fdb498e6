//! What the driver reports: per-stream flow statistics ([`StreamStats`])
//! and driver counters ([`DriverStats`]).

use crate::conn::{CloseReason, ConnStats, Mode, ModeChange};
use crate::stack::StackStats;
use std::time::{Duration, Instant};

/// Counters of the driver's I/O (the stack's own are in [`StackStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Packets read from the TUN device and given to the stack (a
    /// super-packet counts its segments).
    pub packets_in: u64,
    /// With offloads: TCP super-packets read whole and given to the stack
    /// as one coalesced segment each (`Stack::handle_coalesced`).
    pub gro_reads: u64,
    /// Packets the stack produced (written or failed).
    pub packets_out: u64,
    /// Packets the kernel dropped in front of the driver because the TUN
    /// device's transmit queue (`DriverConfig::tun_queue_len`) was full —
    /// the device's `tx_dropped` since the stack started.
    pub input_dropped: u64,
    /// Failed TUN reads.
    pub read_errors: u64,
    /// Failed TUN writes (e.g. EIO while the device is down).
    pub write_errors: u64,
    /// With offloads (`DriverConfig::offload`): super-packets written, each
    /// several of the stack's segments in one `write(2)` that the kernel
    /// segments again (GSO).
    pub gso_writes: u64,
    /// The segments those super-packets carried (of `packets_out`; the
    /// rest were written one per `write(2)`).
    pub gso_segments: u64,
    /// Handshakes reset because a listener's accept backlog was full.
    pub backlog_full: u64,
    /// How late the driver thread woke for the stack's deadlines (pacing,
    /// timers): counts of wake-ups per bucket, upper bounds
    /// [`LATENESS_BUCKETS_US`] µs (the last bucket is everything above).
    pub lateness: [u64; LATENESS_BUCKETS_US.len() + 1],
    /// The stack's counters (filled in by `KaStack::stats`).
    pub stack: StackStats,
}

/// Upper bounds (µs) of the [`DriverStats::lateness`] buckets.
pub const LATENESS_BUCKETS_US: [u64; 7] = [10, 50, 100, 500, 1000, 2000, 5000];

impl DriverStats {
    /// Records one wake-up `late` after its deadline.
    pub(crate) fn record_lateness(&mut self, late: Duration) {
        let us = late.as_micros();
        let i = LATENESS_BUCKETS_US
            .iter()
            .position(|&b| us < u128::from(b))
            .unwrap_or(LATENESS_BUCKETS_US.len());
        if let Some(c) = self.lateness.get_mut(i) {
            *c += 1;
        }
    }

    /// The lateness histogram as text, e.g. `<10µs: 950, <50µs: 40, …`.
    pub fn lateness_summary(&self) -> String {
        let mut parts = Vec::new();
        for (i, c) in self.lateness.iter().enumerate() {
            let label = match LATENESS_BUCKETS_US.get(i) {
                Some(b) => format!("<{b}µs"),
                None => format!(
                    "≥{}µs",
                    LATENESS_BUCKETS_US.last().copied().unwrap_or_default()
                ),
            };
            parts.push(format!("{label}: {c}"));
        }
        parts.join(", ")
    }
}

/// One connection's history as seen by the driver.
///
/// `send_done` and `recv_done` carry a snapshot of the counters taken at
/// that moment, so a flow's numbers are not disturbed by what happens after
/// it finished (e.g. a KA → TCP switch for silence once nothing is sent).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamStats {
    /// Current counters (final once the connection is gone).
    pub conn: ConnStats,
    /// `connect` call (active) or handshake completion (passive).
    pub opened: Instant,
    /// Handshake completion.
    pub established: Option<Instant>,
    /// Our FIN was acknowledged (everything we wrote was delivered), with
    /// the counters at that moment.
    pub send_done: Option<(Instant, ConnStats)>,
    /// The peer's FIN arrived (everything it sent was received), with the
    /// counters at that moment.
    pub recv_done: Option<(Instant, ConnStats)>,
    /// When and why the connection ended.
    pub closed: Option<(Instant, CloseReason)>,
    /// Sender mode changes, oldest first (capped, see
    /// `DriverConfig::mode_log_cap`).
    pub mode_changes: Vec<ModeChange>,
    /// Mode changes not kept because of the cap.
    pub mode_changes_dropped: u64,
}

/// A finished flow in one direction, as the `ka-endpoint` binary reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSummary {
    /// Application bytes delivered (acknowledged by the peer when sending,
    /// received in order when receiving).
    pub bytes: u64,
    /// Flow completion time: from `opened` to our FIN acknowledged
    /// (sending) or the peer's FIN received (receiving).
    pub fct: Duration,
    /// Time the sender spent in KA mode during the flow.
    pub time_ka: Duration,
    /// Time the sender spent in TCP mode during the flow (`fct − time_ka`).
    pub time_tcp: Duration,
    /// Mode changes during the flow.
    pub mode_changes: u64,
    /// Segments retransmitted during the flow.
    pub retransmits: u64,
    /// Of those, the ones the peer reported as received twice (DSACK):
    /// spurious retransmissions.
    pub spurious_retransmits: u64,
    /// TCP-mode window reductions undone because DSACKs proved their
    /// retransmissions spurious (DESIGN §6.9).
    pub window_undos: u64,
    /// Retransmission timeouts during the flow.
    pub rtos: u64,
    /// Tail loss probes sent during the flow (RFC 8985 §7).
    pub tlp_probes: u64,
    /// Whether KA was negotiated.
    pub ka_enabled: bool,
    /// Whether XCP was negotiated.
    pub xcp_enabled: bool,
    /// Mode at the end of the flow.
    pub final_mode: Mode,
    /// Whether ECN was negotiated (RFC 3168).
    pub ecn: bool,
    /// ECN echoes the sender reacted to (window reductions, at most one
    /// per RTT).
    pub ece_reactions: u64,
    /// CE-marked data segments received.
    pub ce_received: u64,
}

impl FlowSummary {
    /// Goodput in bit/s (`bytes · 8 / fct`).
    pub fn goodput_bps(&self) -> f64 {
        let s = self.fct.as_secs_f64();
        if s > 0.0 {
            self.bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    }

    /// Fraction of the flow spent in KA mode (0–1).
    pub fn ka_time_frac(&self) -> f64 {
        let s = self.fct.as_secs_f64();
        if s > 0.0 {
            (self.time_ka.as_secs_f64() / s).min(1.0)
        } else {
            0.0
        }
    }
}

impl StreamStats {
    /// The sending flow, once our FIN has been acknowledged.
    pub fn send_summary(&self) -> Option<FlowSummary> {
        let (at, st) = self.send_done?;
        Some(self.summary(at, &st, st.bytes_acked))
    }

    /// The receiving flow, once the peer's FIN has arrived.
    pub fn recv_summary(&self) -> Option<FlowSummary> {
        let (at, st) = self.recv_done?;
        Some(self.summary(at, &st, st.bytes_received))
    }

    fn summary(&self, at: Instant, st: &ConnStats, bytes: u64) -> FlowSummary {
        let fct = at.saturating_duration_since(self.opened);
        let time_ka = st.time_in_ka.min(fct);
        FlowSummary {
            bytes,
            fct,
            time_ka,
            time_tcp: fct - time_ka,
            mode_changes: st.mode_changes,
            retransmits: st.retransmits,
            spurious_retransmits: st.spurious_retransmits,
            window_undos: st.window_undos,
            rtos: st.rtos,
            tlp_probes: st.tlp_probes,
            ka_enabled: st.ka_enabled,
            xcp_enabled: st.xcp_enabled,
            final_mode: st.mode,
            ecn: st.ecn,
            ece_reactions: st.ece_reactions,
            ce_received: st.ce_received,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_uses_the_snapshot_at_completion() {
        let t0 = Instant::now();
        let at = t0 + Duration::from_secs(4);
        let snap = ConnStats {
            bytes_acked: 10_000_000,
            time_in_ka: Duration::from_secs(3),
            mode_changes: 1,
            retransmits: 2,
            ka_enabled: true,
            mode: Mode::Ka,
            ..ConnStats::default()
        };
        let later = ConnStats {
            mode_changes: 2,
            time_in_ka: Duration::from_secs(9),
            ..snap
        };
        let s = StreamStats {
            conn: later,
            opened: t0,
            established: Some(t0),
            send_done: Some((at, snap)),
            recv_done: None,
            closed: None,
            mode_changes: Vec::new(),
            mode_changes_dropped: 0,
        };
        let f = s.send_summary().unwrap();
        assert_eq!(f.bytes, 10_000_000);
        assert_eq!(f.fct, Duration::from_secs(4));
        assert_eq!(f.time_ka, Duration::from_secs(3));
        assert_eq!(f.time_tcp, Duration::from_secs(1));
        assert_eq!(f.mode_changes, 1);
        assert!((f.goodput_bps() - 20e6).abs() < 1.0);
        assert!((f.ka_time_frac() - 0.75).abs() < 1e-9);
        assert!(s.recv_summary().is_none());
    }
}

//! Tail loss probe (RFC 8985 §7, the "TLP" of RACK-TLP; DESIGN §6.9).
//!
//! RACK detects a loss when a later segment is delivered. When the *last*
//! segments of a flight are lost nothing later arrives, and without a
//! probe only the RTO (≥ 200 ms on Linux, 1 s by RFC 6298) repairs them:
//! a KA flow would then also leave KA mode "by timeout". With
//! [`TcpConfig::tlp`](crate::TcpConfig::tlp) the sender probes after a
//! probe timeout (PTO) of two srtts:
//!
//! * **Arming** (§7.2): after sending new data and after an ACK that
//!   advances `snd_una`, while data is in flight, with SACK, outside a
//!   recovery, with no probe outstanding. PTO = 2·srtt, plus 200 ms
//!   (RFC 8985's `WCDelAckT`) when one segment is in flight (the peer may
//!   hold its ACK for a second one), at least 10 ms (as Linux), and never
//!   later than the RTO would fire: then the probe goes out in its place
//!   and the RTO waits one more period (Linux's `tcp_schedule_loss_probe`;
//!   a probe keeps the window, an RTO collapses it to one segment). No
//!   probe before the first RTT sample.
//! * **The probe** (§7.3): one new segment if the windows allow it
//!   (ignoring cwnd), else the highest segment sent, again. The RTO is
//!   restarted from the probe.
//! * **What the probe tells** (§7.4): its ACK carries a SACK, so RACK marks
//!   the older tail segments lost and recovery begins as for any loss. If
//!   the probe was a retransmission and an ACK goes beyond it (for data
//!   sent after it) with no DSACK meanwhile, the probe itself repaired the
//!   (single) loss: that is a loss event for the congestion controller
//!   and the KA mode machine (Linux's `tcp_process_tlp_ack`). A DSACK, or
//!   a duplicate ACK at the probe's end, says the original had arrived:
//!   nothing was lost. A probe at the very end of a transfer, with nothing
//!   sent after it, is never judged (no congestion response for a single
//!   lost last segment).
//!
//! Off in the library's default (`TcpConfig::default()`, the paper's ns-3
//! TCP has no TLP) and on in the `ka-endpoint` binary (Linux probes by
//! default).

use super::Connection;
use crate::cc::CongestionEvent;
use std::time::{Duration, Instant};

/// RFC 8985's worst-case delayed-ACK time, added to the PTO when one
/// segment is in flight.
const WC_DEL_ACK: Duration = Duration::from_millis(200);

/// The smallest PTO (Linux's `TCP_TIMEOUT_MIN` for probes).
const MIN_PTO: Duration = Duration::from_millis(10);

/// A probe sent and not yet resolved (RFC 8985's `TLP.end_seq`,
/// `TLP.is_retrans`).
#[derive(Debug, Clone, Copy)]
pub(super) struct TlpProbe {
    /// Sequence number just past the probe.
    end: u64,
    /// The probe resent the highest segment (rather than new data).
    retransmission: bool,
    /// `stats.spurious_bytes` when it went out: more since means a DSACK.
    dsacked: u64,
}

/// What the next `send_data` owes the probe timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TlpSend {
    /// One new segment, whatever cwnd says.
    NewData,
    /// The highest segment sent, again.
    Last,
}

/// The connection's tail-loss-probe state.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TlpState {
    /// When the probe timer fires.
    pub at: Option<Instant>,
    /// A probe the timer asked for and `send_data` has not sent yet.
    pub pending: Option<TlpSend>,
    /// The outstanding probe.
    pub out: Option<TlpProbe>,
}

impl Connection {
    /// (Re)arms the probe timer (RFC 8985 §7.2), or disarms it when no
    /// probe is allowed now.
    pub(super) fn tlp_arm(&mut self, now: Instant) {
        self.tlp.at = None;
        if !self.cfg.tlp
            || !self.sack_ok
            || !self.state.is_synchronized()
            || self.recovery.is_some()
            || self.tlp.out.is_some()
            || self.tlp.pending.is_some()
            || self.sb.is_empty()
        {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else {
            return;
        };
        let mut pto = srtt.saturating_mul(2);
        if self.sb.outstanding() <= self.snd_mss as u64 {
            pto += WC_DEL_ACK;
        }
        // never later than the RTO would fire: the probe then goes out
        // instead of the timeout (Linux's `tcp_schedule_loss_probe`)
        let at = now + pto.max(MIN_PTO);
        self.tlp.at = Some(self.rto_at.map_or(at, |rto| at.min(rto)));
    }

    /// The probe timer fired (RFC 8985 §7.3): the next `send_data` sends
    /// the probe.
    pub(super) fn on_tlp_timer(&mut self, now: Instant) {
        self.tlp.at = None;
        if self.sb.is_empty() || self.recovery.is_some() || self.tlp.out.is_some() {
            return;
        }
        let unsent = self.sndbuf.end_seq() > self.snd_nxt;
        let room = self.snd_una + self.snd_wnd > self.snd_nxt;
        self.tlp.pending = Some(if unsent && room {
            TlpSend::NewData
        } else {
            TlpSend::Last
        });
        // the probe stands in for an RTO due now: the RTO waits one more
        // period from here (and again from the probe)
        self.set_rto_timer(now);
    }

    /// The probe went out: `end` is the sequence number past it.
    pub(super) fn tlp_sent(&mut self, now: Instant, end: u64, retransmission: bool) {
        self.tlp.pending = None;
        self.tlp.out = Some(TlpProbe {
            end,
            retransmission,
            dsacked: self.stats.spurious_bytes,
        });
        self.stats.tlp_probes += 1;
        // RFC 8985 §7.3: the RTO runs from the probe
        self.set_rto_timer(now);
    }

    /// An ACK was processed (after SACK, DSACK and RACK): resolves an
    /// outstanding probe (RFC 8985 §7.4) and re-arms the timer.
    pub(super) fn tlp_on_ack(&mut self, now: Instant, snd_una_advanced: bool) {
        // Linux's `tcp_process_tlp_ack`: an ACK below the probe's end says
        // nothing yet; at its end it may be the original's ACK with the
        // probe's DSACK still to come, so only an ACK beyond it (for data
        // sent after the probe) without a DSACK proves the probe repaired
        // a loss, and a duplicate ACK at its end (the probe arrived as a
        // duplicate) proves it did not.
        if let Some(p) = self.tlp.out
            && self.snd_una >= p.end
        {
            let dsacked = self.stats.spurious_bytes > p.dsacked;
            if !p.retransmission || dsacked {
                self.tlp.out = None;
            } else if self.snd_una > p.end {
                self.tlp.out = None;
                if self.recovery.is_none() {
                    self.tlp_repaired_a_loss(now);
                }
            } else if !snd_una_advanced {
                self.tlp.out = None;
            }
        }
        if snd_una_advanced {
            self.tlp_arm(now);
        }
    }

    /// The probe's retransmission was the only copy that arrived: one loss
    /// event, as if RACK had found it (the window is cut once; a KA flow
    /// leaves KA mode as after any loss).
    fn tlp_repaired_a_loss(&mut self, now: Instant) {
        self.stats.tlp_recoveries += 1;
        let flight = self.sb.outstanding().saturating_sub(self.sb.sacked_bytes()) as usize;
        let sent = self.sb.first().map_or(now, |f| f.sent);
        self.ka_on_loss(now, false);
        // a loss proven real: nothing to undo
        self.ka.undo = None;
        self.cc_undo = None;
        self.cc.on_congestion_event(CongestionEvent {
            now,
            sent,
            is_rto: false,
            bytes_in_flight: flight,
        });
    }

    /// Forgets the probe state (RTO, recovery).
    pub(super) fn tlp_reset(&mut self) {
        self.tlp = TlpState::default();
    }
}

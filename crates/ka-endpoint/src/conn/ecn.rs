//! Explicit Congestion Notification (RFC 3168; DESIGN §6.4).
//!
//! Whether a connection asks for or accepts ECN is
//! [`TcpConfig::ecn`](crate::TcpConfig::ecn) ([`EcnMode`]); ECN is on for the
//! connection ([`Connection::ecn_enabled`]) only if the handshake agreed.
//!
//! # Negotiation (RFC 3168 §6.1.1)
//!
//! * An active open with [`EcnMode::On`] sends an ECN-setup SYN (ECE and CWR
//!   set). A passive open that accepts ([`EcnMode::Accept`] or `On`) answers
//!   an ECN-setup SYN with an ECN-setup SYN-ACK (ECE set, CWR clear), else
//!   with a plain SYN-ACK.
//! * The active side uses ECN only if every SYN it sent was ECN-setup and
//!   the SYN-ACK is ECN-setup. A SYN-ACK with both ECE and CWR set is not
//!   (a peer or middlebox that reflects the SYN's reserved bits), so a
//!   reflecting non-ECN peer does not turn ECN on.
//! * SYN retransmissions are sent without ECE and CWR (the fallback of
//!   §6.1.1.1, Linux's `tcp_ecn_fallback`): a path that drops ECN-setup SYNs
//!   costs one SYN timeout, and that connection then runs without ECN. A
//!   passive side that gets such a retransmission (its SYN-ACK was lost)
//!   renegotiates from it, so it does not send ECT to a peer that gave up
//!   on ECN.
//!   (The other fallback §6.1.1.1 allows, retrying after a RST, is not
//!   done: the RST closes the connection as `Refused`.)
//! * Simultaneous open: ECN is on if both SYNs were ECN-setup.
//!
//! # Sender
//!
//! * **ECT(0)** ([`Transmit::ecn`](super::Transmit::ecn)) on segments that
//!   carry *new* data, RTT indicators included. Not-ECT on SYN and SYN-ACK
//!   (§6.1.1), pure ACKs (§6.1.4: they are not congestion-controlled, so
//!   a mark on them could not be answered), FIN-only segments (the same
//!   reasoning; Linux marks only segments with data), retransmissions
//!   (§6.1.5), zero-window probes (§6.1.6) and RSTs.
//! * **ECE** on an acceptable ACK is a congestion signal. The sender reacts
//!   at most once per window of data (§6.1.2): not during a loss recovery,
//!   and not until `snd_una` has passed what was `snd_max` at the last window
//!   reduction — any reduction: for an ECE, a fast retransmit or an RTO
//!   (the loss reaction already covered that window). *Passed* means
//!   strictly beyond, as Linux does: the ACK of exactly that point was sent
//!   before our CWR segment (the first one above it) reached the receiver,
//!   so it still echoes the old mark.
//! * The reaction in **TCP mode** is the controller's fast-recovery
//!   reduction without a retransmission: NewReno `cwnd = ssthresh =
//!   max(FlightSize/2, 2·MSS)`, CUBIC `FlightSize·β` with fast convergence
//!   (RFC 9438 §4.6–4.7), FlightSize taken before the ACK that carried the
//!   ECE (the window the mark was in). The reduction is immediate (no
//!   proportional rate reduction), like our fast recovery's; ACKs of data
//!   sent before it do not grow the window (the controller's recovery
//!   period, RFC 3168's "once per window").
//! * In **KA mode** an ECE the sender reacts to ends KA mode like a loss
//!   (paper §II-C3 counts ECN among the signals that send a flow back to
//!   TCP): the TCP controller takes over the KA window and reduces it as
//!   above, the mode change says [`ModeReason::Ecn`](super::ModeReason::Ecn),
//!   and the flow has "left by loss" (`LeftBy::Loss`), with the same ways
//!   back as after a loss.
//! * **CWR** goes on the first new-data segment after any window reduction
//!   (§6.1.2: "for any reason"), so the receiver stops echoing.
//!
//! # Receiver (§6.1.3)
//!
//! * A CE mark on an acceptable segment that carries data sets ECE on every
//!   segment we send with ACK set (pure ACKs and data alike) until a segment
//!   with CWR arrives. CWR is looked at before CE, so a CE mark on the CWR
//!   segment itself starts a new echo.
//! * A CE-marked data segment is acknowledged at once, not after the
//!   delayed-ACK timer (RFC 3168 does not require it; Linux does, with its
//!   "quick ACK" on CE): the echo reaches the sender up to one delayed-ACK
//!   timeout (40 ms) sooner, which is most of an RTT on the paths the paper
//!   considers. It costs at most one extra ACK per marked segment.
//! * Fragments: a datagram reassembled from fragments of which any was CE is
//!   CE; CE mixed with Not-ECT is dropped (RFC 3168 §5.3;
//!   [`stack::reasm`](crate::stack::reasm)). KA routers fragment data, and an
//!   AQM behind them may mark either piece.
//!
//! Counted in [`ConnStats`](super::ConnStats): `ce_received`,
//! `ece_received`, `ece_reactions`, `cwr_sent`.
//!
//! Not implemented: the ECN nonce (RFC 3540, historic), Accurate ECN and
//! ECT(1)/L4S (RFC 9331).
//!
//! [`EcnMode`]: crate::EcnMode
//! [`EcnMode::On`]: crate::EcnMode::On
//! [`EcnMode::Accept`]: crate::EcnMode::Accept

use super::{Connection, ModeReason};
use crate::cc::CongestionEvent;
use ka_codec::wire::ecn::Ecn;
use ka_codec::wire::tcp::{ACK, CWR, ECE, SYN};
use std::time::Instant;

/// ECN state of one connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct EcnState {
    /// Negotiated.
    pub ok: bool,
    /// Active open: every SYN sent so far was ECN-setup (and one was).
    syn_setup: bool,
    /// The IP ECN codepoint of the segment being processed.
    rx: Ecn,
    /// Receiver: ECE on every ACK until a CWR arrives.
    ece_pending: bool,
    /// Sender: CWR on the next new-data segment.
    cwr_pending: bool,
    /// Sender: `snd_max` at the last window reduction.
    reduced_at: Option<u64>,
}

impl Default for EcnState {
    fn default() -> Self {
        EcnState {
            ok: false,
            syn_setup: false,
            rx: Ecn::NotEct,
            ece_pending: false,
            cwr_pending: false,
            reduced_at: None,
        }
    }
}

impl Connection {
    /// Whether ECN was negotiated for this connection (both the SYN and
    /// the SYN-ACK were ECN-setup).
    pub fn ecn_enabled(&self) -> bool {
        self.ecn.ok
    }

    /// [`Connection::handle_segment`] for a segment whose IP header carried
    /// the ECN codepoint `ecn` (the [`Stack`](crate::Stack) calls this).
    pub fn handle_segment_ecn(
        &mut self,
        now: Instant,
        seg: &ka_codec::wire::tcp::TcpRepr,
        payload: &[u8],
        ecn: Ecn,
    ) {
        self.ecn.rx = ecn;
        self.handle_segment(now, seg, payload);
        self.ecn.rx = Ecn::NotEct;
    }

    /// [`Connection::handle_segment_ecn`] for `segments` consecutive
    /// full-sized segments that the receiving device's offloads coalesced
    /// into one (GRO; DESIGN §6.10): handled as one segment with all their
    /// payload, counted as `segments` for the statistics and the
    /// delayed-ACK rule (RFC 5681 §4.2: at least every second full-sized
    /// segment is acknowledged, so two or more are acknowledged at once).
    pub fn handle_segments_ecn(
        &mut self,
        now: Instant,
        seg: &ka_codec::wire::tcp::TcpRepr,
        payload: &[u8],
        ecn: Ecn,
        segments: u16,
    ) {
        self.rx_segments = segments.max(1);
        self.handle_segment_ecn(now, seg, payload, ecn);
        self.rx_segments = 1;
    }

    /// The ECN bits of our SYN (`syn_ack` false) or SYN-ACK: ECE|CWR on an
    /// active open's first SYN if we ask, none on its retransmissions; ECE
    /// on a SYN-ACK once ECN is agreed.
    pub(super) fn ecn_syn_flags(&mut self, syn_ack: bool) -> u8 {
        if syn_ack {
            return if self.ecn.ok { ECE } else { 0 };
        }
        let first = !self.syn_retransmitted;
        self.ecn.syn_setup = first && self.cfg.ecn.requests();
        if self.ecn.syn_setup { ECE | CWR } else { 0 }
    }

    /// Negotiation from the peer's SYN or SYN-ACK (`flags` its TCP flags).
    pub(super) fn ecn_on_peer_syn(&mut self, flags: u8) {
        let (ece, cwr) = (flags & ECE != 0, flags & CWR != 0);
        self.ecn.ok = if flags & ACK != 0 {
            self.ecn.syn_setup && ece && !cwr
        } else if self.passive {
            self.cfg.ecn.accepts() && ece && cwr
        } else {
            // simultaneous open: both SYNs ECN-setup
            self.ecn.syn_setup && ece && cwr
        };
    }

    /// ECE for an outgoing segment with these flags, if the receiver side
    /// owes an echo.
    pub(super) fn ecn_echo_flag(&self, flags: u8) -> u8 {
        let ack_only = flags & ACK != 0 && flags & SYN == 0;
        if ack_only && self.ecn.ok && self.ecn.ece_pending {
            ECE
        } else {
            0
        }
    }

    /// Receiver side of an acceptable segment: CWR ends the echo, then CE
    /// on data starts one (and asks for an immediate ACK).
    pub(super) fn ecn_on_segment(&mut self, flags: u8, payload_len: usize) {
        if !self.ecn.ok {
            return;
        }
        if flags & CWR != 0 {
            self.ecn.ece_pending = false;
        }
        if payload_len > 0 && self.ecn.rx == Ecn::Ce {
            self.stats.ce_received += 1;
            self.ecn.ece_pending = true;
            self.ack_now = true;
        }
    }

    /// FlightSize (RFC 5681): sent, not cumulatively acknowledged nor
    /// SACKed.
    pub(super) fn flight_size(&self) -> usize {
        self.sb.outstanding().saturating_sub(self.sb.sacked_bytes()) as usize
    }

    /// An acceptable ACK carried ECE; `flight` is FlightSize before it.
    pub(super) fn ecn_on_ece(&mut self, now: Instant, flight: usize) {
        if !self.ecn.ok {
            return;
        }
        self.stats.ece_received += 1;
        let same_window = self.ecn.reduced_at.is_some_and(|h| self.snd_una <= h);
        if self.recovery.is_some() || same_window {
            return;
        }
        self.stats.ece_reactions += 1;
        self.cc_undo = None;
        self.ka_on_congestion(now, ModeReason::Ecn);
        self.cc.on_congestion_event(CongestionEvent {
            now,
            sent: now,
            is_rto: false,
            bytes_in_flight: flight,
        });
        self.ecn_window_reduced();
    }

    /// The window was just reduced (ECE, fast retransmit or RTO): the next
    /// new-data segment carries CWR, and ECEs for this window are ignored.
    pub(super) fn ecn_window_reduced(&mut self) {
        if self.ecn.ok {
            self.ecn.cwr_pending = true;
            self.ecn.reduced_at = Some(self.snd_max);
        }
    }

    /// Whether the next new-data segment carries CWR.
    pub(super) fn ecn_cwr_due(&self) -> bool {
        self.ecn.ok && self.ecn.cwr_pending
    }

    /// A new-data segment went out (`cwr`: with CWR). Returns its IP ECN
    /// codepoint.
    pub(super) fn ecn_on_new_data(&mut self, cwr: bool) -> Ecn {
        if !self.ecn.ok {
            return Ecn::NotEct;
        }
        if cwr {
            self.ecn.cwr_pending = false;
            self.stats.cwr_sent += 1;
        }
        Ecn::Ect0
    }
}

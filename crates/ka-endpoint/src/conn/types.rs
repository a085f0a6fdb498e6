//! The public value types of a connection: states, events, statistics.

use super::LeftBy;
use super::{Mode, ModeChange};
use std::time::Duration;

/// TCP connection states (RFC 9293 §3.3.2; LISTEN lives in the stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Our SYN is out, waiting for SYN-ACK.
    SynSent,
    /// The peer's SYN arrived and our SYN-ACK is out.
    SynReceived,
    /// Data flows both ways.
    Established,
    /// We closed; our FIN is not yet acknowledged.
    FinWait1,
    /// Our FIN is acknowledged; waiting for the peer's.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; waiting for the ACK of our FIN.
    Closing,
    /// The peer closed first, then we did; waiting for the ACK of our FIN.
    LastAck,
    /// Waiting 2·MSL before forgetting the connection.
    TimeWait,
    /// Gone.
    Closed,
}

impl State {
    /// Whether the handshake has completed (RFC 793 "synchronized").
    pub fn is_synchronized(self) -> bool {
        !matches!(self, State::SynSent | State::SynReceived | State::Closed)
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// Orderly close in both directions.
    Normal,
    /// The peer sent an acceptable RST.
    Reset,
    /// The peer refused the connection (RST in reply to our SYN).
    Refused,
    /// Retransmissions or the FIN-WAIT-2 timer ran out.
    TimedOut,
    /// The application aborted it (we sent RST).
    Aborted,
}

/// Something the application (or simulator) may want to know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// The handshake completed.
    Connected,
    /// New in-order data can be read (edge-triggered: emitted again only
    /// after a `read`).
    Readable,
    /// Send-buffer space became free after a `write` that did not take
    /// everything.
    Writable,
    /// The peer's FIN arrived and all data before it is readable.
    PeerFin,
    /// The sender switched between KA and TCP mode.
    ModeChanged(ModeChange),
    /// The connection is gone (always the last event).
    Closed(CloseReason),
}

/// One segment produced by [`Connection::poll_transmit`](super::Connection::poll_transmit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Bytes of TCP segment (header, options, payload) written to the buffer.
    pub len: usize,
    /// Set DF on the IPv4 header.
    pub dont_frag: bool,
    /// This segment is an RTT indicator (its IP total length is `600 + k`).
    pub indicator: bool,
    /// The IPv4 RCP option (DESIGN §7.1) to put into this packet's IP
    /// header (native-RCP connections: SYN and data segments). Not counted
    /// in `len`; [`Connection::ip_options_room`](super::Connection::ip_options_room)
    /// says how much room to leave for it.
    pub rcp_option: Option<ka_codec::RcpOption>,
    /// The ECN codepoint for the IP header: ECT(0) on new data of an ECN
    /// connection, else Not-ECT (see the `conn::ecn` docs).
    pub ecn: ka_codec::wire::ecn::Ecn,
    /// The IPv4 XCP option (DESIGN §7.2) to put into this packet's IP
    /// header (data segments of an XCP sender), padded to 16 bytes. Not
    /// counted in `len`, like `rcp_option`.
    pub xcp_option: Option<ka_codec::XcpOption>,
}

/// Counters and current state of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ConnStats {
    /// Application bytes sent for the first time.
    pub bytes_sent: u64,
    /// Application bytes retransmitted.
    pub bytes_retransmitted: u64,
    /// Application bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// In-order application bytes received.
    pub bytes_received: u64,
    /// Segments sent (all kinds).
    pub segments_sent: u64,
    /// Segments received and processed.
    pub segments_received: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Loss events detected by RACK (with SACK) or duplicate ACKs
    /// (without): fast retransmits.
    pub fast_retransmits: u64,
    /// Spurious retransmissions: segments the peer reported as received
    /// twice in a DSACK block (RFC 2883). The endpoint only sends a segment
    /// twice when it retransmits, so each is a retransmission that was not
    /// needed (or a duplicate made by the network).
    pub spurious_retransmits: u64,
    /// Bytes in those DSACK blocks.
    pub spurious_bytes: u64,
    /// TCP-mode window reductions undone because DSACKs proved every
    /// retransmission of their recovery spurious (`conn::cc_undo`).
    pub window_undos: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Tail loss probes sent (RFC 8985 §7, `TcpConfig::tlp`).
    pub tlp_probes: u64,
    /// Losses a probe's retransmission repaired on its own (each one loss
    /// event for the controller).
    pub tlp_recoveries: u64,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// Current RTO (with backoff).
    pub rto: Duration,
    /// Effective congestion window (KA window in KA mode), bytes.
    pub cwnd: usize,
    /// Slow-start threshold of the TCP-mode controller.
    pub ssthresh: usize,
    /// Bytes in flight (RFC 6675 pipe).
    pub in_flight: usize,
    /// Peer's receive window, bytes.
    pub snd_wnd: usize,
    /// KA was negotiated.
    pub ka_enabled: bool,
    /// Current sender mode.
    pub mode: Mode,
    /// Why the sender last left KA mode.
    pub left_by: Option<LeftBy>,
    /// Last signalled rate R, bytes per millisecond.
    pub ka_rate: Option<f64>,
    /// Ceiling on the KA pacing rate after a return by "path clear"
    /// (B/ms; `None` = pacing at R). See the `conn::ka` docs.
    pub ka_rate_cap: Option<f64>,
    /// Time spent in KA mode (up to the last call into the connection).
    pub time_in_ka: Duration,
    /// Mode changes so far.
    pub mode_changes: u64,
    /// Fresh KA-Rate echoes received (sender side).
    pub ka_signals_fresh: u64,
    /// Leading fragments recorded (receiver side).
    pub ka_fragments_seen: u64,
    /// IPv4 RCP options with a router-lowered rate received (native-RCP
    /// receiver).
    pub rcp_options_seen: u64,
    /// XCP was negotiated.
    pub xcp_enabled: bool,
    /// IPv4 XCP options received (XCP receiver).
    pub xcp_options_seen: u64,
    /// XCP-Echo options received and handed to the controller (XCP
    /// sender).
    pub xcp_echoes: u64,
    /// RTT indicators sent.
    pub indicators_sent: u64,
    /// Times a KA-mode send was blocked by the window rather than pacing
    /// (should stay 0: the KA window never limits the paced rate).
    pub ka_cwnd_limited: u64,
    /// Challenge ACKs sent (RFC 5961).
    pub challenge_acks: u64,
    /// Out-of-order segments dropped because of the range cap.
    pub ooo_dropped: u64,
    /// Events dropped because the queue was full.
    pub events_dropped: u64,
    /// ECN was negotiated (RFC 3168).
    pub ecn: bool,
    /// CE-marked data segments received (receiver side).
    pub ce_received: u64,
    /// ACKs with ECE received (sender side; the echo repeats until our CWR
    /// arrives, so one mark usually yields several).
    pub ece_received: u64,
    /// ECEs reacted to: window reductions (in KA mode: the switch to TCP
    /// mode and its reduction), at most one per window of data.
    pub ece_reactions: u64,
    /// Segments sent with CWR.
    pub cwr_sent: u64,
}

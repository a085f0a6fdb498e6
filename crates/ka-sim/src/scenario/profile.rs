//! Named TCP profiles: documented bundles of [`TcpKnobs`] that reproduce
//! the TCP of a simulator era (DESIGN §9.2). A profile is chosen for the
//! whole scenario (`[tcp] profile = "ns3-18"`) or for one group
//! (`tcp_profile = "ns2"` on a `[[group]]`, which then governs that
//! group's senders and receivers); knobs set explicitly in `[tcp]` (and a
//! group's `initial_window`) override the profile's.
//!
//! | knob | `modern` | `ns3-18` | `ns2` |
//! |---|---|---|---|
//! | initial window (segments) | 10 | 1 | 2 |
//! | initial ssthresh (bytes) | unbounded | 65 535 | 20 000 (`window_`) |
//! | delayed ACK | 40 ms, every 2nd | 200 ms, every 2nd | off |
//! | first data segment ACKed at once | no | yes | (no delayed ACKs) |
//! | window update on read | yes | no | yes |
//! | cwnd growth | byte counting | per ACK | per ACK |
//! | min RTO | 1 s | 200 ms | 200 ms |
//! | RTO before the first sample | 1 s | 3 s | 3 s |
//! | clock granularity | 1 ms | 1 ms | 10 ms |
//! | SACK / timestamps / window scaling | on / on / on | off / off / off | off / off / off |
//! | receive window cap | 4 MiB buffer | 65 535 (128 KiB buffer, no scaling) | 20 000 bytes |
//!
//! The segment size is the scenario's `packet_bytes`, not a profile knob:
//! flow sizes are counted in its packets (ns-3.18's default `SegmentSize`
//! is 536, but the KA paper sets 1500-byte packets; ns-2's `packetSize_`
//! is 1000 payload bytes plus 40 header bytes, i.e. `packet_bytes = 1040`
//! with timestamps off).

use serde::{Deserialize, Serialize};

use super::TcpKnobs;

/// A named bundle of TCP knobs (see the module docs for the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TcpProfile {
    /// `ka-endpoint`'s own defaults, unchanged (RFC 6928 IW10, byte
    /// counting, 40 ms delayed ACKs, min RTO 1 s, SACK, timestamps and
    /// window scaling on, 4 MiB buffers in the simulator).
    #[default]
    #[serde(rename = "modern")]
    Modern,
    /// The defaults of ns-3.18's TCP (`TcpNewReno`, the default socket
    /// type of `TcpL4Protocol` in 3.18), on which the KA paper's code was
    /// a patch. Each value was read in ns-3's git history at tag
    /// `ns-3.18` (`src/internet/model/`):
    ///
    /// * `tcp-socket.cc`: `InitialCwnd` 1, `SlowStartThreshold` 0xffff,
    ///   `DelAckTimeout` 0.2 s, `DelAckCount` 2, `SndBufSize` and
    ///   `RcvBufSize` 131 072, `ConnTimeout` 3 s (the SYN's timer),
    ///   `SegmentSize` 536 (not used: see the module docs).
    /// * `rtt-estimator.cc`: `MinRTO` 0.2 s (the 1 s `MinRto` of
    ///   `TcpSocketBase` arrived in 3.23), `InitialEstimation` 1 s;
    ///   `RttMeanDeviation` gain 0.1 and RTO = est + 4·var with the first
    ///   variance = the first sample (not modelled: ka-endpoint uses
    ///   RFC 6298's gains).
    /// * `tcp-socket-base.cc`: `MaxWindowSize` 65 535 and no TCP options
    ///   at all (no `tcp-option*.cc` before 3.21: no window scaling or
    ///   timestamps; SACK came in 3.27), so the advertised window is
    ///   `min(free receive buffer, 65535)`; the first data segment after
    ///   the handshake is acknowledged at once (`m_delAckCount =
    ///   m_delAckMaxCount`); `Recv` sends no window update.
    /// * `tcp-newreno.cc`: `cwnd += SegmentSize` per ACK in slow start and
    ///   `max(1, SMSS²/cwnd)` per ACK in congestion avoidance (per-ACK
    ///   counting); NewReno partial-ACK recovery; `LimitedTransmit` false
    ///   (ka-endpoint always does RFC 3042 limited transmit: not modelled).
    #[serde(rename = "ns3-18")]
    Ns3_18,
    /// ns-2's `Agent/TCP/Newreno` with the default `Agent/TCPSink` (the
    /// era of the DCC seed), from `tcl/lib/ns-default.tcl` (ns-2.35) and
    /// `tcp.cc`: `window_` 20 packets (the receiver's window: with
    /// `packetSize_` 1000, 20 000 bytes), `windowInit_` 2 (since 2001),
    /// `ssthresh_` starts at `window_` (`TcpAgent::reset`), `minrto_`
    /// 0.2 s (since 2004), `rtxcur_init_` 3 s, `tcpTick_` 0.01 s,
    /// `timestamps_` false, no SACK (that is `Agent/TCP/Sack1`), per-ACK
    /// window growth, and a sink that acknowledges every packet (delayed
    /// ACKs are the separate `TCPSink/DelAck`). ns-2's one-way agents have
    /// no handshake; ka-endpoint's SYN exchange adds one RTT (not
    /// modelled away).
    #[serde(rename = "ns2")]
    Ns2,
}

impl TcpProfile {
    /// The profile's name as scenarios spell it.
    pub fn name(self) -> &'static str {
        match self {
            TcpProfile::Modern => "modern",
            TcpProfile::Ns3_18 => "ns3-18",
            TcpProfile::Ns2 => "ns2",
        }
    }

    /// The knobs the profile sets (unset = `ka-endpoint`'s default).
    pub fn knobs(self) -> TcpKnobs {
        match self {
            TcpProfile::Modern => TcpKnobs::default(),
            TcpProfile::Ns3_18 => TcpKnobs {
                initial_window: Some(1),
                initial_ssthresh_bytes: Some(65_535),
                delayed_ack_ms: Some(200.0),
                min_rto_ms: Some(200.0),
                initial_rto_ms: Some(3000.0),
                sack: Some(false),
                timestamps: Some(false),
                window_scale: Some(false),
                byte_counting: Some(false),
                quick_ack_first_data: Some(true),
                window_update_on_read: Some(false),
                buffer_bytes: Some(131_072),
                ..TcpKnobs::default()
            },
            TcpProfile::Ns2 => TcpKnobs {
                initial_window: Some(2),
                initial_ssthresh_bytes: Some(NS2_WINDOW_BYTES),
                delayed_ack_ms: Some(0.0),
                min_rto_ms: Some(200.0),
                initial_rto_ms: Some(3000.0),
                clock_granularity_ms: Some(10.0),
                sack: Some(false),
                timestamps: Some(false),
                window_scale: Some(false),
                byte_counting: Some(false),
                receive_window_bytes: Some(NS2_WINDOW_BYTES),
                ..TcpKnobs::default()
            },
        }
    }
}

/// ns-2's `window_` (20 packets) times its `packetSize_` (1000 bytes).
pub const NS2_WINDOW_BYTES: usize = 20 * 1000;

impl std::fmt::Display for TcpProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

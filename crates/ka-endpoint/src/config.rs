//! Configuration of connections ([`TcpConfig`], [`KaConfig`]) and of the
//! [`Stack`](crate::Stack) ([`StackConfig`], [`ReassemblyConfig`]).
//!
//! Every buffer a peer can make us fill has a cap here; the defaults are
//! listed on each field.

use crate::cc::CcAlgorithm;
use ka_codec::scale::Scale;
use std::time::Duration;

/// Kick-Ass behaviour of a connection (DESIGN §6.2, §6.3).
#[derive(Debug, Clone, Copy)]
pub struct KaConfig {
    /// Offer KA (KA-Permitted in SYN / SYN-ACK). `false` = plain TCP that
    /// never sends any KA option. Default `true`.
    pub enabled: bool,
    /// The rate scale used to decode KA-Rate codes. Default [`Scale::PAPER`].
    pub scale: Scale,
    /// Interval between RTT indicators while there is data to send.
    /// Default 100 ms (paper §II-B).
    pub indicator_interval: Duration,
    /// KA-mode window headroom: `cwnd = max(gain · R · srtt, 2·MSS) +
    /// cwnd_extra_segments · MSS`. Default 1.2 (DESIGN §6.3).
    pub cwnd_gain: f64,
    /// Segments added to the KA window for ACK granularity (see
    /// `Connection` docs). Default 3.
    pub cwnd_extra_segments: usize,
    /// A KA receiver acknowledges at once when a fresh signal (a new leading
    /// fragment) arrived since its last ACK, instead of holding the echo
    /// for the delayed-ACK timer (which would delay the sender's view of
    /// the rate by up to 40 ms and fake signals after a silence). Default
    /// true. Through a KA router every data packet carries a signal, so
    /// this means one ACK per data segment on KA paths.
    pub ack_fresh_signals: bool,
    /// KA → TCP when no fresh signal for more than `silence_srtts · srtt`.
    /// Default 1.0 (paper §II-C2: "more than a RTT").
    pub silence_srtts: f64,
    /// The silence that ends KA mode is never shorter than this. Default 0
    /// (the paper's rule alone, as ka-sim runs it); the `ka-endpoint`
    /// binary sets 10 ms: on a real host a sub-millisecond flow's signals
    /// come once per millisecond (DESIGN §3.9) and a few milliseconds of
    /// scheduling delay would otherwise end KA mode (DESIGN §6.3).
    pub silence_floor: Duration,
    /// Leaving KA mode by silence is a congestion event for the TCP-mode
    /// controller: the window is set to the data in flight, reduced as for
    /// one loss (CUBIC: × 0.7; NewReno: halved), and the controller starts
    /// from there as from its own window (CUBIC's W_max is the reduced
    /// window), instead of continuing at the flight. A KA router falls
    /// silent when its queue reaches the TCP-mode threshold with legacy
    /// traffic in it (DESIGN §3.6), which is congestion; a KA flow held at
    /// the fair-share floor (§3.6.1) would otherwise enter TCP mode with a
    /// larger window than a TCP newcomer in its place reaches (DESIGN
    /// §6.3.1). Default false (the paper's rule, as ka-sim runs the
    /// paper's figures); the `ka-endpoint` binary sets it.
    pub silence_backoff: bool,
    /// Active opens use the native-RCP carrier (DESIGN §7.1; the paper's
    /// RCP baseline) instead of KA fragments: the SYN offers RCP-Permitted
    /// instead of KA-Permitted, the SYN and data carry the IPv4 RCP option,
    /// and the rate comes back in RCP-Echo options. Same mode machine as KA.
    /// Requires `enabled`. Passive opens answer either offer whenever
    /// `enabled` is set, whatever this says. Default false.
    pub native_rcp: bool,
    /// A flow that left KA mode by loss may return once the path has shown
    /// no standing queue for this many srtts (besides the paper's
    /// `cwnd/srtt ≥ R`; see `conn::ka`). Long enough to outlast the quiet
    /// phases of a legacy queue shared with synchronised TCP flows.
    /// Default 8.
    pub clear_srtts: f64,
    /// A loss (or an ECN echo) in KA mode ends KA mode (paper §II-C: the
    /// network dropped a packet, so the signal cannot be trusted). Default
    /// true. `false` keeps the connection at the signalled rate through
    /// losses, retransmitting what was lost, and leaves KA mode only by a
    /// retransmission timeout or by silence: for hosts whose whole path
    /// beyond the first hop is another congestion controller's business,
    /// such as the sites behind a DCC middlebox (DESIGN §5.3), which owns
    /// the middle segment and answers its losses by lowering the rate it
    /// signals.
    pub loss_leaves_ka: bool,
}

impl Default for KaConfig {
    fn default() -> Self {
        KaConfig {
            enabled: true,
            scale: Scale::PAPER,
            indicator_interval: Duration::from_millis(100),
            cwnd_gain: 1.2,
            cwnd_extra_segments: 3,
            ack_fresh_signals: true,
            silence_srtts: 1.0,
            silence_floor: Duration::ZERO,
            silence_backoff: false,
            native_rcp: false,
            clear_srtts: 8.0,
            loss_leaves_ka: true,
        }
    }
}

/// Whether a connection uses ECN (RFC 3168), modelled on Linux's
/// `net.ipv4.tcp_ecn` (0 / 2 / 1).
///
/// ECN is on for a connection only if both ends agree in the handshake
/// (an ECN-setup SYN answered by an ECN-setup SYN-ACK); see the
/// `conn::ecn` module docs for what it then does.
///
/// The default is [`EcnMode::Accept`], Linux's default: answering a peer
/// that asks costs nothing and lets an ECN sender (e.g. a Linux host with
/// `tcp_ecn = 1`) get marks instead of drops, while asking on our own
/// active opens stays opt-in because (a) an ECN-setup SYN changes the bytes
/// of every SYN and data packet, so the simulator's scenarios reproduce
/// the paper (whose TCP had no ECN) only if it is off unless a scenario
/// says `[tcp] ecn = true`, and (b) some middleboxes still drop or reset
/// ECN-setup SYNs (RFC 3168 §6.1.1.1, RFC 8311 §1) — we fall back on a
/// SYN retransmission, at the cost of one SYN timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EcnMode {
    /// Never ECN: SYNs and SYN-ACKs are never ECN-setup (`tcp_ecn = 0`).
    Off,
    /// Answer an ECN-setup SYN with an ECN-setup SYN-ACK; never ask on
    /// active opens (`tcp_ecn = 2`).
    #[default]
    Accept,
    /// Ask on active opens (ECN-setup SYN) and accept on passive ones
    /// (`tcp_ecn = 1`).
    On,
}

impl EcnMode {
    /// Whether an active open sends an ECN-setup SYN.
    pub fn requests(self) -> bool {
        self == EcnMode::On
    }

    /// Whether a passive open answers an ECN-setup SYN in kind.
    pub fn accepts(self) -> bool {
        self != EcnMode::Off
    }
}

/// Parameters of one TCP connection.
#[derive(Debug, Clone, Copy)]
pub struct TcpConfig {
    /// IP MTU of the path (bytes); our MSS is derived from it
    /// (`mtu − IP header − 20`). Default 1500.
    pub mtu: usize,
    /// Send buffer cap (bytes queued by `write` and not yet acknowledged).
    /// Default 1 MiB.
    pub send_buffer: usize,
    /// Receive buffer cap (bytes received and not yet read, including
    /// out-of-order data, which always lies inside the advertised window).
    /// Default 1 MiB.
    pub recv_buffer: usize,
    /// Cap on distinct out-of-order ranges held (adjacent ranges are merged).
    /// Default 256.
    pub max_ooo_ranges: usize,
    /// Initial congestion window in segments (RFC 6928: 10).
    pub initial_window_segments: usize,
    /// Initial slow-start threshold in bytes; `None` = "arbitrarily high"
    /// (RFC 5681 §3.1). Older stacks used 65 535 (e.g. ns-3 before 3.26).
    /// Values below 2·MSS are raised to 2·MSS. Default `None`.
    pub initial_ssthresh: Option<usize>,
    /// TCP-mode congestion control (NewReno, CUBIC or PCC). Default NewReno.
    pub cc: CcAlgorithm,
    /// NewReno window growth by bytes acknowledged (RFC 3465/5681, default
    /// true) or per ACK (false: RFC 2581 and ns-3 before 3.25; see
    /// [`NewReno`](crate::NewReno)). CUBIC ignores it.
    pub byte_counting: bool,
    /// CUBIC ends slow start early on a delay increase or an ACK train, as
    /// Linux's CUBIC does ([`CubicConfig::hystart`](crate::cc::CubicConfig::hystart)).
    /// Default false; the other controllers ignore it.
    pub hystart: bool,
    /// Pace in TCP mode at the controller's `pacing_rate()`. Default off
    /// (plain window-limited bursts, like a classic TCP). A rate-based
    /// controller ([`CcAlgorithm::Pcc`]) is paced whatever this says.
    pub tcp_pacing: bool,
    /// RTO before the first RTT sample (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// Lower bound of the RTO (RFC 6298: 1 s; Linux: 200 ms). Default 1 s.
    pub min_rto: Duration,
    /// Upper bound of the RTO, also with backoff. Default 60 s.
    pub max_rto: Duration,
    /// Clock granularity `G` of RFC 6298. Default 1 ms.
    pub clock_granularity: Duration,
    /// Delayed-ACK timer; `None` acknowledges every segment. Default 40 ms.
    pub delayed_ack: Option<Duration>,
    /// Acknowledge at least every this many full-sized segments. Default 2.
    pub ack_every: usize,
    /// Acknowledge the first data segment after the handshake at
    /// once instead of arming the delayed-ACK timer, as ns-3 does: its
    /// `TcpSocketBase` presets the delayed-ACK counter to `DelAckCount` when
    /// the handshake completes (`ProcessSynSent` and `ProcessSynRcvd`,
    /// `m_delAckCount = m_delAckMaxCount`, "Always respond to first data
    /// packet to speed up the connection"; in every release since 3.10,
    /// 3.44 included), so a sender with a one-segment initial window does
    /// not wait a delayed-ACK timeout for its first ACK. Default false: with
    /// `window_update_on_read` the first read already acknowledges at once
    /// (the SYN-ACK's window is unscaled, so the read opens it).
    ///
    /// One difference from ns-3: there, any ACK this side sends before the
    /// first data arrives (say, data of its own) spends the preset; here
    /// only the first data segment does.
    pub quick_ack_first_data: bool,
    /// Send a window update when `read` opens the receive window by a
    /// useful amount (RFC 1122 §4.2.3.3; default true). With false, a read
    /// only triggers an ACK if the window last advertised was below one MSS
    /// (the sender may be stalled); otherwise the opened window rides on the
    /// next ACK that arriving data triggers — the behaviour of ns-3, whose
    /// `TcpSocketBase::Recv` only extracts from the receive buffer and never
    /// sends (3.44 included). Pair it with `quick_ack_first_data` to get
    /// ns-3's first ACK.
    pub window_update_on_read: bool,
    /// TIME-WAIT duration (2·MSL). Default 60 s.
    pub time_wait: Duration,
    /// How long FIN-WAIT-2 may last before the connection is dropped.
    /// Default 60 s.
    pub fin_wait2_timeout: Duration,
    /// SYN (and SYN-ACK) retransmissions before giving up. Default 6.
    pub syn_retries: u32,
    /// Consecutive RTO expiries without any ACK before the connection is
    /// aborted. Default 15.
    pub max_retransmits: u32,
    /// Offer SACK (RFC 2018). Default true.
    pub sack: bool,
    /// Tail loss probes (RFC 8985 §7; `conn::tlp`): with SACK, probe two
    /// srtts after the sender goes quiet with data in flight, so a lost
    /// tail is repaired by RACK instead of the RTO. Default false (the
    /// paper's ns-3 TCP has none); the `ka-endpoint` binary turns it on.
    pub tlp: bool,
    /// Offer timestamps (RFC 7323). Default true.
    pub timestamps: bool,
    /// Offer window scaling (RFC 7323). Default true.
    pub window_scale: bool,
    /// Challenge ACKs (RFC 5961) per connection per second. Default 10.
    pub challenge_acks_per_sec: u32,
    /// Cap on queued [`Event`](crate::Event)s per connection (the oldest
    /// informational events are dropped beyond it). Default 256.
    pub max_events: usize,
    /// ECN (RFC 3168) negotiation policy. Default [`EcnMode::Accept`]
    /// (see there for why).
    pub ecn: EcnMode,
    /// Kick-Ass.
    pub ka: KaConfig,
    /// XCP (DESIGN §7.2); the sender side is chosen by `cc`.
    pub xcp: XcpConfig,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mtu: 1500,
            send_buffer: 1 << 20,
            recv_buffer: 1 << 20,
            max_ooo_ranges: 256,
            initial_window_segments: 10,
            initial_ssthresh: None,
            cc: CcAlgorithm::NewReno,
            byte_counting: true,
            hystart: false,
            tcp_pacing: false,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            delayed_ack: Some(Duration::from_millis(40)),
            ack_every: 2,
            quick_ack_first_data: false,
            window_update_on_read: true,
            time_wait: Duration::from_secs(60),
            fin_wait2_timeout: Duration::from_secs(60),
            syn_retries: 6,
            max_retransmits: 15,
            sack: true,
            tlp: false,
            timestamps: true,
            window_scale: true,
            challenge_acks_per_sec: 10,
            max_events: 256,
            ecn: EcnMode::default(),
            ka: KaConfig::default(),
            xcp: XcpConfig::default(),
        }
    }
}

/// XCP behaviour of a connection (DESIGN §7.2; see `conn::xcp`). Whether
/// this side *sends* with XCP is [`TcpConfig::cc`]
/// ([`CcAlgorithm::Xcp`], [`CcAlgorithm::XcpRate`]); an active open with an
/// XCP controller offers XCP-Permitted instead of KA (KA is off on it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XcpConfig {
    /// A passive open answers an XCP-Permitted offer (IPv4 only), which
    /// makes this side echo the peer's feedback. Default true: the receiver
    /// role costs nothing unless a peer asks for it.
    pub accept: bool,
    /// The sender's desired rate, bytes per second: the window it asks the
    /// routers for is at most this times srtt. `None` (default): as much as
    /// the peer's receive window and our send buffer allow.
    pub desired_rate: Option<f64>,
}

impl Default for XcpConfig {
    fn default() -> Self {
        XcpConfig {
            accept: true,
            desired_rate: None,
        }
    }
}

/// IP fragment reassembly limits (DESIGN §6.2).
#[derive(Debug, Clone, Copy)]
pub struct ReassemblyConfig {
    /// Total bytes of fragment payload held across all datagrams in
    /// progress. Default 4 MiB.
    pub max_bytes: usize,
    /// Lifetime of an incomplete datagram. Default 30 s.
    pub timeout: Duration,
    /// Datagrams in progress at once. Default 256.
    pub max_datagrams: usize,
    /// Largest reassembled datagram payload accepted. Default 65 535.
    pub max_datagram_len: usize,
}

impl Default for ReassemblyConfig {
    fn default() -> Self {
        ReassemblyConfig {
            max_bytes: 4 << 20,
            timeout: Duration::from_secs(30),
            max_datagrams: 256,
            max_datagram_len: 65_535,
        }
    }
}

/// Parameters of a [`Stack`](crate::Stack).
#[derive(Debug, Clone, Copy)]
pub struct StackConfig {
    /// Defaults for every connection.
    pub tcp: TcpConfig,
    /// Secret for RFC 6528 ISNs, timestamp offsets and ephemeral ports.
    /// [`StackConfig::default`] draws it from the OS-seeded
    /// `std::collections::hash_map::RandomState`; the simulator must set a
    /// fixed value to be deterministic.
    pub isn_secret: [u8; 16],
    /// Connections (in any state, including TIME-WAIT). Default 4096.
    pub max_connections: usize,
    /// Connections in SYN-RECEIVED at once (SYN-flood bound). Default 128.
    pub max_half_open: usize,
    /// RSTs sent in reply to segments for no connection, per second.
    /// Default 100.
    pub rst_per_sec: u32,
    /// Queued outgoing RSTs (beyond: dropped). Default 64.
    pub max_queued_rsts: usize,
    /// IPv4 TTL / IPv6 hop limit of outgoing packets. Default 64.
    pub ttl: u8,
    /// Fragment reassembly limits.
    pub reassembly: ReassemblyConfig,
    /// Leave the TCP checksum of every segment the stack's connections
    /// send to the device — a device capability, so it holds whatever
    /// [`TcpConfig`] a connection was opened with: the field holds the
    /// pseudo-header's sum (as the kernel's own TCP leaves a
    /// `CHECKSUM_PARTIAL` packet) instead of the full checksum, which saves
    /// a pass over every payload byte. Only for packets written through
    /// something that completes it: a TUN device with offloads, written
    /// through `ka_io::runs::RunWriter`, as the driver does with
    /// `DriverConfig::offload` (DESIGN §6.10). Default false.
    pub checksum_offload: bool,
}

impl Default for StackConfig {
    fn default() -> Self {
        StackConfig {
            tcp: TcpConfig::default(),
            isn_secret: random_secret(),
            max_connections: 4096,
            max_half_open: 128,
            rst_per_sec: 100,
            max_queued_rsts: 64,
            ttl: 64,
            reassembly: ReassemblyConfig::default(),
            checksum_offload: false,
        }
    }
}

impl StackConfig {
    /// Defaults with a fixed secret (deterministic ISNs), for simulations
    /// and tests.
    pub fn deterministic(secret: [u8; 16]) -> Self {
        StackConfig {
            isn_secret: secret,
            ..StackConfig::default()
        }
    }
}

/// 128 bits from the process's randomly seeded `RandomState`.
fn random_secret() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        for (d, b) in chunk.iter_mut().zip(h.finish().to_le_bytes()) {
            *d = b;
        }
    }
    out
}

//! # ka-endpoint — the Kick-Ass end host
//!
//! A sans-IO userspace TCP with the Kick-Ass (KA) extensions of DESIGN §6.
//! Nothing in this crate reads a clock, sleeps, spawns or touches a socket:
//! time comes in as a [`std::time::Instant`] argument, packets go in and out
//! as byte slices. The tokio/TUN driver and the simulator drive the same core.
//!
//! ## Layers
//!
//! * [`Stack`] — a host: IPv4/IPv6 in and out (headers via
//!   `ka_codec::wire`), demultiplexing by 4-tuple, listeners, RFC 6528 ISNs,
//!   RSTs for strays (rate limited), fragment reassembly
//!   ([`stack::reasm`]) that records the length of every leading fragment
//!   for its connection *before* reassembling (the KA signal).
//! * [`Connection`] — one TCP connection as a state machine (handshake with
//!   MSS / window scale / SACK / timestamps / KA-Permitted, RFC 6298 RTO,
//!   NewReno, CUBIC or PCC Vivace, SACK scoreboard, flow control, FIN/RST/TIME-WAIT,
//!   RFC 5961, RFC 3168 ECN) plus the KA receiver echo and the sender's KA/TCP mode
//!   machine ([`Mode`], [`ModeChange`]).
//! * [`cc`] — the TCP-mode congestion controllers behind [`Controller`];
//!   [`rtt`] — the RFC 6298 estimator.
//!
//! ## Driving it
//!
//! After every input (`handle_packet`, `handle_timeout`, or an application
//! call on a connection) drain [`Stack::poll_transmit`] until `None`, then
//! sleep until [`Stack::poll_timeout`]. Events (connected, readable, mode
//! changes, closed) come from [`Stack::poll_event`].
//!
//! ```
//! use ka_endpoint::{Event, Stack, StackConfig};
//! use std::time::{Duration, Instant};
//!
//! let t0 = Instant::now();
//! let mut client = Stack::new(StackConfig::deterministic([1; 16]), t0);
//! let mut server = Stack::new(StackConfig::deterministic([2; 16]), t0);
//! server.listen(80);
//! let h = client
//!     .connect(t0, "10.0.0.1:0".parse().unwrap(), "10.0.0.2:80".parse().unwrap())
//!     .unwrap();
//! client.conn_mut(h).unwrap().write(b"hello");
//! // a lossless wire with 1 ms one-way delay, driven by hand
//! let mut now = t0;
//! let mut buf = vec![0u8; 1500];
//! let mut got = Vec::new();
//! for _ in 0..20 {
//!     now += Duration::from_millis(1);
//!     while let Some(n) = client.poll_transmit(now, &mut buf) {
//!         server.handle_packet(now, &buf[..n]);
//!     }
//!     while let Some(n) = server.poll_transmit(now, &mut buf) {
//!         client.handle_packet(now, &buf[..n]);
//!     }
//!     while let Some((sh, ev)) = server.poll_event() {
//!         if ev == Event::Readable {
//!             let mut r = [0u8; 64];
//!             let n = server.conn_mut(sh).unwrap().read(&mut r);
//!             got.extend_from_slice(&r[..n]);
//!         }
//!     }
//!     client.handle_timeout(now);
//!     server.handle_timeout(now);
//! }
//! assert_eq!(got, b"hello");
//! ```
//!
//! ## Choices DESIGN leaves open (and why)
//!
//! * **DF**: a KA connection never sets DF except on RTT indicators, so KA
//!   routers can fragment its data; a plain-TCP connection sets DF on every
//!   packet (as Linux does), except packets whose length falls in the
//!   indicator range 600..=611, which KA routers would take for indicators.
//!   Over IPv6 (no DF bit) data segments avoid total lengths 600..=611.
//! * **KA window**: `max(1.2 · R · srtt, 2·MSS) + 3·MSS` — the extra
//!   segments cover delayed-ACK granularity at a few packets per RTT
//!   ([`KaConfig::cwnd_extra_segments`]).
//! * **Silence**: no fresh signal for more than one srtt (at least three
//!   packet times at R) plus srtt/16, measured from the last fresh echo —
//!   right after entering KA mode from the first signal-carrying segment
//!   sent. KA receivers ACK at once when a fresh signal is pending
//!   ([`KaConfig::ack_fresh_signals`]), so echoes are not held 40 ms by the
//!   delayed-ACK timer.
//! * **Sparse signals** (routers that signal each flow once per RTT,
//!   DESIGN §3.9): once fresh echoes keep arriving after two or more
//!   segments without one, the silence rule waits the longest gap between
//!   them longer (at most 2 srtt). Per-packet signals never trigger it.
//!   See the `conn::sparse` module docs.
//! * **Coming back after a loss** deviates from DESIGN §6.3: besides
//!   `cwnd/srtt ≥ R`, a flow returns once its loss episode is over and the
//!   path is clear, or R falls, at a rate capped by what it had before; a
//!   loss while the routers were silent counts as silence. See the
//!   `conn::ka` module docs.
//! * **SMSS** of the congestion controller is the negotiated MSS less the
//!   12 bytes of the timestamps option when it is on (1448 on a 1500-byte
//!   path): RFC 5681 §2 excludes options, and Linux (`mss_cache`) and ns-3
//!   (`SegmentSize`) count windows in the payload a segment really
//!   carries. [`Connection::mss`] stays the negotiated value.
//! * **RTT indicators** start with the first fresh signal (a DF indicator
//!   among the first segments would carry no signal).
//! * **Native RCP** ([`KaConfig::native_rcp`], DESIGN §7.1): the same mode
//!   machine on IPv4 RCP options and RCP-Echo TCP options.
//! * **XCP** ([`CcAlgorithm::Xcp`], [`CcAlgorithm::XcpRate`], DESIGN §7.2):
//!   a controller ([`Xcp`]) behind the same trait, not the KA mode machine
//!   (an XCP connection does no KA). The receiver echoes the *sum* of the
//!   `H_feedback` of the data packets since its last ACK; the sender asks
//!   for the window the peer lets it use within one RTT. See `conn::xcp`
//!   and [`Xcp`].
//! * **Indicators** go out when due even between pacing slots (still
//!   charged to the pacer), so they keep their 100 ms rhythm at low rates —
//!   but never two in a row: below the indicators' own rate (~48 kbit/s,
//!   reachable with a deployment scale below the paper's 120 kbit/s) back-
//!   to-back indicators would starve the stampable segments, and with them
//!   every fresh signal.
//! * **ECN** (RFC 3168, DESIGN §6.4; [`EcnMode`]): by default a
//!   connection accepts ECN when the peer asks but does not ask itself
//!   (Linux's `tcp_ecn = 2`): asking is opt-in so that simulated scenarios
//!   keep the paper's plain TCP, and because some middleboxes still drop
//!   ECN-setup SYNs. Data is sent ECT(0) (never retransmissions, pure ACKs,
//!   SYNs or window probes); the receiver echoes a CE mark with ECE on every
//!   ACK until CWR arrives and ACKs CE-marked data at once (as Linux does);
//!   the sender reacts at most once per window of data with the
//!   controller's fast-recovery reduction (NewReno ½, CUBIC β), without
//!   retransmitting, and in KA mode an echo ends KA mode like a loss
//!   ([`ModeReason::Ecn`], paper §II-C3). A retransmitted SYN goes without
//!   ECN-setup (RFC 3168 §6.1.1.1). Fragments: CE on any piece survives
//!   reassembly. Counters: [`ConnStats`]'s `ce_received`, `ece_received`,
//!   `ece_reactions`, `cwr_sent`.
//! * **Pacing**: a next-departure-time pacer; in KA mode at R with 3 ms of
//!   burst credit, in TCP mode (if enabled, and always for the rate-based
//!   PCC) at the controller's rate with 1 ms. In KA mode a driver that wakes late catches up on at most 3 ms
//!   of missed sending time: with 1 ms, wake-ups 2–5 ms late on a busy
//!   2-core host cost a paced flow 4–5 % of R; with 5 ms the catch-up
//!   bursts built queues that the router's RCP answered by lowering R.
//!
//! ## Memory a peer can make us use (all configurable)
//!
//! | what | cap (default) |
//! |------|---------------|
//! | send buffer (our own writes) | [`TcpConfig::send_buffer`] 1 MiB |
//! | receive buffer incl. out-of-order data | [`TcpConfig::recv_buffer`] 1 MiB |
//! | out-of-order ranges | [`TcpConfig::max_ooo_ranges`] 256 |
//! | events queued per connection | [`TcpConfig::max_events`] 256 |
//! | connections / half-open | [`StackConfig::max_connections`] 4096 / [`StackConfig::max_half_open`] 128 |
//! | queued RSTs / RSTs per second | 64 / 100 |
//! | reassembly bytes / time / datagrams | 4 MiB / 30 s / 256 ([`ReassemblyConfig`]) |
//! | rate-based XCP feedback ramps | [`Xcp::MAX_RAMPS`] 4096 (fixed) |
//!
//! A connection is removed from its [`Stack`] when its
//! [`Event::Closed`] is returned by [`Stack::poll_event`]; an application
//! that never polls events keeps closed connections (bounded by
//! `max_connections`).
//!
//! ## Memory of an idle or finished connection
//!
//! The caps above bound a busy connection. Its buffers (send buffer,
//! receive buffer, retransmission scoreboard) grow on demand and shrink
//! back geometrically as they drain, keeping at most 4 KiB of spare
//! capacity each once empty, so an **established connection with nothing
//! in flight holds at most 16 KiB** (the state machine, its congestion
//! controller and the drained buffers: about 12 KB; `tests/memory.rs`
//! checks the bound after a 2 MiB transfer). A **finished** connection
//! (removed from the stack) holds nothing. A stack with n connections
//! costs O(log n) per call: a timer heap and the sets of connections that
//! may have a packet or an event replace scans of the whole table
//! (DESIGN §6.8).
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    warn(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod cc;
pub mod config;
pub mod conn;
pub mod isn;
pub mod probe;
pub mod rtt;
pub mod stack;
pub mod udp;

pub use cc::{
    Bbr, BbrConfig, BbrState, CcAlgorithm, Controller, Cubic, NewReno, Pcc, PccConfig, Xcp,
    XcpVariant,
};
pub use config::{EcnMode, KaConfig, ReassemblyConfig, StackConfig, TcpConfig, XcpConfig};
pub use conn::{
    CloseReason, ConnStats, Connection, Event, LeftBy, Mode, ModeChange, ModeReason, State,
    Transmit,
};
pub use rtt::RttEstimator;
pub use stack::{ConnHandle, ConnectError, Stack, StackStats};
#[cfg(feature = "cli")]
pub mod driver;

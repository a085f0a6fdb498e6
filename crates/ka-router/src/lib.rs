//! # ka-router — the Kick-Ass router data plane
//!
//! The sans-IO router core of DESIGN §4. One [`Port`] per direction parses
//! and classifies packets, learns the path RTT from RTT-indicator packets,
//! queues them (drop-tail, RED or FQ-CoDel), serialises at capacity C, runs a pluggable
//! [`RateController`] ([`Rcp`] by default) and, on dequeue, fragments IPv4 /
//! IPv6 packets so that the leading fragment's payload length encodes the
//! fair-share rate (Kick-Ass, paper §II). A thin tokio/TUN binary
//! (`ka-router`, feature `cli`) and the simulator drive the same core.
//! Nothing here reads a clock, sleeps or touches a socket: time is the
//! `Instant` the caller passes in.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use ka_router::{Port, PortConfig, PushOutcome};
//!
//! let t0 = Instant::now();
//! let mut port = Port::new(PortConfig::new(100_000_000), t0); // 100 Mbit/s
//! // A 1500-byte IPv4 packet (checksum filled in by a real sender).
//! let mut pkt = vec![0u8; 1500];
//! pkt[0] = 0x45;
//! pkt[2..4].copy_from_slice(&1500u16.to_be_bytes());
//! pkt[8] = 64;
//! pkt[9] = 17;
//! let c = ka_codec::wire::checksum::checksum(&pkt[..20]);
//! pkt[10..12].copy_from_slice(&c.to_be_bytes());
//! assert_eq!(port.push(t0, pkt), PushOutcome::Queued);
//! // R₀ = 5 % of C = 625 B/ms → L = 128·ln(625/12.4392) rounded down to 8s.
//! let t = port.poll_timeout().unwrap();
//! port.handle_timeout(t);
//! let mut out = Vec::new();
//! while let Some(t) = port.poll_timeout() {
//!     while let Some(p) = port.poll_transmit(t) { out.push(p); }
//! }
//! assert_eq!(out.len(), 2);                          // split on dequeue
//! assert_eq!(out[0].len(), 20 + 496);                // leading payload = L
//! assert_eq!(out[1].len(), 20 + 1480 - 496);         // the rest
//! ```
//!
//! ## Data path of one port (DESIGN §4.1, §8.1)
//!
//! ```text
//! push(now, pkt) → ingress (validate, TTL−1) → signalling stage sees the arrival
//!   (RTT indicator? → d; y) → queue discipline (drop-tail | RED | FQ-CoDel)
//!   → shaper: dequeue when the link is free → signalling stage on dequeue
//!   (KA: stamp = fragment; native RCP: lower the option; XCP: lower
//!   H_feedback) → serialise at C
//!   → delay line (+delay) → poll_transmit(now)
//! ```
//!
//! The port is a pipeline of swappable stages: the queue discipline is a
//! [`QueueDiscipline`] trait object ([`qdisc`], one file per discipline)
//! and the signalling is a [`Signaller`] trait object ([`signal`]: the
//! explicit-rate [`RateSignal`] with the KA, native-RCP or no carrier, or
//! XCP's window-feedback controller [`XcpSignal`], DESIGN §8.4).
//! Any discipline combines with any signalling; the KA TCP-mode detector
//! and RCP's q read the discipline's occupancy, whatever it is. The
//! sojourn time of every dequeued packet is recorded
//! ([`Port::sojourn`]), whatever the discipline.
//!
//! **Ingress rule** (never panics; every case counted in [`Counters`]):
//!
//! | input | action |
//! |---|---|
//! | empty, or longer than [`MAX_PACKET_LEN`] | dropped, `drops_malformed` |
//! | version 4 failing `Ipv4Packet::new_checked` (IHL < 5, truncated, total length inconsistent) or the header checksum | dropped, `drops_malformed` |
//! | version 6 failing `Ipv6Packet::new_checked` (< 40 bytes, payload length past the buffer) | dropped, `drops_malformed` |
//! | IP with TTL / hop limit ≤ 1 (when `decrement_ttl`) | dropped, `drops_ttl` (no ICMP) |
//! | any other version nibble | forwarded untouched (queued, shaped, delayed, never stamped), `non_ip` |
//! | IPv4 whose options, or IPv6 whose extension-header chain, cannot be walked | forwarded unstamped, `unstampable` (only counted when it would have been stamped) |
//!
//! IP bytes beyond the header's total length (link padding) are cut off at
//! ingress. The TTL / hop limit is decremented once per packet at ingress,
//! before any splitting (the IPv4 header checksum is recomputed).
//!
//! **RTT indicators** (DESIGN §3.2): IPv4 with DF and total length 600 + k,
//! IPv6 with total length 600 + k (no DF in IPv6) and no Fragment header
//! (a KA leading fragment with L = 552 or 560 has total length 600 / 608;
//! it is a rate signal, see [`is_ipv6_indicator`]), k ≤ 11. The first one
//! sets d; each later one moves d by an EWMA with gain `rtt_gain` (0.02)
//! toward the indicated RTT, at arrival, even if the queue then drops the
//! packet (see "Small RTTs" below). Indicators are never stamped.
//!
//! **Timing model.** The shaper is one transmitter: the head of the queue
//! is dequeued the moment the link is free; each piece it yields occupies
//! the link for `wire_bytes · 8 / C` (integer nanoseconds with the remainder
//! carried, so the long-run rate is exactly C and the fragment's extra
//! header bytes are paid for); a piece leaves `poll_transmit` when its
//! serialisation has ended plus `delay`. The two fragments of a split are
//! serialised back to back. The delay line therefore holds at most
//! `C · delay` bytes plus whatever the caller has not yet collected.
//!
//! **Stamping on dequeue** (DESIGN §4.2, see [`stamp`]): with KA signalling,
//! in KA mode, and R encodable, IPv4 and (if `ipv6_signal`) IPv6 packets are
//! handed to [`stamp_ipv4_with`] / [`stamp_ipv6_with`] with the code
//! `encode(R)`. Whole packets too short for that code saturate (carry the
//! largest code below their payload, DESIGN §3.1) only if their payload is
//! at least `saturate_min_payload` (default 1400) bytes; shorter ones stay
//! untouched (rule 4, "too small") — see [`stamp`] for why. IPv6 Fragment headers the port inserts take identifications
//! from a per-port counter starting at [`IPV6_IDENT_START`].
//! `Signalling::NativeRcp` instead lowers the IPv4 RCP option (type 30) to R
//! in bytes/s and never fragments; `Signalling::None` only queues, shapes and
//! delays. The TCP-mode detector only runs with `Signalling::Ka`.
//!
//! **Receive-window modulation** (DESIGN §8.5, [`rwm`]): the flow
//! middlebox stage needs both directions of a connection, so an [`Rwm`]
//! sits in front of a router's ports (`rwm.process(now, side, &mut pkt)`
//! before `port.push`).
//!
//! **A whole router** ([`router`]): [`Router`] composes ports (or direct
//! links), [`Routes`], RWM, the reverse path for rate echoes
//! ([`Port::on_reverse`], lowered on the ACK's arrival) and a hook per
//! port ([`InterfaceHook`]). The `ka-router` binary and the simulator both
//! drive it; see the module docs for the order of the stages.
//!
//! ## Control loop (DESIGN §4.3, §4.4)
//!
//! Every T = min(d, 10 ms) the controller gets a [`Measurement`]: y = bytes
//! *arriving* during the interval / T — everything handed to `push` that
//! passed ingress and was offered to the queue, drop-tail drops included
//! (as ns-2 RCP counts input traffic at enqueue). y counts bytes as they
//! arrive, so the header bytes a split adds on dequeue are not in y; they
//! show up in q if they make the link fall behind. q = bytes queued at the
//! end of the interval. [`Rcp`] applies `R ← R·eˣ`, `x = (T/d)(α(C − y) −
//! βq/d)/C` (DESIGN §4.3: `R·(1 + x)`, the same to first order; see
//! "Small RTTs" for why), clamped to `[min(R_min, C), C]`; R_min defaults
//! to the smallest encodable rate, so a KA port never silences itself
//! ([`RcpConfig::min_rate`]).
//!
//! Ticks, dequeues and the TCP-mode hold expiry are processed lazily but
//! exactly, in time order (ties: mode expiry, tick, dequeue), whenever the
//! caller passes a `now`. Consecutive ticks with an identical measurement
//! (nothing arrived, queue unchanged — e.g. an idle gap) are handed to the
//! controller as one batch ([`RateController::on_intervals`]; RCP uses the
//! closed form `R·fⁿ`, others loop at most [`MAX_BATCH_ITERATIONS`] times),
//! so catching up after any idle gap is O(1).
//!
//! The [`ControllerKind`] in [`PortConfig::signalling`] (KA and native
//! RCP carry one) selects the controller [`Port::new`] builds: [`Rcp`]
//! (the default, the paper's); [`Crowd`], which keeps RCP's update but
//! follows TCP connections from their SYN and admits each new one at its
//! expected share, so that flows starting together do not overflow the
//! queue; or [`Echo`], which also writes its rate into the echo of the ACKs
//! coming back through the router, so the rate acts without the RTT of
//! delay. All three run one RCP loop ([`RcpLoop`]); their designs and
//! costs are in `docs/controllers.md`. Controllers that look at packets
//! ([`RateController::wants_packets`]) see every arrival
//! ([`RateController::on_packet`]) and choose the rate of every packet that
//! can carry one ([`RateController::rate_for`]): a KA packet with payload
//! and DF clear, any native-RCP packet (SYNs included). Controllers that
//! look at the reverse direction ([`RateController::wants_reverse`]) see
//! every TCP segment the caller passes to [`Port::on_reverse`] (the ACKs
//! of this port's flows, on their way back through the router; a
//! [`Router`] passes every packet whose source lies behind this port, on
//! its arrival) and say what its rate echo is lowered to
//! ([`RateController::on_reverse`]).
//!
//! While the port is in TCP mode, R is frozen (the controller is not
//! called) — at the value it had at the last control interval that ended
//! with a short queue (a tenth of the threshold). TCP mode is entered when
//! the queue reaches `ceil(threshold_frac · queue_limit)` packets
//! (evaluated after every enqueue attempt and every dequeue) **and** at
//! least `foreign_frac` (10 %) of the recent arrivals are foreign (DF set
//! and not an RTT indicator: not from a KA endpoint), and left once the
//! queue has stayed below the threshold for the hold (default: one average
//! RTT d) or the foreign share has fallen below half of `foreign_frac`.
//! Both refinements deviate from DESIGN §4.3/§4.4; see the `mode` module
//! for why (`foreign_frac = 0` restores the queue-only rule).
//!
//! ## Small RTTs (data-centre scale)
//!
//! DESIGN §4.3 starts d at `--rtt` (100 ms) and moves it only by an EWMA
//! of gain 0.02 per RTT sample. At 10 Gbit/s with a 1 ms RTT (64 long-lived
//! KA flows joining one every 5 ms, `ka-sim paper other-dc`) that left d
//! far above the RTT for the first ~0.2 s — each flow sends one indicator
//! per 100 ms, so d needs about 50 indicators to cover two thirds of the
//! way — and with it T = min(d, 10 ms) at 10 RTTs and the update's gain
//! T/d at a fraction of its design value: R lagged the arrivals by tens of
//! RTTs, the queue sat at its 1000-packet limit from 0.1 to 0.3 s and
//! again at 1.3 s, and flows fell back to TCP mode (measured before the
//! change; after it the queue peaked at 160–203 packets while flows
//! joined and stayed under 60 after 1 s, flows in KA mode 99.9 % of the
//! time). In the fluid model (`tests/rcp_fluid.rs`, 64 senders joining
//! over 32 ms) d was still 28 ms at 100 ms, R at a fifth to a sixth of
//! C/64 and 10–22 MB queued. Two changes, neither of which matters at the
//! paper's 100 ms RTT (the first indicator moves d from 100 to 96 ms, and
//! T stays 10 ms):
//!
//! * **The first RTT sample sets d** (as RFC 6298 seeds SRTT with the
//!   first measurement); the EWMA then runs from there. `--rtt` is only a
//!   guess for the time before any indicator has arrived.
//! * **A shorter d shortens the interval in progress**: when a sample
//!   makes T = min(d, 10 ms) shorter than what remains of the current
//!   interval, that interval ends `T` after the previous tick (or at once,
//!   if that has passed) instead of at the end the old d chose. The
//!   measurement then covers the interval actually elapsed.
//!
//! A third change concerns the update itself. With T = d, one step of
//! DESIGN's `R ← R·(1 + x)`, `x = (T/d)(α(C − y) − βq/d)/C`, carries the
//! whole queue term βq/d: a queue of more than about one bandwidth-delay
//! product makes `x ≤ −1` and R falls to R_min (60 kbit/s) in one
//! interval, whence it climbs back by at most e^α per RTT — about 120 RTTs
//! to reach C/64 at 10 Gbit/s. At the paper's scale (T = d/10) the same
//! queue costs 8 % per interval, 55 % per RTT. In `other-dc`'s light load
//! (two web-search flows arriving at an idle port both start at R = C
//! and overflow the 1000-packet queue before any signal can reach them)
//! that collapse left (with the scenario's 10 ms minimum RTO) 105 KA and
//! 95 RCP flows of about 800 with FCTs above 50 ms — a 1500-byte packet paced at R_min takes 0.2 s — and the
//! 100–2000-packet flows' mean FCT at 35 ms (KA) and 22 ms (RCP).
//!
//! * **The update is `R ← R·eˣ`** ([`RcpUpdate::Exponential`]): the exact
//!   solution over T of RCP's fluid model `dR/dt = R·(α(C − y) −
//!   βq/d)/(d·C)` with the interval's y and q, and equal to DESIGN's
//!   linear step to first order in x — at the paper's T = d/10 the two
//!   differ by x²/2, a few parts in ten thousand per interval (Figs 2–7
//!   pass with either). At small RTTs it cuts R by e^(−1.3) = 0.27 where
//!   the linear step hit R_min: 11 KA and 13 RCP flows above 50 ms, mean
//!   FCT 4.3 and 4.2 ms. `--rcp-update linear` (ka-router) and
//!   `rcp_update = "linear"` (ka-sim) restore DESIGN's formula.
//!
//! With the first two, the fluid model converges to C/64 within 2.5 % with at most
//! 6 packets queued within 100 ms of the first arrival (test
//! `data_centre_sixty_four_flows_converge_within_100ms`). What they do not
//! fix is a *flash crowd* — 64 flows starting within one RTT at R₀ = 5 % of
//! C each offer 3.2·C, and with a buffer of about one bandwidth-delay
//! product the queue overflows before any controller can answer; that is
//! a property of RCP's R₀, not of d.
//!
//! ## Memory
//!
//! The queue holds at most `queue_limit` packets of at most
//! [`MAX_PACKET_LEN`] bytes each, and a queued buffer's capacity is kept
//! below `max(2 · len, SHRINK_SLACK)`. Nothing else grows with input except
//! the delay line (bounded by C · delay plus what the caller leaves
//! uncollected). FQ-CoDel's flow table is allocated once (about 100 bytes
//! per flow queue, at most [`qdisc::MAX_FLOWS`] of them) and it also caps
//! the buffer bytes it holds (`memory_limit`); see [`qdisc::FqCodel`].
//! A middlebox's pending segment reports are capped at
//! [`aggregate::MAX_PENDING_FEEDBACK`].
//!
//! ## Middleboxes (DESIGN §8.7)
//!
//! A DCC middlebox is a port whose capacity is the current rate of a
//! traffic aggregate ([`Port::set_capacity`]) plus an
//! [`aggregate::AggregateController`] (a fixed SLA rate or MulTCP) that
//! sets that rate; the port's signalling stage then tells each local host
//! its per-flow share (LCCP). See [`aggregate`].
#![deny(unsafe_code)]
#![cfg_attr(
    not(test),
    warn(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod aggregate;
mod classify;
pub mod config;
pub mod controller;
pub mod mode;
mod native;
pub mod persist;
pub mod port;
pub mod qdisc;
pub mod router;
pub mod rwm;
#[cfg(feature = "serde")]
pub mod serde_units;
mod shaper;
pub mod signal;
pub mod stamp;
pub mod stats;
mod time;

pub use classify::MAX_PACKET_LEN;
pub use classify::PacketKind;
pub use config::{
    Carrier, ConfigError, ControllerKind, ModeConfig, PortConfig, QueueMeasure, RcpConfig,
    RcpUpdate, RouterConfig, RouterFile, Signalling, XcpConfig,
};
pub use controller::{
    ControllerConfig, Crowd, CrowdConfig, Echo, EchoConfig, EchoStats, MAX_BATCH_ITERATIONS,
    Measurement, PacketInfo, RateController, Rcp, RcpLoop, TcpInfo,
};
pub use mode::Mode;
pub use native::{lower_rcp_option, lower_rcp_option_in};
pub use port::{DropReason, Port, PushOutcome, SHRINK_SLACK};
pub use qdisc::{QdiscConfig, QueueDiscipline, Verdict};
pub use router::{InterfaceHook, Router, RouterCounters, Routes};
pub use rwm::{Rwm, RwmClass, RwmConfig, RwmOutcome, RwmStats, Side};
pub use signal::rate::IPV6_IDENT_START;
pub use signal::{RateSignal, Signaller, XcpInterval, XcpSignal};
pub use stamp::{
    DEFAULT_SATURATE_MIN_PAYLOAD, Skip, StampConfig, Stamped, ipv6_indicator, is_ipv6_indicator,
    stamp_ipv4, stamp_ipv4_parsed, stamp_ipv4_with, stamp_ipv6, stamp_ipv6_parsed, stamp_ipv6_with,
};
pub use stats::{Counters, PortSnapshot, SojournHistogram};

#[cfg(feature = "cli")]
pub mod shell;
#[cfg(feature = "cli")]
pub mod trace;

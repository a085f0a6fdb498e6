//! # ka-router — the Kick-Ass router data plane
//!
//! The sans-IO router core. A [`Port`] is one direction of a router (one
//! egress interface with its queue): it parses and classifies packets,
//! learns the path RTT from RTT-indicator packets, queues them (drop-tail,
//! RED or FQ-CoDel), serialises at capacity C, runs a pluggable
//! [`RateController`] ([`Rcp`] by default) and, on dequeue, fragments IPv4 /
//! IPv6 packets so that the leading fragment's payload length encodes the
//! fair-share rate (Kick-Ass, paper §II). Nothing here reads a clock, sleeps
//! or touches a socket: time is the `Instant` the caller passes in. The
//! `ka-router` binary (feature `cli`) and the simulator drive the same core.
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
//! ## Driving a port
//!
//! Hand every arriving packet to [`Port::push`] with the current time, then
//! collect what is due with [`Port::poll_transmit`] until it returns `None`,
//! and sleep until [`Port::poll_timeout`] (calling [`Port::handle_timeout`]
//! then). The result never depends on how often or how late the caller
//! polls. [`Port::snapshot`] and [`Counters`] say what the port did; every
//! dropped or untouched packet is counted.
//!
//! ## What to configure
//!
//! * [`PortConfig`]: capacity, queue limit, delay, initial RTT, the
//!   signalling ([`Signalling`]: KA or native RCP, each with its
//!   controller ([`ControllerKind`]: [`Rcp`], [`Crowd`] or [`Echo`]), XCP or
//!   none), the
//!   queue discipline ([`QdiscConfig`]), the TCP-mode detector
//!   ([`ModeConfig`]), dithering and netem-style impairments in the delay
//!   line ([`ImpairConfig`]: loss, duplication, corruption, jitter,
//!   reordering). [`PortConfig::validate`] reports bad
//!   values; [`Port::new`] clamps them.
//! * Stages can be swapped: [`Port::with_controller`] takes any
//!   [`RateController`], [`Port::with_signaller`] any [`Signaller`],
//!   [`Port::with_queue_discipline`] any [`QueueDiscipline`].
//! * A whole router ([`router`]): [`Router`] composes ports (or direct
//!   links), [`Routes`], [`Rwm`] (receive-window modulation, needs both
//!   directions of a connection), the reverse path for rate echoes
//!   ([`Port::on_reverse`], lowered on the ACK's arrival) and a hook per
//!   port ([`InterfaceHook`]; e.g. a DCC middlebox's [`aggregate`]
//!   controller, which sets the port's capacity with
//!   [`Port::set_capacity`]). The `ka-router` binary and the simulator
//!   both drive this one composition; the module docs give the order of
//!   the stages.
//! * The pure functions are public too: [`stamp_ipv4`] / [`stamp_ipv6`]
//!   (fragment a packet at a code), [`lower_rcp_option`].
//!
//! ## Where the rules are written down
//!
//! The exact rules — what ingress drops or forwards untouched, the timing
//! model, the stamping rules, the control loop and RCP's update, the
//! TCP-mode detector, the crowd and echo controllers, the queue
//! disciplines, RWM and the middleboxes — and why each departs from the
//! paper where it does are in `docs/DESIGN.md` §3–§5 of the repository;
//! how the port sits in the router and the simulator is in
//! `docs/ARCHITECTURE.md`. The module docs ([`mode`], [`stamp`],
//! [`controller`], [`qdisc`], [`rwm`], [`aggregate`]) carry the details of
//! each stage.
//!
//! ## Memory
//!
//! The queue holds at most `queue_limit` packets of at most
//! [`MAX_PACKET_LEN`] bytes each; the delay line at most C · delay (with
//! impairments: twice the pieces serialised in delay + jitter, [`impair`])
//! plus what the caller leaves uncollected; FQ-CoDel's flow table is allocated
//! once ([`qdisc::FqCodel`]); the controllers' and RWM's flow tables are
//! bounded by their configs; a KA port's flow judge (DESIGN §3.6.1) is a
//! fixed table of 1024 slots of 24 bytes (24 KiB), allocated once; a
//! middlebox's pending segment reports are capped at
//! [`aggregate::MAX_PENDING_FEEDBACK`].
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
mod error;
mod flowhash;
pub mod gso;
pub mod impair;
mod judge;
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
    RcpUpdate, RouterConfig, RouterFile, Signalling, StampEvery, XcpConfig,
};
pub use controller::{
    ControllerConfig, Crowd, CrowdConfig, Echo, EchoConfig, EchoStats, MAX_BATCH_ITERATIONS,
    Measurement, PacketInfo, RateController, Rcp, RcpLoop, TcpInfo,
};
pub use impair::ImpairConfig;
pub use mode::Mode;
pub use native::{lower_rcp_option, lower_rcp_option_in};
pub use port::{DropReason, GsoOutcome, Port, PushOutcome, SHRINK_SLACK};
pub use qdisc::{QdiscConfig, QueueDiscipline, Verdict};
pub use router::{InterfaceHook, Router, RouterCounters, Routes};
pub use rwm::{Rwm, RwmClass, RwmConfig, RwmOutcome, RwmStats, Side};
pub use signal::rate::IPV6_IDENT_START;
pub use signal::{RateSignal, Signaller, StampTable, XcpInterval, XcpSignal};
pub use stamp::{
    DEFAULT_SATURATE_MIN_PAYLOAD, Skip, StampConfig, Stamped, ipv6_indicator, is_ipv6_indicator,
    stamp_ipv4, stamp_ipv4_parsed, stamp_ipv4_with, stamp_ipv6, stamp_ipv6_parsed, stamp_ipv6_with,
};
pub use stats::{Counters, PortSnapshot, SojournHistogram};

#[cfg(feature = "cli")]
pub mod shell;
#[cfg(feature = "cli")]
pub mod trace;

//! The I/O shell around the sans-IO core (feature `cli`, Linux only).
//!
//! * [`tun`] — open/create TUN devices (`pub`: the endpoint driver uses it);
//! * [`bridge`] — bridge mode: two Ethernet interfaces through `AF_PACKET`
//!   (pnet), a transparent bump in the wire;
//! * [`cli`] — what the `ka-router` and `ka-endpoint` binaries share
//!   (logging set-up, shutdown signal, `send --bytes` payload);
//! * [`engine`] — the forwarding thread and [`run`];
//! * [`pacing`] — sleep-then-spin waits that meet µs departure times;
//! * [`forwarder`] — the [`Forwarder`] trait the pacing thread drives, with
//!   the KA core ([`KaPorts`]) and a pass-through baseline;
//! * [`metrics`] — Prometheus `GET /metrics` (RWM's series in
//!   `rwm_metrics`);
//! * [`pcap`] — capture of every written packet (`LINKTYPE_RAW`);
//! * [`stamplog`] — the CSV record of every leading fragment written
//!   (`--stamp-log`);
//! * [`host`] — how much CPU the host left us (load, CPU pressure, steal)
//!   during a wall-clock measurement;
//! * [`testbed`] — a two-namespace testbed (mahimahi-style, DESIGN §4.6)
//!   for integration tests and examples.

pub mod bridge;
pub mod cli;
pub mod engine;
pub mod forwarder;
pub mod host;
mod input;
mod ka;
pub mod metrics;
pub mod pacing;
pub mod pcap;
mod rwm_metrics;
pub mod stamplog;
pub mod stats;
pub mod testbed;
pub mod tun;

pub use engine::{Link, RunSummary, ShellConfig, ThreadInit, run};
pub use forwarder::{Forwarder, PassThrough};
pub use ka::KaPorts;
pub use pacing::Pacer;
pub use stats::{CoreStats, Direction, DirectionSummary, IoStats, LatenessStats, SharedStats};
pub use tun::{TunHandles, TunOptions, open_tun, open_tun_split, split_tun};

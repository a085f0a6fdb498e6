//! The I/O shell around the sans-IO core (feature `cli`, Linux only).
//!
//! The OS helpers it shares with the endpoint driver are in [`ka_io`]: TUN
//! devices ([`ka_io::tun`]), the pacing waits ([`ka_io::pacing`]), the host
//! probes of wall-clock measurements ([`ka_io::host`]) and the binaries'
//! set-up ([`ka_io::cli`]).
//!
//! * [`bridge`] — bridge mode: two Ethernet interfaces through `AF_PACKET`
//!   (pnet), a transparent bump in the wire;
//! * [`engine`] — the forwarding thread and [`run`];
//! * [`forwarder`] — the [`Forwarder`] trait the pacing thread drives, with
//!   the KA core ([`KaPorts`]) and a pass-through baseline;
//! * [`metrics`] — Prometheus `GET /metrics` (RWM's series in
//!   `rwm_metrics`);
//! * [`pcap`] — capture of every written packet (`LINKTYPE_RAW`);
//! * [`stamplog`] — the CSV record of every leading fragment written
//!   (`--stamp-log`);
//! * `input`, `writer` — reading both devices (batched, with `--offload`)
//!   and writing them (coalesced with `--offload`, on threads of their own
//!   with `--write-threads`);
//! * [`testbed`] — a two-namespace testbed (mahimahi-style, DESIGN §8.2)
//!   for integration tests and examples.

pub mod bridge;
pub mod engine;
mod exposition;
pub mod forwarder;
mod input;
mod ka;
pub mod metrics;
pub mod pcap;
mod rwm_metrics;
pub mod stamplog;
pub mod stats;
pub mod testbed;
mod writer;

pub use engine::{Link, RunSummary, ShellConfig, ThreadInit, run};
pub use forwarder::{Arrivals, Forwarder, PassThrough};
pub use ka::KaPorts;
pub use stats::{CoreStats, Direction, DirectionSummary, IoStats, LatenessStats, SharedStats};

//! # ka-sim — a deterministic simulator on the real cores
//!
//! The discrete-event simulator of DESIGN §6. It drives the very
//! `ka_router::Port` and `ka_endpoint` cores that run on real networks, with
//! real packet bytes; nothing here re-implements router or TCP logic.
//!
//! * [`engine`]: integer-nanosecond time, `(time, seq)` ordering, links
//!   with rate, delay and an in-flight FIFO (one heap entry per link head),
//!   node timers with lazy cancellation, a buffer pool.
//! * [`router`]: router nodes running `ka_router::Router` (the composition
//!   the `ka-router` binary runs), static routing by host.
//! * [`scenario`] / [`net`]: TOML scenarios — dumbbell, KA router in front
//!   of a legacy bottleneck (paper Fig. 6), parking lot, any line of hops,
//!   per-flow RTTs — and the network built from them.
//! * [`dcc`]: the DCC topology — two middleboxes (router ports shaped at
//!   an aggregate's rate, a fixed SLA or MulTCP) and LCCP in the local
//!   segments (DESIGN §8.7); [`udp`]: hosts running
//!   `ka_endpoint::udp`'s LCCP-controlled or plain CBR sources.
//! * [`rng`]: per-sender ChaCha8 streams, exponential and bounded Pareto.
//! * [`sim`] / [`metrics`] / [`output`] / [`plot`]: the run loop, the
//!   time-binned series, `flows.csv`, `series.csv`, `summary.json`, SVGs.
//! * [`segment`]: a long stationary run cut into time segments simulated in
//!   parallel and stitched into one result (used by `paper xcp-fig8`).
//! * [`paper`]: the published experiments (the Kick-Ass paper's figures,
//!   the AQM comparison, the XCP-vs-RCP seed's figures).
//!
//! Determinism: the same scenario and seed give byte-identical output files
//! (only the wall-clock fields of `summary.json` differ). The cores get
//! `Instant`s from one base instant captured at start plus the virtual
//! offset, and every output is computed from offsets only.
#![forbid(unsafe_code)]

pub mod addr;
pub mod claims;
pub mod dcc;
pub mod engine;
pub mod host;
pub mod metrics;
pub mod net;
pub mod output;
pub mod paper;
pub mod plot;
pub mod report;
pub mod rng;
pub mod router;
pub mod rwmstats;
pub mod scenario;
pub mod segment;
pub mod sim;
pub mod sweep;
pub mod udp;
pub mod world;

#[cfg(test)]
mod testhost;

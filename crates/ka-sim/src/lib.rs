//! # ka-sim — a deterministic simulator on the real cores
//!
//! The discrete-event simulator of DESIGN §9. It drives the very
//! `ka_router::Port` and `ka_endpoint` cores that run on real networks, with
//! real packet bytes; nothing here re-implements router or TCP logic.
//!
//! The modules are layers; each uses only the ones above it:
//!
//! * [`engine`]: integer-nanosecond time, `(time, seq)` ordering, links
//!   with rate, delay and an in-flight FIFO (one heap entry per link head),
//!   node timers with lazy cancellation, a buffer pool; [`engine::rng`]:
//!   per-sender ChaCha8 streams, exponential and bounded Pareto.
//! * [`scenario`]: TOML scenarios and their validation — dumbbell, KA
//!   router in front of a legacy bottleneck (paper Fig. 6), parking lot,
//!   any line of hops, per-flow RTTs, and the DCC topology
//!   ([`scenario::dcc`]: two middleboxes shaping an aggregate at a fixed
//!   SLA or MulTCP rate, LCCP in the local segments, DESIGN §5.3).
//! * [`model`]: the simulated network built from a scenario — router nodes
//!   running `ka_router::Router` (the composition the `ka-router` binary
//!   runs) with static routing by host, hosts running the real
//!   `ka_endpoint` stacks (TCP, and `ka_endpoint::udp`'s LCCP-controlled
//!   or plain CBR sources), the DCC middlebox hooks, the flow table.
//! * [`results`]: a run's result, the time-binned series, `flows.csv`,
//!   `series.csv`, `summary.json`, SVGs.
//! * [`run`]: the run loop; [`run::segment`]: a long stationary run cut
//!   into time segments simulated in parallel and stitched into one result
//!   (used by `paper xcp-fig8`); [`run::sweep`]: parameter sweeps.
//! * [`paper`]: the published experiments (the Kick-Ass paper's figures,
//!   the AQM comparison, the XCP-vs-RCP seed's figures) and the claims
//!   they check.
//!
//! Determinism: the same scenario and seed give byte-identical output files
//! (only the wall-clock fields of `summary.json` differ). The cores get
//! `Instant`s from one base instant captured at start plus the virtual
//! offset, and every output is computed from offsets only.
#![forbid(unsafe_code)]

pub mod engine;
pub mod model;
pub mod paper;
pub mod results;
pub mod run;
pub mod scenario;

pub use results::RunResult;
pub use run::run_scenario;
pub use scenario::Scenario;

//! # ka-io — the operating-system helpers of the ka shells
//!
//! What the router's I/O shell (`ka-router`, feature `cli`) and the
//! endpoint's tokio/TUN driver (`ka-endpoint`, feature `cli`) both need
//! from the host, kept apart from either so that neither depends on the
//! other: the sans-IO cores (`ka_router::Port`, `ka_endpoint::Stack`) never
//! touch the operating system; their shells do it through this crate.
//!
//! * [`tun`] — open, configure and split layer-3 TUN devices (`tun-rs`),
//!   and read the kernel's drops in front of a device's reader;
//! * [`offload`] — batched reads and coalesced writes of a TUN device
//!   opened with the kernel's segmentation offloads (line rate);
//! * [`runs`] — a sender's own TCP segments written as super-packets;
//! * [`pacing`] — sleep-then-spin waits that meet µs departure times:
//!   [`pacing::Pacer`] on a channel, [`pacing::wait_readable`] on file
//!   descriptors, [`pacing::tighten_timer_slack`] for the pacing threads;
//! * [`host`] — whether the host let our threads run during a wall-clock
//!   measurement (load, CPU pressure, hypervisor steal);
//! * [`cli`] — what the `ka-router` and `ka-endpoint` binaries share:
//!   logging set-up, the shutdown signal, the `send --bytes` payload.
//!
//! Written for Linux (TUN devices, `ppoll(2)`, `/proc`, `/sys/class/net`);
//! [`pacing::tighten_timer_slack`] is a no-op elsewhere.
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

pub mod cli;
pub mod host;
pub mod offload;
pub mod pacing;
pub mod runs;
pub mod tun;

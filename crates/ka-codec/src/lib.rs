//! # ka-codec — the Kick-Ass wire encoding
//!
//! Kick-Ass (KA) lets routers tell TCP senders an explicit rate with no new
//! header: a KA router fragments a packet on purpose, and the **payload length
//! of the leading fragment** encodes the rate. This crate is everything about
//! those encodings, as pure functions:
//!
//! * [`scale`] — rate (B/ms) ↔ leading-fragment length `L` (paper §II-A):
//!   [`Scale`], [`Code`] (`L/8` on the wire), [`RateTable`] (precomputed,
//!   built at compile time, no `ln`/`exp` per packet), [`carrier_code`].
//! * [`rtt`] — RTT indicators: packets of total length 600…611 with DF
//!   (paper §II-B).
//! * [`options`] — the KA TCP options (RFC 6994 kind 253, ExID `0x4B41`):
//!   KA-Permitted and KA-Rate.
//! * [`rcp_option`] — the IPv4 option carrying native RCP's rate (baseline).
//! * [`xcp_option`] — the IPv4 option carrying XCP's congestion header
//!   (baseline), with the router's [`xcp_option::lower_feedback_in_packet`];
//!   its TCP options (XCP-Permitted, XCP-Echo) are in [`options`].
//! * [`units`] — human units for command lines (`100mbit`, `50ms`, `10MiB`).
//! * [`wire`] — zero-copy IPv4/IPv6/TCP header views, the one-parse
//!   packet view [`wire::Segment`] (with [`wire::FlowKey`]) and the one
//!   TCP/IPv4 option walker [`wire::OptionIter`].
//!
//! ```
//! use ka_codec::{Code, RateTable, Rate, rtt};
//!
//! // A router wants to signal 100 Mbit/s = 12 500 B/ms.
//! let code = RateTable::PAPER.encode(12_500.0).unwrap();
//! assert_eq!(code.len(), 880);                  // leading fragment payload
//! // A 1500-byte packet (1480 payload bytes) can carry it.
//! assert_eq!(ka_codec::carrier_code(code, 1480), Some(code));
//! // The receiver reads the length back; never more than was meant.
//! let r = RateTable::PAPER.decode(Code::from_len(880).unwrap());
//! assert!(r <= 12_500.0);
//! assert_eq!(Rate::from_bytes_per_ms(r).to_string(), "96.31 Mbit/s");
//! // A 605-byte packet with DF set says "RTT about 48 ms".
//! assert_eq!(rtt::classify(605, true), Some(5));
//! ```
//!
//! ## Guarantees
//!
//! * `#![no_std]`, no allocation, no dependencies, no `unsafe`. `std` and
//!   `no_std` builds compute bit-identical numbers (the crate has its own
//!   `exp`/`ln`, see [`scale`]). `scripts/check-no-std.sh` proves that no
//!   `std`/`alloc` is linked.
//! * No function panics on any input; parsers return typed errors
//!   ([`OptionError`], [`RcpError`], [`XcpError`], [`UnitError`],
//!   [`wire::WireError`]), all
//!   implementing `core::error::Error` (so `std::error::Error`) in every build.
//!
//! ## Features
//!
//! * `std` (default): links `std`. The codec itself never needs it; the error
//!   types implement `core::error::Error`, which *is* `std::error::Error`, with
//!   or without this feature.
#![no_std]
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

#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod options;
pub mod rcp_option;
pub mod rtt;
pub mod scale;
pub mod units;
pub mod wire;
pub mod xcp_option;

pub use options::{KaOption, KaPermitted, KaRate, OptionError};
pub use rcp_option::{RcpError, RcpOption};
pub use scale::{
    Code, RateTable, Scale, ScaleError, bps_to_bytes_per_ms, bytes_per_ms_to_bps, carrier_code,
};
pub use units::{ByteSize, Rate, UnitError};
pub use xcp_option::{XcpError, XcpOption};

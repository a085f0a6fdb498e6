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
//! ## Using it from another project
//!
//! The crate is not published on crates.io; depend on it by path or by git
//! (the URL the ka repository was cloned from), and turn the default `std`
//! feature off on `no_std` targets:
//!
//! ```toml
//! [dependencies]
//! ka-codec = { path = "../ka/crates/ka-codec", default-features = false }
//! ```
//!
//! `examples/embed_codec.rs` in the ka repository is a complete program
//! that classifies raw packets the way another stack would (`cargo run -p
//! ka-examples --example embed_codec`).
//!
//! ## Parsing a packet: the rate a leading fragment carries
//!
//! A receiver (or a tool reading a capture) looks for IPv4 leading
//! fragments, offset 0 with More Fragments set, and decodes their payload
//! length. Here a router split a packet so that its leading fragment carries
//! L = 880 bytes:
//!
//! ```
//! use ka_codec::wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_TCP};
//! use ka_codec::{Code, Rate, RateTable};
//!
//! // The leading fragment as it arrives: a 20-byte header and 880 bytes.
//! let mut packet = vec![0u8; 20 + 880];
//! Ipv4Repr {
//!     src: [10, 0, 0, 1],
//!     dst: [10, 0, 0, 2],
//!     protocol: PROTO_TCP,
//!     ttl: 63,
//!     ident: 7,
//!     dont_frag: false,
//!     more_frags: true,
//!     frag_offset: 0,
//!     dscp_ecn: 0,
//!     payload_len: 880,
//! }
//! .emit(&mut packet)?;
//!
//! // Receiver side: every header length is checked before anything is read.
//! let ip = Ipv4Packet::new_checked(&packet[..])?;
//! assert!(ip.verify_checksum());
//! let code = if ip.more_frags() && ip.frag_offset() == 0 {
//!     Code::from_len(ip.payload().len())
//! } else {
//!     None
//! };
//! let code = code.expect("a KA leading fragment");
//! let rate = RateTable::PAPER.decode(code); // B/ms, a table lookup
//! assert_eq!(Rate::from_bytes_per_ms(rate).to_string(), "96.31 Mbit/s");
//! # Ok::<(), ka_codec::wire::WireError>(())
//! ```
//!
//! ## Emitting the KA options
//!
//! Both ends offer KA-Permitted in the SYN and SYN-ACK; a KA receiver then
//! puts KA-Rate (the code of the latest leading fragment and a count of
//! them) on its ACKs. The options can be written on their own
//! ([`KaPermitted::BYTES`], [`KaRate::emit`]) or as part of a whole TCP
//! header ([`wire::tcp::TcpRepr`]):
//!
//! ```
//! use ka_codec::wire::checksum::pseudo_v4;
//! use ka_codec::wire::ipv4::PROTO_TCP;
//! use ka_codec::wire::tcp::{self, TcpOptions, TcpPacket, TcpRepr};
//! use ka_codec::{Code, KaPermitted, KaRate};
//!
//! // The option bytes alone.
//! assert_eq!(KaPermitted::BYTES, [253, 4, 0x4B, 0x41]);
//! let echo = KaRate::new(Code::from_len(880).unwrap(), 17);
//! let mut opt = [0u8; KaRate::LEN];
//! echo.emit(&mut opt)?;
//! assert_eq!(opt, [253, 6, 0x4B, 0x41, 110, 17]);
//!
//! // An ACK carrying the echo, emitted with its checksum and parsed back.
//! let ack = TcpRepr {
//!     src_port: 5001,
//!     dst_port: 40000,
//!     seq: 1,
//!     ack: 1449,
//!     flags: tcp::ACK,
//!     window: 512,
//!     urgent: 0,
//!     options: TcpOptions { ka_rate: Some(echo), ..TcpOptions::default() },
//! };
//! let len = ack.header_len();
//! let pseudo = pseudo_v4([10, 0, 0, 2], [10, 0, 0, 1], PROTO_TCP, len as u32);
//! let mut segment = vec![0u8; len];
//! ack.emit(&mut segment, &[], pseudo)?;
//!
//! let parsed = TcpPacket::new_checked(&segment[..])?;
//! assert!(parsed.verify_checksum(pseudo));
//! let options = TcpRepr::parse(&parsed)?.options;
//! assert_eq!(options.ka_rate, Some(echo));
//! assert_eq!(options.ka_rate.and_then(|r| r.rate_code()).map(|c| c.len()), Some(880));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! ## Guarantees
//!
//! * `#![no_std]`, no allocation, no dependencies, no `unsafe`. `std` and
//!   `no_std` builds compute bit-identical numbers (the crate has its own
//!   `exp`/`ln`, see [`scale`]). `scripts/check-no-std.sh` proves that no
//!   `std`/`alloc` is linked.
//! * No function panics on any input; parsers return typed errors
//!   ([`OptionError`], [`Ipv4OptionError`] (alias [`RcpError`],
//!   [`XcpError`]), [`UnitError`],
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

pub mod ipv4_option;
pub mod options;
pub mod rcp_option;
pub mod rtt;
pub mod scale;
pub mod units;
pub mod wire;
pub mod xcp_option;

pub use ipv4_option::Ipv4OptionError;
pub use options::{KaOption, KaPermitted, KaRate, OptionError};
pub use rcp_option::{RcpError, RcpOption};
pub use scale::{
    Code, RateTable, Scale, ScaleError, bps_to_bytes_per_ms, bytes_per_ms_to_bps, carrier_code,
};
pub use units::{ByteSize, Rate, UnitError};
pub use xcp_option::{XcpError, XcpOption};

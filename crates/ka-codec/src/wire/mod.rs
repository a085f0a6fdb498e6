//! The one IP/TCP header module shared by the router, the endpoint and the
//! simulator.
//!
//! Written in the style of smoltcp's `wire`: every header has a zero-copy
//! *view* (`Ipv4Packet<T>`, `Ipv6Packet<T>`, `TcpPacket<T>`) over any buffer
//! `T: AsRef<[u8]>` (plus `AsMut<[u8]>` for the setters), and where a
//! high-level form helps, a plain-data *representation* (`Ipv4Repr`,
//! `TcpRepr`) with `parse` and `emit`.
//!
//! A whole packet is parsed once by [`segment`]: [`Layout::parse`] finds
//! every header (IP, fragment fields, the upper layer, a TCP header) and
//! [`Segment`] / [`SegmentMut`] read and rewrite the packet through it, with
//! one [`FlowKey`] for IPv4 and IPv6. Every TCP and IPv4 options area is
//! walked by the one [`OptionIter`] ([`opts`]).
//!
//! Rules that hold for every function here:
//!
//! * No allocation, no `std`.
//! * No panics on any input. A view is only built by `new_checked`, which
//!   validates every length the accessors later rely on; `new_unchecked`
//!   views still never panic (accessors on a short buffer return zeroes or
//!   empty slices), they just may return meaningless values.
//! * Lengths are in bytes; fragment offsets are in bytes (the wire field
//!   times 8).
//!
//! ## Differences from etherparse
//!
//! These views are checked against an independent parser, `etherparse`
//! (`tests/oracle_etherparse.rs` and the fuzz target `wire_vs_etherparse`):
//! every field both expose must agree, and a packet one rejects the other
//! must reject too, except for these intentional differences (each has a
//! test that shows it still occurs):
//!
//! | input | ka | etherparse | why ka differs |
//! |---|---|---|---|
//! | IPv4 protocol 51 | stops at the IP header | also parses the AH behind it | the router never looks past IP for IPv4 |
//! | IPv6 payload length 0 with more bytes | empty payload | jumbogram: the rest of the buffer | jumbograms (RFC 2675) are not supported; 0 means 0 |
//! | Hop-by-Hop header not first | walked like the others | rejected | leniency costs nothing: the router only needs where the unfragmentable part ends |
//! | Fragment header with offset ≠ 0 | walk stops there | goes on parsing the fragment's data as headers | what follows a non-first fragment is payload, not headers |
//! | two Fragment headers | `Unsupported` | accepted | a second one makes "the" fragment ambiguous for re-splitting |
//! | more than [`ipv6::MAX_EXT_HEADERS`] extension headers | `Unsupported` | walked | bounded work per packet |
//! | AH with payload length 0 (8 bytes) | walked | rejected (RFC 4302 minimum is 12) | only the length matters for the walk |
//! | unknown TCP option (e.g. experimental kind 253: KA, RCP) | skipped | iteration stops (`UnknownId`) | RFC 9293 §3.1: unknown options are ignored |
//! | known TCP option with a non-standard length | skipped | iteration stops (`UnexpectedSize`) | same |

pub mod build;
pub mod checksum;
pub mod ecn;
pub mod flow;
pub mod ipv4;
pub mod ipv6;
pub mod opts;
pub mod segment;
pub mod tcp;

pub use opts::{OptionFault, OptionIter, RawOption};
pub use segment::{FlowKey, Layout, Segment, SegmentMut, TcpHeader};

use core::fmt;

/// Why a packet or header could not be parsed or emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireError {
    /// The buffer ends before the header (or the length it announces) does.
    Truncated,
    /// The IP version nibble is not the one this view handles.
    BadVersion,
    /// A header-length field is below the minimum or points past the buffer.
    BadHeaderLen,
    /// A total/payload-length field is inconsistent with the header or buffer.
    BadTotalLen,
    /// A checksum did not verify.
    BadChecksum,
    /// An options area is malformed (length byte 0 or 1, or runs past the end).
    BadOption,
    /// The output buffer is too small for what is to be written.
    BufferTooSmall,
    /// Valid but not handled here (e.g. too many IPv6 extension headers).
    Unsupported,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            WireError::Truncated => "packet truncated",
            WireError::BadVersion => "wrong IP version",
            WireError::BadHeaderLen => "bad header length",
            WireError::BadTotalLen => "bad total/payload length",
            WireError::BadChecksum => "bad checksum",
            WireError::BadOption => "malformed options",
            WireError::BufferTooSmall => "output buffer too small",
            WireError::Unsupported => "unsupported header layout",
        };
        f.write_str(s)
    }
}

impl core::error::Error for WireError {}

/// The IP version of a packet: the high nibble of its first byte, or `None`
/// for an empty buffer.
#[inline]
pub fn ip_version(packet: &[u8]) -> Option<u8> {
    packet.first().map(|b| b >> 4)
}

/// The first checks of an IP view's `new_checked`: the buffer holds the
/// `fixed`-byte header (else `Truncated`) and its version nibble is
/// `version` (else `BadVersion`).
pub(crate) fn check_ip(buf: &[u8], fixed: usize, version: u8) -> Result<(), WireError> {
    if buf.len() < fixed {
        return Err(WireError::Truncated);
    }
    if ip_version(buf) != Some(version) {
        return Err(WireError::BadVersion);
    }
    Ok(())
}

/// Checks a length field (a header length, a total length) that must cover
/// at least `min` bytes and fit in a `buf_len`-byte buffer: `too_small`
/// below `min`, `Truncated` past the buffer.
pub(crate) fn check_len(
    field: usize,
    min: usize,
    buf_len: usize,
    too_small: WireError,
) -> Result<(), WireError> {
    if field < min {
        return Err(too_small);
    }
    if field > buf_len {
        return Err(WireError::Truncated);
    }
    Ok(())
}

/// Reads a big-endian `u16` at `at`, or 0 if the buffer is too short.
#[inline]
pub(crate) fn be16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(array(buf, at))
}

/// Reads a big-endian `u32` at `at`, or 0 if the buffer is too short.
#[inline]
pub(crate) fn be32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(array(buf, at))
}

/// Reads one byte at `at`, or 0 if the buffer is too short.
#[inline]
pub(crate) fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

/// Copies `src` into `buf` at `at`; silently does nothing if it would not
/// fit (views only call setters on validated buffers).
#[inline]
pub(crate) fn put_bytes(buf: &mut [u8], at: usize, src: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at.wrapping_add(src.len())) {
        dst.copy_from_slice(src);
    }
}

/// Writes a big-endian `u16` at `at`; does nothing if it would not fit.
#[inline]
pub(crate) fn put16(buf: &mut [u8], at: usize, v: u16) {
    put_bytes(buf, at, &v.to_be_bytes());
}

/// Writes a big-endian `u32` at `at`; does nothing if it would not fit.
#[inline]
pub(crate) fn put32(buf: &mut [u8], at: usize, v: u32) {
    put_bytes(buf, at, &v.to_be_bytes());
}

/// Writes one byte at `at`; does nothing if it would not fit.
#[inline]
pub(crate) fn put8(buf: &mut [u8], at: usize, v: u8) {
    if let Some(dst) = buf.get_mut(at) {
        *dst = v;
    }
}

/// Copies a fixed-size array out of `buf` at `at`, or zeroes if too short.
#[inline]
pub(crate) fn array<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(at..at.wrapping_add(N)) {
        out.copy_from_slice(src);
    }
    out
}

/// `buf[from..to]`, or an empty slice when out of range.
#[inline]
pub(crate) fn sub(buf: &[u8], from: usize, to: usize) -> &[u8] {
    buf.get(from..to).unwrap_or(&[])
}

/// `&mut buf[from..to]`, or an empty slice when out of range.
#[inline]
pub(crate) fn sub_mut(buf: &mut [u8], from: usize, to: usize) -> &mut [u8] {
    match buf.get_mut(from..to) {
        Some(s) => s,
        None => &mut [],
    }
}

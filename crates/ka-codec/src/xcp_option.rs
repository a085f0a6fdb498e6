//! The XCP congestion header carried as an IPv4 option (DESIGN §7.2; seed
//! `xcp-vs-rcp.txt` §2.2; Falk, Pryadkin, Katabi, "Specification for the
//! Explicit Control Protocol (XCP)", draft-falk-xcp-spec-03, July 2007).
//!
//! XCP needs a congestion header on every data packet that every router on
//! the path reads and may change. The draft puts it between IP and TCP as a
//! protocol of its own; ka carries it, like the native-RCP rate
//! ([`crate::rcp_option`]), as an IPv4 option so that ordinary TCP segments
//! stay intact: RFC 4727 experimental option type 94 (copy flag 0, class 2
//! "debugging and measurement", number 30), padded to 16 bytes:
//!
//! ```text
//! 94, 14, H_cwnd (u32 BE, bytes), H_rtt (u32 BE, µs), H_feedback (i32 BE, bytes), NOP, NOP
//! ```
//!
//! * `H_cwnd` — the sender's congestion window when it sent the packet.
//! * `H_rtt` — the sender's smoothed RTT in microseconds; 0 = no estimate
//!   yet (a router leaves such packets out of its average RTT).
//! * `H_feedback` — the change of the sender's window, in bytes, that this
//!   one packet asks for (negative: a decrease). The sender writes what it
//!   wants; every XCP router may only *lower* it
//!   ([`lower_feedback_in_place`], [`lower_feedback_in_packet`]), so the
//!   path's most restrictive allocation arrives. The receiver echoes it in
//!   the XCP-Echo TCP option ([`crate::options::XcpEcho`]).
//!
//! The option is not copied into fragments (copy flag 0, RFC 791): only an
//! unfragmented packet or a leading fragment carries it.
//!
//! Options areas are walked by the one option walker,
//! [`OptionIter`](crate::wire::opts::OptionIter). Nothing here panics or loops
//! forever on any input.

use crate::ipv4_option::{Ipv4OptionError, parse_fixed, write_to};
use crate::rcp_option::OPT_NOP;
use crate::wire::checksum;
use crate::wire::ipv4::{self, Ipv4Packet};
use crate::wire::opts::find_kind;
use crate::wire::segment::Segment;

/// IPv4 option type of the XCP carrier (RFC 4727 experiment, not copied).
pub const OPTION_TYPE: u8 = 94;

/// Offset of `H_feedback` within the option (after type, length, `H_cwnd`
/// and `H_rtt`).
const FEEDBACK_AT: usize = 10;

/// The errors of the XCP option's functions: the error type the IPv4-option
/// carriers share.
pub type XcpError = Ipv4OptionError;

/// The XCP congestion header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct XcpOption {
    /// The sender's congestion window, bytes.
    pub cwnd_bytes: u32,
    /// The sender's smoothed RTT, microseconds (0 = not known yet).
    pub rtt_us: u32,
    /// The window change this packet asks for, bytes; routers only lower it.
    pub feedback_bytes: i32,
}

impl XcpOption {
    /// Length of the option itself (its length byte).
    pub const LEN: usize = 14;
    /// Length with the two trailing NOPs that keep the header a multiple of
    /// four bytes: what a sender puts into its IPv4 header.
    pub const PADDED_LEN: usize = 16;

    /// Parses one whole option (`opt` starts at the type byte and is exactly
    /// 14 bytes long).
    pub fn parse(opt: &[u8]) -> Result<XcpOption, XcpError> {
        let [_, _, c0, c1, c2, c3, r0, r1, r2, r3, f0, f1, f2, f3] = parse_fixed(opt, OPTION_TYPE)?;
        Ok(XcpOption {
            cwnd_bytes: u32::from_be_bytes([c0, c1, c2, c3]),
            rtt_us: u32::from_be_bytes([r0, r1, r2, r3]),
            feedback_bytes: i32::from_be_bytes([f0, f1, f2, f3]),
        })
    }

    /// The encoded option (14 bytes, no padding).
    pub const fn to_bytes(&self) -> [u8; 14] {
        let c = self.cwnd_bytes.to_be_bytes();
        let r = self.rtt_us.to_be_bytes();
        let f = self.feedback_bytes.to_be_bytes();
        [
            OPTION_TYPE,
            Self::LEN as u8,
            c[0],
            c[1],
            c[2],
            c[3],
            r[0],
            r[1],
            r[2],
            r[3],
            f[0],
            f[1],
            f[2],
            f[3],
        ]
    }

    /// The encoded option followed by two NOPs (16 bytes).
    pub const fn to_padded_bytes(&self) -> [u8; 16] {
        let b = self.to_bytes();
        [
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
            OPT_NOP, OPT_NOP,
        ]
    }

    /// Writes the option (14 bytes) to the front of `buf`; returns the
    /// bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, XcpError> {
        write_to(&self.to_bytes(), OPTION_TYPE, buf)
    }

    /// Writes the option and two NOPs (16 bytes) to the front of `buf`;
    /// returns the bytes written.
    pub fn emit_padded(&self, buf: &mut [u8]) -> Result<usize, XcpError> {
        write_to(&self.to_padded_bytes(), OPTION_TYPE, buf)
    }
}

/// Finds the first XCP option in an IPv4 options area (the bytes between
/// the 20-byte fixed header and `IHL·4`).
///
/// Returns its byte offset within `options` and its value, `Ok(None)` if
/// the area (up to an EOL or its end) has none. Errors if the area is
/// malformed before an XCP option is found (an option running past the end,
/// a length byte below 2), or if the XCP option itself is malformed.
pub fn find_in(options: &[u8]) -> Result<Option<(usize, XcpOption)>, XcpError> {
    find_kind(options, OPTION_TYPE, XcpOption::parse)
}

/// Lowers `H_feedback` of the XCP option in `options` to `feedback_bytes`
/// if that is smaller. Returns whether the bytes changed; if so, the caller
/// must fix the IPv4 header checksum ([`lower_feedback_in_packet`] does it).
///
/// [`XcpError::NotFound`] if there is no XCP option; other errors as
/// [`find_in`]. Only the four `H_feedback` bytes are ever written.
pub fn lower_feedback_in_place(options: &mut [u8], feedback_bytes: i32) -> Result<bool, XcpError> {
    let (at, opt) = find_in(options)?.ok_or(XcpError::NotFound { kind: OPTION_TYPE })?;
    if feedback_bytes >= opt.feedback_bytes {
        return Ok(false);
    }
    let dst = options
        .get_mut(at + FEEDBACK_AT..at + XcpOption::LEN)
        .ok_or(XcpError::Truncated)?;
    dst.copy_from_slice(&feedback_bytes.to_be_bytes());
    Ok(true)
}

/// The XCP option of a whole IPv4 packet, if it has one: its offset from
/// the start of the packet and its value. The packet must pass
/// [`Ipv4Packet::new_checked`]; a malformed options area is an error.
/// Fragments with a non-zero offset never carry the option (it is not
/// copied), so for them this is `Ok(None)` without looking.
pub fn find_in_packet(packet: &[u8]) -> Result<Option<(usize, XcpOption)>, XcpError> {
    let ip = Ipv4Packet::new_checked(packet).map_err(XcpError::Packet)?;
    if ip.frag_offset() != 0 {
        return Ok(None);
    }
    Ok(find_in(ip.options())?.map(|(at, o)| (ipv4::MIN_HEADER_LEN + at, o)))
}

/// [`find_in_packet`] of a packet already parsed: `Ok(None)` for IPv6 and
/// for fragments with a non-zero offset.
pub fn find_in_segment(seg: &Segment<'_>) -> Result<Option<(usize, XcpOption)>, XcpError> {
    if !seg.is_ipv4() || seg.frag_offset() != 0 {
        return Ok(None);
    }
    Ok(find_in(seg.ipv4_options())?.map(|(at, o)| (ipv4::MIN_HEADER_LEN + at, o)))
}

/// What [`lower_feedback_in_packet`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lowered {
    /// `H_feedback` was at or below the offered value: nothing changed.
    Unchanged(XcpOption),
    /// `H_feedback` was lowered; the option as it was before.
    From(XcpOption),
}

/// The router's operation on a whole IPv4 packet: lowers `H_feedback` of
/// its XCP option to `feedback_bytes` if that is smaller (never raises it),
/// and updates the IPv4 header checksum incrementally (RFC 1624), so a
/// header whose checksum was wrong stays wrong by the same amount — a
/// router must not launder a corrupt header.
///
/// Errors (packet unchanged): [`XcpError::Packet`] if the bytes are not a
/// well-formed IPv4 header, [`XcpError::NotFound`] if it carries no XCP
/// option (also for non-leading fragments), other errors as [`find_in`].
pub fn lower_feedback_in_packet(
    packet: &mut [u8],
    feedback_bytes: i32,
) -> Result<Lowered, XcpError> {
    let (at, opt) = find_in_packet(packet)?.ok_or(XcpError::NotFound { kind: OPTION_TYPE })?;
    lower_feedback_at(packet, at, opt, feedback_bytes)
}

/// The second half of [`lower_feedback_in_packet`], for a caller that found
/// the option already ([`find_in_segment`]): `opt` is the XCP option at
/// offset `at` of the IPv4 `packet`. Lowers its `H_feedback` to
/// `feedback_bytes` if that is smaller and updates the header checksum
/// incrementally.
pub fn lower_feedback_at(
    packet: &mut [u8],
    at: usize,
    opt: XcpOption,
    feedback_bytes: i32,
) -> Result<Lowered, XcpError> {
    if feedback_bytes >= opt.feedback_bytes {
        return Ok(Lowered::Unchanged(opt));
    }
    // The four feedback bytes start at `at + 10`, which may be odd (the
    // option may follow a NOP): update every 16-bit header word they touch.
    let start = at + FEEDBACK_AT;
    let first_word = start & !1;
    let end = (start + 4).div_ceil(2) * 2;
    let mut old = [0u8; 6];
    let old = old.get_mut(..end - first_word).ok_or(XcpError::Truncated)?;
    old.copy_from_slice(packet.get(first_word..end).ok_or(XcpError::Truncated)?);
    packet
        .get_mut(start..start + 4)
        .ok_or(XcpError::Truncated)?
        .copy_from_slice(&feedback_bytes.to_be_bytes());
    let mut sum = Ipv4Packet::new_unchecked(&*packet).checksum();
    let new = packet.get(first_word..end).ok_or(XcpError::Truncated)?;
    for (o, n) in old.chunks_exact(2).zip(new.chunks_exact(2)) {
        if let ([o0, o1], [n0, n1]) = (o, n) {
            let (ow, nw) = (
                u16::from_be_bytes([*o0, *o1]),
                u16::from_be_bytes([*n0, *n1]),
            );
            if ow != nw {
                sum = checksum::update(sum, ow, nw);
            }
        }
    }
    Ipv4Packet::new_unchecked(&mut *packet).set_checksum(sum);
    Ok(Lowered::From(opt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_bytes_end_in_nops() {
        let o = XcpOption {
            cwnd_bytes: 1,
            rtt_us: 2,
            feedback_bytes: -3,
        };
        let b = o.to_padded_bytes();
        assert_eq!(&b[..14], &o.to_bytes());
        assert_eq!(&b[14..], &[OPT_NOP, OPT_NOP]);
        assert_eq!(&b[10..14], &[0xFF, 0xFF, 0xFF, 0xFD]);
    }
}

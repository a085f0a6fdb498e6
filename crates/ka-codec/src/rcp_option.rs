//! The native-RCP carrier (DESIGN §7.1; baseline only, not part of KA).
//!
//! For the native-RCP baseline the rate travels in an IPv4 option, RFC 4727
//! experimental type 30 (copy flag 0, class 0, number 30), 8 bytes:
//!
//! ```text
//! 30, 8, rate (u32 BE, bytes/s), rtt (u16 BE, ms)
//! ```
//!
//! Each router lowers `rate` to its own rate if that is smaller, so the path
//! minimum arrives. [`find_in`] and [`lower_in_place`] walk a whole IPv4
//! options area (the bytes between the 20-byte fixed header and `IHL·4`)
//! with the one option walker, [`OptionIter`](crate::wire::opts::OptionIter); after [`lower_in_place`]
//! changed a packet the caller must refresh the IPv4 header checksum.
//! Nothing here panics or loops forever on any input.

use crate::ipv4_option::{Ipv4OptionError, parse_fixed, write_to};
use crate::wire::opts::find_kind;

/// IPv4 option type of the RCP carrier (RFC 4727 experiment, not copied).
pub const OPTION_TYPE: u8 = 30;
/// IPv4 "end of option list".
pub const OPT_EOL: u8 = crate::wire::opts::KIND_EOL;
/// IPv4 "no operation".
pub const OPT_NOP: u8 = crate::wire::opts::KIND_NOP;

/// The errors of the RCP option's functions: the error type the IPv4-option
/// carriers share (never [`Ipv4OptionError::Packet`] here).
pub type RcpError = Ipv4OptionError;

/// The RCP rate option: the path's rate so far and the sender's RTT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RcpOption {
    /// Rate in bytes per second, lowered hop by hop to the path minimum.
    pub rate_bytes_per_sec: u32,
    /// The sender's RTT in milliseconds.
    pub rtt_ms: u16,
}

impl RcpOption {
    /// Encoded length in bytes.
    pub const LEN: usize = 8;

    /// Parses one whole option (`opt` starts at the type byte and is exactly
    /// 8 bytes long).
    pub fn parse(opt: &[u8]) -> Result<RcpOption, RcpError> {
        let [_, _, r0, r1, r2, r3, t0, t1] = parse_fixed(opt, OPTION_TYPE)?;
        Ok(RcpOption {
            rate_bytes_per_sec: u32::from_be_bytes([r0, r1, r2, r3]),
            rtt_ms: u16::from_be_bytes([t0, t1]),
        })
    }

    /// The encoded option.
    pub const fn to_bytes(&self) -> [u8; 8] {
        let r = self.rate_bytes_per_sec.to_be_bytes();
        let t = self.rtt_ms.to_be_bytes();
        [
            OPTION_TYPE,
            Self::LEN as u8,
            r[0],
            r[1],
            r[2],
            r[3],
            t[0],
            t[1],
        ]
    }

    /// Writes the option to the front of `buf`; returns the bytes written (8).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, RcpError> {
        write_to(&self.to_bytes(), OPTION_TYPE, buf)
    }
}

/// Finds the first RCP option in an IPv4 options area.
///
/// Returns its byte offset within `options` and its value, `Ok(None)` if the
/// area (up to an EOL or its end) has none. Errors if the area is malformed
/// before an RCP option is found (an option running past the end, a length
/// byte below 2), or if the RCP option itself is malformed.
pub fn find_in(options: &[u8]) -> Result<Option<(usize, RcpOption)>, RcpError> {
    find_kind(options, OPTION_TYPE, RcpOption::parse)
}

/// Lowers the rate of the RCP option in `options` to `my_rate_bytes_per_sec`
/// if that is smaller. Returns whether the packet changed (if so, the caller
/// must recompute the IPv4 header checksum).
///
/// [`RcpError::NotFound`] if there is no RCP option; other errors as
/// [`find_in`].
pub fn lower_in_place(options: &mut [u8], my_rate_bytes_per_sec: u32) -> Result<bool, RcpError> {
    let (at, opt) = find_in(options)?.ok_or(RcpError::NotFound { kind: OPTION_TYPE })?;
    if my_rate_bytes_per_sec >= opt.rate_bytes_per_sec {
        return Ok(false);
    }
    let lowered = RcpOption {
        rate_bytes_per_sec: my_rate_bytes_per_sec,
        ..opt
    };
    let dst = options.get_mut(at..).ok_or(RcpError::Truncated)?;
    lowered.emit(dst)?;
    Ok(true)
}

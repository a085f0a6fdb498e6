//! The KA TCP options (DESIGN §2.3): RFC 6994 experimental option, kind 253,
//! 16-bit ExID `0x4B41` ("KA").
//!
//! * **KA-Permitted** `253, 4, 0x4B, 0x41` — in SYN and SYN-ACK only; KA is on
//!   for a connection only if both carry it.
//! * **KA-Rate** `253, 6, 0x4B, 0x41, code, count` — on ACKs from a KA
//!   receiver: `code` = L/8 of the latest leading fragment (3…185), `count` a
//!   wrapping counter of leading fragments received.
//!
//! The native-RCP baseline (DESIGN §7.1, not part of KA) negotiates and
//! echoes its rate with a second RFC 6994 experiment, ExID `0x4B52` ("KR"):
//!
//! * **RCP-Permitted** `253, 4, 0x4B, 0x52` — in SYN and SYN-ACK only; the
//!   native-RCP carrier is on only if both carry it.
//! * **RCP-Echo** `253, 8, 0x4B, 0x52, rate (u32 BE, bytes/s)` — on ACKs
//!   (and the SYN-ACK) from a native-RCP receiver: the rate field of the
//!   IPv4 RCP option ([`crate::rcp_option`]) of the data it acknowledges.
//!
//! The XCP baseline (DESIGN §7.2) uses a third experiment, ExID `0x5843`
//! ("XC"):
//!
//! * **XCP-Permitted** `253, 4, 0x58, 0x43` — in SYN and SYN-ACK only; XCP
//!   is on only if both carry it.
//! * **XCP-Echo** `253, 8, 0x58, 0x43, feedback (i32 BE, bytes)` — on ACKs
//!   from an XCP receiver: the `H_feedback` of the IPv4 XCP option
//!   ([`crate::xcp_option`]) of the data it acknowledges.
//!
//! The parsers take exactly one option, starting at its kind byte (a TCP option
//! walker hands over `kind, len, …` with `len` bytes in total). They never
//! panic. A kind-253 option with a different ExID is [`OptionError::UnknownExId`]:
//! another experiment's option, which a walker skips.

use core::fmt;

use crate::scale::Code;
use crate::wire::opts::{NoRoom, write_option};

/// TCP option kind for RFC 6994 experiments (RFC 4727).
pub const KIND_EXPERIMENTAL: u8 = 253;
/// The KA experiment identifier ("KA").
pub const KA_EXID: u16 = 0x4B41;
/// Smallest valid KA-Rate `code` byte (L = 24).
pub const MIN_RATE_CODE: u8 = 3;
/// Largest valid KA-Rate `code` byte (L = 1480).
pub const MAX_RATE_CODE: u8 = 185;

/// The native-RCP experiment identifier ("KR").
pub const RCP_EXID: u16 = 0x4B52;

/// The XCP experiment identifier ("XC").
pub const XCP_EXID: u16 = 0x5843;

const EXID_BYTES: [u8; 2] = KA_EXID.to_be_bytes();
const RCP_EXID_BYTES: [u8; 2] = RCP_EXID.to_be_bytes();
const XCP_EXID_BYTES: [u8; 2] = XCP_EXID.to_be_bytes();

/// Why a KA option could not be parsed or emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionError {
    /// The slice ends before the option does (no kind/length byte, or fewer
    /// bytes than the length byte announces).
    Truncated,
    /// The kind byte is not 253.
    WrongKind(u8),
    /// The length byte is impossible for the option (below 4, or not 4/6 for
    /// the KA ExID, not 4/8 for the RCP and XCP ExIDs).
    BadLength(u8),
    /// The slice holds more bytes than the length byte announces.
    TrailingBytes {
        /// The option's length byte.
        declared: u8,
        /// The slice length handed in.
        actual: usize,
    },
    /// A kind-253 option of another experiment (not an error for a walker:
    /// skip it).
    UnknownExId(u16),
    /// A KA-Rate `code` outside `3..=185`.
    CodeOutOfRange(u8),
    /// The output buffer is smaller than the option.
    BufferTooSmall {
        /// Bytes the option needs.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OptionError::Truncated => f.write_str("KA option truncated"),
            OptionError::WrongKind(k) => write!(f, "TCP option kind {k} is not 253 (experimental)"),
            OptionError::BadLength(l) => {
                write!(f, "bad option length {l} (KA: 4 or 6; RCP, XCP: 4 or 8)")
            }
            OptionError::TrailingBytes { declared, actual } => {
                write!(
                    f,
                    "option length byte says {declared} but {actual} bytes were given"
                )
            }
            OptionError::UnknownExId(id) => {
                write!(f, "experimental option with unknown ExID {id:#06x}")
            }
            OptionError::CodeOutOfRange(c) => {
                write!(
                    f,
                    "KA-Rate code {c} outside {MIN_RATE_CODE}..={MAX_RATE_CODE}"
                )
            }
            OptionError::BufferTooSmall { needed, available } => {
                write!(
                    f,
                    "buffer too small for KA option: need {needed} bytes, have {available}"
                )
            }
        }
    }
}

impl core::error::Error for OptionError {}

/// KA-Permitted: `253, 4, 0x4B, 0x41` (SYN and SYN-ACK only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KaPermitted;

impl KaPermitted {
    /// Encoded length in bytes.
    pub const LEN: usize = 4;
    /// The encoded option.
    pub const BYTES: [u8; 4] = [KIND_EXPERIMENTAL, 4, EXID_BYTES[0], EXID_BYTES[1]];

    /// Parses one whole option; anything but KA-Permitted is an error.
    pub fn parse(opt: &[u8]) -> Result<KaPermitted, OptionError> {
        match KaOption::parse(opt)? {
            KaOption::Permitted => Ok(KaPermitted),
            KaOption::Rate(_) => Err(OptionError::BadLength(KaRate::LEN as u8)),
        }
    }

    /// Writes the option to the front of `buf`; returns the bytes written (4).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        write_out(&Self::BYTES, buf)
    }
}

/// KA-Rate: `253, 6, 0x4B, 0x41, code, count` (ACKs from a KA receiver).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KaRate {
    /// L/8 of the most recent leading fragment received (`3..=185`).
    pub code: u8,
    /// Wrapping count of leading fragments received on the connection; a
    /// change tells the sender the signal is fresh.
    pub count: u8,
}

impl KaRate {
    /// Encoded length in bytes.
    pub const LEN: usize = 6;

    /// A KA-Rate option for a rate code of the paper's scale.
    #[inline]
    pub const fn new(code: Code, count: u8) -> KaRate {
        KaRate {
            code: code.wire(),
            count,
        }
    }

    /// The rate code, if `code` is in `3..=185`.
    #[inline]
    pub const fn rate_code(&self) -> Option<Code> {
        Code::from_wire(self.code)
    }

    /// Parses one whole option; anything but a valid KA-Rate is an error.
    pub fn parse(opt: &[u8]) -> Result<KaRate, OptionError> {
        match KaOption::parse(opt)? {
            KaOption::Rate(r) => Ok(r),
            KaOption::Permitted => Err(OptionError::BadLength(KaPermitted::LEN as u8)),
        }
    }

    /// Writes the option to the front of `buf`; returns the bytes written (6).
    /// Refuses a `code` outside `3..=185`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        check_code(self.code)?;
        let bytes = [
            KIND_EXPERIMENTAL,
            Self::LEN as u8,
            EXID_BYTES[0],
            EXID_BYTES[1],
            self.code,
            self.count,
        ];
        write_out(&bytes, buf)
    }
}

/// Either KA option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KaOption {
    /// KA-Permitted.
    Permitted,
    /// KA-Rate.
    Rate(KaRate),
}

impl KaOption {
    /// Parses one whole option, `opt` starting at its kind byte and exactly
    /// `len` bytes long.
    ///
    /// Checks, in order: kind 253, length byte ≥ 4 and equal to the slice
    /// length, ExID `0x4B41` (else [`OptionError::UnknownExId`]), length 4
    /// or 6, and for KA-Rate the code range.
    pub fn parse(opt: &[u8]) -> Result<KaOption, OptionError> {
        let (len, body) = split_experimental(opt, KA_EXID)?;
        match *body {
            [] => Ok(KaOption::Permitted),
            [code, count] => {
                check_code(code)?;
                Ok(KaOption::Rate(KaRate { code, count }))
            }
            _ => Err(OptionError::BadLength(len)),
        }
    }

    /// Encoded length in bytes (4 or 6).
    #[inline]
    pub const fn wire_len(&self) -> usize {
        match self {
            KaOption::Permitted => KaPermitted::LEN,
            KaOption::Rate(_) => KaRate::LEN,
        }
    }

    /// Writes the option to the front of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        match self {
            KaOption::Permitted => KaPermitted.emit(buf),
            KaOption::Rate(r) => r.emit(buf),
        }
    }
}

impl From<KaRate> for KaOption {
    fn from(r: KaRate) -> Self {
        KaOption::Rate(r)
    }
}

impl From<KaPermitted> for KaOption {
    fn from(_: KaPermitted) -> Self {
        KaOption::Permitted
    }
}

/// RCP-Permitted: `253, 4, 0x4B, 0x52` (SYN and SYN-ACK only; native-RCP
/// baseline).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RcpPermitted;

impl RcpPermitted {
    /// Encoded length in bytes.
    pub const LEN: usize = 4;
    /// The encoded option.
    pub const BYTES: [u8; 4] = [KIND_EXPERIMENTAL, 4, RCP_EXID_BYTES[0], RCP_EXID_BYTES[1]];

    /// Writes the option to the front of `buf`; returns the bytes written (4).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        write_out(&Self::BYTES, buf)
    }
}

/// RCP-Echo: `253, 8, 0x4B, 0x52, rate` (native-RCP baseline): the rate, in
/// bytes per second, that the IPv4 RCP option of the acknowledged data
/// carried when it arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RcpEcho {
    /// The path's rate, bytes per second.
    pub rate_bytes_per_sec: u32,
}

impl RcpEcho {
    /// Encoded length in bytes.
    pub const LEN: usize = 8;

    /// Writes the option to the front of `buf`; returns the bytes written (8).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        let r = self.rate_bytes_per_sec.to_be_bytes();
        let bytes = [
            KIND_EXPERIMENTAL,
            Self::LEN as u8,
            RCP_EXID_BYTES[0],
            RCP_EXID_BYTES[1],
            r[0],
            r[1],
            r[2],
            r[3],
        ];
        write_out(&bytes, buf)
    }
}

/// Either native-RCP TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RcpTcpOption {
    /// RCP-Permitted.
    Permitted,
    /// RCP-Echo.
    Echo(RcpEcho),
}

impl RcpTcpOption {
    /// Parses one whole option, `opt` starting at its kind byte and exactly
    /// `len` bytes long. Checks kind 253, length byte ≥ 4 and equal to the
    /// slice length, ExID `0x4B52` (else [`OptionError::UnknownExId`]),
    /// then length 4 or 8.
    pub fn parse(opt: &[u8]) -> Result<RcpTcpOption, OptionError> {
        let (len, body) = split_experimental(opt, RCP_EXID)?;
        match *body {
            [] => Ok(RcpTcpOption::Permitted),
            [a, b, c, d] => Ok(RcpTcpOption::Echo(RcpEcho {
                rate_bytes_per_sec: u32::from_be_bytes([a, b, c, d]),
            })),
            _ => Err(OptionError::BadLength(len)),
        }
    }

    /// Encoded length in bytes (4 or 8).
    #[inline]
    pub const fn wire_len(&self) -> usize {
        match self {
            RcpTcpOption::Permitted => RcpPermitted::LEN,
            RcpTcpOption::Echo(_) => RcpEcho::LEN,
        }
    }

    /// Writes the option to the front of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        match self {
            RcpTcpOption::Permitted => RcpPermitted.emit(buf),
            RcpTcpOption::Echo(e) => e.emit(buf),
        }
    }
}

/// XCP-Permitted: `253, 4, 0x58, 0x43` (SYN and SYN-ACK only; XCP
/// baseline).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct XcpPermitted;

impl XcpPermitted {
    /// Encoded length in bytes.
    pub const LEN: usize = 4;
    /// The encoded option.
    pub const BYTES: [u8; 4] = [KIND_EXPERIMENTAL, 4, XCP_EXID_BYTES[0], XCP_EXID_BYTES[1]];

    /// Writes the option to the front of `buf`; returns the bytes written (4).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        write_out(&Self::BYTES, buf)
    }
}

/// XCP-Echo: `253, 8, 0x58, 0x43, feedback` (XCP baseline): the window
/// change, in bytes, that the routers granted the acknowledged data (the
/// `H_feedback` of its IPv4 XCP option as it arrived; summed if one ACK
/// covers several such packets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct XcpEcho {
    /// Granted window change, bytes (negative: decrease).
    pub feedback_bytes: i32,
}

impl XcpEcho {
    /// Encoded length in bytes.
    pub const LEN: usize = 8;

    /// Writes the option to the front of `buf`; returns the bytes written (8).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        let f = self.feedback_bytes.to_be_bytes();
        let bytes = [
            KIND_EXPERIMENTAL,
            Self::LEN as u8,
            XCP_EXID_BYTES[0],
            XCP_EXID_BYTES[1],
            f[0],
            f[1],
            f[2],
            f[3],
        ];
        write_out(&bytes, buf)
    }
}

/// Either XCP TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XcpTcpOption {
    /// XCP-Permitted.
    Permitted,
    /// XCP-Echo.
    Echo(XcpEcho),
}

impl XcpTcpOption {
    /// Parses one whole option, `opt` starting at its kind byte and exactly
    /// `len` bytes long. Checks kind 253, length byte ≥ 4 and equal to the
    /// slice length, ExID `0x5843` (else [`OptionError::UnknownExId`]),
    /// then length 4 or 8.
    pub fn parse(opt: &[u8]) -> Result<XcpTcpOption, OptionError> {
        let (len, body) = split_experimental(opt, XCP_EXID)?;
        match *body {
            [] => Ok(XcpTcpOption::Permitted),
            [a, b, c, d] => Ok(XcpTcpOption::Echo(XcpEcho {
                feedback_bytes: i32::from_be_bytes([a, b, c, d]),
            })),
            _ => Err(OptionError::BadLength(len)),
        }
    }

    /// Encoded length in bytes (4 or 8).
    #[inline]
    pub const fn wire_len(&self) -> usize {
        match self {
            XcpTcpOption::Permitted => XcpPermitted::LEN,
            XcpTcpOption::Echo(_) => XcpEcho::LEN,
        }
    }

    /// Writes the option to the front of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, OptionError> {
        match self {
            XcpTcpOption::Permitted => XcpPermitted.emit(buf),
            XcpTcpOption::Echo(e) => e.emit(buf),
        }
    }
}

/// The checks all experiments' parsers share, in order: kind 253, a length
/// byte of at least 4 that equals the slice length, then the ExID `exid`
/// (another one is [`OptionError::UnknownExId`]). Returns the length byte and
/// the bytes after the ExID.
fn split_experimental(opt: &[u8], exid: u16) -> Result<(u8, &[u8]), OptionError> {
    let (&kind, rest) = opt.split_first().ok_or(OptionError::Truncated)?;
    if kind != KIND_EXPERIMENTAL {
        return Err(OptionError::WrongKind(kind));
    }
    let &len = rest.first().ok_or(OptionError::Truncated)?;
    if len < 4 {
        return Err(OptionError::BadLength(len));
    }
    let declared = usize::from(len);
    if opt.len() < declared {
        return Err(OptionError::Truncated);
    }
    if opt.len() > declared {
        return Err(OptionError::TrailingBytes {
            declared: len,
            actual: opt.len(),
        });
    }
    match *opt {
        [_, _, hi, lo, ref body @ ..] => match u16::from_be_bytes([hi, lo]) {
            id if id == exid => Ok((len, body)),
            other => Err(OptionError::UnknownExId(other)),
        },
        // Unreachable: opt.len() == len ≥ 4.
        _ => Err(OptionError::Truncated),
    }
}

fn check_code(code: u8) -> Result<(), OptionError> {
    if (MIN_RATE_CODE..=MAX_RATE_CODE).contains(&code) {
        Ok(())
    } else {
        Err(OptionError::CodeOutOfRange(code))
    }
}

fn write_out(bytes: &[u8], buf: &mut [u8]) -> Result<usize, OptionError> {
    write_option(bytes, buf)
        .map_err(|NoRoom { needed, available }| OptionError::BufferTooSmall { needed, available })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rcp_options_round_trip() {
        let mut buf = [0u8; 8];
        assert_eq!(RcpPermitted.emit(&mut buf), Ok(4));
        assert_eq!(&buf[..4], &[253, 4, 0x4B, 0x52]);
        assert_eq!(RcpTcpOption::parse(&buf[..4]), Ok(RcpTcpOption::Permitted));
        let echo = RcpEcho {
            rate_bytes_per_sec: 18_750_000,
        };
        assert_eq!(RcpTcpOption::Echo(echo).emit(&mut buf), Ok(8));
        assert_eq!(buf, [253, 8, 0x4B, 0x52, 0x01, 0x1E, 0x1A, 0x30]);
        assert_eq!(RcpTcpOption::parse(&buf), Ok(RcpTcpOption::Echo(echo)));
        assert_eq!(RcpTcpOption::Echo(echo).wire_len(), 8);
        assert_eq!(
            RcpEcho {
                rate_bytes_per_sec: 1
            }
            .emit(&mut [0u8; 7]),
            Err(OptionError::BufferTooSmall {
                needed: 8,
                available: 7
            })
        );
    }

    #[test]
    fn rcp_and_ka_exids_do_not_mix() {
        // Each parser rejects the other experiment's options as unknown.
        assert_eq!(
            RcpTcpOption::parse(&KaPermitted::BYTES),
            Err(OptionError::UnknownExId(KA_EXID))
        );
        assert_eq!(
            KaOption::parse(&RcpPermitted::BYTES),
            Err(OptionError::UnknownExId(RCP_EXID))
        );
        // Lengths other than 4 and 8 are errors for the RCP ExID.
        assert_eq!(
            RcpTcpOption::parse(&[253, 6, 0x4B, 0x52, 0, 0]),
            Err(OptionError::BadLength(6))
        );
        assert_eq!(
            RcpTcpOption::parse(&[253, 8, 0x4B, 0x52, 0, 0]),
            Err(OptionError::Truncated)
        );
        assert_eq!(
            RcpTcpOption::parse(&[253, 3, 0x4B]),
            Err(OptionError::BadLength(3))
        );
        assert_eq!(RcpTcpOption::parse(&[]), Err(OptionError::Truncated));
        assert_eq!(
            RcpTcpOption::parse(&[254, 4, 0x4B, 0x52]),
            Err(OptionError::WrongKind(254))
        );
        assert_eq!(
            RcpTcpOption::parse(&[253, 4, 0x4B, 0x52, 0]),
            Err(OptionError::TrailingBytes {
                declared: 4,
                actual: 5
            })
        );
    }

    #[test]
    fn rcp_parser_never_panics_on_short_or_long_input() {
        let mut bytes = [0u8; 12];
        for len in 0..=bytes.len() {
            for b1 in [0u8, 2, 3, 4, 8, 9, 255] {
                bytes[0] = 253;
                if len > 1 {
                    bytes[1] = b1;
                }
                let _ = RcpTcpOption::parse(&bytes[..len]);
                let _ = KaOption::parse(&bytes[..len]);
            }
        }
    }
}

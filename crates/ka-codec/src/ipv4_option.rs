//! The error type the IPv4-option carriers share: the native-RCP rate
//! ([`crate::rcp_option`], type 30) and the XCP congestion header
//! ([`crate::xcp_option`], type 94).
//!
//! Both carriers parse a fixed-length option, walk an options area with the
//! one walker ([`OptionIter`](crate::wire::opts::OptionIter)) and write the
//! option into a buffer, so they fail in the same ways. Where a message
//! needs to say which option was meant, the variant carries its type number
//! ([`Ipv4OptionError::WrongType`], [`Ipv4OptionError::NotFound`],
//! [`Ipv4OptionError::BufferTooSmall`]) and the message names it.

use core::fmt;

use crate::wire::WireError;
use crate::wire::opts::{NoRoom, OptionFault, write_option};

/// Why an IPv4 option (RCP or XCP), an options area or a packet could not be
/// parsed, changed or emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ipv4OptionError {
    /// The slice ends before the option does (missing type/length byte, or
    /// fewer bytes than the length byte announces).
    Truncated,
    /// The option's type byte is not the one expected.
    WrongType {
        /// The type byte found.
        found: u8,
        /// The option type expected.
        expected: u8,
    },
    /// The length byte is not the option's fixed length (8 for RCP, 14 for
    /// XCP), or below 2 for any option in an options area (which would make
    /// the walk stall).
    BadLength(u8),
    /// The slice holds more bytes than the length byte announces.
    TrailingBytes {
        /// The option's length byte.
        declared: u8,
        /// The slice length handed in.
        actual: usize,
    },
    /// The options area (or packet) has no option of this type.
    NotFound {
        /// The option type looked for.
        kind: u8,
    },
    /// The output buffer is too small for the option.
    BufferTooSmall {
        /// The option type to be written.
        kind: u8,
        /// Bytes needed.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
    /// The packet is not a well-formed IPv4 header (the XCP packet-level
    /// functions only; see
    /// [`Ipv4Packet::new_checked`](crate::wire::ipv4::Ipv4Packet::new_checked)).
    Packet(WireError),
}

impl From<OptionFault> for Ipv4OptionError {
    /// A walk that stops at a length byte below 2 is
    /// [`Ipv4OptionError::BadLength`]; one that runs out of bytes is
    /// [`Ipv4OptionError::Truncated`].
    fn from(f: OptionFault) -> Self {
        f.too_short_len()
            .map_or(Ipv4OptionError::Truncated, Ipv4OptionError::BadLength)
    }
}

/// "RCP option (type 30)": an option type as the messages name it.
struct Named(u8);

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            crate::rcp_option::OPTION_TYPE => "RCP",
            crate::xcp_option::OPTION_TYPE => "XCP",
            _ => "IPv4",
        };
        write!(f, "{name} option (type {})", self.0)
    }
}

impl fmt::Display for Ipv4OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Ipv4OptionError::Truncated => f.write_str("IPv4 option truncated"),
            Ipv4OptionError::WrongType { found, expected } => {
                write!(f, "IPv4 option type {found} is not the {}", Named(expected))
            }
            Ipv4OptionError::BadLength(l) => write!(f, "bad IPv4 option length {l}"),
            Ipv4OptionError::TrailingBytes { declared, actual } => write!(
                f,
                "option length byte says {declared} but {actual} bytes were given"
            ),
            Ipv4OptionError::NotFound { kind } => {
                write!(f, "no {} in the IPv4 options", Named(kind))
            }
            Ipv4OptionError::BufferTooSmall {
                kind,
                needed,
                available,
            } => write!(
                f,
                "buffer too small for the {}: need {needed} bytes, have {available}",
                Named(kind)
            ),
            Ipv4OptionError::Packet(e) => write!(f, "not an IPv4 packet: {e}"),
        }
    }
}

impl core::error::Error for Ipv4OptionError {}

/// Checks one whole fixed-length option of type `kind` (`opt` starts at the
/// type byte and is exactly `N` bytes long, the length byte says `N`) and
/// returns its bytes.
pub(crate) fn parse_fixed<const N: usize>(
    opt: &[u8],
    kind: u8,
) -> Result<[u8; N], Ipv4OptionError> {
    let (&found, rest) = opt.split_first().ok_or(Ipv4OptionError::Truncated)?;
    if found != kind {
        return Err(Ipv4OptionError::WrongType {
            found,
            expected: kind,
        });
    }
    let &len = rest.first().ok_or(Ipv4OptionError::Truncated)?;
    if usize::from(len) != N {
        return Err(Ipv4OptionError::BadLength(len));
    }
    match <[u8; N]>::try_from(opt) {
        Ok(bytes) => Ok(bytes),
        Err(_) if opt.len() < N => Err(Ipv4OptionError::Truncated),
        Err(_) => Err(Ipv4OptionError::TrailingBytes {
            declared: len,
            actual: opt.len(),
        }),
    }
}

/// Writes the encoded option `bytes` of type `kind` to the front of `buf`;
/// returns the bytes written.
pub(crate) fn write_to(bytes: &[u8], kind: u8, buf: &mut [u8]) -> Result<usize, Ipv4OptionError> {
    write_option(bytes, buf).map_err(|NoRoom { needed, available }| {
        Ipv4OptionError::BufferTooSmall {
            kind,
            needed,
            available,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn messages_name_the_option_and_its_type() {
        let wrong = Ipv4OptionError::WrongType {
            found: 7,
            expected: 30,
        };
        assert_eq!(
            wrong.to_string(),
            "IPv4 option type 7 is not the RCP option (type 30)"
        );
        assert_eq!(
            Ipv4OptionError::NotFound { kind: 94 }.to_string(),
            "no XCP option (type 94) in the IPv4 options"
        );
        let small = Ipv4OptionError::BufferTooSmall {
            kind: 94,
            needed: 16,
            available: 3,
        };
        assert_eq!(
            small.to_string(),
            "buffer too small for the XCP option (type 94): need 16 bytes, have 3"
        );
    }
}

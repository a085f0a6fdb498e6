//! The one walker of type-length-value option areas: TCP options (RFC 9293
//! §3.1) and IPv4 options (RFC 791) share the layout
//!
//! ```text
//! 0 (End of Option List) | 1 (No-Operation) | kind, length, body (length − 2 bytes)
//! ```
//!
//! so every option walk in ka goes through [`OptionIter`]: the IPv4
//! [`Ipv4Options`](super::ipv4::Ipv4Options) and
//! [`copied_options`](super::ipv4::copied_options), the TCP
//! [`TcpOptions::parse`](super::tcp::TcpOptions::parse), the RCP and XCP IPv4
//! options ([`crate::rcp_option::find_in`], [`crate::xcp_option::find_in`]),
//! and the router's and trace tool's option lookups.
//!
//! The iterator never panics and never loops: every step advances by at
//! least one byte, and after a malformed option it yields one
//! [`OptionFault`] and stops.

use core::fmt;

/// End of Option List (TCP and IPv4).
pub const KIND_EOL: u8 = 0;
/// No-Operation (TCP and IPv4).
pub const KIND_NOP: u8 = 1;

/// One option of an options area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawOption<'a> {
    /// Offset of the kind byte within the area handed to [`OptionIter::new`].
    pub offset: usize,
    /// The kind (TCP) or type (IPv4) byte.
    pub kind: u8,
    /// The bytes after kind and length (empty for a No-Operation).
    pub body: &'a [u8],
    /// The whole option, kind byte included (one byte for a No-Operation).
    pub bytes: &'a [u8],
}

/// Why an options area could not be walked further.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptionFault {
    /// The area ends right after an option's kind byte (no length byte).
    NoLength {
        /// Offset of the kind byte.
        offset: usize,
    },
    /// A length byte of 0 or 1 (an option covers at least its kind and
    /// length bytes; a walker that believed it would stall).
    TooShort {
        /// Offset of the kind byte.
        offset: usize,
        /// The length byte.
        len: u8,
    },
    /// The option runs past the end of the area.
    PastEnd {
        /// Offset of the kind byte.
        offset: usize,
        /// The length byte.
        len: u8,
    },
}

impl OptionFault {
    /// Offset of the offending option's kind byte.
    pub fn offset(&self) -> usize {
        match *self {
            OptionFault::NoLength { offset }
            | OptionFault::TooShort { offset, .. }
            | OptionFault::PastEnd { offset, .. } => offset,
        }
    }

    /// The length byte of a [`OptionFault::TooShort`] fault; `None` for the
    /// faults where the area ran out of bytes. Option decoders map the first
    /// to a bad-length error and the others to a truncation error.
    pub fn too_short_len(&self) -> Option<u8> {
        match *self {
            OptionFault::TooShort { len, .. } => Some(len),
            OptionFault::NoLength { .. } | OptionFault::PastEnd { .. } => None,
        }
    }
}

/// Finds the first option of `kind` in an options area and decodes it with
/// `parse` (given the option's whole bytes, kind and length included).
/// Returns its offset within `area` and its value, `Ok(None)` if the area (up
/// to an EOL or its end) has none. Errors if the area is malformed before
/// such an option is found, or if `parse` fails.
pub fn find_kind<T, E: From<OptionFault>>(
    area: &[u8],
    kind: u8,
    parse: impl FnOnce(&[u8]) -> Result<T, E>,
) -> Result<Option<(usize, T)>, E> {
    for opt in OptionIter::new(area) {
        let opt = opt?;
        if opt.kind == kind {
            return parse(opt.bytes).map(|o| Some((opt.offset, o)));
        }
    }
    Ok(None)
}

/// An encoded option did not fit the buffer it was to be written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRoom {
    /// Bytes the option needs.
    pub(crate) needed: usize,
    /// Bytes the buffer has.
    pub(crate) available: usize,
}

/// Writes the encoded option `bytes` to the front of `buf` and returns its
/// length: the one option writer behind the TCP options' and the IPv4
/// options' `emit`, as [`find_kind`] is their one finder.
pub(crate) fn write_option(bytes: &[u8], buf: &mut [u8]) -> Result<usize, NoRoom> {
    let available = buf.len();
    let dst = buf.get_mut(..bytes.len()).ok_or(NoRoom {
        needed: bytes.len(),
        available,
    })?;
    dst.copy_from_slice(bytes);
    Ok(bytes.len())
}

impl fmt::Display for OptionFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OptionFault::NoLength { offset } => {
                write!(f, "option at {offset} has no length byte")
            }
            OptionFault::TooShort { offset, len } => {
                write!(f, "option at {offset} has length {len} (below 2)")
            }
            OptionFault::PastEnd { offset, len } => {
                write!(f, "option at {offset} (length {len}) runs past the end")
            }
        }
    }
}

impl core::error::Error for OptionFault {}

impl From<OptionFault> for super::WireError {
    fn from(_: OptionFault) -> Self {
        super::WireError::BadOption
    }
}

/// Iterates the options of a TCP or IPv4 options area: yields every option
/// (No-Operations included) with its offset, kind and body; stops at End of
/// Option List or the end of the area; yields `Err` once and stops on a
/// malformed option.
#[derive(Debug, Clone)]
pub struct OptionIter<'a> {
    area: &'a [u8],
    at: usize,
    done: bool,
}

impl<'a> OptionIter<'a> {
    /// Walks `area`: a TCP header's bytes `20..data offset`, or an IPv4
    /// header's bytes `20..IHL·4`.
    pub const fn new(area: &'a [u8]) -> Self {
        OptionIter {
            area,
            at: 0,
            done: false,
        }
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<RawOption<'a>, OptionFault>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let offset = self.at;
        let rest = self.area.get(offset..)?;
        let (&kind, after) = rest.split_first()?;
        match kind {
            KIND_EOL => {
                self.done = true;
                None
            }
            KIND_NOP => {
                self.at = offset + 1;
                Some(Ok(RawOption {
                    offset,
                    kind,
                    body: &[],
                    bytes: rest.get(..1).unwrap_or(&[]),
                }))
            }
            _ => {
                self.done = true;
                let Some(&len) = after.first() else {
                    return Some(Err(OptionFault::NoLength { offset }));
                };
                if len < 2 {
                    return Some(Err(OptionFault::TooShort { offset, len }));
                }
                let n = usize::from(len);
                let Some(bytes) = rest.get(..n) else {
                    return Some(Err(OptionFault::PastEnd { offset, len }));
                };
                self.done = false;
                self.at = offset + n;
                Some(Ok(RawOption {
                    offset,
                    kind,
                    body: bytes.get(2..).unwrap_or(&[]),
                    bytes,
                }))
            }
        }
    }
}

impl core::iter::FusedIterator for OptionIter<'_> {}

/// An RFC 6994 experimental option's ExID and the bytes after it, if
/// `opt` is a well-formed kind-253 option (length at least 4).
pub fn experiment<'a>(opt: &RawOption<'a>) -> Option<(u16, &'a [u8])> {
    if opt.kind != crate::options::KIND_EXPERIMENTAL {
        return None;
    }
    match opt.body {
        [e0, e1, rest @ ..] => Some((u16::from_be_bytes([*e0, *e1]), rest)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    type Walked = Result<(usize, u8, Vec<u8>), OptionFault>;

    fn walk(area: &[u8]) -> Vec<Walked> {
        OptionIter::new(area)
            .map(|o| o.map(|o| (o.offset, o.kind, o.body.to_vec())))
            .collect()
    }

    #[test]
    fn yields_offsets_kinds_bodies() {
        let area = [1, 2, 4, 5, 0xb4, 1, 253, 4, 0x4b, 0x41, 0, 9, 9];
        assert_eq!(
            walk(&area),
            [
                Ok((0, 1, Vec::new())),
                Ok((1, 2, std::vec![5, 0xb4])),
                Ok((5, 1, Vec::new())),
                Ok((6, 253, std::vec![0x4b, 0x41])),
            ]
        );
        let o = OptionIter::new(&area).nth(3).unwrap().unwrap();
        assert_eq!(o.bytes, &[253, 4, 0x4b, 0x41]);
        assert_eq!(experiment(&o), Some((0x4b41, &[][..])));
    }

    #[test]
    fn faults_once_then_stops() {
        assert_eq!(walk(&[7]), [Err(OptionFault::NoLength { offset: 0 })]);
        assert_eq!(
            walk(&[1, 7, 1, 1]),
            [
                Ok((0, 1, Vec::new())),
                Err(OptionFault::TooShort { offset: 1, len: 1 })
            ]
        );
        assert_eq!(
            walk(&[7, 9, 0, 0]),
            [Err(OptionFault::PastEnd { offset: 0, len: 9 })]
        );
        assert!(walk(&[]).is_empty());
        assert!(walk(&[0, 7]).is_empty());
    }
}

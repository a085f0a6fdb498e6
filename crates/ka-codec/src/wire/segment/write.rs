//! [`SegmentMut`]: the rewrites the router's stages make in place, through
//! the packet's one parse.

use super::{Layout, Segment};
use crate::wire::ipv4::Ipv4Packet;
use crate::wire::tcp::{self, TcpPacket};
use crate::wire::{WireError, checksum, sub_mut};
use core::ops::Deref;

/// A parsed IP packet over mutable bytes: [`Segment`]'s facts plus the
/// in-place rewrites of the router's stages. None of them moves a header,
/// so the layout stays valid.
#[derive(Debug, PartialEq, Eq)]
pub struct SegmentMut<'a> {
    buf: &'a mut [u8],
    layout: Layout,
}

impl Deref for SegmentMut<'_> {
    type Target = Layout;

    #[inline]
    fn deref(&self) -> &Layout {
        &self.layout
    }
}

impl<'a> SegmentMut<'a> {
    /// Parses `packet` once ([`Layout::parse`]).
    #[inline]
    pub fn parse(packet: &'a mut [u8]) -> Result<Self, WireError> {
        Ok(SegmentMut {
            layout: Layout::parse(packet)?,
            buf: packet,
        })
    }

    /// Joins bytes with the layout parsed from them earlier (see the module
    /// docs). Never panics, whatever the bytes.
    #[inline]
    pub fn with_layout(packet: &'a mut [u8], layout: Layout) -> Self {
        SegmentMut {
            buf: packet,
            layout,
        }
    }

    /// The layout.
    #[inline]
    pub const fn layout(&self) -> Layout {
        self.layout
    }

    /// A read-only view of the same packet.
    #[inline]
    pub fn as_segment(&self) -> Segment<'_> {
        Segment::with_layout(self.buf, self.layout)
    }

    /// The whole buffer, mutable.
    #[inline]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf
    }

    /// The buffer back.
    #[inline]
    pub fn into_inner(self) -> &'a mut [u8] {
        self.buf
    }

    /// The IPv4 header view, mutable, for IPv4.
    #[inline]
    pub fn ipv4_mut(&mut self) -> Option<Ipv4Packet<&mut [u8]>> {
        if self.is_ipv4() {
            Some(Ipv4Packet::new_unchecked(&mut *self.buf))
        } else {
            None
        }
    }

    /// The TCP segment view, mutable, if [`Layout::is_tcp`].
    #[inline]
    pub fn tcp_mut(&mut self) -> Option<TcpPacket<&mut [u8]>> {
        let at = self.l4_offset()?;
        let end = self.total_len();
        self.is_tcp()
            .then(|| TcpPacket::new_unchecked(sub_mut(self.buf, at, end)))
    }

    /// Stores `window` in the TCP window field and patches the checksum
    /// (RFC 1624; see [`TcpPacket::set_window_incremental`]). Returns the
    /// window the segment had, `None` (nothing written) unless
    /// [`Layout::is_tcp`].
    #[inline]
    pub fn set_tcp_window(&mut self, window: u16) -> Option<u16> {
        let at = self.l4_offset()? + 14;
        if !self.is_tcp() {
            return None;
        }
        let f = self.buf.get_mut(at..)?.first_chunk_mut::<4>()?;
        let old = u16::from_be_bytes([f[0], f[1]]);
        if old != window {
            let sum = checksum::update(u16::from_be_bytes([f[2], f[3]]), old, window);
            let ([w0, w1], [c0, c1]) = (window.to_be_bytes(), sum.to_be_bytes());
            *f = [w0, w1, c0, c1];
        }
        Some(old)
    }

    /// Replaces bytes of the TCP options area, starting `at` bytes into it,
    /// with `new`, and patches the TCP checksum incrementally (RFC 1624), so
    /// a segment whose checksum was right stays right (and one that was
    /// wrong stays wrong by the same amount). Returns false, writing
    /// nothing, if the range is not inside the options area or the packet
    /// is not TCP.
    pub fn patch_tcp_options(&mut self, at: usize, new: &[u8]) -> bool {
        if !self.is_tcp() {
            return false;
        }
        let tcp_at = self.layout.l4_off();
        let opts_len = self.tcp_header_len().saturating_sub(tcp::HEADER_LEN);
        if at.saturating_add(new.len()) > opts_len {
            return false;
        }
        patch_tcp(self.buf, tcp_at, tcp_at + tcp::HEADER_LEN + at, new)
    }
}

/// Replaces `packet[at..at + new.len()]` with `new` and patches the TCP
/// checksum at `tcp_at + 16` word by word (RFC 1624). `at` must not be
/// before `tcp_at + 20` (the checksum field itself is never rewritten).
/// Returns false, writing nothing, if anything is out of range.
pub fn patch_tcp(packet: &mut [u8], tcp_at: usize, at: usize, new: &[u8]) -> bool {
    let end = at.saturating_add(new.len());
    if at < tcp_at.saturating_add(tcp::HEADER_LEN) || packet.len() < end {
        return false;
    }
    // The 16-bit words (relative to the TCP header's start) `new` touches.
    let w0 = tcp_at + ((at - tcp_at) & !1);
    let w1 = tcp_at + (end - tcp_at).div_ceil(2) * 2;
    let mut old = [0u8; 16];
    let (Some(o), Some(words)) = (old.get_mut(..w1 - w0), packet.get(w0..w1)) else {
        return false;
    };
    o.copy_from_slice(words);
    let Some(field) = packet.get_mut(at..end) else {
        return false;
    };
    field.copy_from_slice(new);
    let (Some(&[c0, c1]), Some(o), Some(n)) = (
        packet.get(tcp_at + 16..tcp_at + 18),
        old.get(..w1 - w0),
        packet.get(w0..w1),
    ) else {
        return false;
    };
    let mut c = u16::from_be_bytes([c0, c1]);
    for (o, n) in o.chunks_exact(2).zip(n.chunks_exact(2)) {
        if let (&[o0, o1], &[n0, n1]) = (o, n) {
            c = checksum::update(
                c,
                u16::from_be_bytes([o0, o1]),
                u16::from_be_bytes([n0, n1]),
            );
        }
    }
    if let Some(dst) = packet.get_mut(tcp_at + 16..tcp_at + 18) {
        dst.copy_from_slice(&c.to_be_bytes());
    }
    true
}

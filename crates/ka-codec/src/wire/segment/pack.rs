//! A [`Layout`] as it is built ([`Fields`], in registers) and packed into
//! its two words, and its `Debug` form (the unpacked fields).

use core::num::NonZeroU64;

use super::{F_TCP, F_V6, Layout, TcpPacket, Version, sub};

impl core::fmt::Debug for Layout {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Layout")
            .field("version", &self.version())
            .field("ip_header_len", &self.ip_header_len())
            .field("total_len", &self.total_len())
            .field("flags", &self.flags())
            .field("frag_offset", &self.frag_offset())
            .field("l4_proto", &self.proto())
            .field("l4_offset", &self.l4_off())
            .field("tcp_header_len", &self.tcp_header_len())
            .field("frag_header_at", &self.frag_hdr())
            .field("unfragmentable_len", &self.unfrag())
            .field("next_header_field", &self.nhf())
            .finish()
    }
}

/// A parse being built, field by field (kept in registers; packed into a
/// [`Layout`] at the end).
#[derive(Clone, Copy)]
pub(super) struct Fields {
    pub(super) total_len: u32,
    // Offsets fit 16 bits: an IPv6 header chain walked by `ipv6::layout`
    // ends within 40 + 9 · 2048 bytes, an IPv4 header within 60.
    pub(super) l4_offset: u16,
    pub(super) frag_header_at: u16,
    pub(super) unfragmentable_len: u16,
    pub(super) next_header_field: u16,
    /// Fragment offset in bytes.
    pub(super) frag_offset: u16,
    pub(super) version: Version,
    pub(super) ip_header_len: u8,
    pub(super) l4_proto: u8,
    pub(super) tcp_header_len: u8,
    pub(super) flags: u8,
}

impl Fields {
    pub(super) const fn empty(version: Version) -> Self {
        Fields {
            total_len: 0,
            l4_offset: 0,
            frag_header_at: 0,
            unfragmentable_len: 0,
            next_header_field: 0,
            frag_offset: 0,
            version,
            ip_header_len: 0,
            l4_proto: 0,
            tcp_header_len: 0,
            flags: 0,
        }
    }

    /// Sets the TCP flag if a checked TCP header is at `l4_offset`.
    pub(super) fn check_tcp(&mut self, packet: &[u8]) {
        let seg = sub(packet, self.l4_offset as usize, self.total_len as usize);
        if let Ok(t) = TcpPacket::new_checked(seg) {
            self.flags |= F_TCP;
            self.tcp_header_len = t.header_len() as u8;
        }
    }

    /// The two words. Every parse sets `ip_header_len` (20–60, or 40), so
    /// the low word is not zero; the total length (at most 40 + 65 535)
    /// fits 20 bits, the TCP header length (a multiple of 4, at most 60)
    /// 4 bits as a count of words.
    #[inline]
    pub(super) const fn pack(self) -> Layout {
        let v6 = if matches!(self.version, Version::V6) {
            F_V6
        } else {
            0
        };
        let lo = self.ip_header_len as u64
            | ((self.flags | v6) as u64) << 8
            | (self.l4_proto as u64) << 16
            | ((self.tcp_header_len >> 2) as u64 & 0xF) << 24
            | (self.frag_offset as u64) << 28
            | (self.total_len as u64 & 0xF_FFFF) << 44;
        let hi = self.l4_offset as u64
            | (self.frag_header_at as u64) << 16
            | (self.unfragmentable_len as u64) << 32
            | (self.next_header_field as u64) << 48;
        let lo = match NonZeroU64::new(lo) {
            Some(lo) => lo,
            None => NonZeroU64::MIN,
        };
        Layout { lo, hi }
    }
}

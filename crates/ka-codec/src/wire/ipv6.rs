//! IPv6 header view, the Fragment extension header and an extension-header
//! walker (RFC 8200).

use super::{
    WireError, array, be16, be32, byte, check_ip, check_len, put_bytes, put8, put16, put32, sub,
    sub_mut,
};

/// The fixed IPv6 header length.
pub const HEADER_LEN: usize = 40;
/// Next Header value of the Hop-by-Hop Options header.
pub const NEXT_HEADER_HOP_BY_HOP: u8 = 0;
/// Next Header value of the Routing header.
pub const NEXT_HEADER_ROUTING: u8 = 43;
/// Next Header value of the Fragment header.
pub const NEXT_HEADER_FRAGMENT: u8 = 44;
/// Next Header value of the Authentication Header.
pub const NEXT_HEADER_AH: u8 = 51;
/// Next Header value of the Destination Options header.
pub const NEXT_HEADER_DEST_OPTS: u8 = 60;
/// Next Header value meaning "no next header".
pub const NEXT_HEADER_NONE: u8 = 59;
/// Length of the Fragment extension header.
pub const FRAG_HEADER_LEN: usize = 8;
/// The most extension headers [`layout`] walks before giving up.
pub const MAX_EXT_HEADERS: usize = 8;

/// A zero-copy view of an IPv6 packet.
///
/// Built with [`Ipv6Packet::new_checked`]: version 6 and
/// `40 + payload_len <= buffer.len()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Packet<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps a buffer without checking it. Accessors still never panic.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wraps a buffer after checking the version and the payload length.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Ipv6Packet { buffer };
        let b = p.buffer.as_ref();
        check_ip(b, HEADER_LEN, 6)?;
        // total_len() = 40 + payload_len is never below the header, so this
        // can only be `Truncated`.
        check_len(p.total_len(), HEADER_LEN, b.len(), WireError::BadTotalLen)?;
        Ok(p)
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole underlying buffer.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        let b = self.buffer.as_ref();
        (byte(b, 0) << 4) | (byte(b, 1) >> 4)
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        be32(self.buffer.as_ref(), 0) & 0x000F_FFFF
    }

    /// The Payload Length field (everything after the fixed header).
    pub fn payload_len(&self) -> usize {
        usize::from(be16(self.buffer.as_ref(), 4))
    }

    /// 40 + payload length: the packet's total length.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// Next Header of the fixed header.
    pub fn next_header(&self) -> u8 {
        byte(self.buffer.as_ref(), 6)
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        byte(self.buffer.as_ref(), 7)
    }

    /// Source address.
    pub fn src_addr(&self) -> [u8; 16] {
        array(self.buffer.as_ref(), 8)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> [u8; 16] {
        array(self.buffer.as_ref(), 24)
    }

    /// The payload (`40..40 + payload_len`), extension headers included.
    pub fn payload(&self) -> &[u8] {
        sub(self.buffer.as_ref(), HEADER_LEN, self.total_len())
    }

    /// The packet proper (`0..total_len`).
    pub fn packet(&self) -> &[u8] {
        sub(self.buffer.as_ref(), 0, self.total_len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets the Payload Length field.
    pub fn set_payload_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 4, v);
    }

    /// Sets the Next Header field of the fixed header.
    pub fn set_next_header(&mut self, v: u8) {
        put8(self.buffer.as_mut(), 6, v);
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        put8(self.buffer.as_mut(), 7, v);
    }

    /// Sets version 6, traffic class and flow label.
    pub fn set_version_class_flow(&mut self, traffic_class: u8, flow_label: u32) {
        let v = (6u32 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0x000F_FFFF);
        put32(self.buffer.as_mut(), 0, v);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: [u8; 16]) {
        put_bytes(self.buffer.as_mut(), 8, &a);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: [u8; 16]) {
        put_bytes(self.buffer.as_mut(), 24, &a);
    }

    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.total_len();
        sub_mut(self.buffer.as_mut(), HEADER_LEN, end)
    }
}

/// The IPv6 Fragment extension header (RFC 8200 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentHeader {
    /// The Next Header of the fragmentable part.
    pub next_header: u8,
    /// Fragment offset in bytes (a multiple of 8).
    pub offset: usize,
    /// The M (more fragments) flag.
    pub more_frags: bool,
    /// Identification.
    pub ident: u32,
}

impl FragmentHeader {
    /// Parses the first 8 bytes of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        if bytes.len() < FRAG_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let off = be16(bytes, 2);
        Ok(FragmentHeader {
            next_header: byte(bytes, 0),
            offset: usize::from(off >> 3) * 8,
            more_frags: off & 1 != 0,
            ident: be32(bytes, 4),
        })
    }

    /// Writes the header into `buf[..8]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if !self.offset.is_multiple_of(8) || self.offset / 8 > 0x1FFF {
            return Err(WireError::BadTotalLen);
        }
        let b = buf
            .get_mut(..FRAG_HEADER_LEN)
            .ok_or(WireError::BufferTooSmall)?;
        let off = (((self.offset / 8) as u16) << 3) | u16::from(self.more_frags);
        put8(b, 0, self.next_header);
        put8(b, 1, 0);
        put16(b, 2, off);
        put32(b, 4, self.ident);
        Ok(FRAG_HEADER_LEN)
    }
}

/// Where the parts of an IPv6 packet are, found by [`layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Layout {
    /// Bytes from the packet start to the end of the unfragmentable part
    /// (the fixed header, Hop-by-Hop, and everything up to and including a
    /// Routing header). A new Fragment header goes here; an existing one
    /// sits here.
    pub unfragmentable_len: usize,
    /// Offset (from packet start) of the byte holding the Next Header value
    /// that names the first header after the unfragmentable part (6 for the
    /// fixed header).
    pub next_header_field: usize,
    /// An existing Fragment header: its offset from packet start and value.
    pub fragment: Option<(usize, FragmentHeader)>,
    /// The upper-layer protocol and its offset from packet start, when the
    /// walk reached it (not in a non-first fragment).
    pub upper: Option<(u8, usize)>,
}

/// Walks the extension headers of an IPv6 packet (at most
/// [`MAX_EXT_HEADERS`]), within `40 + payload_len`.
pub fn layout(packet: &[u8]) -> Result<Ipv6Layout, WireError> {
    layout_of(&Ipv6Packet::new_checked(packet)?)
}

/// [`layout`] for a packet that may be cut short, as in a capture taken
/// with a snap length: only the version and the fixed header are required,
/// and the walk stays within the bytes present and `40 + payload_len`,
/// whichever ends first. An extension header that runs past them is
/// [`WireError::Truncated`], never read beyond the slice.
pub fn layout_lax(packet: &[u8]) -> Result<Ipv6Layout, WireError> {
    check_ip(packet, HEADER_LEN, 6)?;
    let p = Ipv6Packet::new_unchecked(packet);
    walk(packet, p.total_len().min(packet.len()), p.next_header())
}

/// [`layout`] of a packet that passed [`Ipv6Packet::new_checked`].
pub(crate) fn layout_of(p: &Ipv6Packet<&[u8]>) -> Result<Ipv6Layout, WireError> {
    walk(p.packet(), p.total_len(), p.next_header())
}

/// The extension-header walk of [`layout`] over `pkt[..end]`, starting at
/// the fixed header's Next Header value `nh`.
fn walk(pkt: &[u8], end: usize, mut nh: u8) -> Result<Ipv6Layout, WireError> {
    let mut nh_field = 6usize;
    let mut off = HEADER_LEN;
    let mut out = Ipv6Layout {
        unfragmentable_len: HEADER_LEN,
        next_header_field: 6,
        fragment: None,
        upper: None,
    };
    for _ in 0..=MAX_EXT_HEADERS {
        match nh {
            NEXT_HEADER_HOP_BY_HOP | NEXT_HEADER_ROUTING | NEXT_HEADER_DEST_OPTS => {
                if off + 2 > end {
                    return Err(WireError::Truncated);
                }
                let len = (usize::from(byte(pkt, off + 1)) + 1) * 8;
                if off + len > end {
                    return Err(WireError::Truncated);
                }
                if out.fragment.is_none()
                    && (nh == NEXT_HEADER_HOP_BY_HOP || nh == NEXT_HEADER_ROUTING)
                {
                    out.unfragmentable_len = off + len;
                    out.next_header_field = off;
                }
                nh_field = off;
                nh = byte(pkt, off);
                off += len;
            }
            NEXT_HEADER_AH => {
                if off + 2 > end {
                    return Err(WireError::Truncated);
                }
                let len = (usize::from(byte(pkt, off + 1)) + 2) * 4;
                if off + len > end {
                    return Err(WireError::Truncated);
                }
                nh_field = off;
                nh = byte(pkt, off);
                off += len;
            }
            NEXT_HEADER_FRAGMENT => {
                if out.fragment.is_some() {
                    return Err(WireError::Unsupported);
                }
                let fh = FragmentHeader::parse(sub(pkt, off, end))?;
                out.fragment = Some((off, fh));
                out.unfragmentable_len = off;
                out.next_header_field = nh_field;
                if fh.offset != 0 {
                    return Ok(out);
                }
                nh_field = off;
                nh = fh.next_header;
                off += FRAG_HEADER_LEN;
            }
            upper => {
                out.upper = Some((upper, off));
                return Ok(out);
            }
        }
    }
    Err(WireError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(next: u8, ext: &[u8], upper_len: usize) -> [u8; 128] {
        let mut b = [0u8; 128];
        let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
        p.set_version_class_flow(0, 0x12345);
        p.set_payload_len((ext.len() + upper_len) as u16);
        p.set_next_header(next);
        p.set_hop_limit(64);
        b[40..40 + ext.len()].copy_from_slice(ext);
        b
    }

    #[test]
    fn lax_walk_of_a_snapped_packet() {
        // Destination Options, then a Fragment header (offset 0, M = 1),
        // then TCP; the payload length claims 100 more bytes than present.
        let mut ext = [0u8; 16];
        ext[0] = NEXT_HEADER_FRAGMENT;
        ext[8] = 6;
        ext[10..12].copy_from_slice(&1u16.to_be_bytes());
        ext[12..16].copy_from_slice(&7u32.to_be_bytes());
        let b = packet(NEXT_HEADER_DEST_OPTS, &ext, 20 + 100);
        let snapped = &b[..76];
        assert_eq!(layout(snapped), Err(WireError::Truncated));
        let l = layout_lax(snapped).unwrap();
        let (at, f) = l.fragment.unwrap();
        assert_eq!((at, f.ident, f.more_frags, f.offset), (48, 7, true, 0));
        assert_eq!(l.upper, Some((6, 56)));
    }

    #[test]
    fn lax_walk_stops_inside_the_bytes_present() {
        // A chain whose last header announces 2048 bytes but has 8: the lax
        // walk reports Truncated instead of reading on (a crafted capture
        // made etherparse 0.21's extension iterator read past its slice).
        let mut ext = [0u8; 32];
        for h in ext.chunks_mut(8).take(3) {
            h[0] = NEXT_HEADER_DEST_OPTS;
        }
        ext[24] = NEXT_HEADER_DEST_OPTS;
        ext[25] = 255;
        let b = packet(NEXT_HEADER_DEST_OPTS, &ext, 0);
        assert_eq!(layout_lax(&b[..72]), Err(WireError::Truncated));
        assert_eq!(layout_lax(&b[..39]), Err(WireError::Truncated));
        assert_eq!(layout_lax(&[0x40; 60]), Err(WireError::BadVersion));
    }

    #[test]
    fn plain_tcp() {
        let b = packet(6, &[], 20);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.total_len(), 60);
        let l = layout(&b).unwrap();
        assert_eq!(l.unfragmentable_len, 40);
        assert_eq!(l.next_header_field, 6);
        assert_eq!(l.upper, Some((6, 40)));
        assert!(l.fragment.is_none());
    }

    #[test]
    fn hop_by_hop_then_fragment_then_tcp() {
        let mut ext = [0u8; 16];
        ext[0] = NEXT_HEADER_FRAGMENT; // HbH → Fragment
        ext[1] = 0; // 8 bytes
        let fh = FragmentHeader {
            next_header: 6,
            offset: 0,
            more_frags: true,
            ident: 7,
        };
        fh.emit(&mut ext[8..]).unwrap();
        let b = packet(0, &ext, 20);
        let l = layout(&b).unwrap();
        assert_eq!(l.unfragmentable_len, 48);
        assert_eq!(l.next_header_field, 40);
        assert_eq!(l.fragment, Some((48, fh)));
        assert_eq!(l.upper, Some((6, 56)));
    }

    #[test]
    fn non_first_fragment_has_no_upper() {
        let mut ext = [0u8; 8];
        FragmentHeader {
            next_header: 6,
            offset: 1448,
            more_frags: false,
            ident: 9,
        }
        .emit(&mut ext)
        .unwrap();
        let b = packet(NEXT_HEADER_FRAGMENT, &ext, 30);
        let l = layout(&b).unwrap();
        assert_eq!(l.fragment.unwrap().1.offset, 1448);
        assert!(l.upper.is_none());
        assert_eq!(l.unfragmentable_len, 40);
    }

    #[test]
    fn dest_opts_before_routing_are_unfragmentable() {
        let mut ext = [0u8; 24];
        ext[0] = NEXT_HEADER_ROUTING; // DestOpts → Routing
        ext[8] = NEXT_HEADER_DEST_OPTS; // Routing → DestOpts
        ext[16] = 6; // DestOpts → TCP
        let b = packet(NEXT_HEADER_DEST_OPTS, &ext, 20);
        let l = layout(&b).unwrap();
        assert_eq!(l.unfragmentable_len, 56);
        assert_eq!(l.next_header_field, 48);
        assert_eq!(l.upper, Some((6, 64)));
    }

    #[test]
    fn truncated_and_loops() {
        let mut ext = [0u8; 8];
        ext[1] = 5; // claims 48 bytes
        let b = packet(0, &ext, 0);
        assert_eq!(layout(&b), Err(WireError::Truncated));
        // Ten chained dest-opts headers exceed the walk limit.
        let mut ext = [0u8; 80];
        for i in 0..10 {
            ext[i * 8] = NEXT_HEADER_DEST_OPTS;
        }
        let b = packet(NEXT_HEADER_DEST_OPTS, &ext, 0);
        assert_eq!(layout(&b[..120]), Err(WireError::Unsupported));
        assert_eq!(layout(&[0x60; 10]), Err(WireError::Truncated));
    }
}

//! One parse of a whole IP packet: where its headers are, its fragment
//! fields, its flow and, for TCP, the header every stage reads.
//!
//! A router stage that needs header facts (the port's classifier, the rate
//! controllers, stamping, the RCP and XCP carriers, the reverse-path echo
//! rewrite, RWM) used to parse the packet itself. Here the packet is parsed
//! once, by [`Layout::parse`], into a small plain-data [`Layout`] (offsets,
//! lengths, flags; two words, `Copy`, no borrow), and every stage reads the
//! packet through a view that pairs the bytes with it:
//!
//! * [`Segment`] over `&[u8]`: every fact, read at the offsets the layout
//!   names;
//! * [`SegmentMut`] over `&mut [u8]`: the same, plus the in-place rewrites
//!   the stages make (TCP window, bytes of the TCP options, IPv4 options),
//!   which never move a header.
//!
//! A layout may be kept apart from its bytes (e.g. next to an owned
//! buffer) and re-joined with [`Segment::with_layout`]; that is only
//! meaningful for the bytes it was parsed from (or bytes whose header
//! lengths and offsets have not changed since), but never panics on any.
//!
//! **What a parse accepts.** Exactly the packets the IP views accept:
//! version 4 passing [`Ipv4Packet::new_checked`], version 6 passing
//! [`Ipv6Packet::new_checked`]; anything else is an error. Within an
//! accepted packet the upper layer is optional: it is *reached* for IPv4
//! packets with fragment offset 0 (whole packets and leading fragments) and
//! for IPv6 packets whose extension-header chain [`ipv6::layout`] walks to
//! an upper-layer header (an IPv6 packet whose chain does not walk is still
//! accepted, with [`Layout::ipv6_chain_ok`] false). A TCP header counts
//! only if it passes [`TcpPacket::new_checked`] within the IP total length.
//! No checksum is verified (the port's classifier does that for IPv4).
//!
//! Plain IPv4 packets with a 20-byte header (nearly all) are read from a
//! fixed 40-byte array, constant offsets checked at compile time; a test
//! holds that path equal to the general one on arbitrary bytes.

use core::num::NonZeroU64;
use core::ops::Deref;

use pack::Fields;

pub use super::flow::{FlowKey, ipv4_mapped};
use super::ipv4::{self, Ipv4Packet, PROTO_TCP, PROTO_UDP};
use super::ipv6::{self, FragmentHeader, Ipv6Layout, Ipv6Packet};
use super::opts::OptionIter;
use super::tcp::{self, TcpPacket};
use super::{WireError, array, be16, be32, byte, sub};

const F_DF: u8 = 1 << 0;
const F_MF: u8 = 1 << 1;
const _: () = assert!(F_DF == 1 && F_MF == 2);
const _: () = assert!(size_of::<Option<Layout>>() == size_of::<Layout>());
/// The upper-layer header was reached (`l4_proto`, `l4_offset` valid).
const F_L4: u8 = 1 << 2;
/// A TCP header passing `TcpPacket::new_checked` is at `l4_offset`.
const F_TCP: u8 = 1 << 3;
/// IPv6: the extension-header chain walked (always set for IPv4).
const F_CHAIN: u8 = 1 << 4;
/// IPv6: a Fragment header is at `frag_header_at`.
const F_FRAG_HDR: u8 = 1 << 5;

/// The IP version of a parse being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
enum Version {
    V4 = 4,
    V6 = 6,
}

/// IPv6 (in the packed flags; IPv4 when clear).
const F_V6: u8 = 1 << 6;

/// Where the headers of an IP packet are: the result of one parse
/// ([`Layout::parse`]). Plain data; see the module docs.
///
/// Packed into two machine words, each written whole: a parse is built in
/// registers ([`Fields`]) and stored in two 8-byte writes, so a stage
/// that copies it right after reads back what was stored whole (a layout
/// written byte by byte and copied as words stalls store forwarding, which
/// measured 15 % of a KA port's per-packet time). The low word is never
/// zero (it holds the IP header length, at least 20), so `Option<Layout>`
/// takes no more room than a `Layout`.
///
/// `lo`: bits 0–7 IP header length, 8–15 flags, 16–23 upper-layer
/// protocol, 24–27 TCP header length / 4, 28–43 fragment offset (bytes),
/// 44–63 total length. `hi`: four 16-bit offsets: upper-layer header,
/// IPv6 Fragment header, IPv6 unfragmentable part's length, IPv6
/// Next Header field of the last unfragmentable header.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    lo: NonZeroU64,
    hi: u64,
}

impl Layout {
    /// Parses a whole IP packet (see the module docs for what is accepted).
    /// Errors are those of [`Ipv4Packet::new_checked`] /
    /// [`Ipv6Packet::new_checked`]; a buffer whose version nibble is neither
    /// 4 nor 6 is `BadVersion` (empty: `Truncated`).
    #[inline]
    pub fn parse(packet: &[u8]) -> Result<Self, WireError> {
        match packet.first_chunk::<40>() {
            Some(h) if h[0] == 0x45 => Self::parse_v4_plain(h, packet.len()),
            _ => Self::parse_general(packet),
        }
    }

    /// [`Layout::parse`] without the fixed-offset fast path (the reference
    /// the fast path is tested against).
    pub fn parse_general(packet: &[u8]) -> Result<Self, WireError> {
        match super::ip_version(packet) {
            Some(4) => Self::parse_v4(packet),
            Some(6) => Self::parse_v6(packet),
            Some(_) => Err(WireError::BadVersion),
            None => Err(WireError::Truncated),
        }
    }

    /// The fast path: version 4, IHL 5, at least 40 bytes in the buffer
    /// (`h`: its first 40; `len`: the whole buffer's). The checks of
    /// `Ipv4Packet::new_checked` and `TcpPacket::new_checked`.
    #[inline]
    fn parse_v4_plain(h: &[u8; 40], len: usize) -> Result<Self, WireError> {
        let be = |a: u8, b: u8| u16::from_be_bytes([a, b]);
        let total = usize::from(be(h[2], h[3]));
        if total < ipv4::MIN_HEADER_LEN {
            return Err(WireError::BadTotalLen);
        }
        if total > len {
            return Err(WireError::Truncated);
        }
        let fo = be(h[6], h[7]);
        let mut l = Fields::empty(Version::V4);
        l.total_len = total as u32;
        l.ip_header_len = ipv4::MIN_HEADER_LEN as u8;
        l.unfragmentable_len = ipv4::MIN_HEADER_LEN as u16;
        l.next_header_field = 9;
        l.l4_offset = ipv4::MIN_HEADER_LEN as u16;
        l.l4_proto = h[9];
        l.frag_offset = (fo & 0x1FFF) << 3;
        // DF and MF are bits 14 and 13 of the field, F_DF and F_MF bits 0
        // and 1 of the flags.
        l.flags = F_CHAIN | ((fo >> 14) & 1) as u8 | (((fo >> 13) & 1) as u8) << 1;
        if fo & 0x1FFF == 0 {
            l.flags |= F_L4;
            if h[9] == PROTO_TCP {
                let tcp_len = total - ipv4::MIN_HEADER_LEN;
                let data_offset = usize::from(h[32] >> 4) * 4;
                // `TcpPacket::new_checked`: a data offset of at least 20
                // within the segment (so the segment has 20 bytes too).
                if data_offset >= tcp::HEADER_LEN && data_offset <= tcp_len {
                    l.flags |= F_TCP;
                    l.tcp_header_len = data_offset as u8;
                }
            }
        }
        Ok(l.pack())
    }

    fn parse_v4(packet: &[u8]) -> Result<Self, WireError> {
        let p = Ipv4Packet::new_checked(packet)?;
        let (hl, total) = (p.header_len(), p.total_len());
        let mut l = Fields::empty(Version::V4);
        l.total_len = total as u32;
        l.ip_header_len = hl as u8;
        l.unfragmentable_len = hl as u16;
        l.next_header_field = 9;
        l.l4_offset = hl as u16;
        l.l4_proto = p.protocol();
        l.frag_offset = p.frag_offset() as u16;
        l.flags = F_CHAIN | flag(p.dont_frag(), F_DF) | flag(p.more_frags(), F_MF);
        if p.frag_offset() == 0 {
            l.flags |= F_L4;
            if p.protocol() == PROTO_TCP {
                l.check_tcp(packet);
            }
        }
        Ok(l.pack())
    }

    fn parse_v6(packet: &[u8]) -> Result<Self, WireError> {
        let p = Ipv6Packet::new_checked(packet)?;
        let mut l = Fields::empty(Version::V6);
        l.total_len = p.total_len() as u32;
        l.ip_header_len = ipv6::HEADER_LEN as u8;
        let Ok(lay) = ipv6::layout_of(&p) else {
            return Ok(l.pack());
        };
        let fits = |x: usize| u16::try_from(x).ok();
        // Always fits (see the field comment); a chain that did not would
        // count as one that does not walk.
        let (Some(u), Some(nh), Some(frag_at), Some(l4_at)) = (
            fits(lay.unfragmentable_len),
            fits(lay.next_header_field),
            fits(lay.fragment.map_or(0, |f| f.0)),
            fits(lay.upper.map_or(0, |u| u.1)),
        ) else {
            return Ok(l.pack());
        };
        l.flags |= F_CHAIN;
        l.unfragmentable_len = u;
        l.next_header_field = nh;
        if let Some((_, fh)) = lay.fragment {
            l.flags |= F_FRAG_HDR | flag(fh.more_frags, F_MF);
            l.frag_header_at = frag_at;
            l.frag_offset = fh.offset as u16;
        }
        if let Some((proto, _)) = lay.upper {
            l.flags |= F_L4;
            l.l4_proto = proto;
            l.l4_offset = l4_at;
            if proto == PROTO_TCP {
                l.check_tcp(packet);
            }
        }
        Ok(l.pack())
    }

    // The packed fields (see the type's docs).
    #[inline]
    const fn flags(&self) -> u8 {
        (self.lo.get() >> 8) as u8
    }

    #[inline]
    const fn proto(&self) -> u8 {
        (self.lo.get() >> 16) as u8
    }

    #[inline]
    const fn frag_off(&self) -> usize {
        (self.lo.get() >> 28) as u16 as usize
    }

    #[inline]
    const fn l4_off(&self) -> usize {
        self.hi as u16 as usize
    }

    #[inline]
    const fn frag_hdr(&self) -> usize {
        (self.hi >> 16) as u16 as usize
    }

    #[inline]
    const fn unfrag(&self) -> usize {
        (self.hi >> 32) as u16 as usize
    }

    #[inline]
    const fn nhf(&self) -> usize {
        (self.hi >> 48) as u16 as usize
    }

    #[inline]
    const fn has(&self, f: u8) -> bool {
        self.flags() & f != 0
    }

    /// 4 or 6.
    #[inline]
    pub const fn version(&self) -> u8 {
        if self.is_ipv6() { 6 } else { 4 }
    }

    /// Whether this is IPv4.
    #[inline]
    pub const fn is_ipv4(&self) -> bool {
        !self.has(F_V6)
    }

    /// Whether this is IPv6.
    #[inline]
    pub const fn is_ipv6(&self) -> bool {
        self.has(F_V6)
    }

    /// The IP header length: IHL·4 for IPv4, 40 (the fixed header) for IPv6.
    #[inline]
    pub const fn ip_header_len(&self) -> usize {
        self.lo.get() as u8 as usize
    }

    /// The packet's total length by its header (IPv4 Total Length, IPv6
    /// 40 + Payload Length): where the packet ends in the buffer.
    #[inline]
    pub const fn total_len(&self) -> usize {
        (self.lo.get() >> 44) as usize
    }

    /// IPv4 Don't Fragment (false for IPv6, which has none).
    #[inline]
    pub const fn dont_frag(&self) -> bool {
        self.has(F_DF)
    }

    /// More fragments follow: IPv4 MF, or the M flag of the IPv6 Fragment
    /// header.
    #[inline]
    pub const fn more_frags(&self) -> bool {
        self.has(F_MF)
    }

    /// The fragment offset in bytes (IPv4 header, or the IPv6 Fragment
    /// header; 0 if there is none).
    #[inline]
    pub const fn frag_offset(&self) -> usize {
        self.frag_off()
    }

    /// A piece of a fragmented datagram: MF set or offset ≠ 0 (an IPv6
    /// atomic fragment, offset 0 and M clear, is not one).
    #[inline]
    pub const fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_off() != 0
    }

    /// The leading piece of a fragmented datagram: offset 0 and MF set.
    #[inline]
    pub const fn is_leading_fragment(&self) -> bool {
        self.more_frags() && self.frag_off() == 0
    }

    /// IPv6: where the Fragment header starts, if there is one.
    #[inline]
    pub const fn fragment_header_at(&self) -> Option<usize> {
        if self.has(F_FRAG_HDR) {
            Some(self.frag_hdr())
        } else {
            None
        }
    }

    /// IPv6: whether there is a Fragment header (atomic ones included).
    #[inline]
    pub const fn has_fragment_header(&self) -> bool {
        self.has(F_FRAG_HDR)
    }

    /// IPv6: whether the extension-header chain could be walked
    /// ([`ipv6::layout`] succeeded). Always true for IPv4.
    #[inline]
    pub const fn ipv6_chain_ok(&self) -> bool {
        self.has(F_CHAIN)
    }

    /// The upper-layer protocol and where its header starts, when reached
    /// (not for non-first fragments, nor IPv6 chains that do not walk).
    #[inline]
    pub const fn l4(&self) -> Option<(u8, usize)> {
        if self.has(F_L4) {
            Some((self.proto(), self.l4_off()))
        } else {
            None
        }
    }

    /// The upper-layer protocol, when reached.
    #[inline]
    pub const fn l4_proto(&self) -> Option<u8> {
        if self.has(F_L4) {
            Some(self.proto())
        } else {
            None
        }
    }

    /// Where the upper-layer header starts, when reached.
    #[inline]
    pub const fn l4_offset(&self) -> Option<usize> {
        if self.has(F_L4) {
            Some(self.l4_off())
        } else {
            None
        }
    }

    /// Whether a whole TCP header is at [`Layout::l4_offset`].
    #[inline]
    pub const fn is_tcp(&self) -> bool {
        self.has(F_TCP)
    }

    /// The TCP header length (data offset · 4; 0 unless [`Layout::is_tcp`]).
    #[inline]
    pub const fn tcp_header_len(&self) -> usize {
        ((self.lo.get() >> 24) as usize & 0xF) << 2
    }

    /// TCP payload bytes in this packet (of this piece, for a leading
    /// fragment), if [`Layout::is_tcp`].
    #[inline]
    pub const fn tcp_payload_len(&self) -> Option<usize> {
        if self.is_tcp() {
            Some(
                self.total_len()
                    .saturating_sub(self.l4_off() + self.tcp_header_len()),
            )
        } else {
            None
        }
    }

    /// IPv6: the parts [`ipv6::layout`] finds, without the Fragment
    /// header's contents (those need the bytes: [`Segment::ipv6_layout`]).
    #[inline]
    pub const fn ipv6_unfragmentable(&self) -> Option<(usize, usize)> {
        if self.is_ipv6() && self.ipv6_chain_ok() {
            Some((self.unfrag(), self.nhf()))
        } else {
            None
        }
    }
}

#[inline]
const fn flag(on: bool, f: u8) -> u8 {
    if on { f } else { 0 }
}

/// The fixed TCP header's fields of a parsed packet
/// ([`Segment::tcp_header`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpHeader {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Header length with options (data offset · 4).
    pub header_len: usize,
    /// The flag bits (CWR … FIN).
    pub flags: u8,
    /// The window field (unscaled).
    pub window: u16,
    /// The checksum field.
    pub checksum: u16,
}

/// A parsed IP packet: its bytes and its [`Layout`]. Dereferences to the
/// layout for the facts that need no bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    buf: &'a [u8],
    layout: Layout,
}

impl Deref for Segment<'_> {
    type Target = Layout;

    #[inline]
    fn deref(&self) -> &Layout {
        &self.layout
    }
}

impl<'a> Segment<'a> {
    /// Parses `packet` once ([`Layout::parse`]).
    #[inline]
    pub fn parse(packet: &'a [u8]) -> Result<Self, WireError> {
        Ok(Segment {
            layout: Layout::parse(packet)?,
            buf: packet,
        })
    }

    /// Joins bytes with the layout parsed from them earlier (see the module
    /// docs). Never panics, whatever the bytes.
    #[inline]
    pub const fn with_layout(packet: &'a [u8], layout: Layout) -> Self {
        Segment {
            buf: packet,
            layout,
        }
    }

    /// The layout.
    #[inline]
    pub const fn layout(&self) -> Layout {
        self.layout
    }

    /// The whole buffer (may extend past [`Layout::total_len`]).
    #[inline]
    pub const fn bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// The packet proper, `0..total_len`.
    #[inline]
    pub fn packet(&self) -> &'a [u8] {
        sub(self.buf, 0, self.total_len())
    }

    /// The IPv4 header view, for IPv4.
    #[inline]
    pub fn ipv4(&self) -> Option<Ipv4Packet<&'a [u8]>> {
        self.is_ipv4().then(|| Ipv4Packet::new_unchecked(self.buf))
    }

    /// The IPv6 header view, for IPv6.
    #[inline]
    pub fn ipv6(&self) -> Option<Ipv6Packet<&'a [u8]>> {
        self.is_ipv6().then(|| Ipv6Packet::new_unchecked(self.buf))
    }

    /// Both IPv4 addresses (source, destination), for IPv4.
    #[inline]
    pub fn ipv4_addrs(&self) -> Option<([u8; 4], [u8; 4])> {
        if !self.is_ipv4() {
            return None;
        }
        // One length check for the fixed header, then constant offsets.
        match self.buf.first_chunk::<20>() {
            Some(h) => Some(([h[12], h[13], h[14], h[15]], [h[16], h[17], h[18], h[19]])),
            None => Some(([0; 4], [0; 4])),
        }
    }

    /// Both IPv6 addresses (source, destination), for IPv6.
    #[inline]
    pub fn ipv6_addrs(&self) -> Option<([u8; 16], [u8; 16])> {
        self.is_ipv6()
            .then(|| (array(self.buf, 8), array(self.buf, 24)))
    }

    /// The source address (IPv4 in the IPv4-mapped form).
    #[inline]
    pub fn src_addr(&self) -> [u8; 16] {
        match self.version() {
            4 => ipv4_mapped(array(self.buf, 12)),
            _ => array(self.buf, 8),
        }
    }

    /// The destination address (IPv4 in the IPv4-mapped form).
    #[inline]
    pub fn dst_addr(&self) -> [u8; 16] {
        match self.version() {
            4 => ipv4_mapped(array(self.buf, 16)),
            _ => array(self.buf, 24),
        }
    }

    /// IPv4 identification, or the IPv6 Fragment header's identification
    /// (0 without one).
    #[inline]
    pub fn ident(&self) -> u32 {
        match (self.version(), self.fragment_header_at()) {
            (4, _) => u32::from(be16(self.buf, 4)),
            (_, Some(at)) => be32(self.buf, at + 4),
            _ => 0,
        }
    }

    /// The IPv4 options area (`20..IHL·4`; empty for IPv6 or none).
    #[inline]
    pub fn ipv4_options(&self) -> &'a [u8] {
        if self.is_ipv4() {
            sub(self.buf, ipv4::MIN_HEADER_LEN, self.ip_header_len())
        } else {
            &[]
        }
    }

    /// Walks the IPv4 options ([`OptionIter`]).
    #[inline]
    pub fn ipv4_option_iter(&self) -> OptionIter<'a> {
        OptionIter::new(self.ipv4_options())
    }

    /// IPv6: the Fragment header and where it starts.
    pub fn ipv6_fragment(&self) -> Option<(usize, FragmentHeader)> {
        let at = self.fragment_header_at()?;
        let fh = FragmentHeader::parse(sub(self.buf, at, at + ipv6::FRAG_HEADER_LEN)).ok()?;
        Some((at, fh))
    }

    /// IPv6: what [`ipv6::layout`] returns for these bytes (`None` for IPv4
    /// or a chain that does not walk).
    pub fn ipv6_layout(&self) -> Option<Ipv6Layout> {
        let (unfragmentable_len, next_header_field) = self.ipv6_unfragmentable()?;
        let fragment = match self.fragment_header_at() {
            Some(_) => Some(self.ipv6_fragment()?),
            None => None,
        };
        Some(Ipv6Layout {
            unfragmentable_len,
            next_header_field,
            fragment,
            upper: self.l4(),
        })
    }

    /// The upper-layer bytes, `l4_offset..total_len` (empty if not reached).
    #[inline]
    pub fn l4_bytes(&self) -> &'a [u8] {
        match self.l4_offset() {
            Some(at) => sub(self.buf, at, self.total_len()),
            None => &[],
        }
    }

    /// The TCP segment view (header, options, payload of this piece), if
    /// [`Layout::is_tcp`].
    #[inline]
    pub fn tcp(&self) -> Option<TcpPacket<&'a [u8]>> {
        self.is_tcp()
            .then(|| TcpPacket::new_unchecked(self.l4_bytes()))
    }

    /// Source and destination port: of a TCP header, or of a UDP header
    /// with all 8 bytes present.
    #[inline]
    pub fn ports(&self) -> Option<(u16, u16)> {
        let (proto, at) = self.l4()?;
        let ok = match proto {
            PROTO_TCP => self.is_tcp(),
            PROTO_UDP => self.l4_bytes().len() >= 8,
            _ => false,
        };
        if !ok {
            return None;
        }
        let p = self.buf.get(at..)?.first_chunk::<4>()?;
        Some((
            u16::from_be_bytes([p[0], p[1]]),
            u16::from_be_bytes([p[2], p[3]]),
        ))
    }

    /// The packet's flow, when the upper layer was reached (ports 0 if
    /// [`Segment::ports`] has none).
    #[inline]
    pub fn flow_key(&self) -> Option<FlowKey> {
        let proto = self.l4_proto()?;
        let (sport, dport) = self.ports().unwrap_or((0, 0));
        let (src, dst) = match self.ipv4_addrs() {
            Some((s, d)) => (ipv4_mapped(s), ipv4_mapped(d)),
            None => self.ipv6_addrs().unwrap_or(([0; 16], [0; 16])),
        };
        Some(FlowKey {
            src,
            dst,
            sport,
            dport,
            proto,
        })
    }

    /// The fixed TCP header's fields, read at once (`None` unless
    /// [`Layout::is_tcp`]).
    #[inline]
    pub fn tcp_header(&self) -> Option<TcpHeader> {
        if !self.is_tcp() {
            return None;
        }
        let at = self.layout.l4_off();
        let h = self.buf.get(at..)?.first_chunk::<{ tcp::HEADER_LEN }>()?;
        let be16 = |a: u8, b: u8| u16::from_be_bytes([a, b]);
        Some(TcpHeader {
            src_port: be16(h[0], h[1]),
            dst_port: be16(h[2], h[3]),
            seq: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            ack: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
            header_len: self.tcp_header_len(),
            flags: h[13],
            window: be16(h[14], h[15]),
            checksum: be16(h[16], h[17]),
        })
    }

    /// A TCP header field at `at` bytes into the header (`None` unless
    /// [`Layout::is_tcp`]).
    #[inline]
    fn tcp_at(&self, at: usize) -> Option<usize> {
        if self.is_tcp() {
            Some(self.layout.l4_off() + at)
        } else {
            None
        }
    }

    /// The TCP flag bits (CWR … FIN).
    #[inline]
    pub fn tcp_flags(&self) -> Option<u8> {
        self.tcp_at(13).map(|at| byte(self.buf, at))
    }

    /// The TCP sequence number.
    #[inline]
    pub fn tcp_seq(&self) -> Option<u32> {
        self.tcp_at(4).map(|at| be32(self.buf, at))
    }

    /// The TCP acknowledgement number.
    #[inline]
    pub fn tcp_ack(&self) -> Option<u32> {
        self.tcp_at(8).map(|at| be32(self.buf, at))
    }

    /// The TCP window field (unscaled).
    #[inline]
    pub fn tcp_window(&self) -> Option<u16> {
        self.tcp_at(14).map(|at| be16(self.buf, at))
    }

    /// The TCP options area (empty unless [`Layout::is_tcp`]).
    #[inline]
    pub fn tcp_options(&self) -> &'a [u8] {
        match self.tcp_at(tcp::HEADER_LEN) {
            Some(at) => sub(self.buf, at, self.layout.l4_off() + self.tcp_header_len()),
            None => &[],
        }
    }

    /// Walks the TCP options ([`OptionIter`]; offsets within the options
    /// area, which starts [`tcp::HEADER_LEN`] bytes into the TCP header).
    #[inline]
    pub fn tcp_option_iter(&self) -> OptionIter<'a> {
        OptionIter::new(self.tcp_options())
    }
}

mod pack;
mod write;

pub use write::{SegmentMut, patch_tcp};

#[cfg(test)]
mod tests;

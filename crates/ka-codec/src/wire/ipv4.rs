//! IPv4 header view and representation (RFC 791).

use super::opts::OptionIter;
use super::{
    WireError, array, be16, byte, check_ip, check_len, checksum, put_bytes, put8, put16, sub,
    sub_mut,
};

/// The size of an IPv4 header without options.
pub const MIN_HEADER_LEN: usize = 20;
/// The largest IPv4 header (IHL = 15).
pub const MAX_HEADER_LEN: usize = 60;
/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1FFF;

/// A zero-copy view of an IPv4 packet.
///
/// Built with [`Ipv4Packet::new_checked`], every accessor is in bounds:
/// version 4, `20 <= header_len <= total_len <= buffer.len()`. The buffer may
/// be longer than `total_len` (link padding); [`payload`](Self::payload) stops
/// at `total_len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checking it. Accessors still never panic.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps a buffer after checking the version, the header length and the
    /// total length against the buffer.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Ipv4Packet { buffer };
        let b = p.buffer.as_ref();
        check_ip(b, MIN_HEADER_LEN, 4)?;
        let hl = p.header_len();
        check_len(hl, MIN_HEADER_LEN, b.len(), WireError::BadHeaderLen)?;
        check_len(p.total_len(), hl, b.len(), WireError::BadTotalLen)?;
        Ok(p)
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole underlying buffer (may extend past `total_len`).
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Header length in bytes (IHL · 4).
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.buffer.as_ref(), 0) & 0x0F) * 4
    }

    /// The Total Length field: header plus payload, in bytes.
    pub fn total_len(&self) -> usize {
        usize::from(be16(self.buffer.as_ref(), 2))
    }

    /// The DSCP/ECN (former TOS) byte.
    pub fn dscp_ecn(&self) -> u8 {
        byte(self.buffer.as_ref(), 1)
    }

    /// The Identification field.
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }

    fn flags_offset(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }

    /// The Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.flags_offset() & FLAG_DF != 0
    }

    /// The More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.flags_offset() & FLAG_MF != 0
    }

    /// The fragment offset in **bytes** (the wire field times 8).
    pub fn frag_offset(&self) -> usize {
        usize::from(self.flags_offset() & OFFSET_MASK) * 8
    }

    /// Whether this is a piece of a fragmented datagram (MF set or offset ≠ 0).
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        byte(self.buffer.as_ref(), 8)
    }

    /// The upper-layer protocol number.
    pub fn protocol(&self) -> u8 {
        byte(self.buffer.as_ref(), 9)
    }

    /// The header checksum as stored.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 10)
    }

    /// Source address.
    pub fn src_addr(&self) -> [u8; 4] {
        array(self.buffer.as_ref(), 12)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> [u8; 4] {
        array(self.buffer.as_ref(), 16)
    }

    /// The header (`0..header_len`).
    pub fn header(&self) -> &[u8] {
        sub(self.buffer.as_ref(), 0, self.header_len())
    }

    /// The options area (`20..header_len`), empty if there are none.
    pub fn options(&self) -> &[u8] {
        sub(self.buffer.as_ref(), MIN_HEADER_LEN, self.header_len())
    }

    /// The payload (`header_len..total_len`).
    pub fn payload(&self) -> &[u8] {
        sub(self.buffer.as_ref(), self.header_len(), self.total_len())
    }

    /// The packet proper (`0..total_len`), without link padding.
    pub fn packet(&self) -> &[u8] {
        sub(self.buffer.as_ref(), 0, self.total_len())
    }

    /// Whether the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        let h = self.header();
        h.len() >= MIN_HEADER_LEN && checksum::checksum(h) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the Total Length field.
    pub fn set_total_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 2, v);
    }

    /// Sets the Identification field.
    pub fn set_ident(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 4, v);
    }

    /// Sets DF, MF and the fragment offset (in bytes; the low 3 bits are
    /// dropped, so callers pass multiples of 8).
    pub fn set_flags_and_offset(&mut self, dont_frag: bool, more_frags: bool, offset_bytes: usize) {
        let mut v = ((offset_bytes / 8) as u16) & OFFSET_MASK;
        if dont_frag {
            v |= FLAG_DF;
        }
        if more_frags {
            v |= FLAG_MF;
        }
        put16(self.buffer.as_mut(), 6, v);
    }

    /// Sets the Time To Live.
    pub fn set_ttl(&mut self, v: u8) {
        put8(self.buffer.as_mut(), 8, v);
    }

    /// Sets the Time To Live and updates the header checksum for that one
    /// change (RFC 1624 eqn. 3, as RFC 1812 §5.3.1 allows a forwarding
    /// router to), instead of summing the header again. On a header whose
    /// checksum was right this stores exactly what
    /// [`Ipv4Packet::fill_checksum`] would (for any TTL but 0: each result
    /// is the one's complement of a non-zero sum, kept in 1..=0xFFFF).
    pub fn set_ttl_incremental(&mut self, v: u8) {
        let proto = self.protocol();
        let old = u16::from_be_bytes([self.ttl(), proto]);
        let new = u16::from_be_bytes([v, proto]);
        let c = checksum::update(self.checksum(), old, new);
        self.set_ttl(v);
        self.set_checksum(c);
    }

    /// Sets the protocol number.
    pub fn set_protocol(&mut self, v: u8) {
        put8(self.buffer.as_mut(), 9, v);
    }

    /// Sets the DSCP/ECN byte.
    pub fn set_dscp_ecn(&mut self, v: u8) {
        put8(self.buffer.as_mut(), 1, v);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: [u8; 4]) {
        put_bytes(self.buffer.as_mut(), 12, &a);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: [u8; 4]) {
        put_bytes(self.buffer.as_mut(), 16, &a);
    }

    /// Stores `v` as the header checksum (see
    /// [`checksum::update`] for in-place edits).
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 10, v);
    }

    /// Recomputes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        put16(self.buffer.as_mut(), 10, 0);
        let c = checksum::checksum(self.header());
        put16(self.buffer.as_mut(), 10, c);
    }

    /// The options area, mutable.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        sub_mut(self.buffer.as_mut(), MIN_HEADER_LEN, hl)
    }

    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, tl) = (self.header_len(), self.total_len());
        sub_mut(self.buffer.as_mut(), hl, tl)
    }
}

/// One option from an IPv4 options area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Option<'a> {
    /// The option type byte (copy flag = bit 7).
    pub kind: u8,
    /// The whole option, type byte included (one byte for EOL/NOP).
    pub bytes: &'a [u8],
}

impl Ipv4Option<'_> {
    /// Whether RFC 791's copy flag is set: the option goes into every fragment.
    pub fn copied(&self) -> bool {
        self.kind & 0x80 != 0
    }
}

/// Iterates the options of an IPv4 options area (stops at End of Option
/// List). Yields `Err(BadOption)` once, then stops, on a malformed option.
/// A thin layer over the one option walker, [`OptionIter`].
#[derive(Debug, Clone)]
pub struct Ipv4Options<'a> {
    inner: OptionIter<'a>,
}

impl<'a> Ipv4Options<'a> {
    /// Walks `options` (the bytes after the 20-byte fixed header).
    pub fn new(options: &'a [u8]) -> Self {
        Ipv4Options {
            inner: OptionIter::new(options),
        }
    }
}

impl<'a> Iterator for Ipv4Options<'a> {
    type Item = Result<Ipv4Option<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.inner.next()? {
            Ok(o) => Ok(Ipv4Option {
                kind: o.kind,
                bytes: o.bytes,
            }),
            Err(e) => Err(e.into()),
        })
    }
}

/// Writes the options of `options` that must be copied into every fragment
/// (copy flag set, RFC 791) into `out`, padded with End-of-Option-List bytes
/// to a multiple of 4. Returns the number of bytes written (0 if none are
/// copied). NOPs are not copied.
pub fn copied_options(options: &[u8], out: &mut [u8]) -> Result<usize, WireError> {
    let mut n = 0usize;
    for opt in Ipv4Options::new(options) {
        let opt = opt?;
        if opt.copied() {
            let end = n + opt.bytes.len();
            let dst = out.get_mut(n..end).ok_or(WireError::BufferTooSmall)?;
            dst.copy_from_slice(opt.bytes);
            n = end;
        }
    }
    let padded = n.div_ceil(4) * 4;
    let pad = out.get_mut(n..padded).ok_or(WireError::BufferTooSmall)?;
    pad.fill(0);
    Ok(padded)
}

/// A parsed IPv4 header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Upper-layer protocol.
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
    /// More Fragments.
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: usize,
    /// DSCP/ECN byte.
    pub dscp_ecn: u8,
    /// Payload length in bytes.
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Length of the header [`emit`](Self::emit) writes.
    pub const HEADER_LEN: usize = MIN_HEADER_LEN;

    /// A header from `src` to `dst` over `payload_len` bytes of
    /// `protocol`: TTL 64, identification 0, DF and MF clear, offset 0,
    /// DSCP/ECN 0. Set the fields that differ with `..Ipv4Repr::new(..)`.
    pub const fn new(src: [u8; 4], dst: [u8; 4], protocol: u8, payload_len: usize) -> Self {
        Ipv4Repr {
            src,
            dst,
            protocol,
            ttl: 64,
            ident: 0,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            dscp_ecn: 0,
            payload_len,
        }
    }

    /// Reads the fixed header fields of a checked packet (options ignored).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self, WireError> {
        Ok(Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            ttl: p.ttl(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            more_frags: p.more_frags(),
            frag_offset: p.frag_offset(),
            dscp_ecn: p.dscp_ecn(),
            payload_len: p
                .total_len()
                .checked_sub(p.header_len())
                .ok_or(WireError::BadTotalLen)?,
        })
    }

    /// Writes a 20-byte header with a correct checksum into `buf[..20]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let total = self.payload_len + MIN_HEADER_LEN;
        let total = u16::try_from(total).map_err(|_| WireError::BadTotalLen)?;
        if !self.frag_offset.is_multiple_of(8) || self.frag_offset / 8 > usize::from(OFFSET_MASK) {
            return Err(WireError::BadTotalLen);
        }
        let h = buf
            .get_mut(..MIN_HEADER_LEN)
            .ok_or(WireError::BufferTooSmall)?;
        h.fill(0);
        let mut p = Ipv4Packet::new_unchecked(h);
        put8(p.buffer, 0, 0x45);
        p.set_dscp_ecn(self.dscp_ecn);
        p.set_total_len(total);
        p.set_ident(self.ident);
        p.set_flags_and_offset(self.dont_frag, self.more_frags, self.frag_offset);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src);
        p.set_dst_addr(self.dst);
        p.fill_checksum();
        Ok(MIN_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> [u8; 28] {
        let mut b = [0u8; 28];
        let r = Ipv4Repr {
            ident: 0x1234,
            dont_frag: true,
            ..Ipv4Repr::new([10, 0, 0, 1], [10, 0, 0, 2], PROTO_UDP, 8)
        };
        assert_eq!(r.emit(&mut b), Ok(20));
        b
    }

    #[test]
    fn emit_parse_round_trip() {
        let b = sample();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.total_len(), 28);
        assert!(p.dont_frag());
        assert!(!p.is_fragment());
        assert_eq!(p.ident(), 0x1234);
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.payload_len, 8);
        assert_eq!(r.src, [10, 0, 0, 1]);
    }

    #[test]
    fn header_bytes_exact() {
        let b = sample();
        assert_eq!(
            &b[..12],
            &[0x45, 0, 0, 28, 0x12, 0x34, 0x40, 0, 64, 17, b[10], b[11]]
        );
    }

    #[test]
    fn checked_rejects_bad_lengths() {
        let mut b = sample();
        assert_eq!(
            Ipv4Packet::new_checked(&b[..19]).unwrap_err(),
            WireError::Truncated
        );
        b[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            WireError::BadHeaderLen
        );
        b[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            WireError::BadVersion
        );
        let mut b = sample();
        b[3] = 29;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            WireError::Truncated
        );
        b[3] = 19;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            WireError::BadTotalLen
        );
    }

    #[test]
    fn flags_and_offset() {
        let mut b = sample();
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_flags_and_offset(false, true, 1480);
        assert!(p.more_frags());
        assert!(!p.dont_frag());
        assert_eq!(p.frag_offset(), 1480);
        assert!(p.is_fragment());
    }

    #[test]
    fn copied_options_filter() {
        // NOP, a copied option (0x83 LSRR, len 7), a non-copied (0x07 RR len 3), EOL.
        let opts = [1, 0x83, 7, 4, 1, 2, 3, 4, 0x07, 3, 4, 0];
        let mut out = [0xEEu8; 40];
        let n = copied_options(&opts, &mut out).unwrap();
        assert_eq!(n, 8);
        assert_eq!(&out[..8], &[0x83, 7, 4, 1, 2, 3, 4, 0]);
        assert_eq!(
            copied_options(&[0x83, 1], &mut out),
            Err(WireError::BadOption)
        );
        assert_eq!(
            copied_options(&[0x83, 9, 0], &mut out),
            Err(WireError::BadOption)
        );
    }

    #[test]
    fn unchecked_never_panics() {
        let p = Ipv4Packet::new_unchecked(&[0x4f_u8][..]);
        assert_eq!(p.total_len(), 0);
        assert!(p.payload().is_empty());
        assert!(p.options().is_empty());
        assert!(!p.verify_checksum());
    }

    proptest::proptest! {
        /// The incremental TTL update stores exactly what a full recompute
        /// does, for any header (with or without options) whose checksum
        /// was right, and any new TTL but 0.
        #[test]
        fn ttl_incremental_equals_full_recompute(
            head in proptest::collection::vec(proptest::num::u8::ANY, 20..=60),
            ttl in 1u8..=255,
        ) {
            let mut a = head.clone();
            let words = a.len() / 4;
            a[0] = 0x40 | words as u8;
            a.truncate(words * 4);
            Ipv4Packet::new_unchecked(&mut a[..]).fill_checksum();
            let mut b = a.clone();
            let mut pa = Ipv4Packet::new_unchecked(&mut a[..]);
            pa.set_ttl(ttl);
            pa.fill_checksum();
            Ipv4Packet::new_unchecked(&mut b[..]).set_ttl_incremental(ttl);
            proptest::prop_assert_eq!(a, b);
        }
    }
}

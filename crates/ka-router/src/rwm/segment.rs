//! What RWM reads of a TCP segment, and the connection key it hashes.
//!
//! The packet is parsed once, by `ka_codec::wire::Layout::parse` (whose
//! fast path reads a plain IPv4 header from a fixed 40-byte array); RWM
//! reads its facts through that [`wire::Segment`] view and rewrites the
//! window through [`wire::SegmentMut`]. Anything that does not parse is
//! [`Skip`]ped, never indexed.

use ka_codec::wire;
use ka_codec::wire::ipv4::PROTO_TCP;
use ka_codec::wire::tcp::TcpOptions;

/// A connection's key, the same for both directions: the two endpoints of
/// its [`FlowKey`](ka_codec::wire::FlowKey) in ascending order ("low", "high"), packed into
/// integers so ordering and hashing them are a few instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnKey {
    /// IPv4: each endpoint as `address << 16 | port`.
    V4 {
        /// The smaller endpoint.
        low: u64,
        /// The larger endpoint.
        high: u64,
    },
    /// IPv6: the endpoints ordered by (address, port); the addresses, and
    /// both ports as `low_port << 16 | high_port`.
    V6 {
        /// The smaller endpoint's address.
        low: u128,
        /// The larger endpoint's address.
        high: u128,
        /// Both ports.
        ports: u32,
    },
}

impl ConnKey {
    /// An IPv6 connection.
    pub(crate) fn is_v6(&self) -> bool {
        matches!(self, ConnKey::V6 { .. })
    }

    /// The key of the connection of a parsed segment with ports `sport`
    /// and `dport` (its flow's endpoints, read straight from the packet),
    /// and which endpoint sent it: the key's `high` (1) or `low` (0).
    #[inline]
    pub(crate) fn of(seg: &wire::Segment<'_>, sport: u16, dport: u16) -> Option<(ConnKey, usize)> {
        match seg.ipv4_addrs() {
            Some((src, dst)) => Some(Self::v4(src, dst, sport, dport)),
            None => {
                let (src, dst) = seg.ipv6_addrs()?;
                Some(Self::v6(src, dst, sport, dport))
            }
        }
    }

    #[inline]
    fn v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> (ConnKey, usize) {
        let ep = |a: [u8; 4], port: u16| (u64::from(u32::from_be_bytes(a)) << 16) | u64::from(port);
        let (s, d) = (ep(src, sport), ep(dst, dport));
        if s <= d {
            (ConnKey::V4 { low: s, high: d }, 0)
        } else {
            (ConnKey::V4 { low: d, high: s }, 1)
        }
    }

    #[inline]
    fn v6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16) -> (ConnKey, usize) {
        let s = (u128::from_be_bytes(src), sport);
        let d = (u128::from_be_bytes(dst), dport);
        let ((lo, lp), (hi, hp), from) = if s <= d { (s, d, 0) } else { (d, s, 1) };
        let key = ConnKey::V6 {
            low: lo,
            high: hi,
            ports: (u32::from(lp) << 16) | u32::from(hp),
        };
        (key, from)
    }
}

/// Why a packet is not a segment RWM looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Not IPv4/IPv6, or not TCP, or a non-first fragment.
    NotTcp,
    /// An IP or TCP header that does not parse (or is cut by
    /// fragmentation).
    Malformed,
}

impl Skip {
    /// Why a packet that does not parse at all is skipped.
    pub(crate) fn unparsed(packet: &[u8]) -> Skip {
        match wire::ip_version(packet) {
            Some(4 | 6) => Skip::Malformed,
            _ => Skip::NotTcp,
        }
    }
}

/// The parts of a TCP segment RWM needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpSeg {
    pub(crate) key: ConnKey,
    /// The sender is the key's `high` endpoint (1) or `low` (0).
    pub(crate) from: usize,
    pub(crate) flags: u8,
    pub(crate) seq: u32,
    pub(crate) ack: u32,
    pub(crate) dst_port: u16,
    /// The window field.
    pub(crate) window: u16,
    /// Where the TCP header starts in the packet (the tests' checks).
    #[cfg(test)]
    pub(crate) tcp_at: usize,
}

/// Parses `packet` (a whole IP packet) down to its TCP header.
#[cfg(test)]
pub(crate) fn parse(packet: &[u8]) -> Result<TcpSeg, Skip> {
    match wire::Segment::parse(packet) {
        Ok(seg) => of_view(&seg),
        Err(_) => Err(Skip::unparsed(packet)),
    }
}

/// RWM's facts of a parsed packet.
#[inline]
pub(crate) fn of_view(seg: &wire::Segment<'_>) -> Result<TcpSeg, Skip> {
    if !seg.ipv6_chain_ok() {
        return Err(Skip::Malformed);
    }
    // Not reached: a non-first fragment.
    let (proto, _tcp_at) = seg.l4().ok_or(Skip::NotTcp)?;
    if proto != PROTO_TCP {
        return Err(Skip::NotTcp);
    }
    let h = seg.tcp_header().ok_or(Skip::Malformed)?;
    let (key, from) = ConnKey::of(seg, h.src_port, h.dst_port).ok_or(Skip::Malformed)?;
    Ok(TcpSeg {
        key,
        from,
        flags: h.flags,
        seq: h.seq,
        ack: h.ack,
        dst_port: h.dst_port,
        window: h.window,
        #[cfg(test)]
        tcp_at: _tcp_at,
    })
}

/// The TCP options of a parsed segment (SYNs only: MSS and window scale);
/// `None` if they do not parse.
pub(crate) fn options(seg: &wire::Segment<'_>) -> Option<TcpOptions> {
    TcpOptions::parse(seg.tcp_options()).ok()
}

/// The window field of the segment at `tcp_at`.
#[cfg(test)]
pub(crate) fn window(packet: &[u8], tcp_at: usize) -> Option<u16> {
    let bytes = packet.get(tcp_at..)?;
    Some(
        ka_codec::wire::tcp::TcpPacket::new_checked(bytes)
            .ok()?
            .window(),
    )
}

//! Finding the TCP header of an IPv4 / IPv6 packet, and the flow key.
//!
//! Only `ka_codec::wire` views touch the bytes; anything that does not
//! parse is [`Skip`]ped, never indexed.

use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_TCP};
use ka_codec::wire::ipv6;
use ka_codec::wire::tcp::{TcpOptions, TcpPacket};

/// A connection's key, the same for both directions: its two endpoints
/// in ascending order ("low", "high"), packed into integers so ordering
/// and hashing them are a few instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowKey {
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

impl FlowKey {
    /// An IPv6 connection.
    pub(crate) fn is_v6(&self) -> bool {
        matches!(self, FlowKey::V6 { .. })
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

/// The parts of a TCP segment RWM needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub(crate) key: FlowKey,
    /// The sender is the key's `high` endpoint (1) or `low` (0).
    pub(crate) from: usize,
    pub(crate) flags: u8,
    pub(crate) seq: u32,
    pub(crate) ack: u32,
    pub(crate) dst_port: u16,
    /// The window field.
    pub(crate) window: u16,
    /// Where the TCP header starts in the packet.
    pub(crate) tcp_at: usize,
}

/// Parses `packet` (a whole IP packet) down to its TCP header.
#[inline]
pub(crate) fn parse(packet: &[u8]) -> Result<Segment, Skip> {
    match ka_codec::wire::ip_version(packet) {
        Some(4) => {
            let ip = Ipv4Packet::new_checked(packet).map_err(|_| Skip::Malformed)?;
            if ip.protocol() != PROTO_TCP || ip.frag_offset() != 0 {
                return Err(Skip::NotTcp);
            }
            let (tcp_at, end) = (ip.header_len(), ip.total_len());
            let tcp = tcp_view(packet, tcp_at, end)?;
            let ep =
                |a: [u8; 4], port: u16| (u64::from(u32::from_be_bytes(a)) << 16) | u64::from(port);
            let s = ep(ip.src_addr(), tcp.src_port());
            let d = ep(ip.dst_addr(), tcp.dst_port());
            let (key, from) = if s <= d {
                (FlowKey::V4 { low: s, high: d }, 0)
            } else {
                (FlowKey::V4 { low: d, high: s }, 1)
            };
            Ok(segment(&tcp, key, from, tcp_at))
        }
        Some(6) => {
            let l = ipv6::layout(packet).map_err(|_| Skip::Malformed)?;
            let Some((proto, tcp_at)) = l.upper else {
                return Err(Skip::NotTcp); // a non-first fragment
            };
            if proto != PROTO_TCP {
                return Err(Skip::NotTcp);
            }
            let ip = ipv6::Ipv6Packet::new_checked(packet).map_err(|_| Skip::Malformed)?;
            let tcp = tcp_view(packet, tcp_at, ip.total_len())?;
            let s = (u128::from_be_bytes(ip.src_addr()), tcp.src_port());
            let d = (u128::from_be_bytes(ip.dst_addr()), tcp.dst_port());
            let ((lo, lp), (hi, hp), from) = if s <= d { (s, d, 0) } else { (d, s, 1) };
            let key = FlowKey::V6 {
                low: lo,
                high: hi,
                ports: (u32::from(lp) << 16) | u32::from(hp),
            };
            Ok(segment(&tcp, key, from, tcp_at))
        }
        _ => Err(Skip::NotTcp),
    }
}

/// The TCP header at `tcp_at`, within the IP packet's `end`.
#[inline]
fn tcp_view(packet: &[u8], tcp_at: usize, end: usize) -> Result<TcpPacket<&[u8]>, Skip> {
    let bytes = packet.get(tcp_at..end).ok_or(Skip::Malformed)?;
    TcpPacket::new_checked(bytes).map_err(|_| Skip::Malformed)
}

#[inline]
fn segment(tcp: &TcpPacket<&[u8]>, key: FlowKey, from: usize, tcp_at: usize) -> Segment {
    Segment {
        key,
        from,
        flags: tcp.flags(),
        seq: tcp.seq(),
        ack: tcp.ack(),
        dst_port: tcp.dst_port(),
        window: tcp.window(),
        tcp_at,
    }
}

/// The TCP options of the segment at `tcp_at` (SYNs only: MSS and window
/// scale); `None` if they do not parse.
pub(crate) fn options(packet: &[u8], tcp_at: usize) -> Option<TcpOptions> {
    let bytes = packet.get(tcp_at..)?;
    let tcp = TcpPacket::new_checked(bytes).ok()?;
    TcpOptions::parse(tcp.options()).ok()
}

/// The window field of the segment at `tcp_at`.
#[cfg(test)]
pub(crate) fn window(packet: &[u8], tcp_at: usize) -> Option<u16> {
    let bytes = packet.get(tcp_at..)?;
    Some(TcpPacket::new_checked(bytes).ok()?.window())
}

/// Stores `window` and patches the checksum (RFC 1624); the old window.
#[inline]
pub(crate) fn set_window(packet: &mut [u8], tcp_at: usize, window: u16) -> Option<u16> {
    let bytes = packet.get_mut(tcp_at..)?;
    Some(
        TcpPacket::new_checked(bytes)
            .ok()?
            .set_window_incremental(window),
    )
}

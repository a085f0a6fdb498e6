//! Finding the TCP header of an IPv4 / IPv6 packet, and the flow key.
//!
//! IPv4 packets with a plain 20-byte header (nearly all) are read from a
//! fixed 40-byte array (constant offsets, checked at compile time: one
//! length test instead of a bounds check per field); everything else
//! goes through the `ka_codec::wire` views. Both give the same answer for
//! every input (a test compares them on arbitrary bytes). Anything that
//! does not parse is [`Skip`]ped, never indexed.

use ka_codec::wire::checksum;
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
    match packet.first_chunk::<40>() {
        Some(h) if h[0] == 0x45 => parse_v4_plain(h, packet.len()),
        _ => parse_views(packet),
    }
}

/// [`parse`] for an IPv4 packet whose header is 20 bytes (`h`: its first
/// 40 bytes; `len`: the whole packet's): the checks of
/// `Ipv4Packet::new_checked` and `TcpPacket::new_checked`, in their order.
#[inline]
fn parse_v4_plain(h: &[u8; 40], len: usize) -> Result<Segment, Skip> {
    let be16 = |a: u8, b: u8| u16::from_be_bytes([a, b]);
    let total = usize::from(be16(h[2], h[3]));
    if total < 20 || total > len {
        return Err(Skip::Malformed);
    }
    if h[9] != PROTO_TCP || be16(h[6], h[7]) & 0x1FFF != 0 {
        return Err(Skip::NotTcp);
    }
    let tcp_len = total - 20;
    let data_offset = usize::from(h[32] >> 4) * 4;
    if tcp_len < 20 || data_offset < 20 || data_offset > tcp_len {
        return Err(Skip::Malformed);
    }
    let (sport, dport) = (be16(h[20], h[21]), be16(h[22], h[23]));
    let ep = |a: [u8; 4], port: u16| (u64::from(u32::from_be_bytes(a)) << 16) | u64::from(port);
    let s = ep([h[12], h[13], h[14], h[15]], sport);
    let d = ep([h[16], h[17], h[18], h[19]], dport);
    let (key, from) = if s <= d {
        (FlowKey::V4 { low: s, high: d }, 0)
    } else {
        (FlowKey::V4 { low: d, high: s }, 1)
    };
    Ok(Segment {
        key,
        from,
        flags: h[33],
        seq: u32::from_be_bytes([h[24], h[25], h[26], h[27]]),
        ack: u32::from_be_bytes([h[28], h[29], h[30], h[31]]),
        dst_port: dport,
        window: be16(h[34], h[35]),
        tcp_at: 20,
    })
}

/// [`parse`] through the `ka_codec::wire` views: any IPv4 or IPv6 packet.
fn parse_views(packet: &[u8]) -> Result<Segment, Skip> {
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

/// Stores `window` in the segment at `tcp_at` (which [`parse`] found)
/// and patches the checksum (RFC 1624, as
/// `TcpPacket::set_window_incremental`).
#[inline]
pub(crate) fn set_window(packet: &mut [u8], tcp_at: usize, window: u16) {
    let Some(f) = packet
        .get_mut(tcp_at.saturating_add(14)..)
        .and_then(|b| b.first_chunk_mut::<4>())
    else {
        return;
    };
    let old = u16::from_be_bytes([f[0], f[1]]);
    if old != window {
        let sum = checksum::update(u16::from_be_bytes([f[2], f[3]]), old, window);
        let ([w0, w1], [c0, c1]) = (window.to_be_bytes(), sum.to_be_bytes());
        *f = [w0, w1, c0, c1];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fixed-offset IPv4 path and the views agree on every input
        /// they both take.
        #[test]
        fn plain_v4_path_matches_the_views(
            mut head in proptest::collection::vec(any::<u8>(), 40..80),
            total in 0u16..100,
            tcp in any::<bool>(),
            frag in any::<bool>(),
            data_offset in 0u8..16,
        ) {
            head[0] = 0x45;
            head[2..4].copy_from_slice(&total.to_be_bytes());
            if tcp {
                head[9] = PROTO_TCP;
            }
            if !frag {
                head[6] &= 0xE0;
                head[7] = 0;
            }
            head[32] = (data_offset << 4) | (head[32] & 0x0F);
            let h = head.first_chunk::<40>().unwrap();
            let fast = parse_v4_plain(h, head.len());
            let slow = parse_views(&head);
            match (fast, slow) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(a.key, b.key);
                    prop_assert_eq!(
                        (a.from, a.flags, a.seq, a.ack, a.dst_port, a.window, a.tcp_at),
                        (b.from, b.flags, b.seq, b.ack, b.dst_port, b.window, b.tcp_at)
                    );
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "{:?} vs {:?}", a.map(|s| s.key), b.map(|s| s.key)),
            }
        }
    }
}

//! Finding the TCP header of an IPv4 / IPv6 packet, and the flow key.
//!
//! Only `ka_codec::wire` views touch the bytes; anything that does not
//! parse is [`Skip`]ped, never indexed.

use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_TCP};
use ka_codec::wire::ipv6;
use ka_codec::wire::tcp::{TcpOptions, TcpPacket};

/// One end of a connection: address (IPv4 as `::ffff:a.b.c.d`) and port.
pub(crate) type Endpoint = ([u8; 16], u16);

/// A connection's key, the same for both directions: the two endpoints in
/// ascending order ("low", "high") and the IP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowKey {
    pub(crate) low: Endpoint,
    pub(crate) high: Endpoint,
    pub(crate) v6: bool,
}

/// One write into the (keyed, SipHash) hasher instead of the derived
/// field-by-field writes, and only the bytes that can differ: 12 for IPv4
/// (addresses and ports) plus a version byte, 36 + 1 for IPv6. The table
/// lookup is on every packet.
impl std::hash::Hash for FlowKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut b = [0u8; 37];
        let ports = |p: u16, q: u16| {
            let ([a, b], [c, d]) = (p.to_be_bytes(), q.to_be_bytes());
            [a, b, c, d]
        };
        let n = if self.v6 {
            let (lo, rest) = b.split_at_mut(16);
            lo.copy_from_slice(&self.low.0);
            let (hi, rest) = rest.split_at_mut(16);
            hi.copy_from_slice(&self.high.0);
            let (p, rest) = rest.split_at_mut(4);
            p.copy_from_slice(&ports(self.low.1, self.high.1));
            rest.copy_from_slice(&[6]);
            37
        } else {
            let [.., a0, a1, a2, a3] = self.low.0;
            let [.., b0, b1, b2, b3] = self.high.0;
            let [p0, p1, q0, q1] = ports(self.low.1, self.high.1);
            let v4 = [a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, q0, q1, 4];
            if let Some(d) = b.get_mut(..13) {
                d.copy_from_slice(&v4);
            }
            13
        };
        state.write(b.get(..n).unwrap_or(&b));
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

fn mapped(a: [u8; 4]) -> [u8; 16] {
    let [a, b, c, d] = a;
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d]
}

/// Parses `packet` (a whole IP packet) down to its TCP header.
#[inline]
pub(crate) fn parse(packet: &[u8]) -> Result<Segment, Skip> {
    let (src, dst, tcp_at, end, v6) = match ka_codec::wire::ip_version(packet) {
        Some(4) => {
            let ip = Ipv4Packet::new_checked(packet).map_err(|_| Skip::Malformed)?;
            if ip.protocol() != PROTO_TCP || ip.frag_offset() != 0 {
                return Err(Skip::NotTcp);
            }
            (
                mapped(ip.src_addr()),
                mapped(ip.dst_addr()),
                ip.header_len(),
                ip.total_len(),
                false,
            )
        }
        Some(6) => {
            let l = ipv6::layout(packet).map_err(|_| Skip::Malformed)?;
            let Some((proto, at)) = l.upper else {
                return Err(Skip::NotTcp); // a non-first fragment
            };
            if proto != PROTO_TCP {
                return Err(Skip::NotTcp);
            }
            let ip = ipv6::Ipv6Packet::new_checked(packet).map_err(|_| Skip::Malformed)?;
            (ip.src_addr(), ip.dst_addr(), at, ip.total_len(), true)
        }
        _ => return Err(Skip::NotTcp),
    };
    let bytes = packet.get(tcp_at..end).ok_or(Skip::Malformed)?;
    let tcp = TcpPacket::new_checked(bytes).map_err(|_| Skip::Malformed)?;
    let s = (src, tcp.src_port());
    let d = (dst, tcp.dst_port());
    let (key, from) = if s <= d {
        (
            FlowKey {
                low: s,
                high: d,
                v6,
            },
            0,
        )
    } else {
        (
            FlowKey {
                low: d,
                high: s,
                v6,
            },
            1,
        )
    };
    Ok(Segment {
        key,
        from,
        flags: tcp.flags(),
        seq: tcp.seq(),
        ack: tcp.ack(),
        dst_port: tcp.dst_port(),
        window: tcp.window(),
        tcp_at,
    })
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

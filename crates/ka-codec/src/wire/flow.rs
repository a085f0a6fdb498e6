//! The one flow key of ka: one direction of a flow, IPv4 or IPv6
//! ([`FlowKey`]), as [`Segment::flow_key`](super::Segment::flow_key) reads it.

use core::cmp::Ordering;

/// An IPv4 address in the IPv4-mapped IPv6 form (RFC 4291 §2.5.5.2), as
/// [`FlowKey`] holds it.
pub const fn ipv4_mapped(a: [u8; 4]) -> [u8; 16] {
    // ::ffff:a.b.c.d as one 128-bit number (no byte-by-byte assembly).
    ((0xFFFF_u128 << 32) | u32::from_be_bytes(a) as u128).to_be_bytes()
}

/// One direction of a flow: addresses (IPv4 in the IPv4-mapped IPv6 form,
/// RFC 4291 §2.5.5.2), ports (0 for protocols without) and the upper-layer
/// protocol. Ordered field by field in this order (addresses byte by
/// byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowKey {
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Upper-layer protocol (6 for TCP).
    pub proto: u8,
}

impl FlowKey {
    /// An IPv4 flow.
    pub const fn v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, proto: u8) -> Self {
        FlowKey {
            src: ipv4_mapped(src),
            dst: ipv4_mapped(dst),
            sport,
            dport,
            proto,
        }
    }

    /// The other direction of the same flow.
    pub const fn reversed(&self) -> Self {
        FlowKey {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            proto: self.proto,
        }
    }

    /// Both addresses as IPv4, if both are IPv4-mapped.
    pub fn ipv4_addrs(&self) -> Option<([u8; 4], [u8; 4])> {
        fn v4(a: &[u8; 16]) -> Option<[u8; 4]> {
            match *a {
                [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a0, a1, a2, a3] => {
                    Some([a0, a1, a2, a3])
                }
                _ => None,
            }
        }
        Some((v4(&self.src)?, v4(&self.dst)?))
    }
}

impl Ord for FlowKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // Field by field, as a derived order would; a lookup's last
        // comparison (the key found) is decided by one equality test.
        if self == other {
            return Ordering::Equal;
        }
        self.src
            .cmp(&other.src)
            .then_with(|| self.dst.cmp(&other.dst))
            .then_with(|| self.sport.cmp(&other.sport))
            .then_with(|| self.dport.cmp(&other.dport))
            .then_with(|| self.proto.cmp(&other.proto))
    }
}

impl PartialOrd for FlowKey {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

//! Host addressing: host `i` (0-based, over all hosts of a run) is
//! `10.0.0.0 + i + 1`, so a router's routing table is a vector indexed by
//! host number.

use ka_codec::wire::ipv4::Ipv4Packet;

/// Most hosts a run may have (keeps addresses inside 10.0.0.0/8).
pub const MAX_HOSTS: usize = (1 << 24) - 2;

/// The address of host `i`.
pub fn host_addr(i: usize) -> [u8; 4] {
    let v = 0x0A00_0000u32 + (i as u32 & 0x00FF_FFFF) + 1;
    v.to_be_bytes()
}

/// The host number of `addr`, if it is a host address.
pub fn host_index(addr: [u8; 4]) -> Option<usize> {
    let v = u32::from_be_bytes(addr);
    let i = v.checked_sub(0x0A00_0001)?;
    (i < MAX_HOSTS as u32).then_some(i as usize)
}

/// Destination of an IPv4 packet (None for anything else).
pub fn ipv4_dst(packet: &[u8]) -> Option<[u8; 4]> {
    let p = Ipv4Packet::new_checked(packet).ok()?;
    Some(p.dst_addr())
}

/// The IPv4 source address of `packet`, if it parses.
pub fn ipv4_src(packet: &[u8]) -> Option<[u8; 4]> {
    let p = Ipv4Packet::new_checked(packet).ok()?;
    Some(p.src_addr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        assert_eq!(host_addr(0), [10, 0, 0, 1]);
        assert_eq!(host_addr(255), [10, 0, 1, 0]);
        for i in [0, 1, 254, 255, 65_535, MAX_HOSTS - 1] {
            assert_eq!(host_index(host_addr(i)), Some(i));
        }
        assert_eq!(host_index([10, 0, 0, 0]), None);
        assert_eq!(host_index([192, 168, 0, 1]), None);
        assert_eq!(ipv4_dst(&[0x45, 0]), None);
    }
}

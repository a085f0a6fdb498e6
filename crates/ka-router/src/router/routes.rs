//! Which interface a packet leaves by ([`Routes`]): the gateway's
//! two-interface crossover, or a table over IPv4 destinations.
//!
//! Besides the egress of a packet, the router needs the egress *towards
//! its source* (the reverse path, where a port may lower the rate echo an
//! ACK carries: [`super::Router`]'s module docs), so every rule answers
//! both.

use ka_codec::wire::ipv4::Ipv4Packet;

/// "No route" in an [`AddressTable`].
pub const NO_ROUTE: u16 = u16::MAX;

/// How a [`Router`](super::Router) picks interfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routes {
    /// Two interfaces, 0 and 1, each the other's way out: a packet read on
    /// interface `i` leaves by `1 − i`, and its source lies behind `i`
    /// (the `ka-router` binary: a bump between two devices). Packets
    /// read on any other interface have no route.
    Crossover,
    /// By IPv4 address, from a table (the simulator's static routes).
    Table(AddressTable),
}

impl Routes {
    /// The interface `packet`, read on interface `ingress`, leaves by
    /// (`None`: no route).
    #[inline]
    pub fn egress(&self, ingress: usize, packet: &[u8]) -> Option<usize> {
        match self {
            Routes::Crossover => match ingress {
                0 => Some(1),
                1 => Some(0),
                _ => None,
            },
            Routes::Table(t) => t.lookup(ipv4_dst(packet)?),
        }
    }

    /// The interface towards `packet`'s source: where a packet to that
    /// source would leave (`None`: unknown).
    #[inline]
    pub fn towards_source(&self, ingress: usize, packet: &[u8]) -> Option<usize> {
        match self {
            Routes::Crossover => (ingress < 2).then_some(ingress),
            Routes::Table(t) => t.lookup(ipv4_src(packet)?),
        }
    }
}

/// A routing table over a block of consecutive IPv4 addresses: address
/// `first + i` leaves by interface `egress[i]` ([`NO_ROUTE`]: none);
/// addresses outside the block have no route. One index per lookup, which
/// suits a simulator that numbers its hosts from one address up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressTable {
    first: u32,
    egress: Vec<u16>,
}

impl AddressTable {
    /// The table `egress` for the addresses from `first` on.
    pub fn new(first: [u8; 4], egress: Vec<u16>) -> Self {
        Self {
            first: u32::from_be_bytes(first),
            egress,
        }
    }

    /// The first address of the block.
    pub fn first(&self) -> [u8; 4] {
        self.first.to_be_bytes()
    }

    /// The egress of each address of the block, in order.
    pub fn egress(&self) -> &[u16] {
        &self.egress
    }

    /// The interface towards `addr`, if the table has one.
    #[inline]
    pub fn lookup(&self, addr: [u8; 4]) -> Option<usize> {
        let i = u32::from_be_bytes(addr).checked_sub(self.first)?;
        match self.egress.get(usize::try_from(i).ok()?) {
            Some(&e) if e != NO_ROUTE => Some(usize::from(e)),
            _ => None,
        }
    }
}

/// The destination of an IPv4 packet (`None` for anything else).
fn ipv4_dst(packet: &[u8]) -> Option<[u8; 4]> {
    Some(Ipv4Packet::new_checked(packet).ok()?.dst_addr())
}

/// The source of an IPv4 packet (`None` for anything else).
fn ipv4_src(packet: &[u8]) -> Option<[u8; 4]> {
    Some(Ipv4Packet::new_checked(packet).ok()?.src_addr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 20];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&20u16.to_be_bytes());
        p[8] = 64;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        let c = ka_codec::wire::checksum::checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn crossover_sends_a_packet_out_of_the_other_interface() {
        let r = Routes::Crossover;
        let p = [0u8; 3]; // not even IP: the crossover does not look
        assert_eq!(r.egress(0, &p), Some(1));
        assert_eq!(r.egress(1, &p), Some(0));
        assert_eq!(r.egress(2, &p), None);
        assert_eq!(r.towards_source(0, &p), Some(0));
        assert_eq!(r.towards_source(1, &p), Some(1));
        assert_eq!(r.towards_source(2, &p), None);
    }

    #[test]
    fn a_table_routes_by_destination_and_finds_the_source() {
        let t = AddressTable::new([10, 0, 0, 1], vec![3, NO_ROUTE, 5]);
        assert_eq!(t.lookup([10, 0, 0, 1]), Some(3));
        assert_eq!(t.lookup([10, 0, 0, 2]), None);
        assert_eq!(t.lookup([10, 0, 0, 3]), Some(5));
        assert_eq!(t.lookup([10, 0, 0, 4]), None);
        assert_eq!(t.lookup([10, 0, 0, 0]), None);
        let r = Routes::Table(t);
        let p = v4([10, 0, 0, 3], [10, 0, 0, 1]);
        assert_eq!(r.egress(7, &p), Some(3));
        assert_eq!(r.towards_source(7, &p), Some(5));
        assert_eq!(r.egress(0, &p[..19]), None);
        assert_eq!(r.egress(0, &v4([10, 0, 0, 1], [192, 168, 0, 1])), None);
    }
}

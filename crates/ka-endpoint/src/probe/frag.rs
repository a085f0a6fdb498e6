//! The packets the prober makes and reads that a TCP stack never does: an
//! IPv4 datagram split on purpose so its leading fragment carries `L`
//! payload bytes (what a KA router does, DESIGN §3.4), and the next-hop MTU
//! of an ICMP "fragmentation needed" (RFC 1191).

use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_ICMP, PROTO_TCP};

/// Splits the unfragmented, option-less IPv4 datagram `packet` into a
/// leading fragment of `lead` payload bytes (MF = 1, offset 0) and the
/// rest (offset `lead`), both with the original header and valid checksums.
/// `None` if `packet` is not such a datagram, `lead` is not a positive
/// multiple of 8, or either piece would be empty.
pub fn split_ipv4(packet: &[u8], lead: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    let ip = Ipv4Packet::new_checked(packet).ok()?;
    let hl = ip.header_len();
    let payload = ip.payload();
    if ip.is_fragment()
        || ip.dont_frag()
        || lead == 0
        || !lead.is_multiple_of(8)
        || lead >= payload.len()
    {
        return None;
    }
    let header = ip.header();
    let (first, rest) = payload.split_at_checked(lead)?;
    let piece = |body: &[u8], more: bool, offset: usize| -> Option<Vec<u8>> {
        let mut v = Vec::with_capacity(hl + body.len());
        v.extend_from_slice(header);
        v.extend_from_slice(body);
        let total = u16::try_from(v.len()).ok()?;
        let mut p = Ipv4Packet::new_unchecked(&mut v[..]);
        p.set_total_len(total);
        p.set_flags_and_offset(false, more, offset);
        p.fill_checksum();
        Some(v)
    };
    Some((piece(first, true, 0)?, piece(rest, false, lead)?))
}

/// An ICMP "destination unreachable, fragmentation needed and DF set"
/// (type 3, code 4) from `packet`, if it is one about a TCP packet sent to
/// `to`: the next-hop MTU it names (0 when the router did not say, RFC
/// 1191 §4).
pub fn frag_needed_mtu(packet: &[u8], to: [u8; 4]) -> Option<u16> {
    let ip = Ipv4Packet::new_checked(packet).ok()?;
    if ip.protocol() != PROTO_ICMP || ip.is_fragment() {
        return None;
    }
    let icmp = ip.payload();
    let (&[kind, code, _, _, _, _, hi, lo], quoted) = icmp.split_first_chunk::<8>()?;
    if kind != 3 || code != 4 {
        return None;
    }
    // The quoted header: at least its first 20 bytes (RFC 792).
    let q = quoted.get(..20)?;
    let (proto, dst) = (*q.get(9)?, q.get(16..20)?);
    (proto == PROTO_TCP && dst == to).then_some(u16::from_be_bytes([hi, lo]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ka_codec::wire::build::{Addrs, TcpSegment};
    use ka_codec::wire::tcp::{ACK, TcpRepr};

    fn datagram(payload: usize, df: bool) -> Vec<u8> {
        let data = vec![0xA5; payload];
        TcpSegment {
            dont_frag: df,
            ident: 77,
            payload: &data,
            ..TcpSegment::new(
                Addrs::V4([10, 0, 0, 1], [10, 0, 0, 2]),
                TcpRepr::new(1, 2, 3, 4, ACK, 100),
            )
        }
        .to_vec()
        .unwrap()
    }

    #[test]
    fn split_matches_what_a_ka_router_makes() {
        let pkt = datagram(1460, false);
        for lead in [24usize, 880, 1472] {
            let (a, b) = split_ipv4(&pkt, lead).unwrap();
            let code = ka_codec::Code::from_len(lead).unwrap();
            let (ra, rb) = ka_router::stamp_ipv4(pkt.clone(), code).into_pieces();
            assert_eq!(a, ra, "leading fragment for L = {lead}");
            assert_eq!(Some(b), rb, "rest for L = {lead}");
        }
    }

    #[test]
    fn split_refuses_what_cannot_be_split() {
        let pkt = datagram(100, false);
        assert!(split_ipv4(&pkt, 120).is_none(), "lead ≥ payload");
        assert!(split_ipv4(&pkt, 20).is_none(), "not a multiple of 8");
        assert!(split_ipv4(&pkt, 0).is_none());
        assert!(split_ipv4(&datagram(100, true), 24).is_none(), "DF");
        let (a, _) = split_ipv4(&pkt, 24).unwrap();
        assert!(split_ipv4(&a, 8).is_none(), "already a fragment");
        assert!(split_ipv4(&pkt[..30], 8).is_none(), "truncated");
    }

    #[test]
    fn frag_needed_is_read_only_for_tcp_to_the_peer() {
        let quoted = datagram(1400, true);
        let mut icmp = vec![3u8, 4, 0, 0, 0, 0, 0x05, 0x78];
        icmp.extend_from_slice(&quoted[..28]);
        let mut pkt = vec![0u8; 20 + icmp.len()];
        ka_codec::wire::ipv4::Ipv4Repr {
            ttl: 64,
            ..ka_codec::wire::ipv4::Ipv4Repr::new(
                [10, 0, 1, 1],
                [10, 0, 0, 1],
                PROTO_ICMP,
                icmp.len(),
            )
        }
        .emit(&mut pkt)
        .unwrap();
        pkt[20..].copy_from_slice(&icmp);
        assert_eq!(frag_needed_mtu(&pkt, [10, 0, 0, 2]), Some(1400));
        assert_eq!(frag_needed_mtu(&pkt, [10, 0, 0, 9]), None, "other peer");
        pkt[21] = 1; // code 1: host unreachable
        assert_eq!(frag_needed_mtu(&pkt, [10, 0, 0, 2]), None);
        assert_eq!(frag_needed_mtu(&pkt[..30], [10, 0, 0, 2]), None);
    }
}

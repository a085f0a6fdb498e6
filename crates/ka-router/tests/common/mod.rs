//! Packet builders and a reassembler shared by the integration tests.
#![allow(dead_code)]

pub mod crowd;

use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::ipv6::{self, FragmentHeader, Ipv6Packet};

/// An IPv4 packet with a valid header checksum. `options` must be a
/// multiple of 4 bytes (≤ 40).
#[allow(clippy::too_many_arguments)]
pub fn ipv4(
    payload: &[u8],
    options: &[u8],
    df: bool,
    mf: bool,
    offset: usize,
    ident: u16,
    ttl: u8,
    proto: u8,
) -> Vec<u8> {
    assert!(options.len().is_multiple_of(4) && options.len() <= 40);
    let hl = 20 + options.len();
    let total = hl + payload.len();
    let mut b = vec![0u8; total];
    b[0] = 0x40 | (hl / 4) as u8;
    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    b[12..16].copy_from_slice(&[10, 0, 0, 1]);
    b[16..20].copy_from_slice(&[10, 0, 0, 2]);
    b[20..hl].copy_from_slice(options);
    b[hl..].copy_from_slice(payload);
    let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
    p.set_ident(ident);
    p.set_flags_and_offset(df, mf, offset);
    p.set_ttl(ttl);
    p.set_protocol(proto);
    p.fill_checksum();
    b
}

/// A plain IPv4/UDP-like packet of `total` bytes (no options, DF off).
pub fn ipv4_simple(total: usize, ident: u16) -> Vec<u8> {
    let payload: Vec<u8> = (0..total - 20).map(|i| (i * 7 + 3) as u8).collect();
    ipv4(&payload, &[], false, false, 0, ident, 64, 17)
}

/// An RTT indicator: IPv4, DF, total length 600 + k.
pub fn indicator_v4(k: u8) -> Vec<u8> {
    let payload = vec![0xAB; 580 + k as usize];
    ipv4(&payload, &[], true, false, 0, 0, 64, 6)
}

/// One IPv6 extension header in a test packet.
#[derive(Debug, Clone)]
pub enum Ext {
    /// Hop-by-Hop (type 0), `units` · 8 bytes.
    HopByHop(usize),
    /// Destination options (type 60), `units` · 8 bytes.
    DestOpts(usize),
    /// Routing (type 43), `units` · 8 bytes.
    Routing(usize),
    /// Fragment (type 44).
    Fragment {
        offset: usize,
        more: bool,
        ident: u32,
    },
}

impl Ext {
    fn kind(&self) -> u8 {
        match self {
            Ext::HopByHop(_) => 0,
            Ext::DestOpts(_) => 60,
            Ext::Routing(_) => 43,
            Ext::Fragment { .. } => 44,
        }
    }
}

/// An IPv6 packet with the given extension headers, upper-layer protocol and
/// payload.
pub fn ipv6(exts: &[Ext], upper: u8, payload: &[u8], hop_limit: u8) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, e) in exts.iter().enumerate() {
        let next = exts.get(i + 1).map_or(upper, Ext::kind);
        match e {
            Ext::HopByHop(u) | Ext::DestOpts(u) | Ext::Routing(u) => {
                let len = u * 8;
                let start = body.len();
                body.extend((0..len).map(|j| (j as u8) ^ 0x5A));
                body[start] = next;
                body[start + 1] = (u - 1) as u8;
                if let Ext::HopByHop(_) | Ext::DestOpts(_) = e {
                    // PadN option over the rest, so it is well formed.
                    body[start + 2] = 1;
                    body[start + 3] = (len - 4) as u8;
                }
            }
            Ext::Fragment {
                offset,
                more,
                ident,
            } => {
                let mut f = [0u8; 8];
                FragmentHeader {
                    next_header: next,
                    offset: *offset,
                    more_frags: *more,
                    ident: *ident,
                }
                .emit(&mut f)
                .unwrap();
                body.extend_from_slice(&f);
            }
        }
    }
    body.extend_from_slice(payload);
    let mut b = vec![0u8; 40 + body.len()];
    b[40..].copy_from_slice(&body);
    let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
    p.set_version_class_flow(0, 0xBEEF);
    p.set_payload_len(body.len() as u16);
    p.set_next_header(exts.first().map_or(upper, Ext::kind));
    p.set_hop_limit(hop_limit);
    p.set_src_addr([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.set_dst_addr([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    b
}

/// Checks the IPv4 header checksum.
pub fn v4_checksum_ok(p: &[u8]) -> bool {
    Ipv4Packet::new_checked(p)
        .map(|p| p.verify_checksum())
        .unwrap_or(false)
}

/// Reassembles IPv4 pieces of one datagram piece into the piece they came
/// from: header of the offset-`first_offset` piece (all options), MF of the
/// last piece, payloads concatenated. Panics on gaps or overlaps.
pub fn reassemble_v4(pieces: &[Vec<u8>]) -> Vec<u8> {
    let mut ps: Vec<_> = pieces
        .iter()
        .map(|p| Ipv4Packet::new_checked(&p[..]).expect("piece parses"))
        .collect();
    ps.sort_by_key(|p| p.frag_offset());
    let first = &ps[0];
    let ident = first.ident();
    let mut payload = Vec::new();
    let mut expect = first.frag_offset();
    for p in &ps {
        assert_eq!(p.ident(), ident, "identification differs");
        assert_eq!(p.frag_offset(), expect, "gap or overlap");
        payload.extend_from_slice(p.payload());
        expect += p.payload().len();
    }
    let last = ps.last().unwrap();
    let hl = first.header_len();
    let mut out = first.header().to_vec();
    out.extend_from_slice(&payload);
    let mut p = Ipv4Packet::new_unchecked(&mut out[..]);
    p.set_total_len((hl + payload.len()) as u16);
    p.set_flags_and_offset(false, last.more_frags(), first.frag_offset());
    p.fill_checksum();
    out
}

/// Reassembles IPv6 pieces. If `had_fragment_header` the result keeps a
/// Fragment header (offset of the first piece, M of the last), otherwise it
/// is removed and the Next Header chain restored.
pub fn reassemble_v6(pieces: &[Vec<u8>], had_fragment_header: bool) -> Vec<u8> {
    let mut ps: Vec<(usize, FragmentHeader, &Vec<u8>)> = pieces
        .iter()
        .map(|p| {
            let l = ipv6::layout(p).expect("piece layout");
            let (at, fh) = l.fragment.expect("piece has a fragment header");
            (at, fh, p)
        })
        .collect();
    ps.sort_by_key(|(_, fh, _)| fh.offset);
    let (at0, fh0, p0) = ps[0];
    let lay0 = ipv6::layout(p0).unwrap();
    let mut data = Vec::new();
    let mut expect = fh0.offset;
    for (at, fh, p) in &ps {
        assert_eq!(fh.ident, fh0.ident);
        assert_eq!(fh.next_header, fh0.next_header);
        assert_eq!(fh.offset, expect, "gap or overlap");
        assert_eq!(at, &at0);
        assert_eq!(p[..4], p0[..4], "fixed header differs");
        assert_eq!(p[6..*at], p0[6..at0], "unfragmentable parts differ");
        let total = 40 + u16::from_be_bytes([p[4], p[5]]) as usize;
        data.extend_from_slice(&p[at + 8..total]);
        expect += total - at - 8;
    }
    let last_more = ps.last().unwrap().1.more_frags;
    let mut out = p0[..at0].to_vec();
    if had_fragment_header {
        let mut f = [0u8; 8];
        FragmentHeader {
            more_frags: last_more,
            ..fh0
        }
        .emit(&mut f)
        .unwrap();
        out.extend_from_slice(&f);
    } else {
        out[lay0.next_header_field] = fh0.next_header;
    }
    out.extend_from_slice(&data);
    let len = (out.len() - 40) as u16;
    out[4..6].copy_from_slice(&len.to_be_bytes());
    out
}

/// IPv4 header with the checksum zeroed, for comparisons that ignore it.
pub fn zero_v4_checksum(p: &[u8]) -> Vec<u8> {
    let mut v = p.to_vec();
    v[10] = 0;
    v[11] = 0;
    v
}

/// An IPv4/UDP packet of `total` (≥ 28) bytes from port `sport` to `dport`
/// with ECN codepoint `ecn` (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE) and a
/// 4-byte sequence number `seq` right after the UDP header. Valid header
/// checksum.
pub fn udp_v4(sport: u16, dport: u16, total: usize, ecn: u8, seq: u32) -> Vec<u8> {
    assert!(total >= 32);
    let mut payload = vec![0u8; total - 20];
    payload[..2].copy_from_slice(&sport.to_be_bytes());
    payload[2..4].copy_from_slice(&dport.to_be_bytes());
    payload[4..6].copy_from_slice(&((total - 20) as u16).to_be_bytes());
    payload[8..12].copy_from_slice(&seq.to_be_bytes());
    let mut p = ipv4(&payload, &[], false, false, 0, seq as u16, 64, 17);
    p[1] = ecn & 3;
    Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
    p
}

/// Source port and sequence number of a [`udp_v4`] packet.
pub fn udp_v4_id(p: &[u8]) -> (u16, u32) {
    (
        u16::from_be_bytes([p[20], p[21]]),
        u32::from_be_bytes([p[28], p[29], p[30], p[31]]),
    )
}

use super::*;
use crate::wire::checksum::{finish, pseudo_v4, sum};
use std::vec;
use std::vec::Vec;

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [10, 0, 0, 2];

/// IPv4 (`ip_opts` after the fixed header) + TCP (`tcp_opts`, flags,
/// `payload` bytes), both checksums right.
fn v4_tcp(ip_opts: &[u8], flags_off: u16, tcp_opts: &[u8], flags: u8, payload: usize) -> Vec<u8> {
    let hl = 20 + ip_opts.len();
    let thl = 20 + tcp_opts.len();
    let total = hl + thl + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x40 | (hl / 4) as u8;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    p[6..8].copy_from_slice(&flags_off.to_be_bytes());
    p[8] = 64;
    p[9] = PROTO_TCP;
    p[12..16].copy_from_slice(&SRC);
    p[16..20].copy_from_slice(&DST);
    p[20..hl].copy_from_slice(ip_opts);
    Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
    let t = &mut p[hl..];
    t[0..2].copy_from_slice(&40000u16.to_be_bytes());
    t[2..4].copy_from_slice(&5001u16.to_be_bytes());
    t[4..8].copy_from_slice(&7u32.to_be_bytes());
    t[8..12].copy_from_slice(&9u32.to_be_bytes());
    t[12] = ((thl / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&1000u16.to_be_bytes());
    t[20..thl].copy_from_slice(tcp_opts);
    let len = (thl + payload) as u32;
    TcpPacket::new_unchecked(&mut p[hl..]).fill_checksum(pseudo_v4(SRC, DST, 6, len));
    p
}

fn tcp_checksum_ok(p: &[u8], hl: usize) -> bool {
    let len = (p.len() - hl) as u32;
    finish(sum(&p[hl..], pseudo_v4(SRC, DST, 6, len))) == 0
}

#[test]
fn plain_ipv4_tcp() {
    let p = v4_tcp(&[], 0x4000, &[2, 4, 5, 0xb4], tcp::SYN, 10);
    let s = Segment::parse(&p).unwrap();
    assert_eq!(s.layout(), Layout::parse_general(&p).unwrap());
    assert_eq!((s.version(), s.ip_header_len(), s.total_len()), (4, 20, 54));
    assert!(s.dont_frag() && !s.is_fragment() && !s.is_leading_fragment());
    assert_eq!(s.l4(), Some((PROTO_TCP, 20)));
    assert!(s.is_tcp());
    assert_eq!(s.tcp_header_len(), 24);
    assert_eq!(s.tcp_payload_len(), Some(10));
    assert_eq!(s.tcp_flags(), Some(tcp::SYN));
    assert_eq!((s.tcp_seq(), s.tcp_ack()), (Some(7), Some(9)));
    assert_eq!(s.tcp_window(), Some(1000));
    assert_eq!(s.ports(), Some((40000, 5001)));
    assert_eq!(s.ident(), 0x1234);
    let k = s.flow_key().unwrap();
    assert_eq!(k, FlowKey::v4(SRC, DST, 40000, 5001, 6));
    assert_eq!(k.ipv4_addrs(), Some((SRC, DST)));
    assert_eq!(k.reversed().reversed(), k);
    assert_eq!(k.reversed().sport, 5001);
    assert_eq!(s.tcp_options(), &[2, 4, 5, 0xb4]);
    let o: Vec<_> = s.tcp_option_iter().map(|o| o.unwrap().kind).collect();
    assert_eq!(o, [2]);
    assert_eq!(s.tcp().unwrap().payload().len(), 10);
}

#[test]
fn ipv4_options_and_fragments() {
    let rcp = [30, 8, 0, 0, 0x10, 0, 0, 100];
    let p = v4_tcp(&rcp, 0x2000, &[], tcp::ACK, 100);
    let s = Segment::parse(&p).unwrap();
    assert_eq!(s.layout(), Layout::parse_general(&p).unwrap());
    assert_eq!(s.ip_header_len(), 28);
    assert_eq!(s.ipv4_options(), &rcp);
    assert!(s.is_leading_fragment() && s.is_fragment());
    assert_eq!(s.l4(), Some((PROTO_TCP, 28)));
    let o = s.ipv4_option_iter().next().unwrap().unwrap();
    assert_eq!((o.offset, o.kind, o.body.len()), (0, 30, 6));
    // A non-first fragment: no upper layer, no flow.
    let p = v4_tcp(&[], 62, &[], tcp::ACK, 100);
    let s = Segment::parse(&p).unwrap();
    assert_eq!((s.frag_offset(), s.l4(), s.flow_key()), (496, None, None));
    assert!(!s.is_tcp() && s.is_fragment() && s.tcp().is_none());
    // A TCP header cut by the total length: IP facts only.
    let mut p = v4_tcp(&[], 0, &[], tcp::ACK, 0);
    p[2..4].copy_from_slice(&30u16.to_be_bytes());
    let s = Segment::parse(&p).unwrap();
    assert!(s.l4().is_some() && !s.is_tcp());
    assert_eq!((s.ports(), s.tcp_flags()), (None, None));
    assert_eq!(s.layout(), Layout::parse_general(&p).unwrap());
}

#[test]
fn rejects_what_the_ip_views_reject() {
    assert_eq!(Layout::parse(&[]), Err(WireError::Truncated));
    assert_eq!(Layout::parse(&[0x20, 0, 0]), Err(WireError::BadVersion));
    let mut p = v4_tcp(&[], 0, &[], 0, 0);
    p[2..4].copy_from_slice(&19u16.to_be_bytes());
    assert_eq!(Layout::parse(&p), Err(WireError::BadTotalLen));
    p[2..4].copy_from_slice(&41u16.to_be_bytes());
    assert_eq!(Layout::parse(&p), Err(WireError::Truncated));
    assert_eq!(Layout::parse(&[0x60; 39]), Err(WireError::Truncated));
}

fn v6(next: u8, ext: &[u8], upper: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 40];
    let mut ip = Ipv6Packet::new_unchecked(&mut p[..]);
    ip.set_version_class_flow(0, 1);
    ip.set_payload_len((ext.len() + upper.len()) as u16);
    ip.set_next_header(next);
    ip.set_hop_limit(64);
    ip.set_src_addr([1; 16]);
    ip.set_dst_addr([2; 16]);
    p.extend_from_slice(ext);
    p.extend_from_slice(upper);
    p
}

#[test]
fn ipv6_with_fragment_header() {
    let mut ext = [0u8; 8];
    FragmentHeader {
        next_header: PROTO_TCP,
        offset: 0,
        more_frags: true,
        ident: 0x4B41_0001,
    }
    .emit(&mut ext)
    .unwrap();
    let mut tcp = [0u8; 24];
    tcp[0..2].copy_from_slice(&80u16.to_be_bytes());
    tcp[2..4].copy_from_slice(&443u16.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = tcp::ACK;
    let p = v6(ipv6::NEXT_HEADER_FRAGMENT, &ext, &tcp);
    let s = Segment::parse(&p).unwrap();
    assert!(s.is_ipv6() && s.is_leading_fragment() && s.has_fragment_header());
    assert_eq!(s.fragment_header_at(), Some(40));
    assert_eq!(s.ident(), 0x4B41_0001);
    assert_eq!(s.l4(), Some((PROTO_TCP, 48)));
    assert_eq!(s.tcp_payload_len(), Some(4));
    assert_eq!(s.ipv6_layout(), ipv6::layout(&p).ok());
    let k = s.flow_key().unwrap();
    assert_eq!(
        (k.src, k.dst, k.sport, k.dport),
        ([1; 16], [2; 16], 80, 443)
    );
    assert_eq!(k.ipv4_addrs(), None);
    // A chain that does not walk: accepted, IP facts only.
    let p = v6(ipv6::NEXT_HEADER_DEST_OPTS, &[6, 5], &[]);
    let s = Segment::parse(&p).unwrap();
    assert!(!s.ipv6_chain_ok() && s.l4().is_none() && s.ipv6_layout().is_none());
    assert_eq!(s.total_len(), 42);
}

#[test]
fn rewrites_keep_the_checksum_right() {
    let opts = [1, 1, 253, 6, 0x4B, 0x41, 150, 7];
    for flags_off in [0, 0x2000] {
        let mut p = v4_tcp(&[], flags_off, &opts, tcp::ACK, 20);
        let mut s = SegmentMut::parse(&mut p).unwrap();
        assert_eq!(s.set_tcp_window(600), Some(1000));
        assert_eq!(s.as_segment().tcp_window(), Some(600));
        assert!(s.patch_tcp_options(6, &[90]));
        assert!(!s.patch_tcp_options(7, &[1, 2]), "past the options");
        assert!(tcp_checksum_ok(&p, 20));
        assert_eq!(p[46], 90);
    }
    // Nothing TCP: nothing written.
    let mut p = v4_tcp(&[], 62, &opts, tcp::ACK, 20);
    let before = p.clone();
    let mut s = SegmentMut::parse(&mut p).unwrap();
    assert_eq!(s.set_tcp_window(1), None);
    assert!(!s.patch_tcp_options(0, &[1]));
    assert!(s.tcp_mut().is_none());
    assert_eq!(p, before);
}

#[test]
fn with_layout_on_other_bytes_never_panics() {
    let p = v4_tcp(&[30, 8, 0, 0, 0, 0, 0, 0], 0, &[1, 1, 1, 1], tcp::ACK, 100);
    let l = Layout::parse(&p).unwrap();
    for n in 0..p.len() {
        let s = Segment::with_layout(&p[..n], l);
        let _ = (
            s.flow_key(),
            s.tcp_flags(),
            s.tcp_options(),
            s.ipv4_options(),
        );
        let _ = (s.l4_bytes(), s.packet(), s.ident(), s.ipv6_layout());
        let mut b = p[..n].to_vec();
        let mut m = SegmentMut::with_layout(&mut b, l);
        let _ = (m.set_tcp_window(3), m.patch_tcp_options(0, &[2, 2]));
    }
}

#[test]
fn layout_is_small_plain_data() {
    // The module docs promise two words (it travels next to owned
    // buffers), and no more with `Option` around it.
    assert_eq!(core::mem::size_of::<Layout>(), 16);
    assert_eq!(core::mem::size_of::<Option<Layout>>(), 16);
}

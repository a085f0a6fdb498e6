//! Property tests for `ka_codec::wire`: no view or parser panics on any
//! bytes, every `Repr` survives `emit` → `parse` unchanged, and the
//! one-parse [`Segment`] view agrees with the single-header views and with
//! itself (fast path against the general path).

mod common;

use common::arb_options;
use ka_codec::wire::checksum::{self, pseudo_v4, pseudo_v6};
use ka_codec::wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use ka_codec::wire::ipv6::{self, FragmentHeader, Ipv6Packet};
use ka_codec::wire::tcp::{TcpOptions, TcpPacket, TcpRepr};
use ka_codec::wire::{FlowKey, Layout, OptionIter, Segment, SegmentMut};
use proptest::prelude::*;

/// Touches every accessor of a [`Segment`] and checks it against the
/// single-header views of the same bytes.
fn check_segment(data: &[u8]) {
    let seg = Segment::parse(data);
    assert_eq!(
        seg.map(|s| s.layout()),
        Layout::parse_general(data),
        "fast path"
    );
    let Ok(s) = seg else {
        assert!(Ipv4Packet::new_checked(data).is_err() && Ipv6Packet::new_checked(data).is_err());
        return;
    };
    // Every accessor, for never panicking.
    let _ = (s.ipv4_options(), s.ident(), s.ipv6_fragment(), s.packet());
    let _ = (
        s.tcp_flags(),
        s.tcp_seq(),
        s.tcp_ack(),
        s.tcp_window(),
        s.tcp_options(),
    );
    for o in s.tcp_option_iter().chain(s.ipv4_option_iter()).flatten() {
        assert!(o.bytes.len() == 1 || o.bytes.len() == o.body.len() + 2);
    }
    assert!(s.total_len() <= data.len());
    if let Some((proto, at)) = s.l4() {
        assert!(at <= s.total_len());
        let key = s.flow_key().unwrap();
        assert_eq!(
            (key.proto, key.src, key.dst),
            (proto, s.src_addr(), s.dst_addr())
        );
        assert_eq!(key.reversed().reversed(), key);
    } else {
        assert_eq!(s.flow_key(), None);
    }
    match s.version() {
        4 => {
            let p = Ipv4Packet::new_checked(data).unwrap();
            assert_eq!(
                (s.ip_header_len(), s.total_len()),
                (p.header_len(), p.total_len())
            );
            assert_eq!(
                (s.dont_frag(), s.more_frags(), s.frag_offset()),
                (p.dont_frag(), p.more_frags(), p.frag_offset())
            );
            assert_eq!(s.is_fragment(), p.is_fragment());
            assert_eq!(s.ipv4_options(), p.options());
            assert_eq!(s.ipv4_addrs(), Some((p.src_addr(), p.dst_addr())));
            assert_eq!(s.ident(), u32::from(p.ident()));
            let l4 = (p.frag_offset() == 0).then(|| (p.protocol(), p.header_len()));
            assert_eq!(s.l4(), l4);
            if let Some(key) = s.flow_key() {
                assert_eq!(key.ipv4_addrs(), Some((p.src_addr(), p.dst_addr())));
            }
        }
        6 => {
            let p = Ipv6Packet::new_checked(data).unwrap();
            assert_eq!(s.total_len(), p.total_len());
            let l = ipv6::layout(data).ok();
            assert_eq!(s.ipv6_chain_ok(), l.is_some());
            assert_eq!(s.ipv6_layout(), l);
            assert_eq!(s.l4(), l.and_then(|l| l.upper));
            let frag = l.and_then(|l| l.fragment);
            assert_eq!(s.fragment_header_at(), frag.map(|f| f.0));
            assert_eq!(s.frag_offset(), frag.map_or(0, |f| f.1.offset));
            assert_eq!(s.more_frags(), frag.is_some_and(|f| f.1.more_frags));
            assert!(!s.dont_frag());
        }
        v => panic!("version {v} accepted"),
    }
    // The TCP header: exactly when `TcpPacket::new_checked` takes the
    // upper-layer bytes, with the same fields.
    let tcp_view = match s.l4() {
        Some((6, at)) => TcpPacket::new_checked(&data[at..s.total_len()]).ok(),
        _ => None,
    };
    assert_eq!(s.is_tcp(), tcp_view.is_some());
    assert_eq!(s.tcp(), tcp_view);
    if let Some(t) = tcp_view {
        assert_eq!(s.tcp_flags(), Some(t.flags()));
        assert_eq!((s.tcp_seq(), s.tcp_ack()), (Some(t.seq()), Some(t.ack())));
        assert_eq!(s.tcp_window(), Some(t.window()));
        assert_eq!(s.tcp_header_len(), t.header_len());
        assert_eq!(s.tcp_payload_len(), Some(t.payload().len()));
        assert_eq!(s.tcp_options(), t.options());
        assert_eq!(s.ports(), Some((t.src_port(), t.dst_port())));
        let h = s.tcp_header().unwrap();
        assert_eq!(
            (h.src_port, h.dst_port, h.seq, h.ack),
            (t.src_port(), t.dst_port(), t.seq(), t.ack())
        );
        assert_eq!(
            (h.header_len, h.flags, h.window, h.checksum),
            (t.header_len(), t.flags(), t.window(), t.checksum())
        );
        // The option walker fails exactly where `TcpOptions::parse` does.
        let walked: Result<Vec<_>, _> = s.tcp_option_iter().collect();
        assert_eq!(walked.is_ok(), TcpOptions::parse(t.options()).is_ok());
        // Rewrites through the mutable view change only what they say.
        let mut b = data.to_vec();
        let mut m = SegmentMut::parse(&mut b).unwrap();
        assert_eq!(m.set_tcp_window(t.window() ^ 0x5a5a), Some(t.window()));
        let n = s.tcp_options().len();
        assert_eq!(m.patch_tcp_options(0, &[1]), n > 0);
        let at = s.l4_offset().unwrap();
        for (i, (x, y)) in data.iter().zip(&b).enumerate() {
            if x != y {
                assert!((at + 14..at + 18).contains(&i) || i == at + 20, "byte {i}");
            }
        }
    } else {
        assert_eq!(
            (s.tcp_flags(), s.tcp_payload_len(), s.tcp_header()),
            (None, None, None)
        );
        assert!(s.tcp_options().is_empty());
    }
}

/// Touches every accessor of every view; the point is that none panics.
fn poke_everything(data: &[u8]) {
    let _ = ka_codec::wire::ip_version(data);
    let p4 = Ipv4Packet::new_unchecked(data);
    let _ = (
        p4.header_len(),
        p4.total_len(),
        p4.frag_offset(),
        p4.payload().len(),
    );
    let _ = (
        p4.options().len(),
        p4.verify_checksum(),
        p4.src_addr(),
        p4.is_fragment(),
    );
    if let Ok(p) = Ipv4Packet::new_checked(data) {
        let r = Ipv4Repr::parse(&p).unwrap();
        assert!(p.header_len() >= 20 && p.total_len() <= data.len());
        assert_eq!(r.payload_len, p.payload().len());
        for o in ipv4::Ipv4Options::new(p.options()) {
            let _ = o.map(|o| o.copied());
        }
        let mut out = [0u8; 40];
        let _ = ipv4::copied_options(p.options(), &mut out);
    }
    let p6 = Ipv6Packet::new_unchecked(data);
    let _ = (
        p6.payload_len(),
        p6.next_header(),
        p6.payload().len(),
        p6.flow_label(),
    );
    if let Ok(l) = ipv6::layout(data) {
        assert!(l.unfragmentable_len <= data.len());
        assert!(l.next_header_field < l.unfragmentable_len.max(7));
        if let Some((_, off)) = l.upper {
            assert!(off <= data.len());
        }
    }
    let _ = FragmentHeader::parse(data);
    let t = TcpPacket::new_unchecked(data);
    let _ = (
        t.header_len(),
        t.options().len(),
        t.payload().len(),
        t.verify_checksum(0),
    );
    if let Ok(t) = TcpPacket::new_checked(data)
        && let Ok(r) = TcpRepr::parse(&t)
    {
        // Whatever parsed must re-emit within the option budget.
        assert!(r.options.encoded_len() <= 40);
        let mut buf = vec![0u8; r.header_len() + t.payload().len()];
        r.emit(&mut buf, t.payload(), 0).unwrap();
    }
    let _ = TcpOptions::parse(data);
    check_segment(data);
    // The one option walker on any bytes: ends, and fails exactly where the
    // IPv4 options iterator does.
    let walked: Vec<_> = OptionIter::new(data).collect();
    assert!(walked.len() <= data.len());
    assert_eq!(
        walked.iter().any(|o| o.is_err()),
        ipv4::Ipv4Options::new(data).any(|o| o.is_err())
    );
}

/// `repr` and `payload` emitted between two fixed IPv4 or (`v6`) IPv6
/// addresses, with the pseudo-header sum its checksum covers. Panics unless
/// `emit` writes exactly the header and the payload.
fn emit_tcp(repr: &TcpRepr, payload: &[u8], v6: bool) -> (Vec<u8>, u32) {
    let len = repr.header_len() + payload.len();
    let pseudo = if v6 {
        pseudo_v6([1; 16], [2; 16], 6, len as u32)
    } else {
        pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, len as u32)
    };
    let mut buf = vec![0u8; len];
    assert_eq!(repr.emit(&mut buf, payload, pseudo).unwrap(), len);
    (buf, pseudo)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn views_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        poke_everything(&data);
    }

    #[test]
    fn views_never_panic_on_ip_like_bytes(
        first in prop_oneof![Just(0x45u8), Just(0x46), Just(0x4f), Just(0x60)],
        rest in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        let mut data = vec![first];
        data.extend(rest);
        poke_everything(&data);
        // Also the bytes after a plausible IPv4/IPv6 header, as a TCP segment.
        if data.len() > 40 {
            poke_everything(&data[20..]);
            poke_everything(&data[40..]);
        }
    }

    /// Plain IPv4 headers (IHL 5, the fixed-offset path) with any fields:
    /// the segment view agrees with the general parse and the views.
    #[test]
    fn segment_fast_path_matches_the_views(
        mut head in proptest::collection::vec(any::<u8>(), 40..100),
        total in 0u16..110,
        tcp in any::<bool>(),
        frag in any::<bool>(),
        data_offset in 0u8..16,
    ) {
        head[0] = 0x45;
        head[2..4].copy_from_slice(&total.to_be_bytes());
        if tcp {
            head[9] = ipv4::PROTO_TCP;
        }
        if !frag {
            head[6] &= 0xE0;
            head[7] = 0;
        }
        head[32] = (data_offset << 4) | (head[32] & 0x0F);
        check_segment(&head);
    }

    /// A flow key and its reverse order the same as their fields.
    #[test]
    fn flow_keys_order_by_fields(a in any::<([u8; 4], [u8; 4], u16, u16)>(), b in any::<([u8; 4], [u8; 4], u16, u16)>()) {
        let ka = FlowKey::v4(a.0, a.1, a.2, a.3, 6);
        let kb = FlowKey::v4(b.0, b.1, b.2, b.3, 6);
        let fields = |k: &FlowKey| (k.src, k.dst, k.sport, k.dport, k.proto);
        prop_assert_eq!(ka.cmp(&kb), fields(&ka).cmp(&fields(&kb)));
        // Also for IPv6 keys, and keys that differ in one byte only.
        let v6 = |a: &([u8; 4], [u8; 4], u16, u16)| FlowKey {
            src: [a.0, a.1, a.0, a.1].concat().try_into().unwrap(),
            dst: [a.1, a.0, a.1, a.0].concat().try_into().unwrap(),
            sport: a.2,
            dport: a.3,
            proto: a.0[0],
        };
        let (xa, xb) = (v6(&a), v6(&b));
        prop_assert_eq!(xa.cmp(&xb), fields(&xa).cmp(&fields(&xb)));
        let mut xc = xa;
        xc.dst[usize::from(a.2 % 16)] ^= 1 << (a.3 % 8);
        prop_assert_eq!(xa.cmp(&xc), fields(&xa).cmp(&fields(&xc)));
        prop_assert_eq!(xa.partial_cmp(&xc), Some(xa.cmp(&xc)));
        prop_assert_eq!(ka.reversed().ipv4_addrs(), Some((a.1, a.0)));
    }

    #[test]
    fn tcp_repr_round_trips(
        ports in (any::<u16>(), any::<u16>()),
        seq in any::<u32>(), ack in any::<u32>(), flags in any::<u8>(),
        window in any::<u16>(), urgent in any::<u16>(),
        options in arb_options(),
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        v6 in any::<bool>(),
    ) {
        let repr = TcpRepr { src_port: ports.0, dst_port: ports.1, seq, ack, flags, window, urgent, options };
        let (buf, pseudo) = emit_tcp(&repr, &payload, v6);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert!(p.verify_checksum(pseudo));
        prop_assert_eq!(p.payload(), &payload[..]);
        let back = TcpRepr::parse(&p).unwrap();
        // SACK blocks that did not fit in 40 option bytes are dropped, in order.
        let mut expect = repr;
        let kept = back.options.sack.len();
        prop_assert!(kept <= repr.options.sack.len());
        expect.options.sack.truncate(kept);
        prop_assert_eq!(back, expect);
        prop_assert!(repr.header_len() <= 60 && repr.header_len().is_multiple_of(4));
    }

    /// `set_window_incremental` (RFC 1624) leaves a checksum that
    /// verifies, equal to a full recomputation, and changes nothing but
    /// the window and checksum fields.
    #[test]
    fn window_edit_keeps_the_checksum_valid(
        seq in any::<u32>(), flags in any::<u8>(), window in any::<u16>(), new_window in any::<u16>(),
        options in arb_options(),
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        v6 in any::<bool>(),
    ) {
        let repr = TcpRepr { src_port: 80, dst_port: 40_000, seq, ack: 1, flags, window, urgent: 0, options };
        let (mut buf, pseudo) = emit_tcp(&repr, &payload, v6);
        let before = buf.clone();
        let mut p = TcpPacket::new_checked(&mut buf[..]).unwrap();
        prop_assert_eq!(p.set_window_incremental(new_window), window);
        prop_assert_eq!(p.window(), new_window);
        prop_assert!(p.verify_checksum(pseudo));
        let incremental = p.checksum();
        p.fill_checksum(pseudo);
        // 0x0000 and 0xffff are the same one's-complement number.
        prop_assert!(incremental == p.checksum() || incremental ^ p.checksum() == 0xffff);
        for (i, (a, b)) in before.iter().zip(&buf).enumerate() {
            if !(14..18).contains(&i) {
                prop_assert_eq!(a, b, "byte {} changed", i);
            }
        }
    }

    #[test]
    fn ipv4_repr_round_trips(
        src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), protocol in any::<u8>(),
        ttl in any::<u8>(), ident in any::<u16>(), df in any::<bool>(), mf in any::<bool>(),
        off in 0usize..8192, dscp in any::<u8>(), payload_len in 0usize..1480,
    ) {
        let r = Ipv4Repr { src, dst, protocol, ttl, ident, dont_frag: df, more_frags: mf,
            frag_offset: off * 8, dscp_ecn: dscp, payload_len };
        let mut buf = vec![0u8; 20 + payload_len];
        prop_assert_eq!(r.emit(&mut buf).unwrap(), 20);
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        prop_assert_eq!(checksum::checksum(p.header()), 0);
    }

    #[test]
    fn fragment_header_round_trips(nh in any::<u8>(), off in 0usize..8192, m in any::<bool>(), id in any::<u32>()) {
        let f = FragmentHeader { next_header: nh, offset: off * 8, more_frags: m, ident: id };
        let mut b = [0u8; 8];
        prop_assert_eq!(f.emit(&mut b).unwrap(), 8);
        prop_assert_eq!(FragmentHeader::parse(&b).unwrap(), f);
    }
}

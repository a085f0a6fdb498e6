//! Property tests for `ka_codec::wire`: no view or parser panics on any
//! bytes, and every `Repr` survives `emit` → `parse` unchanged.

use ka_codec::options::{KaRate, RcpEcho, XcpEcho};
use ka_codec::wire::checksum::{self, pseudo_v4, pseudo_v6};
use ka_codec::wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use ka_codec::wire::ipv6::{self, FragmentHeader, Ipv6Packet};
use ka_codec::wire::tcp::{SackBlocks, TcpOptions, TcpPacket, TcpRepr};
use proptest::prelude::*;

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
}

fn arb_options() -> impl Strategy<Value = TcpOptions> {
    (
        proptest::option::of(any::<u16>()),
        proptest::option::of(0u8..=14),
        any::<bool>(),
        proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
        proptest::option::of((any::<u32>(), any::<u32>())),
        any::<bool>(),
        proptest::option::of((3u8..=185, any::<u8>())),
        (any::<bool>(), proptest::option::of(any::<u32>())),
        (any::<bool>(), proptest::option::of(any::<i32>())),
    )
        .prop_map(|(mss, ws, sp, sack, ts, kp, kr, (rp, re), (xp, xe))| {
            let mut blocks = SackBlocks::new();
            for (l, r) in sack {
                blocks.push(l, r);
            }
            TcpOptions {
                mss,
                window_scale: ws,
                sack_permitted: sp,
                sack: blocks,
                timestamps: ts,
                ka_permitted: kp,
                ka_rate: kr.map(|(code, count)| KaRate { code, count }),
                // A segment is KA or native RCP, never both (the parser
                // drops RCP options next to KA ones).
                rcp_permitted: rp && !kp && kr.is_none(),
                rcp_echo: re
                    .filter(|_| !kp && kr.is_none())
                    .map(|rate_bytes_per_sec| RcpEcho { rate_bytes_per_sec }),
                // ... and XCP options only without KA and RCP ones.
                xcp_permitted: xp && !kp && kr.is_none() && !rp && re.is_none(),
                xcp_echo: xe
                    .filter(|_| !kp && kr.is_none() && !rp && re.is_none())
                    .map(|feedback_bytes| XcpEcho { feedback_bytes }),
            }
        })
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
        let len = repr.header_len() + payload.len();
        let pseudo = if v6 {
            pseudo_v6([1; 16], [2; 16], 6, len as u32)
        } else {
            pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, len as u32)
        };
        let mut buf = vec![0u8; len];
        prop_assert_eq!(repr.emit(&mut buf, &payload, pseudo).unwrap(), len);
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
        let len = repr.header_len() + payload.len();
        let pseudo = if v6 {
            pseudo_v6([1; 16], [2; 16], 6, len as u32)
        } else {
            pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, len as u32)
        };
        let mut buf = vec![0u8; len];
        repr.emit(&mut buf, &payload, pseudo).unwrap();
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

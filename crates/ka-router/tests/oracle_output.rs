//! Everything the router emits is valid to an independent parser,
//! `etherparse`: stamped fragments (IPv4 with options, IPv6 with extension
//! chains, with and without an existing Fragment header) and headers the
//! port rewrote (TTL / hop limit, the native-RCP option). etherparse's own
//! defragmenter (`IpDefragPool`) must rebuild the original payload from our
//! fragments, and the TCP checksum of the rebuilt segment must verify.

mod common;

use std::time::{Duration, Instant};

use common::{Ext, ipv4, ipv6};
use etherparse::defrag::IpDefragPool;
use etherparse::{Ipv4Slice, Ipv6Slice, SlicedPacket, TcpHeader};
use ka_codec::Code;
use ka_codec::wire::checksum::{pseudo_v4, pseudo_v6};
use ka_codec::wire::ipv6::layout;
use ka_codec::wire::tcp::{TcpOptions, TcpRepr};
use ka_router::{
    Port, PortConfig, Signalling, StampConfig, Stamped, stamp_ipv4_with, stamp_ipv6_with,
};
use proptest::prelude::*;

const SRC4: [u8; 4] = [10, 0, 0, 1];
const DST4: [u8; 4] = [10, 0, 0, 2];
const SRC6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const DST6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// A TCP segment with timestamps and a correct checksum for `pseudo`.
fn tcp_segment(data: &[u8], seq: u32, pseudo: impl Fn(u32) -> u32) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq,
        ack: 7,
        flags: 0x18,
        window: 500,
        urgent: 0,
        options: TcpOptions {
            timestamps: Some((1, 2)),
            ..TcpOptions::default()
        },
    };
    let len = repr.header_len() + data.len();
    let mut b = vec![0u8; len];
    repr.emit(&mut b, data, pseudo(len as u32)).unwrap();
    b
}

/// etherparse accepts the IPv4 piece, its header checksum verifies, and
/// its identification is `ident`.
fn valid_v4(p: &[u8]) {
    let s = Ipv4Slice::from_slice(p).unwrap_or_else(|e| panic!("etherparse rejects {e:?}"));
    let h = s.header();
    // Summed over the raw header (`to_header()` would drop the reserved bit).
    let sum = etherparse::checksum::Sum16BitWords::new().add_slice(h.slice());
    assert_eq!(sum.ones_complement(), 0, "header checksum");
    assert_eq!(
        usize::from(h.total_len()),
        p.len(),
        "total length = piece length"
    );
    SlicedPacket::from_ip(p).expect("SlicedPacket accepts the piece");
}

/// Feeds `pieces` to etherparse's defragmenter: the last one completes the
/// datagram; returns (protocol, payload).
fn defrag(pieces: &[Vec<u8>]) -> (u8, Vec<u8>) {
    let mut pool: IpDefragPool = IpDefragPool::new();
    let mut done = None;
    for (i, p) in pieces.iter().enumerate() {
        let s = SlicedPacket::from_ip(p).expect("slices");
        let r = pool
            .process_sliced_packet(&s, (), ())
            .expect("defragmenter accepts");
        if i + 1 < pieces.len() {
            assert!(r.is_none(), "complete before the last piece");
        } else {
            done = r;
        }
    }
    let d = done.expect("the last piece completes the datagram");
    (d.ip_number.0, d.payload)
}

fn tcp_checksum_ok_v4(seg: &[u8]) -> bool {
    let (h, data) = TcpHeader::from_slice(seg).expect("TCP header");
    h.calc_checksum_ipv4_raw(SRC4, DST4, data).unwrap() == h.checksum
}

fn tcp_checksum_ok_v6(seg: &[u8]) -> bool {
    let (h, data) = TcpHeader::from_slice(seg).expect("TCP header");
    h.calc_checksum_ipv6_raw(SRC6, DST6, data).unwrap() == h.checksum
}

/// IPv4 options: copied (security, router alert) and not (record route,
/// RCP), EOL-padded.
fn options() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(vec![]),
        Just(vec![0x94, 4, 0, 0]),
        Just(vec![7, 7, 4, 0, 0, 0, 0, 0]),
        Just(vec![30, 8, 0, 1, 0, 0, 0, 100]),
        Just(vec![
            0x82, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 7, 7, 4, 0, 0, 0, 0, 0
        ]),
    ]
}

fn code() -> impl Strategy<Value = Code> {
    (3u8..=185).prop_map(|w| Code::from_wire(w).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn ipv4_fragments_are_valid_and_defragment(
        data_len in 0usize..1440, opts in options(), wanted in code(), seq in any::<u32>(), id in any::<u16>(),
    ) {
        let data: Vec<u8> = (0..data_len).map(|i| (i as u8).wrapping_mul(13)).collect();
        let seg = tcp_segment(&data, seq, |len| pseudo_v4(SRC4, DST4, 6, len));
        let orig = ipv4(&seg, &opts, false, false, 0, id, 64, 6);
        valid_v4(&orig);
        match stamp_ipv4_with(&StampConfig::default(), orig.clone(), wanted) {
            Stamped::Split(a, b) => {
                valid_v4(&a);
                valid_v4(&b);
                let (proto, payload) = defrag(&[a.clone(), b.clone()]);
                prop_assert_eq!(proto, 6);
                prop_assert_eq!(&payload, &seg, "defragmented payload = the original segment");
                prop_assert!(tcp_checksum_ok_v4(&payload));
                // Out of order too (the trailing piece first).
                prop_assert_eq!(defrag(&[b, a]).1, seg);
            }
            Stamped::Untouched(p, _) => {
                prop_assert_eq!(p, orig);
            }
        }
    }

    #[test]
    fn ipv6_fragments_are_valid_and_defragment(
        data_len in 0usize..1400,
        chain in prop_oneof![
            Just(vec![]),
            Just(vec![Ext::HopByHop(1)]),
            Just(vec![Ext::HopByHop(1), Ext::Routing(2)]),
            Just(vec![Ext::DestOpts(1)]),
            Just(vec![Ext::Routing(1), Ext::DestOpts(2)]),
        ],
        existing in proptest::option::of((any::<u32>(), any::<bool>())),
        wanted in code(), seq in any::<u32>(),
    ) {
        let upstream_more = existing.is_some_and(|(_, m)| m);
        // An upstream leading fragment's fragmentable part is a multiple of 8
        // (RFC 8200 §4.5); pad the data so it is.
        let ext_len: usize = chain.iter().map(|e| match e { Ext::DestOpts(u) => u * 8, _ => 0 }).sum();
        let data_len = if upstream_more { data_len + (8 - (ext_len + 32 + data_len) % 8) % 8 } else { data_len };
        let data: Vec<u8> = (0..data_len).map(|i| (i as u8).wrapping_mul(29)).collect();
        let seg = tcp_segment(&data, seq, |len| pseudo_v6(SRC6, DST6, 6, len));
        let mut exts = chain.clone();
        if let Some((ident, more)) = existing {
            // An atomic (RFC 6946) or leading Fragment header from upstream,
            // after the unfragmentable part (before any destination options).
            let at = exts.iter().position(|e| matches!(e, Ext::DestOpts(_))).unwrap_or(exts.len());
            exts.insert(at, Ext::Fragment { offset: 0, more, ident });
        }
        let orig = ipv6(&exts, 6, &seg, 64);
        Ipv6Slice::from_slice(&orig).expect("etherparse accepts the input");
        let lay = layout(&orig).unwrap();
        let fragmentable = match lay.fragment {
            Some((at, _)) => orig[at + 8..].to_vec(),
            None => orig[lay.unfragmentable_len..].to_vec(),
        };
        match stamp_ipv6_with(&StampConfig::default(), orig.clone(), wanted, 0x4B41_0007) {
            Stamped::Split(a, b) => {
                // etherparse walks a non-first fragment's data as headers when
                // the Fragment header names an extension header (a documented
                // difference, `ka_codec::wire` docs): for those pieces only
                // the fixed and Fragment headers can be checked, and its
                // defragmenter cannot take them.
                let fh = layout(&a).unwrap().fragment.unwrap().1;
                let ext_first = matches!(fh.next_header, 0 | 43 | 44 | 51 | 60);
                for p in [&a, &b] {
                    let leading = layout(p).unwrap().fragment.unwrap().1.offset == 0;
                    let h = etherparse::Ipv6HeaderSlice::from_slice(p).expect("fixed header");
                    prop_assert_eq!(40 + usize::from(h.payload_length()), p.len());
                    let exts = if leading || !ext_first {
                        let s = Ipv6Slice::from_slice(p).unwrap_or_else(|e| panic!("etherparse rejects {e:?}"));
                        prop_assert!(s.is_payload_fragmented());
                        s.extensions().clone()
                    } else {
                        etherparse::Ipv6ExtensionsSlice::from_slice_lax(h.next_header(), &p[40..]).0
                    };
                    let f = exts.into_iter().find_map(|x| match x {
                        etherparse::Ipv6ExtensionSlice::Fragment(f) => Some(f.to_header()),
                        _ => None,
                    }).expect("etherparse sees the Fragment header");
                    prop_assert_eq!(f.identification, fh.ident);
                    prop_assert_eq!(f.next_header.0, fh.next_header);
                    prop_assert_eq!(f.more_fragments, leading || upstream_more);
                }
                prop_assert_eq!(layout(&b).unwrap().fragment.unwrap().1.offset, fragmentable.len() - (b.len() - layout(&b).unwrap().fragment.unwrap().0 - 8));
                if ext_first || upstream_more {
                    // (A re-split upstream leading fragment still misses its
                    // upstream rest: nothing to complete.)
                    return Ok(());
                }
                let (proto, payload) = defrag(&[a.clone(), b.clone()]);
                // The defragmenter returns what follows the Fragment header.
                prop_assert_eq!(&payload, &fragmentable);
                prop_assert_eq!(proto, 6);
                prop_assert!(tcp_checksum_ok_v6(&payload));
                prop_assert_eq!(defrag(&[b, a]).1, fragmentable);
            }
            Stamped::Untouched(p, _) => {
                prop_assert_eq!(p, orig);
            }
        }
    }
}

/// Drives a port until it is idle; everything it emitted.
fn drain(port: &mut Port, mut now: Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(t) = port.poll_timeout() {
        now = now.max(t);
        while let Some(p) = port.poll_transmit(now) {
            out.push(p);
        }
        port.handle_timeout(now);
    }
    out
}

/// The whole port path (TTL decrement and checksum update at ingress, KA
/// stamping on dequeue, IPv6 Fragment-header insertion with the port's own
/// identifications): every piece that leaves is valid to etherparse, and
/// its defragmenter rebuilds each datagram.
#[test]
fn port_output_is_valid_and_defragments() {
    let t0 = Instant::now();
    let mut port = Port::new(PortConfig::new(100_000_000), t0);
    let mut sent = Vec::new();
    for i in 0..40u32 {
        let data: Vec<u8> = (0..1000 + i as usize * 7)
            .map(|j| (j as u8) ^ (i as u8))
            .collect();
        let pkt = if i % 2 == 0 {
            let seg = tcp_segment(&data, i * 5000, |len| pseudo_v4(SRC4, DST4, 6, len));
            sent.push((4, seg.clone()));
            ipv4(&seg, &[0x94, 4, 0, 0], false, false, 0, i as u16, 64, 6)
        } else {
            let seg = tcp_segment(&data, i * 5000, |len| pseudo_v6(SRC6, DST6, 6, len));
            sent.push((6, seg.clone()));
            ipv6(&[Ext::HopByHop(1)], 6, &seg, 64)
        };
        port.push(t0 + Duration::from_micros(u64::from(i) * 10), pkt);
    }
    let out = drain(&mut port, t0);
    assert!(
        port.snapshot().counters.fragments_made >= 30,
        "the port stamped"
    );
    let mut pool: IpDefragPool = IpDefragPool::new();
    let mut rebuilt = Vec::new();
    for p in &out {
        let s = SlicedPacket::from_ip(p).unwrap_or_else(|e| panic!("etherparse rejects {e:?}"));
        if p[0] >> 4 == 4 {
            valid_v4(p);
            assert_eq!(p[8], 63, "TTL decremented once");
        } else {
            assert_eq!(p[7], 63, "hop limit decremented once");
        }
        match pool
            .process_sliced_packet(&s, (), ())
            .expect("defragmenter accepts")
        {
            Some(d) => rebuilt.push(d.payload),
            None if !s.is_ip_payload_fragmented() => {
                rebuilt.push(s.ip_payload().expect("IP payload").payload.to_vec())
            }
            None => {}
        }
    }
    assert_eq!(rebuilt.len(), sent.len(), "every datagram rebuilt");
    for ((v, seg), got) in sent.iter().zip(&rebuilt) {
        assert_eq!(got, seg);
        if *v == 4 {
            assert!(tcp_checksum_ok_v4(got));
        } else {
            assert!(tcp_checksum_ok_v6(got));
        }
    }
}

/// A native-RCP port rewrites the IPv4 option's rate: the header checksum
/// (checked by etherparse) still verifies.
#[test]
fn rewritten_rcp_option_keeps_a_valid_header() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(10_000_000);
    cfg.signalling = Signalling::NATIVE_RCP;
    let mut port = Port::new(cfg, t0);
    let seg = tcp_segment(&[7u8; 900], 1, |len| pseudo_v4(SRC4, DST4, 6, len));
    // RCP option: rate u32::MAX-ish bytes/s, rtt 100 ms — the port lowers it.
    let opt = [30, 8, 0xff, 0xff, 0xff, 0x00, 0, 100];
    port.push(t0, ipv4(&seg, &opt, true, false, 0, 9, 64, 6));
    let out = drain(&mut port, t0);
    assert_eq!(out.len(), 1);
    valid_v4(&out[0]);
    let h = Ipv4Slice::from_slice(&out[0]).unwrap();
    let o = h.header().options();
    assert_eq!(o[0], 30);
    assert!(
        u32::from_be_bytes([o[2], o[3], o[4], o[5]]) < 0xffff_ff00,
        "rate lowered"
    );
    assert_eq!(port.snapshot().counters.rcp_options_lowered, 1);
}

//! Differential oracle: every packet is parsed by `ka_codec::wire` and by
//! `etherparse`; every field both expose must agree, and every packet one
//! rejects the other must reject or explain with a documented difference
//! (`ka_codec::wire` docs, "Differences from etherparse"; the `Quirk`s in
//! `oracle/diff.rs`).
//!
//! Inputs: generated IPv4 packets with options and fragment fields, IPv6
//! packets with extension-header chains and Fragment headers, TCP segments
//! with every option ka emits (ka's own `TcpRepr::emit`), each also
//! mutated (truncated, length fields bent, bytes flipped); captured
//! packets from Linux; and arbitrary bytes.

mod common;
#[path = "oracle/diff.rs"]
mod diff;

use std::collections::BTreeSet;

use common::arb_options;
use diff::{
    Quirk, check_ipv4, check_ipv6, check_option_iter, check_segment, check_tcp, check_tcp_options,
};
use ka_codec::wire::checksum::{self, pseudo_v4};
use ka_codec::wire::ipv6::FragmentHeader;
use ka_codec::wire::tcp::TcpRepr;
use proptest::prelude::*;

/// One IPv4 option as bytes: NOP, End, Record Route (7), Timestamp (68),
/// Security (130, copied), native RCP (30, DESIGN §7.1), XCP (94, §7.2),
/// Router Alert (148, copied).
fn arb_ipv4_option() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(vec![1u8]),
        any::<[u8; 8]>().prop_map(|d| {
            let mut v = vec![7, 11, 4];
            v.extend(d);
            v
        }),
        any::<[u8; 8]>().prop_map(|d| {
            let mut v = vec![68, 12, 5, 0];
            v.extend(d);
            v
        }),
        any::<[u8; 9]>().prop_map(|d| {
            let mut v = vec![130, 11];
            v.extend(d);
            v
        }),
        any::<[u8; 6]>().prop_map(|d| {
            let mut v = vec![30, 8];
            v.extend(d);
            v
        }),
        any::<[u8; 12]>().prop_map(|d| {
            let mut v = vec![94, 14];
            v.extend(d);
            v.extend([1, 1]);
            v
        }),
        Just(vec![148, 4, 0, 0]),
    ]
}

/// An IPv4 packet: header with options (padded with End bytes to a
/// multiple of 4, at most 40), fragment fields, payload; checksum right.
#[allow(clippy::type_complexity)]
fn arb_ipv4() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(arb_ipv4_option(), 0..5),
        (any::<u16>(), any::<bool>(), any::<bool>(), 0u16..8192),
        (
            any::<u8>(),
            prop_oneof![Just(6u8), Just(17), Just(1), Just(51), any::<u8>()],
        ),
        (any::<[u8; 4]>(), any::<[u8; 4]>(), any::<u8>()),
        proptest::collection::vec(any::<u8>(), 0..120),
    )
        .prop_map(
            |(opts, (id, df, mf, off), (ttl, proto), (src, dst, tos), payload)| {
                let mut o: Vec<u8> = Vec::new();
                for x in opts {
                    if o.len() + x.len() <= 40 {
                        o.extend(x);
                    }
                }
                while !o.len().is_multiple_of(4) {
                    o.push(0);
                }
                let hl = 20 + o.len();
                let total = hl + payload.len();
                let mut p = vec![0u8; total];
                p[0] = 0x40 | (hl / 4) as u8;
                p[1] = tos;
                p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                p[4..6].copy_from_slice(&id.to_be_bytes());
                let flags = (u16::from(df) << 14) | (u16::from(mf) << 13) | off;
                p[6..8].copy_from_slice(&flags.to_be_bytes());
                p[8] = ttl;
                p[9] = proto;
                p[12..16].copy_from_slice(&src);
                p[16..20].copy_from_slice(&dst);
                p[20..hl].copy_from_slice(&o);
                let c = checksum::checksum(&p[..hl]);
                p[10..12].copy_from_slice(&c.to_be_bytes());
                p[hl..].copy_from_slice(&payload);
                p
            },
        )
}

/// One IPv6 extension header: (next-header value that names it, bytes
/// with the next-header byte to be filled in).
fn arb_ext() -> impl Strategy<Value = (u8, Vec<u8>)> {
    prop_oneof![
        // Hop-by-Hop, Destination Options, Routing: 8·(n+1) bytes.
        (prop_oneof![Just(0u8), Just(60), Just(43)], 0u8..3).prop_map(|(k, n)| {
            let mut v = vec![0u8; 8 * (usize::from(n) + 1)];
            v[1] = n;
            v[2] = 1; // PadN-ish filler
            (k, v)
        }),
        // Fragment: mostly first fragments (offset 0), some later ones.
        (
            prop_oneof![3 => Just(0u16), 1 => 1u16..8192],
            any::<bool>(),
            any::<u32>()
        )
            .prop_map(|(off, m, id)| {
                let mut v = vec![0u8; 8];
                FragmentHeader {
                    next_header: 0,
                    offset: usize::from(off) * 8,
                    more_frags: m,
                    ident: id,
                }
                .emit(&mut v)
                .unwrap();
                (44u8, v)
            }),
        // Authentication Header: 4·(n+2) bytes.
        (0u8..4).prop_map(|n| {
            let mut v = vec![0u8; 4 * (usize::from(n) + 2)];
            v[1] = n;
            (51u8, v)
        }),
    ]
}

/// An IPv6 packet with an extension-header chain and an upper layer.
fn arb_ipv6() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(arb_ext(), 0..6),
        prop_oneof![Just(6u8), Just(17), Just(59), Just(58)],
        (any::<u8>(), 0u32..(1 << 20), any::<u8>()),
        (any::<[u8; 16]>(), any::<[u8; 16]>()),
        proptest::collection::vec(any::<u8>(), 0..80),
    )
        .prop_map(|(exts, upper, (tc, flow, hops), (src, dst), payload)| {
            let mut body = Vec::new();
            let first = exts.first().map_or(upper, |e| e.0);
            for (i, (_, bytes)) in exts.iter().enumerate() {
                let next = exts.get(i + 1).map_or(upper, |e| e.0);
                let start = body.len();
                body.extend(bytes);
                body[start] = next;
            }
            body.extend(&payload);
            let mut p = vec![0u8; 40];
            let vcf = (6u32 << 28) | (u32::from(tc) << 20) | flow;
            p[0..4].copy_from_slice(&vcf.to_be_bytes());
            p[4..6].copy_from_slice(&(body.len() as u16).to_be_bytes());
            p[6] = first;
            p[7] = hops;
            p[8..24].copy_from_slice(&src);
            p[24..40].copy_from_slice(&dst);
            p.extend(body);
            p
        })
}

/// A TCP segment emitted by ka.
fn arb_tcp() -> impl Strategy<Value = Vec<u8>> {
    (
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()),
        (any::<u8>(), any::<u16>(), any::<u16>()),
        arb_options(),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(
            |((sp, dp, seq, ack), (flags, window, urgent), options, payload)| {
                let repr = TcpRepr {
                    src_port: sp,
                    dst_port: dp,
                    seq,
                    ack,
                    flags,
                    window,
                    urgent,
                    options,
                };
                let len = repr.header_len() + payload.len();
                let mut buf = vec![0u8; len];
                let pseudo = pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, len as u32);
                repr.emit(&mut buf, &payload, pseudo).unwrap();
                buf
            },
        )
}

/// How a valid packet is bent before both parsers see it.
#[derive(Debug, Clone)]
enum Mutation {
    None,
    Truncate(usize),
    Extend(Vec<u8>),
    SetByte(usize, u8),
    SetBe16(usize, u16),
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => Just(Mutation::None),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 1..16).prop_map(Mutation::Extend),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::SetByte(i, b)),
        // Length fields: IPv4 total length (2), IPv6 payload length (4).
        1 => (prop_oneof![Just(2usize), Just(4)], any::<u16>()).prop_map(|(i, v)| Mutation::SetBe16(i, v)),
    ]
}

fn mutate(mut p: Vec<u8>, m: &Mutation) -> Vec<u8> {
    match m {
        Mutation::None => {}
        Mutation::Truncate(n) => p.truncate(n % (p.len() + 1)),
        Mutation::Extend(x) => p.extend(x),
        Mutation::SetByte(i, b) => {
            if !p.is_empty() {
                let i = i % p.len();
                p[i] = *b;
            }
        }
        Mutation::SetBe16(i, v) => {
            if p.len() >= i + 2 {
                p[*i..i + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
    }
    p
}

/// The reserved flag bit is covered by the header checksum (etherparse's
/// `Ipv4Header` has no field for it, so the oracle sums the raw bytes).
#[test]
fn reserved_flag_flip_breaks_the_checksum_for_both() {
    let mut p = vec![0u8; 28];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&28u16.to_be_bytes());
    p[6] = 0x3e;
    p[9] = 6;
    let c = checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(check_ipv4(&p), None);
    p[6] |= 0x80;
    assert_eq!(check_ipv4(&p), None);
    assert!(
        !ka_codec::wire::ipv4::Ipv4Packet::new_checked(&p[..])
            .unwrap()
            .verify_checksum()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn ipv4_agrees(p in arb_ipv4(), m in arb_mutation()) {
        let p = mutate(p, &m);
        check_ipv4(&p);
        check_segment(&p);
        // The IPv4 payload as a TCP segment (headers both parse, or neither).
        if p.len() > 20 {
            check_tcp(&p[20..]);
        }
    }

    #[test]
    fn ipv4_unmutated_is_accepted_by_both(p in arb_ipv4()) {
        // Generated packets are valid: both accept (the AH case aside).
        let q = check_ipv4(&p);
        prop_assert!(q.is_none() || q == Some(Quirk::Ipv4Ah));
        prop_assert!(ka_codec::wire::ipv4::Ipv4Packet::new_checked(&p[..]).unwrap().verify_checksum());
    }

    #[test]
    fn ipv6_agrees(p in arb_ipv6(), m in arb_mutation()) {
        let p = mutate(p, &m);
        check_ipv6(&p);
        check_segment(&p);
    }

    /// Whole packets of ka's own TCP segments behind an IPv4 or IPv6
    /// header: the segment view against etherparse, TCP fields included.
    #[test]
    fn segment_view_agrees(s in arb_tcp(), v6 in any::<bool>(), mf in any::<bool>(), m in arb_mutation()) {
        let p = if v6 {
            let mut p = vec![0u8; 40];
            p[0] = 0x60;
            p[4..6].copy_from_slice(&(s.len() as u16).to_be_bytes());
            p[6] = 6;
            p[8..24].copy_from_slice(&[1; 16]);
            p[24..40].copy_from_slice(&[2; 16]);
            p.extend(&s);
            p
        } else {
            let total = 20 + s.len();
            let mut p = vec![0u8; 20];
            p[0] = 0x45;
            p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            p[6] = if mf { 0x20 } else { 0 };
            p[8] = 64;
            p[9] = 6;
            p[12..16].copy_from_slice(&[10, 0, 0, 1]);
            p[16..20].copy_from_slice(&[10, 0, 0, 2]);
            let c = checksum::checksum(&p[..20]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            p.extend(&s);
            p
        };
        check_segment(&mutate(p, &m));
    }

    #[test]
    fn tcp_agrees(s in arb_tcp(), m in arb_mutation()) {
        check_tcp(&mutate(s, &m));
    }

    #[test]
    fn tcp_options_agree_on_any_bytes(o in proptest::collection::vec(any::<u8>(), 0..40)) {
        check_tcp_options(&o);
        check_option_iter(&o);
    }

    #[test]
    fn tcp_options_agree_on_option_like_bytes(
        parts in proptest::collection::vec(
            (prop_oneof![Just(0u8), Just(1), Just(2), Just(3), Just(4), Just(5), Just(8), Just(253), any::<u8>()],
             prop_oneof![Just(2u8), Just(3), Just(4), Just(6), Just(8), Just(10), Just(18), any::<u8>()],
             any::<[u8; 32]>()),
            0..6),
    ) {
        let mut o = Vec::new();
        for (k, l, d) in parts {
            o.push(k);
            if k > 1 {
                o.push(l);
                o.extend(&d[..usize::from(l.saturating_sub(2)).min(32)]);
            }
        }
        o.truncate(40);
        check_tcp_options(&o);
        check_option_iter(&o);
    }

    #[test]
    fn any_bytes_agree(first in prop_oneof![Just(0x45u8), Just(0x46), Just(0x4f), Just(0x60), any::<u8>()],
                       rest in proptest::collection::vec(any::<u8>(), 0..160)) {
        let mut b = vec![first];
        b.extend(rest);
        check_ipv4(&b);
        check_ipv6(&b);
        check_tcp(&b);
        check_segment(&b);
    }
}

/// Each documented difference really occurs (otherwise the list is stale
/// or the oracle cannot see it): hand-made packets for each.
#[test]
fn every_documented_difference_is_observed() {
    let mut seen = BTreeSet::new();
    // IPv4 with AH whose length runs past the packet: etherparse rejects.
    let mut p = vec![0u8; 24];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&24u16.to_be_bytes());
    p[9] = 51;
    p[21] = 4;
    seen.extend(check_ipv4(&p));
    // IPv6 builder: ext chain from (type, bytes) pairs.
    let v6 = |chain: &[(u8, Vec<u8>)], upper: u8, payload_len: Option<u16>| {
        let mut body = Vec::new();
        for (i, (_, b)) in chain.iter().enumerate() {
            let s = body.len();
            body.extend(b);
            body[s] = chain.get(i + 1).map_or(upper, |c| c.0);
        }
        body.extend([0u8; 20]);
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        let len = payload_len.unwrap_or(body.len() as u16);
        p[4..6].copy_from_slice(&len.to_be_bytes());
        p[6] = chain.first().map_or(upper, |c| c.0);
        p.extend(body);
        p
    };
    let ext = |k: u8| (k, vec![0u8; 8]);
    let frag = |off: usize| {
        let mut v = vec![0u8; 8];
        FragmentHeader {
            next_header: 0,
            offset: off,
            more_frags: true,
            ident: 1,
        }
        .emit(&mut v)
        .unwrap();
        (44u8, v)
    };
    seen.extend(check_ipv6(&v6(&[], 6, Some(0))));
    seen.extend(check_ipv6(&v6(&[ext(60), ext(0)], 6, None)));
    seen.extend(check_ipv6(&v6(&[frag(8), ext(60)], 6, None)));
    seen.extend(check_ipv6(&v6(&[frag(0), frag(0)], 6, None)));
    seen.extend(check_ipv6(&v6(&vec![ext(60); 9], 6, None)));
    seen.extend(check_ipv6(&v6(&[ext(51)], 6, None)));
    // TCP options: KA-Permitted (kind 253) and an MSS of length 6.
    seen.extend(check_tcp_options(&[2, 4, 5, 0xb4, 253, 4, 0x4b, 0x41]));
    seen.extend(check_tcp_options(&[2, 6, 5, 0xb4, 0, 0]));
    let all = [
        Quirk::Ipv4Ah,
        Quirk::Ipv6Jumbo,
        Quirk::HopByHopNotFirst,
        Quirk::NonFirstFragment,
        Quirk::TwoFragmentHeaders,
        Quirk::TooManyExtHeaders,
        Quirk::AhZeroLen,
        Quirk::TcpUnknownOption,
        Quirk::TcpOddLength,
    ];
    for q in all {
        assert!(seen.contains(&q), "{q:?} not observed; seen {seen:?}");
    }
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Packets as Linux and ka's testbed put them on the wire: both parsers
/// accept them and agree on everything.
#[test]
fn captured_packets_agree() {
    // Linux SYN (10.77.0.1 → 10.77.0.2:5001): MSS 1460, SACK-Permitted,
    // Timestamps, NOP, window scale 7; DF set.
    let syn = unhex(
        "4500003c 1c46 4000 4006 0000 0a4d0001 0a4d0002
         a2f6 1389 5e3a7c01 00000000 a002 faf0 0000 0000
         020405b4 0402080a 0019b2f4 00000000 01030307",
    );
    // A KA leading fragment as the router stamps it (MF, L = 496) carrying
    // the start of a TCP data segment with Timestamps.
    let mut lead = unhex(
        "45000204 1c47 2000 3f06 0000 0a4d0001 0a4d0002
         a2f6 1389 5e3a7c02 8a9b0c0d 8010 01f6 0000 0000
         0101080a 0019b2f8 1a2b3c4d",
    );
    lead.resize(20 + 496, 0x55);
    // Its trailing piece (offset 496, MF clear).
    let mut trail = unhex("450003c4 1c47 003e 3f06 0000 0a4d0001 0a4d0002");
    trail.resize(0x3c4, 0x55);
    // An ACK from a KA receiver with KA-Rate (code 62, count 9).
    let ack = unhex(
        "45000038 0001 0000 4006 0000 0a4d0002 0a4d0001
         1389 a2f6 8a9b0c0d 5e3a7e00 b010 01f6 0000 0000
         0101080a 1a2b3c4e 0019b2f8 0101fd06 4b413e09",
    );
    for mut p in [syn, lead, trail, ack] {
        let hl = usize::from(p[0] & 15) * 4;
        let c = checksum::checksum(&p[..hl]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(check_ipv4(&p), None);
        let h = etherparse::Ipv4HeaderSlice::from_slice(&p).unwrap();
        if h.fragments_offset().value() == 0 {
            let q = check_tcp(&p[hl..]);
            // The KA-Rate echo is the one option etherparse cannot name.
            assert!(q.is_none() || q == Some(Quirk::TcpUnknownOption), "{q:?}");
        }
    }
}

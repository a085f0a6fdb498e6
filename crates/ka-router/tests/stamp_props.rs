//! Stamping properties (DESIGN §3.4) over random IPv4 and IPv6 packets, and
//! exact byte vectors for a hand-made 1500-byte IPv4 TCP packet.

mod common;

use common::{Ext, ipv4, ipv6, reassemble_v4, reassemble_v6, v4_checksum_ok};
use ka_codec::Code;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::ipv6::{FragmentHeader, layout};
use ka_router::{
    Skip, StampConfig, Stamped, stamp_ipv4, stamp_ipv4_with, stamp_ipv6, stamp_ipv6_with,
};
use proptest::prelude::*;

/// The leading payload the rules demand, computed independently of the
/// crate: a packet that is already a leading fragment is only shrunk to
/// `wanted`; a whole packet carries `wanted` if it fits, else saturates at
/// the largest code below its payload if the payload is at least
/// `sat_min`, else stays untouched.
fn expected_len(
    payload: usize,
    already_leading: bool,
    wanted: Code,
    sat_min: usize,
) -> Option<usize> {
    let w = wanted.len();
    if w < payload {
        return Some(w);
    }
    if already_leading || payload < sat_min {
        return None;
    }
    let top = payload.checked_sub(1)? / 8 * 8;
    (top >= 24).then_some(top)
}

/// The default configuration, or the literal "always saturate" one.
fn stamp_config() -> impl Strategy<Value = StampConfig> {
    prop_oneof![
        Just(StampConfig::default()),
        Just(StampConfig {
            saturate_min_payload: 0,
            ..StampConfig::default()
        }),
    ]
}

/// One IPv4 option (type, whole bytes).
fn option() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(vec![1u8]), // NOP
        // Copy-flagged: LSRR (0x83), security (0x82), router alert (0x94).
        (3usize..=11).prop_map(|n| {
            let mut v = vec![0x83, n as u8, 4];
            v.extend((3..n).map(|i| i as u8));
            v
        }),
        Just(vec![0x82, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        Just(vec![0x94, 4, 0, 0]),
        // Not copied: record route (7), timestamp (0x44), RCP (30).
        (3usize..=15).prop_map(|n| {
            let mut v = vec![7, n as u8, 4];
            v.extend((3..n).map(|i| 0xF0 | i as u8));
            v
        }),
        Just(vec![0x44, 8, 5, 0, 1, 2, 3, 4]),
        Just(vec![30, 8, 0, 1, 0, 0, 0, 100]),
    ]
}

/// A well-formed options area: options that fit in 40 bytes, EOL-padded.
fn options() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(option(), 0..6).prop_map(|opts| {
        let mut area = Vec::new();
        for o in opts {
            if area.len() + o.len() <= 40 {
                area.extend(o);
            }
        }
        while area.len() % 4 != 0 {
            area.push(0);
        }
        area
    })
}

fn code() -> impl Strategy<Value = Code> {
    (3u8..=185).prop_map(|w| Code::from_wire(w).unwrap())
}

fn payload_len() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..=64, 0usize..=1480, 1400usize..=1480, 0usize..=9000]
}

#[derive(Debug, Clone)]
struct V4 {
    payload: Vec<u8>,
    options: Vec<u8>,
    df: bool,
    mf: bool,
    offset: usize,
    ident: u16,
}

fn v4_case() -> impl Strategy<Value = V4> {
    (
        payload_len(),
        options(),
        prop::bool::weighted(0.2),
        any::<bool>(),
        prop_oneof![3 => Just(0usize), 1 => (1usize..7000).prop_map(|o| o * 8)],
        any::<u16>(),
        any::<u8>(),
    )
        .prop_map(|(n, options, df, mf, offset, ident, seed)| V4 {
            payload: (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect(),
            options,
            df,
            mf,
            offset,
            ident,
        })
}

fn header_of(p: &[u8]) -> Ipv4Packet<&[u8]> {
    Ipv4Packet::new_checked(p).expect("valid IPv4")
}

/// Checks everything about one IPv4 stamping; returns the pieces.
fn check_v4(sc: &StampConfig, orig: &[u8], wanted: Code) -> Vec<Vec<u8>> {
    let h = header_of(orig);
    let (df, mf, off) = (h.dont_frag(), h.more_frags(), h.frag_offset());
    let payload = h.payload().len();
    let out = stamp_ipv4_with(sc, orig.to_vec(), wanted);
    let sat = sc.saturate_min_payload;
    let expect_skip = if df {
        Some(Skip::DontFragment)
    } else if off != 0 {
        Some(Skip::NotLeading)
    } else if expected_len(payload, mf, wanted, sat).is_none() {
        Some(Skip::NoRoom)
    } else {
        None
    };
    match (out, expect_skip) {
        (Stamped::Untouched(p, why), Some(skip)) => {
            assert_eq!(why, skip);
            assert_eq!(p, orig, "untouched must be byte-identical");
            vec![p]
        }
        (Stamped::Split(a, b), None) => {
            let l = expected_len(payload, mf, wanted, sat).unwrap();
            assert!(v4_checksum_ok(&a) && v4_checksum_ok(&b), "checksums");
            let (ha, hb) = (header_of(&a), header_of(&b));
            assert_eq!(ha.payload().len(), l, "leading payload = code");
            assert_eq!(a.len(), ha.total_len());
            assert_eq!(b.len(), hb.total_len());
            assert!(ha.more_frags() && !ha.dont_frag() && ha.frag_offset() == 0);
            assert_eq!(hb.more_frags(), mf);
            assert_eq!(hb.frag_offset(), l);
            assert_eq!(ha.ident(), h.ident());
            assert_eq!(hb.ident(), h.ident());
            // The leading fragment keeps every option; the rest only the
            // copy-flagged ones.
            assert_eq!(ha.options(), h.options());
            let mut copied = [0u8; 40];
            let n = ka_codec::wire::ipv4::copied_options(h.options(), &mut copied).unwrap();
            assert_eq!(hb.options(), &copied[..n]);
            // Everything but length/flags/checksum is the same in both.
            for hx in [&ha, &hb] {
                assert_eq!(hx.ttl(), h.ttl());
                assert_eq!(hx.protocol(), h.protocol());
                assert_eq!(hx.dscp_ecn(), h.dscp_ecn());
                assert_eq!(hx.src_addr(), h.src_addr());
                assert_eq!(hx.dst_addr(), h.dst_addr());
            }
            assert_eq!(reassemble_v4(&[a.clone(), b.clone()]), orig);
            vec![a, b]
        }
        (out, want) => panic!("got {out:?}, expected skip {want:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn ipv4_stamping(case in v4_case(), wanted in code(), wanted2 in code(), sc in stamp_config()) {
        let orig = ipv4(&case.payload, &case.options, case.df, case.mf, case.offset, case.ident, 64, 6);
        let pieces = check_v4(&sc, &orig, wanted);
        prop_assert!(pieces.len() <= 2);
        if let [a, b] = &pieces[..] {
            let carried = header_of(a).payload().len();
            // A second router never touches the rest …
            prop_assert_eq!(stamp_ipv4_with(&sc, b.clone(), wanted2), Stamped::Untouched(b.clone(), Skip::NotLeading));
            // … leaves the leading piece alone unless its rate is lower …
            let again = check_v4(&sc, a, wanted2);
            if wanted2.len() >= carried {
                prop_assert_eq!(&again, &vec![a.clone()]);
            } else {
                // … in which case it re-splits the leading piece only.
                prop_assert_eq!(again.len(), 2);
                prop_assert_eq!(header_of(&again[0]).payload().len(), wanted2.len());
                let all = vec![again[0].clone(), again[1].clone(), b.clone()];
                prop_assert_eq!(reassemble_v4(&all), orig.clone());
            }
        }
    }
}

#[derive(Debug, Clone)]
struct V6 {
    exts: Vec<Ext>,
    upper: u8,
    payload: Vec<u8>,
}

fn v6_case() -> impl Strategy<Value = V6> {
    (
        prop::option::of(1usize..=3),
        prop::option::of(1usize..=2),
        prop::option::of(1usize..=3),
        prop::option::of((
            prop_oneof![3 => Just(0usize), 1 => (1usize..4000).prop_map(|o| o * 8)],
            any::<bool>(),
            any::<u32>(),
        )),
        prop::option::of(1usize..=2),
        prop_oneof![Just(6u8), Just(17u8), Just(59u8)],
        prop_oneof![payload_len(), 540usize..=580],
    )
        .prop_map(|(hbh, do1, rt, frag, do2, upper, n)| {
            let mut exts = Vec::new();
            if let Some(u) = hbh {
                exts.push(Ext::HopByHop(u));
            }
            if let Some(u) = do1 {
                exts.push(Ext::DestOpts(u));
            }
            if let Some(u) = rt {
                exts.push(Ext::Routing(u));
            }
            if let Some((offset, more, ident)) = frag {
                exts.push(Ext::Fragment {
                    offset,
                    more,
                    ident,
                });
            }
            if let Some(u) = do2 {
                exts.push(Ext::DestOpts(u));
            }
            V6 {
                exts,
                upper,
                payload: (0..n).map(|i| (i as u8).wrapping_mul(13)).collect(),
            }
        })
}

/// Bytes of extension headers in the fragmentable part (after a Fragment
/// header, or after the unfragmentable part).
fn fragmentable_chain_len(exts: &[Ext]) -> usize {
    let size = |e: &Ext| match e {
        Ext::HopByHop(n) | Ext::DestOpts(n) | Ext::Routing(n) => n * 8,
        Ext::Fragment { .. } => 8,
    };
    let start = if let Some(i) = exts.iter().position(|e| matches!(e, Ext::Fragment { .. })) {
        i + 1
    } else if let Some(i) = exts.iter().position(|e| matches!(e, Ext::Routing(_))) {
        i + 1
    } else {
        exts.iter()
            .position(|e| matches!(e, Ext::HopByHop(_)))
            .map_or(0, |i| i + 1)
    };
    exts[start..].iter().map(size).sum()
}

/// Expected unfragmentable length of a generated packet (RFC 8200 §4.5):
/// the fixed header, Hop-by-Hop, and with a Routing header everything up to
/// and including it.
fn unfragmentable_len(exts: &[Ext]) -> usize {
    let mut u = 40;
    let mut acc = 40;
    for e in exts {
        match e {
            Ext::HopByHop(n) => {
                acc += n * 8;
                u = acc;
            }
            Ext::Routing(n) => {
                acc += n * 8;
                u = acc;
            }
            Ext::DestOpts(n) => acc += n * 8,
            Ext::Fragment { .. } => return acc,
        }
    }
    u
}

fn check_v6(
    sc: &StampConfig,
    orig: &[u8],
    wanted: Code,
    ident: u32,
    had_frag: Option<(usize, bool)>,
    u: usize,
    chain: usize,
) -> Vec<Vec<u8>> {
    let total = orig.len();
    let sat = sc.saturate_min_payload;
    let out = stamp_ipv6_with(sc, orig.to_vec(), wanted, ident);
    let (data_start, leading) = match had_frag {
        Some((_, more)) => (u + 8, more),
        None => (u, false),
    };
    let expect_skip = if (600..=611).contains(&total) && had_frag.is_none() {
        Some(Skip::Indicator)
    } else if matches!(had_frag, Some((off, _)) if off != 0) {
        Some(Skip::NotLeading)
    } else if let Some(l) = expected_len(total - data_start, leading, wanted, sat) {
        // RFC 7112: the leading fragment holds the extension headers after
        // the Fragment header and 24 bytes of the upper-layer header.
        (l < chain + 24).then_some(Skip::HeaderChain)
    } else {
        Some(Skip::NoRoom)
    };
    match (out, expect_skip) {
        (Stamped::Untouched(p, why), Some(skip)) => {
            assert_eq!(why, skip);
            assert_eq!(p, orig);
            vec![p]
        }
        (Stamped::Split(a, b), None) => {
            let l = expected_len(total - data_start, leading, wanted, sat).unwrap();
            let (la, lb) = (layout(&a).unwrap(), layout(&b).unwrap());
            let (at_a, fa) = la.fragment.expect("leading piece has a Fragment header");
            let (at_b, fb) = lb.fragment.expect("rest has a Fragment header");
            assert_eq!(
                (at_a, at_b),
                (u, u),
                "Fragment header after the unfragmentable part"
            );
            // Fragmentable part of the leading piece is exactly L bytes.
            assert_eq!(a.len() - (u + 8), l);
            assert!(fa.more_frags);
            assert_eq!(fa.offset, 0);
            assert_eq!(fb.offset, l);
            assert_eq!(fb.more_frags, had_frag.is_some_and(|(_, m)| m));
            match had_frag {
                Some(_) => {
                    let orig_fh = FragmentHeader::parse(&orig[u..u + 8]).unwrap();
                    assert_eq!(fa.ident, orig_fh.ident);
                    assert_eq!(fa.next_header, orig_fh.next_header);
                }
                None => {
                    assert_eq!((fa.ident, fb.ident), (ident, ident));
                    assert_eq!(a.len(), 40 + u16::from_be_bytes([a[4], a[5]]) as usize);
                }
            }
            assert_eq!(b.len(), 40 + u16::from_be_bytes([b[4], b[5]]) as usize);
            assert_eq!(
                reassemble_v6(&[a.clone(), b.clone()], had_frag.is_some()),
                orig
            );
            vec![a, b]
        }
        (out, want) => panic!("got {out:?}, expected skip {want:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn ipv6_stamping(
        case in v6_case(),
        wanted in code(),
        wanted2 in code(),
        ident in any::<u32>(),
        sc in stamp_config(),
    ) {
        let orig = ipv6(&case.exts, case.upper, &case.payload, 64);
        let had_frag = case.exts.iter().find_map(|e| match e {
            Ext::Fragment { offset, more, .. } => Some((*offset, *more)),
            _ => None,
        });
        let u = unfragmentable_len(&case.exts);
        let chain = fragmentable_chain_len(&case.exts);
        let pieces = check_v6(&sc, &orig, wanted, ident, had_frag, u, chain);
        prop_assert!(pieces.len() <= 2);
        if let [a, b] = &pieces[..] {
            let carried = a.len() - (u + 8);
            prop_assert_eq!(
                stamp_ipv6_with(&sc, b.clone(), wanted2, ident ^ 1),
                Stamped::Untouched(b.clone(), Skip::NotLeading)
            );
            let again = check_v6(&sc, a, wanted2, ident ^ 1, Some((0, true)), u, chain);
            if wanted2.len() >= carried || wanted2.len() < chain + 24 {
                // Higher rate, or a code too short for the header chain.
                prop_assert_eq!(&again, &vec![a.clone()]);
            } else {
                prop_assert_eq!(again.len(), 2);
                let all = vec![again[0].clone(), again[1].clone(), b.clone()];
                prop_assert_eq!(reassemble_v6(&all, had_frag.is_some()), orig.clone());
            }
        }
    }

    #[test]
    fn stamping_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..1600), wanted in code()) {
        match stamp_ipv4(bytes.clone(), wanted) {
            Stamped::Untouched(p, _) => prop_assert_eq!(p, bytes.clone()),
            Stamped::Split(a, b) => {
                prop_assert!(v4_checksum_ok(&a) && v4_checksum_ok(&b));
                prop_assert!(header_of(&a).payload().len() <= wanted.len());
            }
        }
        match stamp_ipv6(bytes.clone(), wanted, 7) {
            Stamped::Untouched(p, _) => prop_assert_eq!(p, bytes.clone()),
            Stamped::Split(a, b) => {
                prop_assert!(layout(&a).unwrap().fragment.is_some());
                prop_assert!(layout(&b).unwrap().fragment.is_some());
            }
        }
    }
}

// ---- exact byte vectors ------------------------------------------------

const SRC: [u8; 4] = [192, 168, 0, 1];
const DST: [u8; 4] = [192, 168, 0, 199];

/// A 1500-byte IPv4 TCP packet: ident 0x1c46, no flags, TTL 64.
fn tcp_1500() -> Vec<u8> {
    let mut p = vec![0u8; 1500];
    p[..20].copy_from_slice(&[
        0x45, 0x00, 0x05, 0xdc, 0x1c, 0x46, 0x00, 0x00, 0x40, 0x06, 0xd6, 0xbd, 192, 168, 0, 1,
        192, 168, 0, 199,
    ]);
    // TCP header: ports 5001 → 80, seq 1, ack 0, data offset 5, ACK.
    p[20..40].copy_from_slice(&[
        0x13, 0x89, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    for (i, b) in p[40..].iter_mut().enumerate() {
        *b = i as u8;
    }
    assert!(v4_checksum_ok(&p), "hand-made checksum");
    p
}

#[test]
fn byte_vectors_1500_at_100_mbit() {
    // 100 Mbit/s = 12 500 B/ms → L = 8·floor(128·ln(12500/12.4392)/8) = 880.
    let code = ka_codec::scale::encode(12_500.0).unwrap();
    assert_eq!(code.len(), 880);
    let orig = tcp_1500();
    let Stamped::Split(a, b) = stamp_ipv4(orig.clone(), code) else {
        panic!("must split");
    };
    assert_eq!(a.len(), 900);
    assert_eq!(b.len(), 620);
    assert_eq!(
        a[..20],
        [
            0x45, 0x00, 0x03, 0x84, 0x1c, 0x46, 0x20, 0x00, 0x40, 0x06, 0xb9, 0x15, SRC[0], SRC[1],
            SRC[2], SRC[3], DST[0], DST[1], DST[2], DST[3]
        ]
    );
    assert_eq!(
        b[..20],
        [
            0x45, 0x00, 0x02, 0x6c, 0x1c, 0x46, 0x00, 0x6e, 0x40, 0x06, 0xd9, 0xbf, SRC[0], SRC[1],
            SRC[2], SRC[3], DST[0], DST[1], DST[2], DST[3]
        ]
    );
    assert_eq!(a[20..], orig[20..900]);
    assert_eq!(b[20..], orig[900..]);
}

#[test]
fn byte_vectors_saturate_at_top_and_df_untouched() {
    let orig = tcp_1500();
    let Stamped::Split(a, b) = stamp_ipv4(orig.clone(), Code::MAX) else {
        panic!("must split");
    };
    // 1480 payload bytes carry at most 1472.
    assert_eq!((a.len(), b.len()), (1492, 28));
    assert_eq!(&b[6..8], &[0x00, 0xb8]); // offset 1472/8 = 184
    let mut df = orig.clone();
    df[6] = 0x40;
    df[10..12].copy_from_slice(&[0, 0]);
    let c = ka_codec::wire::checksum::checksum(&df[..20]);
    df[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(
        stamp_ipv4(df.clone(), Code::MIN),
        Stamped::Untouched(df, Skip::DontFragment)
    );
}

#[test]
fn small_packets_do_not_saturate_by_default() {
    // A 60-byte TCP ACK (40 payload bytes) at a wanted 880: untouched by
    // default, split at 32 when every whole packet saturates.
    let ack = ipv4(&[0; 40], &[], false, false, 0, 1, 64, 6);
    let code = Code::from_len(880).unwrap();
    assert_eq!(
        stamp_ipv4(ack.clone(), code),
        Stamped::Untouched(ack.clone(), Skip::NoRoom)
    );
    let always = StampConfig {
        saturate_min_payload: 0,
        ..StampConfig::default()
    };
    let Stamped::Split(a, _) = stamp_ipv4_with(&always, ack, code) else {
        panic!("must split");
    };
    assert_eq!(a.len(), 20 + 32);
}

#[test]
fn ipv6_leading_fragment_keeps_the_header_chain() {
    // Destination options (16 bytes) in the fragmentable part: code 32
    // would cut the chain after 16 + 16 bytes; 40 holds it plus 24 bytes.
    let orig = ipv6(&[Ext::DestOpts(2)], 6, &[9; 1000], 64);
    let c = |l| Code::from_len(l).unwrap();
    assert_eq!(
        stamp_ipv6(orig.clone(), c(32), 1),
        Stamped::Untouched(orig.clone(), Skip::HeaderChain)
    );
    let Stamped::Split(a, b) = stamp_ipv6(orig.clone(), c(40), 1) else {
        panic!("must split");
    };
    assert_eq!(layout(&a).unwrap().upper, Some((6, 48 + 16)));
    assert_eq!(reassemble_v6(&[a, b], false), orig);
}

#[test]
fn copy_flagged_option_goes_into_both_fragments() {
    // Options: NOP, record route (not copied, 7 bytes), router alert (copied,
    // 4 bytes) → 12 bytes; the rest gets only router alert.
    let opts = [1, 7, 7, 4, 0, 0, 0, 0, 0x94, 4, 0, 0];
    let orig = ipv4(&[0x33; 1000], &opts, false, false, 0, 9, 64, 17);
    let code = Code::from_len(496).unwrap();
    let Stamped::Split(a, b) = stamp_ipv4(orig.clone(), code) else {
        panic!("must split");
    };
    assert_eq!(a[0], 0x48); // IHL 8 (32 bytes), all options
    assert_eq!(&a[20..32], &opts);
    assert_eq!(a.len(), 32 + 496);
    assert_eq!(b[0], 0x46); // IHL 6 (24 bytes)
    assert_eq!(&b[20..24], &[0x94, 4, 0, 0]);
    assert_eq!(b.len(), 24 + 1000 - 496);
    assert_eq!(&b[6..8], &(496u16 / 8).to_be_bytes()); // offset unaffected by IHL
    assert_eq!(reassemble_v4(&[a, b]), orig);
}

#[test]
fn ipv6_byte_layout() {
    let orig = ipv6(&[], 6, &[0x77; 1440], 64);
    let code = Code::from_len(880).unwrap();
    let Stamped::Split(a, b) = stamp_ipv6(orig.clone(), code, 0x0102_0304) else {
        panic!("must split");
    };
    assert_eq!(a.len(), 40 + 8 + 880);
    assert_eq!(b.len(), 40 + 8 + 560);
    assert_eq!(a[6], 44);
    assert_eq!(&a[4..6], &(8u16 + 880).to_be_bytes());
    assert_eq!(&a[40..48], &[6, 0, 0x00, 0x01, 1, 2, 3, 4]); // offset 0, M=1
    assert_eq!(&b[40..48], &[6, 0, 0x03, 0x70, 1, 2, 3, 4]); // offset field 110 << 3 = 880, M=0
    assert_eq!(a[48..], orig[40..920]);
    // A 605-byte IPv6 packet is an RTT indicator: never stamped.
    let ind = ipv6(&[], 17, &[0; 565], 64);
    assert_eq!(ind.len(), 605);
    assert_eq!(
        stamp_ipv6(ind.clone(), Code::MIN, 1),
        Stamped::Untouched(ind, Skip::Indicator)
    );
}

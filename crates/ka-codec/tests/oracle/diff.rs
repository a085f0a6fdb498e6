//! The differential oracle: `ka_codec::wire` against `etherparse`.
//!
//! Shared by the property tests (`tests/oracle_etherparse.rs`) and the
//! cargo-fuzz target `fuzz/fuzz_targets/wire_vs_etherparse.rs` (included
//! there with `#[path]`). Every `check_*` function takes arbitrary bytes,
//! parses them with both libraries and panics if they disagree in a way the
//! list of intentional differences (`ka_codec::wire` module docs,
//! "Differences from etherparse") does not explain:
//!
//! * both accept → every field both expose is equal;
//! * exactly one rejects → one of the documented quirks is present in the
//!   bytes (found by a small raw walk here, independent of both parsers),
//!   and the function returns which one, so the tests can check that each
//!   documented difference is real.
//!
//! Only `std`, `ka_codec` and `etherparse` are used.

#![allow(dead_code)]

use etherparse::{Ipv4Slice, Ipv6ExtensionSlice, Ipv6Slice, TcpHeaderSlice, TcpOptionElement};
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::ipv6::{self, Ipv6Packet};
use ka_codec::wire::tcp::{TcpOptions, TcpPacket};
use ka_codec::wire::{OptionIter, Segment};

/// A documented reason why the two parsers may disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quirk {
    /// IPv4 protocol 51: etherparse's `Ipv4Slice` also parses the
    /// Authentication Header behind the IPv4 header; ka's view stops at the
    /// IP header.
    Ipv4Ah,
    /// IPv6 payload length 0 with bytes after the header: etherparse assumes
    /// a jumbogram (RFC 2675) and takes the rest of the buffer as payload;
    /// ka reads an empty payload (jumbograms are not supported).
    Ipv6Jumbo,
    /// A Hop-by-Hop header after the first position: etherparse rejects it
    /// (RFC 8200 §4.3); ka walks it like any other extension header.
    HopByHopNotFirst,
    /// A Fragment header with a non-zero offset: ka stops the walk there
    /// (what follows is the middle of the original payload); etherparse goes
    /// on parsing the next header field's type in the fragment data.
    NonFirstFragment,
    /// A second Fragment header: ka refuses (`Unsupported`), etherparse
    /// accepts.
    TwoFragmentHeaders,
    /// More than `MAX_EXT_HEADERS` extension headers: ka refuses
    /// (`Unsupported`, bounded work per packet), etherparse walks them all.
    TooManyExtHeaders,
    /// An Authentication Header with payload length 0 (8 bytes): ka walks
    /// it, etherparse rejects (`ZeroPayloadLen`; RFC 4302's minimum is 12).
    AhZeroLen,
    /// A TCP option etherparse does not know (e.g. RFC 6994 experimental
    /// kind 253, which carries KA-Permitted / KA-Rate / RCP): etherparse's
    /// iterator stops with `UnknownId`; ka skips it (RFC 9293 §3.1: unknown
    /// options must be ignored).
    TcpUnknownOption,
    /// A known TCP option with a non-standard length (e.g. MSS with length
    /// 6): etherparse stops with `UnexpectedSize`; ka skips it.
    TcpOddLength,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// The IPv4 check. Returns the quirk that explained a disagreement, if any.
pub fn check_ipv4(b: &[u8]) -> Option<Quirk> {
    let ka = Ipv4Packet::new_checked(b);
    let ep = Ipv4Slice::from_slice(b);
    match (ka, ep) {
        (Ok(k), Ok(e)) => {
            let h = e.header();
            assert_eq!(k.header_len(), usize::from(h.ihl()) * 4, "IHL");
            assert_eq!(k.total_len(), usize::from(h.total_len()), "total length");
            assert_eq!(
                k.dscp_ecn(),
                (h.dcp().value() << 2) | h.ecn().value(),
                "DSCP/ECN"
            );
            assert_eq!(k.ident(), h.identification(), "identification");
            assert_eq!(k.dont_frag(), h.dont_fragment(), "DF");
            assert_eq!(k.more_frags(), h.more_fragments(), "MF");
            assert_eq!(
                k.frag_offset(),
                usize::from(h.fragments_offset().byte_offset()),
                "fragment offset"
            );
            assert_eq!(k.is_fragment(), h.is_fragmenting_payload(), "is fragment");
            assert_eq!(k.ttl(), h.ttl(), "TTL");
            assert_eq!(k.protocol(), h.protocol().0, "protocol");
            assert_eq!(k.checksum(), h.header_checksum(), "checksum field");
            // Summed over the raw header: `to_header()` would drop the
            // reserved flag bit, which the checksum covers.
            assert_eq!(
                k.verify_checksum(),
                etherparse::checksum::Sum16BitWords::new()
                    .add_slice(h.slice())
                    .ones_complement()
                    == 0,
                "checksum verdict"
            );
            assert_eq!(k.src_addr(), h.source(), "source");
            assert_eq!(k.dst_addr(), h.destination(), "destination");
            assert_eq!(k.options(), h.options(), "options bytes");
            if k.protocol() != 51 {
                assert_eq!(k.payload(), e.payload().payload, "payload");
            }
            None
        }
        (Err(_), Err(_)) => None,
        (Ok(k), Err(e)) => {
            assert_eq!(k.protocol(), 51, "etherparse rejects ({e:?}), ka accepts");
            Some(Quirk::Ipv4Ah)
        }
        (Err(k), Ok(_)) => panic!("ka rejects ({k:?}), etherparse accepts"),
    }
}

/// What a raw walk of an IPv6 extension-header chain finds that the two
/// parsers treat differently (empty: they must agree).
pub fn ipv6_quirks(b: &[u8]) -> Vec<Quirk> {
    let mut q = Vec::new();
    if b.len() < 40 || b[0] >> 4 != 6 {
        return q;
    }
    let plen = usize::from(be16(b, 4));
    let end = if plen == 0 && b.len() > 40 {
        q.push(Quirk::Ipv6Jumbo);
        b.len()
    } else {
        (40 + plen).min(b.len())
    };
    let (mut nh, mut off, mut count, mut frags) = (b[6], 40usize, 0usize, 0usize);
    // Long enough for any chain that fits in 64 KiB of 8-byte headers.
    for _ in 0..9000 {
        let ext = matches!(nh, 0 | 43 | 44 | 51 | 60);
        if !ext {
            break;
        }
        if nh == 0 && off != 40 {
            q.push(Quirk::HopByHopNotFirst);
        }
        count += 1;
        if count > ipv6::MAX_EXT_HEADERS {
            q.push(Quirk::TooManyExtHeaders);
        }
        if off + 8 > end {
            break;
        }
        let len = match nh {
            44 => {
                frags += 1;
                if frags == 2 {
                    q.push(Quirk::TwoFragmentHeaders);
                }
                if be16(b, off + 2) >> 3 != 0 {
                    q.push(Quirk::NonFirstFragment);
                }
                8
            }
            51 => {
                if b[off + 1] == 0 {
                    q.push(Quirk::AhZeroLen);
                }
                (usize::from(b[off + 1]) + 2) * 4
            }
            _ => (usize::from(b[off + 1]) + 1) * 8,
        };
        nh = b[off];
        off += len;
    }
    q.sort();
    q.dedup();
    q
}

/// The IPv6 check: fixed header fields, the extension-header walk
/// (Fragment header, upper-layer protocol and where it starts).
pub fn check_ipv6(b: &[u8]) -> Option<Quirk> {
    let quirks = ipv6_quirks(b);
    // The fixed header: ka's checked view against etherparse's header slice
    // plus its payload-length check (jumbograms aside).
    if let Ok(k) = Ipv6Packet::new_checked(b) {
        let h = etherparse::Ipv6HeaderSlice::from_slice(b).expect("ka accepted the header");
        assert_eq!(k.traffic_class(), h.traffic_class(), "traffic class");
        assert_eq!(k.flow_label(), h.flow_label().value(), "flow label");
        assert_eq!(
            k.payload_len(),
            usize::from(h.payload_length()),
            "payload length"
        );
        assert_eq!(k.next_header(), h.next_header().0, "next header");
        assert_eq!(k.hop_limit(), h.hop_limit(), "hop limit");
        assert_eq!(k.src_addr(), h.source(), "source");
        assert_eq!(k.dst_addr(), h.destination(), "destination");
    }
    let ka = ipv6::layout(b);
    let ep = Ipv6Slice::from_slice(b);
    match (ka, ep) {
        (Ok(l), Ok(e)) => {
            if quirks.contains(&Quirk::Ipv6Jumbo) {
                // etherparse read a different payload: nothing to compare.
                return Some(Quirk::Ipv6Jumbo);
            }
            let ep_frag = e.extensions().clone().into_iter().find_map(|x| match x {
                Ipv6ExtensionSlice::Fragment(f) => Some(f),
                _ => None,
            });
            match (l.fragment, ep_frag) {
                (Some((at, f)), Some(g)) => {
                    assert_eq!(at, g.slice().as_ptr() as usize - b.as_ptr() as usize);
                    assert_eq!(f.next_header, g.next_header().0, "fragment next header");
                    assert_eq!(f.offset, usize::from(g.fragment_offset().byte_offset()));
                    assert_eq!(f.more_frags, g.more_fragments(), "M flag");
                    assert_eq!(f.ident, g.identification(), "identification");
                }
                (None, None) => {}
                (k, e) => panic!("Fragment header: ka {k:?}, etherparse {e:?}"),
            }
            if let Some((proto, at)) = l.upper {
                let p = e.payload();
                assert_eq!(proto, p.ip_number.0, "upper-layer protocol");
                assert_eq!(at, p.payload.as_ptr() as usize - b.as_ptr() as usize);
                assert_eq!(b.len().min(k_total(b)), at + p.payload.len());
            } else {
                assert!(
                    quirks.contains(&Quirk::NonFirstFragment),
                    "ka found no upper layer without a non-first fragment"
                );
            }
            quirks.first().copied()
        }
        (Err(_), Err(_)) => quirks.first().copied(),
        (Ok(_), Err(e)) => {
            let why = [
                Quirk::HopByHopNotFirst,
                Quirk::NonFirstFragment,
                Quirk::AhZeroLen,
                Quirk::Ipv6Jumbo,
            ];
            Some(
                *quirks
                    .iter()
                    .find(|q| why.contains(q))
                    .unwrap_or_else(|| panic!("etherparse rejects ({e:?}), ka accepts: {b:02x?}")),
            )
        }
        (Err(k), Ok(_)) => {
            let why = [
                Quirk::TwoFragmentHeaders,
                Quirk::TooManyExtHeaders,
                Quirk::Ipv6Jumbo,
            ];
            Some(
                *quirks
                    .iter()
                    .find(|q| why.contains(q))
                    .unwrap_or_else(|| panic!("ka rejects ({k:?}), etherparse accepts: {b:02x?}")),
            )
        }
    }
}

fn k_total(b: &[u8]) -> usize {
    40 + usize::from(be16(b, 4))
}

/// The options etherparse reports, in order, up to its first error (and
/// whether there was one).
fn ep_options(opts: &[u8]) -> (Vec<TcpOptionElement>, bool) {
    let mut out = Vec::new();
    for o in etherparse::TcpOptionsIterator::from_slice(opts) {
        match o {
            Ok(TcpOptionElement::Noop) => {}
            Ok(e) => out.push(e),
            Err(_) => return (out, true),
        }
    }
    (out, false)
}

/// Where a raw walk of a TCP options area first meets an option one of
/// the parsers treats specially: `Some((offset, quirk))`, or `None` if the
/// area holds only options both know, at their standard lengths (or is
/// malformed first, which both must reject).
pub fn tcp_option_quirk(opts: &[u8]) -> Option<(usize, Quirk)> {
    let mut i = 0;
    while i < opts.len() {
        let kind = opts[i];
        match kind {
            0 => return None,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let len = usize::from(*opts.get(i + 1)?);
        if len < 2 || i + len > opts.len() {
            return None; // malformed: both must reject
        }
        let standard = match kind {
            2 => len == 4,
            3 => len == 3,
            4 => len == 2,
            5 => matches!(len, 10 | 18 | 26 | 34),
            8 => len == 10,
            _ => return Some((i, Quirk::TcpUnknownOption)),
        };
        if !standard {
            return Some((i, Quirk::TcpOddLength));
        }
        i += len;
    }
    None
}

/// Compares ka's parse of a TCP options area with etherparse's; both must
/// have accepted it without error.
fn same_options(k: &TcpOptions, e: &[TcpOptionElement]) {
    let last = |f: &dyn Fn(&TcpOptionElement) -> bool| e.iter().rev().find(|x| f(x)).cloned();
    let mss = last(&|x| matches!(x, TcpOptionElement::MaximumSegmentSize(_)));
    assert_eq!(
        k.mss,
        mss.map(|x| match x {
            TcpOptionElement::MaximumSegmentSize(v) => v,
            _ => unreachable!(),
        }),
        "MSS"
    );
    let ws = last(&|x| matches!(x, TcpOptionElement::WindowScale(_)));
    assert_eq!(
        k.window_scale,
        ws.map(|x| match x {
            TcpOptionElement::WindowScale(v) => v,
            _ => unreachable!(),
        }),
        "window scale"
    );
    assert_eq!(
        k.sack_permitted,
        e.contains(&TcpOptionElement::SelectiveAcknowledgementPermitted),
        "SACK-Permitted"
    );
    let ts = last(&|x| matches!(x, TcpOptionElement::Timestamp(..)));
    assert_eq!(
        k.timestamps,
        ts.map(|x| match x {
            TcpOptionElement::Timestamp(a, b) => (a, b),
            _ => unreachable!(),
        }),
        "timestamps"
    );
    let sack = last(&|x| matches!(x, TcpOptionElement::SelectiveAcknowledgement(..)));
    let ka_blocks: Vec<(u32, u32)> = k.sack.iter().collect();
    let ep_blocks: Vec<(u32, u32)> = match sack {
        Some(TcpOptionElement::SelectiveAcknowledgement(first, rest)) => std::iter::once(first)
            .chain(rest.into_iter().flatten())
            .collect(),
        _ => Vec::new(),
    };
    assert_eq!(ka_blocks, ep_blocks, "SACK blocks");
}

/// Checks a TCP options area (the bytes after the 20-byte header).
pub fn check_tcp_options(opts: &[u8]) -> Option<Quirk> {
    let ka = TcpOptions::parse(opts);
    let (ep, ep_err) = ep_options(opts);
    match tcp_option_quirk(opts) {
        None => {
            match &ka {
                Ok(k) => {
                    assert!(!ep_err, "etherparse failed on standard options {opts:02x?}");
                    same_options(k, &ep);
                }
                Err(_) => assert!(ep_err, "ka rejects, etherparse accepts {opts:02x?}"),
            }
            None
        }
        Some((at, quirk)) => {
            // Everything before the quirk is standard: there they agree.
            check_tcp_options(&opts[..at]);
            if ka.is_err() {
                // ka found a malformed option after the quirk; etherparse
                // stopped at the quirk already.
                assert!(ep_err);
            }
            Some(quirk)
        }
    }
}

/// Checks a TCP segment (the IP payload): header fields and options.
pub fn check_tcp(b: &[u8]) -> Option<Quirk> {
    let ka = TcpPacket::new_checked(b);
    let ep = TcpHeaderSlice::from_slice(b);
    match (ka, ep) {
        (Ok(k), Ok(h)) => {
            assert_eq!(k.src_port(), h.source_port(), "source port");
            assert_eq!(k.dst_port(), h.destination_port(), "destination port");
            assert_eq!(k.seq(), h.sequence_number(), "sequence number");
            assert_eq!(k.ack(), h.acknowledgment_number(), "ack number");
            assert_eq!(
                k.header_len(),
                usize::from(h.data_offset()) * 4,
                "data offset"
            );
            let f = k.flags();
            let bits = [
                h.fin(),
                h.syn(),
                h.rst(),
                h.psh(),
                h.ack(),
                h.urg(),
                h.ece(),
                h.cwr(),
            ];
            for (i, bit) in bits.iter().enumerate() {
                assert_eq!(f & (1 << i) != 0, *bit, "flag bit {i}");
            }
            assert_eq!(k.window(), h.window_size(), "window");
            assert_eq!(k.checksum(), h.checksum(), "checksum");
            assert_eq!(k.urgent(), h.urgent_pointer(), "urgent pointer");
            assert_eq!(k.options(), h.options(), "options bytes");
            check_tcp_options(k.options())
        }
        (Err(_), Err(_)) => None,
        (k, e) => panic!("TCP header: ka {:?}, etherparse {:?}", k.err(), e.err()),
    }
}

/// The option kinds etherparse names, as wire kinds.
fn ep_kind(e: &TcpOptionElement) -> u8 {
    match e {
        TcpOptionElement::Noop => 1,
        TcpOptionElement::MaximumSegmentSize(_) => 2,
        TcpOptionElement::WindowScale(_) => 3,
        TcpOptionElement::SelectiveAcknowledgementPermitted => 4,
        TcpOptionElement::SelectiveAcknowledgement(..) => 5,
        TcpOptionElement::Timestamp(..) => 8,
    }
}

/// Checks the one option walker ([`OptionIter`]) on a TCP options area
/// against etherparse's iterator: up to the first option one of them
/// treats specially (a [`Quirk`]), both see the same options in the same
/// order, and a malformed area is an error for both.
pub fn check_option_iter(opts: &[u8]) -> Option<Quirk> {
    let quirk = tcp_option_quirk(opts);
    let limit = quirk.map_or(opts.len(), |(at, _)| at);
    let ka: Vec<_> = OptionIter::new(opts)
        .take_while(|o| o.as_ref().map_or(true, |o| o.offset < limit))
        .collect();
    let mut ep = Vec::new();
    let mut ep_err = false;
    for o in etherparse::TcpOptionsIterator::from_slice(opts.get(..limit).unwrap_or(opts)) {
        match o {
            Ok(e) => ep.push(ep_kind(&e)),
            Err(_) => {
                ep_err = true;
                break;
            }
        }
    }
    let ka_kinds: Vec<u8> = ka
        .iter()
        .filter_map(|o| o.as_ref().ok().map(|o| o.kind))
        .collect();
    // etherparse reads End as the end of the area too.
    assert_eq!(ka_kinds, ep, "option kinds of {opts:02x?}");
    if quirk.is_none() {
        assert_eq!(
            ka.iter().any(|o| o.is_err()),
            ep_err,
            "malformed {opts:02x?}"
        );
    }
    quirk.map(|q| q.1)
}

/// Checks the one-parse [`Segment`] view of a whole IP packet against
/// etherparse: the same IP header facts, the same upper layer (where it
/// starts, which protocol) and, for TCP, the same header fields and
/// options. Returns the quirk that explained a disagreement, if any.
pub fn check_segment(b: &[u8]) -> Option<Quirk> {
    let Ok(s) = Segment::parse(b) else {
        // The view rejects exactly what the IP views reject; those are
        // checked against etherparse by `check_ipv4` / `check_ipv6`.
        assert!(Ipv4Packet::new_checked(b).is_err() && Ipv6Packet::new_checked(b).is_err());
        return None;
    };
    let quirk = if s.is_ipv4() {
        let q = check_ipv4(b);
        if let Ok(e) = Ipv4Slice::from_slice(b) {
            let h = e.header();
            assert_eq!(s.ip_header_len(), usize::from(h.ihl()) * 4, "IHL");
            assert_eq!(s.total_len(), usize::from(h.total_len()), "total length");
            assert_eq!(s.dont_frag(), h.dont_fragment(), "DF");
            assert_eq!(s.more_frags(), h.more_fragments(), "MF");
            assert_eq!(
                s.frag_offset(),
                usize::from(h.fragments_offset().byte_offset())
            );
            assert_eq!(s.is_fragment(), h.is_fragmenting_payload(), "is fragment");
            assert_eq!(s.ipv4_addrs(), Some((h.source(), h.destination())));
            assert_eq!(s.ipv4_options(), h.options(), "options");
            if h.fragments_offset().value() == 0 {
                assert_eq!(s.l4(), Some((h.protocol().0, s.ip_header_len())));
            } else {
                assert_eq!(s.l4(), None, "non-first fragment");
            }
        }
        q
    } else {
        let q = check_ipv6(b);
        if q.is_none()
            && let Ok(e) = Ipv6Slice::from_slice(b)
        {
            let h = e.header();
            assert_eq!(s.ipv6_addrs(), Some((h.source(), h.destination())));
            assert_eq!(s.total_len(), 40 + usize::from(h.payload_length()));
            let p = e.payload();
            let at = p.payload.as_ptr() as usize - b.as_ptr() as usize;
            assert_eq!(s.l4(), Some((p.ip_number.0, at)), "upper layer");
        }
        q
    };
    // The TCP header: the view has one exactly when etherparse parses the
    // upper-layer bytes as one.
    if let Some((6, at)) = s.l4() {
        let seg = &b[at..s.total_len()];
        match TcpHeaderSlice::from_slice(seg) {
            Ok(h) => {
                assert!(
                    s.is_tcp(),
                    "etherparse reads a TCP header, the view does not"
                );
                assert_eq!(s.ports(), Some((h.source_port(), h.destination_port())));
                assert_eq!(s.tcp_seq(), Some(h.sequence_number()), "seq");
                assert_eq!(s.tcp_ack(), Some(h.acknowledgment_number()), "ack");
                assert_eq!(s.tcp_window(), Some(h.window_size()), "window");
                assert_eq!(s.tcp_header_len(), usize::from(h.data_offset()) * 4);
                assert_eq!(s.tcp_payload_len(), Some(seg.len() - h.slice().len()));
                let flags = s.tcp_flags().unwrap_or(0);
                assert_eq!(flags & 0x02 != 0, h.syn(), "SYN");
                assert_eq!(flags & 0x10 != 0, h.ack(), "ACK");
                assert_eq!(s.tcp_options(), h.options(), "TCP options");
                return quirk.or(check_option_iter(s.tcp_options()));
            }
            Err(_) => assert!(
                !s.is_tcp(),
                "the view reads a TCP header, etherparse does not"
            ),
        }
    }
    quirk
}

//! IPv6 stamping (RFC 8200 §4.5 Fragment header).

use ka_codec::Code;
use ka_codec::rtt;
use ka_codec::wire::ipv6::{
    FRAG_HEADER_LEN, FragmentHeader, HEADER_LEN, Ipv6Layout, Ipv6Packet, NEXT_HEADER_FRAGMENT,
    layout,
};
use ka_codec::wire::{Layout, Segment};

use super::{Skip, StampConfig, Stamped};

/// Stamps an IPv6 packet with the default [`StampConfig`]; see
/// [`stamp_ipv6_with`].
pub fn stamp_ipv6(packet: Vec<u8>, wanted: Code, ident: u32) -> Stamped {
    stamp_ipv6_with(&StampConfig::default(), packet, wanted, ident)
}

/// The IPv6 version of the stamping rules.
///
/// * A packet of total length 600…611 without a Fragment header is an RTT
///   indicator (IPv6 has no DF; see [`is_ipv6_indicator`]) → untouched.
/// * Without a Fragment header: the unfragmentable part U (fixed header,
///   Hop-by-Hop, everything up to a Routing header) is copied into both
///   pieces, followed by a new Fragment header (identification `ident`,
///   next header = what U's last Next Header named) and then the first L
///   bytes of the fragmentable part (M = 1, offset 0), resp. the rest (M = 0,
///   offset L). U's last Next Header field becomes 44.
/// * The leading fragment must hold every extension header after the
///   Fragment header plus `min_len` (24) bytes of the upper-layer header
///   (RFC 7112: the first fragment carries the whole header chain; the
///   paper's reason for L ≥ 24); if the code is shorter → untouched
///   ([`Skip::HeaderChain`]).
/// * With a Fragment header and offset 0: re-split in place, keeping its
///   identification: the leading piece ends L bytes after the Fragment
///   header (M = 1), the rest gets offset L and the original M. With offset
///   ≠ 0 → untouched.
///
/// Payload lengths are fixed in both pieces; the hop limit is not touched
/// here. Bytes after `40 + payload length` are dropped.
pub fn stamp_ipv6_with(config: &StampConfig, packet: Vec<u8>, wanted: Code, ident: u32) -> Stamped {
    // The IPv6 header and its chain only (not a whole `Layout::parse`,
    // which would walk the chain and then be walked again for the
    // `Ipv6Layout`): this standalone entry stays as cheap as it was.
    let total = match Ipv6Packet::new_checked(packet.as_slice()) {
        Ok(p) => p.total_len(),
        Err(_) => return Stamped::Untouched(packet, Skip::Unparsable),
    };
    match layout(packet.as_slice()) {
        Ok(lay) => stamp(config, packet, wanted, ident, total, &lay),
        Err(_) => Stamped::Untouched(packet, Skip::Unparsable),
    }
}

/// [`stamp_ipv6_with`] of a packet parsed already: `layout` is
/// [`Layout::parse`] of `packet` (anything but IPv6 with a walkable
/// extension-header chain is [`Skip::Unparsable`]).
pub fn stamp_ipv6_parsed(
    config: &StampConfig,
    packet: Vec<u8>,
    layout: &Layout,
    wanted: Code,
    ident: u32,
) -> Stamped {
    let total = layout.total_len();
    let lay = if layout.is_ipv6() {
        Segment::with_layout(&packet, *layout).ipv6_layout()
    } else {
        None
    };
    let Some(lay) = lay else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    stamp(config, packet, wanted, ident, total, &lay)
}

/// Rules 1, 2, 4 and 5 for an IPv6 packet of `total` bytes whose chain is
/// `lay`. Inlined into both entries (see `ipv4::stamp`).
#[inline(always)]
fn stamp(
    config: &StampConfig,
    packet: Vec<u8>,
    wanted: Code,
    ident: u32,
    total: usize,
    lay: &Ipv6Layout,
) -> Stamped {
    if lay.fragment.is_none() && rtt::classify_v6(total).is_some() {
        return Stamped::Untouched(packet, Skip::Indicator);
    }
    match lay.fragment {
        None => insert_fragment_header(config, packet, wanted, ident, total, lay),
        Some((at, fh)) => resplit(config, packet, wanted, total, at, fh, lay),
    }
}

/// Whether an IPv6 packet is an RTT indicator: total length 600…611 and no
/// Fragment header.
///
/// IPv6 has no DF bit, so the length marks an indicator. A leading fragment
/// a KA router made can have such a length too (40 + 8 + L = 600 for
/// L = 552, 608 for L = 560); it carries a rate, not an RTT, and must stay
/// re-stampable downstream, so packets with a Fragment header are never
/// indicators (senders emit indicators as whole packets). An IPv6 packet
/// whose header chain cannot be walked counts as an indicator by length.
pub fn is_ipv6_indicator(packet: &[u8]) -> Option<u8> {
    match Layout::parse(packet) {
        Ok(l) if l.is_ipv6() => ipv6_indicator(&l),
        _ => None,
    }
}

/// [`is_ipv6_indicator`] of a packet parsed already (`None` for IPv4).
pub fn ipv6_indicator(layout: &Layout) -> Option<u8> {
    if !layout.is_ipv6() {
        return None;
    }
    let k = rtt::classify_v6(layout.total_len())?;
    (!layout.has_fragment_header()).then_some(k)
}

fn insert_fragment_header(
    config: &StampConfig,
    mut packet: Vec<u8>,
    wanted: Code,
    ident: u32,
    total: usize,
    lay: &Ipv6Layout,
) -> Stamped {
    let u = lay.unfragmentable_len;
    let Some(payload) = total.checked_sub(u) else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    let Some(l) = config.target_len(wanted, payload, false) else {
        return Stamped::Untouched(packet, Skip::NoRoom);
    };
    if !chain_fits(config, lay, u, l) {
        return Stamped::Untouched(packet, Skip::HeaderChain);
    }
    let Some(&next) = packet.get(lay.next_header_field) else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    let fh = |offset, more_frags| FragmentHeader {
        next_header: next,
        offset,
        more_frags,
        ident,
    };
    let mut fh_bytes = [[0u8; FRAG_HEADER_LEN]; 2];
    let (Ok(_), Ok(_)) = (
        fh(0, true).emit(&mut fh_bytes[0]),
        fh(l, false).emit(&mut fh_bytes[1]),
    ) else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    let split_at = u + l;
    let (Some(unfrag), Some(rest)) = (packet.get(..u), packet.get(split_at..total)) else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    let second_len = u + FRAG_HEADER_LEN + rest.len();
    let mut second = Vec::with_capacity(second_len);
    second.extend_from_slice(unfrag);
    second.extend_from_slice(&fh_bytes[1]);
    second.extend_from_slice(rest);
    finish(&mut second, lay.next_header_field, second_len);

    // Leading piece, in the original buffer: U | frag header | first L bytes.
    packet.truncate(split_at);
    packet.extend_from_slice(&fh_bytes[0]);
    packet.copy_within(u..split_at, u + FRAG_HEADER_LEN);
    if let Some(dst) = packet.get_mut(u..u + FRAG_HEADER_LEN) {
        dst.copy_from_slice(&fh_bytes[0]);
    }
    let first_len = split_at + FRAG_HEADER_LEN;
    finish(&mut packet, lay.next_header_field, first_len);
    Stamped::Split(packet, second)
}

fn resplit(
    config: &StampConfig,
    mut packet: Vec<u8>,
    wanted: Code,
    total: usize,
    at: usize,
    fh: FragmentHeader,
    lay: &Ipv6Layout,
) -> Stamped {
    if fh.offset != 0 {
        return Stamped::Untouched(packet, Skip::NotLeading);
    }
    let data = at + FRAG_HEADER_LEN;
    let Some(payload) = total.checked_sub(data) else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    let Some(l) = config.target_len(wanted, payload, fh.more_frags) else {
        return Stamped::Untouched(packet, Skip::NoRoom);
    };
    if !chain_fits(config, lay, data, l) {
        return Stamped::Untouched(packet, Skip::HeaderChain);
    }
    let split_at = data + l;
    let mut rest_fh = [0u8; FRAG_HEADER_LEN];
    let lead_fh = FragmentHeader {
        more_frags: true,
        ..fh
    };
    let tail_fh = FragmentHeader { offset: l, ..fh };
    let (Ok(_), Some(head), Some(rest)) = (
        tail_fh.emit(&mut rest_fh),
        packet.get(..at),
        packet.get(split_at..total),
    ) else {
        return Stamped::Untouched(packet, Skip::Unparsable);
    };
    let second_len = data + rest.len();
    let mut second = Vec::with_capacity(second_len);
    second.extend_from_slice(head);
    second.extend_from_slice(&rest_fh);
    second.extend_from_slice(rest);
    set_payload_len(&mut second, second_len);

    packet.truncate(split_at);
    if let Some(dst) = packet.get_mut(at..data) {
        // Cannot fail: the offset is 0.
        let _ = lead_fh.emit(dst);
    }
    set_payload_len(&mut packet, split_at);
    Stamped::Split(packet, second)
}

/// Whether a leading fragment whose fragmentable part starts at `data_start`
/// and is `l` bytes long holds the extension headers of that part plus
/// `min_len` bytes of the upper-layer header (RFC 7112). Without an upper
/// layer in reach (cannot happen for offset 0) nothing is required.
fn chain_fits(config: &StampConfig, lay: &Ipv6Layout, data_start: usize, l: usize) -> bool {
    match lay.upper {
        Some((_, at)) => l >= at.saturating_sub(data_start) + usize::from(config.scale.min_len),
        None => true,
    }
}

/// Points the last unfragmentable Next Header at the new Fragment header and
/// sets the payload length for a piece of `len` bytes.
fn finish(piece: &mut [u8], next_header_field: usize, len: usize) {
    if let Some(b) = piece.get_mut(next_header_field) {
        *b = NEXT_HEADER_FRAGMENT;
    }
    set_payload_len(piece, len);
}

fn set_payload_len(piece: &mut [u8], len: usize) {
    // len ≤ the original 40 + payload_len, so the payload length fits a u16.
    Ipv6Packet::new_unchecked(piece).set_payload_len((len - HEADER_LEN) as u16);
}

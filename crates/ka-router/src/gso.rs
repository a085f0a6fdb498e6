//! TCP super-packets (generic segmentation offload, DESIGN §8.5): one
//! buffer carrying many TCP segments of one flow, as a TUN device opened
//! with offloads hands them over (a `virtio_net_hdr` with `gso_size`) and
//! takes them back.
//!
//! A super-packet is an IP packet whose payload is the concatenation of the
//! payloads of `segments` TCP segments, each `size` bytes except perhaps
//! the last, behind one copy of the IP and TCP headers (those of the first
//! segment, with the total length of the whole). [`Gso`] is that view of a
//! parsed packet; [`piece`] and [`segments`] cut it as the kernel's
//! segmentation does (`tcp_gso_segment`): sequence numbers advance by the
//! payload, the IPv4 identification by one per segment, CWR stays on the
//! first segment only, FIN and PSH on the last only, and every length and
//! checksum is rewritten.
//!
//! A [`Port`](crate::Port) takes a super-packet whole
//! ([`Port::push_gso`](crate::Port::push_gso)) when nothing in it needs a
//! per-packet decision, and otherwise cuts it here; the simulator never
//! makes one.

use std::time::Duration;

use ka_codec::wire::Layout;
use ka_codec::wire::checksum;

/// The longest a super-packet may occupy the link in one piece: a port
/// whose capacity would serialise more than this cuts it into smaller
/// super-packets (or plain segments) first.
///
/// Why 100 µs: a super-packet leaves the delay line as one unit at the end
/// of its serialisation, so its segments depart up to its serialisation
/// time later than per-segment pacing would release the first of them. The
/// gateway's own release precision is already of that order (a writer
/// thread wakes in tens of microseconds; an unspun wake-up takes
/// 50–500 µs: docs/PERFORMANCE.md, "Pacing on a busy host"), so pieces
/// within 100 µs add no lumpiness the shell does not have anyway. A whole
/// 64 KB super-packet fits it from 5.3 Gbit/s up; at 1 Gbit/s pieces of 8
/// segments do.
pub const MAX_BURST: Duration = Duration::from_micros(100);

/// IPv4 header: total length, identification, header checksum.
const V4_TOTAL_LEN: usize = 2;
const V4_IDENT: usize = 4;
const V4_CHECKSUM: usize = 10;
/// IPv6 header: payload length.
const V6_PAYLOAD_LEN: usize = 4;
const V6_HEADER: usize = 40;
/// TCP header: sequence number, flags, checksum.
const TCP_SEQ: usize = 4;
const TCP_FLAGS: usize = 13;
const TCP_CHECKSUM: usize = 16;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const CWR: u8 = 0x80;

/// A parsed packet seen as a TCP super-packet (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gso {
    size: u16,
    /// IP + TCP header bytes, repeated in every segment.
    hdr_len: u16,
    /// Where TCP starts.
    l4_at: u16,
    segments: u16,
}

impl Gso {
    /// `packet` (whose parse is `layout`) as a super-packet of segments of
    /// `size` payload bytes (`virtio_net_hdr.gso_size`). `None` unless it
    /// is TCP over IPv4 or over IPv6 without extension headers, not a
    /// fragment, its IP length is its buffer's, and it carries at least one
    /// byte of payload.
    pub fn new(packet: &[u8], layout: &Layout, size: u16) -> Option<Self> {
        if size == 0 || !layout.is_tcp() || layout.is_fragment() {
            return None;
        }
        if layout.total_len() != packet.len() {
            return None;
        }
        let l4_at = layout.l4_offset()?;
        if layout.is_ipv6() && l4_at != V6_HEADER {
            return None;
        }
        let hdr_len = l4_at.checked_add(layout.tcp_header_len())?;
        let payload = packet.len().checked_sub(hdr_len)?;
        if payload == 0 {
            return None;
        }
        let segments = payload.div_ceil(usize::from(size));
        Some(Self {
            size,
            hdr_len: u16::try_from(hdr_len).ok()?,
            l4_at: u16::try_from(l4_at).ok()?,
            segments: u16::try_from(segments).ok()?,
        })
    }

    /// Payload bytes per segment (the last may carry fewer).
    pub fn size(self) -> u16 {
        self.size
    }

    /// The IP and TCP header bytes each segment carries.
    pub fn header_len(self) -> usize {
        usize::from(self.hdr_len)
    }

    /// How many segments it carries (at least 1).
    pub fn segments(self) -> u16 {
        self.segments
    }

    /// The bytes its segments take on the wire, headers included: what a
    /// port counts and serialises, the same as for the segments one by one
    /// (`packet_len`: the super-packet's length).
    pub fn wire_len(self, packet_len: usize) -> usize {
        packet_len + usize::from(self.segments.saturating_sub(1)) * self.header_len()
    }

    /// The IP length of segment `k` (`packet_len`: the super-packet's).
    pub fn segment_len(self, packet_len: usize, k: u16) -> usize {
        let (lo, hi) = self.payload_range(packet_len, k, k.saturating_add(1));
        self.header_len() + (hi - lo)
    }

    /// Payload bytes `lo..hi` (offsets into the payload) of segments
    /// `from..to`.
    fn payload_range(self, packet_len: usize, from: u16, to: u16) -> (usize, usize) {
        let payload = packet_len.saturating_sub(self.header_len());
        let size = usize::from(self.size);
        let lo = (usize::from(from) * size).min(payload);
        let hi = (usize::from(to) * size).min(payload);
        (lo, hi)
    }
}

/// The packet carrying segments `from..to` (`from < to ≤ segments`) of
/// super-packet `packet` (viewed as `gso`): for one segment a plain packet
/// with every header field and checksum as the kernel's segmentation
/// writes them; for more a smaller super-packet with its view (its IPv4
/// header checksum is valid; its TCP checksum is the device's to fill, as
/// for any super-packet written with offloads). `None` if the range is
/// empty or out of bounds or `packet` is not the one `gso` describes.
pub fn piece(packet: &[u8], gso: Gso, from: u16, to: u16) -> Option<(Vec<u8>, Option<Gso>)> {
    if from >= to || to > gso.segments {
        return None;
    }
    let payload_len = packet.len().checked_sub(gso.header_len())?;
    if payload_len.div_ceil(usize::from(gso.size)) != usize::from(gso.segments) {
        return None;
    }
    let hdr = packet.get(..gso.header_len())?;
    let (lo, hi) = gso.payload_range(packet.len(), from, to);
    let payload = packet.get(gso.header_len() + lo..gso.header_len() + hi)?;
    let mut out = Vec::with_capacity(hdr.len() + payload.len());
    out.extend_from_slice(hdr);
    out.extend_from_slice(payload);
    let l4 = usize::from(gso.l4_at);
    let ip_len = out.len();
    // IP: lengths, identification, header checksum.
    match out.first().map(|b| b >> 4) {
        Some(4) => {
            put16(&mut out, V4_TOTAL_LEN, u16::try_from(ip_len).ok()?)?;
            let id = get16(&out, V4_IDENT)?.wrapping_add(from);
            put16(&mut out, V4_IDENT, id)?;
            put16(&mut out, V4_CHECKSUM, 0)?;
            let c = checksum::checksum(out.get(..l4)?);
            put16(&mut out, V4_CHECKSUM, c)?;
        }
        Some(6) => put16(
            &mut out,
            V6_PAYLOAD_LEN,
            u16::try_from(ip_len - V6_HEADER).ok()?,
        )?,
        _ => return None,
    }
    // TCP: sequence number, flags.
    let seq_at = l4 + TCP_SEQ;
    let seq = u32::from_be_bytes(*out.get(seq_at..seq_at + 4)?.first_chunk::<4>()?);
    let seq = seq.wrapping_add(u32::try_from(lo).ok()?);
    out.get_mut(seq_at..seq_at + 4)?
        .copy_from_slice(&seq.to_be_bytes());
    let flags = out.get_mut(l4 + TCP_FLAGS)?;
    if from > 0 {
        *flags &= !CWR;
    }
    if to < gso.segments {
        *flags &= !(FIN | PSH);
    }
    if to - from > 1 {
        let view = Gso {
            segments: to - from,
            ..gso
        };
        return Some((out, Some(view)));
    }
    // One segment: its TCP checksum in full.
    let tcp_len = u32::try_from(ip_len - l4).ok()?;
    let pseudo = if l4 == V6_HEADER && out.first().map(|b| b >> 4) == Some(6) {
        let src: [u8; 16] = *out.get(8..24)?.first_chunk()?;
        let dst: [u8; 16] = *out.get(24..40)?.first_chunk()?;
        checksum::pseudo_v6(src, dst, 6, tcp_len)
    } else {
        let src: [u8; 4] = *out.get(12..16)?.first_chunk()?;
        let dst: [u8; 4] = *out.get(16..20)?.first_chunk()?;
        checksum::pseudo_v4(src, dst, 6, tcp_len)
    };
    put16(&mut out, l4 + TCP_CHECKSUM, 0)?;
    let c = checksum::finish(checksum::sum(out.get(l4..)?, pseudo));
    put16(&mut out, l4 + TCP_CHECKSUM, c)?;
    Some((out, None))
}

/// Every segment of super-packet `packet` as a plain packet, in order
/// ([`piece`] of each).
pub fn segments(packet: &[u8], gso: Gso) -> impl Iterator<Item = Vec<u8>> + '_ {
    (0..gso.segments).filter_map(move |k| piece(packet, gso, k, k + 1).map(|(p, _)| p))
}

fn get16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..at + 2)?.first_chunk()?))
}

fn put16(b: &mut [u8], at: usize, v: u16) -> Option<()> {
    b.get_mut(at..at + 2)?.copy_from_slice(&v.to_be_bytes());
    Some(())
}

#[cfg(test)]
mod tests;

//! FQ-CoDel's flow classifier: which of the `flows` queues a packet joins
//! (RFC 8290 §4.1.1, "Flow hashing").
//!
//! **Key.** What Linux's flow dissector extracts for `fq_codel` (without
//! `FLOW_DISSECTOR_F_PARSE_1ST_FRAG`):
//!
//! | packet | key |
//! |---|---|
//! | IPv4 / IPv6, TCP or UDP, not a fragment, ports present | addresses, protocol, ports (the 5-tuple) |
//! | IPv4 fragment (MF set or offset ≠ 0) | addresses, protocol |
//! | IPv6 with a Fragment header | addresses, protocol 44 (Fragment) |
//! | IP, another protocol, or TCP/UDP too short for its ports | addresses, protocol |
//! | IPv6 whose extension-header chain cannot be walked | addresses, first Next Header |
//! | anything else (non-IP, malformed) | the first [`RAW_KEY_BYTES`] bytes |
//!
//! All pieces of a fragmented datagram therefore share one queue (only the
//! first carries the ports), so FQ-CoDel never reorders them against each
//! other. A KA router upstream splits packets on purpose (DESIGN §3.4):
//! its fragments share the queue of all fragmented traffic between the two
//! hosts, as they would on Linux.
//!
//! **Hash.** The key is at most five 64-bit words. They are folded into a
//! 64-bit state that starts at the per-port secret (`state ← (state ⊕ word)
//! · K`, then a 32-bit fold), and the result goes through the SplitMix64
//! finaliser with the secret added again. The top 32 bits pick the queue by
//! multiply-shift (`(h · flows) >> 32`, Linux's `reciprocal_scale`), so no
//! division is done per packet. This is a fast keyed mix, not a PRF like
//! the SipHash Linux uses: the secret (drawn from the port's seed) makes
//! the flow → queue map differ between ports and runs, so two flows do not
//! collide everywhere, but an attacker who can measure collisions on one
//! port could learn them. That is the threat model of the perturbation in
//! RFC 8290 §4.1.1 ("to prevent ... deliberate hash collisions" is out of
//! scope there too), at a fraction of SipHash's per-packet cost.
//!
//! Every header field is read through `ka_codec::wire` views or `get`:
//! never panics on any bytes.

use ka_codec::wire::ipv4;
use ka_codec::wire::ipv6::{self, Ipv6Packet};

use super::rng::mix64;

/// Bytes of a packet that is not a well-formed IP header that the key
/// takes (an IPv6 header's worth).
pub const RAW_KEY_BYTES: usize = 40;

/// Multiplier of the word fold (the 64-bit golden ratio, odd).
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Domain tags so that keys of different kinds never coincide by layout.
const TAG_V4: u64 = 4 << 56;
const TAG_V6: u64 = 6 << 56;
const TAG_RAW: u64 = 0xFF << 56;

/// The 64-bit keyed hash of `packet`'s flow key (see the module docs).
#[inline]
pub(crate) fn flow_hash(secret: u64, packet: &[u8]) -> u64 {
    let mut h = Folder::new(secret);
    match ka_codec::wire::ip_version(packet) {
        Some(4) => {
            // The per-packet path. Exactly the checks of
            // `Ipv4Packet::new_checked` (a test holds them equal), made on
            // one 20-byte array so each field read is not bounds-checked
            // again.
            if let Some(fixed) = packet.first_chunk::<20>() {
                let hl = usize::from(fixed[0] & 0x0F) * 4;
                let total = usize::from(u16::from_be_bytes([fixed[2], fixed[3]]));
                if hl >= ipv4::MIN_HEADER_LEN && hl <= total && total <= packet.len() {
                    let proto = fixed[9];
                    let fragment = u16::from_be_bytes([fixed[6], fixed[7]]) & 0x3FFF != 0;
                    let ports = if fragment {
                        None
                    } else {
                        ports(proto, packet.get(hl..total).unwrap_or(&[]))
                    };
                    let [.., a0, a1, a2, a3, a4, a5, a6, a7] = *fixed;
                    h.word(u64::from_be_bytes([a0, a1, a2, a3, a4, a5, a6, a7]));
                    h.word(TAG_V4 | tail(proto, ports));
                    return h.finish(secret);
                }
            }
        }
        Some(6) => {
            if let Ok(p) = Ipv6Packet::new_checked(packet) {
                let (proto, ports) = match ipv6::layout(packet) {
                    Ok(l) if l.fragment.is_some() => (ipv6::NEXT_HEADER_FRAGMENT, None),
                    Ok(l) => match l.upper {
                        Some((proto, at)) => {
                            (proto, ports(proto, p.packet().get(at..).unwrap_or(&[])))
                        }
                        None => (p.next_header(), None),
                    },
                    Err(_) => (p.next_header(), None),
                };
                let (s, d) = (p.src_addr(), p.dst_addr());
                for half in [&s[..8], &s[8..], &d[..8], &d[8..]] {
                    h.word(word(half));
                }
                h.word(TAG_V6 | tail(proto, ports));
                return h.finish(secret);
            }
        }
        _ => {}
    }
    let raw = packet.get(..RAW_KEY_BYTES).unwrap_or(packet);
    for chunk in raw.chunks(8) {
        h.word(word(chunk));
    }
    h.word(TAG_RAW | raw.len() as u64);
    h.finish(secret)
}

/// The queue index in `0..flows` for hash `h` (multiply-shift on the top
/// 32 bits; `flows` ≤ 2³²).
#[inline]
pub(crate) fn bucket(h: u64, flows: usize) -> usize {
    (((h >> 32) * flows as u64) >> 32) as usize
}

/// Source and destination port of a TCP or UDP header at the start of
/// `l4`, if it is long enough to hold them (both keep them in bytes 0..4).
fn ports(proto: u8, l4: &[u8]) -> Option<u32> {
    if proto != ipv4::PROTO_TCP && proto != ipv4::PROTO_UDP {
        return None;
    }
    let b: [u8; 4] = l4.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(b))
}

/// The last key word: protocol, whether ports are present, the ports.
fn tail(proto: u8, ports: Option<u32>) -> u64 {
    let p = u64::from(proto) << 40;
    match ports {
        Some(ports) => p | 1 << 32 | u64::from(ports),
        None => p,
    }
}

/// Up to 8 bytes, big-endian, zero-padded.
#[inline]
fn word(bytes: &[u8]) -> u64 {
    if let Ok(b) = <[u8; 8]>::try_from(bytes) {
        return u64::from_be_bytes(b);
    }
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(bytes) {
        *d = *s;
    }
    u64::from_be_bytes(b)
}

/// The word fold.
struct Folder(u64);

impl Folder {
    fn new(secret: u64) -> Self {
        Self(secret)
    }

    #[inline]
    fn word(&mut self, w: u64) {
        let x = (self.0 ^ w).wrapping_mul(K);
        self.0 = x ^ (x >> 32);
    }

    #[inline]
    fn finish(self, secret: u64) -> u64 {
        mix64(self.0.wrapping_add(secret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(proto: u8, frag: (bool, u16), payload: &[u8]) -> Vec<u8> {
        let total = 20 + payload.len();
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        let fo = (u16::from(frag.0) << 13) | frag.1;
        b[6..8].copy_from_slice(&fo.to_be_bytes());
        b[8] = 64;
        b[9] = proto;
        b[12..16].copy_from_slice(&[10, 0, 0, 1]);
        b[16..20].copy_from_slice(&[10, 0, 0, 2]);
        b[20..].copy_from_slice(payload);
        b
    }

    fn udp(sport: u16, dport: u16, len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len.max(8)];
        p[..2].copy_from_slice(&sport.to_be_bytes());
        p[2..4].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn word_pads_short_chunks() {
        assert_eq!(word(&[1, 2]), 0x0102_0000_0000_0000);
        assert_eq!(word(&[1, 2, 3, 4, 5, 6, 7, 8]), 0x0102_0304_0506_0708);
        assert_eq!(word(&[]), 0);
    }

    #[test]
    fn five_tuple_decides_and_payload_does_not() {
        let s = 7;
        let a = flow_hash(s, &v4(17, (false, 0), &udp(1000, 53, 100)));
        let mut other_payload = udp(1000, 53, 100);
        other_payload[50] = 9;
        assert_eq!(a, flow_hash(s, &v4(17, (false, 0), &other_payload)));
        assert_ne!(a, flow_hash(s, &v4(17, (false, 0), &udp(1001, 53, 100))));
        assert_ne!(a, flow_hash(s, &v4(17, (false, 0), &udp(1000, 54, 100))));
        assert_ne!(a, flow_hash(s, &v4(6, (false, 0), &udp(1000, 53, 100))));
        // The secret changes the hash.
        assert_ne!(
            a,
            flow_hash(s + 1, &v4(17, (false, 0), &udp(1000, 53, 100)))
        );
    }

    #[test]
    fn fragments_of_a_datagram_share_a_key() {
        let s = 3;
        // First piece (MF, offset 0) carries the ports, the second does not:
        // both hash on addresses + protocol.
        let first = flow_hash(s, &v4(6, (true, 0), &udp(1000, 80, 64)));
        let rest = flow_hash(s, &v4(6, (false, 8), &[0xEE; 40]));
        assert_eq!(first, rest);
        // ... which is not the unfragmented packet's 5-tuple key.
        assert_ne!(first, flow_hash(s, &v4(6, (false, 0), &udp(1000, 80, 64))));
        // A TCP header too short for ports hashes like a fragment.
        assert_eq!(first, flow_hash(s, &v4(6, (false, 0), &[1, 2, 3])));
    }

    #[test]
    fn ipv6_five_tuple_and_fragment_header() {
        let v6 = |next: u8, body: &[u8]| {
            let mut b = vec![0u8; 40 + body.len()];
            b[0] = 0x60;
            b[4..6].copy_from_slice(&(body.len() as u16).to_be_bytes());
            b[6] = next;
            b[7] = 64;
            b[8] = 0x20;
            b[39] = 2;
            b[40..].copy_from_slice(body);
            b
        };
        let s = 11;
        let a = flow_hash(s, &v6(17, &udp(5, 6, 20)));
        assert_ne!(a, flow_hash(s, &v6(17, &udp(5, 7, 20))));
        // Fragment header (next = UDP), first piece with ports and a later
        // piece without: same key.
        let frag = |off_units: u16, more: bool, body: &[u8]| {
            let mut f = vec![17u8, 0];
            f.extend_from_slice(&((off_units << 3) | u16::from(more)).to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 9]);
            f.extend_from_slice(body);
            v6(44, &f)
        };
        let f1 = flow_hash(s, &frag(0, true, &udp(5, 6, 16)));
        let f2 = flow_hash(s, &frag(2, false, &[0xAA; 16]));
        assert_eq!(f1, f2);
        assert_ne!(f1, a);
    }

    #[test]
    fn the_ipv4_fast_path_accepts_what_the_view_accepts() {
        // Headers around every boundary of IHL, total length and buffer
        // length: the fast path hashes as IPv4 (not raw) exactly when
        // `Ipv4Packet::new_checked` accepts.
        use ka_codec::wire::ipv4::Ipv4Packet;
        for ihl in 0..16u8 {
            for total in [0usize, 19, 20, 23, 24, 59, 60, 61, 64, 80] {
                for len in [19usize, 20, 24, 60, 64, 80] {
                    let mut b = vec![0u8; len];
                    b[0] = 0x40 | ihl;
                    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                    b[9] = 17;
                    let view_ok = Ipv4Packet::new_checked(&b[..]).is_ok();
                    // Raw hashing covers the first 40 bytes: change a byte
                    // past them that an IPv4 key ignores (payload beyond
                    // the ports) or, for short buffers, compare with the
                    // raw key directly.
                    let mut raw = Folder::new(5);
                    let r = b.get(..RAW_KEY_BYTES).unwrap_or(&b);
                    for c in r.chunks(8) {
                        raw.word(word(c));
                    }
                    raw.word(TAG_RAW | r.len() as u64);
                    let is_raw = flow_hash(5, &b) == raw.finish(5);
                    assert_eq!(view_ok, !is_raw, "ihl {ihl} total {total} len {len}");
                }
            }
        }
    }

    #[test]
    fn anything_hashes_without_panicking() {
        for len in 0..80 {
            for first in [0x00, 0x45, 0x4F, 0x60, 0x6F, 0xFF] {
                let mut b: Vec<u8> = (0..len).map(|i| (i * 37) as u8).collect();
                if let Some(x) = b.first_mut() {
                    *x = first;
                }
                let h = flow_hash(1, &b);
                assert!(bucket(h, 1024) < 1024);
            }
        }
        // Non-IP bytes hash on content.
        assert_ne!(flow_hash(1, &[0x10, 1, 2]), flow_hash(1, &[0x10, 1, 3]));
    }

    #[test]
    fn buckets_spread_evenly() {
        // 64 k distinct 5-tuples over 1024 buckets: every bucket gets
        // 64 ± a few standard deviations (√64 = 8).
        let mut counts = vec![0u32; 1024];
        for sport in 0..256u16 {
            for dport in 0..256u16 {
                let h = flow_hash(0xABCD, &v4(17, (false, 0), &udp(sport, dport, 8)));
                counts[bucket(h, 1024)] += 1;
            }
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min >= 64 - 40 && *max <= 64 + 40, "min {min} max {max}");
    }
}

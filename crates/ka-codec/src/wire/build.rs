//! Whole TCP segments in IPv4 or IPv6, with valid checksums, in one call:
//! what tests, benchmarks and fuzz seeds feed a router or an endpoint, and
//! what a host embedding the codec sends.
//!
//! A [`TcpSegment`] names the addresses (their family picks the IP
//! version), a few IP header fields, IP options (IPv4) or one Destination
//! Options header (IPv6), the TCP header as a [`TcpRepr`], raw TCP option
//! bytes after the ones `TcpRepr` encodes (for options it has no field for,
//! malformed ones included), and the payload. [`TcpSegment::emit`] writes
//! it into a caller's buffer without allocating; with the `std` feature,
//! [`TcpSegment::to_vec`] returns it.
//!
//! ```
//! use ka_codec::wire::build::{Addrs, TcpSegment};
//! use ka_codec::wire::ipv4::Ipv4Packet;
//! use ka_codec::wire::tcp::{ACK, TcpRepr};
//!
//! let tcp = TcpRepr {
//!     src_port: 40_000,
//!     dst_port: 80,
//!     flags: ACK,
//!     window: 512,
//!     ..TcpRepr::default()
//! };
//! let seg = TcpSegment {
//!     dont_frag: true,
//!     payload: b"hello",
//!     ..TcpSegment::new(Addrs::V4([10, 0, 0, 1], [10, 0, 0, 2]), tcp)
//! };
//! let mut buf = [0u8; 64];
//! let n = seg.emit(&mut buf).unwrap();
//! assert_eq!(n, 20 + 20 + 5);
//! let ip = Ipv4Packet::new_checked(&buf[..n]).unwrap();
//! assert!(ip.verify_checksum() && ip.dont_frag());
//! ```

use super::checksum::{pseudo_v4, pseudo_v6};
use super::ipv4::{self, Ipv4Packet, Ipv4Repr, PROTO_TCP};
use super::ipv6::{self, Ipv6Packet};
use super::tcp::{self, TcpPacket, TcpRepr};
use super::{WireError, put_bytes, put8};

/// The source and destination addresses of a segment; the variant is the
/// IP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Addrs {
    /// IPv4: source, destination.
    V4([u8; 4], [u8; 4]),
    /// IPv6: source, destination.
    V6([u8; 16], [u8; 16]),
}

/// Everything that makes one TCP segment in an IP packet. Start from
/// [`TcpSegment::new`] and set the fields that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    /// Addresses, and with them the IP version.
    pub addrs: Addrs,
    /// IPv4 Time To Live / IPv6 Hop Limit.
    pub ttl: u8,
    /// IPv4 DSCP/ECN byte / IPv6 Traffic Class.
    pub dscp_ecn: u8,
    /// IPv4 Identification (ignored for IPv6).
    pub ident: u16,
    /// IPv4 Don't Fragment (ignored for IPv6).
    pub dont_frag: bool,
    /// IPv4: the options area, padded with zeros (End of Option List) to a
    /// multiple of 4 bytes, at most 40. IPv6: the options of a Destination
    /// Options header placed before TCP, padded with Pad1/PadN to a
    /// multiple of 8 bytes with the header's own 2; empty: no such header.
    pub ip_options: &'a [u8],
    /// The TCP header and its options; its checksum is computed here.
    pub tcp: TcpRepr,
    /// Bytes written after `tcp.options`' encoding, as they are; the whole
    /// options area is padded with zeros to a multiple of 4 bytes, at most
    /// 40.
    pub raw_tcp_options: &'a [u8],
    /// The TCP payload.
    pub payload: &'a [u8],
}

/// `n` rounded up to a multiple of `to`.
fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

impl<'a> TcpSegment<'a> {
    /// A segment from `addrs`'s source to its destination with header
    /// `tcp`: no payload, no IP options, TTL 64, DSCP/ECN 0,
    /// identification 0, DF clear.
    pub fn new(addrs: Addrs, tcp: TcpRepr) -> Self {
        TcpSegment {
            addrs,
            ttl: 64,
            dscp_ecn: 0,
            ident: 0,
            dont_frag: false,
            ip_options: &[],
            tcp,
            raw_tcp_options: &[],
            payload: &[],
        }
    }

    /// The IP header's length with its options or extension header.
    fn ip_header_len(&self) -> Result<usize, WireError> {
        match self.addrs {
            Addrs::V4(..) => {
                let len = ipv4::MIN_HEADER_LEN + round_up(self.ip_options.len(), 4);
                if len > ipv4::MAX_HEADER_LEN {
                    return Err(WireError::BadHeaderLen);
                }
                Ok(len)
            }
            Addrs::V6(..) => Ok(ipv6::HEADER_LEN + self.v6_ext_len()?),
        }
    }

    /// The length of the IPv6 Destination Options header (0 without one).
    fn v6_ext_len(&self) -> Result<usize, WireError> {
        if self.ip_options.is_empty() {
            return Ok(0);
        }
        let len = round_up(2 + self.ip_options.len(), 8);
        // Hdr Ext Len counts 8-byte units after the first, in one byte.
        if len / 8 - 1 > usize::from(u8::MAX) {
            return Err(WireError::BadHeaderLen);
        }
        Ok(len)
    }

    /// The TCP header's length with both kinds of options.
    fn tcp_header_len(&self) -> Result<usize, WireError> {
        let options = self.tcp.options.encoded_len() + self.raw_tcp_options.len();
        let len = tcp::HEADER_LEN + round_up(options, 4);
        if len > tcp::MAX_HEADER_LEN {
            return Err(WireError::BadHeaderLen);
        }
        Ok(len)
    }

    /// The length of the whole packet [`emit`](Self::emit) writes.
    pub fn total_len(&self) -> Result<usize, WireError> {
        Ok(self.ip_header_len()? + self.tcp_header_len()? + self.payload.len())
    }

    /// Writes the packet into `buf[..total_len()]` and returns its length.
    /// Errors: `BufferTooSmall` if `buf` is shorter, `BadHeaderLen` if the
    /// IP or TCP options do not fit their header, `BadTotalLen` if the
    /// packet is longer than the IP length field can say.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let ip_len = self.ip_header_len()?;
        let tcp_len = self.tcp_header_len()? + self.payload.len();
        let total = ip_len + tcp_len;
        let out = buf.get_mut(..total).ok_or(WireError::BufferTooSmall)?;
        let seg_len = u32::try_from(tcp_len).map_err(|_| WireError::BadTotalLen)?;
        let pseudo = match self.addrs {
            Addrs::V4(src, dst) => {
                self.emit_ipv4(out, src, dst, ip_len)?;
                pseudo_v4(src, dst, PROTO_TCP, seg_len)
            }
            Addrs::V6(src, dst) => {
                self.emit_ipv6(out, src, dst, ip_len)?;
                pseudo_v6(src, dst, PROTO_TCP, seg_len)
            }
        };
        let seg = out.get_mut(ip_len..).ok_or(WireError::BufferTooSmall)?;
        self.emit_tcp(seg, pseudo)?;
        Ok(total)
    }

    /// The packet in a new vector (see [`emit`](Self::emit) for the errors).
    #[cfg(feature = "std")]
    pub fn to_vec(&self) -> Result<std::vec::Vec<u8>, WireError> {
        let mut buf = std::vec![0u8; self.total_len()?];
        self.emit(&mut buf)?;
        Ok(buf)
    }

    /// The IPv4 header of the `out.len()`-byte packet, `hl` bytes with the
    /// options.
    fn emit_ipv4(
        &self,
        out: &mut [u8],
        src: [u8; 4],
        dst: [u8; 4],
        hl: usize,
    ) -> Result<(), WireError> {
        Ipv4Repr {
            src,
            dst,
            protocol: PROTO_TCP,
            ttl: self.ttl,
            ident: self.ident,
            dont_frag: self.dont_frag,
            more_frags: false,
            frag_offset: 0,
            dscp_ecn: self.dscp_ecn,
            payload_len: out.len() - Ipv4Repr::HEADER_LEN,
        }
        .emit(out)?;
        if hl > Ipv4Repr::HEADER_LEN {
            put8(out, 0, 0x40 | (hl / 4) as u8);
            let area = out
                .get_mut(Ipv4Repr::HEADER_LEN..hl)
                .ok_or(WireError::BufferTooSmall)?;
            area.fill(0);
            put_bytes(area, 0, self.ip_options);
            Ipv4Packet::new_unchecked(out).fill_checksum();
        }
        Ok(())
    }

    /// The IPv6 header of the `out.len()`-byte packet and, if there are
    /// options, the Destination Options header: `hl` bytes together.
    fn emit_ipv6(
        &self,
        out: &mut [u8],
        src: [u8; 16],
        dst: [u8; 16],
        hl: usize,
    ) -> Result<(), WireError> {
        let payload_len = out.len() - ipv6::HEADER_LEN;
        let payload_len = u16::try_from(payload_len).map_err(|_| WireError::BadTotalLen)?;
        let ext = hl - ipv6::HEADER_LEN;
        let mut ip = Ipv6Packet::new_unchecked(&mut *out);
        ip.set_version_class_flow(self.dscp_ecn, 0);
        ip.set_payload_len(payload_len);
        ip.set_next_header(if ext > 0 {
            ipv6::NEXT_HEADER_DEST_OPTS
        } else {
            PROTO_TCP
        });
        ip.set_hop_limit(self.ttl);
        ip.set_src_addr(src);
        ip.set_dst_addr(dst);
        if ext > 0 {
            let header = out
                .get_mut(ipv6::HEADER_LEN..hl)
                .ok_or(WireError::BufferTooSmall)?;
            header.fill(0);
            put8(header, 0, PROTO_TCP);
            put8(header, 1, (ext / 8 - 1) as u8);
            put_bytes(header, 2, self.ip_options);
            // RFC 8200 §4.2: one byte of padding is Pad1 (a zero byte),
            // more is PadN (type 1, length, zeros).
            let used = 2 + self.ip_options.len();
            if ext - used >= 2 {
                put8(header, used, 1);
                put8(header, used + 1, (ext - used - 2) as u8);
            }
        }
        Ok(())
    }

    /// The TCP header, both kinds of options, the payload and the
    /// checksum, into `seg` (exactly the segment's length).
    fn emit_tcp(&self, seg: &mut [u8], pseudo: u32) -> Result<(), WireError> {
        let hl = self.tcp_header_len()?;
        self.tcp.emit(seg, &[], 0)?;
        put8(seg, 12, ((hl / 4) as u8) << 4);
        let raw = seg
            .get_mut(self.tcp.header_len()..hl)
            .ok_or(WireError::BufferTooSmall)?;
        raw.fill(0);
        put_bytes(raw, 0, self.raw_tcp_options);
        seg.get_mut(hl..)
            .ok_or(WireError::BufferTooSmall)?
            .copy_from_slice(self.payload);
        TcpPacket::new_unchecked(seg).fill_checksum(pseudo);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv6::layout;
    use crate::wire::tcp::{ACK, SYN, TcpOptions};
    use std::vec;
    use std::vec::Vec;

    const A4: [u8; 4] = [10, 0, 0, 1];
    const B4: [u8; 4] = [10, 0, 0, 2];
    const A6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const B6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

    fn syn() -> TcpRepr {
        TcpRepr {
            src_port: 40_000,
            dst_port: 5001,
            seq: 7,
            ack: 0,
            flags: SYN,
            window: 65_535,
            urgent: 0,
            options: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((1, 2)),
                ..TcpOptions::default()
            },
        }
    }

    /// The TCP segment of an emitted packet, with its checksum checked.
    fn tcp_of(p: &[u8]) -> (TcpRepr, Vec<u8>) {
        let (at, pseudo) = if p[0] >> 4 == 4 {
            let ip = Ipv4Packet::new_checked(p).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(ip.total_len(), p.len());
            let len = (p.len() - ip.header_len()) as u32;
            let pseudo = pseudo_v4(ip.src_addr(), ip.dst_addr(), 6, len);
            (ip.header_len(), pseudo)
        } else {
            let ip = Ipv6Packet::new_checked(p).unwrap();
            assert_eq!(ip.total_len(), p.len());
            let (proto, at) = layout(p).unwrap().upper.unwrap();
            assert_eq!(proto, 6);
            let pseudo = pseudo_v6(ip.src_addr(), ip.dst_addr(), 6, (p.len() - at) as u32);
            (at, pseudo)
        };
        let t = TcpPacket::new_checked(&p[at..]).unwrap();
        assert!(t.verify_checksum(pseudo), "TCP checksum");
        (TcpRepr::parse(&t).unwrap(), t.payload().to_vec())
    }

    #[test]
    fn ipv4_segment_round_trips() {
        let seg = TcpSegment {
            ident: 9,
            dont_frag: true,
            dscp_ecn: 2,
            ttl: 3,
            payload: b"abc",
            ..TcpSegment::new(Addrs::V4(A4, B4), syn())
        };
        let p = seg.to_vec().unwrap();
        assert_eq!(p.len(), seg.total_len().unwrap());
        assert_eq!(p.len(), 20 + syn().header_len() + 3);
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&ip).unwrap(),
            Ipv4Repr {
                src: A4,
                dst: B4,
                protocol: 6,
                ttl: 3,
                ident: 9,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
                dscp_ecn: 2,
                payload_len: p.len() - 20,
            }
        );
        assert_eq!(tcp_of(&p), (syn(), b"abc".to_vec()));
    }

    #[test]
    fn ipv4_options_are_padded_and_covered_by_the_checksum() {
        let seg = TcpSegment {
            ip_options: &[1, 1, 1],
            ..TcpSegment::new(Addrs::V4(A4, B4), syn())
        };
        let p = seg.to_vec().unwrap();
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert_eq!(ip.header_len(), 24);
        assert_eq!(ip.options(), [1, 1, 1, 0]);
        assert_eq!(tcp_of(&p).0, syn());
        let long = TcpSegment {
            ip_options: &[1; 41],
            ..seg
        };
        assert_eq!(long.total_len(), Err(WireError::BadHeaderLen));
    }

    #[test]
    fn ipv6_with_and_without_a_destination_options_header() {
        let plain = TcpSegment {
            payload: &[5; 100],
            dscp_ecn: 1,
            ..TcpSegment::new(Addrs::V6(A6, B6), syn())
        };
        let p = plain.to_vec().unwrap();
        let ip = Ipv6Packet::new_checked(&p[..]).unwrap();
        assert_eq!((ip.next_header(), ip.hop_limit()), (6, 64));
        assert_eq!((ip.src_addr(), ip.dst_addr()), (A6, B6));
        assert_eq!(ip.traffic_class(), 1);
        assert_eq!(tcp_of(&p), (syn(), vec![5; 100]));
        // 2 + 3 option bytes: PadN of 3 to 8; 2 + 5: Pad1; 2 + 6: none
        for (opts, header) in [
            (&[9u8, 1, 0][..], [6, 0, 9, 1, 0, 1, 1, 0]),
            (&[9, 3, 0, 0, 0][..], [6, 0, 9, 3, 0, 0, 0, 0]),
            (&[1, 4, 0, 0, 0, 0][..], [6, 0, 1, 4, 0, 0, 0, 0]),
        ] {
            let p = TcpSegment {
                ip_options: opts,
                ..plain
            }
            .to_vec()
            .unwrap();
            assert_eq!(p[6], 60, "next header: destination options");
            assert_eq!(p[40..48], header);
            assert_eq!(tcp_of(&p), (syn(), vec![5; 100]));
        }
    }

    #[test]
    fn raw_tcp_options_follow_the_typed_ones() {
        let tcp = TcpRepr {
            flags: ACK,
            options: TcpOptions {
                timestamps: Some((3, 4)),
                ..TcpOptions::default()
            },
            ..syn()
        };
        let typed = tcp.options.encoded_len();
        let seg = TcpSegment {
            raw_tcp_options: &[253, 4, 0x4B, 0x41, 1],
            payload: b"xy",
            ..TcpSegment::new(Addrs::V4(A4, B4), tcp)
        };
        let p = seg.to_vec().unwrap();
        let t = TcpPacket::new_checked(&p[20..]).unwrap();
        assert_eq!(t.header_len(), 20 + typed + 8);
        assert_eq!(t.options()[typed..], [253, 4, 0x4B, 0x41, 1, 0, 0, 0]);
        let (parsed, payload) = tcp_of(&p);
        assert_eq!(
            (parsed.options.timestamps, payload),
            (Some((3, 4)), b"xy".to_vec())
        );
        let long = TcpSegment {
            raw_tcp_options: &[1; 40],
            ..seg
        };
        assert_eq!(long.to_vec(), Err(WireError::BadHeaderLen));
    }

    #[test]
    fn emit_needs_room_and_writes_no_further() {
        let seg = TcpSegment::new(Addrs::V4(A4, B4), syn());
        let n = seg.total_len().unwrap();
        let mut buf = vec![0xEE; n + 4];
        assert_eq!(seg.emit(&mut buf[..n - 1]), Err(WireError::BufferTooSmall));
        assert_eq!(seg.emit(&mut buf), Ok(n));
        assert_eq!(buf[n..], [0xEE; 4]);
        assert_eq!(buf[..n], seg.to_vec().unwrap()[..]);
        let huge = [0u8; 70_000];
        let big = TcpSegment {
            payload: &huge,
            ..seg
        };
        let mut out = vec![0u8; 80_000];
        assert_eq!(big.emit(&mut out), Err(WireError::BadTotalLen));
        let big6 = TcpSegment {
            addrs: Addrs::V6(A6, B6),
            ..big
        };
        assert_eq!(big6.emit(&mut out), Err(WireError::BadTotalLen));
    }
}

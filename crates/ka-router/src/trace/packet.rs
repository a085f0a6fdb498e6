//! One captured frame → the fields `ka-trace` reads: the link layer and
//! the IP header with `etherparse` (which reads captures cut short by a
//! snap length, too); the IPv6 extension chain with `ka_codec::wire`'s
//! bounded walk ([`ipv6::layout_lax`]: at most eight headers, never past
//! the bytes captured); the TCP header and every option with
//! `ka_codec::wire` (its TCP view and its one option walker), the KA, RCP
//! and XCP options by their `ka_codec` ExIDs and types.

use std::net::IpAddr;

use etherparse::{EtherType, LaxIpPayloadSlice, LaxNetSlice, LaxSlicedPacket};
use ka_codec::options::{KA_EXID, RCP_EXID, XCP_EXID};
use ka_codec::rcp_option::{self, RcpOption};
use ka_codec::wire::ipv6;
use ka_codec::wire::opts::{OptionIter, experiment};
use ka_codec::wire::tcp::TcpPacket;

/// `LINKTYPE_NULL` / `LINKTYPE_LOOP`: a 4-byte address family.
const LINKTYPE_NULL: u32 = 0;
const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_RAW: u32 = 101;
const LINKTYPE_LOOP: u32 = 108;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_IPV4: u32 = 228;
const LINKTYPE_IPV6: u32 = 229;
const LINKTYPE_LINUX_SLL2: u32 = 276;
/// Some platforms write `DLT_RAW` as 12 or 14.
const DLT_RAW_ALT: [u32; 2] = [12, 14];

/// Whether `ka-trace` can read frames of this link type.
pub fn supported_linktype(linktype: u32) -> bool {
    matches!(
        linktype,
        LINKTYPE_NULL
            | LINKTYPE_ETHERNET
            | LINKTYPE_RAW
            | LINKTYPE_LOOP
            | LINKTYPE_LINUX_SLL
            | LINKTYPE_IPV4
            | LINKTYPE_IPV6
            | LINKTYPE_LINUX_SLL2
    ) || DLT_RAW_ALT.contains(&linktype)
}

/// A native-RCP IPv4 option (type 30, DESIGN §7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcpOpt {
    /// Rate, bytes/s.
    pub rate_bytes_per_sec: u32,
    /// The sender's RTT, ms.
    pub rtt_ms: u16,
}

/// An XCP IPv4 option (type 94, DESIGN §7.2: `94, 14, H_cwnd u32, H_rtt
/// u32 µs, H_feedback i32, NOP, NOP`), as `ka_codec::xcp_option` parses
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XcpOpt {
    /// H_cwnd, bytes.
    pub cwnd: u32,
    /// H_rtt, µs.
    pub rtt_us: u32,
    /// H_feedback, bytes.
    pub feedback: i32,
}

/// The TCP fields `ka-trace` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpInfo {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number (0 if the header is cut short).
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flag bits (FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10).
    pub flags: u8,
    /// Payload bytes of the whole segment (for a leading fragment: of the
    /// reassembled segment, from the IP lengths it cannot know: `None`).
    pub payload_len: Option<usize>,
    /// Header complete (options parsed).
    pub full_header: bool,
    /// TCP header length from the data offset (0 if the header is cut
    /// before it or the offset is below 20).
    pub header_len: usize,
    /// KA-Permitted.
    pub ka_permitted: bool,
    /// KA-Rate echo: (code = L/8, count).
    pub ka_rate: Option<(u8, u8)>,
    /// RCP-Permitted.
    pub rcp_permitted: bool,
    /// RCP-Echo rate, bytes/s.
    pub rcp_echo: Option<u32>,
    /// XCP-Permitted (`253, 4, 0x58, 0x43`).
    pub xcp_permitted: bool,
    /// XCP feedback echo (`253, 8, 0x58, 0x43, i32`).
    pub xcp_echo: Option<i32>,
}

/// What `ka-trace` reads from one IP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketInfo {
    /// 4 or 6.
    pub version: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP total length (header's view).
    pub total_len: usize,
    /// IPv4 DF.
    pub df: bool,
    /// IPv4 identification or IPv6 fragment identification (0 if none).
    pub ident: u32,
    /// Fragment offset in bytes, when the packet is a fragment.
    pub frag_offset: Option<usize>,
    /// More fragments follow (IPv4 MF, IPv6 M).
    pub more_frags: bool,
    /// IP payload bytes (after the IPv4 header, or after the IPv6 Fragment
    /// header when there is one), by the header's lengths.
    pub ip_payload_len: usize,
    /// KA leading-fragment payload L (offset 0, more fragments).
    pub leading_len: Option<usize>,
    /// RTT-indicator k (DESIGN §2.2).
    pub indicator: Option<u8>,
    /// Upper-layer protocol (of the first fragment / whole packet).
    pub proto: u8,
    /// Native-RCP IPv4 option.
    pub rcp: Option<RcpOpt>,
    /// XCP IPv4 option.
    pub xcp: Option<XcpOpt>,
    /// TCP header, when this is the first piece of a TCP segment.
    pub tcp: Option<TcpInfo>,
}

/// The IP packet inside a frame of `linktype` (`None`: not IP, or a link
/// type `ka-trace` does not read).
pub fn decode(linktype: u32, data: &[u8]) -> Option<PacketInfo> {
    let sliced = match linktype {
        LINKTYPE_ETHERNET => LaxSlicedPacket::from_ethernet(data).ok()?,
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => LaxSlicedPacket::from_ip(data).ok()?,
        l if DLT_RAW_ALT.contains(&l) => LaxSlicedPacket::from_ip(data).ok()?,
        LINKTYPE_LINUX_SLL => {
            let proto = u16::from_be_bytes(data.get(14..16)?.try_into().ok()?);
            LaxSlicedPacket::from_ether_type(EtherType(proto), data.get(16..)?)
        }
        LINKTYPE_LINUX_SLL2 => {
            let proto = u16::from_be_bytes(data.get(0..2)?.try_into().ok()?);
            LaxSlicedPacket::from_ether_type(EtherType(proto), data.get(20..)?)
        }
        LINKTYPE_NULL | LINKTYPE_LOOP => LaxSlicedPacket::from_ip(data.get(4..)?).ok()?,
        _ => return None,
    };
    match sliced.net? {
        LaxNetSlice::Ipv4(v4) => {
            let h = v4.header();
            let off = usize::from(h.fragments_offset().byte_offset());
            let mf = h.more_fragments();
            let hl = usize::from(h.ihl()) * 4;
            let total_len = usize::from(h.total_len());
            let (rcp, xcp) = ip_options(h.options());
            let proto = h.protocol().0;
            let frag = off != 0 || mf;
            Some(PacketInfo {
                version: 4,
                src: IpAddr::from(h.source()),
                dst: IpAddr::from(h.destination()),
                total_len,
                df: h.dont_fragment(),
                ident: u32::from(h.identification()),
                frag_offset: frag.then_some(off),
                more_frags: mf,
                ip_payload_len: total_len.saturating_sub(hl),
                leading_len: (off == 0 && mf).then(|| total_len.saturating_sub(hl)),
                indicator: ka_codec::rtt::classify(total_len, h.dont_fragment()),
                proto,
                rcp,
                xcp,
                tcp: (off == 0 && proto == 6)
                    .then(|| tcp(v4.payload(), (!frag).then(|| total_len.saturating_sub(hl))))
                    .flatten(),
            })
        }
        LaxNetSlice::Ipv6(v6) => {
            let h = v6.header();
            let total_len = 40 + usize::from(h.payload_length());
            // The Fragment header from ka_codec's bounded walk over the
            // captured bytes: etherparse 0.21's extension iterator reads past
            // its slice when a lax parse stopped inside the chain (a crafted
            // or snapped capture), so it is never used here.
            let ip = ip_from(data, h.slice());
            let frag = ip
                .and_then(|ip| ipv6::layout_lax(ip).ok())
                .and_then(|l| l.fragment);
            let (ident, frag_offset, leading_len, more_frags, after_frag) = match &frag {
                Some((at, f)) => {
                    let off = f.offset;
                    let fragmenting = off != 0 || f.more_frags;
                    let after = total_len.saturating_sub(at + ipv6::FRAG_HEADER_LEN);
                    (
                        f.ident,
                        fragmenting.then_some(off),
                        (off == 0 && f.more_frags).then_some(after),
                        f.more_frags,
                        Some(after),
                    )
                }
                None => (0, None, None, false, None),
            };
            let p = v6.payload();
            let first = frag_offset.is_none_or(|o| o == 0);
            let proto = p.ip_number.0;
            Some(PacketInfo {
                version: 6,
                src: IpAddr::from(h.source()),
                dst: IpAddr::from(h.destination()),
                total_len,
                df: false,
                ident,
                frag_offset,
                more_frags,
                ip_payload_len: after_frag.unwrap_or(total_len.saturating_sub(40)),
                leading_len,
                indicator: if frag.is_none() {
                    ka_codec::rtt::classify_v6(total_len)
                } else {
                    None
                },
                proto,
                rcp: None,
                xcp: None,
                tcp: (first && proto == 6)
                    .then(|| tcp(p, frag_offset.is_none().then_some(p.payload.len())))
                    .flatten(),
            })
        }
        LaxNetSlice::Arp(_) => None,
    }
}

/// The captured bytes of the IP packet whose fixed header etherparse
/// handed back as `header` (a subslice of `frame`): from that header to the
/// frame's end.
fn ip_from<'a>(frame: &'a [u8], header: &[u8]) -> Option<&'a [u8]> {
    let start = (header.as_ptr() as usize).checked_sub(frame.as_ptr() as usize)?;
    frame.get(start..)
}

/// The TCP header at the start of `p`; `segment_len` is the whole
/// segment's length when known (an unfragmented packet).
fn tcp(p: &LaxIpPayloadSlice<'_>, segment_len: Option<usize>) -> Option<TcpInfo> {
    let b = p.payload;
    match TcpPacket::new_checked(b) {
        Ok(h) => {
            let mut t = TcpInfo {
                sport: h.src_port(),
                dport: h.dst_port(),
                seq: h.seq(),
                ack: h.ack(),
                flags: h.flags(),
                payload_len: segment_len.map(|n| n.saturating_sub(h.header_len())),
                full_header: true,
                header_len: h.header_len(),
                ..TcpInfo::default()
            };
            tcp_options(h.options(), &mut t);
            Some(t)
        }
        // A leading fragment shorter than the header still has the ports,
        // and from 13 bytes on the header's length (data offset), which a
        // trailing piece needs to tell where the segment ends: a KA code
        // of 24 bytes cuts a 32-byte header (timestamps) in two.
        Err(_) => Some(TcpInfo {
            sport: u16::from_be_bytes(b.get(0..2)?.try_into().ok()?),
            dport: u16::from_be_bytes(b.get(2..4)?.try_into().ok()?),
            seq: b
                .get(4..8)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u32::from_be_bytes),
            header_len: b
                .get(12)
                .map(|o| usize::from(o >> 4) * 4)
                .filter(|&n| n >= 20)
                .unwrap_or(0),
            ..TcpInfo::default()
        }),
    }
}

/// The RFC 6994 experimental TCP options (kind 253) of the KA, RCP and
/// XCP experiments; the walk stops at a malformed option.
fn tcp_options(opts: &[u8], t: &mut TcpInfo) {
    for opt in OptionIter::new(opts) {
        let Ok(opt) = opt else {
            break;
        };
        match experiment(&opt) {
            Some((KA_EXID, [])) => t.ka_permitted = true,
            Some((KA_EXID, [code, count])) => t.ka_rate = Some((*code, *count)),
            Some((RCP_EXID, [])) => t.rcp_permitted = true,
            Some((RCP_EXID, [a, b, c, d])) => {
                t.rcp_echo = Some(u32::from_be_bytes([*a, *b, *c, *d]));
            }
            Some((XCP_EXID, [])) => t.xcp_permitted = true,
            Some((XCP_EXID, [a, b, c, d])) => {
                t.xcp_echo = Some(i32::from_be_bytes([*a, *b, *c, *d]));
            }
            _ => {}
        }
    }
}

/// The IPv4 options of native RCP (the last well-formed one before the
/// walk ends) and XCP (`ka_codec::xcp_option::find_in`; a malformed
/// options area just has none).
fn ip_options(opts: &[u8]) -> (Option<RcpOpt>, Option<XcpOpt>) {
    let mut rcp = None;
    for opt in OptionIter::new(opts) {
        let Ok(opt) = opt else {
            break;
        };
        if opt.kind == rcp_option::OPTION_TYPE
            && let Ok(o) = RcpOption::parse(opt.bytes)
        {
            rcp = Some(RcpOpt {
                rate_bytes_per_sec: o.rate_bytes_per_sec,
                rtt_ms: o.rtt_ms,
            });
        }
    }
    let xcp = match ka_codec::xcp_option::find_in(opts) {
        Ok(Some((_, o))) => Some(XcpOpt {
            cwnd: o.cwnd_bytes,
            rtt_us: o.rtt_us,
            feedback: o.feedback_bytes,
        }),
        _ => None,
    };
    (rcp, xcp)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An IPv6 leading fragment (offset 0, M = 1) of TCP with
    /// identification `ident`, hop limit 64: 880 bytes after the Fragment
    /// header, `upper` (the segment's start) then zeros.
    pub(crate) fn v6_leading_fragment(ident: u32, upper: &[u8]) -> Vec<u8> {
        let body_len = 8 + 880;
        let mut p = vec![0u8; 40 + body_len];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&(body_len as u16).to_be_bytes());
        p[6] = 44;
        p[7] = 64;
        p[40] = 6;
        p[42..44].copy_from_slice(&1u16.to_be_bytes());
        p[44..48].copy_from_slice(&ident.to_be_bytes());
        p[48..48 + upper.len()].copy_from_slice(upper);
        p
    }

    fn v4(total: usize, flags_off: u16, opts: &[u8], payload: &[u8]) -> Vec<u8> {
        let hl = 20 + opts.len();
        let mut p = vec![0u8; total.max(hl + payload.len())];
        p[0] = 0x40 | (hl / 4) as u8;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&77u16.to_be_bytes());
        p[6..8].copy_from_slice(&flags_off.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..hl].copy_from_slice(opts);
        p[hl..hl + payload.len()].copy_from_slice(payload);
        p.truncate(total);
        p
    }

    fn tcp_hdr(opts: &[u8]) -> Vec<u8> {
        let mut t = vec![0u8; 20];
        t[0..2].copy_from_slice(&4000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5001u16.to_be_bytes());
        t[4..8].copy_from_slice(&1000u32.to_be_bytes());
        t[12] = (((20 + opts.len()) / 4) as u8) << 4;
        t[13] = 0x10;
        t.extend(opts);
        t
    }

    #[test]
    fn leading_fragment_ka_rate_and_indicator() {
        let seg = tcp_hdr(&[253, 6, 0x4B, 0x41, 62, 9, 1, 1]);
        let p = v4(20 + 496, 0x2000, &[], &seg);
        let i = decode(LINKTYPE_RAW, &p).unwrap();
        assert_eq!(i.leading_len, Some(496));
        assert_eq!(i.frag_offset, Some(0));
        let t = i.tcp.unwrap();
        assert_eq!((t.sport, t.dport, t.ka_rate), (4000, 5001, Some((62, 9))));
        assert_eq!(t.payload_len, None, "segment length unknown in a fragment");
        // A trailing piece: no TCP.
        let i = decode(LINKTYPE_RAW, &v4(100, 62, &[], &[])).unwrap();
        assert_eq!(
            (i.frag_offset, i.leading_len, i.tcp),
            (Some(496), None, None)
        );
        // An indicator: DF, total 605.
        let i = decode(LINKTYPE_RAW, &v4(605, 0x4000, &[], &tcp_hdr(&[]))).unwrap();
        assert_eq!(i.indicator, Some(5));
        assert_eq!(i.tcp.unwrap().payload_len, Some(605 - 40));
    }

    #[test]
    fn rcp_and_xcp_ip_options() {
        let mut opts = vec![30, 8, 0, 0, 0x10, 0, 0, 100];
        opts.extend([
            94, 14, 0, 0, 0x05, 0xdc, 0, 0, 0x27, 0x10, 0xff, 0xff, 0xff, 0x9c, 1, 1,
        ]);
        let p = v4(20 + 24 + 20, 0, &opts, &tcp_hdr(&[]));
        let i = decode(LINKTYPE_RAW, &p).unwrap();
        assert_eq!(
            i.rcp,
            Some(RcpOpt {
                rate_bytes_per_sec: 4096,
                rtt_ms: 100
            })
        );
        assert_eq!(
            i.xcp,
            Some(XcpOpt {
                cwnd: 1500,
                rtt_us: 10_000,
                feedback: -100
            })
        );
    }

    #[test]
    fn link_layers() {
        let ip = v4(40, 0, &[], &tcp_hdr(&[]));
        let mut eth = vec![0u8; 12];
        eth.extend([0x08, 0x00]);
        eth.extend(&ip);
        let mut sll = vec![0u8; 14];
        sll.extend([0x08, 0x00]);
        sll.extend(&ip);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend([0u8; 18]);
        sll2.extend(&ip);
        let mut null = vec![2, 0, 0, 0];
        null.extend(&ip);
        for (lt, f) in [
            (1, eth),
            (113, sll),
            (276, sll2),
            (0, null),
            (101, ip.clone()),
            (228, ip),
        ] {
            let i = decode(lt, &f).unwrap_or_else(|| panic!("linktype {lt}"));
            assert_eq!(i.tcp.unwrap().dport, 5001, "linktype {lt}");
        }
        assert!(decode(147, &[0x45; 40]).is_none());
    }

    #[test]
    fn ipv6_leading_fragment() {
        let p = v6_leading_fragment(0x4B41_0005, &tcp_hdr(&[]));
        let i = decode(LINKTYPE_RAW, &p).unwrap();
        assert_eq!(
            (i.version, i.ident, i.leading_len),
            (6, 0x4B41_0005, Some(880))
        );
        assert_eq!(i.tcp.unwrap().sport, 4000);
    }

    #[test]
    fn ipv6_chain_cut_inside_an_extension_header() {
        // Three Destination Options headers, then one that announces 2048
        // bytes but has 8: etherparse's lax parse stops there, and its
        // extension iterator then read past the slice (valgrind: invalid
        // reads; a segmentation fault on a crafted capture). The decoder
        // must read only what is there.
        let mut ext = [0u8; 32];
        for h in ext.chunks_mut(8) {
            h[0] = 60;
        }
        ext[25] = 255;
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&32u16.to_be_bytes());
        p[6] = 60;
        p[7] = 64;
        p.extend_from_slice(&ext);
        let i = decode(LINKTYPE_RAW, &p).unwrap();
        assert_eq!(i.version, 6);
        assert_eq!((i.frag_offset, i.ident, i.tcp), (None, 0, None));
        // A snapped leading fragment still shows its Fragment header.
        let full = v6_leading_fragment(0x4B41_0006, &tcp_hdr(&[]));
        let i = decode(LINKTYPE_RAW, &full[..68]).unwrap();
        assert_eq!(
            (i.ident, i.frag_offset, i.more_frags),
            (0x4B41_0006, Some(0), true)
        );
    }

    #[test]
    fn never_panics_on_garbage() {
        let mut x = 0x1234_5678u32;
        for n in 0..3000 {
            let len = n % 120;
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            for lt in [0, 1, 101, 113, 276, 228, 229] {
                let _ = decode(lt, &b);
                let mut ip = b.clone();
                if let Some(f) = ip.first_mut() {
                    *f = 0x45;
                }
                let _ = decode(lt, &ip);
            }
        }
    }
}

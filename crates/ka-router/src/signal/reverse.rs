//! Rate echoes on the reverse path (the `echo` controller,
//! [`crate::Port::on_reverse`]): find the KA-Rate (DESIGN §2.3) or
//! RCP-Echo (DESIGN §7.1) option of an ACK-carrying TCP segment and lower it in
//! place, patching the TCP checksum incrementally (RFC 1624), so a
//! segment whose checksum was right stays right. The packet is read through
//! its one parse ([`ka_codec::wire::Segment`]) and its options through the
//! one option walker. Never panics on any bytes (a property test below).

use ka_codec::options::{KA_EXID, RCP_EXID};
#[cfg(test)]
use ka_codec::wire::checksum;
#[cfg(test)]
use ka_codec::wire::ipv4::PROTO_TCP;
use ka_codec::wire::opts::experiment;
use ka_codec::wire::segment::{self, Segment};
use ka_codec::wire::tcp::{ACK, HEADER_LEN as TCP_HEADER};

use crate::controller::FlowKey;

/// Which echo a segment carries, and where (offset of the option's first
/// byte in the packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    /// KA-Rate: the code byte.
    Ka { at: usize, code: u8 },
    /// RCP-Echo: the rate, bytes/s.
    Rcp { at: usize, rate: u32 },
}

/// What the echo stage needs of a reverse-direction TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EchoSegment {
    /// The forward direction it belongs to (its source and destination
    /// swapped).
    pub flow: FlowKey,
    /// The echo it carries, if any.
    pub echo: Option<Echo>,
    /// Offset of the TCP header.
    pub tcp_at: usize,
}

/// Reads an ACK-carrying TCP segment (SYN-ACKs included): `None` for
/// anything else (not TCP, no ACK flag, a fragment, malformed).
#[cfg(test)]
pub(crate) fn parse(packet: &[u8]) -> Option<EchoSegment> {
    of_segment(&Segment::parse(packet).ok()?)
}

/// [`parse`] of a packet parsed already.
pub(crate) fn of_segment(seg: &Segment<'_>) -> Option<EchoSegment> {
    // Whole segments only: no piece of a fragmented one (an IPv6 Fragment
    // header, even an atomic one, counts).
    if seg.is_fragment() || seg.has_fragment_header() {
        return None;
    }
    if seg.tcp_header()?.flags & ACK == 0 {
        return None;
    }
    let flow = seg.flow_key()?.reversed();
    let tcp_at = seg.l4_offset()?;
    let echo = find(seg).map(|e| match e {
        Echo::Ka { at, code } => Echo::Ka {
            at: at + tcp_at + TCP_HEADER,
            code,
        },
        Echo::Rcp { at, rate } => Echo::Rcp {
            at: at + tcp_at + TCP_HEADER,
            rate,
        },
    });
    Some(EchoSegment { flow, echo, tcp_at })
}

/// The first KA-Rate or RCP-Echo among the segment's TCP options (offsets
/// within the options area); `None` also if the walk meets a malformed
/// option first.
fn find(seg: &Segment<'_>) -> Option<Echo> {
    for opt in seg.tcp_option_iter() {
        let opt = opt.ok()?;
        match (experiment(&opt), opt.bytes.len()) {
            (Some((KA_EXID, &[code, _])), 6) => {
                return Some(Echo::Ka {
                    at: opt.offset,
                    code,
                });
            }
            (Some((RCP_EXID, &[r0, r1, r2, r3])), 8) => {
                let rate = u32::from_be_bytes([r0, r1, r2, r3]);
                return Some(Echo::Rcp {
                    at: opt.offset,
                    rate,
                });
            }
            _ => {}
        }
    }
    None
}

/// Replaces `packet[at..at + new.len()]` with `new`, patching the TCP
/// checksum at `tcp_at + 16` incrementally
/// ([`ka_codec::wire::segment::patch_tcp`]). `at` must be inside the TCP
/// header (as [`of_segment`] found it). Returns false if out of range.
pub(crate) fn write(packet: &mut [u8], tcp_at: usize, at: usize, new: &[u8]) -> bool {
    segment::patch_tcp(packet, tcp_at, at, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ka_codec::options::{KaRate, RcpEcho};
    use ka_codec::scale::Code;
    use proptest::prelude::*;

    /// An IPv4 TCP segment 10.0.0.2:5001 → 10.0.0.1:40000 with `flags`,
    /// `nops` NOPs and then `opt`, and a correct checksum.
    fn ack(flags: u8, nops: usize, opt: &[u8]) -> Vec<u8> {
        let mut opts = vec![1u8; nops];
        opts.extend_from_slice(opt);
        while !opts.len().is_multiple_of(4) {
            opts.push(0);
        }
        let tcp_len = TCP_HEADER + opts.len();
        let total = 20 + tcp_len;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[10, 0, 0, 1]);
        let c = checksum::checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&5001u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[32] = ((tcp_len / 4) as u8) << 4;
        p[33] = flags;
        p[40..].copy_from_slice(&opts);
        fill(&mut p);
        p
    }

    fn fill(p: &mut [u8]) {
        p[36] = 0;
        p[37] = 0;
        let pseudo = checksum::pseudo_v4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            PROTO_TCP,
            (p.len() - 20) as u32,
        );
        let c = checksum::finish(checksum::sum(&p[20..], pseudo));
        p[36..38].copy_from_slice(&c.to_be_bytes());
    }

    fn checksum_ok(p: &[u8]) -> bool {
        let pseudo = checksum::pseudo_v4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            PROTO_TCP,
            (p.len() - 20) as u32,
        );
        checksum::finish(checksum::sum(&p[20..], pseudo)) == 0
    }

    fn ka(code: u8) -> Vec<u8> {
        let mut b = [0u8; 6];
        let c = Code::from_wire(code).unwrap_or(Code::MAX);
        KaRate::new(c, 7).emit(&mut b).unwrap();
        b.to_vec()
    }

    fn rcp(rate: u32) -> Vec<u8> {
        let mut b = [0u8; 8];
        RcpEcho {
            rate_bytes_per_sec: rate,
        }
        .emit(&mut b)
        .unwrap();
        b.to_vec()
    }

    #[test]
    fn finds_the_echo_and_the_forward_flow() {
        let p = ack(ACK, 0, &ka(100));
        let s = parse(&p).unwrap();
        assert_eq!(s.echo, Some(Echo::Ka { at: 40, code: 100 }));
        assert_eq!((s.flow.sport, s.flow.dport), (40000, 5001));
        assert_eq!(&s.flow.src[12..], &[10, 0, 0, 1]);
        assert_eq!(&s.flow.dst[12..], &[10, 0, 0, 2]);
        let p = ack(ACK, 3, &rcp(123_456));
        assert_eq!(
            parse(&p).unwrap().echo,
            Some(Echo::Rcp {
                at: 43,
                rate: 123_456
            })
        );
        // No echo, or no ACK flag.
        assert_eq!(parse(&ack(ACK, 0, &[])).unwrap().echo, None);
        assert!(parse(&ack(0x02, 0, &ka(100))).is_none());
    }

    #[test]
    fn lowering_keeps_the_checksum_right_at_every_alignment() {
        for nops in 0..4 {
            let mut p = ack(ACK, nops, &ka(150));
            let Some(Echo::Ka { at, .. }) = parse(&p).unwrap().echo else {
                panic!("no echo");
            };
            assert!(write(&mut p, 20, at + 4, &[90]));
            assert!(checksum_ok(&p), "nops {nops}");
            assert_eq!(parse(&p).unwrap().echo, Some(Echo::Ka { at, code: 90 }));
            let mut p = ack(ACK, nops, &rcp(u32::MAX));
            let Some(Echo::Rcp { at, .. }) = parse(&p).unwrap().echo else {
                panic!("no echo");
            };
            assert!(write(&mut p, 20, at + 4, &1_000_000u32.to_be_bytes()));
            assert!(checksum_ok(&p), "nops {nops}");
            assert_eq!(
                parse(&p).unwrap().echo,
                Some(Echo::Rcp {
                    at,
                    rate: 1_000_000
                })
            );
        }
    }

    #[test]
    fn write_refuses_the_fixed_header_and_the_outside() {
        let mut p = ack(ACK, 0, &ka(150));
        let before = p.clone();
        assert!(!write(&mut p, 20, 30, &[1]));
        let n = p.len();
        assert!(!write(&mut p, 20, n, &[1]));
        assert!(!write(&mut p, 20, 40, &[0u8; 40]));
        assert_eq!(p, before);
    }

    proptest! {
        #[test]
        fn never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
            if let Some(s) = parse(&bytes) {
                let mut b = bytes.clone();
                match s.echo {
                    Some(Echo::Ka { at, .. }) => { write(&mut b, s.tcp_at, at + 4, &[3]); }
                    Some(Echo::Rcp { at, .. }) => { write(&mut b, s.tcp_at, at + 4, &[0; 4]); }
                    None => {}
                }
            }
        }

        #[test]
        fn any_lowered_echo_keeps_a_valid_checksum(
            nops in 0usize..8,
            code in 3u8..=185,
            new in 3u8..=185,
            rate in any::<u32>(),
            new_rate in any::<u32>(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        ) {
            for opt in [ka(code), rcp(rate)] {
                let mut p = ack(ACK, nops, &opt);
                // Garble options/fields (not the echo) and re-checksum.
                for (i, b) in &edits {
                    let k = 40 + i.index(p.len() - 40);
                    if k < 40 + nops { p[k] = *b; }
                }
                fill(&mut p);
                if let Some(s) = parse(&p) {
                    let ok = match s.echo {
                        Some(Echo::Ka { at, .. }) => write(&mut p, s.tcp_at, at + 4, &[new]),
                        Some(Echo::Rcp { at, .. }) => write(&mut p, s.tcp_at, at + 4, &new_rate.to_be_bytes()),
                        None => false,
                    };
                    if ok {
                        prop_assert!(checksum_ok(&p));
                    }
                }
            }
        }
    }
}

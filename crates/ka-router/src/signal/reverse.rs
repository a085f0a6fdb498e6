//! Rate echoes on the reverse path (the `echo` controller,
//! [`crate::Port::on_reverse`]): find the KA-Rate (DESIGN §3.3) or
//! RCP-Echo (§3.4) option of an ACK-carrying TCP segment and lower it in
//! place, patching the TCP checksum incrementally (RFC 1624), so a
//! segment whose checksum was right stays right. Never panics on any
//! bytes: nothing is indexed that was not checked (a property test below).

use ka_codec::options::{KA_EXID, KIND_EXPERIMENTAL, RCP_EXID};
use ka_codec::wire::checksum;
use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_TCP};
use ka_codec::wire::ipv6::{self, Ipv6Packet};
use ka_codec::wire::tcp::TcpPacket;

use crate::controller::FlowKey;
use crate::controller::packet::mapped;

const ACK: u8 = 0x10;
/// The TCP header without options.
const TCP_HEADER: usize = 20;

/// Which echo a segment carries, and where (offset of the option's first
/// byte in the packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    /// KA-Rate: the code byte.
    Ka { at: usize, code: u8 },
    /// RCP-Echo: the rate, bytes/s.
    Rcp { at: usize, rate: u32 },
}

/// A reverse-direction TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
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
pub(crate) fn parse(packet: &[u8]) -> Option<Segment> {
    let (src, dst, tcp_at, end) = match ka_codec::wire::ip_version(packet) {
        Some(4) => {
            let p = Ipv4Packet::new_checked(packet).ok()?;
            if p.protocol() != PROTO_TCP || p.frag_offset() != 0 || p.more_frags() {
                return None;
            }
            (
                mapped(p.src_addr()),
                mapped(p.dst_addr()),
                p.header_len(),
                p.total_len(),
            )
        }
        Some(6) => {
            let p = Ipv6Packet::new_checked(packet).ok()?;
            let l = ipv6::layout(packet).ok()?;
            match l.upper {
                Some((PROTO_TCP, off)) if l.fragment.is_none() => {
                    (p.src_addr(), p.dst_addr(), off, p.total_len())
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let seg = packet.get(tcp_at..end)?;
    let t = TcpPacket::new_checked(seg).ok()?;
    let flags = t.flags();
    if flags & ACK == 0 {
        return None;
    }
    let flow = FlowKey {
        src: dst,
        dst: src,
        sport: t.dst_port(),
        dport: t.src_port(),
    };
    let echo = find(t.options()).map(|e| match e {
        Echo::Ka { at, code } => Echo::Ka {
            at: at + tcp_at + TCP_HEADER,
            code,
        },
        Echo::Rcp { at, rate } => Echo::Rcp {
            at: at + tcp_at + TCP_HEADER,
            rate,
        },
    });
    Some(Segment { flow, echo, tcp_at })
}

/// The first KA-Rate or RCP-Echo in `opts` (offsets within `opts`).
fn find(opts: &[u8]) -> Option<Echo> {
    let mut i = 0;
    while let Some(&kind) = opts.get(i) {
        match kind {
            0 => return None,
            1 => i += 1,
            _ => {
                let len = usize::from(*opts.get(i + 1)?);
                if len < 2 {
                    return None;
                }
                let o = opts.get(i..i + len)?;
                if kind == KIND_EXPERIMENTAL {
                    match *o {
                        [_, 6, e0, e1, code, _] if u16::from_be_bytes([e0, e1]) == KA_EXID => {
                            return Some(Echo::Ka { at: i, code });
                        }
                        [_, 8, e0, e1, r0, r1, r2, r3]
                            if u16::from_be_bytes([e0, e1]) == RCP_EXID =>
                        {
                            let rate = u32::from_be_bytes([r0, r1, r2, r3]);
                            return Some(Echo::Rcp { at: i, rate });
                        }
                        _ => {}
                    }
                }
                i += len;
            }
        }
    }
    None
}

/// Replaces `packet[at..at + new.len()]` with `new`, patching the TCP
/// checksum at `tcp_at + 16` incrementally. `at` must be inside the TCP
/// header (as [`parse`] found it). Returns false if out of range.
pub(crate) fn write(packet: &mut [u8], tcp_at: usize, at: usize, new: &[u8]) -> bool {
    let end = at + new.len();
    if at < tcp_at + TCP_HEADER || packet.len() < end {
        return false;
    }
    // The 16-bit words (relative to the TCP header's start) `new` touches.
    let w0 = tcp_at + ((at - tcp_at) & !1);
    let w1 = tcp_at + (end - tcp_at).div_ceil(2) * 2;
    let mut old = [0u8; 16];
    let (Some(o), Some(words)) = (old.get_mut(..w1 - w0), packet.get(w0..w1)) else {
        return false;
    };
    o.copy_from_slice(words);
    let Some(field) = packet.get_mut(at..end) else {
        return false;
    };
    field.copy_from_slice(new);
    let (Some(&[c0, c1]), Some(o), Some(n)) = (
        packet.get(tcp_at + 16..tcp_at + 18),
        old.get(..w1 - w0),
        packet.get(w0..w1),
    ) else {
        return false;
    };
    let mut c = u16::from_be_bytes([c0, c1]);
    for (o, n) in o.chunks_exact(2).zip(n.chunks_exact(2)) {
        if let (&[o0, o1], &[n0, n1]) = (o, n) {
            c = checksum::update(
                c,
                u16::from_be_bytes([o0, o1]),
                u16::from_be_bytes([n0, n1]),
            );
        }
    }
    if let Some(dst) = packet.get_mut(tcp_at + 16..tcp_at + 18) {
        dst.copy_from_slice(&c.to_be_bytes());
    }
    true
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

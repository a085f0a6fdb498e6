//! Ingress: validate, classify, decrement TTL, spot RTT indicators.
//!
//! The rule for what arrives at [`crate::Port::push`] (also in the crate
//! docs):
//!
//! * empty, or longer than [`MAX_PACKET_LEN`] → dropped as malformed;
//! * first nibble 4: must pass `Ipv4Packet::new_checked` (IHL ≥ 5, header
//!   within the buffer, `header_len ≤ total_len ≤ buffer`) and the header
//!   checksum, else dropped as malformed;
//! * first nibble 6: must pass `Ipv6Packet::new_checked` (40-byte header,
//!   `40 + payload_len ≤ buffer`), else dropped as malformed;
//! * any other first nibble → not IP: forwarded untouched (queued, shaped,
//!   delayed, never stamped);
//! * IP bytes past the header's total length (link padding) are cut off;
//! * with `decrement_ttl`, an IP packet arriving with TTL / hop limit ≤ 1 is
//!   dropped (no ICMP), every other one leaves with one less (IPv4 header
//!   checksum recomputed);
//! * IPv4 with DF and total length 600…611, or IPv6 with total length
//!   600…611 and no Fragment header, is an RTT indicator (it is never
//!   stamped either way).

use ka_codec::rtt;
use ka_codec::wire::Layout;
use ka_codec::wire::{ipv4::Ipv4Packet, ipv6::Ipv6Packet};

/// The largest packet a port accepts: an IPv6 packet with a 65 535-byte
/// payload (40 + 65 535). Larger input is dropped as malformed, which caps
/// the memory the queue can hold at `queue_limit · MAX_PACKET_LEN` plus the
/// buffer slack documented on [`crate::Port::push`].
pub const MAX_PACKET_LEN: usize = 40 + 65_535;

/// What ingress made of a packet (handed to the signalling stage with
/// every arrival, see [`crate::signal::Signaller::on_arrival`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketKind {
    /// A valid IPv4 packet; `indicator` = the RTT-indicator index k
    /// (DESIGN §2.2) if it is one.
    Ipv4 {
        /// RTT-indicator index k, if the packet is an indicator.
        indicator: Option<u8>,
    },
    /// A valid IPv6 packet; `indicator` as for IPv4.
    Ipv6 {
        /// RTT-indicator index k, if the packet is an indicator.
        indicator: Option<u8>,
    },
    /// Not IP (version nibble neither 4 nor 6): forwarded untouched.
    NonIp,
}

pub(crate) use PacketKind as Kind;

/// Why ingress dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    Malformed,
    TtlExpired,
}

/// [`ingress_parsed`] without the layout.
#[cfg(test)]
pub(crate) fn ingress(packet: &mut Vec<u8>, decrement_ttl: bool) -> Result<Kind, Reject> {
    ingress_parsed(packet, decrement_ttl, None).map(|(kind, _)| kind)
}

/// Validates and prepares `packet` in place (see the module docs): the one
/// parse of the packet ([`Layout::parse`]), whose layout the port hands to
/// every stage that reads the headers (`None` for non-IP packets). A
/// caller that parsed the packet already passes its layout as `parsed`
/// (one of another IP version is ignored).
#[inline]
pub(crate) fn ingress_parsed(
    packet: &mut Vec<u8>,
    decrement_ttl: bool,
    parsed: Option<Layout>,
) -> Result<(Kind, Option<Layout>), Reject> {
    if packet.is_empty() || packet.len() > MAX_PACKET_LEN {
        return Err(Reject::Malformed);
    }
    let version = ka_codec::wire::ip_version(packet);
    if !matches!(version, Some(4 | 6)) {
        return Ok((Kind::NonIp, None));
    }
    // Rejects exactly what `Ipv4Packet::new_checked` /
    // `Ipv6Packet::new_checked` reject.
    let layout = match parsed {
        Some(l) if Some(l.version()) == version => l,
        _ => Layout::parse(packet).map_err(|_| Reject::Malformed)?,
    };
    let kind = if layout.is_ipv4() {
        let mut p = Ipv4Packet::new_unchecked(packet.as_mut_slice());
        if !p.verify_checksum() {
            return Err(Reject::Malformed);
        }
        if decrement_ttl {
            let ttl = p.ttl();
            if ttl <= 1 {
                return Err(Reject::TtlExpired);
            }
            // The checksum was verified just above, so the incremental
            // update stores what a full recompute would, for a tenth of
            // the work (measured: docs/PERFORMANCE.md).
            p.set_ttl_incremental(ttl - 1);
        }
        Kind::Ipv4 {
            indicator: rtt::classify(layout.total_len(), layout.dont_frag()),
        }
    } else {
        if decrement_ttl {
            let mut p = Ipv6Packet::new_unchecked(packet.as_mut_slice());
            let hl = p.hop_limit();
            if hl <= 1 {
                return Err(Reject::TtlExpired);
            }
            p.set_hop_limit(hl - 1);
        }
        Kind::Ipv6 {
            indicator: crate::stamp::ipv6_indicator(&layout),
        }
    };
    // Link padding goes; the layout stays valid (it ends at total_len).
    packet.truncate(layout.total_len());
    Ok((kind, Some(layout)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(total: usize, df: bool, ttl: u8) -> Vec<u8> {
        let mut b = vec![0u8; total + 3]; // 3 bytes of link padding
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        if df {
            b[6] = 0x40;
        }
        b[8] = ttl;
        b[9] = 6;
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.fill_checksum();
        b
    }

    #[test]
    fn ipv4_ttl_and_indicator() {
        let mut b = v4(605, true, 64);
        assert_eq!(ingress(&mut b, true), Ok(Kind::Ipv4 { indicator: Some(5) }));
        assert_eq!(b.len(), 605);
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.ttl(), 63);
        assert!(p.verify_checksum());
        let mut b = v4(605, false, 64);
        assert_eq!(ingress(&mut b, false), Ok(Kind::Ipv4 { indicator: None }));
        assert_eq!(Ipv4Packet::new_checked(&b[..]).unwrap().ttl(), 64);
        let mut b = v4(100, false, 1);
        assert_eq!(ingress(&mut b, true), Err(Reject::TtlExpired));
        let mut b = v4(100, false, 1);
        assert!(ingress(&mut b, false).is_ok());
    }

    #[test]
    fn bad_checksum_and_truncation_are_malformed() {
        let mut b = v4(100, false, 64);
        b[10] ^= 1;
        assert_eq!(ingress(&mut b, true), Err(Reject::Malformed));
        let mut b = v4(100, false, 64);
        b.truncate(50);
        assert_eq!(ingress(&mut b, true), Err(Reject::Malformed));
        assert_eq!(ingress(&mut vec![0x45; 10], true), Err(Reject::Malformed));
        assert_eq!(ingress(&mut vec![], true), Err(Reject::Malformed));
        assert_eq!(ingress(&mut vec![0x60; 39], true), Err(Reject::Malformed));
        assert_eq!(
            ingress(&mut vec![0; MAX_PACKET_LEN + 1], true),
            Err(Reject::Malformed)
        );
    }

    #[test]
    fn non_ip_passes() {
        assert_eq!(ingress(&mut vec![0x20, 1, 2], true), Ok(Kind::NonIp));
    }

    #[test]
    fn ipv6_hop_limit_and_indicator() {
        let mut b = vec![0u8; 610];
        b[0] = 0x60;
        b[4..6].copy_from_slice(&570u16.to_be_bytes());
        b[6] = 59;
        b[7] = 2;
        assert_eq!(
            ingress(&mut b, true),
            Ok(Kind::Ipv6 {
                indicator: Some(10)
            })
        );
        assert_eq!(b[7], 1);
        assert_eq!(ingress(&mut b, true), Err(Reject::TtlExpired));
    }
}

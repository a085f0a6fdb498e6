//! The ECN field of IPv4 and IPv6 headers (RFC 3168 §5).
//!
//! The two low bits of the IPv4 TOS byte / the IPv6 traffic class:
//!
//! | bits | codepoint |
//! |---|---|
//! | `00` | Not-ECT (the sender does not do ECN) |
//! | `01` | ECT(1) |
//! | `10` | ECT(0) (what RFC 3168 senders set) |
//! | `11` | CE (congestion experienced, set by a router) |
//!
//! [`mark_ce`] is what an AQM router does to an ECT packet instead of
//! dropping it; [`set_ecn`] is what a sender does to its data segments.
//! Both keep the IPv4 header checksum valid with the incremental update of
//! RFC 1624 (so a packet whose checksum was wrong stays wrong by the same
//! amount: a router must not launder a corrupt header). Neither allocates
//! nor panics on any input; on bytes that are not a well-formed IP header
//! they do nothing and say so.

use super::WireError;
use super::checksum;
use super::ipv4::Ipv4Packet;
use super::ipv6::Ipv6Packet;

/// An ECN codepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// `00`: not ECN-capable.
    NotEct,
    /// `01`: ECN-capable transport, codepoint 1.
    Ect1,
    /// `10`: ECN-capable transport, codepoint 0 (RFC 3168 senders).
    Ect0,
    /// `11`: congestion experienced.
    Ce,
}

impl Ecn {
    /// The codepoint of the two low bits of `bits`.
    #[inline]
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit value.
    #[inline]
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// ECT(0), ECT(1) or CE: the transport does ECN, so a router may mark
    /// the packet instead of dropping it.
    #[inline]
    pub const fn is_ect(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

/// The ECN codepoint of an IPv4 or IPv6 packet, or `None` if `packet` is
/// not a well-formed IP header (see the views' `new_checked`).
pub fn ecn(packet: &[u8]) -> Option<Ecn> {
    match super::ip_version(packet)? {
        4 => Ipv4Packet::new_checked(packet)
            .ok()
            .map(|p| Ecn::from_bits(p.dscp_ecn())),
        6 => Ipv6Packet::new_checked(packet)
            .ok()
            .map(|p| Ecn::from_bits(p.traffic_class())),
        _ => None,
    }
}

/// Sets the ECN codepoint of an IPv4 or IPv6 packet, updating the IPv4
/// header checksum incrementally (RFC 1624). Returns the codepoint the
/// packet had. Errors (packet unchanged) if it is not a well-formed IP
/// header.
pub fn set_ecn(packet: &mut [u8], to: Ecn) -> Result<Ecn, WireError> {
    match super::ip_version(packet) {
        Some(4) => {
            let mut p = Ipv4Packet::new_checked(&mut *packet)?;
            let old_tos = p.dscp_ecn();
            let new_tos = (old_tos & !0b11) | to.bits();
            if new_tos != old_tos {
                // The TOS byte is the low half of the header's first 16-bit
                // word (version/IHL is the high half).
                let vihl = u16::from(p.as_bytes().first().copied().unwrap_or(0)) << 8;
                let old_word = vihl | u16::from(old_tos);
                let new_word = vihl | u16::from(new_tos);
                let sum = checksum::update(p.checksum(), old_word, new_word);
                p.set_dscp_ecn(new_tos);
                p.set_checksum(sum);
            }
            Ok(Ecn::from_bits(old_tos))
        }
        Some(6) => {
            let mut p = Ipv6Packet::new_checked(&mut *packet)?;
            let old_tc = p.traffic_class();
            let flow = p.flow_label();
            p.set_version_class_flow((old_tc & !0b11) | to.bits(), flow);
            Ok(Ecn::from_bits(old_tc))
        }
        _ => Err(WireError::BadVersion),
    }
}

/// What [`mark_ce`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkOutcome {
    /// The packet was ECT(0) or ECT(1) and now carries CE.
    Marked,
    /// The packet already carried CE (an upstream router marked it).
    AlreadyCe,
    /// Not-ECT, or not a well-formed IP header: the caller must drop
    /// instead of marking (RFC 3168 §5).
    NotEct,
}

/// Marks congestion experienced on an ECN-capable packet (RFC 3168 §5): ECT
/// → CE, with the IPv4 header checksum updated incrementally. Not-ECT
/// packets and bytes that are not a well-formed IP header are left alone.
pub fn mark_ce(packet: &mut [u8]) -> MarkOutcome {
    match ecn(packet) {
        Some(Ecn::Ce) => MarkOutcome::AlreadyCe,
        Some(Ecn::Ect0 | Ecn::Ect1) => match set_ecn(packet, Ecn::Ce) {
            Ok(_) => MarkOutcome::Marked,
            Err(_) => MarkOutcome::NotEct,
        },
        _ => MarkOutcome::NotEct,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(tos: u8) -> [u8; 20] {
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[1] = tos;
        h[2..4].copy_from_slice(&20u16.to_be_bytes());
        h[8] = 64;
        h[9] = 6;
        h[12..16].copy_from_slice(&[10, 0, 0, 1]);
        h[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn codepoints_round_trip() {
        for b in 0..4u8 {
            assert_eq!(Ecn::from_bits(b).bits(), b);
            assert_eq!(Ecn::from_bits(b | 0xfc).bits(), b);
        }
        assert!(!Ecn::NotEct.is_ect());
        assert!(Ecn::Ect0.is_ect() && Ecn::Ect1.is_ect() && Ecn::Ce.is_ect());
    }

    #[test]
    fn ipv4_mark_keeps_checksum_valid_and_dscp() {
        for tos in [0b1011_1010u8, 0b0000_0001, 0x02, 0xfe] {
            let mut h = v4(tos);
            assert_eq!(mark_ce(&mut h), MarkOutcome::Marked);
            assert_eq!(h[1], tos | 0b11);
            assert!(Ipv4Packet::new_checked(&h[..]).unwrap().verify_checksum());
            assert_eq!(mark_ce(&mut h), MarkOutcome::AlreadyCe);
        }
        let mut h = v4(0xb8); // DSCP EF, Not-ECT
        assert_eq!(mark_ce(&mut h), MarkOutcome::NotEct);
        assert_eq!(h, v4(0xb8));
    }

    #[test]
    fn ipv4_set_ecn_matches_full_recompute() {
        for tos in 0..=255u8 {
            for to in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
                let mut h = v4(tos);
                assert_eq!(set_ecn(&mut h, to).unwrap(), Ecn::from_bits(tos));
                let expect = v4((tos & 0xfc) | to.bits());
                assert_eq!(h, expect, "tos {tos:#x} -> {to:?}");
            }
        }
    }

    #[test]
    fn a_bad_checksum_stays_bad() {
        let mut h = v4(0x02);
        h[10] ^= 0x40;
        mark_ce(&mut h);
        assert!(!Ipv4Packet::new_checked(&h[..]).unwrap().verify_checksum());
    }

    #[test]
    fn ipv6_traffic_class() {
        let mut p = [0u8; 40];
        p[0] = 0x6b; // traffic class 0xb2: DSCP 0x2c, ECT(0)
        p[1] = 0x2a; // ... and flow label 0xa_bcde
        p[2] = 0xbc;
        p[3] = 0xde;
        p[7] = 64;
        assert_eq!(ecn(&p), Some(Ecn::Ect0));
        assert_eq!(mark_ce(&mut p), MarkOutcome::Marked);
        assert_eq!(ecn(&p), Some(Ecn::Ce));
        let v = Ipv6Packet::new_checked(&p[..]).unwrap();
        assert_eq!(v.traffic_class(), 0xb3);
        assert_eq!(v.flow_label(), 0xa_bcde);
    }

    #[test]
    fn junk_is_left_alone() {
        for bytes in [&[][..], &[0x45][..], &[0x70; 40][..], &[0x4f; 20][..]] {
            let mut b = bytes.to_vec();
            assert_eq!(ecn(&b), None);
            assert_eq!(mark_ce(&mut b), MarkOutcome::NotEct);
            assert!(set_ecn(&mut b, Ecn::Ce).is_err());
            assert_eq!(b, bytes);
        }
    }
}

//! The native-RCP baseline's per-packet work (DESIGN §7.1): lower the rate
//! field of the IPv4 RCP option.

use ka_codec::rcp_option;
#[cfg(test)]
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::ipv4::MIN_HEADER_LEN;
use ka_codec::wire::{Segment, SegmentMut};

/// Lowers the rate in `packet`'s RCP option (IPv4 option type 30) to
/// `rate_bytes_per_sec` if that is smaller, and refreshes the header
/// checksum. Returns whether the packet changed. Packets that are not valid
/// IPv4, have no RCP option or malformed options are left alone.
pub fn lower_rcp_option(packet: &mut [u8], rate_bytes_per_sec: u32) -> bool {
    match SegmentMut::parse(packet) {
        Ok(mut seg) => lower_rcp_option_in(&mut seg, rate_bytes_per_sec),
        Err(_) => false,
    }
}

/// [`lower_rcp_option`] of a packet parsed already.
pub fn lower_rcp_option_in(seg: &mut SegmentMut<'_>, rate_bytes_per_sec: u32) -> bool {
    if seg.ip_header_len() <= MIN_HEADER_LEN {
        return false;
    }
    let Some(mut p) = seg.ipv4_mut() else {
        return false;
    };
    match rcp_option::lower_in_place(p.options_mut(), rate_bytes_per_sec) {
        Ok(true) => {
            p.fill_checksum();
            true
        }
        _ => false,
    }
}

/// The sender's RTT carried by `packet`'s RCP option, in milliseconds, if
/// the packet is valid IPv4 with a well-formed RCP option whose RTT field is
/// not 0 (a sender without an RTT sample yet puts 0 there). Native-RCP
/// routers average these into d, as RCP routers take the RTT from the
/// header (DESIGN §7.1).
#[cfg(test)]
pub fn rcp_rtt_ms(packet: &[u8]) -> Option<u16> {
    rcp_rtt_ms_of(&Segment::parse(packet).ok()?)
}

/// `rcp_rtt_ms` of a packet parsed already.
pub fn rcp_rtt_ms_of(seg: &Segment<'_>) -> Option<u16> {
    if !seg.is_ipv4() || seg.ip_header_len() <= MIN_HEADER_LEN {
        return None;
    }
    let (_, opt) = rcp_option::find_in(seg.ipv4_options()).ok()??;
    (opt.rtt_ms > 0).then_some(opt.rtt_ms)
}

/// The rate field of `seg`'s RCP option (bytes/s; `u32::MAX` until a
/// router lowers it), if it is IPv4 with a well-formed RCP option.
pub fn rcp_rate_of(seg: &Segment<'_>) -> Option<u32> {
    if !seg.is_ipv4() || seg.ip_header_len() <= MIN_HEADER_LEN {
        return None;
    }
    let (_, opt) = rcp_option::find_in(seg.ipv4_options()).ok()??;
    Some(opt.rate_bytes_per_sec)
}

/// A rate in B/ms as the option's bytes/s (saturating; negative/NaN → 0).
pub(crate) fn bytes_per_sec(rate_bytes_per_ms: f64) -> u32 {
    // `as` saturates and maps NaN to 0.
    (rate_bytes_per_ms * 1000.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use ka_codec::RcpOption;

    fn packet(rate: u32) -> Vec<u8> {
        let mut b = vec![0u8; 48];
        b[0] = 0x47; // IHL 7: 8 bytes of options
        b[2..4].copy_from_slice(&48u16.to_be_bytes());
        b[8] = 64;
        RcpOption {
            rate_bytes_per_sec: rate,
            rtt_ms: 100,
        }
        .emit(&mut b[20..28])
        .unwrap();
        Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        b
    }

    #[test]
    fn lowers_only_when_smaller() {
        let mut b = packet(1_000_000);
        assert!(!lower_rcp_option(&mut b, 2_000_000));
        assert_eq!(b, packet(1_000_000));
        assert!(lower_rcp_option(&mut b, 500_000));
        assert_eq!(b, packet(500_000));
        assert!(Ipv4Packet::new_checked(&b[..]).unwrap().verify_checksum());
        let mut plain = vec![
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        assert!(!lower_rcp_option(&mut plain, 1));
        assert!(!lower_rcp_option(&mut [0x47, 1, 2], 1));
    }

    #[test]
    fn reads_the_senders_rtt() {
        assert_eq!(rcp_rtt_ms(&packet(5)), Some(100));
        let mut zero = packet(5);
        zero[26..28].copy_from_slice(&0u16.to_be_bytes());
        Ipv4Packet::new_unchecked(&mut zero[..]).fill_checksum();
        assert_eq!(rcp_rtt_ms(&zero), None);
        assert_eq!(rcp_rtt_ms(&[0x45, 0, 0, 20]), None);
        let mut plain = vec![
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        Ipv4Packet::new_unchecked(&mut plain[..]).fill_checksum();
        assert_eq!(rcp_rtt_ms(&plain), None);
    }

    #[test]
    fn unit_conversion_saturates() {
        assert_eq!(bytes_per_sec(12.5), 12_500);
        assert_eq!(bytes_per_sec(1e12), u32::MAX);
        assert_eq!(bytes_per_sec(f64::NAN), 0);
    }
}

//! What a controller's per-packet hooks see of a packet: its length and,
//! for TCP, the connection and its handshake/teardown flags — read from the
//! port's one parse of the packet ([`ka_codec::wire::Segment`]).

pub use ka_codec::wire::FlowKey;
use ka_codec::wire::Segment;
#[cfg(test)]
use ka_codec::wire::ipv4::PROTO_TCP;
use ka_codec::wire::tcp::{ACK, FIN, RST, SYN};

/// A packet as [`RateController::on_packet`](super::RateController::on_packet)
/// and [`RateController::rate_for`](super::RateController::rate_for) see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketInfo {
    /// IP bytes.
    pub len: usize,
    /// The TCP segment's facts, if the packet is TCP and its header could
    /// be read (not for non-first fragments).
    pub tcp: Option<TcpInfo>,
}

/// The TCP facts of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpInfo {
    /// The connection direction the packet belongs to.
    pub flow: FlowKey,
    /// SYN without ACK: an active open, i.e. a new connection.
    pub syn: bool,
    /// FIN or RST: the sender is done.
    pub fin: bool,
    /// TCP payload bytes (of this piece, for a leading fragment).
    pub payload: usize,
}

/// Reads `packet` (a whole IP packet that passed ingress), parsing it
/// once. Never panics; anything it cannot read has `tcp: None`.
pub fn inspect(packet: &[u8]) -> PacketInfo {
    match Segment::parse(packet) {
        Ok(seg) => inspect_segment(&seg),
        Err(_) => PacketInfo {
            len: packet.len(),
            tcp: None,
        },
    }
}

/// [`inspect`] of a packet parsed already.
pub fn inspect_segment(seg: &Segment<'_>) -> PacketInfo {
    let tcp = match (seg.tcp_header(), seg.tcp_payload_len(), seg.flow_key()) {
        (Some(h), Some(payload), Some(flow)) => Some(TcpInfo {
            flow,
            syn: h.flags & SYN != 0 && h.flags & ACK == 0,
            fin: h.flags & (FIN | RST) != 0,
            payload,
        }),
        _ => None,
    };
    PacketInfo {
        len: seg.bytes().len(),
        tcp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ka_codec::wire::checksum;

    fn v4_tcp(flags: u8, payload: usize) -> Vec<u8> {
        let total = 20 + 20 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let c = checksum::checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&40000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5001u16.to_be_bytes());
        p[32] = 5 << 4;
        p[33] = flags;
        p
    }

    #[test]
    fn reads_flags_key_and_payload() {
        let syn = inspect(&v4_tcp(SYN, 0)).tcp.unwrap();
        assert!(syn.syn && !syn.fin);
        assert_eq!(syn.flow.sport, 40000);
        assert_eq!(syn.flow.dport, 5001);
        assert_eq!(&syn.flow.src[10..], &[0xff, 0xff, 10, 0, 0, 1]);
        let synack = inspect(&v4_tcp(SYN | ACK, 0)).tcp.unwrap();
        assert!(!synack.syn, "SYN-ACK is not a new connection");
        let data = inspect(&v4_tcp(ACK, 1000)).tcp.unwrap();
        assert_eq!(data.payload, 1000);
        assert_eq!(data.flow, syn.flow);
        assert!(inspect(&v4_tcp(ACK | FIN, 0)).tcp.unwrap().fin);
        assert!(inspect(&v4_tcp(RST, 0)).tcp.unwrap().fin);
    }

    #[test]
    fn non_tcp_and_garbage_have_no_tcp() {
        let mut udp = v4_tcp(0, 10);
        udp[9] = 17;
        let c = {
            udp[10] = 0;
            udp[11] = 0;
            checksum::checksum(&udp[..20])
        };
        udp[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(inspect(&udp).tcp, None);
        assert_eq!(inspect(&[]).tcp, None);
        assert_eq!(inspect(&[0x45, 0, 0]).tcp, None);
        // a TCP header cut short
        let mut short = v4_tcp(ACK, 0);
        short.truncate(30);
        short[2..4].copy_from_slice(&30u16.to_be_bytes());
        assert_eq!(inspect(&short).tcp, None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            let i = inspect(&bytes);
            proptest::prop_assert_eq!(i.len, bytes.len());
        }
    }
}

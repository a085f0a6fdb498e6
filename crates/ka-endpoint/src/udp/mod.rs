//! LCCP-controlled UDP (DESIGN §5.3; seed `dcc-middleboxes.txt`): a
//! constant-bit-rate source whose rate a LCCP middlebox controls, and the
//! sink that reads the middlebox's signal and reports it back.
//!
//! The DCC seed's LCCP is "protocol independent", so it can control
//! traffic that has no congestion control of its own (UDP). Our LCCP
//! carrier is the one TCP uses (DESIGN §5.3): the middlebox's port
//! fragments on purpose so the leading fragment's payload length encodes
//! the per-flow rate (KA), or lowers the rate field of the native-RCP IPv4
//! option. A UDP application has no ACKs to echo it in, so:
//!
//! * [`CbrSource`] sends datagrams of a fixed size (IP total length
//!   `packet_bytes`, DF clear, the RCP option with rate `u32::MAX`, and an
//!   8-byte [`DataHeader`]: sequence number and a µs timestamp), paced at
//!   `min(app rate, signalled rate)` with exact integer-nanosecond gaps;
//! * [`CbrSink`] reads, per datagram, the leading fragment's length (if
//!   it was fragmented) and the RCP option's rate (if lowered), and every
//!   `report_every` datagrams — at once when the signal changed — sends a
//!   20-byte [`Feedback`] report back (UDP, DF set, so no KA router splits
//!   it): latest code, latest RCP rate, a count of signal-carrying
//!   datagrams, the latest timestamp (RTT) and datagrams received;
//! * the source takes a report whose count changed as a fresh signal and
//!   paces at the smaller of the rates it carries (KA codes decoded with
//!   the configured scale). A report with the same count is stale, as in
//!   the KA sender's mode machine (DESIGN §6.3).
//! * **Silence**: with no fresh signal for `max(4·srtt, 2 packet times)`
//!   (2 s before the first RTT sample) the source halves its rate, down to
//!   a floor — TFRC's no-feedback timer (RFC 5348 §4.4), the closest
//!   standard behaviour for a rate-based UDP sender that lost its feedback.
//!   A KA port that stops signalling (its TCP mode) thus makes controlled
//!   sources back off, as it makes KA senders fall back to TCP.
//! * Before its first fresh report a controlled source sends at
//!   `initial_rate_bps` (default 120 kbit/s); an **uncontrolled** source
//!   ([`CbrConfig::uncontrolled`]) sends at its application rate, with DF
//!   set and no option, and ignores reports — a plain CBR application.
//!
//! Reports are parsed with [`Feedback::parse`], which never panics; a
//! malformed one is counted and ignored. The sink serves one source and
//! keeps constant state, so nothing a stranger sends can make either side
//! allocate.

pub mod feedback;
pub mod sink;
pub mod source;

pub use feedback::{DataHeader, Feedback, FeedbackError};
pub use sink::{CbrSink, SinkConfig, SinkStats};
pub use source::{CbrConfig, CbrError, CbrSource, CbrStats, SourceInput};

use std::net::SocketAddrV4;

use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_UDP};

/// Length of a UDP header.
pub const UDP_HEADER_LEN: usize = 8;

/// A big-endian u16 at `at`.
fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(u16::from_be_bytes(s))
}

/// An unfragmented IPv4/UDP datagram: (source, destination, UDP payload).
fn parse_udp(packet: &[u8]) -> Option<(SocketAddrV4, SocketAddrV4, &[u8])> {
    let p = Ipv4Packet::new_checked(packet).ok()?;
    if p.protocol() != PROTO_UDP || p.is_fragment() {
        return None;
    }
    let payload = packet.get(p.header_len()..p.total_len())?;
    let sport = be16(payload, 0)?;
    let dport = be16(payload, 2)?;
    let udp_len = usize::from(be16(payload, 4)?);
    let body = payload.get(UDP_HEADER_LEN..udp_len.max(UDP_HEADER_LEN))?;
    Some((
        SocketAddrV4::new(p.src_addr().into(), sport),
        SocketAddrV4::new(p.dst_addr().into(), dport),
        body,
    ))
}

#[cfg(test)]
mod tests;

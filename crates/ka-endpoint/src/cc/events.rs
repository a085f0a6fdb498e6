//! What the connection reports to a [`Controller`](super::Controller): one
//! small value per event, with named fields.
//!
//! Each report method takes one of these instead of a list of positional
//! arguments, so a call site says what each number is, and a field a new
//! controller needs (delivery-rate samples for a BBR-style controller,
//! RACK's reordering information) is one more field here: the controllers
//! that do not read it keep their signatures as they are.

use crate::rtt::RttEstimator;
use std::time::{Duration, Instant};

/// An ACK acknowledged new data ([`Controller::on_ack`](super::Controller::on_ack)).
#[derive(Debug, Clone, Copy)]
pub struct Ack<'a> {
    /// When the ACK arrived.
    pub now: Instant,
    /// When the newest of the acknowledged segments was (last) sent.
    pub sent: Instant,
    /// Bytes newly acknowledged, cumulatively or by SACK.
    pub bytes: usize,
    /// The sender was not using its window: the window must not grow
    /// (RFC 7661 spirit).
    pub app_limited: bool,
    /// The connection's RTT estimator, this ACK's sample included.
    pub rtt: &'a RttEstimator,
}

/// A loss episode began, or an RTO fired
/// ([`Controller::on_congestion_event`](super::Controller::on_congestion_event)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CongestionEvent {
    /// When the loss was detected.
    pub now: Instant,
    /// When the lost segment was sent (events for segments sent before the
    /// current recovery started are ignored).
    pub sent: Instant,
    /// A retransmission timeout (the window collapses to one segment,
    /// RFC 5681 §3.1) rather than fast retransmit (the window halves for
    /// NewReno, × β for CUBIC).
    pub is_rto: bool,
    /// RFC 5681's FlightSize at the time of the event, bytes.
    pub bytes_in_flight: usize,
}

/// Explicit window feedback arrived on an ACK: an XCP-Echo
/// ([`Controller::on_feedback`](super::Controller::on_feedback)).
#[derive(Debug, Clone, Copy)]
pub struct Feedback<'a> {
    /// When the ACK carrying the echo arrived.
    pub now: Instant,
    /// When the newest segment the sender knows acknowledged was sent.
    pub sent: Instant,
    /// The window change the routers granted, bytes (negative: a decrease).
    pub bytes: i64,
    /// The connection's RTT estimator.
    pub rtt: &'a RttEstimator,
}

/// A data segment (new data or a retransmission) left
/// ([`Controller::on_packet_sent`](super::Controller::on_packet_sent)).
#[derive(Debug, Clone, Copy)]
pub struct PacketSent<'a> {
    /// When it left.
    pub now: Instant,
    /// Bytes of sequence space (payload plus FIN).
    pub bytes: usize,
    /// Bytes on the wire, TCP and IP headers included (what the pacer
    /// charges).
    pub wire_bytes: usize,
    /// The connection's RTT estimator.
    pub rtt: &'a RttEstimator,
}

/// One segment transmission was delivered: the first ACK or SACK covering
/// it arrived ([`Controller::on_packet_acked`](super::Controller::on_packet_acked)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketAcked {
    /// When the ACK arrived.
    pub now: Instant,
    /// When the transmission was sent (it names the transmission).
    pub sent: Instant,
    /// Bytes of sequence space.
    pub bytes: usize,
    /// For a segment never retransmitted (Karn), the RTT of the newest such
    /// segment the same ACK delivered (`now` minus its send time: the ACK's
    /// own RTT, free of the wait an older segment had at a delayed-ACK
    /// receiver); else `None`.
    pub rtt_sample: Option<Duration>,
}

/// One segment transmission was deemed lost (SACK rule, partial ACK, fast
/// retransmit or RTO)
/// ([`Controller::on_packet_lost`](super::Controller::on_packet_lost)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketLost {
    /// When the loss was detected.
    pub now: Instant,
    /// When the transmission was sent (it names the transmission).
    pub sent: Instant,
    /// Bytes of sequence space.
    pub bytes: usize,
}

/// Shorthands for the controllers' tests: the events with their fields in
/// the order the tests' tables read.
#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An ACK of `bytes` at `now`, newest segment sent at `sent`, not
    /// application-limited.
    pub(in crate::cc) fn ack(
        now: Instant,
        sent: Instant,
        bytes: usize,
        rtt: &RttEstimator,
    ) -> Ack<'_> {
        Ack {
            now,
            sent,
            bytes,
            app_limited: false,
            rtt,
        }
    }

    /// A fast-retransmit loss at `now` of a segment sent at `sent`.
    pub(in crate::cc) fn loss(
        now: Instant,
        sent: Instant,
        bytes_in_flight: usize,
    ) -> CongestionEvent {
        CongestionEvent {
            now,
            sent,
            is_rto: false,
            bytes_in_flight,
        }
    }

    /// A retransmission timeout at `now`; the oldest segment was sent at
    /// `sent`.
    pub(in crate::cc) fn rto(
        now: Instant,
        sent: Instant,
        bytes_in_flight: usize,
    ) -> CongestionEvent {
        CongestionEvent {
            is_rto: true,
            ..loss(now, sent, bytes_in_flight)
        }
    }

    /// An XCP-Echo of `bytes` at `now`.
    pub(in crate::cc) fn feedback(
        now: Instant,
        sent: Instant,
        bytes: i64,
        rtt: &RttEstimator,
    ) -> Feedback<'_> {
        Feedback {
            now,
            sent,
            bytes,
            rtt,
        }
    }

    /// A segment of `bytes` (`wire_bytes` on the wire) sent at `now`.
    pub(in crate::cc) fn packet_sent(
        now: Instant,
        bytes: usize,
        wire_bytes: usize,
        rtt: &RttEstimator,
    ) -> PacketSent<'_> {
        PacketSent {
            now,
            bytes,
            wire_bytes,
            rtt,
        }
    }

    /// The transmission sent at `sent` (`bytes`) delivered at `now`.
    pub(in crate::cc) fn packet_acked(
        now: Instant,
        sent: Instant,
        bytes: usize,
        rtt_sample: Option<Duration>,
    ) -> PacketAcked {
        PacketAcked {
            now,
            sent,
            bytes,
            rtt_sample,
        }
    }

    /// The transmission sent at `sent` (`bytes`) deemed lost at `now`.
    pub(in crate::cc) fn packet_lost(now: Instant, sent: Instant, bytes: usize) -> PacketLost {
        PacketLost { now, sent, bytes }
    }
}

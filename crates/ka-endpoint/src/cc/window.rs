//! The window rules NewReno and CUBIC share (RFC 5681 §3.1, RFC 3465,
//! RFC 6582): which ACKs may grow the window, slow start with byte counting,
//! one reaction per loss episode, and the floors on window and threshold.
//! Each controller keeps its own fields; these functions work on them.

use super::CongestionEvent;
use std::time::Instant;

/// Whether a segment sent at `sent` belongs to the loss episode that began
/// at `recovery_start` (it was sent before or when that episode began).
pub(super) fn in_recovery(recovery_start: Option<Instant>, sent: Instant) -> bool {
    recovery_start.is_some_and(|r| sent <= r)
}

/// Whether an ACK must leave the window alone: the sender was
/// application-limited, the newest acknowledged segment was sent before the
/// current loss episode began (the window stays at `ssthresh` during
/// recovery), or nothing new was acknowledged.
pub(super) fn ack_ignored(
    recovery_start: Option<Instant>,
    sent: Instant,
    bytes: usize,
    app_limited: bool,
) -> bool {
    app_limited || in_recovery(recovery_start, sent) || bytes == 0
}

/// Begins a loss episode at the event's `now` and returns `true`, or
/// returns `false` (and changes nothing) for a fast-retransmit loss of a
/// segment sent before the current episode began: one reaction per episode.
/// An RTO always begins a new one.
pub(super) fn begin_episode(recovery_start: &mut Option<Instant>, event: CongestionEvent) -> bool {
    if !event.is_rto && in_recovery(*recovery_start, event.sent) {
        return false;
    }
    *recovery_start = Some(event.now);
    true
}

/// The lowest slow-start threshold: two segments (RFC 5681 eq. 4).
pub(super) fn min_ssthresh(mss: usize) -> usize {
    2 * mss
}

/// `(cwnd, ssthresh)` for [`Controller::set_window`](super::Controller::set_window):
/// the window at least one segment, the threshold at least two.
pub(super) fn floored(window: usize, ssthresh: usize, mss: usize) -> (usize, usize) {
    (window.max(mss), ssthresh.max(min_ssthresh(mss)))
}

/// `(cwnd, ssthresh)` after a loss whose reduced threshold is `reduced`
/// (FlightSize/2 for NewReno, FlightSize·β for CUBIC): the threshold is at
/// least two segments; the window is the threshold after fast retransmit, one
/// segment after an RTO (the loss window).
pub(super) fn after_loss(reduced: usize, mss: usize, is_rto: bool) -> (usize, usize) {
    let ssthresh = reduced.max(min_ssthresh(mss));
    let cwnd = if is_rto { mss } else { ssthresh };
    (cwnd, ssthresh)
}

/// What [`slow_start`] did with an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlowStart {
    /// The window was not below `ssthresh`: all the bytes are for congestion
    /// avoidance.
    Off,
    /// Slow start took the whole ACK and grew the window by this many bytes.
    Grew(usize),
    /// This ACK took the window up to `ssthresh`; these bytes (more than
    /// zero) are left over for congestion avoidance.
    Ended(usize),
}

/// Slow start with byte counting: below `ssthresh`, `cwnd` grows by the
/// `bytes` acknowledged, at most RFC 3465's `L = 2·SMSS` per ACK, and stops
/// at `ssthresh`; the excess goes to congestion avoidance.
pub(super) fn slow_start(cwnd: &mut usize, ssthresh: usize, mss: usize, bytes: usize) -> SlowStart {
    if *cwnd >= ssthresh {
        return SlowStart::Off;
    }
    let inc = bytes.min(2 * mss);
    let room = ssthresh - *cwnd;
    if inc <= room {
        *cwnd += inc;
        return SlowStart::Grew(inc);
    }
    *cwnd = ssthresh;
    SlowStart::Ended(inc - room)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cc::events::tests::{loss, rto};
    use crate::rtt::RttEstimator;
    use std::time::Duration;

    /// An RTT estimator holding one `ms` sample (the controllers' tests).
    pub(in crate::cc) fn rtt(ms: u64) -> RttEstimator {
        let mut r = RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(1),
        );
        r.on_sample(Duration::from_millis(ms));
        r
    }

    #[test]
    fn slow_start_limits_and_leftover() {
        let mut cwnd = 10;
        assert_eq!(slow_start(&mut cwnd, 100, 3, 5), SlowStart::Grew(5));
        assert_eq!(cwnd, 15);
        assert_eq!(slow_start(&mut cwnd, 100, 3, 50), SlowStart::Grew(6));
        assert_eq!(cwnd, 21);
        assert_eq!(slow_start(&mut cwnd, 25, 3, 6), SlowStart::Ended(2));
        assert_eq!(cwnd, 25);
        assert_eq!(slow_start(&mut cwnd, 25, 3, 6), SlowStart::Off);
        assert_eq!(cwnd, 25);
    }

    #[test]
    fn one_reaction_per_episode() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(1);
        let mut rs = None;
        assert!(begin_episode(&mut rs, loss(t1, t0, 0)));
        assert_eq!(rs, Some(t1));
        assert!(!begin_episode(&mut rs, loss(t1, t0, 0)));
        assert!(ack_ignored(rs, t1, 1, false));
        assert!(!ack_ignored(rs, t1 + Duration::from_millis(1), 1, false));
        assert!(begin_episode(
            &mut rs,
            rto(t1 + Duration::from_millis(2), t0, 0)
        ));
        assert_eq!(after_loss(1, 10, false), (20, 20));
        assert_eq!(after_loss(50, 10, true), (10, 50));
    }
}

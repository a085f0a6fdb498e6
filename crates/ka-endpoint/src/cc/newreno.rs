//! NewReno window arithmetic (RFC 5681 §3.1, RFC 6582, RFC 3465).
//!
//! * Slow start (`cwnd < ssthresh`): `cwnd += min(N, L)` per ACK of `N` new
//!   bytes, with RFC 3465's limit `L = 2·SMSS` (so delayed ACKs do not halve
//!   the growth rate). Growth stops at `ssthresh`; the excess is counted
//!   towards congestion avoidance.
//! * Congestion avoidance: byte counting: `bytes_acked += N`; whenever
//!   `bytes_acked ≥ cwnd`, `bytes_acked −= cwnd` and `cwnd += SMSS`
//!   (RFC 5681 §3.1, the recommended method).
//! * Loss (fast retransmit): `ssthresh = max(FlightSize/2, 2·SMSS)`,
//!   `cwnd = ssthresh` (RFC 6582's post-recovery window; the temporary
//!   inflation by duplicate ACKs is applied by the connection).
//! * RTO: `ssthresh` as above, `cwnd = 1·SMSS` (the loss window).
//!
//! With `byte_counting: false` the window grows per ACK instead, as RFC 2581
//! and ns-3's `TcpNewReno` (3.44 included) do: `cwnd += SMSS` per new ACK
//! in slow start, `cwnd += max(1, SMSS²/cwnd)` per new ACK in congestion
//! avoidance. With delayed ACKs (one ACK per two segments) that is ×1.5 per
//! RTT in slow start and +½ SMSS per RTT in congestion avoidance. As in
//! ns-3's `TcpNewReno::IncreaseWindow`, the slow-start step is not capped
//! at ssthresh (`SlowStart` adds a whole SMSS while `cwnd < ssthresh`), and
//! an ACK of several segments that ends slow start also takes one
//! congestion-avoidance step with the segments it has left.

use super::window::{self, SlowStart};
use super::{Ack, CongestionEvent, Controller};
use std::time::Instant;

/// NewReno parameters.
#[derive(Debug, Clone, Copy)]
pub struct NewRenoConfig {
    /// Sender MSS in bytes.
    pub mss: usize,
    /// Initial window in bytes (RFC 6928: 10 segments).
    pub initial_window: usize,
    /// RFC 3465/5681 byte counting (default true); false = per-ACK counting
    /// (see the module docs).
    pub byte_counting: bool,
}

impl Default for NewRenoConfig {
    fn default() -> Self {
        NewRenoConfig {
            mss: 1460,
            initial_window: 14_600,
            byte_counting: true,
        }
    }
}

/// The NewReno controller.
#[derive(Debug, Clone)]
pub struct NewReno {
    mss: usize,
    cwnd: usize,
    ssthresh: usize,
    bytes_acked: usize,
    recovery_start: Option<Instant>,
    byte_counting: bool,
}

impl NewReno {
    /// A controller in slow start with the configured initial window.
    pub fn new(config: NewRenoConfig) -> Self {
        let mss = config.mss.max(1);
        NewReno {
            mss,
            cwnd: config.initial_window.max(mss),
            ssthresh: usize::MAX,
            bytes_acked: 0,
            recovery_start: None,
            byte_counting: config.byte_counting,
        }
    }
}

impl Controller for NewReno {
    fn on_ack(&mut self, ack: Ack<'_>) {
        let bytes = ack.bytes;
        if window::ack_ignored(self.recovery_start, ack.sent, bytes, ack.app_limited) {
            return;
        }
        if !self.byte_counting {
            // ns-3 counts `segmentsAcked` (at least one here: a new ACK).
            let mut segments = (bytes / self.mss).max(1);
            if self.cwnd < self.ssthresh {
                self.cwnd = self.cwnd.saturating_add(self.mss);
                segments -= 1;
            }
            if self.cwnd >= self.ssthresh && segments > 0 {
                let inc = (self.mss * self.mss / self.cwnd.max(1)).max(1);
                self.cwnd = self.cwnd.saturating_add(inc);
            }
            return;
        }
        let bytes = match window::slow_start(&mut self.cwnd, self.ssthresh, self.mss, bytes) {
            SlowStart::Off => bytes,
            SlowStart::Grew(_) => return,
            SlowStart::Ended(rest) => rest,
        };
        self.bytes_acked = self.bytes_acked.saturating_add(bytes);
        if self.bytes_acked >= self.cwnd {
            self.bytes_acked -= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(self.mss);
        }
    }

    fn on_congestion_event(&mut self, event: CongestionEvent) {
        if !window::begin_episode(&mut self.recovery_start, event) {
            return;
        }
        (self.cwnd, self.ssthresh) =
            window::after_loss(event.bytes_in_flight / 2, self.mss, event.is_rto);
        self.bytes_acked = 0;
    }

    fn window(&self) -> usize {
        self.cwnd
    }

    fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    fn set_window(&mut self, _now: Instant, window: usize, ssthresh: usize) {
        (self.cwnd, self.ssthresh) = window::floored(window, ssthresh, self.mss);
        self.bytes_acked = 0;
    }

    fn undo_congestion_event(&mut self, _now: Instant, window: usize, ssthresh: usize) {
        self.cwnd = self.cwnd.max(window);
        self.ssthresh = self.ssthresh.max(ssthresh);
        self.recovery_start = None;
        self.bytes_acked = 0;
    }

    fn set_mss(&mut self, mss: usize) {
        self.mss = mss.max(1);
        self.cwnd = self.cwnd.max(self.mss);
    }

    fn name(&self) -> &'static str {
        "newreno"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::events::tests::{ack, loss, rto};
    use crate::cc::window::tests::rtt;
    use std::time::Duration;

    const MSS: usize = 1000;

    fn nr() -> NewReno {
        NewReno::new(NewRenoConfig {
            mss: MSS,
            initial_window: 10 * MSS,
            byte_counting: true,
        })
    }

    #[test]
    fn per_ack_counting_grows_by_acks_not_bytes() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = NewReno::new(NewRenoConfig {
            mss: MSS,
            initial_window: MSS,
            byte_counting: false,
        });
        c.set_window(t0, MSS, 8 * MSS);
        let t1 = t0 + Duration::from_millis(1);
        // slow start: +1 MSS per ACK whatever it covers
        c.on_ack(ack(t1, t1, 2 * MSS, &r));
        assert_eq!(c.window(), 2 * MSS);
        for _ in 0..5 {
            c.on_ack(ack(t1, t1, 2 * MSS, &r));
        }
        assert_eq!(c.window(), 7 * MSS);
        // the ACK that reaches ssthresh spends its second segment on a
        // congestion-avoidance step (ns-3's IncreaseWindow): 8 MSS + 125
        c.on_ack(ack(t1, t1, 2 * MSS, &r));
        assert_eq!(c.window(), 8 * MSS + MSS / 8);
        // congestion avoidance: MSS²/cwnd per ACK (123 bytes at 8.125 MSS)
        c.on_ack(ack(t1, t1, 2 * MSS, &r));
        assert_eq!(c.window(), 8 * MSS + MSS / 8 + 123);
        // the slow-start step is a whole MSS even past ssthresh (ns-3's
        // SlowStart): 65 535-byte ssthresh, 1448-byte MSS → 46 segments
        let mut big = NewReno::new(NewRenoConfig {
            mss: 1448,
            initial_window: 1448,
            byte_counting: false,
        });
        big.set_window(t0, 45 * 1448, 65_535);
        big.on_ack(ack(t1, t1, 1448, &r));
        assert_eq!(big.window(), 46 * 1448);
        // with one ACK per two segments: about half an MSS per window
        let mut acks = 0;
        let start = c.window();
        while c.window() < start + MSS {
            c.on_ack(ack(t1, t1, 2 * MSS, &r));
            acks += 1;
        }
        assert!((7..=9).contains(&acks), "{acks} ACKs for one MSS");
        // no growth when app-limited or in recovery, as with byte counting
        let w = c.window();
        c.on_ack(Ack {
            app_limited: true,
            ..ack(t1, t1, MSS, &r)
        });
        assert_eq!(c.window(), w);
    }

    #[test]
    fn slow_start_doubles_per_rtt_with_per_segment_acks() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = nr();
        // one RTT: every segment of the window acked individually
        for round in 0..3 {
            let segs = c.window() / MSS;
            for _ in 0..segs {
                c.on_ack(ack(t0, t0, MSS, &r));
            }
            assert_eq!(c.window(), (10 * MSS) << (round + 1));
        }
    }

    #[test]
    fn slow_start_abc_limit_is_two_segments() {
        let t0 = Instant::now();
        let mut c = nr();
        c.on_ack(ack(t0, t0, 5 * MSS, &rtt(100)));
        assert_eq!(c.window(), 12 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = nr();
        c.set_window(t0, 10 * MSS, 10 * MSS);
        let t1 = t0 + Duration::from_millis(1);
        // acking 9 full segments: no growth yet; the 10th: +1 MSS
        for _ in 0..9 {
            c.on_ack(ack(t1, t1, MSS, &r));
        }
        assert_eq!(c.window(), 10 * MSS);
        c.on_ack(ack(t1, t1, MSS, &r));
        assert_eq!(c.window(), 11 * MSS);
        // next increment needs 11 segments
        for _ in 0..10 {
            c.on_ack(ack(t1, t1, MSS, &r));
        }
        assert_eq!(c.window(), 11 * MSS);
        c.on_ack(ack(t1, t1, MSS, &r));
        assert_eq!(c.window(), 12 * MSS);
    }

    #[test]
    fn loss_halves_flight_and_ignores_same_episode() {
        let t0 = Instant::now();
        let mut c = nr();
        let t1 = t0 + Duration::from_millis(10);
        c.on_congestion_event(loss(t1, t0, 40 * MSS));
        assert_eq!(c.ssthresh(), 20 * MSS);
        assert_eq!(c.window(), 20 * MSS);
        // a second loss from the same window does not halve again
        c.on_congestion_event(loss(t1 + Duration::from_millis(1), t0, 20 * MSS));
        assert_eq!(c.window(), 20 * MSS);
        // acks of old segments do not grow the window during recovery
        c.on_ack(ack(t1, t0, MSS, &rtt(100)));
        assert_eq!(c.window(), 20 * MSS);
        // a loss of a segment sent after recovery started is a new episode
        let t2 = t1 + Duration::from_millis(5);
        c.on_congestion_event(loss(t2 + Duration::from_millis(100), t2, 20 * MSS));
        assert_eq!(c.window(), 10 * MSS);
    }

    #[test]
    fn rto_collapses_to_one_segment_and_floor_is_two() {
        let t0 = Instant::now();
        let mut c = nr();
        c.on_congestion_event(rto(t0, t0, 3 * MSS));
        assert_eq!(c.window(), MSS);
        assert_eq!(c.ssthresh(), 2 * MSS);
        assert!(c.in_slow_start());
    }

    #[test]
    fn app_limited_does_not_grow() {
        let t0 = Instant::now();
        let mut c = nr();
        c.on_ack(Ack {
            app_limited: true,
            ..ack(t0, t0, MSS, &rtt(100))
        });
        assert_eq!(c.window(), 10 * MSS);
    }

    #[test]
    fn pacing_rate_uses_gain() {
        let c = nr();
        let r = rtt(100);
        // slow start: 2 * 10000 B / 0.1 s = 200 kB/s
        let p = c.pacing_rate(&r).unwrap();
        assert!((p - 200_000.0).abs() < 1e-6);
    }
}

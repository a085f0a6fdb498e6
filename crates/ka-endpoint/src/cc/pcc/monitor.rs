//! Monitor intervals (MIs): a stretch of sending at one target rate, and
//! what became of the packets sent in it.
//!
//! A packet belongs to the MI during which it was sent (by send time), so
//! its ACK or loss, which arrives an RTT or more later, is credited to the
//! rate that caused it. An MI is complete once every byte sent in it was
//! acknowledged or declared lost.

use std::time::{Duration, Instant};

/// What an MI is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Starting phase: rate doubled every MI until the utility falls.
    Start,
    /// Probing: trial `slot` (0..4) of the current round.
    Probe(usize),
    /// At the base rate while the trials' results are still out; its
    /// result is not used.
    Hold,
}

/// One monitor interval.
#[derive(Debug, Clone)]
pub(super) struct MonitorInterval {
    pub role: Role,
    /// Target (pacing) rate, bytes per second on the wire.
    pub rate: f64,
    pub start: Instant,
    /// The MI closes at the first departure at or after this time.
    pub planned_end: Instant,
    /// When it closed (the first departure of the next MI).
    pub end: Option<Instant>,
    /// Sequence-space bytes sent, acknowledged and lost.
    pub sent: u64,
    pub acked: u64,
    pub lost: u64,
    /// Bytes sent including headers (the pacer's measure).
    pub sent_wire: u64,
    /// RTT samples of this MI's packets against their send times.
    rtt: Regression,
}

impl MonitorInterval {
    pub fn new(role: Role, rate: f64, start: Instant, duration: Duration) -> Self {
        MonitorInterval {
            role,
            rate,
            start,
            planned_end: start + duration,
            end: None,
            sent: 0,
            acked: 0,
            lost: 0,
            sent_wire: 0,
            rtt: Regression::default(),
        }
    }

    /// Whether a packet sent at `t` belongs to this MI.
    pub fn contains(&self, t: Instant) -> bool {
        t >= self.start && self.end.is_none_or(|e| t < e)
    }

    pub fn on_sent(&mut self, bytes: usize, wire_bytes: usize) {
        self.sent += bytes as u64;
        self.sent_wire += wire_bytes as u64;
    }

    pub fn on_acked(&mut self, sent: Instant, bytes: usize, rtt: Option<Duration>) {
        self.acked += bytes as u64;
        if let Some(rtt) = rtt {
            let x = sent.saturating_duration_since(self.start).as_secs_f64();
            self.rtt.add(x, rtt.as_secs_f64());
        }
    }

    pub fn on_lost(&mut self, bytes: usize) {
        self.lost += bytes as u64;
    }

    /// Closed, and every byte sent in it accounted for.
    pub fn is_complete(&self) -> bool {
        self.end.is_some() && self.acked + self.lost >= self.sent
    }

    /// Declares whatever is still unaccounted for lost (the MI waited too
    /// long for its ACKs).
    pub fn give_up(&mut self) {
        self.lost += self.sent.saturating_sub(self.acked + self.lost);
    }

    /// Fraction of the accounted bytes that were lost (0 if none).
    pub fn loss_rate(&self) -> f64 {
        let total = self.acked + self.lost;
        if total == 0 {
            0.0
        } else {
            (self.lost as f64 / total as f64).min(1.0)
        }
    }

    /// `dRTT/dT`: least-squares slope of the RTT samples over send time.
    pub fn rtt_gradient(&self) -> f64 {
        self.rtt.slope()
    }

    /// Wire bytes per second actually sent from start to close (0 while
    /// open or for an empty interval).
    pub fn send_rate(&self) -> f64 {
        match self.end {
            Some(e) => {
                let d = e.saturating_duration_since(self.start).as_secs_f64();
                if d > 0.0 {
                    self.sent_wire as f64 / d
                } else {
                    0.0
                }
            }
            None => 0.0,
        }
    }
}

/// Running sums for a least-squares line through `(x, y)` points: O(1)
/// memory however many packets an MI has. `y` is kept relative to the
/// first sample, so the sums of squares do not lose the few microseconds
/// that matter to a 40 ms offset.
#[derive(Debug, Clone, Copy, Default)]
struct Regression {
    n: u32,
    y0: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl Regression {
    fn add(&mut self, x: f64, y: f64) {
        if !(x.is_finite() && y.is_finite()) {
            return;
        }
        if self.n == 0 {
            self.y0 = y;
        }
        let y = y - self.y0;
        self.n = self.n.saturating_add(1);
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// The slope; 0 with fewer than two points or (nearly) equal x values.
    fn slope(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = f64::from(self.n);
        let sxx = self.sxx - self.sx * self.sx / n;
        let sxy = self.sxy - self.sx * self.sy / n;
        // relative test: x values all (nearly) equal (or NaN sums)
        let spread = sxx > 1e-12 * self.sxx.max(f64::MIN_POSITIVE);
        if !spread {
            return 0.0;
        }
        let s = sxy / sxx;
        if s.is_finite() { s } else { 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_recovers_a_line() {
        let mut r = Regression::default();
        assert_eq!(r.slope(), 0.0);
        for i in 0..50 {
            let x = f64::from(i) * 0.001;
            // RTT 40 ms growing by 0.2 s per s, plus alternating ±0.5 ms
            let noise = if i % 2 == 0 { 0.0005 } else { -0.0005 };
            r.add(x, 0.040 + 0.2 * x + noise);
        }
        assert!((r.slope() - 0.2).abs() < 0.01, "{}", r.slope());
        // all samples at one x: no slope
        let mut r = Regression::default();
        r.add(0.5, 0.01);
        r.add(0.5, 0.09);
        assert_eq!(r.slope(), 0.0);
        // a 40 ms RTT growing by 1 µs per ms over a second of samples
        let mut r = Regression::default();
        for i in 0..1000 {
            let x = f64::from(i) * 0.001;
            r.add(x, 0.040 + 0.001 * x);
        }
        assert!((r.slope() - 0.001).abs() < 1e-9, "{}", r.slope());
    }

    #[test]
    fn accounting_and_completion() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut mi = MonitorInterval::new(Role::Start, 1e6, t0, ms(40));
        assert!(mi.contains(t0) && mi.contains(t0 + ms(100)));
        assert!(!mi.contains(t0 - ms(1)));
        for _ in 0..4 {
            mi.on_sent(1000, 1052);
        }
        mi.end = Some(t0 + ms(4));
        assert!(!mi.contains(t0 + ms(4)));
        assert!((mi.send_rate() - 4.0 * 1052.0 / 0.004).abs() < 1e-6);
        mi.on_acked(t0, 1000, Some(ms(40)));
        mi.on_acked(t0 + ms(1), 1000, Some(ms(41)));
        mi.on_lost(1000);
        assert!(!mi.is_complete());
        assert!((mi.loss_rate() - 1.0 / 3.0).abs() < 1e-12);
        assert!(
            (mi.rtt_gradient() - 1.0).abs() < 1e-9,
            "{}",
            mi.rtt_gradient()
        );
        mi.give_up();
        assert!(mi.is_complete());
        assert!((mi.loss_rate() - 0.5).abs() < 1e-12);
    }
}

//! The router's TCP-mode detector (DESIGN §4.4, paper §II-C2).
//!
//! Traffic that ignores the advertised rate shows up as a standing queue. When
//! the queue *reaches* the threshold (default 50 % of the queue limit, in
//! packets) the port enters TCP mode: it stops stamping and freezes R. It
//! leaves TCP mode once the queue has stayed *below* the threshold for the
//! hold time (default one average RTT d), so a queue oscillating around the
//! threshold does not make the port flap.
//!
//! The detector is evaluated after every enqueue attempt and every dequeue;
//! the hold expiry is an event of its own that the port processes at exactly
//! `below_since + hold` (with the d current at that point).

use crate::config::ModeConfig;

/// Whether the port is signalling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Kick-Ass mode: rates are signalled (stamped) and R is updated.
    #[default]
    Ka,
    /// TCP mode: no stamping, R frozen.
    Tcp,
}

/// Threshold + hold state machine. Times are nanoseconds on the port's clock.
#[derive(Debug, Clone)]
pub(crate) struct ModeDetector {
    threshold: usize,
    hold: Option<u64>,
    mode: Mode,
    /// In TCP mode: when the queue last went below the threshold (None while
    /// it is at or above it).
    below_since: Option<u64>,
    changes: u64,
}

impl ModeDetector {
    pub(crate) fn new(config: &ModeConfig, queue_limit: usize) -> Self {
        // `as usize` saturates for huge/inf values; NaN → 0 → clamped to 1.
        let threshold = (config.threshold_frac * queue_limit as f64).ceil() as usize;
        Self {
            threshold: threshold.max(1),
            hold: config.hold.map(crate::time::duration_ns),
            mode: Mode::Ka,
            below_since: None,
            changes: 0,
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    /// The threshold in packets.
    pub(crate) fn threshold(&self) -> usize {
        self.threshold
    }

    /// The queue now holds `len` packets (after an enqueue attempt or a
    /// dequeue at time `t`).
    pub(crate) fn on_queue(&mut self, t: u64, len: usize) {
        if len >= self.threshold {
            if self.mode == Mode::Ka {
                self.mode = Mode::Tcp;
                self.changes += 1;
            }
            self.below_since = None;
        } else if self.mode == Mode::Tcp && self.below_since.is_none() {
            self.below_since = Some(t);
        }
    }

    /// When TCP mode ends if nothing changes, given the current d (ns).
    pub(crate) fn expiry(&self, rtt_ns: u64) -> Option<u64> {
        if self.mode != Mode::Tcp {
            return None;
        }
        let hold = self.hold.unwrap_or(rtt_ns);
        self.below_since.map(|s| s.saturating_add(hold))
    }

    /// The hold expired: back to KA mode.
    pub(crate) fn expire(&mut self) {
        if self.mode == Mode::Tcp {
            self.mode = Mode::Ka;
            self.below_since = None;
            self.changes += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const D: u64 = 100_000_000; // 100 ms

    #[test]
    fn threshold_is_half_rounded_up() {
        let d = ModeDetector::new(&ModeConfig::default(), 1000);
        assert_eq!(d.threshold(), 500);
        let d = ModeDetector::new(&ModeConfig::default(), 7);
        assert_eq!(d.threshold(), 4);
        let d = ModeDetector::new(&ModeConfig::default(), 0);
        assert_eq!(d.threshold(), 1);
    }

    #[test]
    fn enters_at_threshold_not_before() {
        let mut d = ModeDetector::new(&ModeConfig::default(), 1000);
        d.on_queue(0, 499);
        assert_eq!(d.mode(), Mode::Ka);
        d.on_queue(1, 500);
        assert_eq!(d.mode(), Mode::Tcp);
        assert_eq!(d.changes(), 1);
    }

    #[test]
    fn oscillation_keeps_tcp_mode_and_hold_restarts() {
        let mut d = ModeDetector::new(&ModeConfig::default(), 1000);
        d.on_queue(0, 500);
        // Dips below and back above, each dip shorter than the hold.
        let mut t = 0;
        for _ in 0..50 {
            t += D / 2;
            d.on_queue(t, 499);
            assert_eq!(d.expiry(D), Some(t + D));
            t += D / 2 - 1;
            d.on_queue(t, 501);
            assert_eq!(d.expiry(D), None);
            assert_eq!(d.mode(), Mode::Tcp);
        }
        assert_eq!(d.changes(), 1);
        // Below from t on: expires exactly one d later.
        d.on_queue(t, 10);
        d.on_queue(t + 5, 3); // further dequeues keep the original start
        assert_eq!(d.expiry(D), Some(t + D));
        d.expire();
        assert_eq!(d.mode(), Mode::Ka);
        assert_eq!(d.changes(), 2);
        assert_eq!(d.expiry(D), None);
    }

    #[test]
    fn configured_hold_overrides_rtt() {
        let cfg = ModeConfig {
            threshold_frac: 0.25,
            hold: Some(Duration::from_millis(7)),
        };
        let mut d = ModeDetector::new(&cfg, 100);
        assert_eq!(d.threshold(), 25);
        d.on_queue(0, 30);
        d.on_queue(1_000, 0);
        assert_eq!(d.expiry(D), Some(1_000 + 7_000_000));
    }
}

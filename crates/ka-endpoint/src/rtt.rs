//! Round-trip-time estimation and the retransmission timeout (RFC 6298).
//!
//! `srtt`/`rttvar` follow RFC 6298 §2 exactly (α = 1/8, β = 1/4; the first
//! sample sets `srtt = R`, `rttvar = R/2`). The RTO is
//! `srtt + max(G, 4·rttvar)`, clamped to `[min_rto, max_rto]`, then doubled
//! for every consecutive timeout (exponential backoff, §5.5) up to `max_rto`.
//! RFC 6298 asks for `min_rto = 1 s`; that is the default, but it is
//! configurable so simulations and tests can use e.g. 200 ms (as Linux does).
//!
//! Karn's rule (no samples from retransmitted segments unless timestamps
//! disambiguate) is the connection's job: it only calls
//! [`RttEstimator::on_sample`] with unambiguous samples.

use std::time::Duration;

/// RFC 6298 RTT estimator plus RTO backoff state.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Duration,
    min: Duration,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
    backoff: u32,
}

impl RttEstimator {
    /// A fresh estimator: no sample yet, RTO = `initial_rto` (RFC 6298: 1 s).
    pub fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            latest: Duration::ZERO,
            min: Duration::MAX,
            initial_rto,
            min_rto,
            max_rto: max_rto.max(min_rto),
            granularity,
            backoff: 0,
        }
    }

    /// Feeds one unambiguous RTT measurement. Resets the backoff (RFC 6298
    /// §5.7: a new sample after a timeout recomputes the RTO).
    pub fn on_sample(&mut self, rtt: Duration) {
        self.latest = rtt;
        self.min = self.min.min(rtt);
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(rtt);
                // rttvar = 3/4 rttvar + 1/4 |srtt - R|; srtt = 7/8 srtt + 1/8 R
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        self.backoff = 0;
    }

    /// Whether any sample has arrived.
    pub fn has_sample(&self) -> bool {
        self.srtt.is_some()
    }

    /// Smoothed RTT, or `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// Smoothed RTT, or the initial RTO (RFC 6298's stand-in) before the
    /// first sample.
    pub fn srtt_or_initial(&self) -> Duration {
        self.srtt.unwrap_or(self.initial_rto)
    }

    /// RTT variation estimate.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The most recent sample (zero before the first).
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The smallest sample seen (`None` before the first).
    pub fn min_rtt(&self) -> Option<Duration> {
        self.srtt.map(|_| self.min)
    }

    /// The RTO without backoff: `srtt + max(G, 4·rttvar)` clamped to
    /// `[min_rto, max_rto]`, or the initial RTO before the first sample.
    pub fn base_rto(&self) -> Duration {
        match self.srtt {
            None => self.initial_rto.clamp(self.min_rto, self.max_rto),
            Some(srtt) => {
                let var = (self.rttvar * 4).max(self.granularity);
                srtt.saturating_add(var).clamp(self.min_rto, self.max_rto)
            }
        }
    }

    /// The current RTO including exponential backoff, at most `max_rto`.
    pub fn rto(&self) -> Duration {
        let base = self.base_rto();
        let factor = 1u32.checked_shl(self.backoff.min(31)).unwrap_or(u32::MAX);
        base.checked_mul(factor)
            .unwrap_or(self.max_rto)
            .min(self.max_rto)
    }

    /// Doubles the RTO (a retransmission timer expired, RFC 6298 §5.5).
    pub fn backoff(&mut self) {
        if self.rto() < self.max_rto {
            self.backoff = self.backoff.saturating_add(1);
        }
    }

    /// Clears the backoff (e.g. when an ACK for new data arrives).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// How many times the RTO has been doubled since the last reset.
    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(min_rto_ms: u64) -> RttEstimator {
        RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(min_rto_ms),
            Duration::from_secs(60),
            Duration::from_millis(1),
        )
    }

    #[test]
    fn initial_rto_is_one_second() {
        let e = est(1000);
        assert_eq!(e.rto(), Duration::from_secs(1));
        assert!(e.srtt().is_none());
    }

    #[test]
    fn first_and_second_sample_follow_rfc6298() {
        let mut e = est(200);
        e.on_sample(Duration::from_millis(100));
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.rttvar(), Duration::from_millis(50));
        // RTO = 100 + 4*50 = 300 ms
        assert_eq!(e.rto(), Duration::from_millis(300));
        e.on_sample(Duration::from_millis(200));
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(112_500 + 250_000));
    }

    #[test]
    fn min_rto_clamps_and_backoff_doubles_to_max() {
        let mut e = est(1000);
        e.on_sample(Duration::from_millis(10));
        assert_eq!(e.rto(), Duration::from_secs(1));
        let mut seen = vec![];
        for _ in 0..10 {
            e.backoff();
            seen.push(e.rto().as_secs());
        }
        assert_eq!(seen, vec![2, 4, 8, 16, 32, 60, 60, 60, 60, 60]);
        e.on_sample(Duration::from_millis(10));
        assert_eq!(e.rto(), Duration::from_secs(1));
    }

    #[test]
    fn granularity_floor_applies_when_rttvar_is_tiny() {
        let mut e = RttEstimator::new(
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::from_secs(60),
            Duration::from_millis(5),
        );
        for _ in 0..200 {
            e.on_sample(Duration::from_millis(50));
        }
        // rttvar decays to ~0 → RTO = srtt + G
        assert!(e.rto() >= Duration::from_millis(55));
        assert!(e.rto() < Duration::from_millis(56));
    }
}

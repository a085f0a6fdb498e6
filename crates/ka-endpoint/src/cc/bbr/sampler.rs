//! BBR's delivery-rate samples (DESIGN §6.1.3): what each transmission
//! remembers at send time, and the rate sample its delivery yields.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Transmissions remembered at most (a connection whose fates stop being
/// reported, e.g. one that was reset, cannot grow the map without bound;
/// the oldest are forgotten first).
const MAX_TRACKED: usize = 1 << 16;

/// The connection's delivery state, copied into each transmission when it
/// leaves.
#[derive(Debug, Clone, Copy)]
struct SentState {
    bytes: usize,
    /// `C.delivered` when it left.
    delivered: u64,
    /// `C.delivered_time` when it left.
    delivered_time: Instant,
    /// `C.first_sent_time` when it left.
    first_sent_time: Instant,
    /// Sent while the application, not the network, limited the sender.
    app_limited: bool,
}

/// One delivery-rate sample (the draft's `rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RateSample {
    /// Delivered bytes per second over the sample's interval; `None` when
    /// the interval is shorter than the minimum RTT (too short to be a
    /// trustworthy rate).
    pub delivery_rate: Option<f64>,
    /// The transmission was sent while application-limited.
    pub app_limited: bool,
    /// `C.delivered` when the transmission left (round counting).
    pub prior_delivered: u64,
    /// The ACK's RTT sample, if it has one.
    pub rtt: Option<Duration>,
}

/// The delivery-rate estimator: per-transmission state keyed by send time
/// (the name the connection gives a transmission) and a counter to keep
/// transmissions of the same instant apart.
#[derive(Debug, Clone, Default)]
pub(super) struct Sampler {
    /// `C.delivered`: bytes delivered so far.
    delivered: u64,
    /// `C.delivered_time`: when `delivered` last grew.
    delivered_time: Option<Instant>,
    /// `C.first_sent_time`: send time of the newest delivered
    /// transmission.
    first_sent_time: Option<Instant>,
    /// `C.app_limited`: while nonzero, transmissions are marked
    /// application-limited; cleared once `delivered` passes it.
    app_limited_until: u64,
    /// Bytes sent and neither delivered nor lost.
    inflight: u64,
    sent: BTreeMap<(Instant, u64), SentState>,
    next_id: u64,
}

impl Sampler {
    /// Bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Bytes in flight as the reports tell it.
    pub fn inflight(&self) -> u64 {
        self.inflight
    }

    /// A transmission of `bytes` left at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: usize) {
        if self.inflight == 0 {
            // Nothing in flight: the sample interval starts now, not at
            // the last delivery before an idle period.
            self.first_sent_time = Some(now);
            self.delivered_time = Some(now);
        }
        let state = SentState {
            bytes,
            delivered: self.delivered,
            delivered_time: self.delivered_time.unwrap_or(now),
            first_sent_time: self.first_sent_time.unwrap_or(now),
            app_limited: self.app_limited_until != 0,
        };
        if self.sent.len() >= MAX_TRACKED
            && let Some((&key, old)) = self.sent.iter().next()
        {
            self.inflight = self.inflight.saturating_sub(old.bytes as u64);
            self.sent.remove(&key);
        }
        self.sent.insert((now, self.next_id), state);
        self.next_id = self.next_id.wrapping_add(1);
        self.inflight += bytes as u64;
    }

    fn take(&mut self, sent: Instant) -> Option<SentState> {
        let key = *self.sent.range((sent, 0)..=(sent, u64::MAX)).next()?.0;
        let state = self.sent.remove(&key)?;
        self.inflight = self.inflight.saturating_sub(state.bytes as u64);
        Some(state)
    }

    /// The transmission sent at `sent` was delivered at `now`; its rate
    /// sample, or `None` for a transmission not tracked.
    ///
    /// `rate = Δdelivered / max(send_elapsed, ack_elapsed)`, with
    /// `send_elapsed = P.sent − P.first_sent_time` and
    /// `ack_elapsed = C.delivered_time − P.delivered_time`; an interval
    /// below `min_rtt` gives no rate.
    pub fn on_acked(
        &mut self,
        now: Instant,
        sent: Instant,
        rtt: Option<Duration>,
        min_rtt: Option<Duration>,
    ) -> Option<RateSample> {
        let p = self.take(sent)?;
        self.delivered += p.bytes as u64;
        self.delivered_time = Some(now);
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        self.first_sent_time = Some(sent);
        let send_elapsed = sent.saturating_duration_since(p.first_sent_time);
        let ack_elapsed = now.saturating_duration_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let delta = self.delivered - p.delivered;
        let long_enough = !interval.is_zero() && min_rtt.is_none_or(|m| interval >= m);
        Some(RateSample {
            delivery_rate: long_enough.then(|| delta as f64 / interval.as_secs_f64()),
            app_limited: p.app_limited,
            prior_delivered: p.delivered,
            rtt,
        })
    }

    /// The transmission sent at `sent` was deemed lost: it leaves the
    /// flight without counting as delivered.
    pub fn on_lost(&mut self, sent: Instant) {
        let _ = self.take(sent);
    }

    /// The sender is application-limited: mark transmissions until what is
    /// in flight now has been delivered.
    pub fn on_app_limited(&mut self) {
        self.app_limited_until = (self.delivered + self.inflight).max(1);
    }
}

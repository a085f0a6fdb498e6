//! Pieces the connection-following controllers ([`Crowd`](super::Crowd),
//! [`Echo`](super::Echo)) share: RCP's control law on a multiplier κ, and
//! the rate estimate they keep of traffic they do not follow.

use std::time::Duration;

use super::{MAX_BATCH_ITERATIONS, Measurement};
use crate::config::{RcpConfig, RcpUpdate};

/// An exponentially weighted rate estimate (B/ms) as of `at`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ewma {
    pub v: f64,
    pub at: Duration,
}

impl Ewma {
    /// The estimate at `now`, decayed with time constant `tau`.
    pub fn get(&self, now: Duration, tau: Duration) -> f64 {
        let dt = now.saturating_sub(self.at).as_secs_f64() / tau.as_secs_f64().max(1e-9);
        self.v * (-dt).exp()
    }

    /// `bytes` arrived at `now`.
    pub fn add(&mut self, now: Duration, tau: Duration, bytes: usize) {
        let now = now.max(self.at);
        self.v = self.get(now, tau) + bytes as f64 / (tau.as_secs_f64() * 1e3).max(1e-9);
        self.at = now;
    }
}

/// The multiplier of RCP's update for one interval of `m` (the same as
/// [`Rcp`](super::Rcp)'s, [`RcpConfig::update`]) on a link of `capacity`
/// B/ms with average RTT `d_ms`, for an arrival rate `y` (B/ms; the
/// controller's estimate, which may add demand already granted).
pub(super) fn factor(rcp: &RcpConfig, capacity: f64, d_ms: f64, m: &Measurement, y: f64) -> f64 {
    if capacity <= 0.0 {
        return 1.0;
    }
    let t = m.interval.as_secs_f64() * 1e3;
    let q = m.queue_bytes as f64;
    let x = (t / d_ms) * (rcp.alpha * (capacity - y) - rcp.beta * q / d_ms) / capacity;
    let f = match rcp.update {
        RcpUpdate::Linear => 1.0 + x,
        RcpUpdate::Exponential => x.exp(),
    };
    if f.is_finite() { f.max(0.0) } else { 1.0 }
}

/// κ after `n` intervals that all multiply it by `f`, within `[lo, hi]`
/// (the closed form; `n` is capped so the work stays bounded).
pub(super) fn after(kappa: f64, f: f64, n: u64, lo: f64, hi: f64) -> f64 {
    let n = n.min(MAX_BATCH_ITERATIONS.saturating_mul(1024));
    let k = if f <= 0.0 {
        lo
    } else {
        kappa.clamp(lo, hi) * f.powf(n as f64)
    };
    if k.is_nan() { lo } else { k.clamp(lo, hi) }
}

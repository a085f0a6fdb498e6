//! The port's clock: `Instant`s from the caller, nanoseconds inside.
//!
//! A port keeps every time as `u64` nanoseconds since the `Instant` it was
//! created with (its *epoch*); 2^64 ns is 584 years. Instants before the
//! epoch count as the epoch, and a `now` earlier than one already seen is
//! treated as the latest time seen (time never runs backwards inside a port).

use std::time::{Duration, Instant};

/// A duration in nanoseconds, saturating at `u64::MAX`.
pub(crate) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Converts between caller `Instant`s and port nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    epoch: Instant,
}

impl Clock {
    pub(crate) fn new(epoch: Instant) -> Self {
        Self { epoch }
    }

    /// `now` as nanoseconds since the epoch (0 if before it).
    pub(crate) fn ns(&self, now: Instant) -> u64 {
        duration_ns(now.saturating_duration_since(self.epoch))
    }

    /// Nanoseconds since the epoch back to an `Instant` (saturating at the
    /// largest representable instant, which no real timeline reaches).
    pub(crate) fn instant(&self, ns: u64) -> Instant {
        let d = Duration::from_nanos(ns);
        match self.epoch.checked_add(d) {
            Some(t) => t,
            // Unreachable in practice (centuries ahead); step down until it fits.
            None => {
                let mut secs = d.as_secs();
                loop {
                    secs /= 2;
                    if let Some(t) = self.epoch.checked_add(Duration::from_secs(secs)) {
                        break t;
                    }
                }
            }
        }
    }
}

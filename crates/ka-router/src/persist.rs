//! The persistent queue: the queue that did not drain within the last
//! round trip (XCP's `q`, DESIGN §3.5's deviation [`QueueMeasure::Persistent`]).
//!
//! The port reports every queue length it passes through to
//! `PersistentQueue::observe` (after each dequeue; arrivals only raise it)
//! and closes each control interval with `PersistentQueue::end_interval`,
//! which returns the smallest queue over the last `window` intervals.
//!
//! Memory: at most [`MAX_WINDOW_INTERVALS`] interval minima (the window is
//! clamped to that), whatever the RTT estimate says.
//!
//! [`QueueMeasure::Persistent`]: crate::QueueMeasure::Persistent

use std::collections::VecDeque;

/// Most control intervals one window spans: with the default T = 10 ms the
/// persistent queue looks back at most 640 ms, even on longer paths.
pub const MAX_WINDOW_INTERVALS: usize = 64;

/// The running minimum of the queue over a sliding window of intervals.
#[derive(Debug, Clone, Default)]
pub(crate) struct PersistentQueue {
    /// Smallest queue seen in the interval in progress.
    current: usize,
    /// Minima of the latest completed intervals, newest at the back.
    past: VecDeque<usize>,
}

impl PersistentQueue {
    /// The queue was `bytes` at some instant of the current interval.
    pub(crate) fn observe(&mut self, bytes: usize) {
        self.current = self.current.min(bytes);
    }

    /// Ends the current interval with the queue at `bytes` and starts the
    /// next one there; returns the smallest queue seen during the last
    /// `window` intervals (clamped to 1..=[`MAX_WINDOW_INTERVALS`]).
    pub(crate) fn end_interval(&mut self, bytes: usize, window: usize) -> usize {
        let window = window.clamp(1, MAX_WINDOW_INTERVALS);
        self.past.push_back(self.current.min(bytes));
        while self.past.len() > window {
            self.past.pop_front();
        }
        self.current = bytes;
        self.past.iter().copied().min().unwrap_or(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_that_empties_once_in_the_window_is_not_persistent() {
        let mut p = PersistentQueue::default();
        // Interval 1: the queue spikes to 15 kB but empties once.
        p.observe(15_000);
        p.observe(0);
        assert_eq!(p.end_interval(3_000, 4), 0);
        // Intervals 2–4 never go below 3 kB: the 0 of interval 1 still counts.
        for _ in 0..3 {
            p.observe(3_000);
            assert_eq!(p.end_interval(4_500, 4), 0);
        }
        // Interval 5: interval 1 left the window; 3 kB stood all along.
        assert_eq!(p.end_interval(4_500, 4), 3_000);
    }

    #[test]
    fn window_of_one_is_the_interval_minimum() {
        let mut p = PersistentQueue::default();
        p.end_interval(9_000, 1);
        p.observe(6_000);
        assert_eq!(p.end_interval(7_500, 1), 6_000);
        assert_eq!(p.end_interval(7_500, 1), 7_500);
    }

    #[test]
    fn memory_is_capped_whatever_the_window() {
        let mut p = PersistentQueue::default();
        let mut min = usize::MAX;
        // A rising queue: the window's minimum is its oldest interval.
        for i in 0..10 * MAX_WINDOW_INTERVALS {
            min = p.end_interval(i, usize::MAX);
        }
        assert_eq!(p.past.len(), MAX_WINDOW_INTERVALS);
        // Interval i started at queue i − 1; the oldest kept is i = 576.
        assert_eq!(min, 9 * MAX_WINDOW_INTERVALS - 1);
    }
}

//! The shaper (serialises at C) and the delay line (adds the propagation
//! delay).
//!
//! The shaper models one transmitter: a piece of `n` bytes that starts when
//! the link is free occupies it for exactly `n·8/C` seconds. Serialisation
//! times are computed in integer nanoseconds with the sub-nanosecond
//! remainder carried to the next piece, so the long-run rate is exactly C
//! (no rounding drift) and back-to-back pieces are never closer than their
//! serialisation time (up to the < 1 ns carried remainder).

use std::collections::VecDeque;

const NS_PER_S: u128 = 1_000_000_000;

/// One transmitter of capacity C.
#[derive(Debug, Clone)]
pub(crate) struct Shaper {
    capacity_bps: u128,
    /// When the link finishes its current transmission (ns).
    free_at: u64,
    /// Carried remainder of `bits · 10⁹ / C`, always `< C`.
    rem: u128,
}

impl Shaper {
    pub(crate) fn new(capacity_bps: u64) -> Self {
        Self {
            capacity_bps: u128::from(capacity_bps.max(1)),
            free_at: 0,
            rem: 0,
        }
    }

    /// Serialise later pieces at `capacity_bps` (≥ 1); the piece on the
    /// wire keeps its end time. The carried remainder belonged to the old
    /// rate and is dropped (< 1 ns).
    pub(crate) fn set_capacity(&mut self, capacity_bps: u64) {
        self.capacity_bps = u128::from(capacity_bps.max(1));
        self.rem = 0;
    }

    /// When the link is free.
    pub(crate) fn free_at(&self) -> u64 {
        self.free_at
    }

    /// The link was idle until `t`: the next transmission starts no earlier.
    pub(crate) fn idle_until(&mut self, t: u64) {
        if self.free_at < t {
            self.free_at = t;
            self.rem = 0;
        }
    }

    /// Transmits `bytes` starting when the link is free; returns when the
    /// last bit has left (ns).
    pub(crate) fn send(&mut self, bytes: usize) -> u64 {
        let num = (bytes as u128) * 8 * NS_PER_S + self.rem;
        let ns = num / self.capacity_bps;
        self.rem = num % self.capacity_bps;
        self.free_at = self
            .free_at
            .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX));
        self.free_at
    }
}

/// Packets in flight on the wire, in order of release time (ties: in the
/// order they were pushed). Without an impairment stage release times are
/// pushed in non-decreasing order, and the line is a FIFO.
#[derive(Debug, Clone, Default)]
pub(crate) struct DelayLine {
    pieces: VecDeque<(u64, Vec<u8>)>,
}

impl DelayLine {
    /// Puts `piece` on the line, to be released at `release`. Returns
    /// whether it went ahead of a piece pushed before it (one released
    /// later), which only a jittered or reordered push does.
    pub(crate) fn push(&mut self, release: u64, piece: Vec<u8>) -> bool {
        match self.pieces.back() {
            Some((last, _)) if *last > release => {
                let at = self.pieces.partition_point(|(r, _)| *r <= release);
                self.pieces.insert(at, (release, piece));
                true
            }
            _ => {
                self.pieces.push_back((release, piece));
                false
            }
        }
    }

    /// The earliest release time.
    pub(crate) fn next_release(&self) -> Option<u64> {
        self.pieces.front().map(|(t, _)| *t)
    }

    /// The front piece if it is released at or before `t`.
    pub(crate) fn pop_ready(&mut self, t: u64) -> Option<Vec<u8>> {
        match self.pieces.front() {
            Some((r, _)) if *r <= t => self.pieces.pop_front().map(|(_, p)| p),
            _ => None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.pieces.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_time_exact_over_time() {
        // 1500 bytes at 100 Mbit/s = 120 µs exactly.
        let mut s = Shaper::new(100_000_000);
        assert_eq!(s.send(1500), 120_000);
        assert_eq!(s.send(1500), 240_000);
        // 1 byte at 3 bit/s = 8/3 s: remainder carried, 3 bytes = 8 s.
        let mut s = Shaper::new(3);
        let a = s.send(1);
        let b = s.send(1);
        let c = s.send(1);
        assert_eq!(a, 2_666_666_666);
        assert_eq!(b, 5_333_333_333);
        assert_eq!(c, 8_000_000_000);
    }

    #[test]
    fn capacity_change_applies_to_later_pieces() {
        // 1500 B at 100 Mbit/s = 120 µs; then at 50 Mbit/s = 240 µs.
        let mut s = Shaper::new(100_000_000);
        assert_eq!(s.send(1500), 120_000);
        s.set_capacity(50_000_000);
        assert_eq!(s.send(1500), 360_000);
        s.set_capacity(0); // clamped to 1 bit/s, never a division by zero
        assert_eq!(s.send(1), 360_000 + 8_000_000_000);
    }

    #[test]
    fn idle_resets_start() {
        let mut s = Shaper::new(8_000_000_000); // 1 ns per byte
        assert_eq!(s.send(10), 10);
        s.idle_until(5); // link still busy: no effect
        assert_eq!(s.free_at(), 10);
        s.idle_until(100);
        assert_eq!(s.send(10), 110);
    }

    #[test]
    fn delay_line_releases_in_order() {
        let mut d = DelayLine::default();
        d.push(10, vec![1]);
        d.push(20, vec![2]);
        assert_eq!(d.next_release(), Some(10));
        assert_eq!(d.pop_ready(9), None);
        assert_eq!(d.pop_ready(15), Some(vec![1]));
        assert_eq!(d.pop_ready(15), None);
        assert_eq!(d.len(), 1);
        assert_eq!(d.pop_ready(20), Some(vec![2]));
        assert_eq!(d.next_release(), None);
    }

    #[test]
    fn delay_line_sorts_by_release_and_keeps_ties_in_push_order() {
        let mut d = DelayLine::default();
        assert!(!d.push(30, vec![1]));
        assert!(!d.push(30, vec![2]), "a tie does not overtake");
        assert!(d.push(10, vec![3]));
        assert!(d.push(30 - 1, vec![4]));
        assert!(!d.push(40, vec![5]));
        assert!(
            d.push(30, vec![6]),
            "behind the 30s pushed earlier, ahead of 40"
        );
        let out: Vec<u8> = std::iter::from_fn(|| d.pop_ready(u64::MAX).map(|p| p[0])).collect();
        assert_eq!(out, [3, 4, 1, 2, 6, 5]);
    }
}

//! Which connections of a [`Stack`](super::Stack) may have work, so that no
//! call scans the whole connection table (DESIGN §6.8).
//!
//! * **Timers**: a binary heap of `(deadline, connection id, generation)`
//!   with lazy invalidation. A connection's deadline is recomputed (from
//!   [`Connection::poll_timeout`](crate::Connection::poll_timeout)) only
//!   after the stack or the application touched it; the superseded heap
//!   entry stays behind and is dropped when it reaches the top (its
//!   generation no longer matches). Earliest deadline: O(log n) amortised.
//! * **Transmit candidates** (`ready`): connections touched since they last
//!   had nothing to send, plus those whose deadline has passed. A
//!   connection that had nothing to send and has not been touched since
//!   cannot have anything before its deadline: everything time-driven in
//!   its send path (pacing release, delayed ACK, RTT indicator, retransmit
//!   timer) is one of the deadlines `poll_timeout` reports. So a
//!   round-robin pass over the candidates, in connection-id order from the
//!   cursor, services exactly the connections a pass over the whole table
//!   would, in the same order.
//! * **Event candidates**: connections touched since events were last
//!   collected (events are only ever queued by a call on the connection),
//!   collected in id order as a full pass would.
//!
//! All sets are ordered by connection id, the order the table itself uses,
//! so ties (equal deadlines) are broken by id exactly as before.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

/// Hashes connection ids (assigned by the stack in sequence, never chosen
/// by a peer, so no HashDoS concern) by one multiplication.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A list of connection ids with duplicates allowed but kept in check
/// (compacted whenever it doubles), reusing its allocation: the
/// candidate lists are filled and emptied on every event, and a B-tree
/// would allocate and free a node each time.
#[derive(Debug)]
pub(super) struct IdList {
    ids: Vec<u64>,
    compact_at: usize,
}

impl Default for IdList {
    fn default() -> Self {
        IdList {
            ids: Vec::new(),
            compact_at: 64,
        }
    }
}

impl IdList {
    fn push(&mut self, id: u64) {
        if self.ids.last() == Some(&id) {
            return;
        }
        if self.ids.len() >= self.compact_at {
            self.sort();
            self.compact_at = 2 * self.ids.len() + 64;
        }
        self.ids.push(id);
    }

    fn sort(&mut self) {
        self.ids.sort_unstable();
        self.ids.dedup();
    }

    /// Moves the ids, sorted and without duplicates, into `out` (cleared
    /// first), leaving the list empty.
    pub(super) fn take_sorted(&mut self, out: &mut Vec<u64>) {
        self.sort();
        out.clear();
        std::mem::swap(&mut self.ids, out);
        self.compact_at = 64;
    }
}

/// The scheduling state; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Sched {
    heap: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    /// Connection id → (deadline, generation) of its live heap entry.
    armed: HashMap<u64, (Instant, u64), BuildHasherDefault<IdHasher>>,
    next_gen: u64,
    /// Touched since its deadline was last computed.
    dirty: IdList,
    /// Scratch for `flush` and `take_due` (kept for its allocation).
    scratch: Vec<u64>,
    /// May have a packet to send.
    pub(super) ready: BTreeSet<u64>,
    /// May have events queued (ids of removed connections may linger).
    pub(super) events: IdList,
    /// Half-open (SYN-RECEIVED) as of the last flush.
    half_open: BTreeSet<u64>,
}

impl Sched {
    /// Connection `id` was (or is about to be) changed.
    pub(super) fn touch(&mut self, id: u64) {
        self.dirty.push(id);
        self.ready.insert(id);
        self.events.push(id);
    }

    /// Connection `id` is gone. (It may linger in the id lists: their
    /// consumers skip ids with no connection, and ids are never reused.)
    pub(super) fn forget(&mut self, id: u64) {
        self.armed.remove(&id);
        self.ready.remove(&id);
        self.half_open.remove(&id);
    }

    /// Recomputes the deadlines (and half-open flags) of touched
    /// connections; `state` gives a connection's current deadline (None: no
    /// timer, or no such connection) and whether it is half-open.
    pub(super) fn flush(&mut self, mut state: impl FnMut(u64) -> (Option<Instant>, bool)) {
        let mut ids = std::mem::take(&mut self.scratch);
        self.dirty.take_sorted(&mut ids);
        for &id in &ids {
            let (deadline, half_open) = state(id);
            if half_open {
                self.half_open.insert(id);
            } else {
                self.half_open.remove(&id);
            }
            match deadline {
                Some(t) => {
                    if self.armed.get(&id).is_some_and(|&(at, _)| at == t) {
                        continue;
                    }
                    self.next_gen += 1;
                    self.armed.insert(id, (t, self.next_gen));
                    self.heap.push(Reverse((t, id, self.next_gen)));
                }
                None => {
                    self.armed.remove(&id);
                }
            }
        }
        self.scratch = ids;
        // Superseded entries are dropped as they surface; rebuild if they
        // pile up (deadlines pushed ever later never surface on their own).
        if self.heap.len() > 2 * self.armed.len() + 64 {
            let live = self.armed.iter().map(|(&id, &(t, g))| Reverse((t, id, g)));
            self.heap = live.collect();
        }
    }

    /// Half-open connections as of the last flush.
    pub(super) fn half_open(&self) -> usize {
        self.half_open.len()
    }

    fn live(&self, e: &Reverse<(Instant, u64, u64)>) -> bool {
        let Reverse((t, id, g)) = *e;
        self.armed.get(&id) == Some(&(t, g))
    }

    /// The earliest deadline (call [`Sched::flush`] first).
    pub(super) fn earliest(&mut self) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if self.live(top) {
                return Some(top.0.0);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes the connections whose deadline is at or before `now` from
    /// the heap and puts their ids into `due` (cleared first), in id order.
    /// Only connections touched since the last [`Sched::flush`] may have a
    /// different deadline by now. They count as touched: their deadlines
    /// are recomputed at the next flush.
    pub(super) fn take_due(&mut self, now: Instant, due: &mut Vec<u64>) {
        due.clear();
        while let Some(top) = self.heap.peek() {
            if !self.live(top) {
                self.heap.pop();
                continue;
            }
            let Reverse((t, id, _)) = *top;
            if t > now {
                break;
            }
            self.heap.pop();
            self.armed.remove(&id);
            due.push(id);
        }
        due.sort_unstable();
        for &id in due.iter() {
            self.touch(id);
        }
    }

    /// Heap entries, live and superseded (for tests).
    #[cfg(test)]
    pub(super) fn heap_len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn earliest_follows_recomputed_deadlines_and_breaks_ties_by_id() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut deadlines: HashMap<u64, Option<Instant>> = HashMap::new();
        deadlines.insert(1, Some(at(30)));
        deadlines.insert(2, Some(at(10)));
        deadlines.insert(3, Some(at(10)));
        let mut s = Sched::default();
        for id in 1..=3 {
            s.touch(id);
        }
        s.flush(|id| (deadlines.get(&id).copied().flatten(), false));
        assert_eq!(s.earliest(), Some(at(10)));
        // Connection 2 moves its timer later: the old entry is superseded.
        deadlines.insert(2, Some(at(50)));
        s.touch(2);
        s.flush(|id| (deadlines.get(&id).copied().flatten(), false));
        assert_eq!(s.earliest(), Some(at(10)));
        let mut due = Vec::new();
        s.take_due(at(10), &mut due);
        assert_eq!(due, vec![3]);
        // 3 is due again only if its deadline is still due when recomputed.
        deadlines.insert(3, None);
        s.flush(|id| (deadlines.get(&id).copied().flatten(), false));
        assert_eq!(s.earliest(), Some(at(30)));
        // Equal deadlines come out in id order.
        deadlines.insert(3, Some(at(30)));
        s.touch(3);
        s.flush(|id| (deadlines.get(&id).copied().flatten(), false));
        s.take_due(at(60), &mut due);
        assert_eq!(due, vec![1, 2, 3]);
        s.flush(|_| (None, false));
        assert_eq!(s.earliest(), None);
    }

    #[test]
    fn superseded_entries_do_not_pile_up() {
        let t0 = Instant::now();
        let mut s = Sched::default();
        for k in 0..10_000u64 {
            s.touch(7);
            s.flush(|_| (Some(t0 + Duration::from_millis(k)), false));
        }
        assert!(s.heap_len() <= 2 + 64, "heap holds {}", s.heap_len());
        assert_eq!(s.earliest(), Some(t0 + Duration::from_millis(9_999)));
    }

    #[test]
    fn forgotten_connections_leave_every_set() {
        let t0 = Instant::now();
        let mut s = Sched::default();
        s.touch(4);
        s.flush(|_| (Some(t0), true));
        assert_eq!(s.half_open(), 1);
        s.forget(4);
        assert!(s.ready.is_empty());
        assert_eq!(s.half_open(), 0);
        assert_eq!(s.earliest(), None);
        let mut due = vec![9];
        s.take_due(t0, &mut due);
        assert!(due.is_empty());
    }

    #[test]
    fn id_lists_stay_compact_and_come_out_sorted() {
        let mut l = IdList::default();
        for k in 0..100_000u64 {
            l.push(k % 7);
            l.push(3);
        }
        assert!(l.ids.len() <= 2 * 7 + 64 + 1, "{} ids held", l.ids.len());
        let mut out = vec![42];
        l.take_sorted(&mut out);
        assert_eq!(out, (0..7).collect::<Vec<u64>>());
        assert!(l.ids.is_empty());
    }
}

//! The receiver's pending DSACK reports (RFC 2883).
//!
//! Every duplicate segment deserves its own report: a sender that undoes a
//! spurious retransmission on DSACKs (`conn::ka_undo`, Linux's DSACK undo)
//! waits until every retransmitted byte has been reported, and one missing
//! report leaves a flow in TCP mode until its ordinary re-entry rules let
//! it back (measured on the reordering testbed, `tests/netns_reorder.rs`,
//! on a loaded host, with one pending range and no report for PAWS drops:
//! 6 of 78 retransmissions went unreported, and the flow spent 1.8 s in
//! TCP mode instead of one RTT; DESIGN §6.9). RFC 2883
//! allows one DSACK block per ACK, so Linux answers each out-of-window
//! duplicate with an ACK of its own (`tcp_send_dupack`). A sans-IO
//! connection reads a whole batch before it writes, so it keeps the
//! duplicates of the batch here and sends one ACK per range.

/// Duplicate ranges kept at once. A batch holds at most a few dozen
/// segments and the duplicates in it are those a reordering made the
/// sender resend, typically one or two; beyond the cap a report is lost,
/// as it was before this queue (the sender then undoes later or not).
pub(super) const DSACK_QUEUE_CAP: usize = 8;

/// Duplicate ranges `[l, r)` (absolute sequence numbers) waiting for an
/// ACK each, oldest first. Fixed size: a stranger sending duplicates makes
/// us send at most one extra ACK per duplicate, never allocate.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DsackQueue {
    ranges: [(u64, u64); DSACK_QUEUE_CAP],
    len: usize,
}

impl DsackQueue {
    /// Records a duplicate `[l, r)`. One that touches or overlaps a range
    /// still waiting extends it (RFC 2883 allows one block for a
    /// contiguous duplicate range); another waits for an ACK of its own.
    /// When the queue is full the new range is dropped rather than merged
    /// with a waiting one: reporting bytes that did not arrive twice would
    /// make the sender undo on a real loss.
    pub(super) fn note(&mut self, l: u64, r: u64) {
        if l >= r {
            return;
        }
        let live = self.ranges.get_mut(..self.len).unwrap_or_default();
        if let Some(e) = live.iter_mut().find(|(pl, pr)| l <= *pr && *pl <= r) {
            *e = (e.0.min(l), e.1.max(r));
            return;
        }
        if let Some(slot) = self.ranges.get_mut(self.len) {
            *slot = (l, r);
            self.len += 1;
        }
    }

    /// The range the next ACK reports in its first SACK block.
    pub(super) fn front(&self) -> Option<(u64, u64)> {
        (self.len > 0)
            .then(|| self.ranges.first().copied())
            .flatten()
    }

    /// Whether no duplicate waits for a report.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// An ACK went out with [`DsackQueue::front`]: drop it. Returns whether
    /// more ranges wait (the caller then owes another ACK at once).
    pub(super) fn pop_front(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        self.ranges.copy_within(1..self.len, 0);
        self.len -= 1;
        self.len > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut DsackQueue) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        while let Some(f) = q.front() {
            out.push(f);
            q.pop_front();
        }
        out
    }

    #[test]
    fn separate_duplicates_each_get_a_report() {
        let mut q = DsackQueue::default();
        q.note(100, 200);
        q.note(500, 600);
        q.note(900, 1000);
        assert_eq!(drain(&mut q), vec![(100, 200), (500, 600), (900, 1000)]);
        assert!(q.is_empty());
    }

    #[test]
    fn touching_or_overlapping_duplicates_share_one_report() {
        let mut q = DsackQueue::default();
        q.note(100, 200);
        q.note(200, 300);
        q.note(150, 250);
        q.note(50, 100);
        assert_eq!(drain(&mut q), vec![(50, 300)]);
    }

    #[test]
    fn the_queue_is_capped_and_keeps_the_oldest() {
        let mut q = DsackQueue::default();
        for i in 0..(DSACK_QUEUE_CAP as u64 + 5) {
            q.note(i * 1000, i * 1000 + 100);
        }
        let all = drain(&mut q);
        assert_eq!(all.len(), DSACK_QUEUE_CAP);
        assert_eq!(all.first(), Some(&(0, 100)));
        assert_eq!(
            all.last(),
            Some(&(
                (DSACK_QUEUE_CAP as u64 - 1) * 1000,
                (DSACK_QUEUE_CAP as u64 - 1) * 1000 + 100
            ))
        );
    }

    #[test]
    fn pop_reports_whether_more_wait_and_empty_ranges_are_ignored() {
        let mut q = DsackQueue::default();
        q.note(5, 5);
        assert!(q.is_empty());
        assert!(!q.pop_front());
        q.note(1, 2);
        q.note(10, 20);
        assert!(q.pop_front());
        assert!(!q.pop_front());
        assert_eq!(q.front(), None);
    }
}

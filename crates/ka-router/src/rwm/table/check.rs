//! The table's invariants, checked by the tests after every packet.

use super::{NIL, Probe, Stage, Table, Which};

impl Table {
    /// Walks both lists and recounts everything (tests only): the links
    /// agree with the lengths, every entry is found where it is, the lists
    /// are in order, the active flows are exactly a prefix of the
    /// established list ending at `oldest_active`, the per-class counts
    /// and shares match, and the index is within its bounds.
    pub(crate) fn check(&self) {
        let mut per_class = vec![0u32; self.classes.len()];
        let mut closed = 0;
        for (w, l) in [(Which::HalfOpen, self.half), (Which::Established, self.est)] {
            let (mut i, mut prev, mut n) = (l.head, NIL, 0);
            let mut seen_inactive = false;
            let mut last_active = NIL;
            let mut moved = u64::MAX;
            while i != NIL {
                let h = self.buckets.get(i).expect("listed entries are live");
                let c = &self.cold[i as usize];
                assert_eq!(self.buckets.probe(c.fp), Probe::Found(i));
                assert_eq!(c.which, w);
                assert_eq!(c.prev, prev);
                assert!(c.moved <= moved, "list out of order");
                moved = c.moved;
                if w == Which::Established {
                    assert_eq!(h.stage(), Stage::Established);
                    if h.active() {
                        assert!(!seen_inactive, "active flow after an inactive one");
                        per_class[usize::from(h.class)] += 1;
                        last_active = i;
                    } else {
                        seen_inactive = true;
                    }
                } else {
                    assert!(!h.active());
                    assert_ne!(h.stage(), Stage::Established);
                    closed += usize::from(h.stage() == Stage::Closed);
                }
                prev = i;
                i = c.next;
                n += 1;
            }
            assert_eq!(l.tail, prev);
            assert_eq!(l.len, n);
            if w == Which::Established {
                assert_eq!(self.oldest_active, last_active);
            }
        }
        for (c, &n) in self.classes.iter().zip(&per_class) {
            assert_eq!(c.active, n);
            assert_eq!(c.per_flow, c.rate.map(|r| r / f64::from(n.max(1))));
        }
        assert_eq!(self.buckets.live(), self.half.len + self.est.len);
        assert_eq!(self.closed, closed, "closed connections counted");
        assert!(self.half.len <= self.max_half_open && self.est.len <= self.max_flows);
        assert!(self.buckets.bucket_count() <= self.max_buckets);
        assert_eq!(self.cold.len(), self.buckets.capacity());
        if self.active() > 0 {
            assert!(self.next_deadline < u64::MAX);
        }
        assert!(self.next_check <= self.epoch_end && self.next_check <= self.next_deadline);
    }
}

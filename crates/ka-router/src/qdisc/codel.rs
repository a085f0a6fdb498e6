//! The CoDel state machine (RFC 8289), one instance per FQ-CoDel flow
//! queue (RFC 8290 §4.2, §5).
//!
//! This is RFC 8289 §5's pseudocode (which is Linux's `codel_impl.h`) over
//! any queue that can pop its head ([`CodelQueue`]):
//!
//! * **Sojourn test** (`should_drop`, RFC 8289 §5.5, Linux
//!   `codel_should_drop`): a dequeued packet whose sojourn is below
//!   `target`, or that leaves at most one MTU ([`CodelParams::mtu`]) in the
//!   queue, resets `first_above_time`. Otherwise the first such packet sets
//!   `first_above_time = now + interval`, and once `now ≥ first_above_time`
//!   (the sojourn has stayed above target for a whole interval) dropping
//!   is "OK". An empty queue also resets `first_above_time` (RFC 8289
//!   `dodequeue`).
//! * **Entering the dropping state** (RFC 8289 §5.6): drop (or, with ECN,
//!   mark) that packet and set `drop_next = now + interval/√count`, where
//!   `count` is 1 — or, if the previous dropping episode ended recently
//!   (`now − drop_next < 16 · interval`) and dropped more than one packet,
//!   `count − lastcount` of that episode, so that the drop rate resumes
//!   near where it left off. `lastcount` remembers the entry count.
//! * **In the dropping state**: leave it as soon as a packet passes the
//!   sojourn test; otherwise, every time `now ≥ drop_next`, `count += 1`,
//!   drop (or mark) the head and set `drop_next += interval/√count` (the
//!   control law, RFC 8289 §5.7). Drops are therefore spaced `interval`,
//!   `interval/√2`, `interval/√3`, …
//!
//! The √ is computed exactly in `f64` (Linux keeps a Newton-iterated
//! fixed-point 1/√count instead; the result differs by well under 1 %).
//!
//! **ECN**: with [`CodelParams::ecn`], a packet whose ECN field is ECT(0),
//! ECT(1) or already CE is marked CE (RFC 3168) and delivered instead of
//! dropped — Linux `codel` with `ecn` (`INET_ECN_set_ce` succeeds on CE).
//! Marks and drops advance the control law alike.

use ka_codec::wire::ecn::{MarkOutcome, mark_ce};

use super::{Nanos, QdiscStats};

/// CoDel's parameters, in port time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CodelParams {
    /// Acceptable standing sojourn (RFC 8289 TARGET).
    pub target: Nanos,
    /// The sliding window over which the sojourn must stay above target
    /// before CoDel acts, and the base of the control law (RFC 8289
    /// INTERVAL).
    pub interval: Nanos,
    /// Never drop when the queue (the whole discipline's bytes, as Linux's
    /// `fq_codel` passes its total backlog) holds at most this many bytes
    /// after the dequeue (RFC 8289 MAXPACKET).
    pub mtu: usize,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
}

/// A queue CoDel dequeues from.
pub(crate) trait CodelQueue {
    /// Removes the head packet and its enqueue time, with all accounting.
    fn pop(&mut self) -> Option<(Nanos, Vec<u8>)>;
    /// Bytes the queue still holds for the MTU test (after a pop).
    fn backlog(&self) -> usize;
}

/// The per-queue CoDel variables (RFC 8289 §5.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CodelVars {
    /// Drops (and marks) in the current dropping episode, plus the
    /// re-entry carry-over.
    count: u32,
    /// `count` when the current episode began.
    lastcount: u32,
    /// In the dropping state.
    dropping: bool,
    /// When the sojourn will have been above target for an interval.
    first_above_time: Option<Nanos>,
    /// When the next drop is due (dropping state).
    drop_next: Nanos,
}

impl CodelVars {
    /// The per-packet fast path, for a caller that can peek at its head
    /// (enqueued at `enqueued_at`, leaving `backlog_after` bytes once
    /// popped): true if CoDel would simply send it — not in the dropping
    /// state and the packet passes the sojourn test, whose reset of
    /// `first_above_time` is applied. The caller then pops and sends it;
    /// [`CodelVars::dequeue`] would have done exactly that.
    #[inline]
    pub(crate) fn passes(
        &mut self,
        p: &CodelParams,
        now: Nanos,
        enqueued_at: Nanos,
        backlog_after: usize,
    ) -> bool {
        if !self.dropping && (now.saturating_sub(enqueued_at) < p.target || backlog_after <= p.mtu)
        {
            self.first_above_time = None;
            true
        } else {
            false
        }
    }

    /// Dequeues the next packet to send at `now`, dropping (counted in
    /// `stats.drops_aqm`) or marking (counted in `stats.marks`) as the
    /// control law says.
    #[inline]
    pub(crate) fn dequeue<Q: CodelQueue>(
        &mut self,
        p: &CodelParams,
        now: Nanos,
        q: &mut Q,
        stats: &mut QdiscStats,
    ) -> Option<(Nanos, Vec<u8>)> {
        let item = q.pop();
        // The fast path (`should_drop` would reset first_above_time and
        // say no, leaving nothing else to do).
        if let Some((t, _)) = &item
            && self.passes(p, now, *t, q.backlog())
        {
            return item;
        }
        self.dequeue_slow(p, now, q, stats, item)
    }

    /// The rest of RFC 8289's `dequeue` for a popped `item`.
    #[inline(never)]
    fn dequeue_slow<Q: CodelQueue>(
        &mut self,
        p: &CodelParams,
        now: Nanos,
        q: &mut Q,
        stats: &mut QdiscStats,
        mut item: Option<(Nanos, Vec<u8>)>,
    ) -> Option<(Nanos, Vec<u8>)> {
        let Some(head) = item.as_ref() else {
            self.first_above_time = None;
            self.dropping = false;
            return None;
        };
        let ok_to_drop = self.should_drop(p, now, head.0, q.backlog());
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.saturating_add(1);
                    let Some((t, mut packet)) = item.take() else {
                        self.dropping = false;
                        break;
                    };
                    if p.ecn && mark(&mut packet) {
                        stats.marks += 1;
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                        return Some((t, packet));
                    }
                    stats.drops_aqm += 1;
                    drop(packet);
                    item = q.pop();
                    let again = match item.as_ref() {
                        Some(h) => self.should_drop(p, now, h.0, q.backlog()),
                        None => {
                            self.first_above_time = None;
                            false
                        }
                    };
                    if again {
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if ok_to_drop {
            if let Some((t, mut packet)) = item.take() {
                if p.ecn && mark(&mut packet) {
                    stats.marks += 1;
                    item = Some((t, packet));
                } else {
                    stats.drops_aqm += 1;
                    drop(packet);
                    item = q.pop();
                    // Updates first_above_time for the new head; the verdict
                    // itself is not needed (RFC 8289 §5.6, Linux).
                    match item.as_ref() {
                        Some(h) => {
                            self.should_drop(p, now, h.0, q.backlog());
                        }
                        None => self.first_above_time = None,
                    }
                }
            }
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = if delta > 1
                && now.saturating_sub(self.drop_next) < p.interval.saturating_mul(16)
            {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.count);
        }
        item
    }

    /// RFC 8289 §5.5 for a packet enqueued at `enqueued_at` leaving
    /// `backlog` bytes behind.
    fn should_drop(
        &mut self,
        p: &CodelParams,
        now: Nanos,
        enqueued_at: Nanos,
        backlog: usize,
    ) -> bool {
        let sojourn = now.saturating_sub(enqueued_at);
        if sojourn < p.target || backlog <= p.mtu {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now.saturating_add(p.interval));
                false
            }
            Some(t) => now >= t,
        }
    }
}

/// `t + interval / √count` (RFC 8289 §5.7); `count` ≥ 1.
fn control_law(t: Nanos, interval: Nanos, count: u32) -> Nanos {
    let step = interval as f64 / f64::from(count.max(1)).sqrt();
    // `as` saturates; the step is finite and non-negative.
    t.saturating_add(step as u64)
}

/// Marks CE; true if the packet now carries CE (ECT or already CE).
fn mark(packet: &mut [u8]) -> bool {
    matches!(
        mark_ce(packet),
        MarkOutcome::Marked | MarkOutcome::AlreadyCe
    )
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    const MS: Nanos = 1_000_000;

    /// A FIFO of packets whose first byte is 0 (not IP: never markable) or
    /// a valid ECT(0) IPv4 header.
    struct Fifo(VecDeque<(Nanos, Vec<u8>)>, usize);

    impl CodelQueue for Fifo {
        fn pop(&mut self) -> Option<(Nanos, Vec<u8>)> {
            let x = self.0.pop_front()?;
            self.1 -= x.1.len();
            Some(x)
        }
        fn backlog(&self) -> usize {
            self.1
        }
    }

    fn params() -> CodelParams {
        CodelParams {
            target: 5 * MS,
            interval: 100 * MS,
            mtu: 1514,
            ecn: true,
        }
    }

    /// Drives one CoDel queue: `fill` packets of 1000 bytes at `t0`, then
    /// one dequeue per ms from `t0` on, for `ms` ms. Returns the times of
    /// the drops.
    fn drops_while_draining(
        v: &mut CodelVars,
        q: &mut Fifo,
        t0: Nanos,
        fill: usize,
        ms: u64,
    ) -> Vec<Nanos> {
        for _ in 0..fill {
            q.0.push_back((t0, vec![0u8; 1000]));
            q.1 += 1000;
        }
        let mut stats = QdiscStats::default();
        let mut drops = Vec::new();
        for k in 0..ms {
            let now = t0 + k * MS;
            let before = stats.drops_aqm;
            v.dequeue(&params(), now, q, &mut stats);
            for _ in before..stats.drops_aqm {
                drops.push(now);
            }
        }
        drops
    }

    #[test]
    fn spacing_follows_the_square_root_law() {
        let mut v = CodelVars::default();
        let mut q = Fifo(VecDeque::new(), 0);
        let drops = drops_while_draining(&mut v, &mut q, 0, 2000, 1000);
        // Sojourn first ≥ target at the dequeue at 5 ms: the first drop is
        // an interval later, then drop k+1 follows drop k by 100/√k ms.
        assert_eq!(drops[0], 105 * MS);
        let mut due = 105.0;
        for (k, t) in drops.iter().enumerate().skip(1) {
            due += 100.0 / (k as f64).sqrt();
            let t = *t as f64 / MS as f64;
            assert!(t >= due && t < due + 1.0, "drop {k} at {t} ms, due {due}");
        }
        assert!(drops.len() > 10);
    }

    #[test]
    fn re_entry_resumes_the_previous_drop_rate() {
        let mut v = CodelVars::default();
        let mut q = Fifo(VecDeque::new(), 0);
        // Episode 1: count climbs with every drop.
        let d1 = drops_while_draining(&mut v, &mut q, 0, 1000, 600);
        assert!(d1.len() > 3);
        // The queue drains (the last packet passes the MTU test), ending
        // the episode.
        let mut stats = QdiscStats::default();
        let mut t = 600 * MS;
        while v.dequeue(&params(), t, &mut q, &mut stats).is_some() {
            t += 1;
        }
        assert!(!v.dropping);
        let delta = v.count - v.lastcount;
        assert!(delta >= d1.len() as u32 - 1);
        // Episode 2 starts within 16 intervals: it enters with
        // count = delta, so its second drop follows the first by
        // interval/√delta instead of a whole interval.
        let t2 = t + MS;
        let d2 = drops_while_draining(&mut v, &mut q, t2, 1000, 300);
        assert_eq!(d2[0], t2 + 105 * MS);
        let gap = (d2[1] - d2[0]) as f64 / MS as f64;
        let want = 100.0 / f64::from(delta).sqrt();
        assert!(gap >= want && gap < want + 1.0, "gap {gap} want {want}");

        // Much later (> 16 intervals), the episode starts from count 1.
        let mut stats = QdiscStats::default();
        let mut t = t2 + 300 * MS;
        while v.dequeue(&params(), t, &mut q, &mut stats).is_some() {
            t += 1;
        }
        let t3 = t + 2000 * MS;
        let d3 = drops_while_draining(&mut v, &mut q, t3, 1000, 300);
        assert_eq!(d3[1] - d3[0], 100 * MS);
    }

    #[test]
    fn short_queues_are_never_dropped() {
        // Sojourn far above target but at most one MTU left behind.
        let mut v = CodelVars::default();
        let mut q = Fifo(VecDeque::new(), 0);
        let mut stats = QdiscStats::default();
        for k in 0..1000u64 {
            q.0.push_back((0, vec![0u8; 1000]));
            q.1 += 1000;
            assert!(v.dequeue(&params(), k * MS, &mut q, &mut stats).is_some());
        }
        assert_eq!(stats.drops_aqm, 0);
    }

    #[test]
    fn ecn_marks_at_the_same_times_and_delivers() {
        let mut ect = vec![0u8; 1000];
        ect[0] = 0x45;
        ect[1] = 0x02; // ECT(0)
        ect[2..4].copy_from_slice(&1000u16.to_be_bytes());
        ect[8] = 64;
        let c = ka_codec::wire::checksum::checksum(&ect[..20]);
        ect[10..12].copy_from_slice(&c.to_be_bytes());
        let mut v = CodelVars::default();
        let mut q = Fifo(VecDeque::new(), 0);
        for _ in 0..2000 {
            q.0.push_back((0, ect.clone()));
            q.1 += 1000;
        }
        let mut stats = QdiscStats::default();
        let mut marks = Vec::new();
        for k in 0..600u64 {
            let before = stats.marks;
            let (_, p) = v.dequeue(&params(), k * MS, &mut q, &mut stats).unwrap();
            if stats.marks > before {
                assert_eq!(p[1] & 3, 3, "marked packet carries CE");
                marks.push(k);
            }
        }
        assert_eq!(stats.drops_aqm, 0);
        assert_eq!(q.0.len(), 2000 - 600);
        // 105, 205, 205 + 70.7, + 57.7, + 50, + 44.7 ...
        assert_eq!(&marks[..4], &[105, 205, 276, 334]);
    }
}

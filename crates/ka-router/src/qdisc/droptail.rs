//! The drop-tail FIFO (limit in packets): DESIGN §4.1's queue.

use std::collections::VecDeque;

use ka_codec::wire::Layout;

use super::{Dequeued, DropCause, Nanos, QdiscStats, QueueDiscipline, Verdict};

/// A drop-tail packet queue that tracks the bytes it holds.
///
/// Memory: at most `limit` packets; the ring buffer grows on demand, never
/// reserved up front.
#[derive(Debug, Clone, Default)]
pub struct DropTail {
    packets: VecDeque<(Nanos, Vec<u8>, Option<Layout>)>,
    bytes: usize,
    limit: usize,
    stats: QdiscStats,
}

impl DropTail {
    /// An empty queue holding at most `limit` packets.
    pub fn new(limit: usize) -> Self {
        Self {
            // Grows on demand up to `limit`; don't reserve a stranger-sized
            // block up front.
            packets: VecDeque::new(),
            bytes: 0,
            limit,
            stats: QdiscStats::default(),
        }
    }
}

impl QueueDiscipline for DropTail {
    fn name(&self) -> &'static str {
        "droptail"
    }

    fn enqueue(&mut self, now: Nanos, packet: Vec<u8>) -> Verdict {
        self.enqueue_parsed(now, packet, None)
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Dequeued> {
        self.dequeue_parsed(now).map(|(d, _)| d)
    }

    fn enqueue_parsed(&mut self, now: Nanos, packet: Vec<u8>, layout: Option<Layout>) -> Verdict {
        if self.packets.len() >= self.limit {
            self.stats.drops_overflow += 1;
            return Verdict::Dropped(DropCause::Overflow);
        }
        self.bytes += packet.len();
        self.packets.push_back((now, packet, layout));
        Verdict::Queued
    }

    fn dequeue_parsed(&mut self, _now: Nanos) -> Option<(Dequeued, Option<Layout>)> {
        let (enqueued_at, packet, layout) = self.packets.pop_front()?;
        self.bytes -= packet.len();
        Some((
            Dequeued {
                packet,
                enqueued_at,
            },
            layout,
        ))
    }

    fn len(&self) -> usize {
        self.packets.len()
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    fn oldest_enqueued_at(&self) -> Option<Nanos> {
        self.packets.front().map(|(t, _, _)| *t)
    }

    fn stats(&self) -> QdiscStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_tail_and_counts_bytes() {
        let mut q = DropTail::new(2);
        assert_eq!(q.enqueue(1, vec![0; 10]), Verdict::Queued);
        assert_eq!(q.enqueue(2, vec![1; 20]), Verdict::Queued);
        assert_eq!(
            q.enqueue(3, vec![2; 30]),
            Verdict::Dropped(DropCause::Overflow)
        );
        assert_eq!((q.len(), q.bytes()), (2, 30));
        assert_eq!(q.oldest_enqueued_at(), Some(1));
        let d = q.dequeue(5).unwrap();
        assert_eq!((d.packet, d.enqueued_at), (vec![0; 10], 1));
        assert_eq!(q.bytes(), 20);
        assert_eq!(q.enqueue(6, vec![3; 5]), Verdict::Queued);
        assert_eq!(q.dequeue(7).unwrap().packet, vec![1; 20]);
        assert_eq!(q.dequeue(8).unwrap().packet, vec![3; 5]);
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
        assert_eq!(q.dequeue(9), None);
        assert_eq!(q.oldest_enqueued_at(), None);
        assert_eq!(q.stats().drops_overflow, 1);
    }
}

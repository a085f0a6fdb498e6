//! The drop-tail FIFO (limit in packets): DESIGN §3.1's queue.

use std::collections::VecDeque;

use ka_codec::wire::Layout;

use crate::gso::Gso;

use super::{Dequeued, DropCause, Nanos, QdiscStats, QueueDiscipline, Verdict};

/// The [`QueueDiscipline`] accessors of a discipline that keeps its packets in a
/// `fifo: Fifo` and its counters in `stats: QdiscStats` (drop-tail and
/// RED), for use inside its `impl QueueDiscipline` block.
macro_rules! fifo_accessors {
    () => {
        fn len(&self) -> usize {
            self.fifo.len()
        }

        fn bytes(&self) -> usize {
            self.fifo.bytes()
        }

        fn oldest_enqueued_at(&self) -> Option<Nanos> {
            self.fifo.oldest_enqueued_at()
        }

        fn stats(&self) -> QdiscStats {
            self.stats
        }
    };
}
pub(super) use fifo_accessors;

/// A queued packet: enqueued when, its bytes, its parse, its super-packet
/// view.
type Entry = (Nanos, Vec<u8>, Option<Layout>, Option<Gso>);

/// Packets in arrival order with their enqueue times and the classifier's
/// parse (if the port handed one on), and the packets and bytes they hold (a
/// super-packet counts as its segments and their wire bytes): the queue of
/// [`DropTail`] and of [`Red`](super::Red), which differ only in what they
/// admit. The ring buffer grows on demand, never reserved up front (don't
/// reserve a stranger-sized block).
#[derive(Debug, Clone, Default)]
pub(super) struct Fifo {
    packets: VecDeque<Entry>,
    /// Packets held, a super-packet's segments each.
    count: usize,
    bytes: usize,
}

impl Fifo {
    /// Appends `packet`, enqueued at `now`, with its parse.
    #[inline]
    pub(super) fn push(&mut self, now: Nanos, packet: Vec<u8>, layout: Option<Layout>) {
        self.bytes += packet.len();
        self.count += 1;
        self.packets.push_back((now, packet, layout, None));
    }

    /// [`Fifo::push`] of a super-packet (counted as its segments).
    pub(super) fn push_gso(&mut self, now: Nanos, packet: Vec<u8>, layout: Layout, gso: Gso) {
        self.bytes += gso.wire_len(packet.len());
        self.count += usize::from(gso.segments());
        self.packets
            .push_back((now, packet, Some(layout), Some(gso)));
    }

    /// Takes the oldest packet and its parse.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<(Dequeued, Option<Layout>)> {
        self.pop_gso().map(|(d, l, _)| (d, l))
    }

    /// Takes the oldest packet, its parse and its super-packet view.
    #[inline]
    pub(super) fn pop_gso(&mut self) -> Option<(Dequeued, Option<Layout>, Option<Gso>)> {
        let (enqueued_at, packet, layout, gso) = self.packets.pop_front()?;
        match gso {
            None => {
                self.bytes -= packet.len();
                self.count -= 1;
            }
            Some(g) => {
                self.bytes -= g.wire_len(packet.len());
                self.count -= usize::from(g.segments());
            }
        }
        Some((
            Dequeued {
                packet,
                enqueued_at,
            },
            layout,
            gso,
        ))
    }

    /// Packets held.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds no packet.
    pub(super) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// When the oldest packet was enqueued.
    pub(super) fn oldest_enqueued_at(&self) -> Option<Nanos> {
        self.packets.front().map(|(t, _, _, _)| *t)
    }
}

/// A drop-tail packet queue that tracks the bytes it holds.
///
/// Memory: at most `limit` packets; the ring buffer grows on demand, never
/// reserved up front.
#[derive(Debug, Clone, Default)]
pub struct DropTail {
    fifo: Fifo,
    limit: usize,
    stats: QdiscStats,
}

impl DropTail {
    /// An empty queue holding at most `limit` packets.
    pub fn new(limit: usize) -> Self {
        Self {
            fifo: Fifo::default(),
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
        if self.fifo.len() >= self.limit {
            self.stats.drops_overflow += 1;
            return Verdict::Dropped(DropCause::Overflow);
        }
        self.fifo.push(now, packet, layout);
        Verdict::Queued
    }

    fn dequeue_parsed(&mut self, _now: Nanos) -> Option<(Dequeued, Option<Layout>)> {
        self.fifo.pop()
    }

    /// Drop-tail takes super-packets: its only decision, the limit, counts
    /// their segments (the port hands one over only when all fit).
    fn takes_gso(&self) -> bool {
        true
    }

    fn enqueue_gso(&mut self, now: Nanos, packet: Vec<u8>, layout: Layout, gso: Gso) -> Verdict {
        if self.fifo.len() + usize::from(gso.segments()) > self.limit {
            self.stats.drops_overflow += u64::from(gso.segments());
            return Verdict::Dropped(DropCause::Overflow);
        }
        self.fifo.push_gso(now, packet, layout, gso);
        Verdict::Queued
    }

    fn dequeue_gso(&mut self, _now: Nanos) -> Option<(Dequeued, Option<Layout>, Option<Gso>)> {
        self.fifo.pop_gso()
    }

    fifo_accessors!();
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

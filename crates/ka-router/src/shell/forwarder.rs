//! What the pacing thread drives: the KA core's two ports, or a plain
//! pass-through (the benchmark baseline, same loop without the core).

use std::collections::VecDeque;
use std::time::Instant;

use super::stats::{CoreStats, Direction};
use crate::gso::{self, Gso};
use ka_codec::wire::Layout;

/// Packets read at one wake-up: direction, bytes, time read, and the
/// segment size of a TCP super-packet (`None`: a plain packet).
pub type Arrivals = Vec<(Direction, Vec<u8>, Instant, Option<u16>)>;

/// A sans-IO packet processor for both directions, driven by the pacing
/// thread: packets in with [`Forwarder::push`], due packets out with
/// [`Forwarder::poll_transmit`], the next due instant from
/// [`Forwarder::poll_timeout`].
pub trait Forwarder: Send + 'static {
    /// A packet read in direction `dir` (whole IP packet, no link header).
    fn push(&mut self, dir: Direction, now: Instant, packet: Vec<u8>);
    /// The packets read at one wake-up, each with its direction and time,
    /// in order (drained): the same as [`Forwarder::push`] on each in turn,
    /// but a forwarder may look at all of them first (receive-window
    /// modulation starts all their table lookups together).
    fn push_batch(&mut self, batch: &mut Vec<(Direction, Vec<u8>, Instant)>) {
        for (dir, packet, now) in batch.drain(..) {
            self.push(dir, now, packet);
        }
    }
    /// [`Forwarder::push_batch`] of packets among which are TCP
    /// super-packets (read whole from a device with offloads; see
    /// [`crate::gso`]). By default each is cut into its segments first.
    fn push_batch_gso(&mut self, batch: &mut Arrivals) {
        let mut plain = Vec::with_capacity(batch.len());
        for (dir, packet, now, size) in batch.drain(..) {
            match view(&packet, size) {
                Some(g) => plain.extend(gso::segments(&packet, g).map(|p| (dir, p, now))),
                None => plain.push((dir, packet, now)),
            }
        }
        self.push_batch(&mut plain);
    }
    /// The next packet of `dir` due at or before `now`, if any.
    fn poll_transmit(&mut self, dir: Direction, now: Instant) -> Option<Vec<u8>>;
    /// [`Forwarder::poll_transmit`], but a super-packet may come whole,
    /// with its view (by default never).
    fn poll_transmit_gso(
        &mut self,
        dir: Direction,
        now: Instant,
    ) -> Option<(Vec<u8>, Option<Gso>)> {
        self.poll_transmit(dir, now).map(|p| (p, None))
    }
    /// The earliest instant either direction has something due (`None`:
    /// nothing queued or in flight).
    fn poll_timeout(&self) -> Option<Instant>;
    /// Advance timers (control interval, mode hold) to `now`.
    fn handle_timeout(&mut self, now: Instant);
    /// Current state of one direction, for metrics.
    fn stats(&self, dir: Direction) -> CoreStats;
    /// Receive-window modulation counters, if the forwarder runs it.
    fn rwm_stats(&self) -> Option<crate::rwm::RwmStats> {
        None
    }
}

/// Packets held, each with its super-packet view if it is one.
type Held = VecDeque<(Vec<u8>, Option<Gso>)>;

/// `packet` as a super-packet of `size`-byte segments, if it is one.
fn view(packet: &[u8], size: Option<u16>) -> Option<Gso> {
    let size = size?;
    Gso::new(packet, &Layout::parse(packet).ok()?, size)
}

/// Forwards every packet unchanged, immediately, in order — no queue limit
/// beyond [`PassThrough::MAX_QUEUE`], no shaping, no stamping. The baseline
/// the forwarding benchmark compares `ka-router` against, and a diagnostic
/// (`ka-router --passthrough`) to tell TUN/namespace problems from router
/// behaviour.
/// A TCP super-packet stays whole.
#[derive(Debug, Default)]
pub struct PassThrough {
    queues: [Held; 2],
    stats: [CoreStats; 2],
    now_due: Option<Instant>,
}

impl PassThrough {
    /// Packets held per direction before dropping (only reached if the loop
    /// pushes without ever polling).
    pub const MAX_QUEUE: usize = 1024;

    /// An empty pass-through.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, dir: Direction) -> (&mut Held, &mut CoreStats) {
        match dir {
            Direction::Forward => {
                let [q, _] = &mut self.queues;
                let [s, _] = &mut self.stats;
                (q, s)
            }
            Direction::Reverse => {
                let [_, q] = &mut self.queues;
                let [_, s] = &mut self.stats;
                (q, s)
            }
        }
    }
}

impl PassThrough {
    fn hold(&mut self, dir: Direction, now: Instant, packet: Vec<u8>, g: Option<Gso>) {
        let (q, s) = self.slot(dir);
        if q.len() >= Self::MAX_QUEUE {
            s.drops_queue += 1;
        } else {
            q.push_back((packet, g));
            self.now_due.get_or_insert(now);
        }
    }
}

impl Forwarder for PassThrough {
    fn push(&mut self, dir: Direction, now: Instant, packet: Vec<u8>) {
        self.hold(dir, now, packet, None);
    }

    fn push_batch_gso(&mut self, batch: &mut Arrivals) {
        for (dir, packet, now, size) in batch.drain(..) {
            let g = view(&packet, size);
            self.hold(dir, now, packet, g);
        }
    }

    fn poll_transmit(&mut self, dir: Direction, now: Instant) -> Option<Vec<u8>> {
        let (p, g) = self.poll_transmit_gso(dir, now)?;
        let Some(g) = g else {
            return Some(p);
        };
        let (q, _) = self.slot(dir);
        let mut segs = gso::segments(&p, g);
        let first = segs.next();
        for (k, s) in segs.enumerate() {
            q.insert(k, (s, None));
        }
        if first.is_some() {
            self.now_due.get_or_insert(now);
        }
        first
    }

    fn poll_transmit_gso(
        &mut self,
        dir: Direction,
        _now: Instant,
    ) -> Option<(Vec<u8>, Option<Gso>)> {
        let (q, _) = self.slot(dir);
        let p = q.pop_front();
        if self.queues.iter().all(VecDeque::is_empty) {
            self.now_due = None;
        }
        p
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.now_due
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn stats(&self, dir: Direction) -> CoreStats {
        let q = self.queues.get(dir.index()).map_or(0, VecDeque::len);
        let mut s = self.stats.get(dir.index()).cloned().unwrap_or_default();
        s.queue_packets = q as u64;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passthrough_is_fifo_per_direction_and_idles() {
        let t = Instant::now();
        let mut p = PassThrough::new();
        assert_eq!(p.poll_timeout(), None);
        p.push(Direction::Forward, t, vec![1]);
        p.push(Direction::Reverse, t, vec![9]);
        p.push(Direction::Forward, t, vec![2]);
        assert_eq!(p.poll_timeout(), Some(t));
        assert_eq!(p.stats(Direction::Forward).queue_packets, 2);
        assert_eq!(p.poll_transmit(Direction::Forward, t), Some(vec![1]));
        assert_eq!(p.poll_transmit(Direction::Forward, t), Some(vec![2]));
        assert_eq!(p.poll_transmit(Direction::Forward, t), None);
        assert!(p.poll_timeout().is_some());
        assert_eq!(p.poll_transmit(Direction::Reverse, t), Some(vec![9]));
        assert_eq!(p.poll_timeout(), None);
    }

    #[test]
    fn passthrough_caps_its_queue() {
        let t = Instant::now();
        let mut p = PassThrough::new();
        for _ in 0..PassThrough::MAX_QUEUE + 5 {
            p.push(Direction::Reverse, t, vec![0]);
        }
        let s = p.stats(Direction::Reverse);
        assert_eq!(s.queue_packets, PassThrough::MAX_QUEUE as u64);
        assert_eq!(s.drops_queue, 5);
    }
}

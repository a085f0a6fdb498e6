//! FQ-CoDel (RFC 8290 with CoDel per RFC 8289; DESIGN §4.3), after Linux's
//! `sch_fq_codel.c`.
//!
//! * **Classification** (RFC 8290 §4.1.1): a packet joins flow queue
//!   `hash(5-tuple, secret) mod flows`; the key, the hash and the secret
//!   (drawn from the port's `seed`) are in `flow_hash.rs`.
//! * **Enqueue** (§4.1): the packet is timestamped and appended to its
//!   flow queue. A flow queue that is on neither list joins the tail of
//!   `new_flows` with `deficit = quantum`.
//! * **Overflow** (§4.1): if the discipline then holds more than `limit`
//!   packets or more than `memory_limit` bytes of buffer, packets are
//!   dropped from the *head* of the flow queue with the largest backlog in
//!   bytes (the "fattest"), in Linux's batch: until half of that queue's
//!   bytes or 64 packets are gone, repeated while still over a limit.
//!   Batching amortises the O(flows) search for the fattest queue (Linux's
//!   reason too); dropping at the head gets the congestion signal to the
//!   sender sooner. All of it counts in `drops_overflow`; the arrival's
//!   verdict is `Dropped(Overflow)` only if the batch took the arrival
//!   itself.
//! * **Dequeue** (§4.2, the scheduler): take the first flow of `new_flows`,
//!   else of `old_flows`. If its deficit is ≤ 0, add a quantum and move it
//!   to the tail of `old_flows`; try again. Otherwise let its CoDel
//!   (`codel.rs`) dequeue; if that finds the queue empty, a flow from
//!   `new_flows` moves to the tail of `old_flows` when that list is not
//!   empty (so a flow cannot starve the old ones by going sparse and
//!   coming back new), otherwise it leaves the lists; try again. Else
//!   charge the packet's length to the deficit and send it. A sparse flow —
//!   one that empties its queue each round — rejoins `new_flows` with a
//!   fresh quantum, so its packets overtake the bulk flows' queues.
//! * **CoDel** per flow queue with target 5 ms and interval 100 ms,
//!   marking ECT packets CE instead of dropping with `ecn` (Linux's
//!   default); CoDel's "≤ one MTU left" test uses the whole discipline's
//!   backlog and an MTU of [`CODEL_MTU`] bytes, as Linux passes its
//!   `sch->qstats.backlog` and the device's MTU plus link header.
//!
//! **Bounds and costs.** Knobs are clamped as [`FqCodelConfig::validate`]
//! describes (flows 1…[`MAX_FLOWS`], quantum ≥ 256 bytes as Linux). The
//! flow table and both lists are allocated once in [`FqCodel::new`]:
//! about 100 bytes per flow queue (≈ 100 KiB for the default 1024, 6.5 MiB
//! at [`MAX_FLOWS`]). Packets: at most `limit`, and at most `memory_limit`
//! bytes counted as each buffer's allocated capacity (Linux counts
//! `skb->truesize`). Each flow queue's ring buffer grows on demand and is
//! shrunk as it drains (to about four times its length, never below 16
//! slots), so idle flow queues keep at most 16 slots (512 bytes) each.
//! Per packet: one hash, O(1) list operations, no allocation beyond ring
//! growth; only an overflow scans the flow table.

use std::collections::VecDeque;
use std::time::Duration;

use super::codel::{CodelParams, CodelQueue, CodelVars};
use super::flow_hash::{bucket, flow_hash};
use super::rng::SplitMix64;
use super::{Dequeued, DropCause, Nanos, QdiscStats, QueueDiscipline, Verdict};
use crate::error::ConfigError;
use crate::time::duration_ns;

/// The most flow queues a discipline will allocate (Linux's limit too).
pub const MAX_FLOWS: usize = 65_536;

/// The smallest DRR quantum (bytes) accepted; smaller ones are raised to
/// it (Linux does the same).
pub const MIN_QUANTUM: usize = 256;

/// CoDel's MTU in bytes (RFC 8289 MAXPACKET): a queue holding at most this
/// much after a dequeue is never dropped from. Linux uses the device MTU
/// plus the link header, 1514 on Ethernet.
pub const CODEL_MTU: usize = 1514;

/// Most packets one overflow batch drops (Linux `drop_batch_size`).
const DROP_BATCH: usize = 64;

/// A flow queue's ring buffer is never shrunk below this many slots.
const RING_KEEP: usize = 16;

/// FQ-CoDel's knobs; defaults are Linux's `fq_codel` (except the packet
/// limit, which is the port's `queue_limit`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct FqCodelConfig {
    /// Number of flow queues (hash buckets). Default 1024.
    pub flows: usize,
    /// DRR quantum, bytes. Default 1514.
    pub quantum: usize,
    /// CoDel target sojourn. Default 5 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub target: Duration,
    /// CoDel interval. Default 100 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub interval: Duration,
    /// Mark ECT packets CE instead of dropping them. Default true.
    pub ecn: bool,
    /// Memory limit: total bytes queued. Default 32 MiB.
    pub memory_limit: usize,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        Self {
            flows: 1024,
            quantum: 1514,
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            ecn: true,
            memory_limit: 32 << 20,
        }
    }
}

impl FqCodelConfig {
    /// Checks the knobs. [`FqCodel::new`] never fails: it clamps `flows`
    /// to 1…[`MAX_FLOWS`] and `quantum` to at least [`MIN_QUANTUM`], and
    /// takes a zero interval or memory limit as given (CoDel then drops
    /// every packet it may, resp. every arrival overflows). Front ends
    /// should call this and report the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.flows == 0 || self.flows > MAX_FLOWS {
            return Err(ConfigError::BadValue("flows"));
        }
        if self.quantum < MIN_QUANTUM {
            return Err(ConfigError::BadValue("quantum"));
        }
        if self.interval.is_zero() {
            return Err(ConfigError::BadValue("interval"));
        }
        if self.memory_limit == 0 {
            return Err(ConfigError::BadValue("memory_limit"));
        }
        Ok(())
    }
}

/// One flow queue.
#[derive(Debug, Default)]
struct Flow {
    queue: VecDeque<(Nanos, Vec<u8>)>,
    /// DRR deficit, bytes.
    deficit: i64,
    /// On `new_flows` or `old_flows`.
    listed: bool,
    codel: CodelVars,
}

/// Occupancy of the whole discipline.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    packets: usize,
    bytes: usize,
    /// Allocated capacity of the queued buffers.
    memory: usize,
    /// Flow queues holding packets.
    active: usize,
}

/// The FQ-CoDel discipline (see the module docs).
#[derive(Debug)]
pub struct FqCodel {
    flows: Vec<Flow>,
    /// Bytes queued per flow, apart from `flows` so the search for the
    /// fattest queue scans a dense array (as Linux's `backlogs`).
    backlogs: Vec<usize>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    codel: CodelParams,
    quantum: i64,
    limit: usize,
    memory_limit: usize,
    secret: u64,
    totals: Totals,
    stats: QdiscStats,
}

impl FqCodel {
    /// FQ-CoDel with hard limit `limit` packets; `seed` is the hash
    /// perturbation secret.
    pub fn new(config: FqCodelConfig, limit: usize, seed: u64) -> Self {
        let n = config.flows.clamp(1, MAX_FLOWS);
        let mut flows = Vec::with_capacity(n);
        flows.resize_with(n, Flow::default);
        Self {
            flows,
            backlogs: vec![0; n],
            new_flows: VecDeque::with_capacity(n),
            old_flows: VecDeque::with_capacity(n),
            codel: CodelParams {
                target: duration_ns(config.target),
                interval: duration_ns(config.interval),
                mtu: CODEL_MTU,
                ecn: config.ecn,
            },
            quantum: config.quantum.max(MIN_QUANTUM).min(u32::MAX as usize) as i64,
            limit,
            memory_limit: config.memory_limit,
            // Not the seed itself: a port seeded 0 still gets a mixed key.
            secret: SplitMix64::new(seed).next_u64(),
            totals: Totals::default(),
            stats: QdiscStats::default(),
        }
    }

    /// The flow queue (`0..flows`) `packet` would join. For diagnostics and
    /// tests; the discipline computes it itself on enqueue.
    pub fn classify(&self, packet: &[u8]) -> usize {
        bucket(flow_hash(self.secret, packet), self.flows.len())
    }

    /// Drops one overflow batch from the head of the fattest flow queue.
    /// Returns false if nothing was queued.
    fn drop_from_fattest(&mut self) -> bool {
        // First maximum, as Linux (strict `>`).
        let mut idx = 0;
        let mut max = 0;
        for (i, b) in self.backlogs.iter().enumerate() {
            if *b > max {
                max = *b;
                idx = i;
            }
        }
        if max == 0 {
            // Only zero-length packets queued (never from a port, which
            // drops empty packets at ingress): any non-empty queue.
            match self.flows.iter().position(|f| !f.queue.is_empty()) {
                Some(i) => idx = i,
                None => return false,
            }
        }
        let threshold = max / 2;
        let Some(flow) = self.flows.get_mut(idx) else {
            return false;
        };
        let Some(backlog) = self.backlogs.get_mut(idx) else {
            return false;
        };
        let mut q = FlowQueue {
            queue: &mut flow.queue,
            backlog,
            totals: &mut self.totals,
        };
        let (mut dropped, mut bytes) = (0usize, 0usize);
        while let Some((_, p)) = q.pop() {
            self.stats.drops_overflow += 1;
            dropped += 1;
            bytes += p.len();
            if dropped >= DROP_BATCH || bytes >= threshold {
                break;
            }
        }
        true
    }
}

/// A flow queue with the discipline's accounting, for CoDel to pop from.
struct FlowQueue<'a> {
    queue: &'a mut VecDeque<(Nanos, Vec<u8>)>,
    backlog: &'a mut usize,
    totals: &'a mut Totals,
}

impl CodelQueue for FlowQueue<'_> {
    #[inline]
    fn pop(&mut self) -> Option<(Nanos, Vec<u8>)> {
        let (t, p) = self.queue.pop_front()?;
        let len = p.len();
        *self.backlog -= len;
        self.totals.packets -= 1;
        self.totals.bytes -= len;
        self.totals.memory -= p.capacity();
        if self.queue.is_empty() {
            self.totals.active -= 1;
        }
        let cap = self.queue.capacity();
        if cap > RING_KEEP && self.queue.len() * 4 < cap {
            self.queue.shrink_to((cap / 2).max(RING_KEEP));
        }
        Some((t, p))
    }

    #[inline]
    fn backlog(&self) -> usize {
        self.totals.bytes
    }
}

impl QueueDiscipline for FqCodel {
    fn name(&self) -> &'static str {
        "fq-codel"
    }

    fn enqueue(&mut self, now: Nanos, packet: Vec<u8>) -> Verdict {
        let idx = self.classify(&packet);
        let (Some(flow), Some(backlog)) = (self.flows.get_mut(idx), self.backlogs.get_mut(idx))
        else {
            // Unreachable: `classify` is below `flows.len()`.
            self.stats.drops_overflow += 1;
            return Verdict::Dropped(DropCause::Overflow);
        };
        let len = packet.len();
        if flow.queue.is_empty() {
            self.totals.active += 1;
        }
        self.totals.packets += 1;
        self.totals.bytes += len;
        self.totals.memory += packet.capacity();
        *backlog += len;
        flow.queue.push_back((now, packet));
        if !flow.listed {
            flow.listed = true;
            flow.deficit = self.quantum;
            // `idx < flows ≤ MAX_FLOWS` fits in u32.
            self.new_flows.push_back(idx as u32);
        }
        while self.totals.packets > self.limit || self.totals.memory > self.memory_limit {
            if !self.drop_from_fattest() {
                break;
            }
        }
        // Drops take heads: the arrival (the tail) went iff its queue is
        // now empty.
        if self.flows.get(idx).is_some_and(|f| f.queue.is_empty()) {
            Verdict::Dropped(DropCause::Overflow)
        } else {
            Verdict::Queued
        }
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Dequeued> {
        loop {
            let (from_new, idx) = match self.new_flows.front() {
                Some(&i) => (true, i),
                None => (false, *self.old_flows.front()?),
            };
            let i = idx as usize;
            let (Some(flow), Some(backlog)) = (self.flows.get_mut(i), self.backlogs.get_mut(i))
            else {
                // Unreachable: lists only hold valid indices.
                self.pop_list(from_new);
                continue;
            };
            if flow.deficit <= 0 {
                flow.deficit += self.quantum;
                self.pop_list(from_new);
                self.old_flows.push_back(idx);
                continue;
            }
            // The common case without moving the packet around: CoDel lets
            // the head go as it is.
            if let Some((t, p)) = flow.queue.front() {
                let len = p.len();
                let after = self.totals.bytes.saturating_sub(len);
                if flow.codel.passes(&self.codel, now, *t, after) {
                    let mut q = FlowQueue {
                        queue: &mut flow.queue,
                        backlog,
                        totals: &mut self.totals,
                    };
                    let (enqueued_at, packet) = q.pop()?;
                    flow.deficit -= len as i64;
                    return Some(Dequeued {
                        packet,
                        enqueued_at,
                    });
                }
            }
            let mut q = FlowQueue {
                queue: &mut flow.queue,
                backlog,
                totals: &mut self.totals,
            };
            match flow
                .codel
                .dequeue(&self.codel, now, &mut q, &mut self.stats)
            {
                Some((enqueued_at, packet)) => {
                    flow.deficit -= packet.len() as i64;
                    return Some(Dequeued {
                        packet,
                        enqueued_at,
                    });
                }
                None => {
                    self.pop_list(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx);
                    } else if let Some(f) = self.flows.get_mut(i) {
                        f.listed = false;
                    }
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.totals.packets
    }

    fn bytes(&self) -> usize {
        self.totals.bytes
    }

    fn oldest_enqueued_at(&self) -> Option<Nanos> {
        self.new_flows
            .iter()
            .chain(self.old_flows.iter())
            .filter_map(|&i| self.flows.get(i as usize)?.queue.front().map(|(t, _)| *t))
            .min()
    }

    fn stats(&self) -> QdiscStats {
        self.stats
    }

    fn active_flows(&self) -> Option<usize> {
        Some(self.totals.active)
    }
}

impl FqCodel {
    fn pop_list(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(sport: u8, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        b[8] = 64;
        b[9] = 17;
        b[21] = sport;
        b
    }

    #[test]
    fn per_flow_state_is_as_documented() {
        // "About 100 bytes per flow queue": the flow, its backlog and its
        // slot in each list.
        let per_flow = std::mem::size_of::<Flow>() + std::mem::size_of::<usize>() + 2 * 4;
        assert!(per_flow <= 112, "{per_flow} bytes");
        let q = FqCodel::new(FqCodelConfig::default(), 1000, 0);
        assert_eq!(q.flows.len(), 1024);
        assert!(q.new_flows.capacity() >= 1024 && q.old_flows.capacity() >= 1024);
        let q = FqCodel::new(
            FqCodelConfig {
                flows: usize::MAX,
                ..FqCodelConfig::default()
            },
            1000,
            0,
        );
        assert_eq!(q.flows.len(), MAX_FLOWS);
    }

    #[test]
    fn rings_shrink_as_flows_drain_and_memory_is_accounted() {
        let mut q = FqCodel::new(FqCodelConfig::default(), 10_000, 0);
        for _ in 0..2000 {
            q.enqueue(0, udp(1, 100));
        }
        let idx = q.classify(&udp(1, 100));
        assert!(q.flows[idx].queue.capacity() >= 2000);
        assert_eq!(q.totals.memory, 2000 * 100);
        while q.dequeue(0).is_some() {}
        assert!(q.flows[idx].queue.capacity() <= RING_KEEP);
        assert_eq!(
            (
                q.totals.packets,
                q.totals.bytes,
                q.totals.memory,
                q.totals.active
            ),
            (0, 0, 0, 0)
        );
        assert_eq!(q.backlogs[idx], 0);
    }
}

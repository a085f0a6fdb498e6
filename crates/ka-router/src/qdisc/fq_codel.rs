//! FQ-CoDel (RFC 8290 with CoDel per RFC 8289; DESIGN §8.3).
//!
//! PLACEHOLDER on branch aqm-base: behaves as drop-tail until implemented.

use std::time::Duration;

use super::{Dequeued, DropTail, Nanos, QdiscStats, QueueDiscipline, Verdict};

/// FQ-CoDel's knobs; defaults are Linux's `fq_codel` (except the packet
/// limit, which is the port's `queue_limit`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FqCodelConfig {
    /// Number of flow queues (hash buckets). Default 1024.
    pub flows: usize,
    /// DRR quantum, bytes. Default 1514.
    pub quantum: usize,
    /// CoDel target sojourn. Default 5 ms.
    pub target: Duration,
    /// CoDel interval. Default 100 ms.
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

/// The FQ-CoDel discipline.
#[derive(Debug)]
pub struct FqCodel {
    inner: DropTail,
}

impl FqCodel {
    /// FQ-CoDel with hard limit `limit` packets; `seed` is the hash
    /// perturbation secret.
    pub fn new(config: FqCodelConfig, limit: usize, seed: u64) -> Self {
        let _ = (config, seed);
        Self {
            inner: DropTail::new(limit),
        }
    }
}

impl QueueDiscipline for FqCodel {
    fn name(&self) -> &'static str {
        "fq-codel"
    }
    fn enqueue(&mut self, now: Nanos, packet: Vec<u8>) -> Verdict {
        self.inner.enqueue(now, packet)
    }
    fn dequeue(&mut self, now: Nanos) -> Option<Dequeued> {
        self.inner.dequeue(now)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn bytes(&self) -> usize {
        self.inner.bytes()
    }
    fn oldest_enqueued_at(&self) -> Option<Nanos> {
        self.inner.oldest_enqueued_at()
    }
    fn stats(&self) -> QdiscStats {
        self.inner.stats()
    }
}

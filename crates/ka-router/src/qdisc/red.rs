//! RED — Random Early Detection (Floyd & Jacobson 1993; DESIGN §8.2).
//!
//! PLACEHOLDER on branch aqm-base: behaves as drop-tail until implemented.

use super::{Dequeued, DropTail, Nanos, QdiscStats, QueueDiscipline, Verdict};

/// RED's knobs (DESIGN §8.2; defaults as the XCP-vs-RCP seed §5.1 uses it).
/// Thresholds are in packets (the average queue is in packets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedConfig {
    /// min_th, packets. Default 250.
    pub min_th: f64,
    /// max_th, packets. Default 750 (3 · min_th).
    pub max_th: f64,
    /// Drop/mark probability at max_th. Default 0.1.
    pub max_p: f64,
    /// EWMA weight w_q of the average queue. Default 0.002.
    pub w_q: f64,
    /// "Gentle" RED: above max_th the probability rises linearly from max_p
    /// to 1 at 2 · max_th (instead of jumping to 1). Default true.
    pub gentle: bool,
    /// Mark ECT packets CE instead of dropping them (RFC 3168). Default true.
    pub ecn: bool,
    /// Packet size (bytes) the idle-time correction assumes: an idle period
    /// of length t decays the average as if t / (mean_packet_bytes·8/C)
    /// packets had arrived to an empty queue. Default 1500.
    pub mean_packet_bytes: usize,
}

impl Default for RedConfig {
    fn default() -> Self {
        Self {
            min_th: 250.0,
            max_th: 750.0,
            max_p: 0.1,
            w_q: 0.002,
            gentle: true,
            ecn: true,
            mean_packet_bytes: 1500,
        }
    }
}

/// The RED discipline.
#[derive(Debug)]
pub struct Red {
    inner: DropTail,
}

impl Red {
    /// RED with hard limit `limit` packets on a link of `capacity_bps`;
    /// `seed` seeds its random drop decisions.
    pub fn new(config: RedConfig, limit: usize, capacity_bps: u64, seed: u64) -> Self {
        let _ = (config, capacity_bps, seed);
        Self {
            inner: DropTail::new(limit),
        }
    }
}

impl QueueDiscipline for Red {
    fn name(&self) -> &'static str {
        "red"
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

//! RED — Random Early Detection (Floyd & Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", IEEE/ACM ToN 1993; DESIGN §4.2),
//! with the "gentle" variant (Floyd 2000) and ECN marking (RFC 3168).
//!
//! Per arrival, with q the queue length in packets before the arrival:
//!
//! 1. **Average** (paper §4, Fig. 2): if the queue is empty, first the
//!    idle-time correction `avg ← (1 − w_q)^m · avg` with
//!    `m = idle time / (mean_packet_bytes · 8 / C)`, the number of
//!    typical packets the link could have sent while idle (ns-2 and Linux
//!    do the same); then `avg ← (1 − w_q) · avg + w_q · q`. The idle period
//!    starts when a dequeue empties the queue (or at creation) and restarts
//!    at every arrival that leaves the queue empty, so no idle time is
//!    counted twice.
//! 2. **Hard limit**: with `limit` packets queued the arrival is dropped
//!    (`Dropped(Overflow)`), whatever the average, and the spacing count
//!    restarts (a packet was dropped; ns-2 does the same).
//! 3. **Probability** ([`RedConfig::probability`]): p_b = 0 below min_th,
//!    linear to max_p at max_th, then (gentle) linear from max_p to 1 at
//!    2·max_th. From 2·max_th on (max_th without gentle) every arrival is
//!    congested ("forced").
//! 4. **Spacing** (paper §7): p_a = p_b / (1 − count · p_b) (1 once
//!    count · p_b ≥ 1), where count is the number of arrivals since the
//!    last mark or drop that were not marked while avg ≥ min_th (reset to 0
//!    below min_th: the paper's −1 before its pre-increment). The gap
//!    between marks is then uniform on {1, …, ⌈1/p_b⌉} instead of
//!    geometric, so the marked fraction at a fixed average is
//!    1 / Σ_{n=0}^{⌊1/p_b⌋} (1 − n·p_b) ≈ 2·p_b for small p_b (the paper's
//!    analysis; [`RedConfig::marking_rate`]). With probability p_a the
//!    arrival is congested and count resets to 0, else count += 1.
//! 5. **Congested**: with `ecn`, an ECT(0)/ECT(1) packet is marked CE and
//!    queued (`Marked`; a packet already CE is queued and counted as
//!    marked, as Linux's `INET_ECN_set_ce` succeeds on CE); anything else
//!    is dropped (`Dropped(Aqm)`). Forced congestion marks ECT packets too
//!    — Linux's `red` without `harddrop`: an ECN sender halves its window
//!    on the mark as it would on a loss, and the hard limit still bounds
//!    the queue against senders that ignore marks. So below the hard
//!    limit an ECT packet is never dropped.
//!
//! The average is in packets (DESIGN §4.2); randomness is SplitMix64
//! seeded from the port's `seed` (`rng.rs`), one draw per arrival in the
//! early region. Memory: at most `limit` packets; the ring buffer grows on
//! demand; the rest is fixed-size.

use ka_codec::wire::Layout;
use ka_codec::wire::ecn::{MarkOutcome, mark_ce};

use super::droptail::{Fifo, fifo_accessors};
use super::rng::SplitMix64;
use super::{Dequeued, DropCause, Nanos, QdiscStats, QueueDiscipline, Verdict};
use crate::error::ConfigError;

/// RED's knobs (DESIGN §4.2; defaults as the XCP-vs-RCP seed §5.1 uses it).
/// Thresholds are in packets (the average queue is in packets).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
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

impl RedConfig {
    /// Checks the knobs: `0 ≤ min_th < max_th` (finite), `0 ≤ max_p ≤ 1`,
    /// `0 < w_q ≤ 1`, `mean_packet_bytes > 0`. [`Red::new`] never fails:
    /// it replaces a bad value with its default (a bad max_th with
    /// 3 · min_th, or 1 if min_th is 0). Front ends should call this and
    /// report the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.min_th.is_finite() && self.min_th >= 0.0) {
            return Err(ConfigError::BadValue("min_th"));
        }
        if !(self.max_th.is_finite() && self.max_th > self.min_th) {
            return Err(ConfigError::BadValue("max_th"));
        }
        if !(0.0..=1.0).contains(&self.max_p) {
            return Err(ConfigError::BadValue("max_p"));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(ConfigError::BadValue("w_q"));
        }
        if self.mean_packet_bytes == 0 {
            return Err(ConfigError::BadValue("mean_packet_bytes"));
        }
        Ok(())
    }

    /// The configuration [`Red::new`] uses: bad values replaced as
    /// [`RedConfig::validate`] describes.
    pub fn sanitized(mut self) -> Self {
        let d = Self::default();
        if !(self.min_th.is_finite() && self.min_th >= 0.0) {
            self.min_th = d.min_th;
        }
        if !(self.max_th.is_finite() && self.max_th > self.min_th) {
            self.max_th = if self.min_th > 0.0 {
                3.0 * self.min_th
            } else {
                1.0
            };
        }
        if !(0.0..=1.0).contains(&self.max_p) {
            self.max_p = d.max_p;
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            self.w_q = d.w_q;
        }
        if self.mean_packet_bytes == 0 {
            self.mean_packet_bytes = d.mean_packet_bytes;
        }
        self
    }

    /// The average queue (packets) from which every arrival is congested:
    /// 2 · max_th with gentle, max_th without.
    pub fn forced_from(&self) -> f64 {
        if self.gentle {
            2.0 * self.max_th
        } else {
            self.max_th
        }
    }

    /// The marking/dropping probability p_b at average queue `avg`
    /// (packets), before count-based spacing: 0 below min_th, linear to
    /// max_p at max_th, gentle to 1 at 2 · max_th, 1 from
    /// [`RedConfig::forced_from`] on.
    pub fn probability(&self, avg: f64) -> f64 {
        if avg < self.min_th {
            0.0
        } else if avg >= self.forced_from() {
            1.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        }
    }

    /// The long-run fraction of arrivals marked or dropped at a constant
    /// average `avg`, with count-based spacing: gaps between marks are
    /// uniform on {1, …, ⌈1/p_b⌉} (paper §7), so the fraction is
    /// `1 / Σ_{n ≥ 0, n·p_b < 1} (1 − n·p_b)`.
    pub fn marking_rate(&self, avg: f64) -> f64 {
        let p = self.probability(avg);
        if p <= 0.0 {
            return 0.0;
        }
        let mut mean_gap = 0.0;
        let mut n = 0.0;
        while n * p < 1.0 {
            mean_gap += 1.0 - n * p;
            n += 1.0;
        }
        1.0 / mean_gap
    }
}

/// The RED discipline (see the module docs).
#[derive(Debug)]
pub struct Red {
    fifo: Fifo,
    limit: usize,
    config: RedConfig,
    /// The average queue, packets.
    avg: f64,
    /// Unmarked arrivals since the last mark/drop while avg ≥ min_th.
    count: u64,
    /// Since when the queue has been empty (`None` while it is not).
    idle_since: Option<Nanos>,
    /// Transmission time of a typical packet at C, ns.
    packet_time_ns: f64,
    rng: SplitMix64,
    stats: QdiscStats,
}

impl Red {
    /// RED with hard limit `limit` packets on a link of `capacity_bps`;
    /// `seed` seeds its random drop decisions.
    pub fn new(config: RedConfig, limit: usize, capacity_bps: u64, seed: u64) -> Self {
        let config = config.sanitized();
        Self {
            fifo: Fifo::default(),
            limit,
            packet_time_ns: config.mean_packet_bytes as f64 * 8e9 / capacity_bps.max(1) as f64,
            config,
            avg: 0.0,
            count: 0,
            idle_since: Some(0),
            rng: SplitMix64::new(seed),
            stats: QdiscStats::default(),
        }
    }

    /// The average queue (packets) as of the last arrival.
    pub fn average(&self) -> f64 {
        self.avg
    }

    /// The configuration in use (sanitised).
    pub fn config(&self) -> &RedConfig {
        &self.config
    }

    /// Step 1 of the module docs.
    fn update_average(&mut self, now: Nanos, q: usize) {
        let w = self.config.w_q;
        if q == 0 {
            if let Some(since) = self.idle_since {
                let m = now.saturating_sub(since) as f64 / self.packet_time_ns;
                if m > 0.0 {
                    self.avg *= (1.0 - w).powf(m);
                }
            }
            self.idle_since = Some(now);
        }
        self.avg = (1.0 - w) * self.avg + w * q as f64;
    }

    /// Steps 3–4: whether the arrival is congested.
    fn congested(&mut self) -> bool {
        let avg = self.avg;
        if avg < self.config.min_th {
            self.count = 0;
            return false;
        }
        if avg >= self.config.forced_from() {
            self.count = 0;
            return true;
        }
        let p_b = self.config.probability(avg);
        let cp = self.count as f64 * p_b;
        let p_a = if cp < 1.0 { p_b / (1.0 - cp) } else { 1.0 };
        if self.rng.next_f64() < p_a {
            self.count = 0;
            true
        } else {
            self.count += 1;
            false
        }
    }

    #[inline]
    fn push(&mut self, now: Nanos, packet: Vec<u8>, layout: Option<Layout>) {
        self.fifo.push(now, packet, layout);
        self.idle_since = None;
    }
}

impl QueueDiscipline for Red {
    fn name(&self) -> &'static str {
        "red"
    }

    fn enqueue(&mut self, now: Nanos, packet: Vec<u8>) -> Verdict {
        self.enqueue_parsed(now, packet, None)
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Dequeued> {
        self.dequeue_parsed(now).map(|(d, _)| d)
    }

    #[inline]
    fn enqueue_parsed(
        &mut self,
        now: Nanos,
        mut packet: Vec<u8>,
        layout: Option<Layout>,
    ) -> Verdict {
        let q = self.fifo.len();
        self.update_average(now, q);
        if q >= self.limit {
            self.count = 0;
            self.stats.drops_overflow += 1;
            return Verdict::Dropped(DropCause::Overflow);
        }
        if !self.congested() {
            self.push(now, packet, layout);
            return Verdict::Queued;
        }
        if self.config.ecn
            && matches!(
                mark_ce(&mut packet),
                MarkOutcome::Marked | MarkOutcome::AlreadyCe
            )
        {
            self.stats.marks += 1;
            self.push(now, packet, layout);
            Verdict::Marked
        } else {
            self.stats.drops_aqm += 1;
            Verdict::Dropped(DropCause::Aqm)
        }
    }

    #[inline]
    fn dequeue_parsed(&mut self, now: Nanos) -> Option<(Dequeued, Option<Layout>)> {
        let d = self.fifo.pop()?;
        if self.fifo.is_empty() {
            self.idle_since = Some(now);
        }
        Some(d)
    }

    fifo_accessors!();
}

//! Counters and the read-only snapshot of a port.

use std::time::Duration;

use ka_codec::Code;

use crate::mode::Mode;

/// Monotonic event counters of one port (never reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Packets handed to [`crate::Port::push`] (all of them).
    pub packets_in: u64,
    /// Bytes handed to `push` (all of them, as given).
    pub bytes_in: u64,
    /// Packets and fragments returned by [`crate::Port::poll_transmit`].
    pub packets_out: u64,
    /// Bytes returned by `poll_transmit` (fragment headers included).
    pub bytes_out: u64,
    /// Packets dropped because the queue discipline's hard limit was
    /// reached (drop-tail: the queue was full; FQ-CoDel: also queued packets
    /// dropped from the fattest flow to make room).
    pub drops_queue: u64,
    /// Packets dropped early by the queue discipline's AQM (RED, CoDel).
    pub drops_aqm: u64,
    /// Packets the queue discipline marked CE (RFC 3168) instead of
    /// dropping them.
    pub ecn_marks: u64,
    /// Packets dropped because their TTL / hop limit expired.
    pub drops_ttl: u64,
    /// Packets dropped as malformed: empty, over the size cap, or an IP
    /// header that is truncated, inconsistent or (IPv4) fails its checksum.
    pub drops_malformed: u64,
    /// Packets whose version nibble is neither 4 nor 6, dropped on arrival
    /// ([`DropReason::NotIp`](crate::DropReason::NotIp)).
    pub non_ip: u64,
    /// Packets split into two fragments by KA stamping.
    pub fragments_made: u64,
    /// RTT-indicator packets seen (each moved d).
    pub indicators_seen: u64,
    /// Changes between KA and TCP mode (both directions).
    pub mode_changes: u64,
    /// Native-RCP options whose rate field this port lowered.
    pub rcp_options_lowered: u64,
    /// Rate echoes (KA-Rate, RCP-Echo) of the opposite direction's ACKs
    /// this port's controller lowered ([`crate::Port::on_reverse`]).
    pub echoes_lowered: u64,
    /// IP packets that would have been stamped but were forwarded untouched
    /// because their IPv4 options or IPv6 extension-header chain could not
    /// be walked.
    pub unstampable: u64,
    /// Leading fragments given the next code above encode(R) by
    /// [`crate::PortConfig::dither`].
    pub dithered_up: u64,
    /// XCP options whose `H_feedback` this port lowered
    /// ([`crate::Signalling::Xcp`]).
    pub xcp_feedback_lowered: u64,
    /// Packets that per-packet signalling would have offered to the KA
    /// stamper or the RCP option but [`crate::StampEvery`] let go unchanged,
    /// their flow having had a signal within its interval (DESIGN §3.9).
    /// Always 0 with [`crate::StampEvery::Packet`].
    pub signals_skipped: u64,
    /// Pieces (packets, or fragments of a KA split) the impairment stage
    /// lost after their serialisation ([`crate::ImpairConfig::loss`]).
    pub drops_impair: u64,
    /// Pieces the impairment stage duplicated (each adds one to
    /// `packets_out` unless the copy is lost).
    pub duplicated: u64,
    /// Pieces the impairment stage corrupted (one bit flipped).
    pub corrupted: u64,
    /// Pieces that left the delay line ahead of a piece serialised before
    /// them (jitter or [`crate::ImpairConfig::reorder`]). Always 0 without
    /// an impairment stage.
    pub reordered: u64,
}

/// A read-only view of a port's state and counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortSnapshot {
    /// The controller's current rate R in B/ms.
    pub rate_bytes_per_ms: f64,
    /// The same rate in bit/s.
    pub rate_bps: f64,
    /// The code stamped on dequeue right now: `None` in TCP mode, when R is
    /// not encodable, or when the port does not use KA signalling.
    pub signal: Option<Code>,
    /// d, the average RTT the controller uses.
    pub rtt: Duration,
    /// Packets waiting in the queue.
    pub queue_packets: usize,
    /// Bytes waiting in the queue.
    pub queue_bytes: usize,
    /// Pieces serialised or propagating, not yet handed out.
    pub in_flight: usize,
    /// KA or TCP mode (always [`Mode::Ka`] unless the port uses
    /// [`crate::Signalling::Ka`]).
    pub mode: Mode,
    /// Event counters.
    pub counters: Counters,
}

/// Upper bounds (seconds) of the buckets of [`SojournHistogram`]; the last
/// bucket is everything above the last bound.
///
/// Roughly three per decade from 100 µs to 10 s, with 15 ms and 100 ms
/// among them (the bounds tests check percentiles against).
pub const SOJOURN_BOUNDS_S: [f64; 24] = [
    0.000_1, 0.000_2, 0.000_5, 0.001, 0.002, 0.003, 0.005, 0.007_5, 0.01, 0.015, 0.02, 0.03, 0.05,
    0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0,
];

/// [`SOJOURN_BOUNDS_S`] in nanoseconds (what [`SojournHistogram::record`]
/// compares with, exactly).
pub const SOJOURN_BOUNDS_NS: [u64; 24] = [
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    3_000_000,
    5_000_000,
    7_500_000,
    10_000_000,
    15_000_000,
    20_000_000,
    30_000_000,
    50_000_000,
    75_000_000,
    100_000_000,
    150_000_000,
    200_000_000,
    300_000_000,
    500_000_000,
    750_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Queueing delays (sojourn times: enqueue to the start of transmission) of
/// the packets a port dequeued: a fixed-bucket histogram plus the exact sum,
/// cheap enough to record per packet (no allocation; 25 counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SojournHistogram {
    /// Packets per bucket: `counts[i]` for sojourns ≤ `SOJOURN_BOUNDS_S[i]`
    /// (and above the previous bound), the last one above 10 s.
    pub counts: [u64; SOJOURN_BOUNDS_S.len() + 1],
    /// Sum of all sojourns, ns.
    pub sum_ns: u64,
    /// Number of packets recorded.
    pub count: u64,
}

impl SojournHistogram {
    /// Records one sojourn of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        let i = SOJOURN_BOUNDS_NS
            .iter()
            .position(|&b| ns <= b)
            .unwrap_or(SOJOURN_BOUNDS_NS.len());
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count += 1;
    }

    /// The share of recorded sojourns at or below `bound_s`, which must be
    /// one of [`SOJOURN_BOUNDS_S`] (else `None`); `None` too if nothing was
    /// recorded.
    pub fn fraction_at_most(&self, bound_s: f64) -> Option<f64> {
        let i = SOJOURN_BOUNDS_S.iter().position(|&b| b == bound_s)?;
        let below: u64 = self.counts.iter().take(i + 1).sum();
        (self.count > 0).then(|| below as f64 / self.count as f64)
    }

    /// Mean sojourn in seconds, if any packet was recorded.
    pub fn mean_s(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / 1e9 / self.count as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_agree() {
        for (s, ns) in SOJOURN_BOUNDS_S.iter().zip(SOJOURN_BOUNDS_NS) {
            assert_eq!((s * 1e9).round() as u64, ns);
        }
    }

    #[test]
    fn sojourn_buckets() {
        let mut h = SojournHistogram::default();
        for ns in [
            50_000,
            100_000,
            100_001,
            14_000_000,
            15_000_000,
            15_000_001,
            20_000_000_000,
        ] {
            h.record(ns);
        }
        assert_eq!(h.counts[0], 2, "≤ 100 µs, bound inclusive");
        assert_eq!(h.counts[1], 1);
        assert_eq!(h.counts[9], 2, "(10 ms, 15 ms]");
        assert_eq!(h.counts[10], 1);
        assert_eq!(h.counts[SOJOURN_BOUNDS_S.len()], 1, "above 10 s");
        assert_eq!(h.count, 7);
        assert_eq!(h.fraction_at_most(0.015), Some(5.0 / 7.0));
        assert_eq!(h.fraction_at_most(0.016), None);
        assert_eq!(SojournHistogram::default().fraction_at_most(0.1), None);
        let mean = h.mean_s().unwrap();
        assert!((mean * 7.0 - 20.044_250_002).abs() < 1e-9, "{mean}");
    }
}

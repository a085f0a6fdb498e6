//! Counters shared between the forwarding thread and the
//! metrics endpoint.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// One of the router's two ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Packets read from `--in`, written to `--out` (shaped at `--rate`).
    Forward,
    /// Packets read from `--out`, written to `--in` (shaped at `--reverse-rate`).
    Reverse,
}

impl Direction {
    /// Both directions, `Forward` first (the order of every `[_; 2]` here).
    pub const ALL: [Direction; 2] = [Direction::Forward, Direction::Reverse];

    /// Index into `[_; 2]` arrays: 0 for `Forward`, 1 for `Reverse`.
    pub fn index(self) -> usize {
        match self {
            Direction::Forward => 0,
            Direction::Reverse => 1,
        }
    }

    /// The metrics label value: `"forward"` or `"reverse"`.
    pub fn label(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
        }
    }
}

/// The state of one port's core as the shell reports it (a copy, refreshed
/// by the pacing thread about ten times a second and at exit).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoreStats {
    /// Link capacity C, bit/s.
    pub capacity_bps: f64,
    /// Current advertised rate R, bit/s.
    pub rate_bps: f64,
    /// True in KA mode (stamping), false in TCP mode.
    pub ka_mode: bool,
    /// Packets waiting in the drop-tail queue.
    pub queue_packets: u64,
    /// Bytes waiting in the drop-tail queue.
    pub queue_bytes: u64,
    /// Smoothed path RTT d the controller uses.
    pub rtt: Duration,
    /// The queue discipline ("droptail", "red", "fq-codel").
    pub qdisc: &'static str,
    /// Packets dropped at the queue discipline's hard limit (drop-tail:
    /// queue full; FQ-CoDel: also the fattest flow's packets dropped to
    /// make room).
    pub drops_queue: u64,
    /// Packets dropped early by the queue discipline's AQM (RED, CoDel).
    pub drops_aqm: u64,
    /// Packets marked CE instead of dropped.
    pub ecn_marks: u64,
    /// Flow queues holding packets (FQ-CoDel; `None` otherwise).
    pub active_flows: Option<u64>,
    /// Queueing delays of the packets dequeued so far.
    pub sojourn: crate::SojournHistogram,
    /// Packets dropped because their TTL / hop limit ran out.
    pub drops_ttl: u64,
    /// Packets dropped as malformed.
    pub drops_malformed: u64,
    /// Packets that were not IPv4/IPv6, dropped on arrival.
    pub non_ip: u64,
    /// Packets the core split into a leading fragment and the rest.
    pub fragments: u64,
    /// RTT-indicator packets seen.
    pub indicators: u64,
    /// KA ↔ TCP mode switches.
    pub mode_changes: u64,
    /// Native-RCP options whose rate was lowered.
    pub rcp_options_lowered: u64,
    /// Rate echoes of the opposite direction's ACKs lowered to this
    /// port's rate (the `echo` controller).
    pub echoes_lowered: u64,
    /// XCP options whose feedback was lowered (`--signal xcp`).
    pub xcp_feedback_lowered: u64,
    /// Packets `--stamp-every` let go without a signal, their flow having
    /// had one within its interval (0 with `--stamp-every packet`).
    pub signals_skipped: u64,
    /// Packets that would have been stamped but could not be (unwalkable
    /// IPv4 options / IPv6 extension headers).
    pub unstampable: u64,
    /// Leading-fragment payload length L stamped right now (0: no signal —
    /// TCP mode, R not encodable, or not a KA port).
    pub signal_len: u64,
    /// Pieces the impairment stage lost (`--loss`).
    pub drops_impair: u64,
    /// Pieces the impairment stage duplicated (`--duplicate`).
    pub duplicated: u64,
    /// Pieces the impairment stage corrupted (`--corrupt`).
    pub corrupted: u64,
    /// Pieces that overtook one serialised before them (`--jitter`,
    /// `--reorder`).
    pub reordered: u64,
}

impl CoreStats {
    /// All drops made by the core (the impairment stage's losses
    /// included).
    pub fn drops(&self) -> u64 {
        self.drops_queue
            .saturating_add(self.drops_aqm)
            .saturating_add(self.drops_ttl)
            .saturating_add(self.drops_malformed)
            .saturating_add(self.drops_impair)
    }
}

/// Counters the I/O shell itself keeps for one direction.
#[derive(Debug, Default)]
pub struct IoCounters {
    /// Packets read from the input device.
    pub packets_in: AtomicU64,
    /// Bytes read from the input device.
    pub bytes_in: AtomicU64,
    /// Reads from the input device that returned data: one per packet
    /// without offloads, one per (super-)packet with `--offload`, so
    /// `packets_in / reads` is how many segments the kernel coalesced.
    pub reads: AtomicU64,
    /// Packets (fragments count separately) written to the output device.
    pub packets_out: AtomicU64,
    /// Bytes written to the output device.
    pub bytes_out: AtomicU64,
    /// Failed reads (the reader backs off and retries).
    pub read_errors: AtomicU64,
    /// Failed writes, e.g. `EIO` while the far interface is down. Never fatal.
    pub write_errors: AtomicU64,
    /// Packets the kernel dropped in front of the router because the
    /// transmit queue of the device this direction is read from was full
    /// (the device's `tx_dropped` since the router attached; stays 0 while
    /// the device is in another network namespace: see
    /// [`KernelDrops`](ka_io::tun::KernelDrops)).
    pub input_overflow: AtomicU64,
    /// KA leading fragments written (IPv4 offset 0 with MF, IPv6 Fragment
    /// header offset 0 with M; see [`leading_fragment`](super::stamplog::leading_fragment)).
    pub leading_out: AtomicU64,
    /// Bridge mode: frames that were not IP (ARP, LLDP, …), read on this
    /// direction's input interface and passed to the other untouched and
    /// unshaped.
    pub link_passed: AtomicU64,
}

/// A plain copy of [`IoCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// See [`IoCounters::packets_in`].
    pub packets_in: u64,
    /// See [`IoCounters::bytes_in`].
    pub bytes_in: u64,
    /// See [`IoCounters::reads`].
    pub reads: u64,
    /// See [`IoCounters::packets_out`].
    pub packets_out: u64,
    /// See [`IoCounters::bytes_out`].
    pub bytes_out: u64,
    /// See [`IoCounters::read_errors`].
    pub read_errors: u64,
    /// See [`IoCounters::write_errors`].
    pub write_errors: u64,
    /// See [`IoCounters::input_overflow`].
    pub input_overflow: u64,
    /// See [`IoCounters::leading_out`].
    pub leading_out: u64,
    /// See [`IoCounters::link_passed`].
    pub link_passed: u64,
}

impl IoCounters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// A consistent-enough copy (each field read atomically).
    pub fn load(&self) -> IoStats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IoStats {
            packets_in: l(&self.packets_in),
            bytes_in: l(&self.bytes_in),
            reads: l(&self.reads),
            packets_out: l(&self.packets_out),
            bytes_out: l(&self.bytes_out),
            read_errors: l(&self.read_errors),
            write_errors: l(&self.write_errors),
            input_overflow: l(&self.input_overflow),
            leading_out: l(&self.leading_out),
            link_passed: l(&self.link_passed),
        }
    }
}

/// Upper bounds of the [`Lateness`] buckets, microseconds (the last bucket
/// is unbounded).
pub const LATENESS_BOUNDS_US: [u64; 9] = [10, 25, 50, 100, 250, 500, 1_000, 2_000, 5_000];

/// How late packets left: a histogram of `write time − departure time`
/// over every released packet (for a packet released in a batch after a late
/// wake-up this is measured from the earliest due departure of the batch
/// round, so it never under-states).
#[derive(Debug, Default)]
pub struct Lateness {
    buckets: [AtomicU64; LATENESS_BOUNDS_US.len() + 1],
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
}

/// A copy of [`Lateness`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatenessStats {
    /// Count per bucket (non-cumulative); bounds in [`LATENESS_BOUNDS_US`],
    /// the last bucket is everything above.
    pub buckets: [u64; LATENESS_BOUNDS_US.len() + 1],
    /// Sum of all observations, ns.
    pub sum_ns: u64,
    /// Largest observation, ns.
    pub max_ns: u64,
}

impl Lateness {
    /// Record one wake-up `late` after the due time.
    pub fn record(&self, late: Duration) {
        let us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        let i = LATENESS_BOUNDS_US
            .iter()
            .position(|&b| us < b)
            .unwrap_or(LATENESS_BOUNDS_US.len());
        if let Some(b) = self.buckets.get(i) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        let ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// A copy.
    pub fn load(&self) -> LatenessStats {
        LatenessStats {
            buckets: std::array::from_fn(|i| {
                self.buckets.get(i).map_or(0, |b| b.load(Ordering::Relaxed))
            }),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
            max_ns: self.max_ns.load(Ordering::Relaxed),
        }
    }
}

impl LatenessStats {
    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The bucket bound (µs) below which at least `q` (0…1) of the
    /// observations fall; `None` if that is the unbounded bucket or there are
    /// no observations.
    pub fn quantile_bound_us(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let want = (q * n as f64).ceil() as u64;
        let mut seen = 0;
        for (i, c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= want {
                return LATENESS_BOUNDS_US.get(i).copied();
            }
        }
        None
    }

    /// Number of observations at least `bound_us` late: exact when
    /// `bound_us` is one of [`LATENESS_BOUNDS_US`]; any other value counts
    /// from the next edge above it (0 above the last edge), so the count
    /// never over-states.
    pub fn at_least_us(&self, bound_us: u64) -> u64 {
        match LATENESS_BOUNDS_US.iter().position(|&b| b >= bound_us) {
            Some(i) => self.buckets.iter().skip(i + 1).sum(),
            None => 0,
        }
    }
}

impl std::fmt::Display for LatenessStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = |q: f64| match self.quantile_bound_us(q) {
            Some(b) => format!("< {b} µs"),
            None => format!("≥ {} µs", LATENESS_BOUNDS_US.last().copied().unwrap_or(0)),
        };
        if self.count() == 0 {
            return write!(f, "no paced releases");
        }
        write!(
            f,
            "{} paced releases, lateness p50 {}, p99 {}, p99.9 {}, max {:.0} µs, {} at least 2 ms late",
            self.count(),
            q(0.5),
            q(0.99),
            q(0.999),
            self.max_ns as f64 / 1e3,
            self.at_least_us(2_000)
        )
    }
}

/// Everything the metrics endpoint and the final report read.
#[derive(Debug, Default)]
pub struct SharedStats {
    /// Shell counters, indexed by [`Direction::index`].
    pub io: [IoCounters; 2],
    /// Wake-up lateness of the pacing thread (both directions).
    pub lateness: Lateness,
    core: Mutex<([CoreStats; 2], Option<SystemTime>)>,
    rwm: Mutex<Option<crate::rwm::RwmStats>>,
}

impl SharedStats {
    /// Latest published core state of both ports.
    pub fn core(&self) -> [CoreStats; 2] {
        self.core_at().0
    }

    /// Latest published core state of both ports and when it was published
    /// (wall clock; `None` before the first publication). A poller that
    /// wants per-interval differences (e.g. the mean sojourn of the packets
    /// dequeued in each 100 ms) pairs them with this time rather than with
    /// its own polling times, which drift against the publications.
    pub fn core_at(&self) -> ([CoreStats; 2], Option<SystemTime>) {
        self.core
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replace the published core state (called by the pacing thread),
    /// stamped with the current wall-clock time.
    pub fn publish(&self, stats: [CoreStats; 2]) {
        *self.core.lock().unwrap_or_else(PoisonError::into_inner) =
            (stats, Some(SystemTime::now()));
    }

    /// Latest published receive-window modulation counters (`None`
    /// without `--rwm`).
    pub fn rwm(&self) -> Option<crate::rwm::RwmStats> {
        *self.rwm.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replace the published RWM counters (called by the pacing thread).
    pub fn publish_rwm(&self, stats: Option<crate::rwm::RwmStats>) {
        *self.rwm.lock().unwrap_or_else(PoisonError::into_inner) = stats;
    }

    /// Shell counters of one direction.
    pub fn io(&self, dir: Direction) -> &IoCounters {
        match dir {
            Direction::Forward => &self.io[0],
            Direction::Reverse => &self.io[1],
        }
    }
}

/// Final state of one direction, printed when the router exits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirectionSummary {
    /// Shell counters.
    pub io: IoStats,
    /// Core state.
    pub core: CoreStats,
}

impl std::fmt::Display for DirectionSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (io, c) = (&self.io, &self.core);
        write!(
            f,
            "in {} pkt / {} B in {} reads, out {} pkt / {} B, fragmented {}, leading fragments out {}, drops {} (queue {}, aqm {}, ttl {}, malformed {}, impair {}), \
             impaired: duplicated {} corrupted {} reordered {}, ECN marks {}, {} sojourn mean {:.2} ms, input overflow {}, read errors {}, write errors {}, non-IP dropped {}, non-IP frames bridged {}, \
             indicators {}, signals skipped {}, mode changes {}, XCP feedback lowered {}, echoes lowered {}, \
             mode {}, R {:.3} Mbit/s of C {:.3} Mbit/s, d {:.1} ms, queue {} pkt",
            io.packets_in,
            io.bytes_in,
            io.reads,
            io.packets_out,
            io.bytes_out,
            c.fragments,
            io.leading_out,
            c.drops(),
            c.drops_queue,
            c.drops_aqm,
            c.drops_ttl,
            c.drops_malformed,
            c.drops_impair,
            c.duplicated,
            c.corrupted,
            c.reordered,
            c.ecn_marks,
            c.qdisc,
            c.sojourn.mean_s().unwrap_or(0.0) * 1e3,
            io.input_overflow,
            io.read_errors,
            io.write_errors,
            c.non_ip,
            io.link_passed,
            c.indicators,
            c.signals_skipped,
            c.mode_changes,
            c.xcp_feedback_lowered,
            c.echoes_lowered,
            if c.ka_mode { "KA" } else { "TCP" },
            c.rate_bps / 1e6,
            c.capacity_bps / 1e6,
            c.rtt.as_secs_f64() * 1e3,
            c.queue_packets,
        )
    }
}

/// Prints RWM's final counters on one line.
#[derive(Debug, Clone, Copy)]
pub struct RwmSummary(pub crate::rwm::RwmStats);

impl std::fmt::Display for RwmSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.0;
        write!(
            f,
            "windows rewritten {} forward / {} reverse, handshakes {} (RTT min {:.2} / mean {:.2} / max {:.2} ms), \
             flows {} ({} active, {} half-open), \
             closed {}, evicted {} (+{} half-open), refused {}, expired {} (+{} half-open), \
             TCP segments {}, untracked {}, not TCP {}, malformed {}",
            s.windows_rewritten[0],
            s.windows_rewritten[1],
            s.handshakes,
            s.handshake_rtt_min_ns as f64 / 1e6,
            s.handshake_rtt_sum_ns as f64 / 1e6 / s.handshakes.max(1) as f64,
            s.handshake_rtt_max_ns as f64 / 1e6,
            s.flows,
            s.active_flows,
            s.half_open,
            s.closed,
            s.evicted,
            s.evicted_half_open,
            s.refused,
            s.expired,
            s.expired_half_open,
            s.segments,
            s.untracked,
            s.not_tcp,
            s.malformed,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_buckets_and_quantiles() {
        let l = Lateness::default();
        assert_eq!(l.load().quantile_bound_us(0.5), None);
        for _ in 0..98 {
            l.record(Duration::from_micros(30)); // bucket < 50 µs
        }
        l.record(Duration::from_micros(700)); // < 1 ms
        l.record(Duration::from_millis(9)); // unbounded
        let s = l.load();
        assert_eq!(s.count(), 100);
        assert_eq!(s.buckets[2], 98);
        assert_eq!(s.buckets[6], 1);
        assert_eq!(s.buckets[9], 1);
        assert_eq!(s.max_ns, 9_000_000);
        assert_eq!(s.sum_ns, 98 * 30_000 + 700_000 + 9_000_000);
        assert_eq!(s.quantile_bound_us(0.5), Some(50));
        assert_eq!(s.quantile_bound_us(0.99), Some(1_000));
        assert_eq!(s.quantile_bound_us(1.0), None);
        assert!(s.to_string().contains("p50 < 50 µs"), "{s}");
    }

    #[test]
    fn releases_at_least_a_bound_late() {
        let l = Lateness::default();
        l.record(Duration::from_micros(1_999)); // [1, 2) ms
        l.record(Duration::from_micros(2_000)); // [2, 5) ms
        l.record(Duration::from_millis(30)); // unbounded
        let s = l.load();
        assert_eq!(s.at_least_us(2_000), 2);
        assert_eq!(s.at_least_us(1_000), 3);
        assert_eq!(s.at_least_us(5_000), 1);
        // Between edges: counted from the next edge up, never over-stated.
        assert_eq!(s.at_least_us(1_500), 2);
        assert_eq!(s.at_least_us(6_000), 0);
        assert!(s.to_string().ends_with("2 at least 2 ms late"), "{s}");
    }
}

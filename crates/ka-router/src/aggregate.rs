//! Aggregate controllers of a DCC middlebox (DESIGN §5.3; seed
//! `dcc-middleboxes.txt`).
//!
//! Two middleboxes split a path into congestion-control segments. The
//! middle segment carries *one* aggregate — all traffic between the two
//! sites — under its own congestion control; the middlebox's egress
//! [`Port`](crate::Port) is shaped at the aggregate's current rate
//! ([`Port::set_capacity`](crate::Port::set_capacity)), and its signalling
//! stage tells each local host its share of it (LCCP). An
//! [`AggregateController`] decides that rate from what the far middlebox
//! reports about the middle segment ([`SegmentFeedback`]). Like everything
//! in this crate it is sans-IO: feedback and `Instant`s in, a rate out.
//!
//! * [`SlaRate`]: a fixed rate (the seed's data-centre case: "a service
//!   provider may have an amount of bandwidth between two sites that is
//!   assured through a service level agreement").
//! * [`MulTcp`]: an adaptive aggregate that behaves like N TCP flows —
//!   MulTCP (Crowcroft & Oechslin 1998, the seed's ref. 4; PA-MulTCP, Kuo
//!   & Fu 2008, is the seed's ref. 5): N flows' window rules, sent at
//!   `W/RTT` because a middlebox shapes its aggregate instead of clocking
//!   packets out on ACKs. We chose it
//!   because the seed names it as the aggregation method to use "if
//!   fairness is important", and its target is checkable: against M TCP
//!   flows on the same bottleneck it should get N/(N+M).
//!
//! ## The MulTCP rule
//!
//! The aggregate keeps a window `W` (bytes) like N TCP flows together and
//! sends at `A = W / r`, `r` the middle segment's base RTT plus an EWMA
//! (gain 1/8) of the queueing delays reported:
//!
//! * per `b` bytes delivered: `W ← W + N·MSS·b/W` — N segments per RTT,
//!   N flows' worth of additive increase;
//! * per loss *event* (the first loss at least one `r` after the last
//!   reduction): `W ← W·(1 − 1/(2N))` — one of N flows halving (MulTCP's
//!   decrease);
//! * `A` is clamped to `[min, max]` (and `W` to `[min·r, max·r]`). There
//!   is no slow start: the aggregate starts at its configured initial rate
//!   (a middlebox knows its link).
//!
//! Dividing by the *current* RTT matters: as a queue builds in the middle
//! segment, `r` grows and the rate stops growing, exactly as a window-based
//! TCP's ACK clock slows down. A rate that grew by `N·MSS/r` per RTT
//! regardless (a plain rate-based AIMD) took 86 % of a 4 Mbit/s segment
//! against two TCP flows at N = 2 in our test, not the 50 % MulTCP is for.
//! Increase is driven by delivered bytes, so an aggregate that does not use
//! its rate does not grow it (as a window-limited TCP would not).
//!
//! **Against TCP (tolerance).** Against M long-lived TCP NewReno flows on
//! a RED bottleneck, with LCCP hosts that keep to the signalled rate
//! through losses, the aggregate gets N/(N+M) of the segment within 25 %
//! in bytes delivered, and its *rate* sits between N/(N+M) and 1.4× that
//! (ka-sim's `tests/dcc.rs`, N = M = 2, seeds 1–6: bytes 0.58–0.62 of
//! the segment, rate 0.63–0.69 of C). It errs high because the aggregate
//! is paced and TCP is bursty, so RED drops TCP's packets a little more
//! often. On a drop-tail bottleneck the paced aggregate dodges drops
//! (the traffic phase effects of Floyd & Jacobson 1991): against two TCP
//! flows it took 0.47, 0.89 and 0.91 of the segment at N = 1, 2 and 4
//! (shares 1/3, 1/2, 2/3). Hosts that fall back to TCP on each middle-segment
//! loss (KA's default) leave most of the rate unused: 0.22–0.34 of the
//! segment in the same test.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// What the far middlebox learnt about one aggregate packet in the middle
/// segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentFeedback {
    /// IP bytes of the packet.
    pub bytes: usize,
    /// It was lost in the middle segment.
    pub lost: bool,
    /// The queueing delay it met there (for the RTT estimate).
    pub queue_delay: Duration,
}

/// Decides a middlebox aggregate's rate (see the module docs).
pub trait AggregateController: Send + std::fmt::Debug {
    /// Feedback about one aggregate packet arrived at `now`.
    fn on_feedback(&mut self, now: Instant, fb: &SegmentFeedback);

    /// The aggregate's rate now, bit/s.
    fn rate_bps(&self) -> u64;

    /// A short name for outputs ("sla", "multcp").
    fn name(&self) -> &'static str;
}

/// A fixed SLA rate: feedback changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaRate {
    /// The agreed rate, bit/s.
    pub rate_bps: u64,
}

impl AggregateController for SlaRate {
    fn on_feedback(&mut self, _now: Instant, _fb: &SegmentFeedback) {}

    fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    fn name(&self) -> &'static str {
        "sla"
    }
}

/// Configuration of [`MulTcp`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MulTcpConfig {
    /// N: how many TCP flows the aggregate is worth (≥ 1; fractions allowed).
    pub weight: f64,
    /// Rate at start, bit/s.
    pub initial_bps: u64,
    /// Lower bound, bit/s.
    pub min_bps: u64,
    /// Upper bound, bit/s.
    pub max_bps: u64,
    /// Propagation RTT of the middle segment (middlebox to middlebox and
    /// back).
    pub base_rtt: Duration,
    /// The segment size of the additive increase, bytes. Default 1448 (a
    /// 1500-byte packet's TCP payload with timestamps, as the TCP flows it
    /// competes with count it).
    pub mss: usize,
}

impl MulTcpConfig {
    /// A weight-`weight` aggregate starting at `initial_bps`, bounded to
    /// `[initial/100, max_bps]`, over a segment with RTT `base_rtt`.
    pub fn new(weight: f64, initial_bps: u64, max_bps: u64, base_rtt: Duration) -> Self {
        Self {
            weight,
            initial_bps,
            min_bps: (initial_bps / 100).max(8_000),
            max_bps,
            base_rtt,
            mss: 1448,
        }
    }
}

/// The MulTCP aggregate (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct MulTcp {
    cfg: MulTcpConfig,
    /// W in bytes.
    window: f64,
    /// EWMA of reported queueing delays, s.
    qdelay: f64,
    last_decrease: Option<Instant>,
    loss_events: u64,
    losses: u64,
}

impl MulTcp {
    /// A controller with `cfg` (weight below 1 is taken as 1; bounds are
    /// ordered and at least 1 bit/s).
    pub fn new(cfg: MulTcpConfig) -> Self {
        let mut cfg = cfg;
        if !(cfg.weight.is_finite() && cfg.weight >= 1.0) {
            cfg.weight = 1.0;
        }
        cfg.min_bps = cfg.min_bps.max(1);
        cfg.max_bps = cfg.max_bps.max(cfg.min_bps);
        cfg.mss = cfg.mss.max(1);
        let rate = cfg.initial_bps.clamp(cfg.min_bps, cfg.max_bps) as f64 / 8.0;
        let mut m = Self {
            cfg,
            window: 0.0,
            qdelay: 0.0,
            last_decrease: None,
            loss_events: 0,
            losses: 0,
        };
        m.window = rate * m.rtt_s();
        m
    }

    /// The configuration (as sanitised).
    pub fn config(&self) -> &MulTcpConfig {
        &self.cfg
    }

    /// The RTT the rule uses: base RTT plus the smoothed queueing delay.
    pub fn rtt(&self) -> Duration {
        self.cfg.base_rtt + Duration::from_secs_f64(self.qdelay)
    }

    fn rtt_s(&self) -> f64 {
        self.rtt().as_secs_f64().max(MIN_RTT_S)
    }

    /// The window W, bytes.
    pub fn window(&self) -> f64 {
        self.window
    }

    /// Loss events reacted to (window reductions).
    pub fn loss_events(&self) -> u64 {
        self.loss_events
    }

    /// Lost packets reported.
    pub fn losses(&self) -> u64 {
        self.losses
    }
}

/// The smallest RTT the rule divides by (1 ms): a zero base RTT must not
/// make the rate infinite.
const MIN_RTT_S: f64 = 1e-3;

impl AggregateController for MulTcp {
    fn on_feedback(&mut self, now: Instant, fb: &SegmentFeedback) {
        let q = fb.queue_delay.as_secs_f64();
        if q.is_finite() && q >= 0.0 {
            self.qdelay += (q - self.qdelay) / 8.0;
        }
        let rtt = self.rtt_s();
        if fb.lost {
            self.losses += 1;
            let quiet = self
                .last_decrease
                .is_none_or(|t| now.saturating_duration_since(t).as_secs_f64() >= rtt);
            if quiet {
                self.window *= 1.0 - 1.0 / (2.0 * self.cfg.weight);
                self.last_decrease = Some(now);
                self.loss_events += 1;
            }
        } else {
            self.window +=
                self.cfg.weight * self.cfg.mss as f64 * fb.bytes as f64 / self.window.max(1.0);
        }
        let (lo, hi) = (self.cfg.min_bps as f64 / 8.0, self.cfg.max_bps as f64 / 8.0);
        self.window = self.window.clamp(lo * rtt, hi * rtt);
    }

    fn rate_bps(&self) -> u64 {
        let rate = self.window / self.rtt_s() * 8.0;
        (rate as u64).clamp(self.cfg.min_bps, self.cfg.max_bps)
    }

    fn name(&self) -> &'static str {
        "multcp"
    }
}

/// Most reports a [`FeedbackQueue`] holds; later ones are dropped (and
/// counted). A segment carries far fewer packets per RTT than this at any
/// rate the simulator runs (1 Gbit/s × 500 ms ≈ 42 000 full packets).
pub const MAX_PENDING_FEEDBACK: usize = 1 << 16;

/// Reports on their way back from the far middlebox: each becomes visible
/// at its delivery time. Bounded by [`MAX_PENDING_FEEDBACK`].
#[derive(Debug, Default)]
pub struct FeedbackQueue {
    heap: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    /// Reports dropped because the queue was full.
    pub overflow: u64,
}

#[derive(Debug)]
struct Pending {
    at: Instant,
    seq: u64,
    fb: SegmentFeedback,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

impl FeedbackQueue {
    /// A report that becomes visible at `at`.
    pub fn push(&mut self, at: Instant, fb: SegmentFeedback) {
        if self.heap.len() >= MAX_PENDING_FEEDBACK {
            self.overflow += 1;
            return;
        }
        self.seq += 1;
        self.heap.push(Reverse(Pending {
            at,
            seq: self.seq,
            fb,
        }));
    }

    /// When the earliest pending report becomes visible.
    pub fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|p| p.0.at)
    }

    /// The earliest report visible at `now`, with its delivery time.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, SegmentFeedback)> {
        if self.next_at()? > now {
            return None;
        }
        self.heap.pop().map(|p| (p.0.at, p.0.fb))
    }

    /// Reports pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none are pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(bytes: usize) -> SegmentFeedback {
        SegmentFeedback {
            bytes,
            lost: false,
            queue_delay: Duration::ZERO,
        }
    }

    #[test]
    fn sla_never_moves() {
        let mut s = SlaRate {
            rate_bps: 1_000_000,
        };
        let t0 = Instant::now();
        for lost in [false, true, true] {
            s.on_feedback(
                t0,
                &SegmentFeedback {
                    lost,
                    ..delivered(1500)
                },
            );
        }
        assert_eq!(s.rate_bps(), 1_000_000);
    }

    /// One window's worth of delivered bytes raises W by N·MSS (A by
    /// N·MSS/RTT).
    #[test]
    fn additive_increase_is_n_segments_per_rtt() {
        let rtt = Duration::from_millis(100);
        let mut m = MulTcp::new(MulTcpConfig::new(4.0, 8_000_000, 100_000_000, rtt));
        let t0 = Instant::now();
        let w0 = m.window(); // 1 MB/s · 100 ms = 100 kB
        assert!((w0 - 100_000.0).abs() < 1e-6, "{w0}");
        for _ in 0..100 {
            m.on_feedback(t0, &delivered(1000));
        }
        // (W grows during the window, so slightly less: 0.15 % here.)
        let want = w0 + 4.0 * 1448.0;
        assert!(
            (m.window() - want).abs() / want < 0.01,
            "{} vs {want}",
            m.window()
        );
        let rate = m.rate_bps() as f64 / 8.0;
        assert!((rate - m.window() / 0.1).abs() < 1.0);
    }

    /// A loss event cuts W (and A) by 1/(2N), at most once per RTT.
    #[test]
    fn decrease_once_per_rtt() {
        let rtt = Duration::from_millis(100);
        let mut m = MulTcp::new(MulTcpConfig::new(2.0, 4_000_000, 100_000_000, rtt));
        let t0 = Instant::now();
        let lost = SegmentFeedback {
            lost: true,
            ..delivered(1500)
        };
        m.on_feedback(t0, &lost);
        assert_eq!(m.rate_bps(), 3_000_000);
        m.on_feedback(t0 + Duration::from_millis(50), &lost);
        assert_eq!(m.rate_bps(), 3_000_000, "same loss event");
        m.on_feedback(t0 + Duration::from_millis(101), &lost);
        assert_eq!(m.rate_bps(), 2_250_000);
        assert_eq!((m.loss_events(), m.losses()), (2, 3));
        // Bounds hold.
        for i in 0..200 {
            m.on_feedback(t0 + Duration::from_secs(1 + i), &lost);
        }
        assert_eq!(m.rate_bps(), 40_000);
    }

    /// A standing queue lengthens the RTT and so lowers the rate at the same
    /// window, as ACK clocking slows a window-based TCP.
    #[test]
    fn queueing_delay_slows_the_rate() {
        let mut m = MulTcp::new(MulTcpConfig::new(
            1.0,
            1_000_000,
            10_000_000,
            Duration::from_millis(50),
        ));
        let t0 = Instant::now();
        let w = m.window();
        for _ in 0..200 {
            m.on_feedback(
                t0,
                &SegmentFeedback {
                    queue_delay: Duration::from_millis(30),
                    ..delivered(0)
                },
            );
        }
        let r = m.rtt().as_secs_f64();
        assert!((r - 0.08).abs() < 1e-6, "{r}");
        assert_eq!(m.window(), w);
        let rate = m.rate_bps() as f64;
        assert!((rate - 1e6 * 50.0 / 80.0).abs() < 10.0, "{rate}");
    }

    #[test]
    fn feedback_queue_orders_and_bounds() {
        let t0 = Instant::now();
        let mut q = FeedbackQueue::default();
        q.push(t0 + Duration::from_millis(20), delivered(2));
        q.push(t0 + Duration::from_millis(10), delivered(1));
        q.push(t0 + Duration::from_millis(10), delivered(3));
        assert_eq!(q.next_at(), Some(t0 + Duration::from_millis(10)));
        assert!(q.pop_due(t0).is_none());
        let got: Vec<usize> = std::iter::from_fn(|| q.pop_due(t0 + Duration::from_millis(15)))
            .map(|(_, f)| f.bytes)
            .collect();
        assert_eq!(got, vec![1, 3]);
        assert_eq!(q.len(), 1);
        for _ in 0..MAX_PENDING_FEEDBACK + 5 {
            q.push(t0, delivered(0));
        }
        assert_eq!(q.len(), MAX_PENDING_FEEDBACK);
        assert_eq!(q.overflow, 6);
    }
}

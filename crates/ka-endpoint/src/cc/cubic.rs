//! CUBIC (RFC 9438).
//!
//! Window arithmetic is done in segments (`f64`) and exposed in bytes:
//!
//! * Slow start is the same as [`super::NewReno`]'s. With
//!   [`CubicConfig::hystart`] it ends early, as Linux's `tcp_cubic` does by
//!   default (`hystart=1`, `hystart_detect=3`; Ha & Rhee, "Taming the
//!   elephants", 2008), when either sign of a full pipe shows, once the
//!   window is at least 16 segments:
//!   - *delay increase*: in a round trip (a round ends when an ACK covers a
//!     segment sent after it began), the smallest of the first 8 RTT samples
//!     exceeds the connection's minimum RTT by `clamp(min_rtt/8, 4 ms,
//!     16 ms)`;
//!   - *ACK train*: ACKs arriving at most 2 ms apart have spanned more than
//!     half the minimum RTT since the round began.
//!
//!   Either sets `ssthresh = cwnd`, so the window enters congestion
//!   avoidance without the overshoot and burst of losses that plain slow
//!   start ends with on a deep buffer. Off by default (RFC 9438 leaves the
//!   slow-start variant open; the paper's simulations use plain slow
//!   start); the testbed scenarios turn it on to match the kernel's CUBIC
//!   they are compared with.
//! * Congestion avoidance: `W_cubic(t) = C·(t − K)³ + W_max` with
//!   `K = ∛((W_max − cwnd_epoch)/C)`; per ACK the window moves towards
//!   `target = W_cubic(t + srtt)` clamped to `[cwnd, 1.5·cwnd]` by
//!   `(target − cwnd)/cwnd` per acknowledged segment (§4.2–4.4).
//! * Reno-friendly region (§4.3): `W_est` grows by
//!   `α_cubic · acked/cwnd` with `α_cubic = 3(1 − β)/(1 + β)` until
//!   `W_est ≥ cwnd_prior`, then by 1; when `W_cubic(t) < W_est` the window
//!   follows `W_est`.
//! * A reduction that DSACKs prove spurious is undone
//!   ([`Controller::undo_congestion_event`]): the window and threshold go
//!   back, W_max stays, the next ACK starts a new epoch.
//! * Loss (§4.6): `ssthresh = max(FlightSize · β, 2·SMSS)`, `cwnd = ssthresh`;
//!   fast convergence (§4.7): if the window at the loss is below the previous
//!   `W_max`, `W_max = cwnd · (1 + β)/2`, else `W_max = cwnd`.
//! * RTO (§4.8): as a loss, but `cwnd = 1·SMSS`.

use super::window::{self, SlowStart};
use super::{Ack, CongestionEvent, Controller};
use crate::rtt::RttEstimator;
use std::time::{Duration, Instant};

/// CUBIC parameters.
#[derive(Debug, Clone, Copy)]
pub struct CubicConfig {
    /// Sender MSS in bytes.
    pub mss: usize,
    /// Initial window in bytes.
    pub initial_window: usize,
    /// `C` (RFC 9438: 0.4).
    pub c: f64,
    /// `β_cubic` (RFC 9438: 0.7).
    pub beta: f64,
    /// Fast convergence (RFC 9438 §4.7, on by default).
    pub fast_convergence: bool,
    /// End slow start early on a delay increase or an ACK train, as
    /// Linux's CUBIC does (see the module docs). Default off.
    pub hystart: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            mss: 1460,
            initial_window: 14_600,
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            hystart: false,
        }
    }
}

/// The CUBIC controller.
#[derive(Debug, Clone)]
pub struct Cubic {
    cfg: CubicConfig,
    mss: usize,
    /// Window in bytes (authoritative); the float state below is segments.
    cwnd: usize,
    ssthresh: usize,
    /// Fractional window in segments while in congestion avoidance.
    cwnd_seg: f64,
    w_max: f64,
    cwnd_prior: f64,
    w_est: f64,
    k: f64,
    epoch_start: Option<Instant>,
    recovery_start: Option<Instant>,
    ss_bytes_acked: usize,
    hystart: HyStart,
}

/// HyStart's per-round state (Linux `tcp_cubic.c`'s names).
#[derive(Debug, Clone, Default)]
struct HyStart {
    /// Slow start has been ended by HyStart (until the next RTO).
    found: bool,
    /// Start of the current round (`None` before the first).
    round_start: Option<Instant>,
    /// Last ACK of the current ACK train.
    last_ack: Option<Instant>,
    /// Smallest RTT sample of this round so far.
    curr_rtt: Option<Duration>,
    /// RTT samples taken this round.
    samples: u32,
}

/// HyStart acts once the window is this many segments.
const HYSTART_LOW_WINDOW: usize = 16;
/// RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// ACKs at most this far apart form a train.
const HYSTART_ACK_DELTA: Duration = Duration::from_millis(2);
/// Bounds of the delay-increase threshold.
const HYSTART_DELAY_MIN: Duration = Duration::from_millis(4);
const HYSTART_DELAY_MAX: Duration = Duration::from_millis(16);

impl HyStart {
    /// Feeds one ACK in slow start; `true` when the pipe is full.
    fn on_ack(&mut self, now: Instant, sent: Instant, rtt: &RttEstimator) -> bool {
        if self.round_start.is_none_or(|start| sent >= start) {
            // A new round: the ACK covers a segment sent after the last
            // round began.
            self.round_start = Some(now);
            self.last_ack = Some(now);
            self.curr_rtt = None;
            self.samples = 0;
        }
        let Some(min_rtt) = rtt.min_rtt() else {
            return false;
        };
        // ACK train.
        if let (Some(last), Some(start)) = (self.last_ack, self.round_start)
            && now.saturating_duration_since(last) <= HYSTART_ACK_DELTA
        {
            self.last_ack = Some(now);
            if now.saturating_duration_since(start) > min_rtt / 2 {
                return true;
            }
        }
        // Delay increase.
        let sample = rtt.latest();
        self.curr_rtt = Some(self.curr_rtt.map_or(sample, |c| c.min(sample)));
        if self.samples < HYSTART_MIN_SAMPLES {
            self.samples += 1;
            return false;
        }
        let thresh = (min_rtt / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
        self.curr_rtt.is_some_and(|c| c > min_rtt + thresh)
    }
}

impl Cubic {
    /// A controller in slow start.
    pub fn new(cfg: CubicConfig) -> Self {
        let mss = cfg.mss.max(1);
        let cwnd = cfg.initial_window.max(mss);
        Cubic {
            cfg,
            mss,
            cwnd,
            ssthresh: usize::MAX,
            cwnd_seg: cwnd as f64 / mss as f64,
            w_max: 0.0,
            cwnd_prior: 0.0,
            w_est: 0.0,
            k: 0.0,
            epoch_start: None,
            recovery_start: None,
            ss_bytes_acked: 0,
            hystart: HyStart::default(),
        }
    }

    fn alpha(&self) -> f64 {
        if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - self.cfg.beta) / (1.0 + self.cfg.beta)
        }
    }

    fn w_cubic(&self, t: f64) -> f64 {
        let d = t - self.k;
        self.cfg.c * d * d * d + self.w_max
    }

    /// `W_max` in segments (0 before the first loss).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// `K` in seconds for the current epoch.
    pub fn k(&self) -> f64 {
        self.k
    }

    fn set_cwnd_seg(&mut self, seg: f64) {
        let min = 1.0;
        self.cwnd_seg = seg.max(min);
        self.cwnd = (self.cwnd_seg * self.mss as f64) as usize;
    }

    fn congestion_avoidance(&mut self, now: Instant, bytes: usize, rtt: &RttEstimator) {
        let mss = self.mss as f64;
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                self.cwnd_seg = self.cwnd as f64 / mss;
                self.w_est = self.cwnd_seg;
                if self.w_max <= self.cwnd_seg {
                    // no loss yet (or window already past W_max): plateau here
                    self.w_max = self.cwnd_seg;
                    self.k = 0.0;
                } else {
                    self.k = ((self.w_max - self.cwnd_seg) / self.cfg.c).cbrt();
                }
                now
            }
        };
        let acked = bytes as f64 / mss;
        let t = now.saturating_duration_since(epoch).as_secs_f64();
        let srtt = rtt.srtt_or_initial().as_secs_f64();
        self.w_est += self.alpha() * acked / self.cwnd_seg;
        let cubic_now = self.w_cubic(t);
        if cubic_now < self.w_est {
            // Reno-friendly region
            if self.w_est > self.cwnd_seg {
                self.set_cwnd_seg(self.w_est);
            }
        } else {
            let target = self
                .w_cubic(t + srtt)
                .clamp(self.cwnd_seg, 1.5 * self.cwnd_seg);
            let next = self.cwnd_seg + (target - self.cwnd_seg) / self.cwnd_seg * acked;
            self.set_cwnd_seg(next);
        }
    }
}

impl Controller for Cubic {
    fn on_ack(&mut self, ack: Ack<'_>) {
        let Ack {
            now,
            sent,
            bytes,
            app_limited,
            rtt,
        } = ack;
        if window::ack_ignored(self.recovery_start, sent, bytes, app_limited) {
            return;
        }
        if self.cfg.hystart
            && !self.hystart.found
            && self.cwnd < self.ssthresh
            && self.cwnd >= HYSTART_LOW_WINDOW * self.mss
            && self.hystart.on_ack(now, sent, rtt)
        {
            self.hystart.found = true;
            self.ssthresh = self.cwnd;
        }
        let bytes = match window::slow_start(&mut self.cwnd, self.ssthresh, self.mss, bytes) {
            SlowStart::Off => bytes,
            SlowStart::Grew(inc) => {
                self.cwnd_seg = self.cwnd as f64 / self.mss as f64;
                self.ss_bytes_acked += inc;
                return;
            }
            SlowStart::Ended(rest) => {
                self.cwnd_seg = self.cwnd as f64 / self.mss as f64;
                rest
            }
        };
        self.congestion_avoidance(now, bytes, rtt);
    }

    fn on_congestion_event(&mut self, event: CongestionEvent) {
        let CongestionEvent {
            is_rto,
            bytes_in_flight,
            ..
        } = event;
        if !window::begin_episode(&mut self.recovery_start, event) {
            return;
        }
        let mss = self.mss as f64;
        let cwnd_seg = self.cwnd as f64 / mss;
        self.w_max = if self.cfg.fast_convergence && cwnd_seg < self.w_max {
            cwnd_seg * (1.0 + self.cfg.beta) / 2.0
        } else {
            cwnd_seg
        };
        self.cwnd_prior = cwnd_seg;
        let reduced = (bytes_in_flight as f64 * self.cfg.beta) as usize;
        (self.cwnd, self.ssthresh) = window::after_loss(reduced, self.mss, is_rto);
        self.epoch_start = None;
        self.cwnd_seg = self.cwnd as f64 / mss;
        if is_rto {
            // Slow start again from one segment: HyStart may end it again.
            self.hystart = HyStart::default();
        }
    }

    fn window(&self) -> usize {
        self.cwnd
    }

    fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    fn set_window(&mut self, _now: Instant, window: usize, ssthresh: usize) {
        (self.cwnd, self.ssthresh) = window::floored(window, ssthresh, self.mss);
        self.cwnd_seg = self.cwnd as f64 / self.mss as f64;
        self.w_max = self.cwnd_seg;
        self.cwnd_prior = self.cwnd_seg;
        self.epoch_start = None;
    }

    /// W_max stays where the reduction put it, and the next ACK in
    /// congestion avoidance starts a new epoch from the restored window
    /// (Linux keeps `last_max_cwnd` and has cleared `epoch_start`).
    fn undo_congestion_event(&mut self, _now: Instant, window: usize, ssthresh: usize) {
        self.cwnd = self.cwnd.max(window);
        self.ssthresh = self.ssthresh.max(ssthresh);
        self.cwnd_seg = self.cwnd as f64 / self.mss as f64;
        self.recovery_start = None;
        self.epoch_start = None;
    }

    fn set_mss(&mut self, mss: usize) {
        let old = self.mss as f64;
        self.mss = mss.max(1);
        self.w_max = self.w_max * old / self.mss as f64;
        self.cwnd = self.cwnd.max(self.mss);
        self.cwnd_seg = self.cwnd as f64 / self.mss as f64;
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::events::tests::{ack, loss, rto};
    use crate::cc::window::tests::rtt;
    use std::time::Duration;

    const MSS: usize = 1000;

    fn cubic() -> Cubic {
        Cubic::new(CubicConfig {
            mss: MSS,
            initial_window: 10 * MSS,
            ..CubicConfig::default()
        })
    }

    /// A controller at 100 segments (window and threshold) that has just
    /// reacted to a loss with 100 segments in flight; and the loss's time.
    fn lost_at_100_segments() -> (Cubic, Instant) {
        let t0 = Instant::now();
        let mut c = cubic();
        c.set_window(t0, 100 * MSS, 100 * MSS);
        let t1 = t0 + Duration::from_millis(1);
        c.on_congestion_event(loss(t1, t1, 100 * MSS));
        (c, t1)
    }

    /// Runs `rounds` RTTs in which every segment of the window is acked
    /// individually, spread over the RTT; returns the window (segments)
    /// after each round.
    fn run(c: &mut Cubic, start: Instant, rtt_ms: u64, rounds: usize) -> Vec<f64> {
        let r = rtt(rtt_ms);
        let mut out = vec![];
        let mut now = start;
        for _ in 0..rounds {
            let segs = (c.window() / MSS).max(1);
            let step = Duration::from_millis(rtt_ms) / segs as u32;
            for _ in 0..segs {
                now += step;
                c.on_ack(ack(now, now, MSS, &r));
            }
            out.push(c.window() as f64 / MSS as f64);
        }
        out
    }

    #[test]
    fn loss_multiplies_by_beta_and_sets_wmax() {
        let (c, _) = lost_at_100_segments();
        assert_eq!(c.window(), 70 * MSS);
        assert_eq!(c.ssthresh(), 70 * MSS);
        assert!((c.w_max() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn fast_convergence_lowers_wmax() {
        let (mut c, t1) = lost_at_100_segments();
        // second loss below W_max = 100: W_max = 70 * 1.7 / 2 = 59.5
        let t2 = t1 + Duration::from_millis(1);
        c.on_congestion_event(loss(t2 + Duration::from_millis(1), t2, 70 * MSS));
        assert!((c.w_max() - 59.5).abs() < 1e-9, "{}", c.w_max());
        assert_eq!(c.window(), 49 * MSS);
    }

    #[test]
    fn concave_growth_reaches_wmax_at_k_with_long_rtt() {
        // RTT 100 ms, W_max = 100 → after loss cwnd = 70, K = cbrt(30/0.4) ≈ 4.217 s
        let (mut c, t1) = lost_at_100_segments();
        let traj = run(&mut c, t1 + Duration::from_millis(1), 100, 60);
        assert!((c.k() - 75f64.cbrt()).abs() < 1e-9);
        // roughly K / RTT = 42 rounds to get back to W_max; then convex beyond
        let at_k = traj[41];
        assert!((at_k - 100.0).abs() < 3.0, "at K: {at_k}");
        // concave: growth in the first 10 rounds is larger than in rounds 30..40
        assert!(traj[10] - traj[0] > traj[40] - traj[30]);
        // never beyond W_max before K by more than rounding
        assert!(traj[..38].iter().all(|&w| w <= 100.5), "{traj:?}");
        // convex after K: growth accelerates
        assert!(traj[59] - traj[54] > traj[49] - traj[44]);
    }

    #[test]
    fn reno_friendly_region_dominates_with_short_rtt() {
        // RTT 1 ms: cubic grows slowly in wall time; W_est grows α per RTT.
        let (mut c, t1) = lost_at_100_segments();
        let traj = run(&mut c, t1 + Duration::from_millis(1), 1, 40);
        // α_cubic = 3·0.3/1.7 ≈ 0.529 segments per RTT while W_est < cwnd_prior
        let alpha = 3.0 * 0.3 / 1.7;
        let expect = 70.0 + 40.0 * alpha;
        assert!(
            (traj[39] - expect).abs() < 1.5,
            "{} vs {}",
            traj[39],
            expect
        );
        // and it is above what pure cubic would give at t = 40 ms
        let wc = 0.4 * (0.04 - 75f64.cbrt()).powi(3) + 100.0;
        assert!(traj[39] > wc + 5.0);
    }

    #[test]
    fn rto_collapses_window() {
        let t0 = Instant::now();
        let mut c = cubic();
        c.set_window(t0, 40 * MSS, 40 * MSS);
        c.on_congestion_event(rto(t0 + Duration::from_millis(1), t0, 40 * MSS));
        assert_eq!(c.window(), MSS);
        assert_eq!(c.ssthresh(), 28 * MSS);
    }

    #[test]
    fn slow_start_matches_newreno() {
        let t0 = Instant::now();
        let mut c = cubic();
        let traj = run(&mut c, t0, 100, 3);
        assert_eq!(traj, vec![20.0, 40.0, 80.0]);
    }

    /// Slow start for `rounds` round trips on a path of base RTT 100 ms:
    /// the segments of a round are sent together when the round begins and
    /// acked `spacing_ms` apart, each with the RTT `rtt_of(window at send)`.
    /// Returns the window (segments) after each round.
    fn slow_start_rounds(
        hystart: bool,
        rounds: usize,
        spacing_ms: u64,
        rtt_of: impl Fn(usize) -> Duration,
    ) -> (Cubic, Vec<usize>) {
        let mut c = Cubic::new(CubicConfig {
            mss: MSS,
            initial_window: 10 * MSS,
            hystart,
            ..CubicConfig::default()
        });
        let mut r = rtt(100);
        let mut now = Instant::now();
        let mut out = vec![];
        for _ in 0..rounds {
            let sent = now;
            let segs = c.window() / MSS;
            now += rtt_of(segs);
            for _ in 0..segs {
                now += Duration::from_millis(spacing_ms);
                r.on_sample(rtt_of(segs));
                c.on_ack(ack(now, sent, MSS, &r));
            }
            out.push(c.window() / MSS);
        }
        (c, out)
    }

    #[test]
    fn hystart_ends_slow_start_on_a_delay_increase() {
        // A standing queue of 5 ms per segment above 40 in flight; ACKs
        // 5 ms apart (no ACK train). The round at 80 segments sees +200 ms
        // (threshold clamp(100/8, 4, 16) = 12.5 ms) and ends slow start
        // at its 9th ACK (8 samples first), at 80 + 8 segments.
        let queue = |segs: usize| Duration::from_millis(100 + 5 * segs.saturating_sub(40) as u64);
        let (c, w) = slow_start_rounds(true, 6, 5, queue);
        assert_eq!(&w[..3], &[20, 40, 80], "{w:?}");
        assert_eq!(c.ssthresh(), 88 * MSS, "{w:?}");
        // then congestion avoidance: about a segment per round
        assert!((88..=92).contains(&w[5]), "{w:?}");
        // without HyStart the same path doubles on
        let (c, w) = slow_start_rounds(false, 6, 5, queue);
        assert_eq!(w, vec![20, 40, 80, 160, 320, 640]);
        assert_eq!(c.ssthresh(), usize::MAX);
    }

    #[test]
    fn hystart_ends_slow_start_on_an_ack_train() {
        // ACKs 2 ms apart, no queueing: the train of a round spans more
        // than half the 100 ms minimum RTT once it has 26 ACKs, so slow
        // start ends in the round at 40 segments, at 40 + 26 = 66.
        let flat = |_| Duration::from_millis(100);
        let (c, w) = slow_start_rounds(true, 4, 2, flat);
        assert_eq!(&w[..2], &[20, 40], "{w:?}");
        assert_eq!(c.ssthresh(), 66 * MSS, "{w:?}");
        assert!(w[3] < 70, "{w:?}");
        // ACKs 3 ms apart are no train: plain slow start
        let (c, w) = slow_start_rounds(true, 4, 3, flat);
        assert_eq!(w, vec![20, 40, 80, 160]);
        assert_eq!(c.ssthresh(), usize::MAX);
    }

    #[test]
    fn hystart_starts_over_after_an_rto() {
        let queue = |segs: usize| Duration::from_millis(100 + 5 * segs.saturating_sub(40) as u64);
        let (mut c, _) = slow_start_rounds(true, 4, 5, queue);
        assert!(c.hystart.found);
        let now = Instant::now() + Duration::from_secs(10);
        c.on_congestion_event(rto(now, now, c.window()));
        assert!(!c.hystart.found);
        assert_eq!(c.window(), MSS);
    }
}

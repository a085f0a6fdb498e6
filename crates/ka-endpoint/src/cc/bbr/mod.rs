//! BBR, version 1 (DESIGN §6.4.1): a model-based, rate-based controller,
//! the one Linux's `tcp_bbr` runs.
//!
//! The model is two numbers: the bottleneck bandwidth `BtlBw` (the maximum
//! delivery rate over the last 10 round trips) and the round-trip
//! propagation time `RTprop` (the minimum RTT over the last 10 s). The
//! sender paces at `pacing_gain · BtlBw` and bounds its flight by
//! `cwnd_gain · BtlBw · RTprop` plus an ACK-aggregation allowance and a
//! quantization budget of three send quanta (as Linux's `tcp_bbr.c`:
//! [`Bbr::inflight_target`], [`Bbr::ack_aggregation_allowance`]), with the
//! gains set by a state machine:
//!
//! * **Startup** (`pacing_gain = cwnd_gain = 2/ln 2`): doubles the rate per
//!   round until `BtlBw` grew less than 25 % for 3 rounds in a row
//!   (rounds whose samples were application-limited do not count);
//! * **Drain** (`pacing_gain = ln 2/2`): empties the queue Startup built,
//!   until the flight is at most one BDP;
//! * **ProbeBW** (`cwnd_gain = 2`): cycles `pacing_gain` through
//!   `[1.25, 0.75, 1, 1, 1, 1, 1, 1]`, one phase per `RTprop`; the 1.25
//!   phase lasts until the flight reached `1.25·BDP` plus the budget (or a
//!   loss), the 0.75 phase ends early once the flight is back at one BDP
//!   plus the budget; the first phase
//!   is drawn at random (never the 0.75 one);
//! * **ProbeRTT**: when `RTprop` has not been refreshed for 10 s, the
//!   window drops to 4 segments for `max(200 ms, one round)` so the queue
//!   empties and a fresh minimum is seen.
//!
//! Loss: v1 keeps its model through loss. On a loss episode the window
//! becomes the flight plus what the ACK delivers (packet conservation) for
//! one round, then grows towards the model's target again; when a
//! segment sent after the episode began is delivered, the window is
//! restored to at least its value before the episode. An RTO sets the
//! window to one segment, restored the same way.
//!
//! The connection's per-packet reports feed the delivery-rate samples
//! ([`sampler`]); the whole model update runs per delivered segment (an
//! ACK that covers several segments updates it once per segment, each
//! with the ACK's RTT).

mod sampler;
#[cfg(test)]
mod tests;

use super::{Ack, CongestionEvent, Controller, PacketAcked, PacketLost, PacketSent};
use crate::rtt::RttEstimator;
use sampler::{RateSample, Sampler};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Startup's gains: `2/ln 2`, the smallest gain that doubles the delivery
/// rate every round.
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
/// Drain's pacing gain: `ln 2/2`, the inverse of Startup's.
pub const DRAIN_GAIN: f64 = std::f64::consts::LN_2 / 2.0;
/// ProbeBW's pacing-gain cycle.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// ProbeBW's cwnd gain.
const PROBE_BW_CWND_GAIN: f64 = 2.0;
/// `BtlBw` filter window, round trips.
const BTLBW_FILTER_ROUNDS: u64 = 10;
/// `RTprop` filter window.
const RTPROP_FILTER: Duration = Duration::from_secs(10);
/// How long ProbeRTT holds the small window at least.
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// The smallest window, segments (also ProbeRTT's).
const MIN_CWND_SEGMENTS: usize = 4;
/// Startup ends after this many rounds of less than 25 % growth.
const FULL_BW_ROUNDS: u32 = 3;
/// Growth that counts as growth in Startup.
const FULL_BW_THRESHOLD: f64 = 1.25;
/// ACK-aggregation estimate: each of its two windows lasts this many
/// rounds (Linux's `bbr_extra_acked_win_rtts`).
const EXTRA_ACKED_WIN_ROUNDS: u32 = 5;
/// The aggregation epoch restarts after this many segments
/// (`bbr_ack_epoch_acked_reset_thresh`).
const ACK_EPOCH_RESET_SEGMENTS: u64 = 1 << 20;
/// The aggregation allowance is at most this much of `BtlBw`
/// (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);

/// BBR's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrState {
    /// Exponential search for the bottleneck rate.
    Startup,
    /// Emptying the queue Startup built.
    Drain,
    /// Steady state: cycling the pacing gain around the estimate.
    ProbeBw,
    /// A small window for a fresh `RTprop`.
    ProbeRtt,
}

/// BBR parameters.
#[derive(Debug, Clone, Copy)]
pub struct BbrConfig {
    /// Sender MSS in bytes.
    pub mss: usize,
    /// Initial window in bytes.
    pub initial_window: usize,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            mss: 1460,
            initial_window: 14_600,
        }
    }
}

/// The BBR v1 controller (see the module docs).
#[derive(Debug, Clone)]
pub struct Bbr {
    cfg: BbrConfig,
    mss: usize,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: usize,
    /// Pacing rate in sequence bytes per second (`None` until the first
    /// RTT estimate).
    pacing_rate: Option<f64>,
    /// Wire bytes per sequence byte of the last transmission (the pacer
    /// charges wire bytes).
    wire_ratio: f64,
    sampler: Sampler,
    // Rounds.
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    /// `BtlBw` filter: (round, rate) with decreasing rates, the max first.
    btlbw: VecDeque<(u64, f64)>,
    rtprop: Option<Duration>,
    rtprop_stamp: Option<Instant>,
    rtprop_expired: bool,
    // Startup.
    filled_pipe: bool,
    full_bw: f64,
    full_bw_count: u32,
    // ProbeBW.
    cycle_index: usize,
    cycle_stamp: Option<Instant>,
    rng: u64,
    // ProbeRTT.
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: usize,
    // Loss.
    /// When the current loss episode began.
    recovery_start: Option<Instant>,
    /// Packet conservation until this round.
    conservation_until_round: Option<u64>,
    /// A loss was reported since the last delivery.
    lost_since_ack: bool,
    // ACK aggregation.
    /// Windowed max of the bytes delivered beyond `BtlBw`'s pace, two
    /// windows of [`EXTRA_ACKED_WIN_ROUNDS`].
    extra_acked: [usize; 2],
    extra_acked_idx: usize,
    extra_acked_rounds: u32,
    ack_epoch_start: Option<Instant>,
    ack_epoch_acked: u64,
}

impl Bbr {
    /// A controller in Startup.
    pub fn new(cfg: BbrConfig) -> Self {
        let mss = cfg.mss.max(1);
        Bbr {
            cfg,
            mss,
            state: BbrState::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cwnd: cfg.initial_window.max(mss),
            pacing_rate: None,
            wire_ratio: 1.0,
            sampler: Sampler::default(),
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            btlbw: VecDeque::new(),
            rtprop: None,
            rtprop_stamp: None,
            rtprop_expired: false,
            filled_pipe: false,
            full_bw: 0.0,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_stamp: None,
            rng: 0x2545_F491_4F6C_DD1D,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            recovery_start: None,
            conservation_until_round: None,
            lost_since_ack: false,
            extra_acked: [0; 2],
            extra_acked_idx: 0,
            extra_acked_rounds: 0,
            ack_epoch_start: None,
            ack_epoch_acked: 0,
        }
    }

    /// The current state.
    pub fn state(&self) -> BbrState {
        self.state
    }

    /// The current pacing gain.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// `BtlBw`, sequence bytes per second (0 before the first sample).
    pub fn btlbw(&self) -> f64 {
        self.btlbw.front().map_or(0.0, |&(_, bw)| bw)
    }

    /// `RTprop`, if measured.
    pub fn rtprop(&self) -> Option<Duration> {
        self.rtprop
    }

    /// Round trips counted so far.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    /// Bytes in flight as the per-packet reports tell it.
    pub fn inflight(&self) -> u64 {
        self.sampler.inflight()
    }

    /// `gain · BtlBw · RTprop` plus the quantization budget, bytes
    /// (`bbr_inflight` and `bbr_quantization_budget` of Linux's
    /// `tcp_bbr.c`): three send quanta, rounded up to an even number of
    /// segments, and two segments more in ProbeBW's 1.25 phase; the
    /// initial window before the model has both numbers.
    pub fn inflight_target(&self, gain: f64) -> usize {
        self.target_with(gain, 0)
    }

    /// `gain · BDP + extra` with the quantization budget, bytes.
    fn target_with(&self, gain: f64, extra: usize) -> usize {
        match self.rtprop {
            Some(rtprop) if self.btlbw() > 0.0 => {
                let bdp = self.btlbw() * rtprop.as_secs_f64();
                let bytes = (gain * bdp) as usize + extra;
                let segs = bytes.div_ceil(self.mss) + 3 * self.send_quantum();
                let mut segs = segs + segs % 2;
                if self.state == BbrState::ProbeBw && self.cycle_index == 0 {
                    segs += 2;
                }
                segs * self.mss
            }
            _ => self.cfg.initial_window.max(self.mss),
        }
    }

    /// The window's allowance for ACK aggregation (Linux's
    /// `bbr_ack_aggregation_cwnd`, v1 since Linux 5.1): the most bytes
    /// delivered beyond `BtlBw`'s pace in one aggregation epoch over the
    /// last 5–10 rounds, at most 100 ms of `BtlBw`; 0 until Startup has
    /// filled the pipe. ACKs that arrive in bursts (delay jitter on the
    /// reverse path, stretch ACKs) would otherwise hold the flight below
    /// what the path carries between them.
    pub fn ack_aggregation_allowance(&self) -> usize {
        if !self.filled_pipe {
            return 0;
        }
        let max = (self.btlbw() * EXTRA_ACKED_MAX.as_secs_f64()) as usize;
        self.extra_acked[0].max(self.extra_acked[1]).min(max)
    }

    /// Segments per send quantum (Linux's `bbr_tso_segs_goal`): what the
    /// pacing rate sends in about a millisecond (rate / 1024), at most
    /// 64 KB, at least two segments (one below 1.2 Mbit/s). The budget of
    /// three quanta keeps the flight above the model's BDP when `RTprop`
    /// is underestimated: under delay jitter in both directions the
    /// minimum RTT is far below the RTT the flight sees, and with a fixed
    /// three-segment allowance the window collapsed to a few segments.
    fn send_quantum(&self) -> usize {
        const MIN_TSO_RATE: f64 = 1_200_000.0 / 8.0;
        const GSO_MAX_BYTES: f64 = 65_536.0 - 1.0 - 320.0;
        let rate = self.pacing_rate.unwrap_or(0.0);
        let floor = if rate < MIN_TSO_RATE { 1 } else { 2 };
        let bytes = (rate / 1024.0).min(GSO_MAX_BYTES);
        ((bytes as usize) / self.mss).clamp(floor, 0x7f)
    }

    /// One BDP (`BtlBw · RTprop`), bytes, if the model has both numbers.
    pub fn bdp(&self) -> Option<usize> {
        let rtprop = self.rtprop?;
        (self.btlbw() > 0.0).then(|| (self.btlbw() * rtprop.as_secs_f64()) as usize)
    }

    fn min_cwnd(&self) -> usize {
        MIN_CWND_SEGMENTS * self.mss
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn init_pacing_rate(&mut self, rtt: &RttEstimator) {
        if self.pacing_rate.is_none()
            && let Some(srtt) = rtt.srtt().filter(|s| !s.is_zero())
        {
            let nominal = self.cfg.initial_window.max(self.mss) as f64 / srtt.as_secs_f64();
            self.pacing_rate = Some(self.pacing_gain * nominal);
        }
    }

    // ---- model ----

    fn update_round(&mut self, rs: &RateSample) {
        self.round_start = false;
        if rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = self.sampler.delivered();
            self.round_count += 1;
            self.round_start = true;
        }
    }

    /// The windowed max filter; like Linux's `minmax`, old maxima only
    /// expire when a sample enters, so a stretch of application-limited
    /// (ignored) samples keeps the estimate.
    fn update_btlbw(&mut self, rs: &RateSample) {
        let Some(rate) = rs.delivery_rate else {
            return;
        };
        // An application-limited sample only counts when it shows more
        // than the model knows.
        if rs.app_limited && rate < self.btlbw() {
            return;
        }
        while self
            .btlbw
            .front()
            .is_some_and(|&(round, _)| round + BTLBW_FILTER_ROUNDS <= self.round_count)
        {
            self.btlbw.pop_front();
        }
        while self.btlbw.back().is_some_and(|&(_, bw)| bw <= rate) {
            self.btlbw.pop_back();
        }
        self.btlbw.push_back((self.round_count, rate));
    }

    fn update_rtprop(&mut self, now: Instant, rs: &RateSample) {
        self.rtprop_expired = self
            .rtprop_stamp
            .is_some_and(|stamp| now > stamp + RTPROP_FILTER);
        if let Some(rtt) = rs.rtt
            && (self.rtprop.is_none_or(|m| rtt <= m) || self.rtprop_expired)
        {
            self.rtprop = Some(rtt);
            self.rtprop_stamp = Some(now);
        }
    }

    /// Linux's `bbr_update_ack_aggregation`, per delivered segment.
    fn update_ack_aggregation(&mut self, now: Instant, rs: &RateSample, acked: usize) {
        if acked == 0 || rs.delivery_rate.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_rounds = (self.extra_acked_rounds + 1).min(31);
            if self.extra_acked_rounds >= EXTRA_ACKED_WIN_ROUNDS {
                self.extra_acked_rounds = 0;
                self.extra_acked_idx ^= 1;
                if let Some(w) = self.extra_acked.get_mut(self.extra_acked_idx) {
                    *w = 0;
                }
            }
        }
        let epoch = self.ack_epoch_start.map_or(0.0, |start| {
            now.saturating_duration_since(start).as_secs_f64()
        });
        let mut expected = self.btlbw() * epoch;
        let reset = ACK_EPOCH_RESET_SEGMENTS * self.mss as u64;
        if self.ack_epoch_acked as f64 <= expected || self.ack_epoch_acked + acked as u64 >= reset {
            self.ack_epoch_acked = 0;
            self.ack_epoch_start = Some(now);
            expected = 0.0;
        }
        self.ack_epoch_acked += acked as u64;
        let extra = ((self.ack_epoch_acked as f64 - expected).max(0.0) as usize).min(self.cwnd);
        if let Some(w) = self.extra_acked.get_mut(self.extra_acked_idx) {
            *w = (*w).max(extra);
        }
    }

    fn check_full_pipe(&mut self, rs: &RateSample) {
        if self.filled_pipe || !self.round_start || rs.app_limited {
            return;
        }
        let bw = self.btlbw();
        if bw >= self.full_bw * FULL_BW_THRESHOLD {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        self.state = BbrState::ProbeBw;
        self.cwnd_gain = PROBE_BW_CWND_GAIN;
        // Any phase but the 0.75 one (index 1), drawn uniformly.
        let draw = (self.next_random() % 7) as usize;
        self.cycle_index = if draw == 0 { 0 } else { draw + 1 };
        self.pacing_gain = PACING_GAIN_CYCLE
            .get(self.cycle_index)
            .copied()
            .unwrap_or(1.0);
        self.cycle_stamp = Some(now);
    }

    fn check_drain(&mut self, now: Instant) {
        if self.state == BbrState::Startup && self.filled_pipe {
            self.state = BbrState::Drain;
            self.pacing_gain = DRAIN_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.state == BbrState::Drain
            && self.sampler.inflight() <= self.inflight_target(1.0) as u64
        {
            self.enter_probe_bw(now);
        }
    }

    fn check_cycle_phase(&mut self, now: Instant, prior_inflight: u64) {
        if self.state != BbrState::ProbeBw {
            return;
        }
        let full_length = match (self.cycle_stamp, self.rtprop) {
            (Some(stamp), Some(rtprop)) => now.saturating_duration_since(stamp) > rtprop,
            _ => false,
        };
        let next = if self.pacing_gain > 1.0 {
            full_length
                && (self.lost_since_ack
                    || prior_inflight >= self.inflight_target(self.pacing_gain) as u64)
        } else if self.pacing_gain < 1.0 {
            full_length || prior_inflight <= self.inflight_target(1.0) as u64
        } else {
            full_length
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
            self.pacing_gain = PACING_GAIN_CYCLE
                .get(self.cycle_index)
                .copied()
                .unwrap_or(1.0);
            self.cycle_stamp = Some(now);
        }
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.recovery_start.is_none() && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn check_probe_rtt(&mut self, now: Instant) {
        if self.state != BbrState::ProbeRtt && self.rtprop_expired {
            self.state = BbrState::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.save_cwnd();
            self.probe_rtt_done = None;
        }
        if self.state != BbrState::ProbeRtt {
            return;
        }
        match self.probe_rtt_done {
            None => {
                if self.sampler.inflight() <= self.min_cwnd() as u64 {
                    self.probe_rtt_done = Some(now + PROBE_RTT_DURATION);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = self.sampler.delivered();
                }
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.rtprop_stamp = Some(now);
                    self.rtprop_expired = false;
                    self.restore_cwnd();
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.state = BbrState::Startup;
                        self.pacing_gain = HIGH_GAIN;
                        self.cwnd_gain = HIGH_GAIN;
                    }
                }
            }
        }
    }

    // ---- control ----

    fn set_pacing_rate(&mut self) {
        let bw = self.btlbw();
        if bw <= 0.0 {
            return;
        }
        let rate = self.pacing_gain * bw;
        if self.filled_pipe || self.pacing_rate.is_none_or(|r| rate > r) {
            self.pacing_rate = Some(rate);
        }
    }

    fn set_cwnd(&mut self, acked: usize) {
        let inflight = self.sampler.inflight() as usize;
        let conserving = self
            .conservation_until_round
            .is_some_and(|r| self.round_count < r);
        if conserving {
            self.cwnd = self.cwnd.max(inflight + acked);
        } else {
            self.conservation_until_round = None;
            let target = self.target_with(self.cwnd_gain, self.ack_aggregation_allowance());
            if self.filled_pipe {
                self.cwnd = (self.cwnd + acked).min(target);
            } else if self.cwnd < target
                || self.sampler.delivered() < self.cfg.initial_window as u64
            {
                self.cwnd += acked;
            }
        }
        self.cwnd = self.cwnd.max(self.min_cwnd());
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_cwnd());
        }
    }
}

impl Controller for Bbr {
    fn on_ack(&mut self, ack: Ack<'_>) {
        // The per-segment reports did the work; the ACK says whether the
        // application limited the sender.
        if ack.app_limited {
            self.sampler.on_app_limited();
        }
        self.init_pacing_rate(ack.rtt);
    }

    fn on_congestion_event(&mut self, event: CongestionEvent) {
        if self.recovery_start.is_some_and(|start| event.sent <= start) {
            return;
        }
        self.save_cwnd();
        self.recovery_start = Some(event.now);
        self.lost_since_ack = true;
        if event.is_rto {
            self.cwnd = self.mss;
            self.conservation_until_round = None;
        } else {
            self.cwnd = (self.sampler.inflight() as usize)
                .min(event.bytes_in_flight)
                .max(self.mss);
            self.conservation_until_round = Some(self.round_count + 1);
        }
    }

    fn window(&self) -> usize {
        self.cwnd
    }

    fn ssthresh(&self) -> usize {
        if self.filled_pipe {
            self.inflight_target(self.cwnd_gain)
        } else {
            usize::MAX
        }
    }

    fn in_slow_start(&self) -> bool {
        self.state == BbrState::Startup
    }

    fn set_window(&mut self, _now: Instant, window: usize, _ssthresh: usize) {
        self.cwnd = window.max(self.mss);
    }

    fn set_mss(&mut self, mss: usize) {
        self.mss = mss.max(1);
    }

    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<f64> {
        self.pacing_rate.map(|r| r * self.wire_ratio)
    }

    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_packet_sent(&mut self, sent: PacketSent<'_>) {
        if sent.bytes > 0 {
            self.wire_ratio = (sent.wire_bytes as f64 / sent.bytes as f64).max(1.0);
        }
        self.init_pacing_rate(sent.rtt);
        self.sampler.on_sent(sent.now, sent.bytes);
    }

    fn on_packet_acked(&mut self, acked: PacketAcked) {
        let prior_inflight = self.sampler.inflight();
        let min_rtt = self.rtprop;
        let Some(rs) = self
            .sampler
            .on_acked(acked.now, acked.sent, acked.rtt_sample, min_rtt)
        else {
            return;
        };
        let now = acked.now;
        if self.recovery_start.is_some_and(|start| acked.sent > start) {
            // A segment sent after the loss episode began got through.
            self.recovery_start = None;
            self.conservation_until_round = None;
            self.restore_cwnd();
        }
        self.update_round(&rs);
        self.update_btlbw(&rs);
        self.update_ack_aggregation(now, &rs, acked.bytes);
        self.check_cycle_phase(now, prior_inflight);
        self.check_full_pipe(&rs);
        self.check_drain(now);
        self.update_rtprop(now, &rs);
        self.check_probe_rtt(now);
        self.set_pacing_rate();
        self.set_cwnd(acked.bytes);
        self.lost_since_ack = false;
    }

    fn on_packet_lost(&mut self, lost: PacketLost) {
        self.sampler.on_lost(lost.sent);
        self.lost_since_ack = true;
    }

    fn rate_based(&self) -> bool {
        true
    }

    fn set_seed(&mut self, seed: u64) {
        self.rng = seed;
    }
}

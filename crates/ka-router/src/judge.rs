//! Judging flows by behaviour: which arrivals do not follow the signal,
//! and the round-trip time the traffic (not the indicators) sees
//! (DESIGN §3.6.1, §3.6.2).
//!
//! A [`FlowJudge`] is a fixed table of [`JUDGE_SLOTS`] slots picked by a
//! keyed hash of the flow's 5-tuple (keys drawn from the port's seed, so
//! the simulator repeats exactly). It is allocated once when the port is
//! built; nothing is allocated per flow or per packet. A slot holds byte
//! counters, not the flow's key: two flows that share a slot are judged
//! as one flow with their bytes added.
//!
//! # Foreign by behaviour
//!
//! Time is cut into windows of `W = d/2` (at least 1 ms, at most 500 ms;
//! d is the port's RTT estimate). A slot counts the bytes of the current
//! and the previous window and the bytes since its flow's last RTT
//! indicator. A flow is judged foreign — and stays so for two more
//! windows (about one d) after it last gave reason — when
//!
//! * **DF**: it sent an IPv4 packet with DF that is no RTT indicator (a KA
//!   endpoint never sets DF on data; the hint the detector used alone
//!   before, kept as a hint and folded into the flow's verdict);
//! * **rate** (KA mode only): its bytes in the current window exceed
//!   `1.5 · R_ref · W` plus 4 full packets, where `R_ref` is the largest R
//!   over the longest RTT among the flows plus d (at least three windows,
//!   at most 32): a KA flow learns R one of its RTTs late, so a falling R
//!   must not make it foreign. The longest RTT is the highest indicator
//!   code carrying at least 1 % of the bytes (the top of its range). A
//!   paced KA flow sends at most `R_ref · W` plus its 3 ms of pacing
//!   credit per window; a flow at 2 R
//!   crosses the bound within `W · 1.5/2 + slack/(2R)`, i.e. within one d
//!   of sending at that rate. In TCP mode no rate is signalled, so no rate
//!   is judged there;
//! * **silence** (TCP only): more than `R_ref · 250 ms` plus 16 full
//!   packets since its last RTT indicator. KA endpoints send one every
//!   100 ms while they have data (in their TCP mode too; DESIGN §2.2,
//!   §6.3), so this lets 2.5 indicator intervals pass at the rate the port
//!   told. A legacy TCP flow never sends one. UDP sources under LCCP
//!   (DESIGN §6.6) follow R without indicators, so UDP is judged by its
//!   rate alone.
//!
//! Verdicts only count while some active flow has sent an RTT indicator:
//! they exist to protect KA flows, and without any the port behaves as it
//! did on the hint alone.
//!
//! **Collisions only add caution.** A slot shared by two flows carries
//! their summed bytes: it crosses the rate bound sooner, and a legacy flow
//! keeps the silence verdict unless its partner's indicators reset it — a
//! KA flow's indicators can hide a legacy partner from the silence test,
//! but not from the rate test, which the pair's sum crosses earlier than
//! either flow alone. The only thing a collision lowers is the count of
//! active flows, which raises the fair-share floor (`C / n`) by a factor
//! `n / (n − merged)`; with 1024 slots and 32 active flows, about half a
//! slot merges on average.
//!
//! # The RTT the traffic sees
//!
//! Each slot also keeps the code `k` of its flow's last RTT indicator. Every
//! arriving packet of a slot with a code adds its bytes to bin `k` of a
//! 12-bin histogram, which decays with a time constant of 250 ms. The
//! port's d is the **interquartile mean** of that byte-weighted
//! distribution (the mean of the middle half of the bytes). A forger's
//! indicators weigh what its packets weigh: one that carries less than a
//! quarter of the bytes cannot move d at all, whatever codes it sends,
//! and one between a quarter and a half can only move it within the
//! range of the real flows' codes and its own, weighted by its excess over
//! a quarter. With one RTT among all flows d is exactly that RTT's
//! indicator value, as the per-sample average gave in steady state.
//! A forger that spoofs a real flow's 5-tuple takes over that flow's
//! code between its indicators; that is an on-path attacker, which can
//! also drop the flow's packets.
//!
//! # Memory
//!
//! `JUDGE_SLOTS · size_of::<Slot>()` = 1024 · 24 bytes = 24 KiB per KA port
//! (a test pins it), plus 32 R values and 12 histogram bins (352 bytes),
//! fixed at construction, whatever the traffic.

use ka_codec::wire::FlowKey;

use crate::flowhash::FlowHasher;

/// IP protocol number of TCP.
const PROTO_TCP: u8 = 6;

/// Slots of a [`FlowJudge`] (a power of two).
pub const JUDGE_SLOTS: usize = 1024;

/// A code that no indicator carries: the slot's flow has not announced
/// its RTT.
const NO_K: u8 = u8::MAX;

/// Windows of R history: how far back (in W = d/2) a flow may still be
/// following an old R, at most (16 d).
const R_RING: usize = 32;

/// Number of indicator codes (k = 0..=11, DESIGN §2.2).
const CODES: usize = 12;

/// The rate bound's factor over `R_ref · W`.
const RATE_FACTOR: f64 = 1.5;

/// Bytes a window may carry beyond the rate bound (4 full packets: pacing
/// credit, dithering, a retransmission).
const RATE_SLACK: f64 = 6000.0;

/// How much time at R may pass between a KA flow's indicators (2.5 times
/// the endpoints' 100 ms interval), ms.
const SILENCE_MS: f64 = 250.0;

/// Bytes a flow may send without any indicator beyond `R · SILENCE_MS` (16
/// full packets: an initial window before the first signal, DESIGN §6.3).
const SILENCE_SLACK: f64 = 24_000.0;

/// Windows a verdict outlasts its last reason (W = d/2: about one d).
const HOLD_WINDOWS: u32 = 2;

/// A slot idle this many windows is forgotten (its code too).
const IDLE_WINDOWS: u32 = 8;

/// Time constant of the RTT histogram's decay, ns.
const RTT_TAU_NS: f64 = 250e6;

/// Bounds of the window length W, ns.
const MIN_WINDOW_NS: u64 = 1_000_000;
const MAX_WINDOW_NS: u64 = 500_000_000;

/// One slot: 24 bytes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The window `cur` belongs to (0: never used).
    epoch: u32,
    /// Bytes in window `epoch`.
    cur: u32,
    /// Bytes in window `epoch − 1`.
    prev: u32,
    /// Bytes since the flow's last RTT indicator (saturating).
    quiet: u32,
    /// Foreign up to and including this window (0: never).
    foreign_until: u32,
    /// The code of the flow's last indicator, or [`NO_K`].
    k: u8,
}

const EMPTY: Slot = Slot {
    epoch: 0,
    cur: 0,
    prev: 0,
    quiet: 0,
    foreign_until: 0,
    k: NO_K,
};

/// What the port tells the judge about one arriving packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    /// Its 5-tuple (`None`: no upper layer reached, e.g. a trailing
    /// fragment; then only the DF hint judges it).
    pub key: Option<FlowKey>,
    /// IP bytes.
    pub bytes: usize,
    /// The code of the RTT indicator it is, if it is one.
    pub indicator: Option<u8>,
    /// IPv4 with DF, not an indicator (or another sign that no KA endpoint
    /// sent it: non-IP, IPv6 when the port does not signal IPv6).
    pub hinted: bool,
    /// The port is in KA mode (a rate is signalled).
    pub signalling: bool,
    /// R now, bytes/ms.
    pub rate: f64,
}

/// The behaviour table of one KA port (see the module docs).
pub(crate) struct FlowJudge {
    slots: Box<[Slot]>,
    mask: usize,
    hasher: FlowHasher,
    /// The current window and when it ends (ns).
    epoch: u32,
    epoch_end: u64,
    window_ns: u64,
    /// The largest R of each of the last [`R_RING`] windows
    /// (`r_max[epoch % R_RING]`).
    r_max: [f64; R_RING],
    /// How many windows back the flows may still follow an old R (at least
    /// 3, see [`FlowJudge::on_interval`]).
    lag_windows: usize,
    /// The largest R of the last `lag_windows` windows.
    r_ref: f64,
    /// Slots that saw bytes in the current and in the previous window.
    active: u32,
    active_prev: u32,
    /// Of those, slots whose flow has sent an RTT indicator (KA flows).
    ka_active: u32,
    ka_active_prev: u32,
    /// Byte-weighted histogram of indicator codes.
    rtt_hist: [f64; CODES],
    /// Whether to judge by behaviour (rate, silence) at all.
    behaviour: bool,
}

impl std::fmt::Debug for FlowJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the hash keys.
        f.debug_struct("FlowJudge")
            .field("slots", &self.slots.len())
            .field("epoch", &self.epoch)
            .field("window_ns", &self.window_ns)
            .finish_non_exhaustive()
    }
}

/// The RTT in ms a router takes for indicator code `k` (DESIGN §2.2).
fn code_ms(k: usize) -> f64 {
    let k = u8::try_from(k).unwrap_or(u8::MAX);
    ka_codec::rtt::rtt_for_k(k).as_secs_f64() * 1e3
}

impl FlowJudge {
    /// A table keyed by `seed`; `behaviour` false judges by the DF hint
    /// only (the RTT histogram runs either way). `rtt_ns` is the initial d.
    pub(crate) fn new(seed: u64, behaviour: bool, rtt_ns: u64) -> Self {
        // A domain tag so the keys differ from the port's other hashes.
        let hasher = FlowHasher::new(seed, 0x4A55_4447_4546_4C57); // "JUDGEFLW"
        let window_ns = (rtt_ns / 2).clamp(MIN_WINDOW_NS, MAX_WINDOW_NS);
        Self {
            slots: vec![EMPTY; JUDGE_SLOTS].into_boxed_slice(),
            mask: JUDGE_SLOTS - 1,
            hasher,
            epoch: 1,
            epoch_end: window_ns,
            window_ns,
            r_max: [0.0; R_RING],
            lag_windows: 3,
            r_ref: 0.0,
            active: 0,
            active_prev: 0,
            ka_active: 0,
            ka_active_prev: 0,
            rtt_hist: [0.0; CODES],
            behaviour,
        }
    }

    /// Bytes the slots take, fixed at construction.
    #[cfg(test)]
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    #[inline]
    fn index(&self, key: &FlowKey) -> usize {
        (self.hasher.hash(key) as usize) & self.mask
    }

    /// Moves the window forward to the one holding `t`.
    #[inline]
    fn advance(&mut self, t: u64, rate: f64) {
        if t < self.epoch_end {
            return;
        }
        let n = (t - self.epoch_end) / self.window_ns + 1;
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        for i in 0..n.min(R_RING as u64) {
            let e = u64::from(self.epoch).wrapping_add(i + 1);
            if let Some(r) = self.r_max.get_mut((e % R_RING as u64) as usize) {
                *r = rate;
            }
        }
        self.active_prev = if n == 1 { self.active } else { 0 };
        self.active = 0;
        self.ka_active_prev = if n == 1 { self.ka_active } else { 0 };
        self.ka_active = 0;
        // Epochs start at 1 and grow by one per window: at W ≥ 1 ms they
        // wrap after 49 days; saturate instead (verdicts then stop expiring,
        // which only adds caution).
        self.epoch = self.epoch.saturating_add(n32);
        self.epoch_end = self
            .epoch_end
            .saturating_add(n.saturating_mul(self.window_ns));
        self.r_ref = self.ring_max();
    }

    /// The largest R of the last `lag_windows` windows (the current one
    /// included).
    fn ring_max(&self) -> f64 {
        let e = self.epoch as usize;
        (0..self.lag_windows.min(R_RING))
            .filter_map(|i| self.r_max.get(e.wrapping_sub(i) % R_RING))
            .fold(0.0, |a, &b| a.max(b))
    }

    /// A packet arrives at `t`: updates its flow's slot and the RTT
    /// histogram; returns whether its bytes count as foreign.
    #[inline]
    pub(crate) fn on_arrival(&mut self, t: u64, a: &Arrival) -> bool {
        self.advance(t, a.rate);
        let e = self.epoch as usize % R_RING;
        if let Some(r) = self.r_max.get_mut(e)
            && a.rate > *r
        {
            *r = a.rate;
        }
        self.r_ref = self.r_ref.max(a.rate);
        let Some(key) = a.key.as_ref() else {
            return a.hinted;
        };
        let epoch = self.epoch;
        let r_ref = self.r_ref;
        let window_ms = self.window_ns as f64 / 1e6;
        let i = self.index(key);
        let Some(s) = self.slots.get_mut(i) else {
            return a.hinted;
        };
        let gap = epoch.wrapping_sub(s.epoch);
        if gap > 0 {
            if s.epoch == 0 || gap >= IDLE_WINDOWS {
                *s = EMPTY;
            } else if gap == 1 {
                s.prev = s.cur;
                s.cur = 0;
            } else {
                s.prev = 0;
                s.cur = 0;
            }
            s.epoch = epoch;
            self.active = self.active.saturating_add(1);
            if s.k != NO_K || a.indicator.is_some() {
                self.ka_active = self.ka_active.saturating_add(1);
            }
        }
        let bytes = u32::try_from(a.bytes).unwrap_or(u32::MAX);
        s.cur = s.cur.saturating_add(bytes);
        if let Some(k) = a.indicator {
            s.k = k;
            s.quiet = 0;
        } else {
            s.quiet = s.quiet.saturating_add(bytes);
        }
        if let Some(w) = self.rtt_hist.get_mut(usize::from(s.k)) {
            *w += a.bytes as f64;
        }
        let mut guilty = a.hinted;
        if self.behaviour {
            let rate_bound = RATE_FACTOR * r_ref * window_ms + RATE_SLACK;
            let silence_bound = r_ref * SILENCE_MS + SILENCE_SLACK;
            guilty |= a.signalling && f64::from(s.cur) > rate_bound;
            // Only TCP sends indicators (UDP sources under LCCP follow R
            // without them, DESIGN §6.6); UDP is judged by its rate.
            guilty |= key.proto == PROTO_TCP && f64::from(s.quiet) > silence_bound;
        }
        if guilty {
            s.foreign_until = epoch.saturating_add(HOLD_WINDOWS);
        }
        // Verdicts protect KA flows: with none active (no slot has sent an
        // indicator) only the hint counts, as before the judge existed.
        a.hinted || (s.foreign_until >= epoch && self.any_ka())
    }

    /// Flows active (with bytes) in the current or the previous window,
    /// at least 1.
    pub(crate) fn active_flows(&self) -> u32 {
        self.active.max(self.active_prev).max(1)
    }

    /// Whether any of them has sent an RTT indicator (a floor for the KA
    /// flows' share is moot without KA flows).
    pub(crate) fn any_ka(&self) -> bool {
        self.ka_active.max(self.ka_active_prev) > 0
    }

    /// A control interval of `interval_ns` ended at `t`; `rtt_ns` is d.
    /// Decays the RTT histogram, sets the next windows' length, and returns
    /// the byte-weighted RTT (ms; `None` while no bytes carry a code).
    pub(crate) fn on_interval(
        &mut self,
        t: u64,
        interval_ns: u64,
        rtt_ns: u64,
        rate: f64,
    ) -> Option<f64> {
        self.advance(t, rate);
        self.window_ns = (rtt_ns / 2).clamp(MIN_WINDOW_NS, MAX_WINDOW_NS);
        let decay = (-(interval_ns as f64) / RTT_TAU_NS).exp();
        for w in &mut self.rtt_hist {
            *w *= decay;
        }
        // A flow follows R one of its own RTTs late, and flows' RTTs may
        // be far above d: look back over the longest RTT that carries at
        // least 1 % of the bytes (the top of its code's range) plus d, in
        // windows, at least 3 and at most `R_RING`.
        let total: f64 = self.rtt_hist.iter().sum();
        let longest = self
            .rtt_hist
            .iter()
            .enumerate()
            .rev()
            .find(|&(_, &w)| w > 0.01 * total)
            .map_or(0.0, |(k, _)| code_ms(k) * 4.0 / 3.0);
        let span_ns = longest * 1e6 + rtt_ns as f64;
        let windows = (span_ns / self.window_ns as f64).ceil() as usize + 1;
        self.lag_windows = windows.clamp(3, R_RING);
        self.r_ref = self.ring_max();
        interquartile_mean(&self.rtt_hist)
    }
}

/// The mean RTT (ms) of the middle half of the weight of `hist` (bin k
/// holds the weight of code k); `None` without weight.
fn interquartile_mean(hist: &[f64; CODES]) -> Option<f64> {
    let total: f64 = hist.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return None;
    }
    let (lo, hi) = (0.25 * total, 0.75 * total);
    let mut cum = 0.0;
    let mut sum = 0.0;
    for (k, &w) in hist.iter().enumerate() {
        let a = cum;
        cum += w;
        let overlap = cum.min(hi) - a.max(lo);
        if overlap > 0.0 {
            sum += overlap * code_ms(k);
        }
    }
    Some(sum / (hi - lo))
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;

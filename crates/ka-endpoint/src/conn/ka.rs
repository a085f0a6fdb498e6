//! The Kick-Ass parts of a connection (DESIGN §5.2, §5.3; paper §II-C).
//!
//! Receiver: every leading fragment that belonged to this connection bumps a
//! wrapping counter and records `code = L/8`; every ACK then carries
//! KA-Rate(code, count).
//!
//! Sender mode machine:
//!
//! * Start in TCP mode (slow start). The first fresh KA-Rate echo (a count
//!   not seen before) → KA mode.
//! * KA mode: pace at R (inter-departure = IP bytes / R), window
//!   `max(gain · R · srtt, 2·MSS)` so the window never limits the paced rate.
//! * KA → TCP on a loss event (fast retransmit or RTO): the TCP-mode
//!   controller is set to the KA window and then reacts as it would to any
//!   loss. "Left by loss".
//! * KA → TCP when no fresh signal for more than `silence_srtts · srtt`
//!   (at least three packet times at R, see `ka_silence_deadline`):
//!   `cwnd = flight, ssthresh = cwnd`. "Left by silence".
//! * TCP → KA: left by silence (or never in KA yet): at the next fresh
//!   signal; left by loss: at a fresh signal once `cwnd / srtt ≥ R`.
//!   A loss while already in TCP mode also counts as "left by loss".
//! * RTT indicators: at most every `indicator_interval` while there is data
//!   to send, the next new-data segment is sized so that its IP total length
//!   is `600 + k(srtt)`, and sent with DF.

use super::{Connection, Event};
use ka_codec::options::KaRate;
use ka_codec::scale::Code;
use std::time::{Duration, Instant};

/// Sender mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Window-based TCP (NewReno/CUBIC).
    #[default]
    Tcp,
    /// Paced at the router-signalled rate.
    Ka,
}

/// Why the sender last left KA mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeftBy {
    /// A loss event (duplicate ACKs, SACK or RTO).
    Loss,
    /// No fresh signal for more than an srtt.
    Silence,
}

/// What triggered a mode change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModeReason {
    /// A fresh signal arrived (first signal, or after silence).
    Signal,
    /// After a loss, the TCP window reached the signalled rate
    /// (`cwnd / srtt ≥ R`).
    Recovered,
    /// Fast retransmit (3 duplicate ACKs or SACK loss detection).
    Loss,
    /// Retransmission timeout.
    Timeout,
    /// No fresh signal for more than an srtt.
    Silence,
}

/// A mode change, with the sender state at that moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModeChange {
    /// When it happened.
    pub at: Instant,
    /// Previous mode.
    pub from: Mode,
    /// New mode.
    pub to: Mode,
    /// Why.
    pub reason: ModeReason,
    /// The effective window just before the change (bytes): the KA window
    /// when leaving KA mode (by loss: before the loss reaction), the
    /// TCP-mode controller's window when entering it.
    pub cwnd: usize,
    /// Smoothed RTT at the change.
    pub srtt: Option<Duration>,
    /// Last signalled rate R (bytes per millisecond).
    pub rate: Option<f64>,
}

#[derive(Debug)]
pub(super) struct KaState {
    /// KA offered by our config (before negotiation: governs DF and options).
    pub offered: bool,
    /// Negotiated.
    pub enabled: bool,
    // receiver side
    pub rx_code: Option<Code>,
    pub rx_count: u8,
    /// The count carried by our last ACK.
    pub echoed_count: Option<u8>,
    // sender side
    pub mode: Mode,
    pub left_by: Option<LeftBy>,
    pub last_count: Option<u8>,
    pub rate: Option<f64>,
    pub last_fresh: Option<Instant>,
    pub next_indicator: Option<Instant>,
    pub mode_since: Instant,
    pub ka_time: Duration,
    pub mode_changes: u64,
}

impl KaState {
    pub fn new(offered: bool, now: Instant) -> Self {
        KaState {
            offered,
            enabled: false,
            rx_code: None,
            rx_count: 0,
            echoed_count: None,
            mode: Mode::Tcp,
            left_by: None,
            last_count: None,
            rate: None,
            last_fresh: None,
            next_indicator: None,
            mode_since: now,
            ka_time: Duration::ZERO,
            mode_changes: 0,
        }
    }

    pub fn time_in_ka(&self, now: Instant) -> Duration {
        if self.mode == Mode::Ka {
            self.ka_time + now.saturating_duration_since(self.mode_since)
        } else {
            self.ka_time
        }
    }

    pub fn close(&mut self, now: Instant) {
        if self.mode == Mode::Ka {
            self.ka_time += now.saturating_duration_since(self.mode_since);
            self.mode = Mode::Tcp;
            self.mode_since = now;
        }
    }

    /// Whether a signal arrived that no ACK has carried yet.
    pub fn echo_pending(&self) -> bool {
        self.enabled && self.rx_code.is_some() && self.echoed_count != Some(self.rx_count)
    }

    /// The KA-Rate option for outgoing ACKs, once a signal has arrived.
    pub fn echo(&self) -> Option<KaRate> {
        if !self.enabled {
            return None;
        }
        Some(KaRate::new(self.rx_code?, self.rx_count))
    }
}

impl Connection {
    /// Records a leading IP fragment of `len` payload bytes that belonged to
    /// this connection (called by the stack before reassembly). Lengths that
    /// are not a valid code of the configured scale are ignored.
    pub fn on_leading_fragment(&mut self, now: Instant, len: usize) {
        self.touch(now);
        if !self.ka.enabled {
            return;
        }
        let Some(code) = self.cfg.ka.scale.code_from_len(len) else {
            return;
        };
        self.ka.rx_code = Some(code);
        self.ka.rx_count = self.ka.rx_count.wrapping_add(1);
        self.stats.ka_fragments_seen += 1;
    }

    /// Window in KA mode: `max(gain · R · srtt, 2·MSS) + extra·MSS`.
    ///
    /// The `extra` segments (default 3) cover ACK granularity: the receiver
    /// acknowledges every second segment, so a segment's ACK can be held
    /// back for one packet time `I = packet/R`, and the flight just before
    /// an ACK returns is `R·(srtt + I)` plus the segment about to go. At a
    /// few packets per RTT that is 2–3 segments more than `R·srtt`, more
    /// than the 20 % headroom of the DESIGN formula; at high rates the extra
    /// segments are negligible.
    pub(super) fn ka_window(&self) -> usize {
        let mss2 = 2 * self.snd_mss;
        let extra = self.cfg.ka.cwnd_extra_segments * self.snd_mss;
        let Some(rate) = self.ka.rate else {
            return mss2 + extra;
        };
        let srtt = self.rtt.srtt_or_initial().as_secs_f64();
        let w = self.cfg.ka.cwnd_gain * rate * 1000.0 * srtt;
        let base = if w.is_finite() && w > mss2 as f64 {
            w.min(usize::MAX as f64 / 4.0) as usize
        } else {
            mss2
        };
        base.saturating_add(extra)
    }

    /// Whether a KA-mode send blocked by the window counts as "window
    /// limited": not during the first srtt after entering KA mode, when
    /// the flight left over from slow start is still draining.
    pub(super) fn ka_window_limit_counts(&self, now: Instant) -> bool {
        self.ka.mode == Mode::Ka
            && now.saturating_duration_since(self.ka.mode_since) >= self.rtt.srtt_or_initial()
    }

    /// Pacing rate in bytes per second, if pacing applies now.
    pub(super) fn pacing_rate(&self) -> Option<f64> {
        match self.ka.mode {
            Mode::Ka => self.ka.rate.map(|r| r * 1000.0),
            Mode::Tcp if self.cfg.tcp_pacing => self.cc.pacing_rate(&self.rtt),
            Mode::Tcp => None,
        }
    }

    fn change_mode(&mut self, now: Instant, to: Mode, reason: ModeReason) {
        let from = self.ka.mode;
        if from == to {
            return;
        }
        let change = super::ModeChange {
            at: now,
            from,
            to,
            reason,
            cwnd: self.cwnd(),
            srtt: self.rtt.srtt(),
            rate: self.ka.rate,
        };
        if from == Mode::Ka {
            self.ka.ka_time += now.saturating_duration_since(self.ka.mode_since);
        }
        self.ka.mode = to;
        self.ka.mode_since = now;
        self.ka.mode_changes += 1;
        if to == Mode::Ka {
            self.pacer_next = None;
        }
        self.push_event(Event::ModeChanged(change));
    }

    /// A KA-Rate option arrived on an acceptable ACK.
    pub(super) fn on_ka_echo(&mut self, now: Instant, echo: KaRate) {
        if !self.ka.enabled || self.ka.last_count == Some(echo.count) {
            return;
        }
        let Some(code) = self.cfg.ka.scale.code_from_wire(echo.code) else {
            return;
        };
        let rate = self.cfg.ka.scale.decode(code);
        self.ka.last_count = Some(echo.count);
        self.ka.rate = Some(rate);
        self.ka.last_fresh = Some(now);
        self.stats.ka_signals_fresh += 1;
        if self.ka.mode == Mode::Ka || !self.state.is_synchronized() {
            return;
        }
        match self.ka.left_by {
            None | Some(super::LeftBy::Silence) => {
                self.change_mode(now, Mode::Ka, ModeReason::Signal)
            }
            Some(super::LeftBy::Loss) => {
                let srtt_ms = self.rtt.srtt_or_initial().as_secs_f64() * 1000.0;
                if srtt_ms > 0.0 && self.cc.window() as f64 / srtt_ms >= rate {
                    self.change_mode(now, Mode::Ka, ModeReason::Recovered);
                }
            }
        }
    }

    /// A loss event is about to be handed to the TCP-mode controller. In KA
    /// mode the controller first takes over the KA window so it reacts from
    /// there.
    pub(super) fn ka_on_loss(&mut self, now: Instant, rto: bool) {
        if !self.ka.enabled {
            return;
        }
        if self.ka.mode == Mode::Ka {
            let w = self.ka_window();
            self.cc.set_window(now, w, w);
            let reason = if rto {
                ModeReason::Timeout
            } else {
                ModeReason::Loss
            };
            self.change_mode(now, Mode::Tcp, reason);
        }
        self.ka.left_by = Some(super::LeftBy::Loss);
    }

    /// When KA mode ends for lack of fresh signals: `silence_srtts · srtt`
    /// after the last fresh signal, but never less than three packet times
    /// at R. The packet-time floor matters only at low rates: a receiver
    /// acknowledges every second segment, so echoes come at best every two
    /// packets, and at a few packets per RTT that alone can exceed one
    /// srtt. At the rates the paper considers the floor is far below srtt
    /// (1.2 ms per packet at 10 Mbit/s).
    pub(super) fn ka_silence_deadline(&self) -> Option<Instant> {
        if self.ka.mode != Mode::Ka {
            return None;
        }
        let last = self.ka.last_fresh?;
        let srtt = self.rtt.srtt_or_initial().as_secs_f64() * self.cfg.ka.silence_srtts;
        let pkt = (self.snd_mss + self.ip_header_len + 40) as f64;
        let floor = self
            .ka
            .rate
            .filter(|r| *r > 0.0)
            .map_or(0.0, |r| 3.0 * pkt / (r * 1000.0));
        Some(last + Duration::from_secs_f64(srtt.max(floor).clamp(0.0, 3600.0)))
    }

    /// KA → TCP if the silence deadline has passed.
    pub(super) fn check_ka_silence(&mut self, now: Instant) {
        if self.ka_silence_deadline().is_some_and(|d| now >= d) {
            let flight = (self.pipe() as usize).max(2 * self.snd_mss);
            self.cc.set_window(now, flight, flight);
            self.ka.left_by = Some(super::LeftBy::Silence);
            self.change_mode(now, Mode::Tcp, ModeReason::Silence);
        }
    }

    /// Whether the next new-data segment should be an RTT indicator, and if
    /// so its IP total length.
    pub(super) fn indicator_due(&self, now: Instant) -> Option<usize> {
        if !self.ka.enabled || !self.state.is_synchronized() {
            return None;
        }
        if self.ka.next_indicator.is_some_and(|t| now < t) {
            return None;
        }
        let srtt = self.rtt.srtt_or_initial();
        Some(ka_codec::rtt::indicator_len(srtt))
    }

    /// A wake-up for the next indicator while there is unsent data (only
    /// if it lies after the last time we were called, so a blocked
    /// indicator never turns into a busy loop; ACKs re-poll anyway).
    pub(super) fn indicator_wakeup(&self) -> Option<Instant> {
        if !self.ka.enabled || !self.state.is_synchronized() {
            return None;
        }
        let t = self.ka.next_indicator?;
        (t > self.last_now && self.sndbuf.end_seq() > self.snd_nxt).then_some(t)
    }

    pub(super) fn indicator_sent(&mut self, now: Instant) {
        self.ka.next_indicator = Some(now + self.cfg.ka.indicator_interval);
        self.stats.indicators_sent += 1;
    }
}

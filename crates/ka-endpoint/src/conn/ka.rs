//! The Kick-Ass parts of a connection (DESIGN §6.2, §6.3; paper §II-C).
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
//! * KA → TCP on a loss event (fast retransmit, i.e. a loss RACK confirms,
//!   DESIGN §6.9, or RTO): the TCP-mode
//!   controller is set to the KA window and then reacts as it would to any
//!   loss. "Left by loss". A loss while already in TCP mode also counts as
//!   "left by loss". An ECN echo the sender reacts to (see `conn::ecn`)
//!   counts as a loss here (paper §II-C3).
//! * KA → TCP when no fresh signal for more than `silence_srtts · srtt`
//!   (at least three packet times at R, plus srtt/16 of jitter margin, plus
//!   the last gap between signals while they come once per RTT, see
//!   `conn::sparse`; `ka_silence_deadline`): `cwnd = flight, ssthresh =
//!   cwnd`, then with `KaConfig::silence_backoff` one multiplicative
//!   decrease of the TCP-mode controller (DESIGN §6.3.1). "Left by
//!   silence".
//! * TCP → KA: left by silence (or never in KA yet): at the next fresh
//!   signal; left by loss: at a fresh signal once `cwnd / srtt ≥ R`, or by
//!   the two further ways below.
//! * RTT indicators: at most every `indicator_interval` while there is data
//!   to send, the next new-data segment is sized so that its IP total length
//!   is `600 + k(srtt)`, and sent with DF. They start with the first fresh
//!   signal: an indicator is never fragmented (DF), so one among the first
//!   segments of a connection — with a one-segment initial window, *the*
//!   first segment — would carry no signal and delay KA mode by an RTT (and
//!   a delayed ACK); a path that never signals has no KA router to tell.
//!
//! # Deviation from DESIGN §6.3: coming back after a loss
//!
//! DESIGN (and paper §II-C3) let a flow that left KA mode by loss return only
//! once its TCP rate `cwnd / srtt` reaches the signalled R. While a flow is
//! in TCP mode it ignores R, so a KA router that is *not* the bottleneck
//! (paper Fig. 6/7: congestion at a legacy router) sees spare capacity and
//! its RCP raises R towards C. Once the legacy congestion is over, R is far
//! out of any flow's reach (64 flows, each needing `cwnd/srtt ≥ C`): the
//! flows stay in TCP mode for good, fill the KA router's queue and (with
//! the paper's queue-only rule) lock it in TCP mode too. So a flow that left
//! by loss also returns, at a fresh signal,
//!
//! * when the path is clear: its loss episode is over (no recovery, no RTO
//!   backoff, an RTT sample since the last loss, that loss an srtt ago) and
//!   neither a loss nor an RTT sample above `min_rtt + max(min_rtt/8, 2 ms)`
//!   (a standing queue) during the last `clear_srtts` srtts (default 8: the
//!   congestion that caused the loss has gone; with a legacy bottleneck
//!   still shared with TCP its queue keeps the RTT up, and 8 srtts outlast
//!   the quiet phases of a drop-tail queue whose TCP flows lose packets in
//!   synchrony); or
//! * when its loss episode is over and R is falling (at least 10 % below its
//!   value an srtt ago): the signalling router sees the congestion and acts
//!   on it — typically the flow's own TCP-mode queue at a KA router that is
//!   its bottleneck after all.
//!
//! R may be inflated at that point (it rose while the flow ignored it), so
//! a flow returning either way does not jump to R: it paces at
//! `min(R, cap)`, `cap` = the rate it paced at when it last saw no standing
//! queue in KA mode (else the rate it left KA mode with), and drops the cap
//! as soon as R comes down to it; from then on it follows R again. A capped
//! flow that falls silent keeps its cap when it comes back on the next
//! signal. The cap does not grow: a flow returning into an inflated R at a
//! port that is not its bottleneck keeps the rate that the path carried
//! before, which is right when the same flows are back (paper Fig. 7); if
//! flows have left meanwhile, it under-uses the path until R comes down
//! (other flows following R) or its next loss.
//!
//! A flow in TCP mode whose ACKs, for data sent after the last fresh signal,
//! keep coming back without one for an srtt knows that the routers stopped
//! signalling (a KA router in TCP mode, which freezes R) rather than that
//! its packets were lost. Then "left by loss" becomes "left by silence": R
//! was frozen while the routers were silent, so it is trustworthy again,
//! and the flow comes back at the first fresh signal, uncapped, as the
//! paper describes for Fig. 5.
//!
//! A flow that lost a packet before it was ever in KA mode (typically the
//! one segment of its first flight, before any signal) has no KA rate to
//! cap a return at, and its loss says nothing about R: it never paced at
//! R. It returns at the first fresh signal once its loss episode is over
//! (no recovery or RTO backoff, an RTT sample since the loss, an srtt
//! after it), uncapped. Under the paper's rule alone such a flow stayed in
//! TCP mode for its whole life: after the RTO its ssthresh is two
//! segments, so a 1500-packet flow took 7 s where its peers took 0.3 s
//! (ka-sim `other-5bn`, light load).
//!
//! A return by the paper's rule (`cwnd/srtt ≥ R`), after a silence of the
//! routers or by a flow never in KA mode has no cap.
//!
//! # Native-RCP carrier (baseline, DESIGN §7.1)
//!
//! With [`KaConfig::native_rcp`](crate::KaConfig::native_rcp) the same mode
//! machine runs on a different signal source, so that the only difference
//! to KA is *when* the rate is first known:
//!
//! * Negotiation: the SYN carries RCP-Permitted (`253, 4, 0x4B, 0x52`)
//!   instead of KA-Permitted; a passive side with KA enabled answers it in
//!   kind. Native RCP is on only if both SYN and SYN-ACK carry it.
//! * The active side's SYN and every data segment of a native-RCP
//!   connection carry the IPv4 RCP option (type 30: rate `u32::MAX` bytes/s
//!   = "as much as possible", rtt = srtt in ms, 0 before a sample). Routers
//!   lower the rate to their R on the way.
//! * The receiver echoes the rate of every such packet that a router
//!   lowered (a rate still at `u32::MAX` crossed no RCP router: no signal)
//!   in an RCP-Echo option (`253, 8, 0x4B, 0x52, rate`) on its next ACK —
//!   the SYN-ACK for the SYN's rate. An echo goes on one ACK only, so an
//!   arriving echo is always fresh (the role KA-Rate's count plays).
//! * The sender treats every echo as a fresh signal of R = rate/1000 B/ms:
//!   the SYN-ACK's echo puts it in KA ("explicit-rate") mode before its
//!   first data segment, one RTT before a KA sender's first echo.
//! * No RTT indicators (the option carries the RTT) and no leading-fragment
//!   codes.

use super::ka_undo::KaUndo;
use super::{Connection, Event};
use ka_codec::options::{KaRate, RcpEcho};
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
    /// A loss event (RACK, or duplicate ACKs without SACK; RTO) or an ECN
    /// echo (ECE).
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
    /// (`cwnd / srtt ≥ R`), or the loss episode ended and the path showed
    /// no standing queue for an srtt (then paced at a capped rate; see the
    /// module docs).
    Recovered,
    /// Fast retransmit (RACK loss detection with SACK, DESIGN §6.9; three
    /// duplicate ACKs without).
    Loss,
    /// Retransmission timeout.
    Timeout,
    /// An ECN echo (ECE) the sender reacted to: a router marked CE
    /// (RFC 3168; treated like a loss, paper §II-C3).
    Ecn,
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
    /// Negotiated with the native-RCP carrier instead of KA fragments.
    pub rcp: bool,
    /// Receiver side (native RCP): the rate of the latest RCP option that a
    /// router lowered, and whether no ACK has echoed it yet.
    pub rcp_rx: Option<u32>,
    pub rcp_fresh: bool,
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
    /// The last new-data segment sent was an RTT indicator.
    pub last_was_indicator: bool,
    pub mode_since: Instant,
    pub ka_time: Duration,
    pub mode_changes: u64,
    /// The rate the sender paced at when it last left KA mode (B/ms).
    pub last_ka_rate: Option<f64>,
    /// After a return by "path clear": ceiling on the paced rate (B/ms).
    pub cap: Option<f64>,
    /// The sender was capped when it last left KA mode.
    pub left_capped: bool,
    /// The last loss event (fast retransmit or RTO), in either mode.
    pub last_loss: Option<Instant>,
    /// Send time of the newest segment the last advancing ACK covered.
    pub last_acked_sent: Option<Instant>,
    /// In TCP mode: since when ACKs for data sent after the last fresh
    /// signal have been coming back without one, and whether that has
    /// lasted an srtt (the router stopped signalling: its R is frozen).
    pub unsignalled_since: Option<Instant>,
    pub router_silent: bool,
    /// The paced rate at the last RTT sample in KA mode that showed no
    /// standing queue (the cap after a loss; falls back to `last_ka_rate`).
    pub calm_rate: Option<f64>,
    /// One R sample per srtt: (when, R), and the previous one.
    pub rate_ref: Option<(Instant, f64)>,
    pub rate_srtt_ago: Option<f64>,
    /// The first signal-carrying data segment sent since entering KA mode,
    /// and whether no fresh signal has arrived since that entry (the
    /// silence clock starts at that segment then).
    pub first_send_in_ka: Option<Instant>,
    pub last_fresh_before_entry: bool,
    /// The last RTT sample, and the last one that showed a standing queue.
    pub last_rtt_sample: Option<Instant>,
    pub last_high_rtt: Option<Instant>,
    /// Sparse signals (`conn::sparse`): segments without a fresh signal
    /// since the last fresh one, fresh signals that came sparsely, the
    /// dense ones since the last sparse one, and the longest gap.
    pub stale_acks: u32,
    pub sparse_streak: u8,
    pub dense_run: u8,
    pub signal_gap: Option<Duration>,
    /// What undoes a spurious exit by loss (`conn::ka_undo`).
    pub undo: Option<KaUndo>,
}

impl KaState {
    pub fn new(offered: bool, now: Instant) -> Self {
        KaState {
            offered,
            enabled: false,
            rcp: false,
            rcp_rx: None,
            rcp_fresh: false,
            rx_code: None,
            rx_count: 0,
            echoed_count: None,
            mode: Mode::Tcp,
            left_by: None,
            last_count: None,
            rate: None,
            last_fresh: None,
            next_indicator: None,
            last_was_indicator: false,
            mode_since: now,
            ka_time: Duration::ZERO,
            mode_changes: 0,
            last_ka_rate: None,
            cap: None,
            left_capped: false,
            last_loss: None,
            last_acked_sent: None,
            unsignalled_since: None,
            router_silent: false,
            calm_rate: None,
            rate_ref: None,
            rate_srtt_ago: None,
            first_send_in_ka: None,
            last_fresh_before_entry: false,
            last_rtt_sample: None,
            last_high_rtt: None,
            stale_acks: 0,
            sparse_streak: 0,
            dense_run: 0,
            signal_gap: None,
            undo: None,
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
        if self.rcp {
            return self.enabled && self.rcp_fresh;
        }
        self.enabled && self.rx_code.is_some() && self.echoed_count != Some(self.rx_count)
    }

    /// The KA-Rate option for outgoing ACKs, once a signal has arrived.
    pub fn echo(&self) -> Option<KaRate> {
        if !self.enabled || self.rcp {
            return None;
        }
        Some(KaRate::new(self.rx_code?, self.rx_count))
    }

    /// The RCP-Echo option for the next outgoing ACK (native RCP), if a rate
    /// arrived that no ACK has echoed yet.
    pub fn rcp_echo(&self) -> Option<RcpEcho> {
        if !(self.enabled && self.rcp && self.rcp_fresh) {
            return None;
        }
        self.rcp_rx
            .map(|rate_bytes_per_sec| RcpEcho { rate_bytes_per_sec })
    }
}

impl Connection {
    /// Records a leading IP fragment of `len` payload bytes that belonged to
    /// this connection (called by the stack before reassembly). Lengths that
    /// are not a valid code of the configured scale are ignored.
    pub fn on_leading_fragment(&mut self, now: Instant, len: usize) {
        self.touch(now);
        if !self.ka.enabled || self.ka.rcp {
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
        let Some(rate) = self.ka_effective_rate() else {
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
            Mode::Ka => self.ka_effective_rate().map(|r| r * 1000.0),
            Mode::Tcp if self.cfg.tcp_pacing || self.cc.rate_based() => {
                self.cc.pacing_rate(&self.rtt)
            }
            Mode::Tcp => None,
        }
    }

    pub(super) fn change_mode(&mut self, now: Instant, to: Mode, reason: ModeReason) {
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
            self.ka.last_ka_rate = self.ka_effective_rate();
            self.ka.left_capped = self.ka.cap.is_some();
            self.ka.cap = None;
            self.ka.unsignalled_since = None;
            self.ka.router_silent = false;
        }
        self.ka.mode = to;
        self.ka.mode_since = now;
        self.ka.mode_changes += 1;
        if to == Mode::Ka {
            self.pacer_next = None;
            self.ka.first_send_in_ka = None;
            self.ka.last_fresh_before_entry = true;
        }
        self.push_event(Event::ModeChanged(change));
    }

    /// A KA-Rate option arrived on an acceptable ACK.
    pub(super) fn on_ka_echo(&mut self, now: Instant, echo: KaRate) {
        if !self.ka.enabled || self.ka.rcp || self.ka.last_count == Some(echo.count) {
            return;
        }
        let Some(code) = self.cfg.ka.scale.code_from_wire(echo.code) else {
            return;
        };
        let rate = self.cfg.ka.scale.decode(code);
        self.ka.last_count = Some(echo.count);
        self.on_fresh_rate(now, rate);
    }

    /// The rate KA mode paces at: R, or `min(R, cap)` after a return by
    /// "path clear" until R has come down to the cap.
    pub(super) fn ka_effective_rate(&self) -> Option<f64> {
        let r = self.ka.rate?;
        Some(self.ka.cap.map_or(r, |c| r.min(c)))
    }

    /// Feeds an RTT sample to the estimator and notes whether it showed a
    /// standing queue (above `min_rtt + max(min_rtt/8, 2 ms)`).
    pub(super) fn on_rtt_sample(&mut self, now: Instant, rtt: Duration) {
        self.rtt.on_sample(rtt);
        self.ka.last_rtt_sample = Some(now);
        let min = self.rtt.min_rtt().unwrap_or(rtt);
        let slack = (min / 8).max(Duration::from_millis(2));
        if rtt > min + slack {
            self.ka.last_high_rtt = Some(now);
        } else if self.ka.mode == Mode::Ka {
            self.ka.calm_rate = self.ka_effective_rate();
        }
    }

    /// Keeps one sample of R per srtt, so [`Self::rate_falling`] can
    /// compare R with its value about an srtt ago.
    fn note_rate(&mut self, now: Instant, rate: f64) {
        let srtt = self.rtt.srtt_or_initial();
        match self.ka.rate_ref {
            Some((t, r)) if now.saturating_duration_since(t) < srtt => {
                let _ = r;
            }
            Some((_, r)) => {
                self.ka.rate_srtt_ago = Some(r);
                self.ka.rate_ref = Some((now, rate));
            }
            None => self.ka.rate_ref = Some((now, rate)),
        }
    }

    /// R is at least 10 % below its value about an srtt ago: the signalling
    /// router sees congestion and acts on it.
    fn rate_falling(&self, rate: f64) -> bool {
        self.ka.rate_srtt_ago.is_some_and(|p| rate < 0.9 * p)
    }

    /// The loss episode is over: no recovery or RTO backoff in progress, an
    /// RTT sample since the last loss, and that loss an srtt ago or more.
    fn loss_episode_over(&self, now: Instant) -> bool {
        let srtt = self.rtt.srtt_or_initial();
        self.recovery.is_none()
            && self.rtt.backoff_count() == 0
            && match (self.ka.last_rtt_sample, self.ka.last_loss) {
                (Some(s), Some(l)) => s > l && now.saturating_duration_since(l) >= srtt,
                (s, None) => s.is_some(),
                (None, Some(_)) => false,
            }
    }

    /// The loss episode is over and the path shows no standing queue (the
    /// second way back to KA mode after a loss; see the module docs): no
    /// recovery or RTO backoff in progress, an RTT sample since the last
    /// loss, and neither a loss nor an RTT sample showing a standing queue
    /// during the last `clear_srtts` srtts.
    fn path_clear(&self, now: Instant) -> bool {
        let srtt = self.rtt.srtt_or_initial().as_secs_f64();
        let need = Duration::from_secs_f64((srtt * self.cfg.ka.clear_srtts).clamp(0.0, 3600.0));
        let loss_over = self.loss_episode_over(now);
        let last_bad = match (self.ka.last_high_rtt, self.ka.last_loss) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let quiet = last_bad.is_none_or(|t| now.saturating_duration_since(t) >= need);
        loss_over && quiet
    }

    /// Drops the cap once R has come down to it.
    fn update_cap(&mut self, rate: f64) {
        if self.ka.cap.is_some_and(|cap| rate <= cap) {
            self.ka.cap = None;
        }
    }

    /// A fresh signal of `rate` B/ms, from either carrier: the mode machine.
    /// An acceptable ACK brought no fresh signal. In TCP mode, if that has
    /// gone on for an srtt for data sent after the last fresh signal, the
    /// routers stopped signalling (rather than our packets being lost: those
    /// ACKs do arrive), so R is frozen and can be trusted again.
    pub(super) fn ka_on_unsignalled_ack(&mut self, now: Instant) {
        self.ka_note_stale();
        if !self.ka.enabled || self.ka.mode != Mode::Tcp || self.ka.router_silent {
            return;
        }
        let after_fresh = match (self.ka.last_acked_sent, self.ka.last_fresh) {
            (Some(sent), Some(fresh)) => sent > fresh,
            _ => false,
        };
        if !after_fresh {
            return;
        }
        let since = *self.ka.unsignalled_since.get_or_insert(now);
        let wait = self.rtt.srtt_or_initial() + self.ka_sparse_allowance().unwrap_or_default();
        if now.saturating_duration_since(since) >= wait {
            self.ka.router_silent = true;
        }
    }

    pub(super) fn on_fresh_rate(&mut self, now: Instant, rate: f64) {
        self.ka_note_fresh_spacing(now);
        self.ka.rate = Some(rate);
        self.ka.last_fresh = Some(now);
        self.ka.unsignalled_since = None;
        if self.ka.first_send_in_ka.is_some_and(|t| t < now) {
            self.ka.last_fresh_before_entry = false;
        }
        self.stats.ka_signals_fresh += 1;
        self.note_rate(now, rate);
        self.update_cap(rate);
        if self.ka.mode == Mode::Ka || !self.state.is_synchronized() {
            return;
        }
        // Losses while the routers were silent (in TCP mode) do not make R
        // suspect: it was frozen meanwhile (paper Fig. 5).
        if self.ka.router_silent && self.ka.left_by == Some(super::LeftBy::Loss) {
            self.ka.left_by = Some(super::LeftBy::Silence);
        }
        match self.ka.left_by {
            None | Some(super::LeftBy::Silence) => {
                // a capped flow stays capped across a silence of its own
                // (losses), not across the routers' silence
                let keep = self.ka.left_capped && !self.ka.router_silent;
                self.ka.cap = self.ka.last_ka_rate.filter(|&c| keep && c < rate);
                self.change_mode(now, Mode::Ka, ModeReason::Signal)
            }
            Some(super::LeftBy::Loss) => {
                let srtt_ms = self.rtt.srtt_or_initial().as_secs_f64() * 1000.0;
                if srtt_ms <= 0.0 {
                    return;
                }
                let tcp_rate = self.cc.window() as f64 / srtt_ms;
                let before = self.ka.calm_rate.or(self.ka.last_ka_rate);
                if tcp_rate >= rate || (before.is_none() && self.loss_episode_over(now)) {
                    // never in KA mode yet: the loss was the flow's own
                    // start in TCP mode, not a sign that R is too high
                    self.ka.cap = None;
                    self.change_mode(now, Mode::Ka, ModeReason::Recovered);
                } else if let Some(before) = before
                    && (self.path_clear(now)
                        || (self.loss_episode_over(now) && self.rate_falling(rate)))
                {
                    self.ka.cap = (before < rate).then_some(before);
                    self.change_mode(now, Mode::Ka, ModeReason::Recovered);
                }
            }
        }
    }

    /// A loss event is about to be handed to the TCP-mode controller. In KA
    /// mode the controller first takes over the KA window so it reacts from
    /// there.
    pub(super) fn ka_on_loss(&mut self, now: Instant, rto: bool) {
        let reason = if rto {
            ModeReason::Timeout
        } else {
            ModeReason::Loss
        };
        self.ka_on_congestion(now, reason);
    }

    /// A congestion signal (`reason`: loss, timeout or ECN echo) is about to
    /// be handed to the TCP-mode controller: each leaves KA mode the same
    /// way, as "left by loss".
    pub(super) fn ka_on_congestion(&mut self, now: Instant, reason: ModeReason) {
        if !self.ka.enabled {
            return;
        }
        if !self.cfg.ka.loss_leaves_ka && reason != ModeReason::Timeout {
            // The signalling router owns congestion control beyond it
            // (`KaConfig::loss_leaves_ka`): stay at its rate.
            return;
        }
        self.ka.last_loss = Some(now);
        // A further congestion signal cancels a pending undo, except a
        // further fast-retransmit loss with SACK: the undo then waits
        // until every byte retransmitted since the KA exit is DSACKed,
        // which a real loss never is (a second reordering right after the
        // first used to cancel it and keep the flow in TCP mode for a
        // second and more on the reordering testbed).
        let keep = reason == ModeReason::Loss && self.sack_ok && self.ka.mode == Mode::Tcp;
        if !keep {
            self.ka.undo = None;
        }
        if self.ka.mode == Mode::Ka {
            if reason == ModeReason::Loss && self.sack_ok {
                self.ka.undo = Some(KaUndo {
                    mark: self.dsack_mark(),
                    cap: self.ka.cap,
                });
            }
            let w = self.ka_window();
            self.cc.set_window(now, w, w);
            self.change_mode(now, Mode::Tcp, reason);
        }
        self.ka.left_by = Some(super::LeftBy::Loss);
    }

    /// When KA mode ends for lack of fresh signals: `silence_srtts · srtt`
    /// after the last fresh signal, but never less than three packet times
    /// at R, plus a margin of srtt/16 for the jitter between the RTT of
    /// the small packets srtt may come from and that of full-sized data.
    /// The packet-time floor matters only at low rates: a receiver
    /// acknowledges every second segment, so echoes come at best every two
    /// packets, and at a few packets per RTT that alone can exceed one
    /// srtt. At the rates the paper considers the floor is far below srtt
    /// (1.2 ms per packet at 10 Mbit/s).
    ///
    /// Right after entering KA mode the clock starts at the first data
    /// segment that can carry a signal (not an RTT indicator), not at the
    /// signal that switched: with a one-segment initial window nothing is
    /// in flight at that moment, so the next echo is a full RTT away.
    pub(super) fn ka_silence_deadline(&self) -> Option<Instant> {
        if self.ka.mode != Mode::Ka {
            return None;
        }
        let last = self.ka.last_fresh?;
        let since = if self.ka.last_fresh_before_entry {
            self.ka.first_send_in_ka?.max(last)
        } else {
            last
        };
        let srtt = self.rtt.srtt_or_initial().as_secs_f64();
        let pkt = (self.snd_mss + self.ip_header_len + 40) as f64;
        let floor = self
            .ka_effective_rate()
            .filter(|r| *r > 0.0)
            .map_or(0.0, |r| 3.0 * pkt / (r * 1000.0));
        let wait = (srtt * self.cfg.ka.silence_srtts)
            .max(floor)
            .max(self.cfg.ka.silence_floor.as_secs_f64())
            + srtt / 16.0;
        // Signals that come once per RTT (`conn::sparse`): one more gap.
        let wait = match self.ka_sparse_allowance() {
            Some(a) => wait + a.as_secs_f64(),
            None => wait,
        };
        Some(since + Duration::from_secs_f64(wait.clamp(0.0, 3600.0)))
    }

    /// A data segment went out (`indicator`: an RTT indicator, which no
    /// router stamps).
    pub(super) fn ka_on_data_sent(&mut self, now: Instant, indicator: bool) {
        self.ka.last_was_indicator = indicator;
        if self.ka.mode == Mode::Ka && !indicator && self.ka.first_send_in_ka.is_none() {
            self.ka.first_send_in_ka = Some(now);
        }
    }

    /// KA → TCP if the silence deadline has passed.
    pub(super) fn check_ka_silence(&mut self, now: Instant) {
        if self.ka_silence_deadline().is_some_and(|d| now >= d) {
            let flight = (self.pipe() as usize).max(2 * self.snd_mss);
            self.cc.set_window(now, flight, flight);
            if self.cfg.ka.silence_backoff {
                // the router fell silent at a standing queue: one
                // multiplicative decrease, and the controller starts from
                // the reduced window as its own (CUBIC: W_max there, not
                // at the flight the router's rate gave; DESIGN §6.3.1)
                self.cc.on_congestion_event(crate::cc::CongestionEvent {
                    now,
                    sent: now,
                    is_rto: false,
                    bytes_in_flight: flight,
                });
                let (w, ssthresh) = (self.cc.window(), self.cc.ssthresh());
                self.cc.set_window(now, w, ssthresh);
            }
            self.ka.left_by = Some(super::LeftBy::Silence);
            self.change_mode(now, Mode::Tcp, ModeReason::Silence);
        }
    }

    /// Whether this connection sends RTT indicators now: KA (not native
    /// RCP), synchronised, and a fresh signal has arrived at some point.
    fn indicators_on(&self) -> bool {
        self.ka.enabled
            && !self.ka.rcp
            && self.state.is_synchronized()
            && self.ka.last_fresh.is_some()
    }

    /// Whether the next new-data segment should be an RTT indicator, and if
    /// so its IP total length.
    ///
    /// Never two in a row: an indicator (DF) carries no signal, and it may
    /// go out between pacing slots (charged to the pacer), so at a rate R
    /// below the indicators' own (one ~600-byte packet per 100 ms, 48
    /// kbit/s) back-to-back indicators would keep the pacer in debt for
    /// good: no segment that a router can stamp would leave, R would never
    /// be updated, and — since the silence clock starts at the first such
    /// segment — KA mode would never end either. So at such rates (KA mode,
    /// R under twice the indicators' rate) the next new-data segment after
    /// an indicator is an ordinary one.
    pub(super) fn indicator_due(&self, now: Instant) -> Option<usize> {
        if !self.indicators_on() || (self.ka.last_was_indicator && self.below_indicator_rate()) {
            return None;
        }
        if self.ka.next_indicator.is_some_and(|t| now < t) {
            return None;
        }
        let srtt = self.rtt.srtt_or_initial();
        Some(ka_codec::rtt::indicator_len(srtt))
    }

    /// Whether the sender paces in KA mode at a rate R below twice the
    /// indicators' own (the largest indicator, 611 bytes, per
    /// `indicator_interval`): only there can back-to-back indicators starve
    /// the stampable segments (see [`Connection::indicator_due`]). Above it
    /// indicators keep their rhythm unchanged (in TCP mode too), so the
    /// paper's scenarios, whose flows run far above 48 kbit/s, are not
    /// affected (fig5's TCP epochs did change when the rule applied to
    /// every rate).
    fn below_indicator_rate(&self) -> bool {
        let interval_ms = self.cfg.ka.indicator_interval.as_secs_f64() * 1e3;
        let indicator_rate = 611.0 / interval_ms.max(1e-3);
        self.ka.mode == Mode::Ka && self.ka.rate.is_some_and(|r| r < 2.0 * indicator_rate)
    }

    /// A wake-up for the next indicator while there is unsent data (only
    /// if it lies after the last time we were called, so a blocked
    /// indicator never turns into a busy loop; ACKs re-poll anyway).
    pub(super) fn indicator_wakeup(&self) -> Option<Instant> {
        if !self.indicators_on() {
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

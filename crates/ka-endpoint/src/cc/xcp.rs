//! The XCP sender's window (DESIGN §7.2; seed `xcp-vs-rcp.txt` §2.2 and
//! §4.2; Katabi, Handley, Rohrs, SIGCOMM 2002, §3.2; Falk, Pryadkin,
//! Katabi, draft-falk-xcp-spec-03, July 2007).
//!
//! XCP routers tell each sender, per packet, by how many bytes to change its
//! congestion window; the receiver echoes that feedback and the sender
//! applies it. This controller owns the sender's half; the connection puts
//! its [`FeedbackRequest`] into the IPv4 XCP option of every data segment
//! and hands every echo to [`Controller::on_feedback`].
//!
//! # The request (`H_feedback` as sent)
//!
//! The sender asks for the window change that would take it to the window
//! it wants within one RTT, spread over the packets of one window (the
//! XCP paper §3.2: "the desired increase in the congestion window
//! (r·rtt − cwnd) divided by the number of packets in the current
//! congestion window"; the 2007 draft's `Delta_Throughput` is the same rule
//! in rate units, seed §2.2: `(desired_rate − actual_rate)/packets_per_rtt`):
//!
//! ```text
//! H_feedback = (W_desired − cwnd) / max(cwnd / MSS, 1)
//! ```
//!
//! `W_desired` comes from the connection: the largest window the peer ever
//! offered (a window-based sender cannot use more), capped by the send
//! buffer and, if configured, by a desired rate times srtt
//! ([`XcpConfig::desired_rate`](crate::config::XcpConfig::desired_rate)).
//! Every router lowers the request to its own allocation, so the sender asks
//! for all it could use and the path decides. Before the first RTT sample
//! the request is 0 (and `H_rtt` is 0, which routers leave out of their
//! averages): a sender that does not know its RTT cannot say what rate a
//! window means.
//!
//! # Applying feedback
//!
//! * **Window-based** ([`XcpVariant::Window`], the draft's sender): per
//!   echo, `cwnd ← max(cwnd + feedback, MSS)` at once. No slow start, no
//!   additive increase: without feedback the window does not move.
//! * **Rate-based** ([`XcpVariant::Rate`], seed §4.2): the sender paces at
//!   `cwnd / srtt`, and each echo's feedback is spread linearly over the
//!   next srtt (a ramp of slope `feedback / srtt`), so the rate changes
//!   smoothly instead of in one step. The window that limits the flight is
//!   `cwnd + 2·MSS`, so ACK granularity (a delayed ACK holds up to two
//!   segments) never lets the window, rather than the pacer, set the rate.
//!   At most [`Xcp::MAX_RAMPS`] (4096) ramps run at once (one per ACK, so about a
//!   window's worth of ACKs); beyond that a feedback is applied at once.
//!   Ramps advance whenever the connection reports an ACK or feedback.
//! * **Purely rate-based** ([`XcpVariant::PureRate`]): the same ramps, but
//!   paced at `cwnd / min RTT`, and the flight may reach `2·cwnd + 2·MSS`.
//!   Dividing by srtt (DESIGN §7.2's rate-based sender) makes a growing
//!   queue slow the sender down by itself — a delay-based brake on top of
//!   XCP's loop, which the seed's rate-based sender, whose state is the
//!   inter-packet time (seed §3.1, §4.2), does not have. Without that brake
//!   the longer control loop (feedback spread over an RTT) oscillates as
//!   the seed's Fig. 6 shows; `ka-sim paper xcp-fig6` runs both.
//!
//! # Losses
//!
//! A loss gets NewReno's reaction (DESIGN §7.2, seed §4.2: "XCP falls back
//! to TCP congestion control when losses occur"): `ssthresh =
//! max(FlightSize/2, 2·MSS)`, `cwnd = ssthresh` after a fast retransmit,
//! one MSS after an RTO, once per loss episode; the connection runs the
//! RFC 6582 recovery. Pending ramps are dropped (they were granted to the
//! larger window). During recovery, positive feedback for segments sent
//! before the episode began is ignored (it was computed for the window
//! that just failed, as NewReno ignores their ACKs for growth); negative
//! feedback always applies. After the loss the window follows the routers'
//! feedback again, from the reduced window.

use super::window;
use super::{Ack, CongestionEvent, Controller, Feedback, FeedbackRequest};
use crate::rtt::RttEstimator;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Which XCP sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum XcpVariant {
    /// Window-based: each echoed feedback changes the window at once.
    #[default]
    Window,
    /// Rate-based (seed §4.2): paced at `cwnd/srtt`, each feedback spread
    /// over an srtt.
    Rate,
    /// Purely rate-based: as [`XcpVariant::Rate`] but paced at
    /// `cwnd / min RTT`, so the sending rate moves only with feedback and
    /// not when queueing lengthens the RTT (see the module docs).
    PureRate,
}

/// One rate-based feedback being applied: `slope` bytes per second until
/// `end`.
#[derive(Debug, Clone, Copy)]
struct Ramp {
    end: Instant,
    slope: f64,
}

/// The XCP sender window.
#[derive(Debug, Clone)]
pub struct Xcp {
    variant: XcpVariant,
    mss: usize,
    /// Congestion window, bytes (fractional: rate-based ramps add slices).
    cwnd: f64,
    ssthresh: usize,
    recovery_start: Option<Instant>,
    /// Rate-based: running ramps (sorted by `end`), the sum of their
    /// slopes, and how far they have been applied.
    ramps: VecDeque<Ramp>,
    slope: f64,
    applied_to: Option<Instant>,
}

impl Xcp {
    /// At most this many rate-based feedback ramps run at once (a cap on
    /// what a peer's echoes can make us store: 16 bytes each).
    pub const MAX_RAMPS: usize = 4096;

    /// A controller with the given initial window (bytes).
    pub fn new(variant: XcpVariant, mss: usize, initial_window: usize) -> Self {
        let mss = mss.max(1);
        Xcp {
            variant,
            mss,
            cwnd: initial_window.max(mss) as f64,
            ssthresh: usize::MAX,
            recovery_start: None,
            ramps: VecDeque::new(),
            slope: 0.0,
            applied_to: None,
        }
    }

    /// Which sender this is.
    pub fn variant(&self) -> XcpVariant {
        self.variant
    }

    /// The congestion window of the XCP header (`H_cwnd`), bytes: the rate
    /// window, without the rate-based variant's slack.
    pub fn cwnd(&self) -> usize {
        // rounded: a ramp's slices add up to its feedback only within
        // floating-point error
        self.cwnd.round() as usize
    }

    /// Feedback ramps running (rate-based).
    pub fn ramps(&self) -> usize {
        self.ramps.len()
    }

    fn set_cwnd(&mut self, bytes: f64) {
        self.cwnd = bytes.clamp(self.mss as f64, f64::from(u32::MAX));
    }

    /// Applies the running ramps up to `now`.
    fn advance(&mut self, now: Instant) {
        let Some(mut at) = self.applied_to else {
            self.applied_to = Some(now);
            return;
        };
        if now <= at {
            return;
        }
        while let Some(r) = self.ramps.front().copied() {
            if r.end > now {
                break;
            }
            if r.end > at {
                self.set_cwnd(self.cwnd + self.slope * (r.end - at).as_secs_f64());
                at = r.end;
            }
            self.slope -= r.slope;
            self.ramps.pop_front();
        }
        if self.ramps.is_empty() {
            self.slope = 0.0;
        }
        self.set_cwnd(self.cwnd + self.slope * (now - at).as_secs_f64());
        self.applied_to = Some(now);
    }

    fn clear_ramps(&mut self) {
        self.ramps.clear();
        self.slope = 0.0;
    }
}

impl Controller for Xcp {
    fn on_ack(&mut self, ack: Ack<'_>) {
        // The window moves by feedback only; ACKs just advance the ramps.
        self.advance(ack.now);
    }

    fn on_feedback(&mut self, feedback: Feedback<'_>) {
        let Feedback {
            now,
            sent,
            bytes,
            rtt,
        } = feedback;
        self.advance(now);
        if bytes > 0 && window::in_recovery(self.recovery_start, sent) {
            return;
        }
        let fb = bytes as f64;
        let srtt = rtt.srtt().filter(|d| !d.is_zero());
        match (self.variant, srtt) {
            (XcpVariant::Rate | XcpVariant::PureRate, Some(d))
                if self.ramps.len() < Self::MAX_RAMPS =>
            {
                let end = now + d;
                let ramp = Ramp {
                    end,
                    slope: fb / d.as_secs_f64(),
                };
                // srtt moves slowly, so the new ramp nearly always ends last.
                let pos = self
                    .ramps
                    .iter()
                    .rposition(|r| r.end <= end)
                    .map_or(0, |i| i + 1);
                self.ramps.insert(pos, ramp);
                self.slope += ramp.slope;
            }
            _ => self.set_cwnd(self.cwnd + fb),
        }
    }

    fn on_congestion_event(&mut self, event: CongestionEvent) {
        self.advance(event.now);
        if !window::begin_episode(&mut self.recovery_start, event) {
            return;
        }
        let (cwnd, ssthresh) =
            window::after_loss(event.bytes_in_flight / 2, self.mss, event.is_rto);
        self.ssthresh = ssthresh;
        self.set_cwnd(cwnd as f64);
        self.clear_ramps();
    }

    fn window(&self) -> usize {
        match self.variant {
            XcpVariant::Window => self.cwnd(),
            XcpVariant::Rate => self.cwnd() + 2 * self.mss,
            // The flight at cwnd / min RTT is cwnd · srtt / min RTT: room
            // for a queue of one base RTT before the window binds.
            XcpVariant::PureRate => 2 * self.cwnd() + 2 * self.mss,
        }
    }

    fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    /// XCP has no slow start: the routers set the pace of growth.
    fn in_slow_start(&self) -> bool {
        false
    }

    fn set_window(&mut self, now: Instant, window: usize, ssthresh: usize) {
        self.advance(now);
        let (w, s) = window::floored(window, ssthresh, self.mss);
        self.ssthresh = s;
        self.set_cwnd(w as f64);
        self.clear_ramps();
    }

    fn set_mss(&mut self, mss: usize) {
        self.mss = mss.max(1);
        self.set_cwnd(self.cwnd);
    }

    /// Rate-based: exactly `cwnd / srtt` (seed §4.2). Window-based: the
    /// default (used only with TCP-mode pacing switched on).
    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<f64> {
        let base = match self.variant {
            XcpVariant::PureRate => rtt.min_rtt().or(rtt.srtt())?,
            _ => rtt.srtt()?,
        }
        .as_secs_f64();
        if base <= 0.0 {
            return None;
        }
        let gain = match self.variant {
            XcpVariant::Window => 1.2,
            XcpVariant::Rate | XcpVariant::PureRate => 1.0,
        };
        Some(gain * self.cwnd / base)
    }

    fn rate_based(&self) -> bool {
        matches!(self.variant, XcpVariant::Rate | XcpVariant::PureRate)
    }

    fn feedback_request(
        &self,
        rtt: &RttEstimator,
        desired_window: usize,
    ) -> Option<FeedbackRequest> {
        let cwnd = self.cwnd();
        let feedback = match rtt.srtt() {
            Some(d) if d > Duration::ZERO => {
                let packets = (self.cwnd / self.mss as f64).max(1.0);
                let want = (desired_window as f64 - self.cwnd) / packets;
                want.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
            }
            _ => 0,
        };
        Some(FeedbackRequest {
            cwnd: u32::try_from(cwnd).unwrap_or(u32::MAX),
            feedback,
        })
    }

    fn name(&self) -> &'static str {
        match self.variant {
            XcpVariant::Window => "xcp",
            XcpVariant::Rate => "xcp-rate",
            XcpVariant::PureRate => "xcp-rate-pure",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::events::tests::{ack, feedback, loss, rto};
    use crate::cc::window::tests::rtt;

    const MSS: usize = 1000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn window_follows_feedback_and_never_drops_below_one_mss() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = Xcp::new(XcpVariant::Window, MSS, 10 * MSS);
        // ACKs alone do nothing
        c.on_ack(ack(t0, t0, 5 * MSS, &r));
        assert_eq!(c.window(), 10 * MSS);
        c.on_feedback(feedback(t0, t0, 2500, &r));
        assert_eq!(c.window(), 12_500);
        c.on_feedback(feedback(t0, t0, -1_000_000, &r));
        assert_eq!(c.window(), MSS, "floored at one MSS");
        c.on_feedback(feedback(t0, t0, i64::from(i32::MAX) * 4, &r));
        assert_eq!(c.window(), u32::MAX as usize, "H_cwnd must fit");
        assert!(!c.in_slow_start());
    }

    #[test]
    fn request_reaches_the_desired_window_in_one_window_of_packets() {
        let r = rtt(100);
        let c = Xcp::new(XcpVariant::Window, MSS, 10 * MSS);
        let req = c.feedback_request(&r, 30 * MSS).unwrap();
        assert_eq!(req.cwnd, 10 * MSS as u32);
        // 20 000 bytes more, over 10 packets
        assert_eq!(req.feedback, 2 * MSS as i32);
        // asking for less than it has: negative
        assert_eq!(c.feedback_request(&r, 5 * MSS).unwrap().feedback, -500);
        // no RTT yet: no request
        let none = RttEstimator::new(ms(1000), ms(200), ms(60_000), ms(1));
        assert_eq!(c.feedback_request(&none, 30 * MSS).unwrap().feedback, 0);
        // huge wishes saturate instead of wrapping
        let tiny = Xcp::new(XcpVariant::Window, 1, 1);
        assert_eq!(
            tiny.feedback_request(&r, usize::MAX).unwrap().feedback,
            i32::MAX
        );
    }

    #[test]
    fn loss_takes_the_newreno_path() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = Xcp::new(XcpVariant::Window, MSS, 10 * MSS);
        c.on_feedback(feedback(t0, t0, 30_000, &r));
        assert_eq!(c.window(), 40 * MSS);
        let t1 = t0 + ms(50);
        c.on_congestion_event(loss(t1, t0, 40 * MSS));
        assert_eq!((c.window(), c.ssthresh()), (20 * MSS, 20 * MSS));
        // same episode: no second halving; old positive feedback ignored,
        // negative feedback applied
        c.on_congestion_event(loss(t1 + ms(1), t0, 30 * MSS));
        assert_eq!(c.window(), 20 * MSS);
        c.on_feedback(feedback(t1 + ms(2), t0, 5000, &r));
        assert_eq!(c.window(), 20 * MSS);
        c.on_feedback(feedback(t1 + ms(2), t0, -1000, &r));
        assert_eq!(c.window(), 19 * MSS);
        // segments sent after the episode began count again
        c.on_feedback(feedback(t1 + ms(3), t1 + ms(1), 1000, &r));
        assert_eq!(c.window(), 20 * MSS);
        // RTO: one segment
        c.on_congestion_event(rto(t1 + ms(400), t1, 20 * MSS));
        assert_eq!((c.window(), c.ssthresh()), (MSS, 10 * MSS));
    }

    #[test]
    fn rate_variant_spreads_feedback_over_an_srtt() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = Xcp::new(XcpVariant::Rate, MSS, 10 * MSS);
        assert!(c.rate_based());
        c.on_ack(ack(t0, t0, 0, &r));
        c.on_feedback(feedback(t0, t0, 10_000, &r));
        assert_eq!(c.cwnd(), 10 * MSS, "nothing applied yet");
        assert_eq!(c.window(), 12 * MSS, "two segments of slack");
        c.on_ack(ack(t0 + ms(50), t0, MSS, &r));
        assert_eq!(c.cwnd(), 15 * MSS, "half after half an srtt");
        // a second, negative ramp from 50 ms on
        c.on_feedback(feedback(t0 + ms(50), t0, -4000, &r));
        c.on_ack(ack(t0 + ms(100), t0, MSS, &r));
        assert_eq!(c.cwnd(), 18 * MSS, "first done, second half way");
        c.on_ack(ack(t0 + ms(400), t0, MSS, &r));
        assert_eq!(c.cwnd(), 16 * MSS);
        assert_eq!(c.ramps(), 0);
        // pacing at exactly cwnd/srtt: 16 000 B / 0.1 s
        let p = c.pacing_rate(&r).unwrap();
        assert!((p - 160_000.0).abs() < 1e-6, "{p}");
        // a loss drops pending ramps
        c.on_feedback(feedback(t0 + ms(400), t0 + ms(300), 50_000, &r));
        c.on_congestion_event(loss(t0 + ms(410), t0 + ms(300), 16 * MSS));
        c.on_ack(ack(t0 + ms(900), t0 + ms(800), MSS, &r));
        assert_eq!(c.cwnd(), 8 * MSS);
        assert_eq!(c.ramps(), 0);
    }

    #[test]
    fn pure_rate_variant_paces_at_the_window_over_the_min_rtt() {
        let t0 = Instant::now();
        let mut r = rtt(100);
        // A queue builds: samples grow, the minimum stays at 100 ms.
        for _ in 0..50 {
            r.on_sample(ms(200));
        }
        assert!(r.srtt().unwrap() > ms(190));
        let mut c = Xcp::new(XcpVariant::PureRate, MSS, 10 * MSS);
        assert!(c.rate_based());
        assert_eq!(c.name(), "xcp-rate-pure");
        // 10 000 B over the 100 ms minimum, not over srtt (which would
        // halve it): the queue does not slow the sender.
        let p = c.pacing_rate(&r).unwrap();
        assert!((p - 100_000.0).abs() < 1e-6, "{p}");
        let srtt_paced = Xcp::new(XcpVariant::Rate, MSS, 10 * MSS)
            .pacing_rate(&r)
            .unwrap();
        assert!(srtt_paced < 0.55 * p, "{srtt_paced}");
        // Room for a base RTT of queue before the window binds.
        assert_eq!(c.window(), 22 * MSS);
        // Feedback still ramps over srtt.
        c.on_ack(ack(t0, t0, 0, &r));
        c.on_feedback(feedback(t0, t0, 10_000, &r));
        assert_eq!(c.cwnd(), 10 * MSS);
        c.on_ack(ack(t0 + r.srtt().unwrap(), t0, MSS, &r));
        assert_eq!(c.cwnd(), 20 * MSS);
    }

    #[test]
    fn rate_variant_caps_its_ramps() {
        let t0 = Instant::now();
        let r = rtt(100);
        let mut c = Xcp::new(XcpVariant::Rate, MSS, 10 * MSS);
        for _ in 0..Xcp::MAX_RAMPS {
            c.on_feedback(feedback(t0, t0, 1, &r));
        }
        assert_eq!(c.ramps(), Xcp::MAX_RAMPS);
        c.on_feedback(feedback(t0, t0, 5000, &r));
        assert_eq!(c.ramps(), Xcp::MAX_RAMPS);
        assert_eq!(c.cwnd(), 15 * MSS, "applied at once beyond the cap");
    }
}

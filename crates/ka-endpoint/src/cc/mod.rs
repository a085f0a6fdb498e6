//! Congestion control for TCP mode (DESIGN §6.1).
//!
//! [`Controller`] is shaped like quinn-proto's controller: the connection
//! reports acknowledged bytes and congestion events, and asks for the
//! congestion window and (optionally) a pacing rate. The algorithms:
//! [`NewReno`] (RFC 5681 / RFC 6582 window arithmetic with byte
//! counting), [`Cubic`] (RFC 9438 including the Reno-friendly region and
//! fast convergence), [`Pcc`] (PCC Vivace, a rate-based controller; see
//! its module docs), [`Bbr`] (BBR v1, model-based and paced; DESIGN
//! §6.4.1) and the XCP senders.
//!
//! Division of labour with the connection:
//!
//! * The connection detects losses (3 duplicate ACKs / SACK scoreboard / RTO)
//!   and calls [`Controller::on_congestion_event`] **once per loss episode**.
//!   It also runs the RFC 6582 recovery procedure (partial ACKs, the
//!   "inflation" of the usable window by duplicate ACKs).
//! * The controller ignores window growth from ACKs of segments sent before
//!   the last congestion event (`sent <= recovery_start`), so the window stays
//!   at `ssthresh` during recovery, as RFC 6582 prescribes after deflation.
//! * The KA mode machine takes the window over while in KA mode and hands it
//!   back with [`Controller::set_window`].
//! * Explicit window feedback (XCP, DESIGN §7.2): a controller that wants it
//!   answers [`Controller::feedback_request`] (what the connection writes
//!   into the IPv4 XCP option of each data segment) and gets every echo
//!   through [`Controller::on_feedback`]; [`Xcp`] is the one that does. The
//!   defaults of these methods make NewReno and CUBIC ignore them.
//!
//! Per-packet reports (for rate-based controllers such as [`Pcc`]; the
//! window controllers ignore them through the default methods): the
//! connection calls [`Controller::on_packet_sent`] for every data segment
//! it transmits (new data and retransmissions), and, for every segment
//! transmission whose fate becomes known, either
//! [`Controller::on_packet_acked`] (first cumulative ACK or SACK that covers
//! it) or [`Controller::on_packet_lost`] (each time the scoreboard marks it
//! lost, not once per loss episode). Both name the transmission by its send
//! time. A controller that says [`Controller::rate_based`] is paced at its
//! [`Controller::pacing_rate`] whatever `TcpConfig::tcp_pacing` says.
//!
//! Every report is one small value with named fields ([`Ack`],
//! [`CongestionEvent`], [`Feedback`], [`PacketSent`], [`PacketAcked`],
//! [`PacketLost`]) rather than a list of positional arguments: a call site
//! says what each number is, and a field that a new controller needs
//! (delivery-rate samples for a BBR-style controller, RACK's reordering
//! information) is one more field there, with no change to the signature
//! of every controller.
//!
//! Controllers are configured by prototype: `Box<dyn Controller>` is
//! `Clone` through [`ControllerClone`], which every `Clone` controller has
//! without writing anything.

mod bbr;
mod cubic;
mod events;
mod newreno;
mod pcc;
mod window;
mod xcp;

pub use bbr::{Bbr, BbrConfig, BbrState};
pub use cubic::{Cubic, CubicConfig};
pub use events::{Ack, CongestionEvent, Feedback, PacketAcked, PacketLost, PacketSent};
pub use newreno::{NewReno, NewRenoConfig};
pub use xcp::{Xcp, XcpVariant};

/// What an explicit-feedback controller asks the routers for on one data
/// segment: the XCP header's `H_cwnd` and `H_feedback` (the connection adds
/// `H_rtt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedbackRequest {
    /// The congestion window, bytes.
    pub cwnd: u32,
    /// The window change wanted from this one segment, bytes.
    pub feedback: i32,
}
pub use pcc::{Pcc, PccConfig, PccPhase, VivaceUtility};

use crate::rtt::RttEstimator;
use std::fmt;
use std::time::Instant;

/// A boxed copy of a controller: what makes `Box<dyn Controller>` `Clone`.
/// Every controller that is `Clone` has it through the blanket impl.
pub trait ControllerClone {
    /// A boxed copy (controllers are configured by prototype).
    fn clone_box(&self) -> Box<dyn Controller>;
}

impl<T: Controller + Clone + 'static> ControllerClone for T {
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn Controller> {
    fn clone(&self) -> Self {
        self.as_ref().clone_box()
    }
}

/// A TCP-mode congestion controller. All sizes are bytes.
pub trait Controller: ControllerClone + Send + fmt::Debug {
    /// An ACK newly acknowledged bytes (cumulatively or by SACK); see
    /// [`Ack`]. When the sender was application-limited the window must
    /// not grow.
    fn on_ack(&mut self, ack: Ack<'_>);

    /// A loss was detected, or the retransmission timer fired; see
    /// [`CongestionEvent`]. Events for segments sent before the current
    /// recovery started are ignored; an RTO collapses the window to one
    /// segment (RFC 5681 §3.1) instead of fast recovery (window halves for
    /// NewReno, × β for CUBIC).
    fn on_congestion_event(&mut self, event: CongestionEvent);

    /// The congestion window in bytes.
    fn window(&self) -> usize;

    /// The slow-start threshold in bytes (`usize::MAX` before the first loss).
    fn ssthresh(&self) -> usize;

    /// Whether the controller is in slow start.
    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh()
    }

    /// Overwrites window and threshold (the KA mode machine's handover into
    /// TCP mode, or synchronising the controller to the KA window just before
    /// a loss reaction). Starts a new growth epoch; does not by itself start
    /// a recovery period.
    fn set_window(&mut self, now: Instant, window: usize, ssthresh: usize);

    /// The last loss reaction proved spurious: DSACKs showed every segment
    /// it retransmitted had arrived (RFC 3708; the connection's
    /// `cc_try_undo`). `window` and `ssthresh` are what the controller had
    /// just before the reduction (the threshold as Linux's
    /// `prior_ssthresh`). A window controller goes back to at least them
    /// and ends its recovery period (Linux's `tcp_undo_cwnd_reduction`
    /// with `tcp_reno_undo_cwnd`, which CUBIC uses too). Default: ignored
    /// (model- and rate-based controllers keep their own state).
    fn undo_congestion_event(&mut self, now: Instant, window: usize, ssthresh: usize) {
        let _ = (now, window, ssthresh);
    }

    /// Sets the sender maximum segment size (window arithmetic unit).
    fn set_mss(&mut self, mss: usize);

    /// The rate at which the sender may pace, bytes per second, or `None`
    /// before an RTT estimate exists. Linux's rule: `2·cwnd/srtt` in slow
    /// start, `1.2·cwnd/srtt` otherwise. The connection only uses it when
    /// TCP-mode pacing is enabled.
    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<f64> {
        let srtt = rtt.srtt()?.as_secs_f64();
        if srtt <= 0.0 {
            return None;
        }
        let gain = if self.in_slow_start() { 2.0 } else { 1.2 };
        Some(gain * self.window() as f64 / srtt)
    }

    /// Explicit window feedback (XCP): the `H_cwnd` and `H_feedback` for a
    /// data segment sent now, given the largest window the sender could use
    /// (`desired_window`, bytes). `None` (the default): the controller
    /// takes no explicit feedback.
    fn feedback_request(
        &self,
        _rtt: &RttEstimator,
        _desired_window: usize,
    ) -> Option<FeedbackRequest> {
        None
    }

    /// Explicit window feedback arrived: an XCP-Echo on an ACK; see
    /// [`Feedback`]. Default: ignored.
    fn on_feedback(&mut self, feedback: Feedback<'_>) {
        let _ = feedback;
    }

    /// A short name for logs and statistics ("newreno", "cubic", "pcc",
    /// "bbr").
    fn name(&self) -> &'static str;

    /// A data segment (new data or a retransmission) left; see
    /// [`PacketSent`]. Called before the pacer schedules the next
    /// departure, so a rate changed here applies to it. Default: ignored.
    fn on_packet_sent(&mut self, sent: PacketSent<'_>) {
        let _ = sent;
    }

    /// A segment transmission was delivered: the first ACK or SACK covering
    /// it arrived; see [`PacketAcked`]. Called per segment, before
    /// [`Controller::on_ack`] for the same ACK. Default: ignored.
    fn on_packet_acked(&mut self, acked: PacketAcked) {
        let _ = acked;
    }

    /// A segment transmission was deemed lost (SACK rule, partial ACK, fast
    /// retransmit or RTO): once per segment and transmission, unlike
    /// [`Controller::on_congestion_event`]; see [`PacketLost`]. Default:
    /// ignored.
    fn on_packet_lost(&mut self, lost: PacketLost) {
        let _ = lost;
    }

    /// Whether the controller is rate-based: the connection then paces at
    /// [`Controller::pacing_rate`] in TCP mode even when
    /// `TcpConfig::tcp_pacing` is off, and the window is only a safety
    /// bound. Default: false.
    fn rate_based(&self) -> bool {
        false
    }

    /// Seeds the controller's randomness (the connection derives the seed
    /// from its keyed-hash ISN and timestamp offset, so runs are
    /// reproducible). Default: ignored.
    fn set_seed(&mut self, seed: u64) {
        let _ = seed;
    }
}

/// Which TCP-mode algorithm a connection uses (also `ka-endpoint --cc`,
/// whose values are the kebab-case names: `newreno`, `cubic`, `xcp`,
/// `xcp-rate`, `xcp-rate-pure`, `pcc`, `bbr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum CcAlgorithm {
    /// RFC 5681/6582 NewReno.
    #[default]
    #[cfg_attr(feature = "cli", value(name = "newreno"))]
    NewReno,
    /// RFC 9438 CUBIC.
    Cubic,
    /// XCP, window-based (DESIGN §7.2): the window follows the routers'
    /// per-packet feedback; offered in the SYN, NewReno if the peer does not
    /// take it up.
    Xcp,
    /// XCP, rate-based: paced at cwnd/srtt, each feedback spread over an
    /// RTT; NewReno if the peer does not take it up.
    XcpRate,
    /// XCP, purely rate-based: paced at cwnd / min RTT (the rate moves
    /// only with feedback), each feedback spread over an RTT; NewReno if the
    /// peer does not take it up.
    XcpRatePure,
    /// PCC Vivace (NSDI'18): rate-based, monitor intervals with randomized
    /// rate trials and a latency-aware utility (`Pcc`).
    Pcc,
    /// BBR v1: model-based (bottleneck bandwidth and propagation RTT),
    /// paced, with Startup, Drain, ProbeBW and ProbeRTT states (`Bbr`).
    Bbr,
}

impl CcAlgorithm {
    /// The XCP sender this is, if it is one.
    pub fn xcp_variant(self) -> Option<XcpVariant> {
        match self {
            CcAlgorithm::Xcp => Some(XcpVariant::Window),
            CcAlgorithm::XcpRate => Some(XcpVariant::Rate),
            CcAlgorithm::XcpRatePure => Some(XcpVariant::PureRate),
            CcAlgorithm::NewReno | CcAlgorithm::Cubic | CcAlgorithm::Pcc | CcAlgorithm::Bbr => None,
        }
    }

    /// A fresh controller of this kind for the given MSS and initial window
    /// (bytes).
    pub fn build(self, mss: usize, initial_window: usize) -> Box<dyn Controller> {
        self.build_with(mss, initial_window, true, false)
    }

    /// [`CcAlgorithm::build`] with NewReno's counting rule chosen
    /// (`byte_counting: false` = per-ACK counting, see [`NewReno`]; CUBIC
    /// XCP and PCC ignore it) and CUBIC's slow-start exit
    /// ([`CubicConfig::hystart`]; the others ignore it).
    pub fn build_with(
        self,
        mss: usize,
        initial_window: usize,
        byte_counting: bool,
        hystart: bool,
    ) -> Box<dyn Controller> {
        match self {
            CcAlgorithm::NewReno => Box::new(NewReno::new(NewRenoConfig {
                mss,
                initial_window,
                byte_counting,
            })),
            CcAlgorithm::Cubic => Box::new(Cubic::new(CubicConfig {
                mss,
                initial_window,
                hystart,
                ..CubicConfig::default()
            })),
            CcAlgorithm::Xcp | CcAlgorithm::XcpRate | CcAlgorithm::XcpRatePure => {
                let variant = self.xcp_variant().unwrap_or_default();
                Box::new(Xcp::new(variant, mss, initial_window))
            }
            CcAlgorithm::Pcc => Box::new(Pcc::new(PccConfig {
                mss,
                initial_window,
                ..PccConfig::default()
            })),
            CcAlgorithm::Bbr => Box::new(Bbr::new(BbrConfig {
                mss,
                initial_window,
            })),
        }
    }
}

/// RFC 6928 initial window: `min(10·MSS, max(2·MSS, 14600))`.
pub fn rfc6928_initial_window(mss: usize) -> usize {
    (10 * mss).min((2 * mss).max(14_600))
}

#[cfg(test)]
mod tests {
    use super::events::tests::ack;
    use super::window::tests::rtt;
    use super::*;

    #[test]
    fn boxed_controller_clone_is_an_independent_copy() {
        let t0 = Instant::now();
        let mut a = CcAlgorithm::Cubic.build(1000, 10_000);
        a.set_window(t0, 20_000, 40_000);
        let b = a.clone();
        assert_eq!(b.name(), "cubic");
        assert_eq!((b.window(), b.ssthresh()), (20_000, 40_000));
        a.on_ack(ack(t0, t0, 2000, &rtt(100)));
        assert_eq!(a.window(), 22_000);
        assert_eq!(b.window(), 20_000);
    }
}

//! XCP router signalling (DESIGN §7.2; seed `xcp-vs-rcp.txt` §2.2; Katabi,
//! Handley, Rohrs, "Congestion Control for High Bandwidth-Delay Product
//! Networks", SIGCOMM 2002, §3.5; Falk, Pryadkin, Katabi,
//! draft-falk-xcp-spec-03, July 2007).
//!
//! Senders put their congestion window `H_cwnd`, their RTT `H_rtt` and the
//! window change they want, `H_feedback`, into the IPv4 XCP option of every
//! data packet ([`ka_codec::xcp_option`]). The stage measures the arriving
//! traffic, runs XCP's two controllers once per control interval, and on
//! dequeue lowers each packet's `H_feedback` to the window change it
//! allocates to that packet ([`ka_codec::xcp_option::lower_feedback_in_packet`]: never
//! raised, so the most restrictive router on the path wins). No per-flow
//! state: everything comes from the packet headers.
//!
//! # Control interval
//!
//! The control interval is the average RTT `d` of the traffic: the mean of
//! `H_rtt` weighted by packet size over the last interval (the XCP paper
//! §3.5). Packets with `H_rtt` = 0 (the sender has no estimate yet) or above
//! [`MAX_RTT`] are left out of `d` and of the feedback sums (they still count
//! in y and get `H_feedback` lowered to at most 0). Until such a packet has
//! arrived, `d` is [`PortConfig::initial_rtt`]. The interval is `d` clamped
//! to [[`MIN_INTERVAL`], [`MAX_RTT`]].
//!
//! # Efficiency controller
//!
//! At the end of every interval, from what arrived during it:
//!
//! ```text
//! φ = α·d·(C − y) − β·Q
//! ```
//!
//! y = bytes arriving during the interval (every packet offered to the
//! queue, XCP or not, drops included — as RCP's y) / the interval; Q = the
//! persistent queue, the smallest queue (bytes) seen during the interval
//! ("the queue that does not drain within a round trip": the interval is
//! one RTT). φ is the change of the aggregate traffic, in bytes per `d`,
//! that the next interval hands out.
//!
//! # Fairness controller
//!
//! Shuffling `h = max(0, γ·y·d − |φ|)` bytes are taken away from and given
//! back to the flows on top of φ, so that flows converge to fairness also
//! when φ ≈ 0. Positive feedback `h + max(φ, 0)` is shared so that every
//! flow's *throughput* grows by the same amount, negative feedback
//! `h + max(−φ, 0)` so that every flow's throughput shrinks in proportion
//! to it (AIMD). Per packet i (size s, from the header `r = H_rtt`,
//! `w = H_cwnd`), in window bytes:
//!
//! ```text
//! p_i = ξp · r² · s / w        ξp = (h + max(φ, 0)) / (d · Σ r·s/w)
//! n_i = ξn · r · s             ξn = (h + max(−φ, 0)) / (d · Σ s)
//! H_feedback ← min(H_feedback, p_i − n_i)
//! ```
//!
//! the sums over the XCP packets that arrived during the interval that just
//! ended (the XCP paper's eq. 6–11). A window change `f` of a flow with RTT
//! r changes its traffic during one interval `d` by `f·d/r` bytes; measured
//! that way, the interval hands out `Σ p_i·d/r = h + max(φ, 0)` and
//! `Σ n_i·d/r = h + max(−φ, 0)` if the traffic repeats the previous
//! interval's. To keep the sums from overshooting when it does not, the
//! stage counts what it has handed out (the draft's residues): once the
//! positive (negative) budget of an interval is spent, further packets get
//! no positive (negative) share, and the packet that reaches the budget
//! gets only what is left.
//!
//! The effective number of flows is `N̂ = Σ r·s/w / d` (a flow sending its
//! window once per RTT contributes `d`); [`Signaller::rate`] reports
//! `y / max(N̂, 1)`, the average flow's throughput.
//!
//! # Choices and rounding
//!
//! Feedback is rounded to whole bytes (the option carries an `i32`); a
//! packet whose `H_cwnd` is below its own size is taken to have a window of
//! one packet (no division by a stranger's zero). Only IPv4 packets can
//! carry the option; everything else is forwarded untouched. The stage
//! keeps no per-packet or per-flow memory: its state is a few numbers.

use std::any::Any;
use std::time::Duration;

use ka_codec::wire::{Layout, Segment};
use ka_codec::xcp_option::{self, Lowered};

use super::{Pieces, QueueState, Signaller};
use crate::classify::PacketKind;
use crate::config::{PortConfig, XcpConfig};
use crate::persist::PersistentQueue;
use crate::qdisc::Nanos;
use crate::stats::Counters;

/// `H_rtt` values above this (and the control interval) are clamped: 10 s.
/// Packets announcing a longer RTT are treated like packets without one.
pub const MAX_RTT: Duration = Duration::from_secs(10);

/// The shortest control interval: 1 ms (a sub-millisecond `d` would make
/// the stage tick more often than a fast link sends a window).
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// What one control interval did (for tests, plots and diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct XcpInterval {
    /// Start of the interval (port time, ns).
    pub start: Nanos,
    /// End of the interval (port time, ns).
    pub end: Nanos,
    /// d the interval's feedback was computed with, seconds.
    pub rtt_s: f64,
    /// φ handed out during the interval (computed at its start), bytes.
    pub phi: f64,
    /// Shuffled traffic h handed out during the interval, bytes.
    pub shuffle: f64,
    /// Positive feedback handed out during the interval, as the change of
    /// the aggregate traffic over one `d`: `Σ p_i·d/r_i`, bytes.
    pub positive: f64,
    /// Negative feedback handed out, `Σ n_i·d/r_i`, bytes.
    pub negative: f64,
    /// y measured over the interval, bytes per second.
    pub input_rate: f64,
    /// The persistent queue Q at its end, bytes.
    pub persistent_queue: usize,
    /// The effective number of XCP flows N̂ measured over the interval.
    pub flows: f64,
}

impl XcpInterval {
    /// What the interval handed out in total, positive minus negative
    /// (bytes per `d`); equals φ when the traffic repeats.
    pub fn net(&self) -> f64 {
        self.positive - self.negative
    }
}

/// Sums over the packets of the interval in progress.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    /// Every byte that arrived.
    bytes: u64,
    /// Σ s over XCP packets with an RTT.
    xcp_bytes: f64,
    /// Σ r·s (seconds·bytes).
    rtt_bytes: f64,
    /// Σ r·s/w (seconds).
    rtt_by_cwnd: f64,
}

/// The XCP signalling stage (see the module docs).
#[derive(Debug, Clone)]
pub struct XcpSignal {
    knobs: XcpConfig,
    /// C in bytes per second.
    capacity: f64,
    /// d in seconds.
    rtt: f64,
    last_tick: Nanos,
    next_tick: Nanos,
    sums: Sums,
    persistent: PersistentQueue,
    /// Scale factors of the interval in progress (the paper's ξp, ξn).
    xi_p: f64,
    xi_n: f64,
    /// Feedback budget left in the interval in progress, bytes per d.
    residue_pos: f64,
    residue_neg: f64,
    /// The interval in progress (its φ, h and what it handed out so far).
    current: XcpInterval,
    /// The last completed interval.
    last: XcpInterval,
}

impl XcpSignal {
    /// The stage for a port with `config` (C, the initial d and
    /// the knobs of [`Signalling::Xcp`](crate::Signalling::Xcp)); out-of-range knobs are clamped as
    /// [`PortConfig::validate`] describes.
    pub fn new(config: &PortConfig) -> Self {
        let config = config.sanitized();
        let rtt = clamp_rtt(config.initial_rtt.as_secs_f64());
        let mut s = Self {
            knobs: match config.signalling {
                crate::config::Signalling::Xcp(x) => x,
                _ => crate::config::XcpConfig::default(),
            },
            capacity: config.capacity_bps as f64 / 8.0,
            rtt,
            last_tick: 0,
            next_tick: 0,
            sums: Sums::default(),
            persistent: PersistentQueue::default(),
            xi_p: 0.0,
            xi_n: 0.0,
            residue_pos: 0.0,
            residue_neg: 0.0,
            current: XcpInterval {
                rtt_s: rtt,
                ..XcpInterval::default()
            },
            last: XcpInterval::default(),
        };
        s.next_tick = s.interval_ns();
        s
    }

    /// The knobs in use.
    pub fn knobs(&self) -> XcpConfig {
        self.knobs
    }

    /// The last completed control interval.
    pub fn last_interval(&self) -> XcpInterval {
        self.last
    }

    /// The interval in progress: its φ and h, and what it has handed out
    /// so far.
    pub fn current_interval(&self) -> XcpInterval {
        self.current
    }

    /// The control interval now, ns: d clamped to
    /// [[`MIN_INTERVAL`], [`MAX_RTT`]].
    fn interval_ns(&self) -> u64 {
        (self.rtt * 1e9) as u64
    }

    /// Ends the interval at `t` and computes the next one's feedback.
    fn tick(&mut self, t: Nanos, q: QueueState) {
        let span = t.saturating_sub(self.last_tick).max(1) as f64 / 1e9;
        let sums = std::mem::take(&mut self.sums);
        let y = sums.bytes as f64 / span;
        if sums.xcp_bytes > 0.0 {
            self.rtt = clamp_rtt(sums.rtt_bytes / sums.xcp_bytes);
        }
        let d = self.rtt;
        let queue = self.persistent.end_interval(q.bytes, 1);
        let k = self.knobs;
        let phi = k.alpha * d * (self.capacity - y) - k.beta * queue as f64;
        let shuffle = (k.gamma * y * d - phi.abs()).max(0.0);
        let (pos, neg) = (shuffle + phi.max(0.0), shuffle + (-phi).max(0.0));
        // No XCP packets, nobody to give feedback to: no budget.
        let (xi_p, residue_pos) = if sums.rtt_by_cwnd > 0.0 {
            (pos / (d * sums.rtt_by_cwnd), pos)
        } else {
            (0.0, 0.0)
        };
        let (xi_n, residue_neg) = if sums.xcp_bytes > 0.0 {
            (neg / (d * sums.xcp_bytes), neg)
        } else {
            (0.0, 0.0)
        };
        self.last = XcpInterval {
            end: t,
            input_rate: y,
            persistent_queue: queue,
            flows: sums.rtt_by_cwnd / d,
            ..self.current
        };
        self.xi_p = xi_p;
        self.xi_n = xi_n;
        self.residue_pos = residue_pos;
        self.residue_neg = residue_neg;
        self.current = XcpInterval {
            start: t,
            rtt_s: d,
            phi,
            shuffle,
            ..XcpInterval::default()
        };
        self.last_tick = t;
        self.next_tick = t.saturating_add(self.interval_ns());
    }

    /// The window change allocated to a packet of `size` bytes with header
    /// RTT `r` (seconds, > 0) and window `cwnd`; spends the budgets.
    fn allocate(&mut self, size: f64, r: f64, cwnd: f64) -> f64 {
        let d = self.current.rtt_s;
        // A window change f at RTT r is f·d/r bytes of traffic per d.
        let scale = d / r;
        let mut p = 0.0;
        if self.residue_pos > 0.0 {
            p = (self.xi_p * r * r * size / cwnd).min(self.residue_pos / scale);
            self.residue_pos -= p * scale;
            self.current.positive += p * scale;
        }
        let mut n = 0.0;
        if self.residue_neg > 0.0 {
            n = (self.xi_n * r * size).min(self.residue_neg / scale);
            self.residue_neg -= n * scale;
            self.current.negative += n * scale;
        }
        p - n
    }
}

/// d clamped to [`MIN_INTERVAL`]..=[`MAX_RTT`], seconds.
fn clamp_rtt(d: f64) -> f64 {
    let (lo, hi) = (MIN_INTERVAL.as_secs_f64(), MAX_RTT.as_secs_f64());
    if d.is_finite() { d.clamp(lo, hi) } else { hi }
}

/// The header RTT in seconds if it is usable (> 0 and ≤ [`MAX_RTT`]).
fn header_rtt(rtt_us: u32) -> Option<f64> {
    let r = f64::from(rtt_us) / 1e6;
    (rtt_us > 0 && r <= MAX_RTT.as_secs_f64()).then_some(r)
}

/// Rounds a feedback to the option's `i32` bytes.
fn to_i32(f: f64) -> i32 {
    // `as` saturates at the i32 range (and maps NaN to 0).
    f.round() as i32
}

impl Signaller for XcpSignal {
    fn on_arrival(
        &mut self,
        _t: Nanos,
        packet: &[u8],
        seg: Option<&Segment<'_>>,
        kind: PacketKind,
        _c: &mut Counters,
    ) {
        self.sums.bytes += packet.len() as u64;
        if !matches!(kind, PacketKind::Ipv4 { .. }) {
            return;
        }
        let Some(Ok(Some((_, opt)))) = seg.map(xcp_option::find_in_segment) else {
            return;
        };
        let Some(r) = header_rtt(opt.rtt_us) else {
            return;
        };
        let s = packet.len() as f64;
        let w = f64::from(opt.cwnd_bytes).max(s);
        self.sums.xcp_bytes += s;
        self.sums.rtt_bytes += r * s;
        self.sums.rtt_by_cwnd += r * s / w;
    }

    fn on_queue(&mut self, _t: Nanos, _q: QueueState) {}

    fn next_timer(&self) -> Nanos {
        self.next_tick
    }

    fn on_timer(&mut self, t: Nanos, horizon: Nanos, q: QueueState) {
        let idle = self.sums.bytes == 0 && q.packets == 0;
        self.tick(t, q);
        if !idle {
            return;
        }
        // Nothing arrived and the queue is empty (so Q = 0): every further
        // interval up to `horizon` (nothing happens before it) measures the
        // same, computes the same φ and hands out nothing. Skip them on the
        // same grid, leaving the state one of them would have left.
        let step = self.interval_ns().max(1);
        let n = horizon.saturating_sub(t) / step;
        if n > 0 {
            let end = t.saturating_add(n.saturating_mul(step));
            self.last = XcpInterval {
                start: end.saturating_sub(step),
                end,
                ..self.current
            };
            self.current.start = end;
            self.last_tick = end;
            self.next_tick = end.saturating_add(step);
        }
    }

    fn on_dequeue(
        &mut self,
        _t: Nanos,
        mut packet: Vec<u8>,
        layout: Option<Layout>,
        q: QueueState,
        counters: &mut Counters,
    ) -> Pieces {
        self.persistent.observe(q.bytes);
        // The classifier's parse, or the one parse here.
        let Ok(layout) = layout.map_or_else(|| Layout::parse(&packet), Ok) else {
            return (packet, None);
        };
        let seg = Segment::with_layout(&packet, layout);
        let Ok(Some((at, opt))) = xcp_option::find_in_segment(&seg) else {
            return (packet, None);
        };
        let feedback = match header_rtt(opt.rtt_us) {
            Some(r) => {
                let s = packet.len() as f64;
                let w = f64::from(opt.cwnd_bytes).max(s);
                to_i32(self.allocate(s, r, w))
            }
            // No RTT: the formulas give it nothing.
            None => 0,
        };
        if let Ok(Lowered::From(_)) = xcp_option::lower_feedback_at(&mut packet, at, opt, feedback)
        {
            counters.xcp_feedback_lowered += 1;
        }
        (packet, None)
    }

    /// A middlebox moved C (B/ms): the next control interval's φ uses the
    /// new C; the interval in progress keeps the feedback it computed.
    fn set_capacity(&mut self, _t: Nanos, capacity: f64) {
        self.capacity = capacity.max(0.0) * 1e3;
    }

    fn rate(&self) -> f64 {
        if self.last.flows <= 0.0 {
            return 0.0;
        }
        self.last.input_rate / self.last.flows.max(1.0) / 1e3
    }

    fn rtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_follows_the_clamped_rtt() {
        let mut c = PortConfig::new(100_000_000);
        c.initial_rtt = Duration::from_micros(10);
        assert_eq!(XcpSignal::new(&c).next_timer(), 1_000_000);
        c.initial_rtt = Duration::from_secs(60);
        assert_eq!(XcpSignal::new(&c).next_timer(), 10_000_000_000);
        assert_eq!(clamp_rtt(f64::NAN), 10.0);
        assert_eq!(header_rtt(0), None);
        assert_eq!(header_rtt(10_000_001), None);
        assert_eq!(header_rtt(100_000), Some(0.1));
    }
}

//! Signalling stages: what a [`Port`](crate::Port) learns from arriving
//! packets and writes into departing ones (DESIGN §3.1).
//!
//! The port owns the queue discipline, the shaper and the delay line; the
//! signalling stage owns everything protocol-specific: the controller and
//! its control loop, what it reads from arrivals (RTT indicators, header
//! fields) and what it does to a packet on dequeue (fragment it, lower an
//! option). One [`Signaller`] trait object per port; one file per kind:
//!
//! | kind | file | what |
//! |---|---|---|
//! | [`RateSignal`] | `rate.rs` | an explicit-rate controller ([`RateController`](crate::RateController), RCP by default) with a carrier: Kick-Ass fragments (with the TCP-mode detector), the native-RCP IPv4 option, or none |
//! | [`XcpSignal`] | `xcp.rs` | XCP's efficiency and fairness controllers, lowering `H_feedback` of the IPv4 XCP option |
//!
//! `every.rs` ([`StampTable`]) is the per-flow memory of
//! [`StampEvery`](crate::StampEvery) that [`RateSignal`] consults on
//! dequeue when a port signals each flow once per RTT instead of on every
//! packet (DESIGN §3.9).
//!
//! The port calls, in time order: [`Signaller::on_arrival`] for every
//! packet that passed ingress (before the discipline's verdict), with the
//! classifier's one parse of it ([`ka_codec::wire::Segment`]),
//! [`Signaller::on_queue`] after every enqueue attempt,
//! [`Signaller::on_dequeue`] for every packet leaving the discipline (the
//! stage returns the piece or pieces to serialise; the classifier's parse
//! comes with it when the discipline kept it, else a stage that reads the
//! headers parses it once there, and either way hands that one view to
//! everything it does with the packet), and
//! [`Signaller::on_timer`] at [`Signaller::next_timer`] — which comes
//! before a dequeue due at the same instant. A stage never reads a clock.

pub mod every;
pub mod rate;
mod reverse;
pub mod xcp;

pub use every::{MAX_STAMP_SLOTS, STAMP_SLOTS, StampTable};
pub use rate::RateSignal;
pub use xcp::{XcpInterval, XcpSignal};

use std::time::Duration;

use ka_codec::Code;
use ka_codec::wire::{Layout, Segment, SegmentMut};

use crate::classify::PacketKind;
use crate::gso::Gso;
use crate::mode::Mode;
use crate::qdisc::Nanos;
use crate::stats::Counters;

/// The queue discipline's occupancy, as a stage sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueState {
    /// Packets queued.
    pub packets: usize,
    /// Bytes queued.
    pub bytes: usize,
}

/// What a stage makes of a dequeued packet: the piece(s) to put on the
/// wire, back to back.
pub type Pieces = (Vec<u8>, Option<Vec<u8>>);

/// A signalling stage (see the module docs). Implementations never panic on
/// any packet bytes and never read a clock.
pub trait Signaller: Send {
    /// A packet passed ingress at `t` and is about to be offered to the
    /// queue discipline (whatever its verdict: RCP counts drops as input).
    /// `seg` is the classifier's parse of an IP packet (`None` for non-IP):
    /// read header facts from it, never parse `packet` again.
    fn on_arrival(
        &mut self,
        t: Nanos,
        packet: &[u8],
        seg: Option<&Segment<'_>>,
        kind: PacketKind,
        counters: &mut Counters,
    );

    /// The queue holds `q` after an enqueue attempt at `t`.
    fn on_queue(&mut self, t: Nanos, q: QueueState);

    /// When the stage next needs [`Signaller::on_timer`] (port time).
    fn next_timer(&self) -> Nanos;

    /// The timer fired at `t`. Nothing else happens before `horizon` (the
    /// time the caller advances to, or the next dequeue if earlier), so a
    /// stage may process the timers up to it in one go. `q` is the queue.
    fn on_timer(&mut self, t: Nanos, horizon: Nanos, q: QueueState);

    /// `packet` left the queue discipline at `t`, leaving `q` behind:
    /// returns what goes on the wire. `layout` is the classifier's parse of
    /// it when the discipline kept it
    /// ([`QueueDiscipline::dequeue_parsed`](crate::QueueDiscipline::dequeue_parsed));
    /// `None` for non-IP packets and disciplines that do not keep it, and
    /// then a stage that reads the headers parses the packet once itself.
    fn on_dequeue(
        &mut self,
        t: Nanos,
        packet: Vec<u8>,
        layout: Option<Layout>,
        q: QueueState,
        counters: &mut Counters,
    ) -> Pieces;

    /// Whether a TCP super-packet like `seg` may travel the port whole
    /// ([`Port::push_gso`](crate::Port::push_gso)): the stage then sees it
    /// through [`Signaller::on_arrival_gso`] and
    /// [`Signaller::on_dequeue_gso`] and must account it as its segments.
    /// Default false: the port gives the stage the segments one by one.
    fn takes_gso(&self, seg: &Segment<'_>) -> bool {
        let _ = seg;
        false
    }

    /// A super-packet passed ingress at `t` (only if
    /// [`Signaller::takes_gso`]): `arrivals` holds each segment's IP length
    /// and kind, in order, as [`Signaller::on_arrival`] would see them;
    /// `seg` is the super-packet's parse (the segments' headers but for
    /// lengths, sequence numbers and identification). The default hands
    /// each to `on_arrival` with the super-packet's bytes.
    fn on_arrival_gso(
        &mut self,
        t: Nanos,
        seg: &Segment<'_>,
        arrivals: &[(usize, PacketKind)],
        counters: &mut Counters,
    ) {
        for &(_, kind) in arrivals {
            self.on_arrival(t, seg.bytes(), Some(seg), kind, counters);
        }
    }

    /// A super-packet (`gso` its view) left the queue discipline at `t`,
    /// leaving `q` behind (only if [`Signaller::takes_gso`]): pushes onto
    /// `out`, in order, what goes on the wire — the super-packet whole, or
    /// the segments the stage signals (cut off with
    /// [`crate::gso::piece`], as [`Signaller::on_dequeue`] makes them) and
    /// the rest, whole or not. The default sends it whole.
    #[allow(clippy::too_many_arguments)]
    fn on_dequeue_gso(
        &mut self,
        t: Nanos,
        packet: Vec<u8>,
        layout: Option<Layout>,
        gso: Gso,
        q: QueueState,
        counters: &mut Counters,
        out: &mut Vec<(Vec<u8>, Option<Gso>)>,
    ) {
        let _ = (t, layout, q, counters);
        out.push((packet, Some(gso)));
    }

    /// The port's capacity C changed to `capacity` B/ms at `t`
    /// ([`Port::set_capacity`](crate::Port::set_capacity)). The default
    /// ignores it (a stage that does not use C).
    fn set_capacity(&mut self, t: Nanos, capacity: f64) {
        let _ = (t, capacity);
    }

    /// Whether [`Signaller::on_reverse`] does anything (the caller may
    /// skip the call otherwise). Default false.
    fn wants_reverse(&self) -> bool {
        false
    }

    /// A packet of the opposite direction passes the router at `t` (port
    /// time), before its own egress: the stage may lower the rate echo it
    /// carries for this port's flow. `packet` is parsed once by the caller
    /// (only if [`Signaller::wants_reverse`]). Returns whether it changed.
    /// Default: nothing.
    fn on_reverse(
        &mut self,
        t: Nanos,
        packet: &mut SegmentMut<'_>,
        counters: &mut Counters,
    ) -> bool {
        let _ = (t, packet, counters);
        false
    }

    /// The rate the stage advertises, B/ms (for an explicit-rate stage R;
    /// for others the best equivalent, e.g. the fair share the stage hands
    /// out; 0 if none).
    fn rate(&self) -> f64;

    /// The KA code stamped on dequeue right now, if any.
    fn signal(&self) -> Option<Code> {
        None
    }

    /// The average RTT d the stage uses.
    fn rtt(&self) -> Duration;

    /// KA or TCP mode (stages without a TCP-mode detector are always in
    /// [`Mode::Ka`]).
    fn mode(&self) -> Mode {
        Mode::Ka
    }

    /// Mode changes so far.
    fn mode_changes(&self) -> u64 {
        0
    }

    /// The queue length (packets) at which the stage enters TCP mode
    /// (`usize::MAX` for stages without one).
    fn mode_threshold(&self) -> usize {
        usize::MAX
    }

    /// The stage as [`Any`](std::any::Any), for callers that know its
    /// concrete type and want its own diagnostics (e.g.
    /// [`XcpSignal::last_interval`] through
    /// [`Port::signaller`](crate::Port::signaller)). Default `None`.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

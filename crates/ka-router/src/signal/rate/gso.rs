//! [`RateSignal`] and TCP super-packets ([`crate::gso`], DESIGN §8.5):
//! which it takes whole, and what it makes of one on dequeue.

use ka_codec::wire::{Layout, Segment};

use super::{Gate, RateSignal};
use crate::config::Carrier;
use crate::gso::Gso;
use crate::mode::Mode;
use crate::qdisc::Nanos;
use crate::signal::QueueState;
use crate::stats::Counters;

impl RateSignal {
    /// [`Signaller::takes_gso`](crate::Signaller::takes_gso): whole when no
    /// stage decides per packet: no carrier; the KA carrier signalling each
    /// flow once per interval (DESIGN §3.9); or the KA carrier and DF set,
    /// which it never splits (§3.4, rule 1: the kernel's TCP sets DF, and so
    /// does a KA endpoint outside KA mode). Never with a controller that
    /// reads every packet, nor with native RCP (its option is in every
    /// segment).
    pub(super) fn gso_whole(&self, seg: &Segment<'_>) -> bool {
        if self.controller.wants_packets() {
            return false;
        }
        match self.carrier {
            Carrier::None => true,
            Carrier::Ka => self.every.is_some() || seg.dont_frag(),
            Carrier::NativeRcp | Carrier::Xcp => false,
        }
    }

    /// [`Signaller::on_dequeue_gso`](crate::Signaller::on_dequeue_gso)
    /// (`sup`: the super-packet, its parse and its view).
    pub(super) fn dequeue_gso(
        &mut self,
        t: Nanos,
        (packet, layout, gso): (Vec<u8>, Option<Layout>, Gso),
        q: QueueState,
        counters: &mut Counters,
        out: &mut Vec<(Vec<u8>, Option<Gso>)>,
    ) {
        self.persistent.observe(q.bytes);
        if self.is_ka() {
            self.mode_on_queue(t, q.packets);
        }
        if self.carrier == Carrier::Ka && self.mode.mode() == Mode::Ka {
            self.dequeue_ka_gso(t, packet, layout, gso, counters, out);
        } else {
            out.push((packet, Some(gso)));
        }
    }

    /// [`Signaller::on_dequeue_gso`] with the KA carrier in KA mode: the
    /// stamping interval's gate decides at `t`, as it would for each
    /// segment leaving at `t`. While it says signal, the first segment is
    /// cut off and goes through [`RateSignal::egress`] (stamped, split);
    /// when it says skip, the rest is skipped whole.
    fn dequeue_ka_gso(
        &mut self,
        t: Nanos,
        mut packet: Vec<u8>,
        mut layout: Option<Layout>,
        mut gso: Gso,
        counters: &mut Counters,
        out: &mut Vec<(Vec<u8>, Option<Gso>)>,
    ) {
        loop {
            let Some(l) = layout else {
                out.push((packet, Some(gso)));
                return;
            };
            let seg = Segment::with_layout(&packet, l);
            if seg.dont_frag() {
                // Never split (rule 1): it leaves whole, untouched, as each
                // of its segments would through `egress`.
                out.push((packet, Some(gso)));
                return;
            }
            if seg.is_fragment() {
                // Nothing the stamping interval gates: each segment as
                // `egress` takes it.
                for p in crate::gso::segments(&packet, gso) {
                    let (a, b) = self.egress(t, p, None, counters);
                    out.push((a, None));
                    if let Some(b) = b {
                        out.push((b, None));
                    }
                }
                return;
            }
            if let Gate::Skip = self.gate(t, &seg, seg.is_leading_fragment()) {
                counters.signals_skipped += u64::from(gso.segments());
                out.push((packet, Some(gso)));
                return;
            }
            let (Some((head, _)), Some((rest, view))) = (
                crate::gso::piece(&packet, gso, 0, 1),
                crate::gso::piece(&packet, gso, 1, gso.segments()),
            ) else {
                out.push((packet, Some(gso)));
                return;
            };
            let (a, b) = self.egress(t, head, None, counters);
            out.push((a, None));
            if let Some(b) = b {
                out.push((b, None));
            }
            match view {
                None => {
                    let (a, b) = self.egress(t, rest, None, counters);
                    out.push((a, None));
                    if let Some(b) = b {
                        out.push((b, None));
                    }
                    return;
                }
                Some(g) => {
                    layout = Layout::parse(&rest).ok();
                    packet = rest;
                    gso = g;
                }
            }
        }
    }
}

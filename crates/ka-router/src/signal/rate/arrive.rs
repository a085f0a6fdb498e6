//! [`RateSignal`]'s arrival path: the foreign-traffic judgement (DESIGN
//! §3.6, §3.6.1), RTT samples for d (§3.5, §3.6.2) and y.

use std::time::Duration;

use ka_codec::wire::Segment;

use super::{RateSignal, indicator_floor_ns, packet_info};
use crate::classify::PacketKind;
use crate::config::Carrier;
use crate::judge::Arrival;
use crate::mode::Mode;
use crate::native;
use crate::qdisc::Nanos;
use crate::stats::Counters;

impl RateSignal {
    /// [`Signaller::on_arrival`](crate::Signaller::on_arrival) of a packet of `len` bytes (`packet`: its
    /// bytes, read only by a controller that wants packets).
    #[inline]
    pub(super) fn arrive(
        &mut self,
        t: Nanos,
        len: usize,
        packet: &[u8],
        seg: Option<&Segment<'_>>,
        kind: PacketKind,
        counters: &mut Counters,
    ) {
        let indicator = match kind {
            PacketKind::Ipv4 { indicator } | PacketKind::Ipv6 { indicator } => indicator,
            PacketKind::NonIp => None,
        };
        if self.is_ka() {
            // Foreign traffic (not from a KA endpoint) decides TCP mode (see
            // the `mode` and `judge` module docs).
            let hinted = match kind {
                PacketKind::Ipv4 { indicator } => {
                    self.config.mode.df_hint
                        && indicator.is_none()
                        && seg.is_some_and(|s| s.dont_frag())
                }
                PacketKind::Ipv6 { indicator } => indicator.is_none() && !self.config.ipv6_signal,
                PacketKind::NonIp => true,
            };
            let foreign = match self.judge.as_mut() {
                Some(judge) => judge.on_arrival(
                    t,
                    &Arrival {
                        key: seg.and_then(|s| s.flow_key()),
                        bytes: len,
                        indicator,
                        hinted,
                        signalling: self.mode.mode() == Mode::Ka,
                        rate: self.controller.rate(),
                    },
                ),
                None => hinted,
            };
            self.mode.on_arrival(len, foreign);
        }
        if let Some(k) = indicator {
            counters.indicators_seen += 1;
            let sample = ka_codec::rtt::rtt_for_k(k).as_secs_f64() * 1e3;
            // With the judge, d is the byte-weighted RTT it computes every
            // interval; an indicator only sets the first d.
            if self.judge.is_none() || !self.rtt_sampled {
                self.rtt_sample(t, sample);
            }
            if let (Some(table), Some(key)) = (self.every.as_mut(), seg.and_then(|s| s.flow_key()))
            {
                // The flow's own RTT for its stamping interval: the
                // bottom of the indicator's range, so the interval never
                // exceeds the sender's srtt as it announced it (DESIGN §3.9).
                table.note_rtt(&key, indicator_floor_ns(k));
            }
        } else if self.carrier == Carrier::NativeRcp
            && let Some(ms) = seg.and_then(native::rcp_rtt_ms_of)
        {
            // Native RCP carries the sender's RTT in every packet's option.
            self.rtt_sample(t, f64::from(ms));
            if let (Some(table), Some(key)) = (self.every.as_mut(), seg.and_then(|s| s.flow_key()))
            {
                table.note_rtt(&key, u64::from(ms) * 1_000_000);
            }
        }
        if self.controller.wants_packets() {
            let info = packet_info(packet, seg);
            self.controller.on_packet(Duration::from_nanos(t), &info);
        }
        // y counts every packet offered to the queue, drops included.
        self.arrived += len as u64;
    }
}

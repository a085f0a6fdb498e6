//! The handshake: SYN, SYN-ACK and the completing ACK of a connection
//! (module docs, "Handshake"), which give RWM the RTT, both MSSs and both
//! window scales.

use ka_codec::wire::Segment;
use ka_codec::wire::tcp::{ACK, SYN, TcpOptions};

use super::buckets::{Hot, Stage};
use super::table::{self, Cold};
use super::{DEFAULT_MSS_V4, DEFAULT_MSS_V6, Rwm, segment, window};

impl Rwm {
    /// A SYN of a connection not in the table: a half-open entry.
    pub(super) fn on_new_syn(
        &mut self,
        packet: &Segment<'_>,
        seg: &segment::TcpSeg,
        fp: u64,
        t: u64,
    ) {
        let (mut hot, mut cold) = table::new_entry(fp, seg.from, t);
        Self::fill_syn(&mut hot, &mut cold, packet, seg, t);
        hot.class = self.class_of(seg.dst_port);
        self.table.insert_half_open(fp, hot, cold);
    }

    pub(super) fn fill_syn(
        hot: &mut Hot,
        cold: &mut Cold,
        packet: &Segment<'_>,
        seg: &segment::TcpSeg,
        t: u64,
    ) {
        let opts = segment::options(packet).unwrap_or_default();
        hot.set_stage(Stage::SynSent);
        hot.mss = [0; 2];
        if let Some(isn) = cold.seq.get_mut(seg.from) {
            *isn = seg.seq;
        }
        cold.syn_at = t;
        cold.wscale_opt = [None; 2];
        Self::set_options(hot, cold, seg.from, seg.key.is_v6(), opts);
    }

    fn set_options(hot: &mut Hot, cold: &mut Cold, from: usize, v6: bool, o: TcpOptions) {
        let default_mss = if v6 { DEFAULT_MSS_V6 } else { DEFAULT_MSS_V4 };
        if let Some(w) = cold.wscale_opt.get_mut(from) {
            *w = o.window_scale;
        }
        if let Some(m) = hot.mss.get_mut(from) {
            *m = o.mss.filter(|&m| m > 0).unwrap_or(default_mss);
        }
    }

    /// A segment of a connection in its handshake. `true` when it
    /// completed the handshake (the segment then goes on to be capped).
    pub(super) fn on_handshake(
        &mut self,
        packet: &Segment<'_>,
        seg: &segment::TcpSeg,
        pos: u32,
        t: u64,
    ) -> bool {
        let Some((mut hot, mut cold)) = self.table.entry(pos) else {
            return false;
        };
        let flags = seg.flags;
        let initiator = usize::from(cold.initiator);
        let from_initiator = seg.from == initiator;
        let isn = |who: usize| cold.seq.get(who).copied().unwrap_or(0);
        let (init_isn, resp_isn) = (isn(initiator), isn(1 - initiator));
        if flags & (SYN | ACK) == SYN && from_initiator {
            if seg.seq != init_isn {
                // A new attempt on the same four-tuple: start over.
                Self::fill_syn(&mut hot, &mut cold, packet, seg, t);
            } else {
                // A retransmitted SYN: the SYN-ACK will answer this copy.
                cold.syn_at = t;
            }
        } else if flags & (SYN | ACK) == SYN | ACK
            && !from_initiator
            && seg.ack == init_isn.wrapping_add(1)
        {
            hot.set_stage(Stage::SynAckSeen);
            if let Some(s) = cold.seq.get_mut(seg.from) {
                *s = seg.seq;
            }
            let opts = segment::options(packet).unwrap_or_default();
            Self::set_options(&mut hot, &mut cold, seg.from, seg.key.is_v6(), opts);
        } else if flags & (SYN | ACK) == ACK
            && from_initiator
            && hot.stage() == Stage::SynAckSeen
            && seg.ack == resp_isn.wrapping_add(1)
        {
            // From here on the marks RST and FIN are checked against
            // (`accept` module): each side's next sequence number.
            cold.seq = cold.seq.map(|s| s.wrapping_add(1));
            let rtt_ns = t.saturating_sub(cold.syn_at);
            hot.rtt_ns = rtt_ns as f32;
            hot.set_wscale(match cold.wscale_opt {
                [Some(a), Some(b)] => [a.min(window::MAX_WSCALE), b.min(window::MAX_WSCALE)],
                _ => [0, 0],
            });
            self.table.set_entry(pos, hot, cold);
            if !self.table.promote(pos, t) {
                return false;
            }
            let s = &mut self.stats;
            s.handshakes += 1;
            s.handshake_rtt_sum_ns = s.handshake_rtt_sum_ns.saturating_add(rtt_ns);
            s.handshake_rtt_max_ns = s.handshake_rtt_max_ns.max(rtt_ns);
            s.handshake_rtt_min_ns = if s.handshakes == 1 {
                rtt_ns
            } else {
                s.handshake_rtt_min_ns.min(rtt_ns)
            };
            return true;
        } else {
            return false;
        }
        self.table.set_entry(pos, hot, cold);
        self.table.touch_half_open(pos, t);
        false
    }
}

//! Segment arrival (RFC 9293 §3.10.7 "SEGMENT ARRIVES", RFC 5961, RFC 7323).

use super::send::SegFate;
use super::{CloseReason, Connection, Event, PendingRst, Recovery, State, unwrap_seq};
use crate::cc::{Ack, CongestionEvent, PacketAcked, PacketLost};
use ka_codec::wire::tcp::{ACK, ECE, FIN, RST, SYN, TcpRepr};
use std::time::{Duration, Instant};

/// RFC 5681 DupThresh (duplicate-ACK counting, without SACK).
const DUP_THRESH: u32 = super::rack::DUP_THRESH as u32;

/// `a < b` in 32-bit sequence (timestamp) space.
fn ts_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl Connection {
    /// Processes one TCP segment addressed to this connection. `seg` is the
    /// parsed header (checksum already verified by the caller), `payload` the
    /// data after it.
    pub fn handle_segment(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) {
        self.touch(now);
        self.stats.segments_received += u64::from(self.rx_segments);
        match self.state {
            State::Closed => {}
            State::SynSent => self.on_syn_sent(now, seg),
            _ => self.on_synchronized(now, seg, payload),
        }
    }

    fn on_syn_sent(&mut self, now: Instant, seg: &TcpRepr) {
        let has_ack = seg.flags & ACK != 0;
        if has_ack && seg.ack != self.wire_snd(1) {
            if seg.flags & RST == 0 {
                self.pending_rst = Some(PendingRst {
                    seq: seg.ack,
                    ack: None,
                });
            }
            return;
        }
        if seg.flags & RST != 0 {
            if has_ack {
                self.set_closed(CloseReason::Refused);
            }
            return;
        }
        if seg.flags & SYN == 0 {
            return;
        }
        self.on_peer_syn(seg);
        self.snd_wl1 = 0;
        self.snd_wl2 = 0;
        if has_ack {
            self.snd_una = 1;
            self.rto_at = None;
            if let (Some(sent), false) = (self.syn_sent_at, self.syn_retransmitted) {
                self.on_rtt_sample(now, now.saturating_duration_since(sent));
            }
            self.retries = 0;
            self.state = if self.fin_queued {
                State::FinWait1
            } else {
                State::Established
            };
            self.ack_now = true;
            self.quick_ack_armed = self.cfg.quick_ack_first_data;
            self.push_event(Event::Connected);
            // native RCP: the SYN's rate, echoed in the SYN-ACK
            if let Some(echo) = seg.options.rcp_echo {
                self.on_rcp_echo(now, echo);
            }
        } else {
            // simultaneous open: answer with SYN-ACK
            self.state = State::SynReceived;
            self.need_syn = true;
        }
    }

    fn on_synchronized(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) {
        let flags = seg.flags;
        let syn = flags & SYN != 0;
        let fin = flags & FIN != 0;
        let seg_len = payload.len() as u64 + u64::from(syn) + u64::from(fin);
        let Some(seq) = unwrap_seq(self.irs, self.rcv_nxt, seg.seq) else {
            if flags & RST == 0 {
                self.ack_now = true;
            }
            return;
        };

        // retransmitted SYN while we wait for the handshake's ACK
        if self.state == State::SynReceived && syn && flags & ACK == 0 && seq == 0 {
            // it may have fallen back to a non-ECN-setup SYN
            self.ecn_on_peer_syn(flags);
            self.need_syn = true;
            return;
        }

        // PAWS (RFC 7323 §5). Like Linux, segments without data or SYN/FIN
        // are exempt: PAWS protects the data stream from old duplicates, and
        // answering reordered pure ACKs would only create duplicate ACKs.
        let old_ts = seg
            .options
            .timestamps
            .is_some_and(|(tsval, _)| ts_lt(tsval, self.ts_recent));
        if self.ts_ok && seg_len > 0 && flags & RST == 0 && old_ts {
            self.ack_now = true;
            // The part already received is a duplicate: report it (DSACK,
            // RFC 2883; Linux's `tcp_send_dupack` does the same). A late
            // original that arrives after its retransmission carries the
            // older timestamp and lands here; without the report a sender
            // that undoes on DSACKs (`conn::ka_undo`) never learns the
            // retransmission was spurious.
            let end = (seq + payload.len() as u64).min(self.rcv_nxt);
            if self.sack_ok && !payload.is_empty() && seq < end {
                self.note_dsack(seq, end);
            }
            return;
        }

        // sequence acceptability (RFC 9293 §3.10.7.4, first check)
        let wnd = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let in_win = |s: u64| s >= self.rcv_nxt && s < self.rcv_nxt + wnd;
        let acceptable = match (seg_len, wnd) {
            (0, 0) => seq == self.rcv_nxt,
            (0, _) => in_win(seq),
            (_, 0) => false,
            (len, _) => in_win(seq) || in_win(seq + len - 1),
        };
        if !acceptable {
            if flags & RST == 0 {
                self.ack_now = true;
                // an old duplicate: report it (DSACK, RFC 2883 §4.1.1)
                let end = seq + payload.len() as u64;
                if self.sack_ok && !payload.is_empty() && end <= self.rcv_nxt {
                    self.note_dsack(seq, end);
                }
            }
            return;
        }

        // RST (RFC 5961 §3.2); ignored in TIME-WAIT (RFC 1337)
        if flags & RST != 0 {
            if self.state == State::TimeWait {
                return;
            }
            if seq == self.rcv_nxt {
                let reason = if self.state == State::SynReceived && !self.passive {
                    CloseReason::Refused
                } else {
                    CloseReason::Reset
                };
                self.set_closed(reason);
            } else {
                self.challenge_ack(now);
            }
            return;
        }

        // SYN in a synchronised state (RFC 5961 §4.2)
        if syn {
            self.challenge_ack(now);
            return;
        }

        if flags & ACK == 0 {
            return;
        }
        let Some(ack) = unwrap_seq(self.iss, self.snd_una, seg.ack) else {
            self.challenge_ack(now);
            return;
        };

        if self.state == State::SynReceived {
            if ack >= 1 && ack <= self.snd_max {
                self.snd_una = 1;
                if let (Some(sent), false) = (self.syn_sent_at, self.syn_retransmitted) {
                    self.on_rtt_sample(now, now.saturating_duration_since(sent));
                }
                self.rto_at = None;
                self.retries = 0;
                self.state = if self.fin_queued {
                    State::FinWait1
                } else {
                    State::Established
                };
                self.snd_wnd = u64::from(seg.window) << self.snd_shift;
                self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
                self.snd_wl1 = seq;
                self.snd_wl2 = ack;
                self.quick_ack_armed = self.cfg.quick_ack_first_data;
                self.push_event(Event::Connected);
            } else {
                self.pending_rst = Some(PendingRst {
                    seq: seg.ack,
                    ack: None,
                });
                return;
            }
        }

        // ACK acceptability (RFC 5961 §5.2)
        if ack > self.snd_max {
            self.challenge_ack(now);
            return;
        }
        if ack + self.max_snd_wnd < self.snd_una {
            self.challenge_ack(now);
            return;
        }

        // timestamps: TS.Recent update (RFC 7323 §4.3)
        if let (true, Some((tsval, _))) = (self.ts_ok, seg.options.timestamps)
            && seq <= self.last_ack_sent
            && !ts_lt(tsval, self.ts_recent)
        {
            self.ts_recent = tsval;
        }

        let ece_flight = (flags & ECE != 0).then(|| self.flight_size());
        self.process_ack(now, seg, seq, ack, payload.is_empty() && !fin);
        if self.state == State::Closed {
            return;
        }
        if let Some(flight) = ece_flight {
            self.ecn_on_ece(now, flight);
        }

        let fresh_before = self.stats.ka_signals_fresh;
        if let Some(echo) = seg.options.ka_rate {
            self.on_ka_echo(now, echo);
        }
        if let Some(echo) = seg.options.rcp_echo {
            self.on_rcp_echo(now, echo);
        }
        if let Some(echo) = seg.options.xcp_echo {
            self.on_xcp_echo(now, echo);
        }
        if self.stats.ka_signals_fresh == fresh_before {
            self.ka_on_unsignalled_ack(now);
        }

        self.ecn_on_segment(flags, payload.len());
        // data
        if !payload.is_empty()
            && matches!(
                self.state,
                State::Established | State::FinWait1 | State::FinWait2
            )
        {
            self.on_data(now, seq, payload);
        }

        // FIN
        if fin {
            let fin_seq = seq + payload.len() as u64;
            if self.peer_fin.is_none() {
                self.peer_fin = Some(fin_seq);
            }
            self.ack_now = true;
        }
        self.maybe_consume_fin(now);
        self.check_ka_silence(now);
    }

    /// ACK processing: window, SACK, cumulative ACK, duplicate ACKs, loss
    /// detection, recovery.
    fn process_ack(&mut self, now: Instant, seg: &TcpRepr, seq: u64, ack: u64, pure: bool) {
        let wire_window = seg.window;
        // window update (RFC 9293 §3.10.7.4, SND.WL1/WL2)
        let window_changed;
        if self.snd_wl1 < seq || (self.snd_wl1 == seq && self.snd_wl2 <= ack) {
            let wnd = u64::from(wire_window) << self.snd_shift;
            window_changed = wnd != self.snd_wnd;
            self.snd_wnd = wnd;
            self.max_snd_wnd = self.max_snd_wnd.max(wnd);
            self.snd_wl1 = seq;
            self.snd_wl2 = ack;
        } else {
            window_changed = false;
        }
        if self.snd_wnd > 0 {
            self.persist_at = None;
        }
        // any acceptable ACK proves the peer is alive
        self.retries = 0;

        // SACK
        let mut sack_sample: Option<Instant> = None;
        let mut dsack = false;
        if self.sack_ok {
            let blocks: Vec<(Option<u64>, Option<u64>)> = seg
                .options
                .sack
                .iter()
                .map(|(l, r)| {
                    (
                        unwrap_seq(self.iss, self.snd_una, l),
                        unwrap_seq(self.iss, self.snd_una, r),
                    )
                })
                .collect();
            if let Some(&(Some(l), Some(r))) = blocks.first() {
                // RFC 2883 §4: a first block below the cumulative ACK or
                // inside the second block reports a duplicate
                let in_second =
                    matches!(blocks.get(1), Some(&(Some(l2), Some(r2))) if l >= l2 && r <= r2);
                if l < r && (r <= ack || in_second) {
                    dsack = true;
                    self.rack_on_dsack(l, r);
                    self.stats.spurious_retransmits += 1;
                    self.stats.spurious_bytes += r - l;
                }
            }
            for (l, r) in blocks {
                let (Some(l), Some(r)) = (l, r) else {
                    continue;
                };
                if l >= r || l < ack || r > self.snd_max {
                    continue;
                }
                let (_, s) = self.sb.sack(l, r);
                if let Some(s) = s {
                    sack_sample = Some(sack_sample.map_or(s, |t: Instant| t.max(s)));
                }
            }
        }

        let outstanding_before = self.sb.outstanding();
        let una_advanced = ack > self.snd_una;
        if ack > self.snd_una {
            let acked = self.sb.ack_to(ack);
            self.ka.last_acked_sent = acked.newest_sent.or(self.ka.last_acked_sent);
            let data_acked = acked.bytes.saturating_sub(u64::from(acked.fin_acked));
            self.stats.bytes_acked += data_acked;
            self.snd_una = ack;
            self.sndbuf.ack_to(ack);
            if self.snd_nxt < self.snd_una {
                self.snd_nxt = self.snd_una;
            }
            // RTT: newest never-retransmitted segment; Karn otherwise, unless
            // timestamps disambiguate.
            let sample_sent = match (acked.rtt_sent, sack_sample) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            if let Some(sent) = sample_sent {
                self.on_rtt_sample(now, now.saturating_duration_since(sent));
            } else if let (true, true, Some((_, ecr))) =
                (acked.any_retransmitted, self.ts_ok, seg.options.timestamps)
            {
                let ms = self.ts_now(now).wrapping_sub(ecr);
                if ecr != 0 && ms < 60_000 {
                    self.on_rtt_sample(now, Duration::from_millis(u64::from(ms)));
                }
            }
            self.dupacks = 0;
            let app_limited = self.sndbuf.end_seq() <= self.snd_nxt
                && (outstanding_before as usize) + self.snd_mss < self.cwnd();
            self.report_segments(now);
            if let (super::Mode::Tcp, Some(sent)) = (self.ka.mode, acked.newest_sent) {
                self.cc.on_ack(Ack {
                    now,
                    sent,
                    bytes: acked.bytes as usize,
                    app_limited,
                    rtt: &self.rtt,
                });
            }
            // recovery progress
            if let Some(mut rec) = self.recovery {
                if ack >= rec.recover {
                    self.recovery = None;
                    self.sb.end_recovery();
                    self.rack.on_recovery_exit();
                } else {
                    // partial ACK (RFC 6582 §3.2 step 5); with SACK, RACK
                    // finds the further losses
                    if !self.sack_ok {
                        self.retransmit_overdue_first(now);
                    }
                    rec.reno_sacked = rec
                        .reno_sacked
                        .saturating_sub(acked.bytes.saturating_sub(self.snd_mss as u64));
                    self.recovery = Some(rec);
                }
            }
            // RTO timer (RFC 6298 §5.2/5.3)
            if self.sb.is_empty() {
                self.rto_at = None;
            } else {
                self.set_rto_timer(now);
            }
            if self.want_writable && self.sndbuf.free() > 0 {
                self.want_writable = false;
                self.push_event(Event::Writable);
            }
            // our FIN acknowledged?
            if self.fin_seq.is_some_and(|f| ack > f) {
                self.on_our_fin_acked(now);
            }
        } else if ack == self.snd_una && pure && !window_changed && outstanding_before > 0 {
            // duplicate ACK (RFC 5681 §2)
            self.dupacks += 1;
            let mss = self.snd_mss as u64;
            match self.recovery.as_mut() {
                Some(rec) if !self.sack_ok => {
                    let cap = outstanding_before.saturating_sub(mss);
                    rec.reno_sacked = (rec.reno_sacked + mss).min(cap);
                }
                _ => {}
            }
            if self.recovery.is_some() && !self.sack_ok {
                self.retransmit_overdue_first(now);
            }
        }

        // loss detection: RACK with SACK (`conn::rack`), duplicate ACKs
        // without
        if self.sack_ok {
            self.report_segments(now);
            self.rack_update_reo_wnd(dsack);
            if self.rack_detect_loss(now) {
                self.on_rack_loss(now);
            }
            self.ka_try_undo(now);
            self.cc_try_undo(now);
        } else if self.recovery.is_none()
            && !self.sb.is_empty()
            && self.dupacks >= DUP_THRESH
            && self.snd_una > self.recover_guard
        {
            self.enter_recovery(now);
            self.sb.mark_first_lost();
        }
        self.report_segments(now);
        self.tlp_on_ack(now, una_advanced);
    }

    /// RACK marked segments lost: a loss event unless one is already being
    /// handled (a recovery, or the window after an RTO, RFC 6582's
    /// `recover`); the marked segments go out next either way.
    fn on_rack_loss(&mut self, now: Instant) {
        if self.recovery.is_none() && self.snd_una > self.recover_guard {
            self.enter_recovery(now);
        }
        self.report_segments(now);
    }

    /// The RACK timer fired: segments that were inside the reordering
    /// window may have left it.
    pub(super) fn on_rack_timer(&mut self, now: Instant) {
        self.rack.timer = None;
        if !self.state.is_synchronized() || self.sb.is_empty() {
            return;
        }
        if self.rack_detect_loss(now) {
            self.on_rack_loss(now);
        }
    }

    /// Hands the scoreboard's per-segment fates (delivered / lost) to the
    /// controller (see `cc` module docs).
    ///
    /// Every timed delivery of one ACK gets the RTT of the newest segment
    /// it covers (Linux's `ca_rtt_us`): an older segment of the same ACK
    /// waited at the receiver for the newer one (delayed ACK), so its own
    /// `now − sent` measures the sender's spacing, not the path. Per-packet
    /// samples made PCC's RTT gradient see every delayed ACK as queueing
    /// growth; its starting phase then stopped at the initial rate (ka-sim,
    /// 10 Mbit/s / 100 ms, 40 ms delayed ACK: ~1 Mbit/s for 2.5 s).
    pub(super) fn report_segments(&mut self, now: Instant) {
        if self.sack_ok {
            self.rack_note_deliveries(now);
        }
        let newest = self.sb.newest_timed_delivery();
        for r in self.sb.drain_reports() {
            match r.fate {
                SegFate::Acked { rtt_valid } => {
                    let sample =
                        rtt_valid.then(|| now.saturating_duration_since(newest.unwrap_or(r.sent)));
                    self.cc.on_packet_acked(PacketAcked {
                        now,
                        sent: r.sent,
                        bytes: r.bytes as usize,
                        rtt_sample: sample,
                    });
                }
                SegFate::Lost => self.cc.on_packet_lost(PacketLost {
                    now,
                    sent: r.sent,
                    bytes: r.bytes as usize,
                }),
            }
        }
    }

    /// RFC 6582 §3.2 step 5 ("retransmit the first unacknowledged segment"
    /// on a partial ACK), applied only when that segment is overdue: sent
    /// at least one srtt ago and not yet retransmitted in this recovery.
    /// Without the age check, the ordinary ACKs of a window that was in
    /// flight when a *reordering* triggered recovery all look like partial
    /// ACKs and each would cause a spurious retransmission. Also used on
    /// duplicate ACKs during recovery, so a second loss in the window is
    /// repaired without waiting for the RTO.
    fn retransmit_overdue_first(&mut self, now: Instant) {
        let srtt = self.rtt.srtt_or_initial();
        let overdue = self.sb.first().is_some_and(|f| {
            !f.rexmit_in_recovery && !f.sacked && now.saturating_duration_since(f.sent) >= srtt
        });
        if overdue && self.sb.mark_first_lost() {
            self.force_retransmit = true;
        }
    }

    fn enter_recovery(&mut self, now: Instant) {
        // the recovery repairs the tail: no probe during it, and an
        // outstanding one is not judged afterwards
        self.tlp_reset();
        let flight = self.sb.outstanding().saturating_sub(self.sb.sacked_bytes()) as usize;
        let sent = self.sb.first().map_or(now, |f| f.sent);
        self.stats.fast_retransmits += 1;
        if self.ka.mode != super::Mode::Ka {
            // (a KA exit is undone by `ka_try_undo`)
            self.cc_undo_arm();
        }
        self.ka_on_loss(now, false);
        self.cc.on_congestion_event(CongestionEvent {
            now,
            sent,
            is_rto: false,
            bytes_in_flight: flight,
        });
        self.ecn_window_reduced();
        let reno = if self.sack_ok {
            0
        } else {
            u64::from(self.dupacks) * self.snd_mss as u64
        };
        self.recovery = Some(Recovery {
            recover: self.snd_max,
            reno_sacked: reno.min(self.sb.outstanding().saturating_sub(self.snd_mss as u64)),
        });
        self.force_retransmit = true;
    }

    /// Retransmission timer expiry.
    pub(super) fn on_rto(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynReceived => {
                self.syn_retries += 1;
                if self.syn_retries > self.cfg.syn_retries {
                    self.set_closed(CloseReason::TimedOut);
                    return;
                }
                self.rtt.backoff();
                self.syn_retransmitted = true;
                self.need_syn = true;
                return;
            }
            State::Closed | State::TimeWait => return,
            _ => {}
        }
        if self.sb.is_empty() {
            return;
        }
        self.retries += 1;
        if self.retries > self.cfg.max_retransmits {
            self.pending_rst = Some(PendingRst {
                seq: self.wire_snd(self.snd_nxt),
                ack: None,
            });
            self.close_after_rst = Some(CloseReason::TimedOut);
            return;
        }
        self.rtt.backoff();
        if self.snd_wnd == 0 && self.sb.outstanding() <= 1 {
            // zero-window probe timed out: resend it, no congestion reaction
            self.sb.mark_first_lost();
            self.report_segments(now);
            self.force_retransmit = true;
            self.set_rto_timer(now);
            return;
        }
        self.stats.rtos += 1;
        self.cc_undo = None;
        self.tlp_reset();
        let flight = self.sb.outstanding().saturating_sub(self.sb.sacked_bytes()) as usize;
        let sent = self.sb.first().map_or(now, |f| f.sent);
        self.ka_on_loss(now, true);
        self.cc.on_congestion_event(CongestionEvent {
            now,
            sent,
            is_rto: true,
            bytes_in_flight: flight,
        });
        self.ecn_window_reduced();
        if self.retries >= 2 {
            // the receiver may have reneged on SACKed data (RFC 2018 §8)
            self.sb.clear_sacks();
        }
        self.sb.mark_all_lost();
        self.rack.timer = None;
        self.report_segments(now);
        self.recovery = None;
        self.recover_guard = self.snd_max;
        self.dupacks = 0;
        self.force_retransmit = true;
        self.set_rto_timer(now);
    }

    /// Records `[l, r)` for a DSACK block (`conn::dsack`).
    fn note_dsack(&mut self, l: u64, r: u64) {
        self.pending_dsack.note(l, r);
    }

    fn on_data(&mut self, now: Instant, seq: u64, payload: &[u8]) {
        let limit = self
            .rcv_adv
            .max(self.rcv_nxt)
            .min(self.rcv_nxt + self.rcvbuf.free() as u64);
        let had_ooo = self.rcvbuf.has_ooo();
        let before = self.rcv_nxt;
        let r = self.rcvbuf.insert(&mut self.rcv_nxt, seq, payload, limit);
        // DSACK (RFC 2883): report the bytes that arrived twice, the part
        // below rcv_nxt or a whole duplicate of out-of-order data
        let end = seq + payload.len() as u64;
        if self.sack_ok {
            if seq < before {
                self.note_dsack(seq, end.min(before));
            } else if r.duplicate && end <= limit {
                self.note_dsack(seq, end);
            }
        }
        if r.in_order > 0 {
            self.stats.bytes_received += r.in_order as u64;
            if !self.readable_signalled {
                self.readable_signalled = true;
                self.push_event(Event::Readable);
            }
        }
        // ACK policy (RFC 5681 §4.2, RFC 1122): immediately for out-of-order
        // data, for filling holes and duplicates, and for the first data
        // after the handshake with `quick_ack_first_data` (ns-3's preset
        // delayed-ACK counter); else every `ack_every` full-sized segments
        // or when the delayed-ACK timer fires.
        let echo_now = self.cfg.ka.ack_fresh_signals && self.ka.echo_pending();
        let first = std::mem::take(&mut self.quick_ack_armed);
        if r.out_of_order || r.filled_hole || r.duplicate || had_ooo || echo_now || first {
            self.ack_now = true;
            return;
        }
        match self.cfg.delayed_ack {
            None => self.ack_now = true,
            Some(delay) => {
                // A coalesced segment counts as the full-sized segments it
                // stands for (so, like Linux with GRO, one ACK per
                // super-segment of two or more).
                self.unacked_segs += usize::from(self.rx_segments);
                if self.unacked_segs >= self.cfg.ack_every.max(1) {
                    self.ack_now = true;
                } else if self.delack_at.is_none() {
                    self.delack_at = Some(now + delay);
                }
            }
        }
    }

    fn maybe_consume_fin(&mut self, now: Instant) {
        if self.fin_received {
            return;
        }
        let Some(f) = self.peer_fin else {
            return;
        };
        if self.rcv_nxt != f {
            return;
        }
        self.rcv_nxt += 1;
        self.fin_received = true;
        self.ack_now = true;
        self.push_event(Event::PeerFin);
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 => {
                // our FIN not yet acknowledged (else we would be in FinWait2)
                self.state = State::Closing;
            }
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    fn on_our_fin_acked(&mut self, now: Instant) {
        match self.state {
            State::FinWait1 => {
                self.state = State::FinWait2;
                self.close_at = Some(now + self.cfg.fin_wait2_timeout);
            }
            State::Closing => self.enter_time_wait(now),
            State::LastAck => self.set_closed(CloseReason::Normal),
            _ => {}
        }
    }

    fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.rto_at = None;
        self.persist_at = None;
        self.close_at = Some(now + self.cfg.time_wait);
    }
}

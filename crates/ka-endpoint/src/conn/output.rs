//! Segment generation: SYN/SYN-ACK, retransmissions, new data (with RTT
//! indicators and pacing), FIN, pure ACKs, RST.

use super::tlp::TlpSend;
use super::{Connection, Mode, PendingRst, State, Transmit};
use crate::cc::PacketSent;
use ka_codec::rtt::{INDICATOR_BASE, INDICATOR_MAX};
use ka_codec::wire::checksum;
use ka_codec::wire::ecn::Ecn;
use ka_codec::wire::tcp::{
    ACK, CWR, FIN, HEADER_LEN, PSH, RST, SYN, SackBlocks, TcpOptions, TcpPacket, TcpRepr,
};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Largest burst the pacer allows after an idle or late poll in TCP mode.
const PACING_CREDIT: Duration = Duration::from_millis(1);

/// The same in KA mode: up to this much missed sending time at R is caught
/// up (see the crate docs, "Pacing").
const KA_PACING_CREDIT: Duration = Duration::from_millis(3);
/// An RTT indicator that falls due more than this before the next pacing
/// slot goes out at once; otherwise it waits for the slot.
const INDICATOR_PACER_JUMP: Duration = Duration::from_millis(10);

/// What goes into one segment.
struct Seg {
    flags: u8,
    seq: u64,
    /// Payload: `(first sequence number, length)` from the send buffer.
    data: Option<(u64, usize)>,
    options: TcpOptions,
    indicator: bool,
    /// Put the IPv4 RCP option on this packet (native RCP: SYN and data).
    rcp_option: bool,
    /// Put the IPv4 XCP option on this packet (XCP sender: data).
    xcp_option: bool,
}

impl Connection {
    /// Writes the next segment to send, if any, into `buf` (TCP header,
    /// options and payload, with checksum; no IP header). `buf` should hold
    /// at least `mtu − IP header` bytes; shorter buffers get shorter
    /// segments.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.touch(now);
        self.pacing_wait = None;
        if let Some(rst) = self.pending_rst.take() {
            let t = self.emit_rst(buf, rst);
            if let Some(reason) = self.close_after_rst.take() {
                self.set_closed(reason);
            }
            return t;
        }
        match self.state {
            State::Closed => return None,
            State::SynSent | State::SynReceived if self.need_syn => {
                return self.emit_syn(now, buf);
            }
            State::SynSent => return None,
            _ => {}
        }
        if self.state.is_synchronized()
            && let Some(t) = self.send_data(now, buf)
        {
            return Some(t);
        }
        if self.ack_now || self.delack_at.is_some_and(|t| t <= now) {
            let seg = Seg {
                flags: ACK,
                seq: self.snd_nxt,
                data: None,
                options: self.data_options(now),
                indicator: false,
                rcp_option: false,
                xcp_option: false,
            };
            return self.emit(now, buf, seg);
        }
        None
    }

    fn emit_syn(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let passive_reply = self.state == State::SynReceived;
        let mut o = TcpOptions {
            mss: Some(self.our_mss.min(65_535) as u16),
            ..TcpOptions::default()
        };
        if passive_reply {
            if self.cfg.window_scale && self.peer_ws.is_some() {
                o.window_scale = Some(self.rcv_shift);
            }
            o.sack_permitted = self.sack_ok;
            if self.ts_ok {
                o.timestamps = Some((self.ts_now(now), self.ts_recent));
            }
            o.ka_permitted = self.ka.enabled && !self.ka.rcp;
            o.rcp_permitted = self.native_rcp();
            o.rcp_echo = self.ka.rcp_echo();
            o.xcp_permitted = self.xcp_enabled();
        } else {
            if self.cfg.window_scale {
                o.window_scale = Some(self.rcv_shift);
            }
            o.sack_permitted = self.cfg.sack;
            if self.cfg.timestamps {
                o.timestamps = Some((self.ts_now(now), 0));
            }
            let rcp = super::offers_native_rcp(&self.cfg, self.remote.is_ipv6());
            o.ka_permitted = super::offers_ka(&self.cfg) && !rcp;
            o.rcp_permitted = rcp;
            o.xcp_permitted = super::xcp::offers_xcp(&self.cfg, self.remote.is_ipv6());
        }
        let seg = Seg {
            flags: self.ecn_syn_flags(passive_reply) | if passive_reply { SYN | ACK } else { SYN },
            seq: 0,
            data: None,
            rcp_option: !passive_reply && o.rcp_permitted,
            xcp_option: false,
            options: o,
            indicator: false,
        };
        let t = self.emit(now, buf, seg)?;
        self.need_syn = false;
        if self.syn_sent_at.is_none() || !self.syn_retransmitted {
            self.syn_sent_at = Some(now);
        }
        self.snd_nxt = self.snd_nxt.max(1);
        self.snd_max = self.snd_max.max(1);
        if self.rto_at.is_none() {
            self.set_rto_timer(now);
        }
        if self.syn_retransmitted {
            self.rto_at = Some(now + self.rtt.rto());
        }
        Some(t)
    }

    fn emit_rst(&mut self, buf: &mut [u8], rst: PendingRst) -> Option<Transmit> {
        let repr = TcpRepr {
            src_port: self.local.port(),
            dst_port: self.remote.port(),
            seq: rst.seq,
            ack: rst.ack.unwrap_or(0),
            flags: RST | if rst.ack.is_some() { ACK } else { 0 },
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
        };
        let len = repr.emit(buf, &[], self.pseudo(HEADER_LEN)).ok()?;
        self.stats.segments_sent += 1;
        Some(Transmit {
            len,
            dont_frag: self.dont_frag(false, self.ip_header_len + len),
            indicator: false,
            rcp_option: None,
            ecn: Ecn::NotEct,
            xcp_option: None,
        })
    }

    /// Options on every non-SYN segment: timestamps, KA-Rate / RCP-Echo /
    /// XCP-Echo, SACK.
    fn data_options(&self, now: Instant) -> TcpOptions {
        let mut o = TcpOptions::default();
        if self.ts_ok {
            o.timestamps = Some((self.ts_now(now), self.ts_recent));
        }
        o.ka_rate = self.ka.echo();
        o.rcp_echo = self.ka.rcp_echo();
        o.xcp_echo = self.xcp_echo();
        if self.sack_ok && (self.rcvbuf.has_ooo() || !self.pending_dsack.is_empty()) {
            let mut blocks = SackBlocks::new();
            let mut room = 4;
            let dsack = self.pending_dsack.front();
            if let Some((l, r)) = dsack {
                blocks.push(self.wire_rcv(l), self.wire_rcv(r));
                room -= 1;
            }
            for (l, r) in self.rcvbuf.sack_blocks(room, dsack) {
                blocks.push(self.wire_rcv(l), self.wire_rcv(r));
            }
            o.sack = blocks;
        }
        o
    }

    /// Whether the pacer lets a data segment go at `now`.
    fn pacer_ready(&self, now: Instant) -> bool {
        match (self.pacing_rate(), self.pacer_next) {
            (Some(_), Some(t)) => t <= now,
            _ => true,
        }
    }

    fn pacer_on_send(&mut self, now: Instant, wire_len: usize) {
        let Some(rate) = self.pacing_rate().filter(|r| *r > 0.0 && r.is_finite()) else {
            self.pacer_next = None;
            return;
        };
        let interval = Duration::from_secs_f64((wire_len as f64 / rate).min(60.0));
        let credit = if self.ka.mode == Mode::Ka {
            KA_PACING_CREDIT
        } else {
            PACING_CREDIT
        };
        let floor = now.checked_sub(credit).unwrap_or(now);
        let base = self.pacer_next.map_or(now, |t| t.max(floor));
        self.pacer_next = Some(base + interval);
    }

    /// Retransmission or new data, if the windows and the pacer allow.
    fn send_data(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        // 0. a tail loss probe that resends the highest segment (`conn::tlp`)
        let mut tlp = self.tlp.pending;
        if tlp == Some(TlpSend::NewData) && self.sndbuf.end_seq() <= self.snd_nxt {
            tlp = Some(TlpSend::Last);
        }
        if tlp == Some(TlpSend::Last) && self.sb.next_lost().is_none() {
            let idx = self.sb.len().checked_sub(1)?;
            let end = self.sb.get(idx)?.end;
            let t = self.retransmit(now, buf, idx, true)?;
            self.tlp_sent(now, end, true);
            return Some(t);
        }
        // 1. retransmissions first (RFC 6675 NextSeg rule 1)
        if let Some(idx) = self.sb.next_lost() {
            let force = self.force_retransmit;
            return self.retransmit(now, buf, idx, force);
        }
        self.send_new(now, buf, tlp == Some(TlpSend::NewData))
    }

    /// Resends scoreboard entry `idx` if cwnd (unless `force`) and the
    /// pacer allow.
    fn retransmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        idx: usize,
        force: bool,
    ) -> Option<Transmit> {
        {
            let seg = self.sb.get(idx)?.clone();
            let len = seg.len();
            if !force && self.pipe() + len > self.cwnd() as u64 {
                return None;
            }
            if !self.pacer_ready(now) {
                self.pacing_wait = self.pacer_next;
                return None;
            }
            let data_len = (len - u64::from(seg.fin)) as usize;
            let mut flags = ACK;
            if seg.fin {
                flags |= FIN;
            }
            let s = Seg {
                flags,
                seq: seg.start,
                data: (data_len > 0).then_some((seg.start, data_len)),
                options: self.data_options(now),
                indicator: false,
                rcp_option: data_len > 0 && self.native_rcp(),
                xcp_option: data_len > 0 && self.xcp.sender,
            };
            let t = self.emit(now, buf, s)?;
            self.sb.on_retransmit(idx, now, self.recovery.is_some());
            if data_len > 0 {
                self.ka_on_data_sent(now, false);
            }
            self.force_retransmit = false;
            self.stats.retransmits += 1;
            self.stats.bytes_retransmitted += data_len as u64;
            if self.rto_at.is_none() {
                self.set_rto_timer(now);
            }
            if data_len > 0 {
                let wire = self.ip_header_len + t.len;
                self.cc.on_packet_sent(PacketSent {
                    now,
                    bytes: len as usize,
                    wire_bytes: wire,
                    rtt: &self.rtt,
                });
            }
            self.pacer_on_send(now, self.ip_header_len + t.len);
            Some(t)
        }
    }

    /// New data, then FIN (rule 2); `tlp`: this segment is a tail loss
    /// probe, sent whatever cwnd says.
    fn send_new(&mut self, now: Instant, buf: &mut [u8], tlp: bool) -> Option<Transmit> {
        let data_end = self.sndbuf.end_seq();
        let unsent = data_end.saturating_sub(self.snd_nxt);
        let fin_pending = self.fin_queued && self.fin_seq.is_none();
        if unsent == 0 && !fin_pending {
            return None;
        }
        let options = self.data_options(now);
        let hl = HEADER_LEN + options.encoded_len();
        let max_payload = (self.snd_mss + HEADER_LEN)
            .saturating_sub(hl)
            .min(buf.len().saturating_sub(hl))
            .max(1);
        let mut len = (unsent as usize).min(max_payload);
        let mut indicator = false;
        if let (true, Some(total)) = (len > 0, self.indicator_due(now)) {
            let p = total.saturating_sub(self.ip_header_len + hl);
            if p > 0 && len >= p && p <= max_payload {
                len = p;
                indicator = true;
            }
        }
        let mut probe = false;
        if len > 0 {
            let room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt) as usize;
            if len > room {
                if room == 0 && self.persist_probe {
                    len = 1;
                    probe = true;
                } else if room > 0 && (room as u64 >= self.max_snd_wnd / 2 || self.sb.is_empty()) {
                    len = room;
                } else {
                    if self.snd_wnd == 0 && self.sb.is_empty() && self.persist_at.is_none() {
                        self.persist_at = Some(now + self.rtt.rto());
                    }
                    return None;
                }
                indicator = false;
            }
            if !indicator && !probe && self.remote.is_ipv6() {
                // IPv6 has no DF: routers take any whole packet of total
                // length 600..=611 for an RTT indicator, so other data
                // segments avoid those lengths.
                let total = self.ip_header_len + hl + len;
                if (INDICATOR_BASE..=INDICATOR_MAX).contains(&total) {
                    len = (INDICATOR_BASE - 1).saturating_sub(self.ip_header_len + hl);
                }
            }
            if !probe && !tlp && self.pipe() + len as u64 > self.cwnd() as u64 {
                if self.ka_window_limit_counts(now) {
                    self.stats.ka_cwnd_limited += 1;
                }
                return None;
            }
            // An RTT indicator goes out when due even between pacing slots
            // if the next slot is far (it is still charged to the pacer),
            // so indicators keep their 100 ms rhythm at low rates where
            // packets are far apart. A near slot is waited for: connections
            // whose indicators fall due together (flows started in step)
            // would otherwise put one burst per 100 ms into the queue.
            let jump = indicator
                && self
                    .pacer_next
                    .is_some_and(|t| t.saturating_duration_since(now) > INDICATOR_PACER_JUMP);
            if !jump && !self.pacer_ready(now) {
                self.pacing_wait = self.pacer_next;
                return None;
            }
        }
        let fin = fin_pending && self.snd_nxt + len as u64 == data_end;
        if len == 0 && !fin {
            return None;
        }
        let mut flags = ACK;
        if fin {
            flags |= FIN;
        }
        if len > 0 && self.snd_nxt + len as u64 == data_end {
            flags |= PSH;
        }
        let new_data = len > 0 && !probe;
        let cwr = new_data && self.ecn_cwr_due();
        if cwr {
            flags |= CWR;
        }
        let seq = self.snd_nxt;
        let s = Seg {
            flags,
            seq,
            data: (len > 0).then_some((seq, len)),
            options,
            indicator,
            rcp_option: len > 0 && self.native_rcp(),
            xcp_option: len > 0 && self.xcp.sender,
        };
        let mut t = self.emit(now, buf, s)?;
        if new_data {
            t.ecn = self.ecn_on_new_data(cwr);
        }
        let end = seq + len as u64 + u64::from(fin);
        self.sb.push(super::send::TxSeg {
            start: seq,
            end,
            fin,
            sent: now,
            tx_count: 1,
            sacked: false,
            lost: false,
            rexmit_in_recovery: false,
        });
        if fin {
            self.fin_seq = Some(seq + len as u64);
        }
        self.snd_nxt = end;
        self.snd_max = self.snd_max.max(end);
        self.stats.bytes_sent += len as u64;
        if probe {
            self.persist_probe = false;
        }
        if indicator {
            self.indicator_sent(now);
        }
        if len > 0 {
            self.ka_on_data_sent(now, indicator);
        }
        if self.rto_at.is_none() {
            self.set_rto_timer(now);
        }
        if len > 0 {
            let wire = self.ip_header_len + t.len;
            self.cc.on_packet_sent(PacketSent {
                now,
                bytes: (end - seq) as usize,
                wire_bytes: wire,
                rtt: &self.rtt,
            });
            self.pacer_on_send(now, wire);
        }
        if tlp {
            self.tlp_sent(now, end, false);
        } else if self.cfg.tlp {
            // RFC 8985 §7.2: (re)start the probe timer after new data
            self.tlp_arm(now);
        }
        Some(t)
    }

    /// The window field to send (and the right edge it announces). Receiver
    /// SWS avoidance (RFC 1122 §4.2.3.3): the right edge only moves when it
    /// can move by `min(buffer/2, MSS)`; it never moves left. The scaled
    /// field is rounded down, so the peer never sends beyond our buffer.
    fn advertise(&mut self) -> u16 {
        let right = self.rcv_nxt + self.rcvbuf.free() as u64;
        let threshold = (self.rcvbuf.cap() as u64 / 2).min(self.our_mss as u64);
        if right >= self.rcv_adv + threshold || self.rcv_adv < self.rcv_nxt {
            self.rcv_adv = self.rcv_adv.max(right);
        }
        let wnd = self.rcv_adv.saturating_sub(self.rcv_nxt);
        (wnd >> self.rcv_shift).min(65_535) as u16
    }

    fn pseudo(&self, tcp_len: usize) -> u32 {
        match (self.local.ip(), self.remote.ip()) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                checksum::pseudo_v4(a.octets(), b.octets(), 6, tcp_len as u32)
            }
            (a, b) => checksum::pseudo_v6(v6(a), v6(b), 6, tcp_len as u32),
        }
    }

    fn dont_frag(&self, indicator: bool, ip_total: usize) -> bool {
        if indicator {
            return true;
        }
        let ka = self.ka.enabled || (self.ka.offered && !self.state.is_synchronized());
        if ka {
            return false;
        }
        !(INDICATOR_BASE..=INDICATOR_MAX).contains(&ip_total)
    }

    /// Whether the device completes this connection's TCP checksums (set by
    /// the stack from `StackConfig::checksum_offload`).
    pub(crate) fn set_checksum_offload(&mut self, on: bool) {
        self.checksum_offload = on;
    }

    /// Builds and checksums one segment into `buf` (only the pseudo-header's
    /// share of the checksum with `StackConfig::checksum_offload`).
    fn emit(&mut self, now: Instant, buf: &mut [u8], seg: Seg) -> Option<Transmit> {
        let has_ack = seg.flags & ACK != 0;
        let window = if seg.flags & SYN != 0 {
            let w = self.rcvbuf.free().min(65_535);
            self.rcv_adv = self.rcv_adv.max(self.rcv_nxt + w as u64);
            w as u16
        } else {
            self.advertise()
        };
        let repr = TcpRepr {
            src_port: self.local.port(),
            dst_port: self.remote.port(),
            seq: self.wire_snd(seg.seq),
            ack: if has_ack {
                self.wire_rcv(self.rcv_nxt)
            } else {
                0
            },
            flags: seg.flags | self.ecn_echo_flag(seg.flags),
            window,
            urgent: 0,
            options: seg.options,
        };
        let hl = repr.header_len();
        let data_len = seg.data.map_or(0, |(_, n)| n);
        let total = hl + data_len;
        let out = buf.get_mut(..total)?;
        if let Some((from, n)) = seg.data {
            let dst = out.get_mut(hl..)?;
            if self.sndbuf.copy(from, dst) != n {
                return None;
            }
        }
        repr.emit(out.get_mut(..hl)?, &[], 0).ok()?;
        if self.checksum_offload {
            // the device completes it (`StackConfig::checksum_offload`)
            let partial = !checksum::finish(self.pseudo(total));
            out.get_mut(16..18)?.copy_from_slice(&partial.to_be_bytes());
        } else {
            TcpPacket::new_unchecked(&mut *out).fill_checksum(self.pseudo(total));
        }
        if let Some(rate) = repr.options.ka_rate {
            self.ka.echoed_count = Some(rate.count);
        }
        if repr.options.rcp_echo.is_some() {
            self.ka.rcp_fresh = false;
        }
        if repr.options.xcp_echo.is_some() {
            self.xcp_echo_sent();
        }
        if has_ack {
            // one DSACK range per ACK: another waiting one is owed at once
            let more_dsacks = self.pending_dsack.pop_front();
            self.last_ack_sent = self.rcv_nxt;
            self.ack_now = more_dsacks;
            self.delack_at = None;
            self.unacked_segs = 0;
        }
        self.stats.segments_sent += 1;
        let _ = now;
        Some(Transmit {
            len: total,
            dont_frag: self.dont_frag(seg.indicator, self.ip_header_len + total),
            indicator: seg.indicator,
            rcp_option: seg.rcp_option.then(|| self.rcp_ip_option()),
            ecn: Ecn::NotEct,
            xcp_option: seg.xcp_option.then(|| self.xcp_ip_option()).flatten(),
        })
    }
}

fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
    }
}

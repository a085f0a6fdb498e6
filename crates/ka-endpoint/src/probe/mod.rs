//! The path probe (DESIGN §6.7): does Kick-Ass survive the path to a KA
//! receiver?
//!
//! A [`Prober`] is a sans-IO, deliberately minimal TCP client over IPv4: it
//! opens one connection with KA-Permitted to a KA receiver (a `ka-endpoint
//! recv`), then sends one probe segment at a time, each starting at the
//! first unacknowledged byte (so a lost probe leaves no hole), and judges
//! it by the receiver's ACK. The receiver's KA-Rate echo (DESIGN §2.3) is
//! the report: its count grows by one for every leading fragment that
//! reaches the receiver, and its code is that fragment's `L/8`. So
//!
//! * **path MTU** — DF segments: the largest total length acknowledged
//!   (tries the local MTU, the MTU an ICMP "fragmentation needed" names,
//!   576, then bisects to 8 bytes);
//! * **DF respected** — a DF segment larger than the path MTU that is
//!   acknowledged with a new leading fragment was fragmented on the way;
//! * **RTT indicators** — DF segments of total length 600, 605 and 611
//!   (DESIGN §2.2) must be acknowledged whole;
//! * **fragments and codes** — full-size (path-MTU) segments the prober
//!   splits itself like a KA router does (leading fragment `L`, the rest
//!   after it) for a few `L` across the range: acknowledged with the echo
//!   `L` = preserved, with another code = re-fragmented, with no new count
//!   = reassembled (arrived whole), not acknowledged = dropped.
//!
//! Drive it like [`crate::Stack`]: feed every IPv4 packet for the prober's
//! address to [`Prober::handle_packet`], call [`Prober::handle_timeout`]
//! at [`Prober::poll_timeout`], write out [`Prober::poll_transmit`] until
//! `None`, stop when [`Prober::is_done`], then read [`Prober::report`].

mod frag;
mod report;

use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::checksum::pseudo_v4;
use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_TCP};
use ka_codec::wire::tcp::{self, TcpOptions, TcpPacket, TcpRepr};

pub use frag::{frag_needed_mtu, split_ipv4};
pub use report::{CodeProbe, Finding, Outcome, Report, Signal, outcome_word};

/// The leading-fragment lengths sampled, besides the largest one a
/// path-MTU packet can carry: the smallest code, codes around 1.6 Mbit/s,
/// 650 kB/s… (DESIGN §2.1: 24 ↔ 120 kbit/s, 880 ↔ 96 Mbit/s, 1200 ↔
/// 1.1 Gbit/s).
pub const SAMPLED_LENGTHS: [u16; 5] = [24, 200, 504, 880, 1200];

/// Total lengths of the RTT-indicator probes (k = 0, 5, 11 of DESIGN §2.2).
pub const INDICATOR_SIZES: [u16; 3] = [600, 605, 611];

/// The smallest datagram every IPv4 host must accept (RFC 791): the floor
/// of the path-MTU search.
pub const MIN_MTU: u16 = 576;

/// How a [`Prober`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeConfig {
    /// The prober's address and source port.
    pub local: SocketAddrV4,
    /// The KA receiver.
    pub remote: SocketAddrV4,
    /// The prober's link MTU: the largest packet it sends.
    pub mtu: u16,
    /// The whole probe, closing included, takes at most this long.
    pub timeout: Duration,
    /// The initial sequence number.
    pub isn: u32,
    /// Attempts per probe packet before it counts as lost (at least 1).
    pub attempts: u32,
}

impl ProbeConfig {
    /// A probe from `local` to `remote` with a 1500-byte MTU, 10 s, two
    /// attempts per packet.
    pub fn new(local: SocketAddrV4, remote: SocketAddrV4, isn: u32) -> Self {
        ProbeConfig {
            local,
            remote,
            mtu: 1500,
            timeout: Duration::from_secs(10),
            isn,
            attempts: 2,
        }
    }
}

/// What a probe packet is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Syn,
    Df(u16),
    Indicator(u16),
    Code(u16),
    Fin,
}

/// The probe packet in flight.
#[derive(Debug, Clone, Copy)]
struct Pending {
    kind: Kind,
    /// Sequence number just past it.
    end: u32,
    attempt: u32,
    due: Instant,
    /// The echo count before it was sent.
    count_before: Option<u8>,
}

/// The sans-IO path prober (module docs).
#[derive(Debug)]
pub struct Prober {
    cfg: ProbeConfig,
    start: Instant,
    deadline: Instant,
    out: VecDeque<Vec<u8>>,
    ident: u16,
    snd_una: u32,
    /// Just past the probe in flight: a lost probe's bytes are sent again
    /// by the next one, so this goes back to `snd_una` at every new probe.
    snd_max: u32,
    /// Just past the highest byte ever sent: ACKs up to here are
    /// acceptable (a probe counted lost may still arrive late).
    snd_high: u32,
    rcv_nxt: u32,
    /// The latest KA-Rate echo: (code byte, count).
    echo: Option<(u8, u8)>,
    pending: Option<Pending>,
    syn_sent_at: Option<Instant>,
    /// Path-MTU search: largest DF size acknowledged whole, smallest not.
    mtu_ok: Option<u16>,
    mtu_bad: Option<u16>,
    next_indicator: usize,
    code_plan: Vec<u16>,
    next_code: usize,
    peer_fin: bool,
    /// Our FIN is acknowledged; wait for the receiver's until then.
    fin_wait: Option<Instant>,
    done: bool,
    report: Report,
}

impl Prober {
    /// A prober that starts (sends its SYN) at `now`.
    pub fn new(cfg: ProbeConfig, now: Instant) -> Self {
        let report = Report {
            local: cfg.local,
            remote: cfg.remote,
            connected: false,
            ka_negotiated: false,
            rtt: None,
            reset: false,
            local_mtu: cfg.mtu,
            df_probes: Vec::new(),
            icmp_mtu: None,
            indicators: Vec::new(),
            codes: Vec::new(),
            timed_out: false,
            closed: false,
            packets_sent: 0,
            elapsed: Duration::ZERO,
        };
        let mut p = Prober {
            deadline: now + cfg.timeout,
            start: now,
            out: VecDeque::new(),
            ident: (cfg.isn >> 16) as u16,
            snd_una: cfg.isn,
            snd_max: cfg.isn,
            snd_high: cfg.isn,
            rcv_nxt: 0,
            echo: None,
            pending: None,
            syn_sent_at: None,
            mtu_ok: None,
            mtu_bad: None,
            next_indicator: 0,
            code_plan: Vec::new(),
            next_code: 0,
            peer_fin: false,
            fin_wait: None,
            done: false,
            report,
            cfg,
        };
        p.send(now, Kind::Syn);
        p
    }

    /// The prober has finished (its report is final).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// What the probe found so far (final once [`Prober::is_done`]).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The next packet to write to the wire.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    /// When [`Prober::handle_timeout`] must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.done {
            return None;
        }
        let next = self
            .pending
            .map_or(self.deadline, |p| p.due.min(self.deadline));
        Some(self.fin_wait.map_or(next, |w| w.min(next)))
    }

    /// How long to wait for an ACK: two RTTs plus the receiver's
    /// delayed-ACK timer (40 ms, DESIGN §6.1) and scheduling slack.
    fn wait(&self) -> Duration {
        let rtt = self.report.rtt.unwrap_or(Duration::from_millis(900));
        (2 * rtt + Duration::from_millis(100)).min(Duration::from_secs(2))
    }

    /// Time reserved at the end for closing the connection.
    fn close_budget(&self) -> Duration {
        (self.cfg.timeout / 10).min(Duration::from_secs(1))
    }

    /// Handles a timer.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.done {
            return;
        }
        if now >= self.deadline {
            if self.pending.is_some_and(|p| p.kind != Kind::Fin) {
                self.report.timed_out = true;
            }
            self.finish(now, true);
            return;
        }
        if self.fin_wait.is_some_and(|w| now >= w) {
            self.finish(now, false);
            return;
        }
        let Some(p) = self.pending else {
            return;
        };
        if now < p.due {
            return;
        }
        if p.attempt < self.cfg.attempts.max(1) && !self.past_probing(now, p.kind) {
            self.resend(now, p);
        } else {
            self.pending = None;
            self.complete(now, p.kind, Outcome::Lost);
        }
    }

    /// Whether probing time (the budget less the closing reserve) is over;
    /// the SYN and FIN run to the hard deadline.
    fn past_probing(&self, now: Instant, kind: Kind) -> bool {
        !matches!(kind, Kind::Syn | Kind::Fin) && now + self.close_budget() >= self.deadline
    }

    /// Handles one IPv4 packet addressed to the prober (anything else,
    /// and anything malformed, is ignored).
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) {
        if self.done {
            return;
        }
        let (local, remote) = (self.cfg.local.ip().octets(), self.cfg.remote.ip().octets());
        if let Some(mtu) = frag_needed_mtu(packet, remote) {
            if mtu > 0 {
                self.report.icmp_mtu = Some(self.report.icmp_mtu.map_or(mtu, |m| m.min(mtu)));
            }
            // The DF probe in flight is too big: no need to wait for it.
            if let Some(
                p @ Pending {
                    kind: Kind::Df(_), ..
                },
            ) = self.pending
            {
                self.pending = None;
                self.complete(now, p.kind, Outcome::Lost);
            }
            return;
        }
        let Ok(ip) = Ipv4Packet::new_checked(packet) else {
            return;
        };
        if ip.protocol() != PROTO_TCP
            || ip.is_fragment()
            || ip.src_addr() != remote
            || ip.dst_addr() != local
            || !ip.verify_checksum()
        {
            return;
        }
        let Ok(seg) = TcpPacket::new_checked(ip.payload()) else {
            return;
        };
        let len = u32::try_from(ip.payload().len()).unwrap_or(u32::MAX);
        if !seg.verify_checksum(pseudo_v4(remote, local, PROTO_TCP, len))
            || seg.src_port() != self.cfg.remote.port()
            || seg.dst_port() != self.cfg.local.port()
        {
            return;
        }
        let Ok(repr) = TcpRepr::parse(&seg) else {
            return;
        };
        let data_len = ip.payload().len().saturating_sub(seg.header_len());
        self.on_segment(now, &repr, data_len);
    }

    fn on_segment(&mut self, now: Instant, t: &TcpRepr, data_len: usize) {
        if t.flags & tcp::RST != 0 {
            // RFC 5961: only a RST at the expected sequence number counts.
            if self.report.connected && t.seq != self.rcv_nxt {
                return;
            }
            if self.report.connected || t.ack == self.snd_max {
                self.report.reset = true;
                self.finish(now, false);
            }
            return;
        }
        if t.flags & tcp::ACK == 0 {
            return;
        }
        if !self.report.connected {
            if t.flags & tcp::SYN == 0 || t.ack != self.snd_max {
                return;
            }
            self.report.connected = true;
            self.report.ka_negotiated = t.options.ka_permitted;
            self.report.rtt = self.syn_sent_at.map(|s| now.saturating_duration_since(s));
            self.rcv_nxt = t.seq.wrapping_add(1);
            self.snd_una = t.ack;
            self.pending = None;
            self.push_ack();
            self.next_step(now);
            return;
        }
        if let Some(r) = t.options.ka_rate {
            self.echo = Some((r.code, r.count));
        }
        if data_len > 0 || t.flags & tcp::FIN != 0 {
            let data = u32::try_from(data_len).unwrap_or(0);
            if t.seq == self.rcv_nxt {
                self.rcv_nxt = self.rcv_nxt.wrapping_add(data);
                if t.flags & tcp::FIN != 0 {
                    self.rcv_nxt = self.rcv_nxt.wrapping_add(1);
                    self.peer_fin = true;
                }
            }
            self.push_ack();
        }
        // An acceptable ACK: snd_una < ack ≤ snd_high (modulo 2^32).
        let advance = t.ack.wrapping_sub(self.snd_una);
        if advance != 0 && advance <= self.snd_high.wrapping_sub(self.snd_una) {
            self.snd_una = t.ack;
            if self.snd_una.wrapping_sub(self.snd_max) as i32 > 0 {
                self.snd_max = self.snd_una;
            }
        }
        let Some(p) = self.pending else {
            return;
        };
        if self.snd_una.wrapping_sub(p.end) as i32 >= 0 {
            self.pending = None;
            let fresh = match (p.count_before, self.echo) {
                (before, Some((code, count))) if before != Some(count) => Some(u16::from(code) * 8),
                _ => None,
            };
            let outcome = match fresh {
                Some(l) => Outcome::Fragmented(Some(l)),
                // Without KA no echo tells whether it arrived in pieces.
                None if !self.report.ka_negotiated && matches!(p.kind, Kind::Code(_)) => {
                    Outcome::Fragmented(None)
                }
                None => Outcome::Whole,
            };
            self.complete(now, p.kind, outcome);
        }
        if self.peer_fin && self.pending.is_none() && self.snd_una == self.snd_max {
            self.finish(now, false);
        }
    }

    /// Records what became of a probe packet and moves on.
    fn complete(&mut self, now: Instant, kind: Kind, outcome: Outcome) {
        match kind {
            Kind::Syn => {
                // No SYN-ACK after every attempt.
                self.finish(now, false);
                return;
            }
            Kind::Df(size) => {
                self.report.df_probes.push((size, outcome));
                if outcome == Outcome::Whole {
                    self.mtu_ok = Some(self.mtu_ok.map_or(size, |m| m.max(size)));
                } else {
                    self.mtu_bad = Some(self.mtu_bad.map_or(size, |m| m.min(size)));
                }
            }
            Kind::Indicator(size) => self.report.indicators.push((size, outcome)),
            Kind::Code(len) => self.report.codes.push(CodeProbe { len, outcome }),
            Kind::Fin => {
                if outcome == Outcome::Lost {
                    self.finish(now, true);
                } else if self.peer_fin {
                    self.finish(now, false);
                } else {
                    // Our FIN is acknowledged; the receiver's follows once
                    // its application has read to the end.
                    self.fin_wait = Some((now + self.wait()).min(self.deadline));
                }
                return;
            }
        }
        self.next_step(now);
    }

    /// Sends the next probe packet, or the FIN when probing is over.
    fn next_step(&mut self, now: Instant) {
        if self.past_probing(now, Kind::Df(0)) {
            self.report.timed_out = true;
            self.send(now, Kind::Fin);
            return;
        }
        if let Some(size) = self.next_df_size() {
            self.send(now, Kind::Df(size));
        } else if let Some(&size) = INDICATOR_SIZES.get(self.next_indicator) {
            self.next_indicator += 1;
            self.send(now, Kind::Indicator(size));
        } else if let Some(len) = self.next_code_len() {
            self.send(now, Kind::Code(len));
        } else {
            self.send(now, Kind::Fin);
        }
    }

    /// The next size of the path-MTU search, `None` once it is settled.
    fn next_df_size(&self) -> Option<u16> {
        let local = self.cfg.mtu;
        let tried = |s: u16| self.report.df_probes.iter().any(|&(t, _)| t == s);
        let ok = self.mtu_ok;
        let bad = self.mtu_bad;
        if !tried(local) {
            return Some(local);
        }
        if ok == Some(local) {
            return None;
        }
        let hi = bad.unwrap_or(local);
        // an ICMP hint below the failing size and above what passed
        if let Some(m) = self.report.icmp_mtu
            && m >= MIN_MTU
            && m < hi
            && ok.is_none_or(|o| m > o)
            && !tried(m)
        {
            return Some(m);
        }
        let Some(lo) = ok else {
            return (!tried(MIN_MTU) && MIN_MTU < hi).then_some(MIN_MTU);
        };
        if hi.saturating_sub(lo) <= 8 {
            return None;
        }
        let mid = not_an_indicator(lo + (hi - lo) / 2);
        (mid > lo && mid < hi && !tried(mid)).then_some(mid)
    }

    /// The next leading-fragment length to try.
    fn next_code_len(&mut self) -> Option<u16> {
        if self.code_plan.is_empty() && self.next_code == 0 {
            // Full-size datagrams, like the packets a KA router splits.
            let payload = self.datagram_size().saturating_sub(20);
            let largest = payload.saturating_sub(1) / 8 * 8;
            self.code_plan = SAMPLED_LENGTHS
                .iter()
                .copied()
                .chain([largest])
                .filter(|&l| l >= 24 && l < payload && l <= 1480)
                .collect();
            self.code_plan.dedup();
        }
        let l = self.code_plan.get(self.next_code).copied();
        self.next_code += 1;
        l
    }

    /// The size of a fragmented probe's datagram: the path MTU (the
    /// search's floor when none was found).
    fn datagram_size(&self) -> u16 {
        self.mtu_ok.unwrap_or(MIN_MTU)
    }

    fn send(&mut self, now: Instant, kind: Kind) {
        let p = Pending {
            kind,
            end: self.snd_una,
            attempt: 0,
            due: now,
            count_before: self.echo.map(|(_, c)| c),
        };
        if kind == Kind::Syn {
            self.syn_sent_at = Some(now);
        }
        self.resend(now, p);
    }

    /// (Re)sends the probe packet `p` from `snd_una`.
    fn resend(&mut self, now: Instant, mut p: Pending) {
        let seq = self.snd_una;
        let mut flags = tcp::ACK;
        let mut options = TcpOptions::default();
        let (total, df, lead) = match p.kind {
            Kind::Syn => {
                flags = tcp::SYN;
                options.ka_permitted = true;
                options.mss = Some(self.cfg.mtu.saturating_sub(40));
                (0, false, None)
            }
            Kind::Df(s) | Kind::Indicator(s) => (s, true, None),
            Kind::Code(l) => (self.datagram_size(), false, Some(usize::from(l))),
            Kind::Fin => {
                flags |= tcp::FIN;
                (0, false, None)
            }
        };
        let hdr = if p.kind == Kind::Syn { 28 } else { 20 };
        let data_len = usize::from(total).saturating_sub(20 + hdr);
        let data = vec![0x4B; data_len];
        let tcp = TcpRepr {
            src_port: self.cfg.local.port(),
            dst_port: self.cfg.remote.port(),
            seq,
            ack: if self.report.connected {
                self.rcv_nxt
            } else {
                0
            },
            flags: if data_len > 0 {
                flags | tcp::PSH
            } else {
                flags
            },
            window: u16::MAX,
            urgent: 0,
            options,
        };
        self.ident = self.ident.wrapping_add(1);
        let seg = TcpSegment {
            ttl: 64,
            ident: self.ident,
            dont_frag: df,
            payload: &data,
            ..TcpSegment::new(
                Addrs::V4(self.cfg.local.ip().octets(), self.cfg.remote.ip().octets()),
                tcp,
            )
        };
        let Ok(pkt) = seg.to_vec() else {
            return;
        };
        let syn_fin = u32::from(matches!(p.kind, Kind::Syn | Kind::Fin));
        p.end = seq
            .wrapping_add(u32::try_from(data_len).unwrap_or(0))
            .wrapping_add(syn_fin);
        self.snd_max = p.end;
        if p.end.wrapping_sub(self.snd_high) as i32 > 0 {
            self.snd_high = p.end;
        }
        match lead.and_then(|l| split_ipv4(&pkt, l)) {
            Some((a, b)) => {
                self.out.push_back(a);
                self.out.push_back(b);
                self.report.packets_sent += 2;
            }
            None => {
                self.out.push_back(pkt);
                self.report.packets_sent += 1;
            }
        }
        p.attempt += 1;
        p.due = now
            + if p.kind == Kind::Syn {
                Duration::from_secs(1)
            } else {
                self.wait()
            };
        self.pending = Some(p);
    }

    /// Queues a pure ACK of what the receiver sent.
    fn push_ack(&mut self) {
        let tcp = TcpRepr::new(
            self.cfg.local.port(),
            self.cfg.remote.port(),
            self.snd_max,
            self.rcv_nxt,
            tcp::ACK,
            u16::MAX,
        );
        self.ident = self.ident.wrapping_add(1);
        let seg = TcpSegment {
            ttl: 64,
            ident: self.ident,
            ..TcpSegment::new(
                Addrs::V4(self.cfg.local.ip().octets(), self.cfg.remote.ip().octets()),
                tcp,
            )
        };
        if let Ok(pkt) = seg.to_vec() {
            self.out.push_back(pkt);
            self.report.packets_sent += 1;
        }
    }

    /// Ends the probe; `abort` sends a RST so the receiver does not wait.
    fn finish(&mut self, now: Instant, abort: bool) {
        if self.done {
            return;
        }
        if abort && self.report.connected && !self.report.reset {
            let tcp = TcpRepr::new(
                self.cfg.local.port(),
                self.cfg.remote.port(),
                self.snd_max,
                self.rcv_nxt,
                tcp::RST | tcp::ACK,
                0,
            );
            let seg = TcpSegment::new(
                Addrs::V4(self.cfg.local.ip().octets(), self.cfg.remote.ip().octets()),
                tcp,
            );
            if let Ok(pkt) = seg.to_vec() {
                self.out.push_back(pkt);
                self.report.packets_sent += 1;
            }
        }
        self.report.closed = self.peer_fin && self.snd_una == self.snd_max && !abort;
        self.report.elapsed = now.saturating_duration_since(self.start);
        self.pending = None;
        self.done = true;
    }
}

/// `size`, moved off the RTT-indicator lengths 600–611 (a DF packet of
/// such a length would be taken for an indicator, DESIGN §2.2).
fn not_an_indicator(size: u16) -> u16 {
    if (600..=611).contains(&size) {
        612
    } else {
        size
    }
}

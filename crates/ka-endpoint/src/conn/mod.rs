//! One TCP connection as a sans-IO state machine (DESIGN §6.1).
//!
//! The [`Stack`](crate::Stack) owns connections, parses packets and hands
//! each connection its segments ([`Connection::handle_segment`]) and the
//! lengths of leading IP fragments that belonged to it
//! ([`Connection::on_leading_fragment`]). Outgoing segments come from
//! [`Connection::poll_transmit`]; the stack puts the IP header in front.
//!
//! Driving contract (the same as quinn-proto's): after every call that may
//! produce output (`handle_segment`, `handle_timeout`, `write`, `read`,
//! `close`, `abort`), call `poll_transmit` until it returns `None`; sleep
//! until `poll_timeout()`, then call `handle_timeout`.
//!
//! What is implemented (RFC numbers): three-way handshake incl. simultaneous
//! open (793/9293), MSS, window scale and timestamps (7323: RTTM for
//! retransmitted segments, PAWS), SACK (2018) with an RFC 6675 scoreboard
//! and DSACK (2883), RACK time-based loss detection (8985 §6.2, see
//! `rack`; duplicate-ACK counting stands in when SACK is off) and, when
//! `TcpConfig::tlp` is set, tail loss probes (8985 §7, `tlp`), NewReno
//! fast retransmit / recovery (5681, 6582), RTO with Karn and
//! backoff (6298), zero-window probes, delayed ACKs, receiver and sender SWS
//! avoidance (1122), FIN/TIME-WAIT, RST, and the RFC 5961 defences (RST
//! only at `rcv_nxt`, challenge ACKs for in-window RSTs and for SYNs in
//! synchronised states, ACK acceptability), ECN (3168; the choices are in
//! the docs of the private `conn::ecn` module, summarised in the crate
//! docs). Not implemented: urgent data (ignored), keep-alives, path-MTU
//! discovery (no ICMP handling), Nagle (segments are sent as soon as the
//! windows allow, like `TCP_NODELAY`).
//!
//! # DF policy
//! A KA connection (KA offered or negotiated) never sets DF except on RTT
//! indicators, so KA routers can fragment its data (DESIGN §6.3). A plain
//! TCP connection sets DF on every packet (as Linux does), except on packets
//! whose total IP length falls in the indicator range 600..=611, which would
//! otherwise be mistaken for RTT indicators by KA routers.
//!
//! # Router-assisted baselines
//! Native RCP (DESIGN §7.1) runs the KA mode machine on another carrier
//! (see `ka`); XCP (DESIGN §7.2) is a controller plus its carrier (see
//! `xcp`), and an XCP connection does no KA.

mod ecn;
mod handshake;

use handshake::{build_controller, cc_seed, offers_ka, offers_native_rcp, window_shift};
mod cc_undo;
mod dsack;
mod dsack_mark;
mod input;
mod ka;
mod ka_undo;
mod output;
mod rack;
mod rcp;
mod recv;
mod send;
mod sparse;
mod tlp;
mod types;
mod xcp;

pub use ka::{LeftBy, Mode, ModeChange, ModeReason};
pub use types::{CloseReason, ConnStats, Event, State, Transmit};

use crate::cc::Controller;
use crate::config::TcpConfig;
use crate::rtt::RttEstimator;
use ka::KaState;
use recv::RecvBuffer;
use send::{Scoreboard, SendBuffer};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use xcp::XcpState;

/// Bytes the timestamps option takes in every segment once negotiated
/// (10, padded to 12 with two NOPs).
const TS_OPTION_LEN: usize = 12;

/// Recovery episode (RFC 6582 / RFC 6675).
#[derive(Debug, Clone, Copy)]
struct Recovery {
    /// Highest sequence number sent when recovery began.
    recover: u64,
    /// Without SACK: bytes assumed to have left the network, one SMSS per
    /// duplicate ACK (the "inflation" of RFC 6582 in pipe form).
    reno_sacked: u64,
}

/// Pending RST to send: raw wire values.
#[derive(Debug, Clone, Copy)]
struct PendingRst {
    seq: u32,
    ack: Option<u32>,
}

/// One TCP connection.
#[derive(Debug)]
pub struct Connection {
    cfg: TcpConfig,
    /// The stack's device completes TCP checksums
    /// (`StackConfig::checksum_offload`).
    checksum_offload: bool,
    local: SocketAddr,
    remote: SocketAddr,
    ip_header_len: usize,
    state: State,
    passive: bool,
    created: Instant,
    last_now: Instant,

    // negotiated
    our_mss: usize,
    snd_mss: usize,
    snd_shift: u8,
    rcv_shift: u8,
    sack_ok: bool,
    ts_ok: bool,
    ts_offset: u32,
    ts_recent: u32,
    /// Peer offered these in its SYN (passive side answers in kind).
    peer_ws: Option<u8>,

    // sequence spaces: u64 offsets from the ISNs
    iss: u32,
    irs: u32,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    snd_wnd: u64,
    max_snd_wnd: u64,
    snd_wl1: u64,
    snd_wl2: u64,
    last_wire_window: u16,
    rcv_nxt: u64,
    rcv_adv: u64,
    last_ack_sent: u64,

    sndbuf: SendBuffer,
    sb: Scoreboard,
    fin_queued: bool,
    /// Sequence number of our FIN once its position is fixed.
    fin_seq: Option<u64>,
    rcvbuf: RecvBuffer,
    /// Sequence number of the peer's FIN, once seen.
    peer_fin: Option<u64>,
    fin_received: bool,

    rtt: RttEstimator,
    cc: Box<dyn Controller>,
    recovery: Option<Recovery>,
    /// A TCP-mode window reduction that DSACKs may prove spurious
    /// (`conn::cc_undo`).
    cc_undo: Option<cc_undo::CcUndo>,
    /// RFC 6582 `recover` after an RTO (no fast retransmit below it).
    recover_guard: u64,
    dupacks: u32,
    /// RACK loss detection (with SACK; see `rack`).
    rack: rack::RackState,
    /// Tail loss probe (`conn::tlp`).
    tlp: tlp::TlpState,
    /// Receiver: duplicate segments, each reported in the first SACK block
    /// of an ACK of its own (DSACK, RFC 2883; `conn::dsack`).
    pending_dsack: dsack::DsackQueue,
    force_retransmit: bool,
    retries: u32,
    syn_retries: u32,
    syn_sent_at: Option<Instant>,
    syn_retransmitted: bool,
    need_syn: bool,

    // timers
    rto_at: Option<Instant>,
    persist_at: Option<Instant>,
    persist_probe: bool,
    delack_at: Option<Instant>,
    close_at: Option<Instant>,
    pacing_wait: Option<Instant>,

    // acks
    ack_now: bool,
    unacked_segs: usize,
    /// Segments the segment being handled stands for: 1, or more for one
    /// the device's offloads coalesced ([`Connection::handle_segments_ecn`]).
    rx_segments: u16,
    /// `quick_ack_first_data`: the next data segment is acknowledged at
    /// once (armed when the handshake completes).
    quick_ack_armed: bool,
    challenge_tokens: u32,
    challenge_refill: Instant,
    pending_rst: Option<PendingRst>,
    close_after_rst: Option<CloseReason>,

    ka: KaState,
    ecn: ecn::EcnState,
    xcp: XcpState,
    pacer_next: Option<Instant>,

    events: VecDeque<Event>,
    readable_signalled: bool,
    want_writable: bool,
    stats: ConnStats,
}

/// Per-connection values the stack derives (ISN, timestamp offset).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnInit {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub iss: u32,
    pub ts_offset: u32,
}

impl Connection {
    fn new(now: Instant, cfg: TcpConfig, init: ConnInit, passive: bool) -> Self {
        let ipv6 = init.remote.is_ipv6();
        // An active open offering native RCP puts the 8-byte IPv4 RCP option
        // on its SYN and data, one offering XCP the 16-byte XCP option on
        // its data, so its MSS leaves room for it.
        let rcp_room = if !passive && offers_native_rcp(&cfg, ipv6) {
            ka_codec::RcpOption::LEN
        } else if !passive && xcp::offers_xcp(&cfg, ipv6) {
            ka_codec::XcpOption::PADDED_LEN
        } else {
            0
        };
        let ip_header_len = if ipv6 { 40 } else { 20 + rcp_room };
        let our_mss = cfg.mtu.saturating_sub(ip_header_len + 20).clamp(64, 65_495);
        let rcv_shift = if cfg.window_scale {
            window_shift(cfg.recv_buffer)
        } else {
            0
        };
        let default_peer_mss = if ipv6 { 1220 } else { 536 };
        let snd_mss = our_mss.min(default_peer_mss);
        let recv_cap = if cfg.window_scale {
            cfg.recv_buffer
        } else {
            cfg.recv_buffer.min(65_535)
        };
        Connection {
            checksum_offload: false,
            local: init.local,
            remote: init.remote,
            ip_header_len,
            state: if passive {
                State::SynReceived
            } else {
                State::SynSent
            },
            passive,
            created: now,
            last_now: now,
            our_mss,
            snd_mss,
            snd_shift: 0,
            rcv_shift,
            sack_ok: false,
            ts_ok: false,
            ts_offset: init.ts_offset,
            ts_recent: 0,
            peer_ws: None,
            iss: init.iss,
            irs: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: 0,
            max_snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            last_wire_window: 0,
            rcv_nxt: 0,
            rcv_adv: 0,
            last_ack_sent: 0,
            sndbuf: SendBuffer::new(cfg.send_buffer),
            sb: Scoreboard::default(),
            fin_queued: false,
            fin_seq: None,
            rcvbuf: RecvBuffer::new(recv_cap, cfg.max_ooo_ranges),
            peer_fin: None,
            fin_received: false,
            rtt: RttEstimator::new(
                cfg.initial_rto,
                cfg.min_rto,
                cfg.max_rto,
                cfg.clock_granularity,
            ),
            cc: build_controller(&cfg, snd_mss, now, true, cc_seed(init.iss, init.ts_offset)),
            recovery: None,
            cc_undo: None,
            recover_guard: 0,
            dupacks: 0,
            rack: rack::RackState::default(),
            tlp: tlp::TlpState::default(),
            pending_dsack: dsack::DsackQueue::default(),
            force_retransmit: false,
            retries: 0,
            syn_retries: 0,
            syn_sent_at: None,
            syn_retransmitted: false,
            need_syn: true,
            rto_at: None,
            persist_at: None,
            persist_probe: false,
            delack_at: None,
            close_at: None,
            pacing_wait: None,
            ack_now: false,
            unacked_segs: 0,
            rx_segments: 1,
            quick_ack_armed: false,
            challenge_tokens: cfg.challenge_acks_per_sec,
            challenge_refill: now,
            pending_rst: None,
            close_after_rst: None,
            ecn: ecn::EcnState::default(),
            ka: KaState::new((passive && cfg.ka.enabled) || offers_ka(&cfg), now),
            xcp: XcpState::default(),
            pacer_next: None,
            events: VecDeque::new(),
            readable_signalled: false,
            want_writable: false,
            stats: ConnStats::default(),
            cfg,
        }
    }

    /// An active open: the SYN goes out on the next `poll_transmit`.
    pub(crate) fn connect(now: Instant, cfg: TcpConfig, init: ConnInit) -> Self {
        Connection::new(now, cfg, init, false)
    }

    /// A passive open from a SYN that arrived on a listening port.
    pub(crate) fn accept(
        now: Instant,
        cfg: TcpConfig,
        init: ConnInit,
        syn: &ka_codec::wire::tcp::TcpRepr,
    ) -> Self {
        let mut c = Connection::new(now, cfg, init, true);
        c.on_peer_syn(syn);
        c
    }

    // ----- public API -----------------------------------------------------

    /// Local address and port.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Remote address and port.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote
    }

    /// Current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether this side was opened by a SYN from the peer.
    pub fn is_passive(&self) -> bool {
        self.passive
    }

    /// Whether KA was negotiated (both SYN and SYN-ACK carried KA-Permitted,
    /// or, for the native-RCP baseline, both carried RCP-Permitted; see
    /// [`Connection::native_rcp`]).
    pub fn ka_enabled(&self) -> bool {
        self.ka.enabled
    }

    /// Whether the native-RCP carrier (DESIGN §7.1) was negotiated: the
    /// explicit-rate mode machine runs on IPv4 RCP options and RCP-Echo
    /// instead of KA fragments.
    pub fn native_rcp(&self) -> bool {
        self.ka.enabled && self.ka.rcp
    }

    /// IPv4 option bytes the stack must leave room for in front of this
    /// connection's segments (8 while it may send the RCP option, 16 while
    /// it may send the XCP option, else 0). A [`Transmit`] without
    /// [`Transmit::rcp_option`] or [`Transmit::xcp_option`] then has no
    /// options: the stack moves the segment up.
    pub fn ip_options_room(&self) -> usize {
        if self.remote.is_ipv6() {
            0
        } else {
            self.ip_header_len.saturating_sub(20)
        }
    }

    /// Current sender mode.
    pub fn mode(&self) -> Mode {
        self.ka.mode
    }

    /// The sender MSS in use (the MSS option's sense: payload of a full
    /// segment without TCP options).
    pub fn mss(&self) -> usize {
        self.snd_mss
    }

    /// The segment size congestion control counts in (RFC 5681 §2 SMSS):
    /// [`Connection::mss`] less the options every data segment carries
    /// (12 bytes once timestamps are on), e.g. 1448 on a 1500-byte path.
    pub fn smss(&self) -> usize {
        self.snd_mss
            .saturating_sub(if self.ts_ok { TS_OPTION_LEN } else { 0 })
            .max(64)
    }

    /// Queues application data; returns how many bytes were accepted
    /// (bounded by the free send-buffer space). Nothing is accepted after
    /// `close` or once the connection is closing.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let open = matches!(
            self.state,
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
        );
        if !open || self.fin_queued {
            return 0;
        }
        let n = self.sndbuf.write(data);
        if n < data.len() {
            self.want_writable = true;
        }
        n
    }

    /// Free space in the send buffer.
    pub fn send_capacity(&self) -> usize {
        if self.fin_queued {
            0
        } else {
            self.sndbuf.free()
        }
    }

    /// Bytes written and not yet acknowledged.
    pub fn send_queued(&self) -> usize {
        self.sndbuf.len()
    }

    /// Copies received in-order bytes into `buf`; returns the count (0 when
    /// nothing is readable; see [`Connection::is_eof`]).
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        self.consume(|b| b.read(buf))
    }

    /// Drops up to `max` received in-order bytes without copying them out
    /// (an application that only counts what arrives: a discard server,
    /// the simulator's receivers); returns the count. The window opens
    /// exactly as after a [`Connection::read`] of as many bytes.
    pub fn discard(&mut self, max: usize) -> usize {
        self.consume(|b| b.discard(max))
    }

    /// Takes bytes out of the receive buffer with `take` and sends a
    /// window update if that moved the right edge by a useful amount.
    fn consume(&mut self, take: impl FnOnce(&mut RecvBuffer) -> usize) -> usize {
        let before_right = self.rcv_nxt + self.rcvbuf.free() as u64;
        let n = take(&mut self.rcvbuf);
        self.readable_signalled = false;
        if n > 0 && self.state.is_synchronized() && !self.fin_received {
            // window update if the right edge moves by a useful amount
            let new_right = self.rcv_nxt + self.rcvbuf.free() as u64;
            let threshold = (self.rcvbuf.cap() as u64 / 2).min(2 * self.our_mss as u64);
            let stalled = self.rcv_adv < self.rcv_nxt + self.our_mss as u64;
            if new_right >= self.rcv_adv + threshold
                && new_right > before_right
                && (self.cfg.window_update_on_read || stalled)
            {
                self.ack_now = true;
            }
        }
        n
    }

    /// Bytes readable now.
    pub fn readable(&self) -> usize {
        self.rcvbuf.readable()
    }

    /// The peer has closed its direction and everything before its FIN has
    /// been read.
    pub fn is_eof(&self) -> bool {
        self.fin_received && self.rcvbuf.readable() == 0
    }

    /// Closes our direction: a FIN follows the queued data (after the
    /// handshake, if it is still under way). Closing an active open with
    /// nothing queued before the SYN is answered simply drops it.
    pub fn close(&mut self) {
        match self.state {
            State::SynSent if self.sndbuf.len() == 0 => self.set_closed(CloseReason::Normal),
            // the FIN follows once the handshake completes
            State::SynSent | State::SynReceived => self.fin_queued = true,
            State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Aborts: sends RST (if synchronised) and drops all data.
    pub fn abort(&mut self) {
        match self.state {
            State::Closed => {}
            State::SynSent => self.set_closed(CloseReason::Aborted),
            _ => {
                self.pending_rst = Some(PendingRst {
                    seq: self.wire_snd(self.snd_nxt),
                    ack: None,
                });
                self.close_after_rst = Some(CloseReason::Aborted);
            }
        }
    }

    /// Next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether events are queued.
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Counters and current state (time-based values are accounted up to
    /// the last call into the connection).
    pub fn stats(&self) -> ConnStats {
        let mut s = self.stats;
        s.srtt = self.rtt.srtt();
        s.rto = self.rtt.rto();
        s.cwnd = self.cwnd();
        s.ssthresh = self.cc.ssthresh();
        s.in_flight = self.pipe() as usize;
        s.snd_wnd = self.snd_wnd as usize;
        s.ka_enabled = self.ka.enabled;
        s.xcp_enabled = self.xcp.enabled;
        s.mode = self.ka.mode;
        s.left_by = self.ka.left_by;
        s.ka_rate = self.ka.rate;
        s.ka_rate_cap = self.ka.cap;
        s.time_in_ka = self.ka.time_in_ka(self.last_now);
        s.mode_changes = self.ka.mode_changes;
        s.ooo_dropped = self.rcvbuf.dropped_ooo;
        s.ecn = self.ecn.ok;
        s
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The TCP-mode congestion controller.
    pub fn controller(&self) -> &dyn Controller {
        self.cc.as_ref()
    }

    /// When [`Connection::handle_timeout`] (or, for pacing,
    /// [`Connection::poll_transmit`]) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut t: Option<Instant> = None;
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        take(self.rto_at);
        take(self.rack.timer);
        take(self.tlp.at);
        take(self.persist_at);
        take(self.delack_at);
        take(self.close_at);
        take(self.pacing_wait);
        take(self.ka_silence_deadline());
        take(self.indicator_wakeup());
        t
    }

    /// Runs every timer that is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.touch(now);
        if self.state == State::Closed {
            return;
        }
        if self.close_at.is_some_and(|t| t <= now) {
            self.close_at = None;
            let reason = if self.state == State::FinWait2 {
                CloseReason::TimedOut
            } else {
                CloseReason::Normal
            };
            self.set_closed(reason);
            return;
        }
        // a probe due with the RTO goes first and puts the RTO back
        if self.tlp.at.is_some_and(|t| t <= now) {
            self.on_tlp_timer(now);
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.on_rto(now);
        }
        if self.rack.timer.is_some_and(|t| t <= now) {
            self.on_rack_timer(now);
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            self.persist_probe = true;
        }
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.ack_now = true;
        }
        if self.pacing_wait.is_some_and(|t| t <= now) {
            self.pacing_wait = None;
        }
        self.check_ka_silence(now);
    }

    /// Advances the connection's clock (the latest `now` it has seen, up
    /// to which `time_in_ka` is counted) to `now` if that is later, as a
    /// `poll_transmit` that finds nothing to send does. The stack calls it
    /// before servicing a connection so that connections it skips (nothing
    /// to send, no timer due) keep the same clock as if it had polled
    /// them (DESIGN §6.8).
    pub(crate) fn advance_clock(&mut self, now: Instant) {
        self.touch(now);
    }

    // ----- internals shared by input/output --------------------------------

    fn touch(&mut self, now: Instant) {
        if now > self.last_now {
            self.last_now = now;
        }
    }

    fn push_event(&mut self, ev: Event) {
        if self.events.len() >= self.cfg.max_events.max(1) && !matches!(ev, Event::Closed(_)) {
            self.stats.events_dropped += 1;
            return;
        }
        self.events.push_back(ev);
    }

    fn set_closed(&mut self, reason: CloseReason) {
        if self.state == State::Closed {
            return;
        }
        self.state = State::Closed;
        self.rto_at = None;
        self.rack.timer = None;
        self.tlp_reset();
        self.persist_at = None;
        self.delack_at = None;
        self.close_at = None;
        self.pacing_wait = None;
        self.ka.close(self.last_now);
        self.push_event(Event::Closed(reason));
    }

    /// Wire sequence number of our offset `abs`.
    fn wire_snd(&self, abs: u64) -> u32 {
        self.iss.wrapping_add(abs as u32)
    }

    /// Wire acknowledgement number for the peer's offset `abs`.
    fn wire_rcv(&self, abs: u64) -> u32 {
        self.irs.wrapping_add(abs as u32)
    }

    /// Timestamp clock: milliseconds since creation plus a per-connection
    /// offset.
    fn ts_now(&self, now: Instant) -> u32 {
        let ms = now.saturating_duration_since(self.created).as_millis() as u32;
        self.ts_offset.wrapping_add(ms)
    }

    /// The effective congestion window.
    fn cwnd(&self) -> usize {
        if self.ka.mode == Mode::Ka {
            self.ka_window()
        } else {
            self.cc.window()
        }
    }

    /// Bytes in flight (RFC 6675 pipe; without SACK, duplicate ACKs count
    /// as departed segments: in recovery all of them (RFC 6582's window
    /// inflation), before it the first two (RFC 3042 limited transmit; with
    /// SACK the SACKed bytes already do this).
    fn pipe(&self) -> u64 {
        let reno = if self.sack_ok {
            0
        } else {
            match self.recovery {
                Some(r) => r.reno_sacked,
                None => u64::from(self.dupacks.min(2)) * self.snd_mss as u64,
            }
        };
        self.sb.pipe().saturating_sub(reno)
    }

    /// Queues an immediate ACK if the RFC 5961 challenge-ACK budget allows.
    fn challenge_ack(&mut self, now: Instant) {
        if now.saturating_duration_since(self.challenge_refill) >= Duration::from_secs(1) {
            self.challenge_refill = now;
            self.challenge_tokens = self.cfg.challenge_acks_per_sec;
        }
        if self.challenge_tokens > 0 {
            self.challenge_tokens -= 1;
            self.stats.challenge_acks += 1;
            self.ack_now = true;
        }
    }

    fn set_rto_timer(&mut self, now: Instant) {
        self.rto_at = Some(now + self.rtt.rto());
    }
}

/// Unwraps a 32-bit sequence number into the 64-bit space around
/// `reference` (the closest value), or `None` if that would be negative.
fn unwrap_seq(base: u32, reference: u64, wire: u32) -> Option<u64> {
    let ref_wire = base.wrapping_add(reference as u32);
    let diff = wire.wrapping_sub(ref_wire) as i32;
    let v = reference as i128 + i128::from(diff);
    u64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_seq_handles_wrap() {
        let base = u32::MAX - 10;
        assert_eq!(unwrap_seq(base, 5, base.wrapping_add(20)), Some(20));
        assert_eq!(unwrap_seq(base, 5, base.wrapping_add(1)), Some(1));
        assert_eq!(unwrap_seq(base, 5, base.wrapping_sub(3)), None);
        assert_eq!(
            unwrap_seq(base, 1 << 33, base.wrapping_add(7)),
            Some((1 << 33) + 7)
        );
    }

    #[test]
    fn window_shift_fits() {
        assert_eq!(window_shift(65_535), 0);
        assert_eq!(window_shift(65_536), 1);
        assert_eq!(window_shift(1 << 20), 5);
        assert_eq!(window_shift(usize::MAX), 14);
    }
}

//! The [`Stack`]: owns connections, demultiplexes IP packets by 4-tuple,
//! listens on ports, reassembles fragments (recording leading-fragment
//! lengths for KA first), answers strays with RST, and wraps outgoing
//! segments in IPv4/IPv6 headers.
//!
//! Driving contract: feed every received IP packet to
//! [`Stack::handle_packet`]; after any call, drain [`Stack::poll_transmit`]
//! until `None`; wake at [`Stack::poll_timeout`] and call
//! [`Stack::handle_timeout`]; read [`Stack::poll_event`].
//!
//! Connections are removed once their [`Event::Closed`] has been returned by
//! `poll_event` (read final stats before polling it, or from
//! [`Stack::conn`] while the event is still queued).
//!
//! The stack accepts packets for any destination address (it owns the whole
//! TUN device / simulated host); a listener matches a port on all addresses.
//! ICMP and non-TCP packets are ignored (counted).
//!
//! ECN: the ECN codepoint of each arriving packet (of a reassembled
//! datagram: see [`reasm`]) goes to its connection with the segment
//! ([`Connection::handle_segment_ecn`]); outgoing packets get the codepoint
//! the connection chose ([`Transmit::ecn`](crate::Transmit::ecn)).

pub mod reasm;

use crate::config::{StackConfig, TcpConfig};
use crate::conn::{ConnInit, Connection, Event, State};
use crate::isn::{IsnGenerator, tuple_hash};
use ka_codec::rcp_option::{self, RcpOption};
use ka_codec::wire::ecn::{Ecn, set_ecn};
use ka_codec::wire::tcp::{ACK, FIN, RST, SYN, TcpOptions, TcpPacket, TcpRepr};
use ka_codec::wire::{checksum, ipv4, ipv6};
use ka_codec::xcp_option::{self, XcpOption};
use reasm::{FragKey, Reassembler};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Identifies a connection within a [`Stack`]; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnHandle(pub u64);

/// Why [`Stack::connect`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// Local and remote address families differ.
    #[error("local and remote address families differ")]
    AddressFamily,
    /// A connection with this 4-tuple exists (possibly in TIME-WAIT).
    #[error("4-tuple already in use")]
    InUse,
    /// The connection table is full.
    #[error("too many connections")]
    TooManyConnections,
    /// Remote port 0 or unspecified remote address.
    #[error("invalid remote address")]
    InvalidRemote,
    /// Unspecified local address (the stack needs the address to put in
    /// its packets).
    #[error("invalid local address")]
    InvalidLocal,
}

/// Stack-level counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Packets given to `handle_packet`.
    pub packets_in: u64,
    /// Packets produced by `poll_transmit`.
    pub packets_out: u64,
    /// Unparseable IP or TCP headers, bad IPv4 header checksums.
    pub malformed: u64,
    /// TCP checksum failures.
    pub bad_checksum: u64,
    /// Non-TCP packets ignored.
    pub not_tcp: u64,
    /// IP fragments received.
    pub fragments_in: u64,
    /// Leading fragments whose length was handed to a connection.
    pub leading_fragments: u64,
    /// Segments for no connection.
    pub no_connection: u64,
    /// RSTs sent in reply to them.
    pub rsts_sent: u64,
    /// RSTs not sent because of the rate limit or queue cap.
    pub rsts_suppressed: u64,
    /// SYNs dropped (half-open or connection cap).
    pub syns_dropped: u64,
    /// Connections accepted.
    pub accepted: u64,
}

type Tuple = (SocketAddr, SocketAddr);

/// A sans-IO TCP/IP host.
#[derive(Debug)]
pub struct Stack {
    cfg: StackConfig,
    isn: IsnGenerator,
    conns: BTreeMap<u64, Connection>,
    by_tuple: HashMap<Tuple, u64>,
    listeners: BTreeMap<u16, TcpConfig>,
    next_id: u64,
    rr_cursor: u64,
    reasm: Reassembler,
    rst_queue: VecDeque<Vec<u8>>,
    rst_tokens: u32,
    rst_refill: Instant,
    ip_ident: u16,
    events: VecDeque<(ConnHandle, Event)>,
    stats: StackStats,
}

/// What the IP header of a TCP segment's packet carried for the connection:
/// the native-RCP and XCP options (IPv4, unfragmented or leading
/// fragments) and the ECN codepoint.
#[derive(Debug, Clone, Copy)]
struct IpInfo {
    rcp: Option<RcpOption>,
    xcp: Option<XcpOption>,
    ecn: Ecn,
}

impl Stack {
    /// A stack with no connections; `now` is the epoch of the ISN clock.
    pub fn new(cfg: StackConfig, now: Instant) -> Self {
        let isn = IsnGenerator::new(cfg.isn_secret, now);
        let ip_ident = tuple_hash(
            &cfg.isn_secret,
            2,
            SocketAddr::from(([0, 0, 0, 0], 0)),
            SocketAddr::from(([0, 0, 0, 0], 0)),
        ) as u16;
        Stack {
            isn,
            conns: BTreeMap::new(),
            by_tuple: HashMap::new(),
            listeners: BTreeMap::new(),
            next_id: 1,
            rr_cursor: 0,
            reasm: Reassembler::new(cfg.reassembly),
            rst_queue: VecDeque::new(),
            rst_tokens: cfg.rst_per_sec,
            rst_refill: now,
            ip_ident,
            events: VecDeque::new(),
            stats: StackStats::default(),
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StackConfig {
        &self.cfg
    }

    /// Accept connections to `port` on any local address (with the
    /// stack's default [`TcpConfig`]).
    pub fn listen(&mut self, port: u16) {
        self.listeners.insert(port, self.cfg.tcp);
    }

    /// Accept connections to `port` with per-listener TCP parameters
    /// (e.g. a receiver with KA disabled).
    pub fn listen_with(&mut self, port: u16, tcp: TcpConfig) {
        self.listeners.insert(port, tcp);
    }

    /// Stop accepting new connections to `port`.
    pub fn unlisten(&mut self, port: u16) {
        self.listeners.remove(&port);
    }

    /// Opens a connection from `local` to `remote` (the SYN goes out on the
    /// next `poll_transmit`). Local port 0 picks an ephemeral port
    /// (RFC 6056 algorithm 3, keyed by the stack secret).
    pub fn connect(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Result<ConnHandle, ConnectError> {
        self.connect_with(now, local, remote, self.cfg.tcp)
    }

    /// [`Stack::connect`] with per-connection TCP parameters.
    pub fn connect_with(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        tcp: crate::config::TcpConfig,
    ) -> Result<ConnHandle, ConnectError> {
        if local.is_ipv4() != remote.is_ipv4() {
            return Err(ConnectError::AddressFamily);
        }
        if remote.port() == 0 || remote.ip().is_unspecified() {
            return Err(ConnectError::InvalidRemote);
        }
        if local.ip().is_unspecified() {
            return Err(ConnectError::InvalidLocal);
        }
        if self.conns.len() >= self.cfg.max_connections {
            return Err(ConnectError::TooManyConnections);
        }
        let local = if local.port() == 0 {
            self.ephemeral(local, remote).ok_or(ConnectError::InUse)?
        } else {
            local
        };
        if self.by_tuple.contains_key(&(local, remote)) {
            return Err(ConnectError::InUse);
        }
        let init = ConnInit {
            local,
            remote,
            iss: self.isn.isn(now, local, remote),
            ts_offset: self.isn.ts_offset(local, remote),
        };
        let conn = Connection::connect(now, tcp, init);
        Ok(self.insert(conn))
    }

    fn ephemeral(&self, local: SocketAddr, remote: SocketAddr) -> Option<SocketAddr> {
        const FIRST: u32 = 49_152;
        const COUNT: u32 = 16_384;
        let offset = tuple_hash(&self.cfg.isn_secret, 3, local, remote) as u32;
        (0..COUNT).find_map(|i| {
            let port = FIRST + (offset.wrapping_add(i) % COUNT);
            let cand = SocketAddr::new(local.ip(), port as u16);
            (!self.by_tuple.contains_key(&(cand, remote))).then_some(cand)
        })
    }

    fn insert(&mut self, conn: Connection) -> ConnHandle {
        let id = self.next_id;
        self.next_id += 1;
        self.by_tuple
            .insert((conn.local_addr(), conn.remote_addr()), id);
        self.conns.insert(id, conn);
        ConnHandle(id)
    }

    /// A connection, while it exists.
    pub fn conn(&self, h: ConnHandle) -> Option<&Connection> {
        self.conns.get(&h.0)
    }

    /// A connection for `write`/`read`/`close`/`abort`. After using it,
    /// drain `poll_transmit`.
    pub fn conn_mut(&mut self, h: ConnHandle) -> Option<&mut Connection> {
        self.conns.get_mut(&h.0)
    }

    /// All live connection handles, in creation order.
    pub fn handles(&self) -> impl Iterator<Item = ConnHandle> + '_ {
        self.conns.keys().map(|&k| ConnHandle(k))
    }

    /// Number of connections (in any state).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Stack counters.
    pub fn stats(&self) -> StackStats {
        self.stats
    }

    /// The fragment reassembly buffer (counters, memory in use).
    pub fn reassembler(&self) -> &Reassembler {
        &self.reasm
    }

    /// Next event from any connection.
    pub fn poll_event(&mut self) -> Option<(ConnHandle, Event)> {
        if self.events.is_empty() {
            self.collect_events();
        }
        let (h, ev) = self.events.pop_front()?;
        if let Event::Closed(_) = ev {
            self.remove(h.0);
        }
        Some((h, ev))
    }

    fn collect_events(&mut self) {
        for (&id, c) in self.conns.iter_mut() {
            while let Some(ev) = c.poll_event() {
                self.events.push_back((ConnHandle(id), ev));
            }
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some(c) = self.conns.remove(&id) {
            self.by_tuple.remove(&(c.local_addr(), c.remote_addr()));
        }
    }

    /// The earliest time `handle_timeout` (or pacing in `poll_transmit`)
    /// has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let conns = self.conns.values().filter_map(Connection::poll_timeout);
        conns.chain(self.reasm.poll_timeout()).min()
    }

    /// Runs all timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.reasm.handle_timeout(now);
        for c in self.conns.values_mut() {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
    }

    /// Writes the next outgoing IP packet into `buf` and returns its length.
    /// `buf` should hold at least the MTU.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(pkt) = self.rst_queue.pop_front() {
            let dst = buf.get_mut(..pkt.len())?;
            dst.copy_from_slice(&pkt);
            self.stats.packets_out += 1;
            return Some(pkt.len());
        }
        // Round robin: the connections after the last one that sent, then
        // from the first up to it (each visited once).
        let cursor = self.rr_cursor;
        let out = Out {
            ip_ident: &mut self.ip_ident,
            rr_cursor: &mut self.rr_cursor,
            packets_out: &mut self.stats.packets_out,
            ttl: self.cfg.ttl,
        };
        let mut out = out;
        let after = (cursor < u64::MAX).then(|| cursor + 1);
        if let Some(from) = after {
            for (&id, conn) in self.conns.range_mut(from..) {
                match out.emit(id, conn, now, buf) {
                    Emitted::Packet(n) => return Some(n),
                    Emitted::Nothing => {}
                    Emitted::Abort => return None,
                }
            }
        }
        for (&id, conn) in self.conns.range_mut(..=cursor) {
            match out.emit(id, conn, now, buf) {
                Emitted::Packet(n) => return Some(n),
                Emitted::Nothing => {}
                Emitted::Abort => return None,
            }
        }
        None
    }

    fn next_ident(&mut self) -> u16 {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        self.ip_ident
    }

    /// Processes one received IP packet (IPv4 or IPv6, no link header).
    /// Never panics on any input.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) {
        self.stats.packets_in += 1;
        match ka_codec::wire::ip_version(packet) {
            Some(4) => self.handle_v4(now, packet),
            Some(6) => self.handle_v6(now, packet),
            _ => self.stats.malformed += 1,
        }
    }

    fn handle_v4(&mut self, now: Instant, packet: &[u8]) {
        let Ok(ip) = ipv4::Ipv4Packet::new_checked(packet) else {
            self.stats.malformed += 1;
            return;
        };
        if !ip.verify_checksum() {
            self.stats.malformed += 1;
            return;
        }
        if ip.protocol() != ipv4::PROTO_TCP {
            self.stats.not_tcp += 1;
            return;
        }
        let src = IpAddr::from(ip.src_addr());
        let dst = IpAddr::from(ip.dst_addr());
        let ecn = Ecn::from_bits(ip.dscp_ecn());
        // The native-RCP and XCP carriers: IPv4 options (not copied into
        // later fragments, so only unfragmented packets and leading
        // fragments have them). Malformed options are ignored.
        let with_options = ip.header_len() > ipv4::MIN_HEADER_LEN && ip.frag_offset() == 0;
        let rcp = if with_options {
            rcp_option::find_in(ip.options())
                .ok()
                .flatten()
                .map(|(_, o)| o)
        } else {
            None
        };
        let xcp = if with_options {
            xcp_option::find_in(ip.options())
                .ok()
                .flatten()
                .map(|(_, o)| o)
        } else {
            None
        };
        if !ip.is_fragment() {
            self.handle_tcp_with(now, src, dst, ip.payload(), IpInfo { rcp, xcp, ecn });
            return;
        }
        self.stats.fragments_in += 1;
        let payload = ip.payload();
        if ip.frag_offset() == 0 && ip.more_frags() {
            self.leading_fragment(now, src, dst, payload);
            if let Some(conn) = self.conn_for_segment(src, dst, payload) {
                if let Some(opt) = rcp {
                    conn.on_rcp_option(now, opt);
                }
                if let Some(opt) = xcp {
                    conn.on_xcp_option(now, opt);
                }
            }
        }
        let key = FragKey {
            src,
            dst,
            proto: ip.protocol(),
            ident: u32::from(ip.ident()),
        };
        let proto = (ip.frag_offset() == 0).then_some(ip.protocol());
        let (offset, more) = (ip.frag_offset(), ip.more_frags());
        if let Some(done) = self
            .reasm
            .insert_ecn(now, key, offset, more, payload, proto, ecn)
        {
            self.handle_tcp(now, src, dst, &done.payload, done.ecn);
        }
    }

    fn handle_v6(&mut self, now: Instant, packet: &[u8]) {
        let Ok(ip) = ipv6::Ipv6Packet::new_checked(packet) else {
            self.stats.malformed += 1;
            return;
        };
        let Ok(layout) = ipv6::layout(packet) else {
            self.stats.malformed += 1;
            return;
        };
        let src = IpAddr::from(ip.src_addr());
        let dst = IpAddr::from(ip.dst_addr());
        let ecn = Ecn::from_bits(ip.traffic_class());
        let end = ip.total_len();
        match layout.fragment {
            None => match layout.upper {
                Some((6, off)) => {
                    let seg = packet.get(off..end).unwrap_or(&[]);
                    self.handle_tcp(now, src, dst, seg, ecn);
                }
                _ => self.stats.not_tcp += 1,
            },
            Some((fh_off, fh)) => {
                self.stats.fragments_in += 1;
                let start = fh_off + ipv6::FRAG_HEADER_LEN;
                let payload = packet.get(start..end).unwrap_or(&[]);
                if fh.offset == 0 && fh.more_frags && fh.next_header == 6 {
                    self.leading_fragment(now, src, dst, payload);
                }
                let key = FragKey {
                    src,
                    dst,
                    proto: 0,
                    ident: fh.ident,
                };
                let proto = (fh.offset == 0).then_some(fh.next_header);
                if let Some(done) =
                    self.reasm
                        .insert_ecn(now, key, fh.offset, fh.more_frags, payload, proto, ecn)
                {
                    if done.proto == 6 {
                        self.handle_tcp(now, src, dst, &done.payload, done.ecn);
                    } else {
                        self.stats.not_tcp += 1;
                    }
                }
            }
        }
    }

    /// The connection a segment (or the leading fragment of one) from
    /// `src` to `dst` belongs to, by the ports at the start of `seg`.
    fn conn_for_segment(
        &mut self,
        src: IpAddr,
        dst: IpAddr,
        seg: &[u8],
    ) -> Option<&mut Connection> {
        let (Some(&[a, b]), Some(&[c, d])) = (seg.get(0..2), seg.get(2..4)) else {
            return None;
        };
        let sport = u16::from_be_bytes([a, b]);
        let dport = u16::from_be_bytes([c, d]);
        let tuple = (SocketAddr::new(dst, dport), SocketAddr::new(src, sport));
        let id = self.by_tuple.get(&tuple).copied()?;
        self.conns.get_mut(&id)
    }

    /// Records a leading fragment's payload length with its connection
    /// (before reassembly, DESIGN §5.2).
    fn leading_fragment(&mut self, now: Instant, src: IpAddr, dst: IpAddr, payload: &[u8]) {
        let (Some(&[a, b]), Some(&[c, d])) = (payload.get(0..2), payload.get(2..4)) else {
            return;
        };
        let sport = u16::from_be_bytes([a, b]);
        let dport = u16::from_be_bytes([c, d]);
        let tuple = (SocketAddr::new(dst, dport), SocketAddr::new(src, sport));
        let id = self.by_tuple.get(&tuple).copied();
        if let Some(conn) = id.and_then(|id| self.conns.get_mut(&id)) {
            conn.on_leading_fragment(now, payload.len());
            self.stats.leading_fragments += 1;
        }
    }

    fn handle_tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &[u8], ecn: Ecn) {
        let info = IpInfo {
            rcp: None,
            xcp: None,
            ecn,
        };
        self.handle_tcp_with(now, src, dst, seg, info);
    }

    /// A TCP segment, with the IPv4 RCP and XCP options its packet carried
    /// (handed to the connection before the segment; for a SYN that opens a
    /// connection, right after the connection is created) and the ECN
    /// codepoint of its IP header.
    fn handle_tcp_with(
        &mut self,
        now: Instant,
        src: IpAddr,
        dst: IpAddr,
        seg: &[u8],
        info: IpInfo,
    ) {
        let IpInfo { rcp, xcp, ecn } = info;
        let Ok(pkt) = TcpPacket::new_checked(seg) else {
            self.stats.malformed += 1;
            return;
        };
        if !pkt.verify_checksum(pseudo(src, dst, seg.len())) {
            self.stats.bad_checksum += 1;
            return;
        }
        let Ok(repr) = TcpRepr::parse(&pkt) else {
            self.stats.malformed += 1;
            return;
        };
        let payload = pkt.payload();
        let local = SocketAddr::new(dst, repr.dst_port);
        let remote = SocketAddr::new(src, repr.src_port);
        if let Some(&id) = self.by_tuple.get(&(local, remote)) {
            if let Some(conn) = self.conns.get_mut(&id) {
                if let Some(opt) = rcp {
                    conn.on_rcp_option(now, opt);
                }
                if let Some(opt) = xcp {
                    conn.on_xcp_option(now, opt);
                }
                conn.handle_segment_ecn(now, &repr, payload, ecn);
            }
            return;
        }
        self.stats.no_connection += 1;
        let flags = repr.flags;
        if flags & RST != 0 {
            return;
        }
        let listener = self.listeners.get(&repr.dst_port).copied();
        if let (true, Some(tcp)) = (flags & SYN != 0 && flags & ACK == 0, listener) {
            if repr.src_port == 0 || src.is_unspecified() || src.is_multicast() {
                return;
            }
            let half_open = self
                .conns
                .values()
                .filter(|c| c.state() == State::SynReceived)
                .count();
            if half_open >= self.cfg.max_half_open || self.conns.len() >= self.cfg.max_connections {
                self.stats.syns_dropped += 1;
                return;
            }
            let init = ConnInit {
                local,
                remote,
                iss: self.isn.isn(now, local, remote),
                ts_offset: self.isn.ts_offset(local, remote),
            };
            let mut conn = Connection::accept(now, tcp, init, &repr);
            if let Some(opt) = rcp {
                conn.on_rcp_option(now, opt);
            }
            if let Some(opt) = xcp {
                conn.on_xcp_option(now, opt);
            }
            self.insert(conn);
            self.stats.accepted += 1;
            return;
        }
        // RFC 9293 §3.10.7.1: reset for a segment to a closed port
        let seg_len =
            payload.len() as u32 + u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0);
        let (seq, ack) = if flags & ACK != 0 {
            (repr.ack, None)
        } else {
            (0, Some(repr.seq.wrapping_add(seg_len)))
        };
        self.queue_rst(now, local, remote, seq, ack);
    }

    fn queue_rst(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        seq: u32,
        ack: Option<u32>,
    ) {
        if now.saturating_duration_since(self.rst_refill) >= Duration::from_secs(1) {
            self.rst_refill = now;
            self.rst_tokens = self.cfg.rst_per_sec;
        }
        if self.rst_tokens == 0 || self.rst_queue.len() >= self.cfg.max_queued_rsts {
            self.stats.rsts_suppressed += 1;
            return;
        }
        self.rst_tokens -= 1;
        let repr = TcpRepr {
            src_port: local.port(),
            dst_port: remote.port(),
            seq,
            ack: ack.unwrap_or(0),
            flags: RST | if ack.is_some() { ACK } else { 0 },
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
        };
        let hl = if remote.is_ipv4() { 20 } else { 40 };
        let mut pkt = vec![0u8; hl + 20];
        let Some(seg) = pkt.get_mut(hl..) else {
            return;
        };
        if repr
            .emit(seg, &[], pseudo(local.ip(), remote.ip(), 20))
            .is_err()
        {
            return;
        }
        let ident = self.next_ident();
        if write_ip_header(
            &mut pkt,
            local.ip(),
            remote.ip(),
            20,
            true,
            ident,
            self.cfg.ttl,
            &[],
        )
        .is_none()
        {
            return;
        }
        self.rst_queue.push_back(pkt);
        self.stats.rsts_sent += 1;
    }
}

fn pseudo(src: IpAddr, dst: IpAddr, len: usize) -> u32 {
    match (src, dst) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            checksum::pseudo_v4(a.octets(), b.octets(), 6, len as u32)
        }
        (a, b) => checksum::pseudo_v6(v6(a), v6(b), 6, len as u32),
    }
}

fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
    }
}

/// Writes an IPv4 header with `options` (none, the 8-byte RCP option or
/// the 16-byte padded XCP option: a multiple of 4 bytes) or an IPv6 header
/// (40 bytes; `options` ignored) for a TCP segment of `tcp_len` bytes at
/// the start of `buf` (the segment must already sit right behind where the
/// header ends); returns the packet length.
#[allow(clippy::too_many_arguments)]
fn write_ip_header(
    buf: &mut [u8],
    src: IpAddr,
    dst: IpAddr,
    tcp_len: usize,
    dont_frag: bool,
    ident: u16,
    ttl: u8,
    options: &[u8],
) -> Option<usize> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let opt_len = options.len();
            let repr = ipv4::Ipv4Repr {
                src: s.octets(),
                dst: d.octets(),
                protocol: ipv4::PROTO_TCP,
                ttl,
                ident,
                dont_frag,
                more_frags: false,
                frag_offset: 0,
                dscp_ecn: 0,
                payload_len: opt_len + tcp_len,
            };
            repr.emit(buf).ok()?;
            if opt_len > 0 {
                // The options follow the fixed header (IHL 7 or 9).
                *buf.first_mut()? = 0x40 | ((ipv4::MIN_HEADER_LEN + opt_len) / 4) as u8;
                buf.get_mut(ipv4::MIN_HEADER_LEN..ipv4::MIN_HEADER_LEN + opt_len)?
                    .copy_from_slice(options);
                ipv4::Ipv4Packet::new_unchecked(buf.get_mut(..ipv4::MIN_HEADER_LEN + opt_len)?)
                    .fill_checksum();
            }
            Some(ipv4::MIN_HEADER_LEN + opt_len + tcp_len)
        }
        (s, d) => {
            let h = buf.get_mut(..ipv6::HEADER_LEN)?;
            let mut p = ipv6::Ipv6Packet::new_unchecked(h);
            p.set_version_class_flow(0, 0);
            p.set_payload_len(u16::try_from(tcp_len).ok()?);
            p.set_next_header(6);
            p.set_hop_limit(ttl);
            p.set_src_addr(v6(s));
            p.set_dst_addr(v6(d));
            Some(ipv6::HEADER_LEN + tcp_len)
        }
    }
}

/// What [`Out::emit`] made of one connection.
enum Emitted {
    /// A packet of this many bytes is in the buffer.
    Packet(usize),
    /// The connection had nothing to send.
    Nothing,
    /// The buffer is too small: give up (as `poll_transmit` does).
    Abort,
}

/// The parts of a [`Stack`] that writing a connection's packet touches,
/// borrowed apart from the connection table.
struct Out<'a> {
    ip_ident: &'a mut u16,
    rr_cursor: &'a mut u64,
    packets_out: &'a mut u64,
    ttl: u8,
}

impl Out<'_> {
    /// Writes connection `id`'s next packet, if it has one, into `buf`.
    fn emit(&mut self, id: u64, conn: &mut Connection, now: Instant, buf: &mut [u8]) -> Emitted {
        let (local, remote) = (conn.local_addr(), conn.remote_addr());
        let base = if remote.is_ipv4() {
            ipv4::MIN_HEADER_LEN
        } else {
            ipv6::HEADER_LEN
        };
        // Room for the native-RCP or XCP IPv4 option, if the connection
        // may send one; a segment with less (or none) moves up.
        let room = conn.ip_options_room();
        let Some(seg_buf) = buf.get_mut(base + room..) else {
            return Emitted::Abort;
        };
        let Some(t) = conn.poll_transmit(now, seg_buf) else {
            return Emitted::Nothing;
        };
        *self.rr_cursor = id;
        *self.ip_ident = self.ip_ident.wrapping_add(1);
        let ident = *self.ip_ident;
        let mut opt_buf = [0u8; XcpOption::PADDED_LEN];
        let opt_len = match (t.rcp_option, t.xcp_option) {
            (Some(o), _) if room >= RcpOption::LEN => o.emit(&mut opt_buf).ok(),
            (_, Some(o)) if room >= XcpOption::PADDED_LEN => o.emit_padded(&mut opt_buf).ok(),
            _ => Some(0),
        };
        let Some(opt_len) = opt_len else {
            return Emitted::Abort;
        };
        if opt_len != room {
            buf.copy_within(base + room..base + room + t.len, base + opt_len);
        }
        let Some(opts) = opt_buf.get(..opt_len) else {
            return Emitted::Abort;
        };
        let Some(n) = write_ip_header(
            buf,
            local.ip(),
            remote.ip(),
            t.len,
            t.dont_frag,
            ident,
            self.ttl,
            opts,
        ) else {
            return Emitted::Abort;
        };
        if t.ecn != Ecn::NotEct {
            // cannot fail: a well-formed header was just written
            if let Some(b) = buf.get_mut(..n) {
                let _ = set_ecn(b, t.ecn);
            } else {
                return Emitted::Abort;
            }
        }
        *self.packets_out += 1;
        Emitted::Packet(n)
    }
}

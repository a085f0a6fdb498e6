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
//! Cost per call: O(log n) in the number of connections n, not O(n): the
//! stack keeps a timer heap and the sets of connections that may have a
//! packet or an event ([`sched`](self) module, DESIGN §6.8). Connections
//! are still serviced in connection-id order (round robin from the last
//! sender), so the packets and events are exactly those a full scan would
//! produce.
//!
//! ECN: the ECN codepoint of each arriving packet (of a reassembled
//! datagram: see [`reasm`]) goes to its connection with the segment
//! ([`Connection::handle_segment_ecn`]); outgoing packets get the codepoint
//! the connection chose ([`Transmit::ecn`](crate::Transmit::ecn)).

mod hash;
mod input;
mod output;
pub mod reasm;
mod sched;

use hash::OneWriteState;
use output::{Emitted, Out, pseudo, write_ip_header};

use crate::config::{StackConfig, TcpConfig};
use crate::conn::{ConnInit, Connection, Event, State};
use crate::isn::{IsnGenerator, tuple_hash};
use ka_codec::rcp_option::{self, RcpOption};
use ka_codec::wire::ecn::{Ecn, set_ecn};
use ka_codec::wire::tcp::{ACK, FIN, RST, SYN, TcpOptions, TcpPacket, TcpRepr};
use ka_codec::wire::{checksum, ipv4, ipv6};
use ka_codec::xcp_option::{self, XcpOption};
use reasm::{FragKey, Fragment, Reassembler};
use sched::Sched;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::ops::Bound;
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
    /// Packets given to `handle_packet`, and the segments of those given
    /// to `handle_coalesced`.
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
    /// Boxed: a B-tree node holds eleven values, so unboxed a stack with a
    /// single connection would carry eleven connections' worth of memory.
    conns: BTreeMap<u64, Box<Connection>>,
    /// Keyed SipHash fed in one write ([`hash`]): looked up per packet.
    by_tuple: HashMap<Tuple, u64, OneWriteState>,
    /// Boxed for the same reason (a `TcpConfig` is a few hundred bytes).
    listeners: BTreeMap<u16, Box<TcpConfig>>,
    next_id: u64,
    rr_cursor: u64,
    reasm: Reassembler,
    rst_queue: VecDeque<Vec<u8>>,
    rst_tokens: u32,
    rst_refill: Instant,
    ip_ident: u16,
    events: VecDeque<(ConnHandle, Event)>,
    stats: StackStats,
    /// Timer heap and candidate sets. In a `RefCell` because
    /// `poll_timeout` (`&self`) recomputes deadlines of touched
    /// connections; never borrowed across calls.
    sched: RefCell<Sched>,
    /// The latest `now` of a `poll_transmit` that found nothing to send
    /// anywhere: every connection's clock has reached it (applied lazily,
    /// see [`Connection::advance_clock`]).
    drained_at: Option<Instant>,
    /// Reused list of connection ids (due timers, event candidates).
    id_scratch: Vec<u64>,
}

/// What the IP header of a TCP segment's packet carried for the connection:
/// the native-RCP and XCP options (IPv4, unfragmented or leading
/// fragments) and the ECN codepoint.
#[derive(Debug, Clone, Copy)]
struct IpInfo {
    rcp: Option<RcpOption>,
    xcp: Option<XcpOption>,
    ecn: Ecn,
    /// The packet is a super-segment the device coalesced from this many
    /// segments ([`Stack::handle_coalesced`]): its TCP checksum is the
    /// kernel's partial one and is not verified. `None` for a plain packet.
    coalesced: Option<u16>,
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
            by_tuple: HashMap::default(),
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
            sched: RefCell::new(Sched::default()),
            drained_at: None,
            id_scratch: Vec::new(),
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
        self.listeners.insert(port, Box::new(self.cfg.tcp));
    }

    /// Accept connections to `port` with per-listener TCP parameters
    /// (e.g. a receiver with KA disabled).
    pub fn listen_with(&mut self, port: u16, tcp: TcpConfig) {
        self.listeners.insert(port, Box::new(tcp));
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

    fn insert(&mut self, mut conn: Connection) -> ConnHandle {
        conn.set_checksum_offload(self.cfg.checksum_offload);
        let id = self.next_id;
        self.next_id += 1;
        self.by_tuple
            .insert((conn.local_addr(), conn.remote_addr()), id);
        self.conns.insert(id, Box::new(conn));
        self.sched.get_mut().touch(id);
        ConnHandle(id)
    }

    /// Connection `id` for a call that may change it: its clock is brought
    /// up to date and it becomes a candidate for timers, transmission and
    /// events.
    fn conn_touch(&mut self, id: u64) -> Option<&mut Connection> {
        let c: &mut Connection = self.conns.get_mut(&id)?;
        self.sched.get_mut().touch(id);
        if let Some(t) = self.drained_at {
            c.advance_clock(t);
        }
        Some(c)
    }

    /// A connection, while it exists. Its clock, up to which
    /// `stats().time_in_ka` is counted, may lag behind the stack's while the
    /// stack has had no reason to service it; [`Stack::conn_mut`] brings it
    /// up to date (DESIGN §6.8).
    pub fn conn(&self, h: ConnHandle) -> Option<&Connection> {
        self.conns.get(&h.0).map(|c| &**c)
    }

    /// A connection for `write`/`read`/`close`/`abort`. After using it,
    /// drain `poll_transmit`.
    pub fn conn_mut(&mut self, h: ConnHandle) -> Option<&mut Connection> {
        self.conn_touch(h.0)
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

    /// Events of every connection that may have some, in id order.
    fn collect_events(&mut self) {
        let mut ids = std::mem::take(&mut self.id_scratch);
        self.sched.get_mut().events.take_sorted(&mut ids);
        for &id in &ids {
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            while let Some(ev) = c.poll_event() {
                self.events.push_back((ConnHandle(id), ev));
            }
        }
        self.id_scratch = ids;
    }

    fn remove(&mut self, id: u64) {
        if let Some(c) = self.conns.remove(&id) {
            self.by_tuple.remove(&(c.local_addr(), c.remote_addr()));
        }
        self.sched.get_mut().forget(id);
    }

    /// Recomputes the deadlines of connections touched since the last call.
    fn flush_timers(&mut self) {
        let conns = &self.conns;
        self.sched.get_mut().flush(|id| timer_state(conns, id));
    }

    /// The earliest time `handle_timeout` (or pacing in `poll_transmit`)
    /// has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut sched = self.sched.borrow_mut();
        sched.flush(|id| timer_state(&self.conns, id));
        sched
            .earliest()
            .into_iter()
            .chain(self.reasm.poll_timeout())
            .min()
    }

    /// Runs all timers due at `now` (connections in id order).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.reasm.handle_timeout(now);
        self.flush_timers();
        let mut due = std::mem::take(&mut self.id_scratch);
        self.sched.get_mut().take_due(now, &mut due);
        for &id in &due {
            let Some(c) = self.conn_touch(id) else {
                continue;
            };
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
        self.id_scratch = due;
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
        // Connections whose timers are due may send (pacing, delayed ACK).
        // No flush needed: a connection touched since the last one is a
        // candidate already, and the others' heap entries are current.
        let sched = self.sched.get_mut();
        sched.take_due(now, &mut self.id_scratch);
        for id in &self.id_scratch {
            if let (Some(c), Some(t)) = (self.conns.get_mut(id), self.drained_at) {
                c.advance_clock(t);
            }
        }
        // Round robin over the candidates: those after the last connection
        // that sent, then from the first up to it (each visited once).
        let cursor = self.rr_cursor;
        let mut out = Out {
            ip_ident: &mut self.ip_ident,
            rr_cursor: &mut self.rr_cursor,
            packets_out: &mut self.stats.packets_out,
            ttl: self.cfg.ttl,
        };
        let mut lo = Bound::Excluded(cursor);
        let mut wrapped = false;
        loop {
            let hi = if wrapped {
                Bound::Included(cursor)
            } else {
                Bound::Unbounded
            };
            let Some(&id) = sched.ready.range((lo, hi)).next() else {
                if wrapped {
                    break;
                }
                wrapped = true;
                lo = Bound::Unbounded;
                continue;
            };
            lo = Bound::Excluded(id);
            let Some(conn) = self.conns.get_mut(&id) else {
                sched.ready.remove(&id);
                continue;
            };
            if let Some(t) = self.drained_at {
                conn.advance_clock(t);
            }
            let emitted = out.emit(id, conn, now, buf);
            // Polling may have moved its timers (pacing) either way.
            sched.touch(id);
            match emitted {
                Emitted::Packet(n) => return Some(n),
                Emitted::Nothing => {
                    sched.ready.remove(&id);
                }
                Emitted::Abort => return None,
            }
        }
        // Every connection has now been offered `now` with nothing to send.
        self.drained_at = Some(self.drained_at.map_or(now, |t| t.max(now)));
        None
    }

    /// Half-open (SYN-RECEIVED) connections.
    fn half_open(&mut self) -> usize {
        self.flush_timers();
        self.sched.get_mut().half_open()
    }

    fn next_ident(&mut self) -> u16 {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        self.ip_ident
    }
}

/// What the scheduler keeps of connection `id`: its deadline and whether it
/// is half-open.
fn timer_state(conns: &BTreeMap<u64, Box<Connection>>, id: u64) -> (Option<Instant>, bool) {
    conns.get(&id).map_or((None, false), |c| {
        (c.poll_timeout(), c.state() == State::SynReceived)
    })
}

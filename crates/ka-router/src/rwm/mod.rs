//! RWM — receive-window modulation (DESIGN §5.2; seed
//! `rwm-receive-window-modulation.txt`, Ciaccia et al.).
//!
//! An edge router caps the receive window every TCP receiver advertises at
//! its flow's share of the access link's bandwidth-delay product, so a
//! loss-based sender (CUBIC) never has more in flight than the link holds
//! and stops filling buffers — with no change at either endpoint.
//!
//! ## Where it sits
//!
//! RWM is the *flow middlebox* stage of the port pipeline (DESIGN §3.1),
//! but it needs **both directions** of every connection (the SYN one way,
//! the SYN-ACK the other; data one way, ACKs the other), so it is not a
//! stage inside one [`Port`](crate::Port): an [`Rwm`] belongs to whoever
//! owns a router's two ports and is called as
//!
//! ```text
//! rwm.process(now, side, &mut packet);   // then
//! port[side].push(now, packet);
//! ```
//!
//! for every packet, in both directions — in the `ka-router` binary the
//! shell's two-port forwarder (`--rwm`), in the simulator the router node
//! of a hop with an `rwm` table. It is sans-IO like the ports: time is the
//! `Instant` passed in, nothing is read from a clock. Deploy it on the edge
//! router of the receivers' site (the seed's Fig. 2), where the access
//! link is the bottleneck and every packet of a connection crosses the box.
//!
//! ## What it does (seed Eq. 1, Alg. 1)
//!
//! * **Handshake.** A SYN (without ACK) of an unknown connection opens a
//!   half-open entry: the initiator's ISN, window-scale and MSS options,
//!   and the time. The SYN-ACK that acknowledges it adds the responder's;
//!   the initiator's first segment acknowledging the SYN-ACK completes it.
//!   The **RTT** is the time from the SYN to that ACK, as the router sees
//!   them: SYN → SYN-ACK is the responder's side of the router, SYN-ACK →
//!   ACK the initiator's, and their sum is the connection's RTT. A
//!   retransmitted SYN (same ISN) restarts the clock — the SYN-ACK most
//!   likely answers the copy that got through (the first was lost) — and
//!   a SYN with a new ISN restarts the handshake. Window scaling follows
//!   RFC 7323: each side's shift if *both* sent the option (shifts above
//!   14 count as 14), else none. Simultaneous opens are not tracked.
//!   The RTT is never refreshed afterwards (TCP timestamps would give
//!   samples, but they include the receiver's delayed-ACK wait and any
//!   queue at the time; the seed, too, uses the handshake only). A flow
//!   whose handshake met a long queue therefore keeps a larger cap, which
//!   errs towards throughput, not towards starving it.
//! * **Classes.** A connection's class is the first [`RwmClass`] whose
//!   ports contain the responder's port (the SYN's destination port), or
//!   the default class. Class j gets `C_j = P_j · C`; the default class
//!   gets [`RwmConfig::default_share`] (default: what the classes leave).
//! * **Cap.** For a segment of an established connection travelling on
//!   `side`, sent by endpoint e (it advertises how much e will receive):
//!
//!   ```text
//!   BDP_f  = C_j[side.other()] · RTT_f / n_j · (1 + δ)        bytes
//!   cap    = max(BDP_f, min_window_segments · MSS_e)
//!   window ← min(advertised, max(cap >> wscale_e, 1))
//!   ```
//!
//!   `C_j[side.other()]` because the window limits the data travelling the
//!   other way. n_j is the number of *active* established flows of the
//!   class: those that sent a segment (either way) within
//!   [`RwmConfig::active_window`] (1 s) — the seed divides by the whole
//!   class table, which would let idle keep-alive connections dilute
//!   everyone's share. The window is rewritten in place and the TCP
//!   checksum patched with RFC 1624's incremental update
//!   ([`TcpPacket::set_window_incremental`](ka_codec::wire::tcp::TcpPacket::set_window_incremental)).
//!   Windows in both directions are capped, each with its own direction's
//!   capacity; the class count is shared, so a class never gets more than
//!   its share either way (a flow that only downloads just counts once).
//!   SYN and SYN-ACK windows (never scaled) are left alone.
//! * **Never** raises a window (the receiver's own flow control wins, seed
//!   §V-A), never writes a zero window, never touches a connection whose
//!   handshake it did not see, non-TCP packets, non-first fragments, or
//!   anything that does not parse (IPv4 and IPv6, with IPv6 extension
//!   headers walked by [`ka_codec::wire::ipv6::layout`]; a leading
//!   fragment is handled if the whole TCP header is in it).
//!
//! ## Where this differs from DESIGN §5.2 and the seed, and why
//!
//! * n_j counts the class's *active* flows, not every flow in the table
//!   (idle keep-alive connections would otherwise shrink everyone's
//!   window for as long as they are remembered).
//! * The cap has a floor of `min_window_segments` (2) MSS and the field at
//!   least one scaled unit: `BDP_f >> wscale` can be 0 (small BDP, many
//!   flows, scale 14), and a zero window would stall a flow instead of
//!   slowing it.
//! * Windows of both directions are capped (each with the capacity of the
//!   direction its data takes), so RWM needs no configuration of which
//!   side is the receiver; for a one-way download the sender's own window
//!   is irrelevant anyway.
//! * The class of a flow is chosen by the responder's port only.
//!
//! ## Memory (bounded)
//!
//! At most [`RwmConfig::max_flows`] established connections (default
//! 65 536) plus [`RwmConfig::max_half_open`] handshakes (default 4 096).
//! The table's index grows as they come, to at most
//! [`RwmConfig::max_table_entries`] positions (4/3 of the two caps), each
//! 64 bytes (a 16-byte entry in a bucket, 48 bytes of cold state): about
//! 6 MiB at the defaults. Handshakes live in their own LRU list, so a SYN
//! flood only ever evicts other half-open entries. A new established flow
//! that finds the table full evicts the least recently seen flow if that
//! one is idle (inactive); if even that one is active, the new flow is not
//! tracked (left alone). Connections leave modulation on a RST, once both
//! sides have sent a FIN — only a RST or FIN the receiver would accept:
//! valid TCP checksum, sequence number in the window RWM infers (the
//! `accept` module, RFC 5961) — and after [`RwmConfig::idle_timeout`]
//! without a segment (300 s, plus at most a quarter of the active window);
//! handshakes after [`RwmConfig::handshake_timeout`] (75 s). A connection
//! closed by RST or FIN is kept in the half-open list (same cap and
//! timeout) so that data it goes on sending re-admits it. Expiry is
//! amortised O(1) per packet (see the table module).
//!
//! ## Per-packet cost
//!
//! A segment of an established connection that was already seen in the
//! current quarter of the active window (nearly every segment of a busy
//! flow) costs: one comparison of its `Instant` with the table's next
//! deadline (no clock arithmetic), a fixed-offset parse of a plain IPv4
//! header, a keyed folded-multiply hash (the `hash` module's docs say
//! why collisions cannot be aimed), **one 64-byte bucket read** holding
//! everything the cap needs, a multiply and the RFC 1624 patch — no
//! writes to the table. [`Rwm::process_batch`] takes the packets of one
//! wake-up together and prefetches their buckets before processing them,
//! so with a table larger than the caches their misses overlap; the
//! `ka-router` binary's loop hands it every packet ready at a wake-up.
//! Measured in `docs/PERFORMANCE.md`.

mod accept;
mod buckets;
mod config;
mod handshake;
mod hash;
mod segment;
mod table;
pub mod window;

use std::time::Instant;

use ka_codec::wire::tcp::{ACK, FIN, RST, SYN};
use ka_codec::wire::{Layout, Segment, SegmentMut};

use buckets::{Hot, Probe, Stage};
pub use config::{
    DEFAULT_MAX_FLOWS, DEFAULT_MAX_HALF_OPEN, MAX_CLASSES, RwmClass, RwmConfig, RwmConfigError,
    Side,
};
use segment::Skip;
use table::{Table, Timers};

use crate::time::{Clock, duration_ns};

/// Packets [`Rwm::process_batch`] parses ahead of processing them: enough
/// to keep the memory system busy, few enough that their headers stay in
/// L1.
pub const BATCH: usize = 16;

/// MSS assumed for an IPv4 endpoint whose SYN carried none (RFC 9293
/// §3.7.1).
const DEFAULT_MSS_V4: u16 = 536;
/// The same for IPv6 (RFC 8200 §5: 1280-byte minimum MTU − 60).
const DEFAULT_MSS_V6: u16 = 1220;

/// What the common case needs of a parsed segment (kept for each packet
/// of a batch between parsing and processing).
#[derive(Debug, Clone, Copy)]
struct Quick {
    fp: u64,
    /// The packet's one parse (the window is rewritten through it).
    layout: Layout,
    window: u16,
    flags: u8,
    /// The sender: the key's low (0) or high (1) endpoint.
    from: u8,
}

impl Quick {
    #[inline]
    fn of(seg: &segment::TcpSeg, fp: u64, layout: Layout) -> Self {
        Quick {
            fp,
            layout,
            window: seg.window,
            flags: seg.flags,
            from: u8::from(seg.from != 0),
        }
    }
}

/// What [`Rwm::process`] did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwmOutcome {
    /// The window was lowered from `advertised` to `written` (unscaled
    /// field values) and the checksum patched.
    Rewritten {
        /// The field as the receiver sent it.
        advertised: u16,
        /// The field now.
        written: u16,
    },
    /// A segment of a tracked connection whose window was already at or
    /// below the cap (or whose class has no share).
    Unchanged,
    /// Part of a handshake (SYN, SYN-ACK, the completing ACK is
    /// [`RwmOutcome::Rewritten`] or `Unchanged`), or a SYN RWM ignored.
    Handshake,
    /// TCP, but of a connection whose handshake RWM did not see (or could
    /// not track): untouched.
    Untracked,
    /// Not TCP (or a non-first fragment): untouched.
    NotTcp,
    /// An IP or TCP header that does not parse: untouched.
    Malformed,
}

/// RWM's counters and gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RwmStats {
    /// Established connections tracked now.
    pub flows: u64,
    /// Of those, active (counted in their class's n_j).
    pub active_flows: u64,
    /// Handshakes in progress tracked now.
    pub half_open: u64,
    /// TCP segments seen.
    pub segments: u64,
    /// Windows lowered, by the side the segment travelled
    /// ([`Side::index`]).
    pub windows_rewritten: [u64; 2],
    /// Segments of connections whose handshake was not seen.
    pub untracked: u64,
    /// Handshakes completed (RTT measured).
    pub handshakes: u64,
    /// Sum of the handshake RTTs measured, ns (mean = this / handshakes).
    pub handshake_rtt_sum_ns: u64,
    /// Smallest handshake RTT measured, ns (0 before the first).
    pub handshake_rtt_min_ns: u64,
    /// Largest handshake RTT measured, ns.
    pub handshake_rtt_max_ns: u64,
    /// Connections that left modulation on an accepted RST or after both
    /// FINs (see [`RwmStats::rst_fin_rejected`] for the others).
    pub closed: u64,
    /// RST and FIN segments of tracked connections that changed nothing
    /// because their receiver would not accept them: a bad TCP checksum
    /// or a sequence number outside the window RWM infers (the `accept`
    /// module's rule, DESIGN §5.2).
    pub rst_fin_rejected: u64,
    /// Closed connections made active again by a data segment (the
    /// receiver had not in fact accepted the RST or FIN).
    pub readmitted: u64,
    /// Closed connections kept now (for re-admission), in the half-open
    /// table's room.
    pub closed_kept: u64,
    /// Idle established connections evicted to make room (table full).
    pub evicted: u64,
    /// Half-open entries evicted to make room for newer SYNs.
    pub evicted_half_open: u64,
    /// Connections not tracked for want of room: handshakes completed
    /// while the table was full of active flows, or (rarely) a SYN whose
    /// bounded lookup path in the table's index had no free entry.
    pub refused: u64,
    /// Established connections forgotten after the idle timeout.
    pub expired: u64,
    /// Handshakes forgotten after the handshake timeout.
    pub expired_half_open: u64,
    /// Packets that were not TCP (or non-first fragments).
    pub not_tcp: u64,
    /// Packets whose IP or TCP header did not parse.
    pub malformed: u64,
}

/// The receive-window modulator of one router (see the module docs).
pub struct Rwm {
    config: RwmConfig,
    clock: Clock,
    now: u64,
    /// The table's next check (granule end, earliest deadline) as an
    /// `Instant`: before it, a segment on the fast path needs no clock
    /// arithmetic at all, one comparison.
    check_at: Instant,
    table: Table,
    stats: RwmStats,
}

impl std::fmt::Debug for Rwm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the table: it can hold 65 536 entries.
        f.debug_struct("Rwm")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Rwm {
    /// A modulator starting at `now`. The configuration is validated.
    pub fn new(config: RwmConfig, now: Instant) -> Result<Self, RwmConfigError> {
        config.validate()?;
        let scale = 1.0 + config.delta;
        let per_side = |share: f64| -> [f64; 2] {
            Side::ALL.map(|s| {
                let c = config.capacity_bps.get(s.index()).copied().unwrap_or(0);
                c as f64 / 8.0 * share * scale
            })
        };
        let mut rate: Vec<[f64; 2]> = config.classes.iter().map(|c| per_side(c.share)).collect();
        rate.push(per_side(config.default_class_share()));
        let timers = Timers {
            active_ns: duration_ns(config.active_window),
            idle_ns: duration_ns(config.idle_timeout),
            handshake_ns: duration_ns(config.handshake_timeout),
        };
        Ok(Rwm {
            table: Table::new(config.max_flows, config.max_half_open, &rate, timers),
            clock: Clock::new(now),
            now: 0,
            check_at: now,
            stats: RwmStats::default(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RwmConfig {
        &self.config
    }

    /// Counters and gauges (gauges as of the last `process`/`handle_timeout`).
    pub fn stats(&self) -> RwmStats {
        let c = self.table.counters;
        RwmStats {
            flows: self.table.established() as u64,
            active_flows: self.table.active(),
            half_open: self.table.half_open() as u64,
            closed_kept: self.table.closed() as u64,
            evicted: c.evicted,
            evicted_half_open: c.evicted_half_open,
            refused: c.refused,
            expired: c.expired,
            expired_half_open: c.expired_half_open,
            ..self.stats
        }
    }

    /// n_j: the active flows of class `class` (index into
    /// [`RwmConfig::classes`]; `classes.len()` is the default class).
    pub fn active_in_class(&self, class: usize) -> u32 {
        u8::try_from(class).map_or(0, |c| self.table.active_in(c))
    }

    /// Table positions allocated so far (at most
    /// [`RwmConfig::max_table_entries`]): the figure memory grows with.
    pub fn allocated_entries(&self) -> usize {
        self.table.slots()
    }

    /// Applies the passage of time (activity, idle and handshake expiry)
    /// up to `now`; `process` does this too.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    fn advance(&mut self, now: Instant) -> u64 {
        let t = self.time(now);
        self.table.expire(t);
        self.sync_check();
        t
    }

    /// `now` in ns, never earlier than a time already seen.
    fn time(&mut self, now: Instant) -> u64 {
        let t = self.clock.ns(now).max(self.now);
        self.now = t;
        t
    }

    fn sync_check(&mut self) {
        self.check_at = self.clock.instant(self.table.next_check());
    }

    fn class_of(&self, responder_port: u16) -> u8 {
        let i = self
            .config
            .classes
            .iter()
            .position(|c| c.ports.contains(&responder_port))
            .unwrap_or(self.config.classes.len());
        u8::try_from(i).unwrap_or(u8::MAX)
    }

    /// Looks at one packet travelling through the router on `side` (a
    /// whole IP packet, before it enters that side's port) and lowers its
    /// TCP window if it is above the flow's cap. Never panics, never
    /// changes the packet's length or anything but the TCP window and
    /// checksum.
    pub fn process(&mut self, now: Instant, side: Side, packet: &mut [u8]) -> RwmOutcome {
        match Layout::parse(packet) {
            Ok(layout) => {
                self.process_parsed(now, side, &mut SegmentMut::with_layout(packet, layout))
            }
            Err(_) => {
                if now >= self.check_at {
                    self.advance(now);
                }
                self.skipped(Skip::unparsed(packet))
            }
        }
    }

    /// [`Rwm::process`] for a packet its caller parsed already (e.g. a
    /// router that parsed it for its own stages): the same, without parsing
    /// again.
    #[inline]
    pub fn process_parsed(
        &mut self,
        now: Instant,
        side: Side,
        packet: &mut SegmentMut<'_>,
    ) -> RwmOutcome {
        if now >= self.check_at {
            self.advance(now);
        }
        match segment::of_view(&packet.as_segment()) {
            Ok(seg) => {
                let fp = self.table.fingerprint(&seg.key);
                self.process_segment(now, side, packet, &seg, fp)
            }
            Err(skip) => self.skipped(skip),
        }
    }

    /// [`Rwm::process`] for packets read together (in the `ka-router`
    /// binary: every packet ready when the forwarding thread wakes up), in
    /// their order, with the same effect as calling `process` on each in
    /// turn. It works through them [`BATCH`] at a time: first it parses
    /// each and asks the CPU to fetch its connection's bucket, then it
    /// processes them, so the lookups' cache misses overlap instead of
    /// coming one after another.
    pub fn process_batch<'p>(
        &mut self,
        packets: impl IntoIterator<Item = (Instant, Side, &'p mut [u8])>,
    ) {
        self.process_batch_parsed(
            packets
                .into_iter()
                .map(|(now, side, packet)| (now, side, packet, None)),
        );
    }

    /// [`Rwm::process_batch`] for packets their caller parsed already: each
    /// comes with [`Layout::parse`] of its bytes (`None`: not parsed, or not
    /// IP), which this stage then takes instead of parsing again.
    pub fn process_batch_parsed<'p>(
        &mut self,
        packets: impl IntoIterator<Item = (Instant, Side, &'p mut [u8], Option<Layout>)>,
    ) {
        // Between the two passes only what the common case needs is kept
        // ([`Quick`]: the packet's layout, the fingerprint and three header
        // fields, 32 bytes); anything else reads RWM's facts from the
        // layout again (keeping whole parsed headers in an array cost
        // more, in store-forwarding stalls, than the misses it saved).
        let mut packets = packets.into_iter();
        loop {
            let mut items: [Option<(Instant, Side, &'p mut [u8])>; BATCH] = [const { None }; BATCH];
            let mut quick = [None::<Quick>; BATCH];
            let mut n = 0;
            for (item, q) in items.iter_mut().zip(&mut quick) {
                let Some((now, side, packet, parsed)) = packets.next() else {
                    break;
                };
                if let Some(layout) = parsed.or_else(|| Layout::parse(packet).ok())
                    && let Ok(seg) = segment::of_view(&Segment::with_layout(packet, layout))
                {
                    let fp = self.table.fingerprint(&seg.key);
                    self.table.prefetch(fp);
                    *q = Some(Quick::of(&seg, fp, layout));
                }
                *item = Some((now, side, packet));
                n += 1;
            }
            for (item, q) in items.iter_mut().zip(&quick) {
                let Some((now, side, packet)) = item.take() else {
                    break;
                };
                if now >= self.check_at {
                    self.advance(now);
                }
                if let Some(q) = q
                    && q.flags & (SYN | RST | FIN) == 0
                    && let Probe::Found(pos) = self.table.probe(q.fp)
                    && let Some(&hot) = self.table.hot(pos)
                    && hot.is_fast(self.table.epoch())
                {
                    self.stats.segments += 1;
                    self.cap_window(
                        &mut SegmentMut::with_layout(packet, q.layout),
                        side,
                        q,
                        &hot,
                    );
                    continue;
                }
                // Not the common case: RWM's facts again from the parse
                // (when there was one), then the whole stage.
                match q {
                    Some(q) => {
                        let mut view = SegmentMut::with_layout(packet, q.layout);
                        match segment::of_view(&view.as_segment()) {
                            Ok(seg) => self.process_segment(now, side, &mut view, &seg, q.fp),
                            Err(skip) => self.skipped(skip),
                        }
                    }
                    None => match Layout::parse(packet) {
                        Ok(layout) => match segment::of_view(&Segment::with_layout(packet, layout))
                        {
                            Ok(seg) => {
                                let fp = self.table.fingerprint(&seg.key);
                                let mut view = SegmentMut::with_layout(packet, layout);
                                self.process_segment(now, side, &mut view, &seg, fp)
                            }
                            Err(skip) => self.skipped(skip),
                        },
                        Err(_) => self.skipped(Skip::unparsed(packet)),
                    },
                };
            }
            if n < BATCH {
                break;
            }
        }
    }

    fn skipped(&mut self, skip: Skip) -> RwmOutcome {
        match skip {
            Skip::NotTcp => {
                self.stats.not_tcp += 1;
                RwmOutcome::NotTcp
            }
            Skip::Malformed => {
                self.stats.malformed += 1;
                RwmOutcome::Malformed
            }
        }
    }

    /// [`Rwm::process`] after parsing and hashing.
    #[inline]
    fn process_segment(
        &mut self,
        now: Instant,
        side: Side,
        packet: &mut SegmentMut<'_>,
        seg: &segment::TcpSeg,
        fp: u64,
    ) -> RwmOutcome {
        self.stats.segments += 1;
        let flags = seg.flags;
        let pos = match self.table.probe(fp) {
            Probe::Found(pos) => pos,
            Probe::Absent(_) => {
                return self.absent(now, packet, seg, fp);
            }
        };
        let Some(&hot) = self.table.hot(pos) else {
            return RwmOutcome::Untracked;
        };
        // The common case: an established, active flow already moved in
        // this granule, no SYN/RST/FIN — one bucket read, no writes.
        if flags & (SYN | RST | FIN) == 0 && hot.is_fast(self.table.epoch()) {
            return self.cap_window(packet, side, &Quick::of(seg, fp, packet.layout()), &hot);
        }
        self.slow_path(now, side, packet, seg, fp, pos, hot)
    }

    /// A segment of a connection not in the table.
    #[cold]
    #[inline(never)]
    fn absent(
        &mut self,
        now: Instant,
        packet: &SegmentMut<'_>,
        seg: &segment::TcpSeg,
        fp: u64,
    ) -> RwmOutcome {
        if seg.flags & (SYN | ACK | RST) == SYN {
            let t = self.time(now);
            self.on_new_syn(&packet.as_segment(), seg, fp, t);
            self.sync_check();
            return RwmOutcome::Handshake;
        }
        self.stats.untracked += 1;
        RwmOutcome::Untracked
    }

    /// [`Rwm::process_segment`] beyond the common case — handshakes, RST,
    /// FIN, a flow to move or re-activate — out of line so the common case
    /// keeps a small stack frame.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn slow_path(
        &mut self,
        now: Instant,
        side: Side,
        packet: &mut SegmentMut<'_>,
        seg: &segment::TcpSeg,
        fp: u64,
        pos: u32,
        hot: Hot,
    ) -> RwmOutcome {
        let t = self.time(now);
        let outcome = 'path: {
            if !self.table.is(pos, fp) {
                // Another connection with the same tag (see the buckets
                // module): this one is not tracked.
                self.stats.untracked += 1;
                break 'path RwmOutcome::Untracked;
            }
            let flags = seg.flags;
            // A closed connection: data re-admits it (`accept` module).
            let readmitted = hot.stage() == Stage::Closed;
            if readmitted {
                match self.on_closed(&packet.as_segment(), seg, pos, t) {
                    Some(true) => {}
                    Some(false) => break 'path RwmOutcome::Handshake,
                    None => {
                        self.stats.untracked += 1;
                        break 'path RwmOutcome::Untracked;
                    }
                }
            }
            let established = readmitted || hot.stage() == Stage::Established;
            // RST and FIN count only if the receiver would accept them.
            let mut fin = flags & FIN != 0 && !readmitted;
            if (flags & RST != 0 || (fin && established))
                && !self.acceptable(&packet.as_segment(), seg, side, pos)
            {
                self.stats.rst_fin_rejected += 1;
                if flags & RST != 0 {
                    break 'path RwmOutcome::Unchanged;
                }
                fin = false;
            }
            if flags & RST != 0 {
                if established {
                    self.table.close(pos, t);
                    self.stats.closed += 1;
                } else {
                    self.table.remove(pos);
                }
                break 'path RwmOutcome::Unchanged;
            }
            if !established {
                if !self.on_handshake(&packet.as_segment(), seg, pos, t) {
                    break 'path RwmOutcome::Handshake;
                }
            } else {
                self.table.touch(pos, t);
                if flags & SYN != 0 {
                    // A SYN on an established connection: ignored (RFC 5961
                    // spirit; if the old connection is really gone, the entry
                    // ages out).
                    break 'path RwmOutcome::Handshake;
                }
                if fin || flags & FIN == 0 {
                    self.update_marks(&packet.as_segment(), seg, side, pos);
                }
            }
            let Some(&hot) = self.table.hot(pos) else {
                break 'path RwmOutcome::Untracked;
            };
            let outcome = self.cap_window(packet, side, &Quick::of(seg, fp, packet.layout()), &hot);
            if fin && self.table.fin(pos, seg.from) {
                self.table.close(pos, t);
                self.stats.closed += 1;
            }
            outcome
        };
        self.sync_check();
        outcome
    }

    /// Lowers the window of a segment of an established flow to its cap.
    #[inline(always)]
    fn cap_window(
        &mut self,
        packet: &mut SegmentMut<'_>,
        side: Side,
        seg: &Quick,
        f: &Hot,
    ) -> RwmOutcome {
        if seg.flags & ACK == 0 {
            return RwmOutcome::Unchanged;
        }
        // The class's rate for data travelling the other way (the window
        // limits what the peer sends), split among its active flows.
        let (rate, per_flow) = self.table.class_rate(f.class, side.other().index());
        if rate <= 0.0 {
            return RwmOutcome::Unchanged; // a class without a share
        }
        let e = usize::from(seg.from);
        let mss = f.mss.get(e).copied().unwrap_or(DEFAULT_MSS_V4);
        let floor = u64::from(self.config.min_window_segments) * u64::from(mss);
        let cap = window::flow_cap(per_flow, f.rtt_ns, floor);
        let advertised = seg.window;
        let written = window::capped_field(advertised, cap, f.wscale(e));
        if written >= advertised {
            return RwmOutcome::Unchanged;
        }
        packet.set_tcp_window(written);
        if let Some(c) = self.stats.windows_rewritten.get_mut(side.index()) {
            *c += 1;
        }
        RwmOutcome::Rewritten {
            advertised,
            written,
        }
    }
}

#[cfg(test)]
mod tests;

//! The bounded flow table.
//!
//! **Lookup.** Connections are found by a 64-bit *fingerprint* of their
//! key under a per-table random key ([`super::hash`]) in an index of
//! 64-byte buckets holding the 16-byte [`Hot`] part of four connections
//! each ([`super::buckets`]): a segment of an established connection
//! reads that one cache line and nothing else of the table. The [`Cold`]
//! part (full fingerprint, list links, handshake state) sits at the same
//! position of a parallel array and is read only by handshakes, list
//! moves and expiry. The full key is not stored: two connections are told
//! apart by their fingerprints. Two live connections with equal
//! fingerprints (about 65 536² / 2⁶⁵ ≈ 10⁻¹⁰ for a full table) cannot
//! both be tracked; for what the 32-bit tags in the buckets add, see the
//! buckets module.
//!
//! **Order.** Established flows are kept in a list in order of when they
//! were last moved to its front (head = most recent). Time is cut into
//! *granules* of 1/4 of the active window; a segment moves its flow only
//! if the flow was last moved in an earlier granule (the bucket keeps the
//! granule's low byte), so most segments write nothing at all; the list
//! is in order of last segment to within a granule. The active flows —
//! moved within the active window plus a granule, so a flow counts from
//! its segment for at least one active window and at most one window and
//! a granule — are a prefix of the list; `oldest_active` marks where it
//! ends, and advancing it as time passes deactivates flows one by one,
//! each exactly once per period of activity, so keeping n_j current costs
//! O(1) amortised per packet. (An active flow was moved at most six
//! granules ago, so its byte never aliases the current granule's.) Idle
//! expiry pops from the tail the same way (idle timeout plus at most a
//! granule), and handshakes have their own list (shared with connections
//! closed by RST or FIN, kept there for re-admission: [`Stage::Closed`]).
//! Expiry only runs when
//! the earliest deadline it could act on has passed (one comparison per
//! packet otherwise).
//!
//! **Size.** The index starts at four buckets. When live entries and
//! tombstones pass 7/8 of it, it is rebuilt: twice as large if the live
//! entries alone pass 3/4 (up to [`max_buckets`], ⌈(max_flows +
//! max_half_open) / 3⌉ buckets, so a full table is at most 3/4
//! occupied), else the same size with the tombstones cleared. Each position costs 16 bytes of index and 48 of
//! cold state: about 85 bytes per tracked connection at the cap.

use super::buckets::{Buckets, Hot, Probe, Stage, WAYS};
use super::hash::KeyedHash;
use super::segment::ConnKey;

/// "No entry" in the links.
const NIL: u32 = u32::MAX;

/// Buckets of a table capped at `entries` live connections: 3/4 full at
/// most.
pub(crate) fn max_buckets(entries: usize) -> usize {
    entries.div_ceil(3).max(1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Which {
    #[default]
    HalfOpen,
    Established,
}

/// The rest of an entry: full fingerprint, list links, handshake state.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cold {
    fp: u64,
    /// When the entry was last moved to the front of its list (ns).
    moved: u64,
    prev: u32,
    next: u32,
    /// Each endpoint's (0 = key's low, 1 = high) sequence number: in the
    /// handshake its ISN; once established, the *mark* of its sequence
    /// space that RST and FIN are checked against (`accept.rs`).
    pub(crate) seq: [u32; 2],
    /// Last SYN seen (ns).
    pub(crate) syn_at: u64,
    /// Window-scale option of each endpoint's SYN / SYN-ACK.
    pub(crate) wscale_opt: [Option<u8>; 2],
    which: Which,
    /// The endpoint that sent the SYN (0 = key's low, 1 = high).
    pub(crate) initiator: u8,
}

/// A new half-open entry's two parts.
pub(crate) fn new_entry(fp: u64, initiator: usize, now: u64) -> (Hot, Cold) {
    (
        Hot::new(fp),
        Cold {
            fp,
            moved: now,
            prev: NIL,
            next: NIL,
            initiator: u8::from(initiator != 0),
            syn_at: now,
            ..Cold::default()
        },
    )
}

#[derive(Debug, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// What the table did on its own (evictions, expiries), cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TableCounters {
    pub(crate) evicted: u64,
    pub(crate) evicted_half_open: u64,
    pub(crate) refused: u64,
    pub(crate) expired: u64,
    pub(crate) expired_half_open: u64,
}

/// How long each timer of the table is (ns).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timers {
    pub(crate) active_ns: u64,
    pub(crate) idle_ns: u64,
    pub(crate) handshake_ns: u64,
}

/// A class's rate and its active flows' share of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClassRate {
    /// `P_j · C/8 · (1 + δ)` per data side, bytes per ns.
    pub(crate) rate: [f64; 2],
    /// `rate / max(n_j, 1)`, kept current as n_j changes.
    pub(crate) per_flow: [f64; 2],
    /// n_j: the class's active flows.
    active: u32,
}

/// The flow table (see the module docs).
#[derive(Debug)]
pub(crate) struct Table {
    hash: KeyedHash,
    buckets: Buckets,
    cold: Vec<Cold>,
    half: List,
    est: List,
    /// The least recent established flow that is still active, or NIL.
    oldest_active: u32,
    classes: Vec<ClassRate>,
    max_flows: usize,
    max_half_open: usize,
    max_buckets: usize,
    active_ns: u64,
    idle_ns: u64,
    handshake_ns: u64,
    granule_ns: u64,
    /// The current granule (`now / granule_ns`) and when it ends.
    epoch: u64,
    epoch_end: u64,
    /// No expiry can happen before this time (ns).
    next_deadline: u64,
    /// `min(next_deadline, epoch_end)`: the one comparison per packet.
    next_check: u64,
    /// Closed connections kept in the half-open list ([`Stage::Closed`]).
    closed: usize,
    pub(crate) counters: TableCounters,
}

impl Table {
    /// A table for `max_flows` established and `max_half_open` half-open
    /// connections, with each class's rate (bytes/s per data side).
    pub(crate) fn new(
        max_flows: usize,
        max_half_open: usize,
        rates: &[[f64; 2]],
        t: Timers,
    ) -> Self {
        let max_buckets = max_buckets(max_flows.saturating_add(max_half_open));
        let buckets = Buckets::with_buckets(max_buckets.min(4));
        let granule_ns = (t.active_ns / 4).max(1);
        Table {
            hash: KeyedHash::random(),
            cold: vec![Cold::default(); buckets.capacity()],
            buckets,
            half: List::default(),
            est: List::default(),
            oldest_active: NIL,
            classes: rates
                .iter()
                .map(|r| {
                    let rate = r.map(|bps| bps / 1e9);
                    ClassRate {
                        rate,
                        per_flow: rate,
                        active: 0,
                    }
                })
                .collect(),
            max_flows,
            max_half_open,
            max_buckets,
            active_ns: t.active_ns,
            idle_ns: t.idle_ns.max(t.active_ns),
            handshake_ns: t.handshake_ns,
            granule_ns,
            epoch: 0,
            epoch_end: granule_ns,
            next_deadline: u64::MAX,
            next_check: granule_ns,
            closed: 0,
            counters: TableCounters::default(),
        }
    }

    /// The fingerprint of `key`.
    #[inline]
    pub(crate) fn fingerprint(&self, key: &ConnKey) -> u64 {
        self.hash.hash(key)
    }

    /// Where `fp`'s entry is (or could go).
    #[inline]
    pub(crate) fn probe(&self, fp: u64) -> Probe {
        self.buckets.probe(fp)
    }

    /// Asks the CPU to start loading `fp`'s bucket.
    #[inline]
    pub(crate) fn prefetch(&self, fp: u64) {
        self.buckets.prefetch(fp);
    }

    /// The hot part at `pos`.
    #[inline]
    pub(crate) fn hot(&self, pos: u32) -> Option<&Hot> {
        self.buckets.get(pos)
    }

    /// When [`Table::expire`] next has something to do (ns).
    pub(crate) fn next_check(&self) -> u64 {
        self.next_check
    }

    /// The current granule's low byte (compare with [`Hot::is_fast`]).
    #[inline]
    pub(crate) fn epoch(&self) -> u8 {
        self.epoch as u8
    }

    /// The class's rate and per-flow share for data on side `data`.
    #[inline]
    pub(crate) fn class_rate(&self, class: u8, data: usize) -> (f64, f64) {
        self.classes
            .get(usize::from(class))
            .and_then(|c| Some((*c.rate.get(data)?, *c.per_flow.get(data)?)))
            .unwrap_or((0.0, 0.0))
    }

    /// The entry at `pos` is `fp`'s (not another connection with the same
    /// tag).
    pub(crate) fn is(&self, pos: u32, fp: u64) -> bool {
        self.cold.get(pos as usize).is_some_and(|c| c.fp == fp)
    }

    /// Both parts at `pos` (handshakes: not the per-packet path).
    pub(crate) fn entry(&self, pos: u32) -> Option<(Hot, Cold)> {
        Some((*self.buckets.get(pos)?, *self.cold.get(pos as usize)?))
    }

    /// Replaces the contents at `pos`, keeping its place in the lists,
    /// its activity and its granule.
    pub(crate) fn set_entry(&mut self, pos: u32, hot: Hot, cold: Cold) {
        let Some(h) = self.buckets.get_mut(pos) else {
            return;
        };
        h.assign(&hot);
        if let Some(c) = self.cold.get_mut(pos as usize) {
            *c = Cold {
                fp: c.fp,
                moved: c.moved,
                prev: c.prev,
                next: c.next,
                which: c.which,
                ..cold
            };
        }
    }

    pub(crate) fn established(&self) -> usize {
        self.est.len
    }

    /// Handshakes in progress (the half-open list less the closed
    /// connections kept there).
    pub(crate) fn half_open(&self) -> usize {
        self.half.len.saturating_sub(self.closed)
    }

    /// Closed connections kept for re-admission.
    pub(crate) fn closed(&self) -> usize {
        self.closed
    }

    /// The granule (ns): a segment of an active flow moved more than this
    /// long ago takes the slow path (`accept.rs` relies on it).
    pub(crate) fn granule_ns(&self) -> u64 {
        self.granule_ns
    }

    /// n_j: active flows of `class`.
    pub(crate) fn active_in(&self, class: u8) -> u32 {
        self.classes.get(usize::from(class)).map_or(0, |c| c.active)
    }

    /// All active flows.
    pub(crate) fn active(&self) -> u64 {
        self.classes.iter().map(|c| u64::from(c.active)).sum()
    }

    /// Positions allocated (live or not): what the table's memory is sized
    /// by. At most `WAYS · max_buckets`.
    pub(crate) fn slots(&self) -> usize {
        self.buckets.capacity()
    }

    fn list(&mut self, w: Which) -> &mut List {
        match w {
            Which::HalfOpen => &mut self.half,
            Which::Established => &mut self.est,
        }
    }

    fn cold_at(&self, i: u32) -> Option<&Cold> {
        self.cold.get(i as usize)
    }

    fn cold_mut(&mut self, i: u32) -> Option<&mut Cold> {
        self.cold.get_mut(i as usize)
    }

    fn unlink(&mut self, i: u32) {
        let Some(&Cold {
            which, prev, next, ..
        }) = self.cold_at(i)
        else {
            return;
        };
        if prev == NIL {
            self.list(which).head = next;
        } else if let Some(p) = self.cold_mut(prev) {
            p.next = next;
        }
        if next == NIL {
            self.list(which).tail = prev;
        } else if let Some(n) = self.cold_mut(next) {
            n.prev = prev;
        }
        let l = self.list(which);
        l.len = l.len.saturating_sub(1);
        if let Some(c) = self.cold_mut(i) {
            c.prev = NIL;
            c.next = NIL;
        }
    }

    /// Puts position `i` at the front of list `w` (its `moved` unchanged).
    fn link_front(&mut self, i: u32, w: Which) {
        let head = self.list(w).head;
        if let Some(c) = self.cold_mut(i) {
            c.which = w;
            c.prev = NIL;
            c.next = head;
        }
        if head == NIL {
            self.list(w).tail = i;
        } else if let Some(h) = self.cold_mut(head) {
            h.prev = i;
        }
        let l = self.list(w);
        l.head = i;
        l.len += 1;
    }

    /// Puts position `i` at the front of list `w`, moved at `now`.
    fn push_front(&mut self, i: u32, w: Which, now: u64) {
        self.link_front(i, w);
        if let Some(c) = self.cold_mut(i) {
            c.moved = now;
        }
    }

    /// Adds a half-open entry, evicting the least recent half-open one if
    /// that table is full. `false` if not added: its tag is already on its
    /// lookup path, or (rarely) the path has no room (counted as refused).
    pub(crate) fn insert_half_open(&mut self, fp: u64, mut hot: Hot, mut cold: Cold) -> bool {
        self.make_half_open_room();
        let (live, cap) = (self.buckets.live() + 1, self.buckets.capacity());
        if (live + self.buckets.tombs()) * 8 > cap * 7 {
            let n = self.buckets.bucket_count();
            self.rebuild(if live * 4 > cap * 3 { n * 2 } else { n });
        }
        let pos = match self.buckets.probe(fp) {
            Probe::Found(_) => return false,
            Probe::Absent(Some(p)) => p,
            Probe::Absent(None) => {
                let n = self.buckets.bucket_count();
                if n < self.max_buckets {
                    self.rebuild(n * 2);
                }
                match self.buckets.probe(fp) {
                    Probe::Absent(Some(p)) => p,
                    _ => {
                        self.counters.refused += 1;
                        return false;
                    }
                }
            }
        };
        let now = cold.moved;
        hot.set_active(false);
        cold.fp = fp;
        self.buckets.put(pos, hot);
        if let Some(c) = self.cold_mut(pos) {
            *c = cold;
        }
        self.push_front(pos, Which::HalfOpen, now);
        self.set_deadline(now.saturating_add(self.handshake_ns));
        true
    }

    /// Evicts the least recent entry of the half-open list if it is full
    /// (a closed connection kept there goes uncounted: it was counted as
    /// closed).
    fn make_half_open_room(&mut self) {
        let tail = self.half.tail;
        if self.half.len >= self.max_half_open && tail != NIL {
            let was_closed = self.is_closed(tail);
            self.remove(tail);
            if !was_closed {
                self.counters.evicted_half_open += 1;
            }
        }
    }

    fn is_closed(&self, pos: u32) -> bool {
        self.buckets
            .get(pos)
            .is_some_and(|h| h.stage() == Stage::Closed)
    }

    /// Established connection `pos` leaves modulation at `now` (an
    /// accepted RST or second FIN): it stops counting in n_j and moves,
    /// with its handshake's facts, to the front of the half-open list as
    /// [`Stage::Closed`] — bounded and aged like a handshake, evicted
    /// first by a SYN flood — so that [`Table::promote`] can re-admit it.
    pub(crate) fn close(&mut self, pos: u32, now: u64) {
        if self
            .buckets
            .get(pos)
            .is_none_or(|h| h.stage() != Stage::Established)
        {
            return;
        }
        if self.oldest_active == pos {
            self.oldest_active = self.cold_at(pos).map_or(NIL, |c| c.prev);
        }
        self.deactivate(pos);
        self.unlink(pos);
        self.make_half_open_room();
        if let Some(h) = self.buckets.get_mut(pos) {
            h.set_stage(Stage::Closed);
        }
        self.closed += 1;
        self.push_front(pos, Which::HalfOpen, now);
        self.set_deadline(now.saturating_add(self.handshake_ns));
    }

    fn set_deadline(&mut self, at: u64) {
        self.next_deadline = self.next_deadline.min(at);
        self.next_check = self.next_check.min(at);
    }

    /// Rebuilds the index with `buckets` buckets (at most the cap's):
    /// every live entry re-placed, tombstones gone, both lists in the same
    /// order. An entry that finds no room (only conceivable with the probe
    /// bound at a full table) is dropped and counted as evicted.
    fn rebuild(&mut self, buckets: usize) {
        let nb = buckets.clamp(1, self.max_buckets);
        let old_hot = std::mem::replace(&mut self.buckets, Buckets::with_buckets(nb));
        let old_cold = std::mem::replace(&mut self.cold, vec![Cold::default(); nb * WAYS]);
        let lists = [(Which::HalfOpen, self.half), (Which::Established, self.est)];
        let old_oldest = std::mem::replace(&mut self.oldest_active, NIL);
        self.half = List::default();
        self.est = List::default();
        for (which, list) in lists {
            let mut i = list.tail;
            let mut oldest_pending = false;
            while let (Some(&h), Some(&c)) = (old_hot.get(i), old_cold.get(i as usize)) {
                oldest_pending |= i == old_oldest;
                i = c.prev;
                let Probe::Absent(Some(p)) = self.buckets.probe(c.fp) else {
                    if h.active() {
                        self.count(h.class, false);
                    }
                    if h.stage() == Stage::Closed {
                        self.closed -= 1;
                    }
                    self.counters.evicted += 1;
                    continue;
                };
                self.buckets.put(p, h);
                if let Some(n) = self.cold_mut(p) {
                    *n = c;
                }
                self.link_front(p, which);
                if oldest_pending && h.active() {
                    self.oldest_active = p;
                    oldest_pending = false;
                }
            }
        }
    }

    /// A segment of half-open connection `pos` at `now`.
    pub(crate) fn touch_half_open(&mut self, pos: u32, now: u64) {
        self.unlink(pos);
        self.push_front(pos, Which::HalfOpen, now);
    }

    /// A closed connection at `pos` starts a new handshake at `now` (a SYN
    /// on its four-tuple): a half-open entry again, at the front.
    pub(crate) fn reopen_half_open(&mut self, pos: u32, now: u64) {
        if self.is_closed(pos) {
            self.closed -= 1;
            if let Some(h) = self.buckets.get_mut(pos) {
                h.set_stage(Stage::SynSent);
            }
        }
        self.touch_half_open(pos, now);
    }

    /// Moves half-open `pos` to the established flows, active from `now`.
    /// If they are full, the least recent one goes if it is inactive (an
    /// idle flow); if even that one is active, `pos` is dropped instead
    /// (`false`): active flows are never evicted.
    pub(crate) fn promote(&mut self, pos: u32, now: u64) -> bool {
        if self.is_closed(pos) {
            // Re-admitted: from here on it is an established flow again.
            self.closed -= 1;
            if let Some(h) = self.buckets.get_mut(pos) {
                h.set_stage(Stage::Established);
            }
        }
        if self.est.len >= self.max_flows {
            let tail = self.est.tail;
            match self.buckets.get(tail).map(Hot::active) {
                Some(false) => {
                    self.remove(tail);
                    self.counters.evicted += 1;
                }
                _ => {
                    self.remove(pos);
                    self.counters.refused += 1;
                    return false;
                }
            }
        }
        let epoch = self.epoch();
        let Some(h) = self.buckets.get_mut(pos) else {
            return false;
        };
        h.set_stage(Stage::Established);
        h.epoch = epoch;
        self.unlink(pos);
        self.push_front(pos, Which::Established, now);
        self.activate(pos);
        true
    }

    /// n_j of `class` up or down by one, and its per-flow share.
    fn count(&mut self, class: u8, up: bool) {
        if let Some(c) = self.classes.get_mut(usize::from(class)) {
            c.active = if up {
                c.active.saturating_add(1)
            } else {
                c.active.saturating_sub(1)
            };
            let n = f64::from(c.active.max(1));
            c.per_flow = c.rate.map(|r| r / n);
        }
    }

    fn activate(&mut self, i: u32) {
        let Some(h) = self.buckets.get_mut(i) else {
            return;
        };
        if h.active() {
            return;
        }
        h.set_active(true);
        let class = h.class;
        self.count(class, true);
        if self.oldest_active == NIL {
            self.oldest_active = i;
        }
        let moved = self.cold_at(i).map_or(0, |c| c.moved);
        self.set_deadline(
            moved
                .saturating_add(self.active_ns)
                .saturating_add(self.granule_ns),
        );
    }

    fn deactivate(&mut self, i: u32) {
        let Some(h) = self.buckets.get_mut(i) else {
            return;
        };
        if !h.active() {
            return;
        }
        h.set_active(false);
        let class = h.class;
        self.count(class, false);
    }

    /// A segment of established connection `pos` at `now` that
    /// [`Hot::is_fast`] did not let through: it becomes active and moves
    /// to the front of the list.
    pub(crate) fn touch(&mut self, pos: u32, now: u64) {
        let epoch = self.epoch();
        let Some(h) = self.buckets.get_mut(pos) else {
            return;
        };
        if h.stage() != Stage::Established || h.is_fast(epoch) {
            return;
        }
        h.epoch = epoch;
        if self.oldest_active == pos {
            // It moves to the front; the next older active flow is the one
            // in front of it (or, if it was the head, itself again).
            let prev = self.cold_at(pos).map_or(NIL, |c| c.prev);
            self.oldest_active = if prev == NIL { pos } else { prev };
        }
        self.unlink(pos);
        self.push_front(pos, Which::Established, now);
        self.activate(pos);
    }

    /// Records a FIN from endpoint `from`; `true` once both sides sent one.
    pub(crate) fn fin(&mut self, pos: u32, from: usize) -> bool {
        self.buckets.get_mut(pos).is_some_and(|h| h.fin(from))
    }

    /// Forgets connection `pos` (FIN/RST, eviction, expiry).
    pub(crate) fn remove(&mut self, pos: u32) {
        if self.buckets.get(pos).is_none() {
            return;
        }
        if self.is_closed(pos) {
            self.closed -= 1;
        }
        if self.oldest_active == pos {
            self.oldest_active = self.cold_at(pos).map_or(NIL, |c| c.prev);
        }
        self.deactivate(pos);
        self.unlink(pos);
        self.buckets.erase(pos);
        if let Some(c) = self.cold_mut(pos) {
            *c = Cold::default();
        }
    }

    /// Processes the passage of time to `now`: the granule, flows silent
    /// for the active window stop counting towards n_j, established flows
    /// silent for the idle timeout and handshakes older than theirs are
    /// forgotten. Cheap (one comparison) until the end of the granule or
    /// the earliest such deadline.
    #[inline]
    pub(crate) fn expire(&mut self, now: u64) {
        if now >= self.next_check {
            self.expire_due(now);
        }
    }

    fn expire_due(&mut self, now: u64) {
        if now >= self.epoch_end {
            self.epoch = now / self.granule_ns;
            self.epoch_end = (self.epoch + 1).saturating_mul(self.granule_ns);
        }
        if now >= self.next_deadline {
            let mut next = u64::MAX;
            let active_for = self.active_ns.saturating_add(self.granule_ns);
            while let Some(&c) = self.cold_at(self.oldest_active) {
                let due = c.moved.saturating_add(active_for);
                if due > now {
                    next = next.min(due);
                    break;
                }
                self.deactivate(self.oldest_active);
                self.oldest_active = c.prev;
            }
            for (which, timeout) in [
                (
                    Which::Established,
                    self.idle_ns.saturating_add(self.granule_ns),
                ),
                (Which::HalfOpen, self.handshake_ns),
            ] {
                loop {
                    let tail = self.list(which).tail;
                    let Some(c) = self.cold_at(tail) else {
                        break;
                    };
                    let due = c.moved.saturating_add(timeout);
                    if due > now {
                        next = next.min(due);
                        break;
                    }
                    let was_closed = self.is_closed(tail);
                    self.remove(tail);
                    match which {
                        Which::Established => self.counters.expired += 1,
                        Which::HalfOpen if !was_closed => self.counters.expired_half_open += 1,
                        Which::HalfOpen => {}
                    }
                }
            }
            self.next_deadline = next;
        }
        self.next_check = self.next_deadline.min(self.epoch_end);
    }
}

#[cfg(test)]
mod check;

#[cfg(test)]
mod tests {
    use super::*;

    /// The cold part is the 48 bytes the docs count.
    #[test]
    fn cold_layout() {
        assert_eq!(size_of::<Cold>(), 48);
        assert_eq!(max_buckets(65_536 + 4_096), 23_211);
    }
}

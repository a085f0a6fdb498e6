//! The bounded flow table.
//!
//! **Lookup.** Connections are found by a 64-bit *fingerprint* of their
//! key: SipHash-1-3 under a per-table random key (std's `RandomState`), so
//! a stranger can neither predict nor aim collisions. The hash map goes
//! from fingerprint to a slot index (16-byte buckets, a quarter of the
//! 64-byte hot line they point to: 2 MiB for a full default table), and
//! each slot is two
//! 64-byte-aligned cache lines: the [`Hot`] part — everything a segment of
//! an established connection needs — in the first, the [`Cold`] part
//! (handshake state, list links) in the second, which the per-packet path
//! does not touch. The full key is not stored: two connections are told apart by
//! their fingerprints alone. Two live connections with equal fingerprints
//! (about 65 536² / 2⁶⁵ ≈ 10⁻¹⁰ for a full table) cannot both be tracked,
//! and a segment of an untracked connection matches a tracked one with
//! probability n / 2⁶⁴ (≈ 4·10⁻¹⁵ per segment at 65 536 connections) —
//! without the key nobody can do better than chance.
//!
//! **Order.** Established flows are kept in a list in order of when they
//! were last moved to its front (head = most recent). A segment moves its
//! flow only when the last move is more than a *granule* (1/4 of the
//! active window) old, so most packets just store the time in the bucket;
//! the list is in order of last segment to within a granule. The active
//! flows — a segment within the active window — are a prefix of the list;
//! `oldest_active` marks where it ends, and advancing it as time passes
//! deactivates flows one by one, each exactly once per period of activity,
//! so keeping n_j current costs O(1) amortised per packet. A flow stops
//! counting between one active window and one window plus a granule after
//! its last segment. Idle expiry pops from the tail the same way, and
//! handshakes have their own list. Expiry only runs when the earliest
//! deadline it could act on has passed (one comparison per packet
//! otherwise).

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use super::segment::FlowKey;

/// "No entry" in the links.
const NIL: u32 = u32::MAX;

/// Where a connection's handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// SYN seen.
    SynSent,
    /// SYN-ACK seen (acknowledging the SYN).
    SynAckSeen,
    /// The initiator's ACK of the SYN-ACK seen: RTT measured.
    Established,
}

/// What every segment of a connection needs (the slot's first cache line).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hot {
    /// Last segment seen (ns).
    pub(crate) last_seen: u64,
    /// When the entry was last moved to the front of its list (ns).
    moved: u64,
    /// `P_j · C · (1 + δ) · RTT` for data travelling each side, bytes: the
    /// class's BDP, divided by n_j per segment.
    pub(crate) class_bdp: [f64; 2],
    slot: u32,
    /// MSS each endpoint announced (the largest segment it receives).
    pub(crate) mss: [u16; 2],
    /// The shift each endpoint applies to the windows it sends (RFC 7323:
    /// 0 for both unless both offered the option).
    pub(crate) wscale: [u8; 2],
    /// Traffic class index (the default class is the last).
    pub(crate) class: u8,
    pub(crate) stage: Stage,
    active: bool,
    /// FIN seen from each endpoint.
    pub(crate) fin: [bool; 2],
}

/// The rest of an entry: handshake state and list links (the slot's
/// second cache line).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cold {
    fp: u64,
    prev: u32,
    next: u32,
    which: Which,
    /// The endpoint that sent the SYN (0 = key's low, 1 = high).
    pub(crate) initiator: usize,
    pub(crate) init_isn: u32,
    pub(crate) resp_isn: u32,
    /// Window-scale option of each endpoint's SYN / SYN-ACK.
    pub(crate) wscale_opt: [Option<u8>; 2],
    /// Last SYN seen (ns).
    pub(crate) syn_at: u64,
    /// Handshake RTT (ns), once established.
    pub(crate) rtt_ns: u64,
}

/// A new half-open entry's two parts.
pub(crate) fn new_entry(initiator: usize, now: u64) -> (Hot, Cold) {
    (
        Hot {
            last_seen: now,
            moved: now,
            class_bdp: [0.0; 2],
            slot: NIL,
            mss: [0; 2],
            wscale: [0; 2],
            class: 0,
            stage: Stage::SynSent,
            active: false,
            fin: [false; 2],
        },
        Cold {
            fp: 0,
            prev: NIL,
            next: NIL,
            which: Which::HalfOpen,
            initiator,
            init_isn: 0,
            resp_isn: 0,
            wscale_opt: [None; 2],
            syn_at: now,
            rtt_ns: 0,
        },
    )
}

/// One slot: the hot part on its own cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    hot: Hot,
    cold: Cold,
}

/// The map's hasher: its keys are already SipHash outputs.
#[derive(Debug, Default)]
struct Passthrough(u64);

impl Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    HalfOpen,
    Established,
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

/// The flow table (see the module docs).
#[derive(Debug)]
pub(crate) struct Table {
    map: HashMap<u64, u32, BuildHasherDefault<Passthrough>>,
    secret: RandomState,
    slots: Vec<Entry>,
    free: Vec<u32>,
    half: List,
    est: List,
    /// The least recent established flow that is still active, or NIL.
    oldest_active: u32,
    active_per_class: Vec<u32>,
    max_flows: usize,
    max_half_open: usize,
    active_ns: u64,
    idle_ns: u64,
    handshake_ns: u64,
    granule_ns: u64,
    /// No expiry can happen before this time (ns).
    next_deadline: u64,
    pub(crate) counters: TableCounters,
}

impl Table {
    pub(crate) fn new(max_flows: usize, max_half_open: usize, classes: usize, t: Timers) -> Self {
        Table {
            map: HashMap::default(),
            secret: RandomState::new(),
            slots: Vec::new(),
            free: Vec::new(),
            half: List::default(),
            est: List::default(),
            oldest_active: NIL,
            active_per_class: vec![0; classes],
            max_flows,
            max_half_open,
            active_ns: t.active_ns,
            idle_ns: t.idle_ns.max(t.active_ns),
            handshake_ns: t.handshake_ns,
            granule_ns: (t.active_ns / 4).max(1),
            next_deadline: u64::MAX,
            counters: TableCounters::default(),
        }
    }

    /// The fingerprint of `key` (see the module docs).
    pub(crate) fn fingerprint(&self, key: &FlowKey) -> u64 {
        self.secret.hash_one(key)
    }

    /// The hot part of connection `fp`.
    pub(crate) fn hot(&self, fp: u64) -> Option<&Hot> {
        let i = *self.map.get(&fp)?;
        self.slots.get(i as usize).map(|e| &e.hot)
    }

    fn hot_mut(&mut self, fp: u64) -> Option<&mut Hot> {
        let i = *self.map.get(&fp)?;
        self.slots.get_mut(i as usize).map(|e| &mut e.hot)
    }

    /// Both parts of connection `fp` (handshakes: not the per-packet path).
    pub(crate) fn entry(&self, fp: u64) -> Option<(Hot, Cold)> {
        let i = *self.map.get(&fp)?;
        self.slots.get(i as usize).map(|e| (e.hot, e.cold))
    }

    /// Replaces the contents of connection `fp`, keeping its place in the
    /// lists and its activity.
    pub(crate) fn set_entry(&mut self, fp: u64, hot: Hot, cold: Cold) {
        let Some(&i) = self.map.get(&fp) else {
            return;
        };
        let Some(e) = self.slots.get_mut(i as usize) else {
            return;
        };
        e.hot = Hot {
            slot: e.hot.slot,
            moved: e.hot.moved,
            active: e.hot.active,
            ..hot
        };
        e.cold = Cold {
            fp: e.cold.fp,
            prev: e.cold.prev,
            next: e.cold.next,
            which: e.cold.which,
            ..cold
        };
    }

    pub(crate) fn established(&self) -> usize {
        self.est.len
    }

    pub(crate) fn half_open(&self) -> usize {
        self.half.len
    }

    /// n_j: active flows of `class`.
    pub(crate) fn active_in(&self, class: u8) -> u32 {
        self.active_per_class
            .get(usize::from(class))
            .copied()
            .unwrap_or(0)
    }

    /// All active flows.
    pub(crate) fn active(&self) -> u64 {
        self.active_per_class.iter().map(|&n| u64::from(n)).sum()
    }

    /// Entries allocated (live or free): what the table's memory is sized
    /// by. At most `max_flows + max_half_open`.
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    fn list(&mut self, w: Which) -> &mut List {
        match w {
            Which::HalfOpen => &mut self.half,
            Which::Established => &mut self.est,
        }
    }

    fn cold(&self, i: u32) -> Option<&Cold> {
        self.slots.get(i as usize).map(|e| &e.cold)
    }

    fn cold_mut(&mut self, i: u32) -> Option<&mut Cold> {
        self.slots.get_mut(i as usize).map(|e| &mut e.cold)
    }

    /// The hot part of the entry in slot `i`.
    fn hot_of(&self, i: u32) -> Option<&Hot> {
        self.slots.get(i as usize).map(|e| &e.hot)
    }

    fn hot_of_mut(&mut self, i: u32) -> Option<&mut Hot> {
        self.slots.get_mut(i as usize).map(|e| &mut e.hot)
    }

    fn unlink(&mut self, i: u32) {
        let Some(&Cold {
            which, prev, next, ..
        }) = self.cold(i)
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

    /// Puts slot `i` at the front of list `w`, moved at `now`.
    fn push_front(&mut self, i: u32, w: Which, now: u64) {
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
        if let Some(h) = self.hot_of_mut(i) {
            h.moved = now;
        }
    }

    /// Adds a half-open entry, evicting the least recent half-open one if
    /// that table is full. `false` if the fingerprint is already present.
    pub(crate) fn insert_half_open(&mut self, fp: u64, mut hot: Hot, mut cold: Cold) -> bool {
        if self.map.contains_key(&fp) {
            return false;
        }
        if self.half.len >= self.max_half_open
            && let Some(tail) = self.cold(self.half.tail).map(|c| c.fp)
        {
            self.remove(tail);
            self.counters.evicted_half_open += 1;
        }
        cold.fp = fp;
        cold.which = Which::HalfOpen;
        hot.active = false;
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                let Ok(i) = u32::try_from(self.slots.len()) else {
                    return false;
                };
                self.slots.push(Entry { hot, cold });
                i
            }
        };
        hot.slot = i;
        if let Some(e) = self.slots.get_mut(i as usize) {
            *e = Entry { hot, cold };
        }
        let now = hot.last_seen;
        self.map.insert(fp, i);
        self.push_front(i, Which::HalfOpen, now);
        let deadline = now.saturating_add(self.handshake_ns);
        self.next_deadline = self.next_deadline.min(deadline);
        true
    }

    /// A segment of half-open connection `fp` at `now`.
    pub(crate) fn touch_half_open(&mut self, fp: u64, now: u64) {
        let Some(h) = self.hot_mut(fp) else {
            return;
        };
        h.last_seen = now;
        let i = h.slot;
        self.unlink(i);
        self.push_front(i, Which::HalfOpen, now);
    }

    /// Moves half-open `fp` to the established flows, active from `now`.
    /// If they are full, the least recent one goes if it is inactive (an
    /// idle flow); if even that one is active, `fp` is dropped instead
    /// (`false`): active flows are never evicted.
    pub(crate) fn promote(&mut self, fp: u64, now: u64) -> bool {
        if self.est.len >= self.max_flows {
            let tail = self.cold(self.est.tail).map(|c| c.fp);
            match tail.and_then(|t| self.hot(t).map(|h| (t, h.active))) {
                Some((t, false)) => {
                    self.remove(t);
                    self.counters.evicted += 1;
                }
                _ => {
                    self.remove(fp);
                    self.counters.refused += 1;
                    return false;
                }
            }
        }
        let Some(h) = self.hot_mut(fp) else {
            return false;
        };
        h.stage = Stage::Established;
        h.last_seen = now;
        let i = h.slot;
        self.unlink(i);
        self.push_front(i, Which::Established, now);
        self.activate(i);
        true
    }

    fn activate(&mut self, i: u32) {
        let active_ns = self.active_ns;
        let Some(h) = self.hot_of_mut(i) else { return };
        if h.active {
            return;
        }
        h.active = true;
        let (class, last) = (usize::from(h.class), h.last_seen);
        if let Some(n) = self.active_per_class.get_mut(class) {
            *n += 1;
        }
        if self.oldest_active == NIL {
            self.oldest_active = i;
        }
        self.next_deadline = self.next_deadline.min(last.saturating_add(active_ns));
    }

    fn deactivate(&mut self, i: u32) {
        let Some(h) = self.hot_of_mut(i) else { return };
        if !h.active {
            return;
        }
        h.active = false;
        let class = usize::from(h.class);
        if let Some(n) = self.active_per_class.get_mut(class) {
            *n = n.saturating_sub(1);
        }
    }

    /// A segment of established connection `fp` at `now`: it is active,
    /// and at the front of the list unless it was moved there less than a
    /// granule ago (then only the bucket is written). Returns its hot part.
    /// Handshakes in progress are returned untouched.
    #[inline]
    pub(crate) fn touch(&mut self, fp: u64, now: u64) -> Option<Hot> {
        let granule = self.granule_ns;
        let h = self.hot_mut(fp)?;
        if h.stage != Stage::Established {
            return Some(*h);
        }
        h.last_seen = now;
        if h.active && now.saturating_sub(h.moved) < granule {
            return Some(*h);
        }
        let i = h.slot;
        if self.oldest_active == i {
            // It moves to the front; the next older active flow is the one
            // in front of it (or, if it was the head, itself again).
            let prev = self.cold(i).map_or(NIL, |c| c.prev);
            self.oldest_active = if prev == NIL { i } else { prev };
        }
        self.unlink(i);
        self.push_front(i, Which::Established, now);
        self.activate(i);
        self.hot_of(i).copied()
    }

    /// Records a FIN from endpoint `from`; `true` once both sides sent one.
    pub(crate) fn fin(&mut self, fp: u64, from: usize) -> bool {
        let Some(h) = self.hot_mut(fp) else {
            return false;
        };
        if let Some(f) = h.fin.get_mut(from) {
            *f = true;
        }
        h.fin == [true, true]
    }

    /// Forgets connection `fp` (FIN/RST, eviction, expiry).
    pub(crate) fn remove(&mut self, fp: u64) {
        let Some(&i) = self.map.get(&fp) else {
            return;
        };
        if self.oldest_active == i {
            self.oldest_active = self.cold(i).map_or(NIL, |c| c.prev);
        }
        self.deactivate(i);
        self.unlink(i);
        self.map.remove(&fp);
        self.free.push(i);
    }

    /// Processes the passage of time to `now`: flows silent for the active
    /// window stop counting towards n_j, established flows silent for the
    /// idle timeout and handshakes older than theirs are forgotten. Cheap
    /// (one comparison) until the earliest such deadline has passed.
    #[inline]
    pub(crate) fn expire(&mut self, now: u64) {
        if now >= self.next_deadline {
            self.expire_due(now);
        }
    }

    fn expire_due(&mut self, now: u64) {
        let mut next = u64::MAX;
        while let Some(h) = self.hot_of(self.oldest_active) {
            let due = h.last_seen.saturating_add(self.active_ns);
            if due > now {
                next = next.min(due);
                break;
            }
            let i = self.oldest_active;
            self.deactivate(i);
            self.oldest_active = self.cold(i).map_or(NIL, |c| c.prev);
        }
        for (which, timeout) in [
            (Which::Established, self.idle_ns),
            (Which::HalfOpen, self.handshake_ns),
        ] {
            loop {
                let tail = self.list(which).tail;
                let Some(fp) = self.cold(tail).map(|c| c.fp) else {
                    break;
                };
                let due = self
                    .hot(fp)
                    .map_or(0, |h| h.last_seen.saturating_add(timeout));
                if due > now {
                    next = next.min(due);
                    break;
                }
                self.remove(fp);
                match which {
                    Which::Established => self.counters.expired += 1,
                    Which::HalfOpen => self.counters.expired_half_open += 1,
                }
            }
        }
        self.next_deadline = next;
    }

    /// Walks both lists and recounts everything (tests only): the links
    /// agree with the lengths, every entry is in the map, the lists are in
    /// order, the active flows are exactly a prefix of the established
    /// list ending at `oldest_active`, and the per-class counts match.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut per_class = vec![0u32; self.active_per_class.len()];
        for (w, l) in [(Which::HalfOpen, self.half), (Which::Established, self.est)] {
            let (mut i, mut prev, mut n) = (l.head, NIL, 0);
            let mut seen_inactive = false;
            let mut last_active = NIL;
            let mut moved = u64::MAX;
            while i != NIL {
                let Entry { hot: h, cold: c } = &self.slots[i as usize];
                assert_eq!(self.map[&c.fp], i);
                assert_eq!(h.slot, i);
                assert_eq!(c.which, w);
                assert_eq!(c.prev, prev);
                assert!(h.moved <= moved, "list out of order");
                assert!(h.moved <= h.last_seen);
                moved = h.moved;
                if w == Which::Established {
                    assert_eq!(h.stage, Stage::Established);
                    if h.active {
                        assert!(!seen_inactive, "active flow after an inactive one");
                        per_class[usize::from(h.class)] += 1;
                        last_active = i;
                    } else {
                        seen_inactive = true;
                    }
                } else {
                    assert!(!h.active);
                    assert_ne!(h.stage, Stage::Established);
                }
                prev = i;
                i = c.next;
                n += 1;
            }
            assert_eq!(l.tail, prev);
            assert_eq!(l.len, n);
            if w == Which::Established {
                assert_eq!(self.oldest_active, last_active);
            }
        }
        assert_eq!(per_class, self.active_per_class);
        assert_eq!(self.map.len(), self.half.len + self.est.len);
        assert_eq!(self.slots.len(), self.map.len() + self.free.len());
        assert!(self.half.len <= self.max_half_open && self.est.len <= self.max_flows);
        if self
            .map
            .values()
            .any(|&i| self.slots[i as usize].hot.active)
        {
            assert!(self.next_deadline < u64::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot is two cache lines, the hot part alone in the first.
    #[test]
    fn slot_layout() {
        assert!(size_of::<Hot>() <= 64, "{}", size_of::<Hot>());
        assert!(size_of::<Cold>() <= 64, "{}", size_of::<Cold>());
        assert_eq!(size_of::<Entry>(), 128);
        assert_eq!(align_of::<Entry>(), 64);
        assert_eq!(size_of::<(u64, u32)>(), 16);
    }
}

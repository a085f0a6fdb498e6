//! The bounded flow table: a slab of entries indexed by a hash map, with
//! two intrusive LRU lists (half-open handshakes, established flows) and
//! the per-class count of *active* flows.
//!
//! Established flows are kept in order of their last segment (head = most
//! recent). The active ones — a segment within the active window — are a
//! prefix of that list; `oldest_active` marks where it ends, and advancing
//! it as time passes deactivates flows one by one, each exactly once per
//! period of activity, so keeping n_j current costs O(1) amortised per
//! packet. Idle expiry pops from the tail for the same reason.

use std::collections::HashMap;

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

/// One connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    pub(crate) key: FlowKey,
    pub(crate) stage: Stage,
    /// The endpoint that sent the SYN (0 = key's low, 1 = high).
    pub(crate) initiator: usize,
    pub(crate) init_isn: u32,
    pub(crate) resp_isn: u32,
    /// Window-scale option of each endpoint's SYN / SYN-ACK.
    pub(crate) wscale_opt: [Option<u8>; 2],
    /// The shift each endpoint applies to the windows it sends (RFC 7323:
    /// 0 for both unless both offered the option).
    pub(crate) wscale: [u8; 2],
    /// MSS each endpoint announced (the largest segment it receives).
    pub(crate) mss: [u16; 2],
    /// Last SYN seen (ns).
    pub(crate) syn_at: u64,
    /// Handshake RTT (ns), once established.
    pub(crate) rtt_ns: u64,
    /// Last segment seen (ns).
    pub(crate) last_seen: u64,
    /// Traffic class index (the default class is the last).
    pub(crate) class: u8,
    /// FIN seen from each endpoint.
    pub(crate) fin: [bool; 2],
    active: bool,
    prev: u32,
    next: u32,
}

impl Flow {
    /// A new half-open entry.
    pub(crate) fn new(key: FlowKey, initiator: usize, now: u64) -> Self {
        Flow {
            key,
            stage: Stage::SynSent,
            initiator,
            init_isn: 0,
            resp_isn: 0,
            wscale_opt: [None; 2],
            wscale: [0; 2],
            mss: [0; 2],
            syn_at: now,
            rtt_ns: 0,
            last_seen: now,
            class: 0,
            fin: [false; 2],
            active: false,
            prev: NIL,
            next: NIL,
        }
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

/// The flow table (see the module docs).
#[derive(Debug)]
pub(crate) struct Table {
    map: HashMap<FlowKey, u32>,
    slots: Vec<(Which, Flow)>,
    free: Vec<u32>,
    half: List,
    est: List,
    /// The least recent established flow that is still active, or NIL.
    oldest_active: u32,
    active_per_class: Vec<u32>,
    max_flows: usize,
    max_half_open: usize,
    pub(crate) counters: TableCounters,
}

impl Table {
    pub(crate) fn new(max_flows: usize, max_half_open: usize, classes: usize) -> Self {
        Table {
            map: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            half: List::default(),
            est: List::default(),
            oldest_active: NIL,
            active_per_class: vec![0; classes],
            max_flows,
            max_half_open,
            counters: TableCounters::default(),
        }
    }

    pub(crate) fn find(&self, key: &FlowKey) -> Option<u32> {
        self.map.get(key).copied()
    }

    pub(crate) fn flow(&self, i: u32) -> Option<&Flow> {
        self.slots.get(i as usize).map(|(_, f)| f)
    }

    pub(crate) fn flow_mut(&mut self, i: u32) -> Option<&mut Flow> {
        self.slots.get_mut(i as usize).map(|(_, f)| f)
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

    fn links(&self, i: u32) -> (u32, u32) {
        self.slots
            .get(i as usize)
            .map_or((NIL, NIL), |(_, f)| (f.prev, f.next))
    }

    fn set_prev(&mut self, i: u32, p: u32) {
        if let Some((_, f)) = self.slots.get_mut(i as usize) {
            f.prev = p;
        }
    }

    fn set_next(&mut self, i: u32, n: u32) {
        if let Some((_, f)) = self.slots.get_mut(i as usize) {
            f.next = n;
        }
    }

    fn which(&self, i: u32) -> Option<Which> {
        self.slots.get(i as usize).map(|(w, _)| *w)
    }

    fn unlink(&mut self, i: u32) {
        let Some(w) = self.which(i) else { return };
        let (prev, next) = self.links(i);
        if prev == NIL {
            self.list(w).head = next;
        } else {
            self.set_next(prev, next);
        }
        if next == NIL {
            self.list(w).tail = prev;
        } else {
            self.set_prev(next, prev);
        }
        let l = self.list(w);
        l.len = l.len.saturating_sub(1);
        self.set_prev(i, NIL);
        self.set_next(i, NIL);
    }

    fn push_front(&mut self, i: u32, w: Which) {
        let head = self.list(w).head;
        if let Some(slot) = self.slots.get_mut(i as usize) {
            slot.0 = w;
            slot.1.prev = NIL;
            slot.1.next = head;
        }
        if head == NIL {
            self.list(w).tail = i;
        } else {
            self.set_prev(head, i);
        }
        let l = self.list(w);
        l.head = i;
        l.len += 1;
    }

    /// Adds a half-open entry, evicting the least recent half-open one if
    /// that table is full. `None` only if the key is already present.
    pub(crate) fn insert_half_open(&mut self, flow: Flow) -> Option<u32> {
        if self.map.contains_key(&flow.key) {
            return None;
        }
        if self.half.len >= self.max_half_open && self.half.tail != NIL {
            self.remove(self.half.tail);
            self.counters.evicted_half_open += 1;
        }
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(slot) = self.slots.get_mut(i as usize) {
                    *slot = (Which::HalfOpen, flow);
                }
                i
            }
            None => {
                let i = u32::try_from(self.slots.len()).ok()?;
                self.slots.push((Which::HalfOpen, flow));
                i
            }
        };
        self.map.insert(flow.key, i);
        self.push_front(i, Which::HalfOpen);
        Some(i)
    }

    /// A segment of half-open entry `i` at `now`.
    pub(crate) fn touch_half_open(&mut self, i: u32, now: u64) {
        self.unlink(i);
        self.push_front(i, Which::HalfOpen);
        if let Some(f) = self.flow_mut(i) {
            f.last_seen = now;
        }
    }

    /// Moves half-open `i` to the established flows, active from `now`.
    /// If they are full, the least recent one goes if it is inactive (an
    /// idle flow); if even that one is active, `i` is dropped instead
    /// (`false`): active flows are never evicted.
    pub(crate) fn promote(&mut self, i: u32, now: u64) -> bool {
        if self.est.len >= self.max_flows {
            let tail = self.est.tail;
            match self.flow(tail) {
                Some(f) if !f.active => {
                    self.remove(tail);
                    self.counters.evicted += 1;
                }
                _ => {
                    self.remove(i);
                    self.counters.refused += 1;
                    return false;
                }
            }
        }
        self.unlink(i);
        self.push_front(i, Which::Established);
        if let Some(f) = self.flow_mut(i) {
            f.stage = Stage::Established;
            f.last_seen = now;
        }
        self.activate(i);
        true
    }

    fn activate(&mut self, i: u32) {
        let Some(f) = self.flow_mut(i) else { return };
        if f.active {
            return;
        }
        f.active = true;
        let class = usize::from(f.class);
        if let Some(n) = self.active_per_class.get_mut(class) {
            *n += 1;
        }
        if self.oldest_active == NIL {
            self.oldest_active = i;
        }
    }

    fn deactivate(&mut self, i: u32) {
        let Some(f) = self.flow_mut(i) else { return };
        if !f.active {
            return;
        }
        f.active = false;
        let class = usize::from(f.class);
        if let Some(n) = self.active_per_class.get_mut(class) {
            *n = n.saturating_sub(1);
        }
    }

    /// A segment of established flow `i` at `now`: most recent, active.
    pub(crate) fn touch(&mut self, i: u32, now: u64) {
        if self.oldest_active == i {
            // It moves to the front; the next older active flow is the one
            // in front of it (or, if it was the head, itself again).
            let (prev, _) = self.links(i);
            self.oldest_active = if prev == NIL { i } else { prev };
        }
        self.unlink(i);
        self.push_front(i, Which::Established);
        if let Some(f) = self.flow_mut(i) {
            f.last_seen = now;
        }
        self.activate(i);
    }

    /// Forgets entry `i` (FIN/RST, eviction, expiry).
    pub(crate) fn remove(&mut self, i: u32) {
        let Some(key) = self.flow(i).map(|f| f.key) else {
            return;
        };
        if self.map.get(&key) != Some(&i) {
            return; // already free
        }
        if self.oldest_active == i {
            let (prev, _) = self.links(i);
            self.oldest_active = prev;
        }
        self.deactivate(i);
        self.unlink(i);
        self.map.remove(&key);
        self.free.push(i);
    }

    /// Processes the passage of time to `now`: flows silent for
    /// `active_ns` stop counting towards n_j, established flows silent for
    /// `idle_ns` and handshakes older than `handshake_ns` are forgotten.
    pub(crate) fn expire(&mut self, now: u64, active_ns: u64, idle_ns: u64, handshake_ns: u64) {
        while let Some(f) = self.flow(self.oldest_active) {
            if f.last_seen.saturating_add(active_ns) > now {
                break;
            }
            let (i, prev) = (self.oldest_active, f.prev);
            self.deactivate(i);
            self.oldest_active = prev;
        }
        while let Some(f) = self.flow(self.est.tail) {
            if f.last_seen.saturating_add(idle_ns) > now {
                break;
            }
            self.remove(self.est.tail);
            self.counters.expired += 1;
        }
        while let Some(f) = self.flow(self.half.tail) {
            if f.last_seen.saturating_add(handshake_ns) > now {
                break;
            }
            self.remove(self.half.tail);
            self.counters.expired_half_open += 1;
        }
    }

    /// Walks both lists and recounts everything (tests only): the links
    /// agree with the lengths, every entry is in the map, the active flows
    /// are exactly a prefix of the established list ending at
    /// `oldest_active`, and the per-class counts match.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut per_class = vec![0u32; self.active_per_class.len()];
        for (w, l) in [(Which::HalfOpen, self.half), (Which::Established, self.est)] {
            let (mut i, mut prev, mut n) = (l.head, NIL, 0);
            let mut seen_inactive = false;
            let mut last_active = NIL;
            while i != NIL {
                let (wi, f) = &self.slots[i as usize];
                assert_eq!(*wi, w);
                assert_eq!(f.prev, prev);
                assert_eq!(self.map.get(&f.key), Some(&i));
                if w == Which::Established {
                    if f.active {
                        assert!(!seen_inactive, "active flow after an inactive one");
                        per_class[usize::from(f.class)] += 1;
                        last_active = i;
                    } else {
                        seen_inactive = true;
                    }
                } else {
                    assert!(!f.active);
                }
                prev = i;
                i = f.next;
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
    }
}

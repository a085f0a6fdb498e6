//! The per-flow memory behind [`StampEvery::Rtt`] and
//! [`StampEvery::Every`]: when each flow last carried this port's signal
//! (DESIGN §3.9, paper §V "Overhead Reduction": "generate hashes for flows
//! and attempt to only fragment packets once per RTT per flow, ensuring
//! that it at worst overestimates the number of fragments needed").
//!
//! **Structure.** A fixed array of [`STAMP_SLOTS`] slots (a power of two),
//! allocated once when the port is built; nothing is allocated per flow
//! or per packet. A flow's slot is picked by a keyed hash of its
//! [`FlowKey`] (keys drawn from the port's seed, so the simulator repeats
//! exactly); a slot holds one flow's **whole key**, the port time of its
//! last signal, the RTT it last announced and the rate it was last told.
//!
//! **Bounded memory.** `slots × size_of::<Slot>()` = 4096 × 56 bytes =
//! 224 KiB per port, whatever the traffic ([`StampTable::memory_bytes`];
//! a test pins the slot size).
//!
//! **Collisions only add signals.** A slot answers only for the flow whose
//! key it holds, and a flow that takes another flow's slot is signalled on
//! every packet until it announces its RTT again (what it announced before
//! may have been lost with the slot). A flow whose slot holds another key (it was never
//! signalled, or another flow took the slot since) is *due*: its packet
//! is signalled, and the slot becomes its own. So a flow is held back only
//! by its own last signal, and a packet of flow F leaving at `t` is
//! skipped only if F was signalled after `t − interval(F)`; two flows
//! sharing a slot just signal more often than they need to (each evicts
//! the other). With more active flows than slots the table degrades
//! towards per-packet signalling, never below it. A stranger choosing
//! flows that collide can therefore only make the port signal as it does
//! with [`StampEvery::Packet`]. `crates/ka-router/tests/stamp_every_props.rs`
//! checks both properties against a reference model.
//!
//! Which packets the port signals whatever the table says (SYNs, leading
//! fragments that already carry an upstream signal, a rate cut) is the
//! signaller's rule, in `rate.rs`; this table only answers "has this flow
//! had a signal within its interval?".

use ka_codec::wire::FlowKey;

use crate::flowhash::FlowHasher;

use crate::config::StampEvery;
use crate::qdisc::Nanos;

pub use crate::config::{MAX_STAMP_SLOTS, STAMP_SLOTS};

/// `last` of a slot whose flow has not been signalled since it took it.
const NEVER: u64 = u64::MAX;
/// `rtt_us` of a slot whose flow has announced no RTT.
const NO_RTT: u32 = u32::MAX;
/// `told` of a slot whose flow has not been told a rate.
const NO_RATE: f32 = 0.0;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: FlowKey,
    /// Port time (ns) of the flow's last signal, or [`NEVER`].
    last: u64,
    /// The flow's own RTT in µs (rounded down), or [`NO_RTT`].
    rtt_us: u32,
    /// The rate (B/ms) the flow was last told, or [`NO_RATE`].
    told: f32,
    /// [`UNUSED`], [`HELD`] or [`RELEASED`].
    state: u8,
}

/// A slot no flow has held: a flow taking it has announced no RTT.
const UNUSED: u8 = 0;
/// A slot holding the flow of its key.
const HELD: u8 = 1;
/// A slot a flow held and gave up ([`StampTable::forget`], keeping its
/// key): another flow taking it may have announced an RTT into it that
/// was lost.
const RELEASED: u8 = 2;

const EMPTY: Slot = Slot {
    key: FlowKey {
        src: [0; 16],
        dst: [0; 16],
        sport: 0,
        dport: 0,
        proto: 0,
    },
    last: NEVER,
    rtt_us: NO_RTT,
    told: NO_RATE,
    state: UNUSED,
};

/// When each flow last carried this port's signal (see the module docs).
#[derive(Clone)]
pub struct StampTable {
    every: StampEvery,
    slots: Box<[Slot]>,
    mask: usize,
    hasher: FlowHasher,
}

impl std::fmt::Debug for StampTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the hash keys.
        f.debug_struct("StampTable")
            .field("every", &self.every)
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl StampTable {
    /// A table of `slots` slots (rounded up to a power of two, 1 to
    /// [`MAX_STAMP_SLOTS`]) for `every`, its hash keyed by `seed`.
    /// [`StampEvery::Packet`] needs no table; given one, every packet is
    /// due.
    pub fn new(every: StampEvery, slots: usize, seed: u64) -> Self {
        let n = slots.clamp(1, MAX_STAMP_SLOTS).next_power_of_two();
        // A domain tag so the keys differ from the other users of the
        // port's seed (the queue discipline).
        let hasher = FlowHasher::new(seed, 0x5354_414D_5045_5645); // "STAMPEVE"
        Self {
            every,
            slots: vec![EMPTY; n].into_boxed_slice(),
            mask: n - 1,
            hasher,
        }
    }

    /// The interval rule the table applies.
    pub fn every(&self) -> StampEvery {
        self.every
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Bytes the slots take (the table's whole per-port memory but for a
    /// few words): fixed at construction.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// The slot index of `key`.
    #[inline]
    pub fn index(&self, key: &FlowKey) -> usize {
        (self.hasher.hash(key) as usize) & self.mask
    }

    /// `key`'s slot, if it holds `key`.
    #[inline]
    fn own(&self, key: &FlowKey) -> Option<&Slot> {
        self.slots
            .get(self.index(key))
            .filter(|s| s.state == HELD && s.key == *key)
    }

    #[inline]
    fn own_mut(&mut self, key: &FlowKey) -> Option<&mut Slot> {
        let i = self.index(key);
        self.slots
            .get_mut(i)
            .filter(|s| s.state == HELD && s.key == *key)
    }

    /// The interval that applies to `key` (ns): the fixed one of
    /// [`StampEvery::Every`]; for [`StampEvery::Rtt`] the RTT the flow last
    /// announced ([`StampTable::note_rtt`]) if its slot holds it, else `d`
    /// (the port's average RTT); 0 for [`StampEvery::Packet`].
    pub fn interval(&self, key: &FlowKey, d: Nanos) -> Nanos {
        match self.every {
            StampEvery::Packet => 0,
            StampEvery::Every(iv) => u64::try_from(iv.as_nanos()).unwrap_or(u64::MAX),
            StampEvery::Rtt => match self.own(key) {
                Some(s) if s.rtt_us != NO_RTT => u64::from(s.rtt_us) * 1_000,
                _ => d,
            },
        }
    }

    /// Whether a packet of `key` leaving at `t` is due a signal: the flow
    /// holds no slot (never signalled, or another flow took its slot), or
    /// its last signal is at least [`StampTable::interval`] old. `d` is the
    /// port's average RTT.
    pub fn due(&self, t: Nanos, key: &FlowKey, d: Nanos) -> bool {
        if self.every.is_packet() {
            return true;
        }
        match self.own(key) {
            Some(s) if s.last != NEVER => t.saturating_sub(s.last) >= self.interval(key, d),
            _ => true,
        }
    }

    /// The rate (B/ms) `key` was last told ([`StampTable::signalled`]), if
    /// its slot holds it.
    pub fn last_told(&self, key: &FlowKey) -> Option<f64> {
        self.own(key)
            .map(|s| f64::from(s.told))
            .filter(|&r| r > 0.0)
    }

    /// A packet of `key` carried the port's signal at `t`, telling it
    /// `told` B/ms (kept to f32 precision; 0 or less: nothing to
    /// remember). The slot becomes `key`'s. The RTT it announced is kept if
    /// the slot was already its; a flow that takes another flow's slot may
    /// have announced an RTT below d that the other flow's arrival made us
    /// forget, so it gets interval 0 (every packet) until it announces one
    /// again (likewise in a slot another flow released): an eviction never
    /// lengthens a flow's interval.
    pub fn signalled(&mut self, t: Nanos, key: &FlowKey, told: f64) {
        let i = self.index(key);
        if let Some(s) = self.slots.get_mut(i) {
            let rtt_us = match s.state {
                HELD if s.key == *key => s.rtt_us,
                // Never held, or released by this flow's own SYN: a new
                // connection that has announced nothing yet.
                UNUSED => NO_RTT,
                RELEASED if s.key == *key => NO_RTT,
                _ => 0,
            };
            *s = Slot {
                key: *key,
                last: t,
                rtt_us,
                told: if told.is_finite() && told > 0.0 {
                    told as f32
                } else {
                    NO_RATE
                },
                state: HELD,
            };
        }
    }

    /// `key` announced its RTT: `rtt` ns, rounded down to whole µs. If the
    /// slot holds another flow, `key` takes it (unsignalled so far, so its
    /// next packet is due; the other flow's next packet is due too).
    pub fn note_rtt(&mut self, key: &FlowKey, rtt: Nanos) {
        if self.every != StampEvery::Rtt {
            return;
        }
        let rtt_us = u32::try_from(rtt / 1_000)
            .unwrap_or(NO_RTT - 1)
            .min(NO_RTT - 1);
        if let Some(s) = self.own_mut(key) {
            s.rtt_us = rtt_us;
            return;
        }
        let i = self.index(key);
        if let Some(s) = self.slots.get_mut(i) {
            *s = Slot {
                key: *key,
                rtt_us,
                state: HELD,
                ..EMPTY
            };
        }
    }

    /// Forgets `key` (a SYN: a new connection on this 5-tuple), so its next
    /// packet is due.
    pub fn forget(&mut self, key: &FlowKey) {
        if let Some(s) = self.own_mut(key) {
            *s = Slot {
                key: *key,
                state: RELEASED,
                ..EMPTY
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(i: u32) -> FlowKey {
        let [a, b, c, d] = i.to_be_bytes();
        FlowKey::v4([10, a, b, c], [10, 99, 0, d], 1000 + (i as u16), 80, 6)
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn slot_size_and_memory_are_fixed() {
        assert_eq!(std::mem::size_of::<Slot>(), 56);
        let t = StampTable::new(StampEvery::Rtt, STAMP_SLOTS, 1);
        assert_eq!(t.slots(), 4096);
        assert_eq!(t.memory_bytes(), 4096 * 56);
        assert_eq!(StampTable::new(StampEvery::Rtt, 3000, 1).slots(), 4096);
        assert_eq!(StampTable::new(StampEvery::Rtt, 0, 1).slots(), 1);
        assert_eq!(
            StampTable::new(StampEvery::Rtt, usize::MAX, 1).slots(),
            MAX_STAMP_SLOTS
        );
    }

    #[test]
    fn rtt_interval_own_then_port_average() {
        let mut t = StampTable::new(StampEvery::Rtt, 64, 7);
        let k = key(1);
        assert!(t.due(0, &k, 100 * MS), "a new flow is due");
        t.signalled(0, &k, 40.0);
        assert!(!t.due(99 * MS, &k, 100 * MS));
        assert!(
            t.due(100 * MS, &k, 100 * MS),
            "d applies without an own RTT"
        );
        t.note_rtt(&k, 32 * MS);
        assert_eq!(t.interval(&k, 100 * MS), 32 * MS);
        assert!(!t.due(31 * MS, &k, 100 * MS));
        assert!(t.due(32 * MS, &k, 100 * MS));
        assert_eq!(t.last_told(&k), Some(40.0));
        t.signalled(50 * MS, &k, 0.0);
        assert_eq!(t.interval(&k, 100 * MS), 32 * MS, "the own RTT is kept");
        assert_eq!(t.last_told(&k), None);
        t.forget(&k);
        assert!(
            t.due(51 * MS, &k, 100 * MS),
            "a SYN makes the next packet due"
        );
    }

    #[test]
    fn fixed_interval_ignores_rtts() {
        let mut t = StampTable::new(StampEvery::Every(Duration::from_millis(10)), 64, 7);
        let k = key(2);
        t.note_rtt(&k, 500 * MS);
        t.signalled(5 * MS, &k, 30.0);
        assert_eq!(t.interval(&k, 100 * MS), 10 * MS);
        assert!(!t.due(14 * MS, &k, 100 * MS));
        assert!(t.due(15 * MS, &k, 100 * MS));
    }

    #[test]
    fn a_collision_makes_both_flows_due() {
        // One slot: every flow collides with every other.
        let mut t = StampTable::new(StampEvery::Rtt, 1, 3);
        let (a, b) = (key(1), key(2));
        t.signalled(0, &a, 50.0);
        assert!(!t.due(1, &a, 100 * MS));
        assert!(t.due(1, &b, 100 * MS), "b never had a signal");
        t.signalled(1, &b, 50.0);
        assert!(t.due(2, &a, 100 * MS), "b took a's slot: a is due again");
        assert_eq!(t.interval(&b, 100 * MS), 0, "b evicted a: every packet");
        t.note_rtt(&a, 10 * MS);
        assert!(t.due(3, &b, 100 * MS), "a took the slot back by its RTT");
        assert!(t.due(3, &a, 100 * MS), "a has not been signalled since");
    }

    #[test]
    fn packet_mode_is_always_due() {
        let mut t = StampTable::new(StampEvery::Packet, 8, 0);
        let k = key(3);
        t.signalled(0, &k, 9.0);
        assert!(t.due(0, &k, 100 * MS));
        assert_eq!(t.interval(&k, 100 * MS), 0);
    }

    #[test]
    fn seeds_spread_flows_differently() {
        let a = StampTable::new(StampEvery::Rtt, STAMP_SLOTS, 1);
        let b = StampTable::new(StampEvery::Rtt, STAMP_SLOTS, 2);
        let same = (0..1000)
            .filter(|&i| a.index(&key(i)) == b.index(&key(i)))
            .count();
        assert!(
            same < 20,
            "{same} of 1000 flows share a slot under both seeds"
        );
        let mut used: Vec<usize> = (0..4096).map(|i| a.index(&key(i))).collect();
        used.sort_unstable();
        used.dedup();
        // 4096 balls in 4096 bins fill 1 − 1/e ≈ 63 %.
        assert!(used.len() > 2400, "{} slots used", used.len());
    }
}

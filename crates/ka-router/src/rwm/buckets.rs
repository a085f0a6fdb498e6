//! The flow table's index: open addressing over 64-byte buckets of four
//! 16-byte [`Hot`] entries, each holding everything a segment of an
//! established connection needs, so the per-packet path reads **one cache
//! line** of the table (the old layout read a hash-map bucket, then the
//! connection's slot: two dependent misses).
//!
//! A connection's 64-bit fingerprint ([`super::hash`]) picks its *home*
//! bucket (its top 32 bits, by multiply-shift range reduction, so the
//! bucket count need not be a power of two) and its 32-bit *tag* (the low
//! 32 bits). Lookups walk buckets from home, comparing tags, and stop at
//! the first bucket that has a never-used (empty) entry, or after
//! [`MAX_PROBE`] buckets. Removal leaves a tombstone (reused by inserts);
//! the table is rebuilt when live entries and tombstones fill 7/8 of it.
//! An entry's position never changes between rebuilds, so the cold part
//! of a connection lives at the same index of a parallel array
//! (`table.rs`).
//!
//! **Tags, not keys.** A bucket has no room for the connection's key or
//! full fingerprint (those sit in the cold part). Inserting checks the
//! full fingerprint and refuses a connection whose tag already occurs on
//! its lookup path, so among *tracked* connections a tag match is exact.
//! A segment of an *untracked* connection matches a tracked one only if
//! its 32-bit tag equals one on its path: probability about
//! (entries read) / 2³² ≈ 10⁻⁹ per segment, unpredictable without the
//! key. Such a segment is treated as the tracked connection's: its window
//! is at most lowered to that connection's cap (never raised, never
//! below one segment).

/// Entries per bucket (64-byte line / 16-byte entry).
pub(crate) const WAYS: usize = 4;

/// Most buckets a lookup or insert reads (256 entries' worth of lines
/// is never reached in practice: at 7/8 occupancy the walk ends within
/// two buckets almost always).
pub(crate) const MAX_PROBE: usize = 16;

/// `flags`: which of never used / tombstone / live.
const OCC: u8 = 0b11;
const EMPTY: u8 = 0;
const TOMB: u8 = 1;
const LIVE: u8 = 2;
/// `flags`: the handshake stage (bits 2–3).
const STAGE_SHIFT: u32 = 2;
const STAGE: u8 = 0b11 << STAGE_SHIFT;
/// `flags`: counted in its class's n_j.
const ACTIVE: u8 = 1 << 4;
/// `flags`: a FIN seen from endpoint 0 / 1.
const FIN0: u8 = 1 << 5;
const FIN1: u8 = 1 << 6;

/// Where a connection's handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// SYN seen.
    SynSent = 0,
    /// SYN-ACK seen (acknowledging the SYN).
    SynAckSeen = 1,
    /// The initiator's ACK of the SYN-ACK seen: RTT measured.
    Established = 2,
    /// Left modulation on a RST or the second FIN RWM accepted, but kept
    /// (in the half-open list) with its handshake's facts, so that a
    /// connection that goes on sending data is re-admitted (`accept.rs`).
    Closed = 3,
}

/// `flags` of a live, established, active entry: with a current `epoch`,
/// a segment needs nothing but the window arithmetic.
const FAST: u8 = LIVE | ((Stage::Established as u8) << STAGE_SHIFT) | ACTIVE;

/// What every segment of a connection needs: 16 bytes, four to a line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub(crate) struct Hot {
    /// The fingerprint's low 32 bits.
    tag: u32,
    /// Handshake RTT, ns (as `f32`: 24 bits of precision are plenty).
    pub(crate) rtt_ns: f32,
    /// MSS each endpoint announced (the largest segment it receives).
    pub(crate) mss: [u16; 2],
    /// Each endpoint's window shift (RFC 7323), endpoint 0 in the low
    /// nibble: 0 for both unless both offered the option.
    wscale: u8,
    /// Traffic class index (the default class is the last).
    pub(crate) class: u8,
    flags: u8,
    /// The low byte of the granule in which the entry was last moved to
    /// the front of its list (see `table.rs`).
    pub(crate) epoch: u8,
}

impl Hot {
    /// A live entry for fingerprint `fp`, half-open.
    pub(crate) fn new(fp: u64) -> Self {
        Hot {
            tag: fp as u32,
            flags: LIVE,
            ..Hot::default()
        }
    }

    /// The handshake stage.
    pub(crate) fn stage(&self) -> Stage {
        match (self.flags & STAGE) >> STAGE_SHIFT {
            0 => Stage::SynSent,
            1 => Stage::SynAckSeen,
            2 => Stage::Established,
            _ => Stage::Closed,
        }
    }

    pub(crate) fn set_stage(&mut self, s: Stage) {
        self.flags = (self.flags & !STAGE) | ((s as u8) << STAGE_SHIFT);
    }

    /// Established, active and moved within the current granule (`epoch`
    /// is its low byte): nothing to update for a segment.
    #[inline]
    pub(crate) fn is_fast(&self, epoch: u8) -> bool {
        self.flags & (OCC | STAGE | ACTIVE) == FAST && self.epoch == epoch
    }

    pub(crate) fn active(&self) -> bool {
        self.flags & ACTIVE != 0
    }

    pub(crate) fn set_active(&mut self, on: bool) {
        if on {
            self.flags |= ACTIVE;
        } else {
            self.flags &= !ACTIVE;
        }
    }

    /// Records a FIN from endpoint `from`; `true` once both sent one.
    pub(crate) fn fin(&mut self, from: usize) -> bool {
        self.flags |= if from == 0 { FIN0 } else { FIN1 };
        self.flags & (FIN0 | FIN1) == FIN0 | FIN1
    }

    /// Forgets the FINs seen (a closed connection re-admitted).
    pub(crate) fn clear_fins(&mut self) {
        self.flags &= !(FIN0 | FIN1);
    }

    /// Endpoint `e`'s window shift.
    #[inline]
    pub(crate) fn wscale(&self, e: usize) -> u8 {
        if e == 0 {
            self.wscale & 0x0F
        } else {
            self.wscale >> 4
        }
    }

    /// Both shifts (each at most 15).
    pub(crate) fn set_wscale(&mut self, ws: [u8; 2]) {
        let [a, b] = ws.map(|w| w.min(15));
        self.wscale = a | (b << 4);
    }

    /// Takes `from`'s contents (RTT, MSS, scales, class, stage, FINs),
    /// keeping this entry's tag, occupancy, activity and granule.
    pub(crate) fn assign(&mut self, from: &Hot) {
        let keep = OCC | ACTIVE;
        *self = Hot {
            tag: self.tag,
            epoch: self.epoch,
            flags: (self.flags & keep) | (from.flags & !keep),
            ..*from
        };
    }

    fn live(&self) -> bool {
        self.flags & OCC == LIVE
    }
}

/// Four entries on one cache line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct Bucket([Hot; WAYS]);

/// The index (see the module docs). Positions are `bucket · WAYS + way`.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    buckets: Vec<Bucket>,
    live: usize,
    tombs: usize,
}

/// What a walk from a fingerprint's home found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// A live entry with the tag, at this position.
    Found(u32),
    /// No such entry; the first free position on the path, if any within
    /// [`MAX_PROBE`] buckets.
    Absent(Option<u32>),
}

impl Buckets {
    /// `n` empty buckets.
    pub(crate) fn with_buckets(n: usize) -> Self {
        Buckets {
            buckets: vec![Bucket::default(); n],
            live: 0,
            tombs: 0,
        }
    }

    /// Positions (entries) allocated.
    pub(crate) fn capacity(&self) -> usize {
        self.buckets.len() * WAYS
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    pub(crate) fn live(&self) -> usize {
        self.live
    }

    pub(crate) fn tombs(&self) -> usize {
        self.tombs
    }

    #[inline]
    fn home(&self, fp: u64) -> usize {
        (((fp >> 32) * self.buckets.len() as u64) >> 32) as usize
    }

    /// Asks the CPU to start loading `fp`'s home bucket
    /// ([`Rwm::process_batch`](super::Rwm::process_batch): the misses of a
    /// batch's lookups then overlap).
    #[inline]
    #[allow(unsafe_code)]
    pub(crate) fn prefetch(&self, fp: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(b) = self.buckets.get(self.home(fp)) {
            // SAFETY: `_mm_prefetch` only hints the cache; it never faults
            // and reads nothing into the program (the pointer is to a live
            // bucket anyway). SSE is part of the x86-64 baseline.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    (b as *const Bucket).cast::<i8>(),
                );
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = fp;
    }

    /// Walks from `fp`'s home: the live entry tagged like `fp`, or where
    /// one could go.
    #[inline]
    pub(crate) fn probe(&self, fp: u64) -> Probe {
        let tag = fp as u32;
        let n = self.buckets.len();
        let mut b = self.home(fp);
        let mut free = None;
        for _ in 0..MAX_PROBE.min(n) {
            let Some(bucket) = self.buckets.get(b) else {
                break;
            };
            let mut empty = false;
            for (w, e) in bucket.0.iter().enumerate() {
                let occ = e.flags & OCC;
                if occ == LIVE && e.tag == tag {
                    return Probe::Found((b * WAYS + w) as u32);
                }
                if occ != LIVE && free.is_none() {
                    free = Some((b * WAYS + w) as u32);
                }
                empty |= occ == EMPTY;
            }
            if empty {
                break;
            }
            b += 1;
            if b == n {
                b = 0;
            }
        }
        Probe::Absent(free)
    }

    /// The entry at `pos`.
    #[inline]
    pub(crate) fn get(&self, pos: u32) -> Option<&Hot> {
        let p = pos as usize;
        self.buckets
            .get(p / WAYS)?
            .0
            .get(p % WAYS)
            .filter(|e| e.live())
    }

    pub(crate) fn get_mut(&mut self, pos: u32) -> Option<&mut Hot> {
        let p = pos as usize;
        self.buckets
            .get_mut(p / WAYS)?
            .0
            .get_mut(p % WAYS)
            .filter(|e| e.live())
    }

    /// Stores `hot` (live) at the free position `pos` from
    /// [`Probe::Absent`].
    pub(crate) fn put(&mut self, pos: u32, hot: Hot) {
        let p = pos as usize;
        if let Some(e) = self
            .buckets
            .get_mut(p / WAYS)
            .and_then(|b| b.0.get_mut(p % WAYS))
        {
            match e.flags & OCC {
                LIVE => return,
                TOMB => self.tombs -= 1,
                _ => {}
            }
            *e = Hot {
                flags: (hot.flags & !OCC) | LIVE,
                ..hot
            };
            self.live += 1;
        }
    }

    /// Leaves a tombstone at `pos`.
    pub(crate) fn erase(&mut self, pos: u32) {
        if let Some(e) = self.get_mut(pos) {
            *e = Hot {
                flags: TOMB,
                ..Hot::default()
            };
            self.live -= 1;
            self.tombs += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(size_of::<Hot>(), 16);
        assert_eq!(size_of::<Bucket>(), 64);
        assert_eq!(align_of::<Bucket>(), 64);
    }

    #[test]
    fn insert_find_erase_reuse() {
        let mut t = Buckets::with_buckets(3);
        let fps: Vec<u64> = (0..10u64)
            .map(|i| (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let mut at = Vec::new();
        for &fp in &fps {
            let Probe::Absent(Some(p)) = t.probe(fp) else {
                panic!("room for {fp:x}");
            };
            t.put(p, Hot::new(fp));
            at.push(p);
        }
        assert_eq!(t.live(), 10);
        for (&fp, &p) in fps.iter().zip(&at) {
            assert_eq!(t.probe(fp), Probe::Found(p));
        }
        t.erase(at[0]);
        assert_eq!((t.live(), t.tombs()), (9, 1));
        // Everything past the tombstone is still found.
        for (&fp, &p) in fps.iter().zip(&at).skip(1) {
            assert_eq!(t.probe(fp), Probe::Found(p));
        }
        assert!(matches!(t.probe(fps[0]), Probe::Absent(Some(_))));
        let Probe::Absent(Some(p)) = t.probe(fps[0]) else {
            unreachable!()
        };
        t.put(p, Hot::new(fps[0]));
        assert_eq!((t.live(), t.tombs()), (10, 0), "tombstone reused");
        // Full (12 of 12 with two more): the third extra finds no room.
        for fp in [(11u64 << 40) | 11, (12 << 40) | 12] {
            let Probe::Absent(Some(p)) = t.probe(fp) else {
                panic!()
            };
            t.put(p, Hot::new(fp));
        }
        assert_eq!(t.probe((13 << 40) | 13), Probe::Absent(None));
    }

    #[test]
    fn flags() {
        let mut h = Hot::new(5);
        assert_eq!(h.stage(), Stage::SynSent);
        h.set_stage(Stage::Established);
        h.set_active(true);
        h.epoch = 9;
        assert!(h.is_fast(9) && !h.is_fast(10));
        h.set_wscale([7, 14]);
        assert_eq!((h.wscale(0), h.wscale(1)), (7, 14));
        assert!(!h.fin(1));
        assert!(h.fin(0));
        assert!(h.is_fast(9), "FIN bits do not matter");
        h.set_active(false);
        assert!(!h.is_fast(9));
    }
}

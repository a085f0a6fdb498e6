//! IPv4/IPv6 fragment reassembly with hard caps (DESIGN §6.2).
//!
//! * Each datagram in progress is keyed like RFC 791 / RFC 8200 say
//!   (IPv4: source, destination, protocol, identification; IPv6: source,
//!   destination, identification) and keeps its fragments ordered by offset
//!   (a short sorted list: a datagram has few fragments).
//! * **Overlap** between two fragments of one datagram drops the whole
//!   datagram (RFC 5722). An **exact duplicate** (same offset and length) is
//!   dropped alone (RFC 8200 §4.5 allows this), so path duplication does not
//!   destroy datagrams.
//! * **Memory**: every held fragment is charged its length plus
//!   [`PIECE_OVERHEAD`] bytes (so floods of tiny fragments are bounded too);
//!   the total never exceeds `max_bytes` (default 4 MiB). To make room the
//!   oldest datagrams are evicted; a fragment that cannot fit is dropped.
//! * **Time**: a datagram not completed within `timeout` (default 30 s) of
//!   its first fragment is dropped.
//! * **Count**: at most `max_datagrams` in progress; beyond, the oldest is
//!   evicted.
//! * Fragments that would make a datagram longer than `max_datagram_len`, or
//!   non-final fragments whose length is not a multiple of 8, are dropped.
//! * **ECN** ([`Reassembler::insert_ecn`]): the datagram is CE if any
//!   fragment was CE, and dropped if CE is mixed with Not-ECT (RFC 3168
//!   §5.3: reassembly must not lose a congestion mark, nor put CE on a
//!   packet whose sender did not do ECN). Otherwise ECT(0) if any fragment
//!   had it, then ECT(1), else Not-ECT.

use super::hash::OneWriteState;
use crate::config::ReassemblyConfig;
use ka_codec::wire::ecn::Ecn;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// Bookkeeping charged per held fragment on top of its payload.
pub const PIECE_OVERHEAD: usize = 64;

/// Identifies a datagram being reassembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IPv4 protocol (0 for IPv6).
    pub proto: u8,
    /// Identification (IPv4: 16 bits).
    pub ident: u32,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Fragments offered.
    pub fragments: u64,
    /// Datagrams completed.
    pub completed: u64,
    /// Datagrams dropped for overlapping fragments.
    pub overlaps: u64,
    /// Exact duplicate fragments dropped.
    pub duplicates: u64,
    /// Datagrams dropped because they timed out.
    pub timeouts: u64,
    /// Datagrams evicted (memory or count cap).
    pub evicted: u64,
    /// Fragments dropped as invalid or unfittable.
    pub invalid: u64,
    /// Completed datagrams dropped because CE was mixed with Not-ECT.
    pub ecn_mixed: u64,
}

/// One fragment as its IP header (and IPv6 Fragment header) describes
/// it, for [`Reassembler::insert_ecn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// Fragment offset, bytes.
    pub offset: usize,
    /// More Fragments.
    pub more: bool,
    /// The fragment's payload.
    pub data: &'a [u8],
    /// The upper-layer protocol if this fragment names it (offset 0).
    pub proto: Option<u8>,
    /// The IP header's ECN codepoint.
    pub ecn: Ecn,
}

#[derive(Debug)]
struct Datagram {
    created: Instant,
    deadline: Instant,
    /// (offset, payload), by offset; never overlapping.
    pieces: Vec<(usize, Vec<u8>)>,
    total_len: Option<usize>,
    charged: usize,
    /// Upper-layer protocol, from the offset-0 fragment (IPv6: the Fragment
    /// header's Next Header; IPv4: the IP protocol).
    proto: Option<u8>,
    /// ECN codepoints seen, one bit per codepoint value.
    ecn_seen: u8,
}

/// A completed datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassembled {
    /// The datagram's key.
    pub key: FragKey,
    /// Upper-layer protocol.
    pub proto: u8,
    /// The whole payload (fragmentable part).
    pub payload: Vec<u8>,
    /// The ECN codepoint of the datagram (see the module docs).
    pub ecn: Ecn,
}

/// The reassembly buffer.
#[derive(Debug)]
pub struct Reassembler {
    cfg: ReassemblyConfig,
    datagrams: HashMap<FragKey, Datagram, OneWriteState>,
    charged: usize,
    stats: ReassemblyStats,
}

impl Reassembler {
    /// An empty buffer with these limits.
    pub fn new(cfg: ReassemblyConfig) -> Self {
        Reassembler {
            cfg,
            datagrams: HashMap::default(),
            charged: 0,
            stats: ReassemblyStats::default(),
        }
    }

    /// Bytes currently charged (payload + per-fragment overhead); never
    /// above `max_bytes`.
    pub fn memory(&self) -> usize {
        self.charged
    }

    /// Datagrams in progress.
    pub fn in_progress(&self) -> usize {
        self.datagrams.len()
    }

    /// Counters.
    pub fn stats(&self) -> ReassemblyStats {
        self.stats
    }

    /// The earliest expiry of a datagram in progress.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.datagrams.values().map(|d| d.deadline).min()
    }

    /// Drops datagrams whose time is up.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<FragKey> = self
            .datagrams
            .iter()
            .filter(|(_, d)| d.deadline <= now)
            .map(|(k, _)| *k)
            .collect();
        for k in expired {
            self.remove(&k);
            self.stats.timeouts += 1;
        }
    }

    fn remove(&mut self, key: &FragKey) {
        if let Some(d) = self.datagrams.remove(key) {
            self.charged -= d.charged;
        }
    }

    fn evict_oldest(&mut self, except: &FragKey) -> bool {
        let oldest = self
            .datagrams
            .iter()
            .filter(|(k, _)| *k != except)
            .min_by_key(|(k, d)| (d.created, k.ident))
            .map(|(k, _)| *k);
        match oldest {
            Some(k) => {
                self.remove(&k);
                self.stats.evicted += 1;
                true
            }
            None => false,
        }
    }

    /// Offers one fragment: `offset` in bytes, `more` = MF, `data` its
    /// payload, `proto` the upper-layer protocol if this fragment names it
    /// (offset 0). Returns the datagram when this fragment completes it.
    /// The fragment counts as Not-ECT (see [`Reassembler::insert_ecn`]).
    pub fn insert(
        &mut self,
        now: Instant,
        key: FragKey,
        offset: usize,
        more: bool,
        data: &[u8],
        proto: Option<u8>,
    ) -> Option<Reassembled> {
        let frag = Fragment {
            offset,
            more,
            data,
            proto,
            ecn: Ecn::NotEct,
        };
        self.insert_ecn(now, key, frag)
    }

    /// [`Reassembler::insert`] for a fragment whose IP header carried an
    /// ECN codepoint (`frag.ecn`).
    pub fn insert_ecn(
        &mut self,
        now: Instant,
        key: FragKey,
        frag: Fragment<'_>,
    ) -> Option<Reassembled> {
        let Fragment {
            offset, more, data, ..
        } = frag;
        self.stats.fragments += 1;
        self.handle_timeout(now);
        let end = offset.saturating_add(data.len());
        if data.is_empty()
            || end > self.cfg.max_datagram_len
            || (more && !data.len().is_multiple_of(8))
        {
            self.stats.invalid += 1;
            return None;
        }
        let cost = data.len() + PIECE_OVERHEAD;
        if cost > self.cfg.max_bytes {
            self.stats.invalid += 1;
            return None;
        }
        // overlap / duplicate / length consistency (a new datagram has no
        // pieces: nothing to check)
        let verdict = match self.datagrams.get(&key) {
            Some(d) => check(d, offset, end, more),
            None => {
                while self.datagrams.len() >= self.cfg.max_datagrams.max(1) {
                    if !self.evict_oldest(&key) {
                        break;
                    }
                }
                Verdict::Ok
            }
        };
        match verdict {
            Verdict::Duplicate => {
                self.stats.duplicates += 1;
                return None;
            }
            Verdict::Bad => {
                self.remove(&key);
                self.stats.overlaps += 1;
                return None;
            }
            Verdict::Ok => {}
        }
        // memory
        while self.charged + cost > self.cfg.max_bytes {
            if !self.evict_oldest(&key) {
                break;
            }
        }
        let timeout = self.cfg.timeout;
        let d = self
            .datagrams
            .entry(key)
            .or_insert_with(|| Datagram::new(now, timeout));
        if self.charged + cost > self.cfg.max_bytes {
            // (the datagram stays, if only just created)
            self.stats.invalid += 1;
            return None;
        }
        let complete = d.add(frag, cost);
        self.charged += cost;
        if complete { self.complete(key) } else { None }
    }

    /// Takes a datagram whose fragments cover it without gaps.
    fn complete(&mut self, key: FragKey) -> Option<Reassembled> {
        let d = self.datagrams.remove(&key)?;
        self.charged -= d.charged;
        let total = d.total_len?;
        let mut pieces = d.pieces.into_iter();
        // The offset-0 piece's buffer becomes the payload: one copy of the
        // rest instead of a copy of everything.
        let (_, mut payload) = pieces.next()?;
        payload.reserve_exact(total.saturating_sub(payload.len()));
        for (_, p) in pieces {
            payload.extend_from_slice(&p);
        }
        let Some(ecn) = combined_ecn(d.ecn_seen) else {
            self.stats.ecn_mixed += 1;
            return None;
        };
        self.stats.completed += 1;
        Some(Reassembled {
            key,
            proto: d.proto.unwrap_or(key.proto),
            payload,
            ecn,
        })
    }
}

impl Datagram {
    fn new(now: Instant, timeout: std::time::Duration) -> Self {
        Datagram {
            created: now,
            deadline: now + timeout,
            pieces: Vec::new(),
            total_len: None,
            charged: 0,
            proto: None,
            ecn_seen: 0,
        }
    }

    /// Stores a fragment that passed [`check`]; returns whether the
    /// datagram is now complete (its pieces cover 0..total without gaps).
    fn add(&mut self, frag: Fragment<'_>, cost: usize) -> bool {
        let Fragment {
            offset,
            more,
            data,
            proto,
            ecn,
        } = frag;
        let at = self.pieces.partition_point(|(o, _)| *o < offset);
        self.pieces.insert(at, (offset, data.to_vec()));
        self.charged += cost;
        if !more {
            self.total_len = Some(offset + data.len());
        }
        if offset == 0 && proto.is_some() {
            self.proto = proto;
        }
        self.ecn_seen |= 1 << ecn.bits();
        let Some(total) = self.total_len else {
            return false;
        };
        let mut cursor = 0;
        for (o, p) in &self.pieces {
            if *o != cursor {
                return false;
            }
            cursor += p.len();
        }
        cursor == total
    }
}

/// The ECN codepoint of a datagram whose fragments carried the codepoints
/// in `seen` (bit `1 << codepoint`), or `None` to drop it (CE with Not-ECT).
fn combined_ecn(seen: u8) -> Option<Ecn> {
    let has = |e: Ecn| seen & (1 << e.bits()) != 0;
    if has(Ecn::Ce) {
        return (!has(Ecn::NotEct)).then_some(Ecn::Ce);
    }
    [Ecn::Ect0, Ecn::Ect1]
        .into_iter()
        .find(|&e| has(e))
        .or(Some(Ecn::NotEct))
}

enum Verdict {
    Ok,
    Duplicate,
    Bad,
}

fn check(d: &Datagram, offset: usize, end: usize, more: bool) -> Verdict {
    // the first piece starting at or after `offset`, and the one before
    let at = d.pieces.partition_point(|(o, _)| *o < offset);
    let here = d.pieces.get(at);
    if here.is_some_and(|(o, p)| *o == offset && offset + p.len() == end) {
        return Verdict::Duplicate;
    }
    let before = at.checked_sub(1).and_then(|i| d.pieces.get(i));
    if before.is_some_and(|(o, p)| o + p.len() > offset) {
        return Verdict::Bad;
    }
    if here.is_some_and(|(o, _)| *o < end) {
        return Verdict::Bad;
    }
    match d.total_len {
        Some(t) if end > t || (!more && end != t) => return Verdict::Bad,
        _ => {}
    }
    if !more && d.pieces.last().is_some_and(|(o, p)| o + p.len() > end) {
        return Verdict::Bad;
    }
    Verdict::Ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(ident: u32) -> FragKey {
        FragKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            proto: 6,
            ident,
        }
    }

    fn cfg() -> ReassemblyConfig {
        ReassemblyConfig::default()
    }

    #[test]
    fn reassembles_out_of_order_with_duplicates() {
        let t = Instant::now();
        let mut r = Reassembler::new(cfg());
        let data: Vec<u8> = (0..100u8).collect();
        assert!(r.insert(t, key(1), 48, false, &data[48..], None).is_none());
        assert!(r.insert(t, key(1), 48, false, &data[48..], None).is_none());
        assert_eq!(r.stats().duplicates, 1);
        assert!(r.insert(t, key(1), 24, true, &data[24..48], None).is_none());
        let done = r.insert(t, key(1), 0, true, &data[..24], Some(6)).unwrap();
        assert_eq!(done.payload, data);
        assert_eq!(done.proto, 6);
        assert_eq!(r.memory(), 0);
        assert_eq!(r.in_progress(), 0);
    }

    /// RFC 3168 §5.3: a CE mark on any fragment survives reassembly; CE
    /// with a Not-ECT fragment drops the datagram.
    #[test]
    fn ecn_of_reassembled_datagram() {
        let t = Instant::now();
        let data = [7u8; 64];
        let run = |first: Ecn, second: Ecn, ident: u32| {
            let mut r = Reassembler::new(cfg());
            assert!(
                r.insert_ecn(
                    t,
                    key(ident),
                    Fragment {
                        offset: 32,
                        more: false,
                        data: &data[32..],
                        proto: None,
                        ecn: second,
                    }
                )
                .is_none()
            );
            let done = r.insert_ecn(
                t,
                key(ident),
                Fragment {
                    offset: 0,
                    more: true,
                    data: &data[..32],
                    proto: Some(6),
                    ecn: first,
                },
            );
            assert_eq!(r.memory(), 0);
            (done.map(|d| d.ecn), r.stats())
        };
        use Ecn::*;
        assert_eq!(run(Ect0, Ect0, 1).0, Some(Ect0));
        assert_eq!(run(Ect0, Ce, 2).0, Some(Ce), "mark on the tail kept");
        assert_eq!(run(Ce, Ect0, 3).0, Some(Ce), "mark on the lead kept");
        assert_eq!(run(Ect1, Ce, 4).0, Some(Ce));
        assert_eq!(run(NotEct, NotEct, 5).0, Some(NotEct));
        assert_eq!(run(Ect1, Ect1, 6).0, Some(Ect1));
        let (done, st) = run(NotEct, Ce, 7);
        assert_eq!(done, None, "CE must not land on a Not-ECT datagram");
        assert_eq!((st.ecn_mixed, st.completed), (1, 0));
        // `insert` is Not-ECT
        let mut r = Reassembler::new(cfg());
        r.insert(t, key(8), 32, false, &data[32..], None);
        let d = r.insert(t, key(8), 0, true, &data[..32], Some(6)).unwrap();
        assert_eq!(d.ecn, NotEct);
    }

    #[test]
    fn overlap_drops_datagram() {
        let t = Instant::now();
        let mut r = Reassembler::new(cfg());
        let data = [0u8; 64];
        r.insert(t, key(2), 0, true, &data[..32], Some(6));
        assert!(r.insert(t, key(2), 24, false, &data[24..], None).is_none());
        assert_eq!(r.stats().overlaps, 1);
        assert_eq!(r.in_progress(), 0);
        assert_eq!(r.memory(), 0);
        // the rest of the original datagram can't complete it any more
        assert!(r.insert(t, key(2), 32, false, &data[32..], None).is_none());
        assert_eq!(r.in_progress(), 1);
    }

    #[test]
    fn timeout_and_caps() {
        let t = Instant::now();
        let mut r = Reassembler::new(ReassemblyConfig {
            max_bytes: 10 * (64 + PIECE_OVERHEAD),
            max_datagrams: 4,
            ..cfg()
        });
        let data = [0u8; 64];
        for i in 0..20 {
            r.insert(t, key(i), 0, true, &data, Some(6));
            assert!(r.in_progress() <= 4);
            assert!(r.memory() <= 10 * (64 + PIECE_OVERHEAD));
        }
        assert_eq!(r.poll_timeout(), Some(t + Duration::from_secs(30)));
        r.handle_timeout(t + Duration::from_secs(30));
        assert_eq!(r.in_progress(), 0);
        assert_eq!(r.memory(), 0);
    }

    #[test]
    fn invalid_fragments() {
        let t = Instant::now();
        let mut r = Reassembler::new(cfg());
        // non-final fragment not a multiple of 8
        assert!(r.insert(t, key(3), 0, true, &[0u8; 13], Some(6)).is_none());
        // beyond 64 KiB
        assert!(
            r.insert(t, key(3), 65_528, false, &[0u8; 16], None)
                .is_none()
        );
        assert_eq!(r.stats().invalid, 2);
        assert_eq!(r.in_progress(), 0);
    }
}

//! Receive buffer: in-order bytes waiting for `read`, plus bounded
//! out-of-order ranges and the SACK blocks that describe them.
//!
//! Sequence numbers here are 64-bit offsets from the peer's ISN (so byte 1 is
//! the first data byte); wrap-around is handled once, at the connection edge.
//!
//! Memory bound: in-order bytes are at most `cap`; out-of-order bytes only
//! ever lie inside the window the connection advertised, which is at most the
//! free space of the buffer, so in-order plus out-of-order bytes stay within
//! `cap` (plus less than one window-scale unit of rounding). The number of
//! separate out-of-order ranges is capped by `max_ranges`; a segment that
//! would need a new range beyond the cap is dropped (it will be
//! retransmitted).

use std::collections::{BTreeMap, VecDeque};

/// Result of inserting a segment's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Inserted {
    /// Bytes appended to the in-order stream (rcv_nxt advanced by this).
    pub in_order: usize,
    /// The segment (or part of it) went to the out-of-order store.
    pub out_of_order: bool,
    /// Out-of-order data was pulled into the stream (a hole was filled).
    pub filled_hole: bool,
    /// Nothing new in it.
    pub duplicate: bool,
}

#[derive(Debug)]
pub(crate) struct RecvBuffer {
    data: VecDeque<u8>,
    cap: usize,
    ooo: BTreeMap<u64, Vec<u8>>,
    ooo_bytes: usize,
    max_ranges: usize,
    /// Sequence numbers of the most recent out-of-order arrivals, newest
    /// first (RFC 2018: the first SACK block reports the newest segment).
    recent: VecDeque<u64>,
    /// Out-of-order segments dropped because of the range cap.
    pub dropped_ooo: u64,
}

impl RecvBuffer {
    pub fn new(cap: usize, max_ranges: usize) -> Self {
        RecvBuffer {
            data: VecDeque::new(),
            cap,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            max_ranges: max_ranges.max(1),
            recent: VecDeque::new(),
            dropped_ooo: 0,
        }
    }

    /// Bytes readable now.
    pub fn readable(&self) -> usize {
        self.data.len()
    }

    /// Free space in the buffer (what the window may offer).
    pub fn free(&self) -> usize {
        self.cap.saturating_sub(self.data.len())
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes held out of order.
    #[cfg(test)]
    pub fn ooo_bytes(&self) -> usize {
        self.ooo_bytes
    }

    pub fn has_ooo(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Drops up to `max` readable bytes.
    pub fn discard(&mut self, max: usize) -> usize {
        let n = max.min(self.data.len());
        self.data.drain(..n);
        super::send::shrink_idle_bytes(&mut self.data);
        n
    }

    /// Copies readable bytes out.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.data.len());
        let (a, b) = self.data.as_slices();
        let from_a = n.min(a.len());
        let from_b = n - from_a;
        if let (Some(dst_a), Some(src_a)) = (out.get_mut(..from_a), a.get(..from_a)) {
            dst_a.copy_from_slice(src_a);
        }
        if let (Some(dst_b), Some(src_b)) = (out.get_mut(from_a..n), b.get(..from_b)) {
            dst_b.copy_from_slice(src_b);
        }
        self.data.drain(..n);
        super::send::shrink_idle_bytes(&mut self.data);
        n
    }

    /// Inserts `payload` starting at `seq`, with `rcv_nxt` the next expected
    /// sequence number and `limit` the first sequence number beyond what may
    /// be accepted (the advertised window's right edge, clamped to the
    /// buffer). Advances `rcv_nxt`.
    pub fn insert(&mut self, rcv_nxt: &mut u64, seq: u64, payload: &[u8], limit: u64) -> Inserted {
        let mut out = Inserted::default();
        let end = seq.saturating_add(payload.len() as u64).min(limit);
        let start = seq.max(*rcv_nxt);
        if start >= end {
            out.duplicate = !payload.is_empty();
            return out;
        }
        let skip = (start - seq) as usize;
        let take = (end - start) as usize;
        let Some(piece) = payload.get(skip..skip + take) else {
            out.duplicate = true;
            return out;
        };
        if start == *rcv_nxt {
            let room = self.free();
            let piece = piece.get(..piece.len().min(room)).unwrap_or(&[]);
            self.data.extend(piece);
            *rcv_nxt += piece.len() as u64;
            out.in_order = piece.len();
            let before = out.in_order;
            out.in_order += self.pull_ooo(rcv_nxt);
            out.filled_hole = out.in_order > before;
        } else {
            out.out_of_order = true;
            let (added, capped) = self.store_ooo(start, piece);
            if added == 0 {
                // nothing new held: a duplicate only if every byte was
                // already here; a segment dropped for the range cap must
                // not be reported (a DSACK above the cumulative ACK reads
                // as a SACK, and the sender would never resend it)
                out.duplicate = !capped;
            } else {
                self.recent.retain(|&s| s != start);
                self.recent.push_front(start);
                self.recent.truncate(4);
            }
        }
        out
    }

    /// Moves out-of-order data that now continues the stream into it.
    fn pull_ooo(&mut self, rcv_nxt: &mut u64) -> usize {
        let mut moved = 0;
        while let Some((&s, _)) = self.ooo.iter().next() {
            if s > *rcv_nxt {
                break;
            }
            let Some(bytes) = self.ooo.remove(&s) else {
                break;
            };
            self.ooo_bytes -= bytes.len();
            let end = s + bytes.len() as u64;
            if end > *rcv_nxt {
                let skip = (*rcv_nxt - s) as usize;
                let tail = bytes.get(skip..).unwrap_or(&[]);
                let room = self.free();
                let tail = tail.get(..tail.len().min(room)).unwrap_or(&[]);
                self.data.extend(tail);
                *rcv_nxt += tail.len() as u64;
                moved += tail.len();
            }
        }
        let nxt = *rcv_nxt;
        self.recent.retain(|&s| s > nxt);
        moved
    }

    /// Stores the parts of `[start, start+len)` not already held; merges
    /// with neighbours. Returns new bytes stored and whether some part was
    /// dropped for the range cap.
    fn store_ooo(&mut self, start: u64, piece: &[u8]) -> (usize, bool) {
        let end = start + piece.len() as u64;
        // gaps of [start, end) not covered by existing ranges
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        let mut cursor = start;
        let first_key = self
            .ooo
            .range(..=start)
            .next_back()
            .map(|(&s, _)| s)
            .unwrap_or(start);
        for (&s, v) in self.ooo.range(first_key..end) {
            let e = s + v.len() as u64;
            if e <= cursor {
                continue;
            }
            if s > cursor {
                gaps.push((cursor, s.min(end)));
            }
            cursor = cursor.max(e);
            if cursor >= end {
                break;
            }
        }
        if cursor < end {
            gaps.push((cursor, end));
        }
        if gaps.is_empty() {
            return (0, false);
        }
        let mut added = 0;
        let mut capped = false;
        for (gs, ge) in gaps {
            let a = (gs - start) as usize;
            let b = (ge - start) as usize;
            let Some(bytes) = piece.get(a..b) else {
                continue;
            };
            // merge with a range ending exactly at gs, and one starting at ge
            let prev = self
                .ooo
                .range(..gs)
                .next_back()
                .filter(|(s, v)| **s + v.len() as u64 == gs)
                .map(|(s, _)| *s);
            let next_adjacent = self.ooo.contains_key(&ge);
            if prev.is_none() && !next_adjacent && self.ooo.len() >= self.max_ranges {
                self.dropped_ooo += 1;
                capped = true;
                continue;
            }
            let mut buf = match prev {
                Some(p) => self.ooo.remove(&p).unwrap_or_default(),
                None => Vec::new(),
            };
            let key = prev.unwrap_or(gs);
            buf.extend_from_slice(bytes);
            if let Some(next) = self.ooo.remove(&ge) {
                buf.extend_from_slice(&next);
            }
            self.ooo.insert(key, buf);
            self.ooo_bytes += bytes.len();
            added += bytes.len();
        }
        (added, capped)
    }

    /// Up to `max` SACK blocks (absolute sequence ranges), the range holding
    /// the most recent arrival first, then other recent ones, then the
    /// highest remaining ranges. With `dsack` (a duplicate range reported
    /// in the block before these), the out-of-order range holding it comes
    /// first instead: RFC 2883 §4, the sender recognises a duplicate above
    /// the cumulative ACK only inside the second block.
    pub fn sack_blocks(&self, max: usize, dsack: Option<(u64, u64)>) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        let containing = |seq: u64| {
            self.ooo
                .range(..=seq)
                .next_back()
                .map(|(&s, v)| (s, s + v.len() as u64))
                .filter(|&(_, e)| e > seq)
        };
        if let Some(b) = dsack.and_then(|(l, _)| containing(l)) {
            out.push(b);
        }
        for &s in &self.recent {
            if let Some(b) = containing(s).filter(|b| !out.contains(b)) {
                out.push(b);
            }
        }
        for (&s, v) in self.ooo.iter().rev() {
            let b = (s, s + v.len() as u64);
            if !out.contains(&b) {
                out.push(b);
            }
            if out.len() >= max {
                break;
            }
        }
        out.truncate(max);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(range: std::ops::Range<u64>) -> Vec<u8> {
        range.map(|i| i as u8).collect()
    }

    #[test]
    fn discard_drops_what_read_would_copy() {
        let mut rb = RecvBuffer::new(1000, 8);
        let mut nxt = 1u64;
        rb.insert(&mut nxt, 1, &bytes(1..101), 1001);
        assert_eq!(rb.discard(30), 30);
        assert_eq!(rb.free(), 1000 - 70);
        let mut out = vec![0u8; 10];
        assert_eq!(rb.read(&mut out), 10);
        assert_eq!(out, bytes(31..41));
        assert_eq!(rb.discard(1000), 60);
        assert_eq!((rb.discard(5), rb.readable(), rb.free()), (0, 0, 1000));
    }

    #[test]
    fn in_order_and_holes() {
        let mut rb = RecvBuffer::new(1000, 8);
        let mut nxt = 1u64;
        let r = rb.insert(&mut nxt, 1, &bytes(1..11), 1001);
        assert_eq!(r.in_order, 10);
        assert_eq!(nxt, 11);
        // hole 11..21, then 21..31 and 41..51 out of order
        assert!(rb.insert(&mut nxt, 21, &bytes(21..31), 1001).out_of_order);
        assert!(rb.insert(&mut nxt, 41, &bytes(41..51), 1001).out_of_order);
        assert_eq!(rb.sack_blocks(4, None), vec![(41, 51), (21, 31)]);
        // overlapping retransmission 15..25 (partial overlap with 21..31)
        let r = rb.insert(&mut nxt, 11, &bytes(11..25), 1001);
        assert_eq!(r.in_order, 20);
        assert!(r.filled_hole);
        assert_eq!(nxt, 31);
        assert_eq!(rb.sack_blocks(4, None), vec![(41, 51)]);
        let r = rb.insert(&mut nxt, 31, &bytes(31..45), 1001);
        assert_eq!(nxt, 51);
        assert_eq!(r.in_order, 20);
        let mut out = vec![0u8; 100];
        let n = rb.read(&mut out);
        assert_eq!(&out[..n], &bytes(1..51)[..]);
        assert_eq!(rb.ooo_bytes(), 0);
    }

    /// `read` in small pieces while the ring buffer wraps returns the
    /// stream in order.
    #[test]
    fn read_across_wrap_matches_stream() {
        let mut rb = RecvBuffer::new(29, 8);
        let mut nxt = 1u64;
        let mut read_back = Vec::new();
        for round in 0..80u64 {
            let room = rb.free() as u64;
            let len = (round % 11 + 1).min(room);
            let payload = bytes(nxt..nxt + len);
            let limit = nxt + room;
            let seq = nxt;
            assert_eq!(
                rb.insert(&mut nxt, seq, &payload, limit).in_order,
                len as usize
            );
            let mut out = vec![0u8; (round % 7) as usize + 1];
            let n = rb.read(&mut out);
            read_back.extend_from_slice(&out[..n]);
        }
        let mut out = vec![0u8; 64];
        let n = rb.read(&mut out);
        read_back.extend_from_slice(&out[..n]);
        assert_eq!(read_back, bytes(1..nxt));
        assert_eq!(rb.readable(), 0);
    }

    #[test]
    fn duplicates_and_window_limit() {
        let mut rb = RecvBuffer::new(100, 8);
        let mut nxt = 1u64;
        rb.insert(&mut nxt, 1, &bytes(1..51), 101);
        assert!(rb.insert(&mut nxt, 1, &bytes(1..51), 101).duplicate);
        // beyond the limit is cut
        let r = rb.insert(&mut nxt, 51, &bytes(51..200), 101);
        assert_eq!(r.in_order, 50);
        assert_eq!(rb.free(), 0);
        // ooo beyond the limit is ignored entirely
        let r = rb.insert(&mut nxt, 150, &bytes(150..160), 101);
        assert!(r.duplicate);
    }

    #[test]
    fn ooo_merging_and_range_cap() {
        let mut rb = RecvBuffer::new(10_000, 2);
        let mut nxt = 1u64;
        rb.insert(&mut nxt, 101, &bytes(101..111), 10_001);
        rb.insert(&mut nxt, 111, &bytes(111..121), 10_001); // adjacent: merged
        rb.insert(&mut nxt, 201, &bytes(201..211), 10_001);
        assert_eq!(rb.sack_blocks(4, None), vec![(201, 211), (101, 121)]);
        // a duplicate inside (101, 121) reported as DSACK: its range first
        // (RFC 2883 §4: the sender looks for it in the second block)
        assert_eq!(
            rb.sack_blocks(4, Some((105, 110))),
            vec![(101, 121), (201, 211)]
        );
        // third separate range exceeds the cap of 2 → dropped, and not
        // a duplicate (that would be DSACKed as if it were held)
        let r = rb.insert(&mut nxt, 301, &bytes(301..311), 10_001);
        assert!(!r.duplicate);
        assert_eq!(rb.dropped_ooo, 1);
        assert_eq!(rb.sack_blocks(4, None), vec![(201, 211), (101, 121)]);
        // but extending an existing range is fine
        rb.insert(&mut nxt, 211, &bytes(211..221), 10_001);
        assert_eq!(rb.ooo_bytes(), 40);
        // a segment covering two ranges and the gap merges them
        rb.insert(&mut nxt, 115, &bytes(115..215), 10_001);
        assert_eq!(rb.sack_blocks(4, None), vec![(101, 221)]);
        rb.insert(&mut nxt, 1, &bytes(1..101), 10_001);
        assert_eq!(nxt, 221);
        let mut out = vec![0u8; 500];
        let n = rb.read(&mut out);
        assert_eq!(&out[..n], &bytes(1..221)[..]);
    }
}

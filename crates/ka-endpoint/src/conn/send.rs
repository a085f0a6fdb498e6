//! Send buffer and the retransmission scoreboard.
//!
//! Sequence numbers are 64-bit offsets from our ISN: the SYN is 0, the first
//! data byte 1, the FIN (if any) follows the last data byte.
//!
//! The scoreboard holds one entry per transmitted segment, contiguous from
//! `snd_una` to `snd_max`. Entries are never re-cut (a retransmission resends
//! the same range), so SACK blocks, which the receiver reports at segment
//! boundaries, mark whole entries. Loss marking follows RACK (RFC 8985,
//! [`Scoreboard::rack_detect`]) with SACK, and RFC 6582's duplicate-ACK and
//! partial-ACK rules without; the connection decides when.

use std::collections::VecDeque;
use std::time::Instant;

/// Spare capacity, in bytes, a connection buffer may keep once it has
/// drained (DESIGN §6.8): buffers grow on demand while a flow is busy and
/// give the rest back as it drains, so an idle or finished connection holds
/// a few KiB instead of its high-water mark.
pub(crate) const IDLE_KEEP_BYTES: usize = 4096;

/// Gives back capacity of `v` once it is mostly empty: above four times
/// its length (and above [`IDLE_KEEP_BYTES`]) it shrinks to twice its
/// length. Geometric, so the copying is amortised O(1) per element
/// removed, and a buffer that stays full is never touched.
///
/// The contents move to a new, smaller allocation and the old one is
/// freed whole, rather than shrunk in place (`shrink_to`, a `realloc`). A
/// large buffer is a `mmap`ed chunk under glibc's malloc, and shrinking
/// it in place unmaps pages that the next flow's buffer faults in again;
/// freeing it whole lets malloc raise its mmap threshold and reuse the
/// memory. On ka-sim's Fig. 3 (a new connection per flow) that was a
/// quarter of the run's time in page faults (DESIGN §6.8).
pub(crate) fn shrink_idle<T>(v: &mut VecDeque<T>) {
    let keep = (IDLE_KEEP_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    if v.capacity() > keep.max(v.len().saturating_mul(4)) {
        let mut fresh = VecDeque::with_capacity(keep.max(v.len().saturating_mul(2)));
        fresh.extend(v.drain(..));
        *v = fresh;
    }
}

/// [`shrink_idle`] for byte buffers, copying the contents in (at most) two
/// slices rather than byte by byte.
pub(crate) fn shrink_idle_bytes(v: &mut VecDeque<u8>) {
    if v.capacity() > IDLE_KEEP_BYTES.max(v.len().saturating_mul(4)) {
        let mut fresh = VecDeque::with_capacity(IDLE_KEEP_BYTES.max(v.len().saturating_mul(2)));
        let (a, b) = v.as_slices();
        fresh.extend(a);
        fresh.extend(b);
        *v = fresh;
    }
}

/// Bytes written by the application and not yet acknowledged.
#[derive(Debug)]
pub(crate) struct SendBuffer {
    data: VecDeque<u8>,
    /// Sequence number of `data[0]`.
    start: u64,
    cap: usize,
}

impl SendBuffer {
    pub fn new(cap: usize) -> Self {
        SendBuffer {
            data: VecDeque::new(),
            start: 1,
            cap,
        }
    }

    /// Appends as much of `bytes` as fits; returns how much.
    pub fn write(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.free());
        self.data.extend(bytes.get(..n).unwrap_or(&[]));
        n
    }

    pub fn free(&self) -> usize {
        self.cap.saturating_sub(self.data.len())
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Sequence number just past the last byte written.
    pub fn end_seq(&self) -> u64 {
        self.start + self.data.len() as u64
    }

    /// Drops everything below `seq` (acknowledged).
    pub fn ack_to(&mut self, seq: u64) {
        if seq > self.start {
            let n = ((seq - self.start) as usize).min(self.data.len());
            self.data.drain(..n);
            self.start += n as u64;
            shrink_idle_bytes(&mut self.data);
        }
    }

    /// Copies bytes `[seq, seq + out.len())` into `out`; returns the count
    /// actually available.
    pub fn copy(&self, seq: u64, out: &mut [u8]) -> usize {
        if seq < self.start {
            return 0;
        }
        let off = (seq - self.start) as usize;
        let (a, b) = self.data.as_slices();
        let mut n = 0;
        // the part of `out` that comes from `a`, then the part from `b`
        if let Some(src) = a.get(off..) {
            let k = src.len().min(out.len());
            if let (Some(d), Some(s)) = (out.get_mut(..k), src.get(..k)) {
                d.copy_from_slice(s);
                n = k;
            }
        }
        let b_off = (off + n).saturating_sub(a.len());
        if let (Some(src), Some(rest)) = (b.get(b_off..), out.get_mut(n..)) {
            let k = src.len().min(rest.len());
            if let (Some(d), Some(s)) = (rest.get_mut(..k), src.get(..k)) {
                d.copy_from_slice(s);
                n += k;
            }
        }
        n
    }
}

/// One transmitted segment.
#[derive(Debug, Clone)]
pub(crate) struct TxSeg {
    pub start: u64,
    pub end: u64,
    /// Carries the FIN (its last sequence number).
    pub fin: bool,
    /// When it was last (re)transmitted.
    pub sent: Instant,
    /// Transmissions so far (1 = never retransmitted).
    pub tx_count: u32,
    pub sacked: bool,
    /// Deemed lost and not yet retransmitted since.
    pub lost: bool,
    /// Retransmitted during the current recovery episode.
    pub rexmit_in_recovery: bool,
}

impl TxSeg {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// What became of one transmission, for the congestion controller's
/// per-packet reports (`Controller::on_packet_acked` / `on_packet_lost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegReport {
    /// When the transmission was sent.
    pub sent: Instant,
    /// Sequence-space bytes.
    pub bytes: u64,
    /// Sequence number just past the reported bytes (RACK's `end_seq`).
    pub end: u64,
    /// The segment had been retransmitted (RACK ignores such deliveries
    /// for reordering detection).
    pub retransmitted: bool,
    /// Delivered (first cumulative ACK or SACK covering it) or deemed lost.
    pub fate: SegFate,
}

/// See [`SegReport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SegFate {
    /// Delivered; `rtt_valid` if never retransmitted (Karn).
    Acked { rtt_valid: bool },
    /// Marked lost.
    Lost,
}

/// The segments in flight.
#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<TxSeg>,
    sacked_bytes: u64,
    /// Entries SACKed (RACK's `segs_sacked`).
    sacked_segs: usize,
    lost_bytes: u64,
    /// Highest sequence number covered by a SACK block.
    pub highest_sacked: u64,
    /// Fates learned since the connection last drained them: at most one
    /// entry per segment per call, drained after every ACK and RTO.
    reports: Vec<SegReport>,
}

/// What a cumulative ACK removed.
#[derive(Debug, Default)]
pub(crate) struct Acked {
    pub bytes: u64,
    /// Send time of the newest never-retransmitted segment acked (RTT sample).
    pub rtt_sent: Option<Instant>,
    /// Latest send time among acked segments.
    pub newest_sent: Option<Instant>,
    /// Some acked segment had been retransmitted.
    pub any_retransmitted: bool,
    pub fin_acked: bool,
}

impl Scoreboard {
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    pub fn first(&self) -> Option<&TxSeg> {
        self.segs.front()
    }

    /// Segments in flight (entries).
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    /// Bytes between `snd_una` and `snd_max`.
    pub fn outstanding(&self) -> u64 {
        match (self.segs.front(), self.segs.back()) {
            (Some(f), Some(b)) => b.end - f.start,
            _ => 0,
        }
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// Entries currently SACKed.
    pub fn sacked_segs(&self) -> usize {
        self.sacked_segs
    }

    /// The fates recorded since the last [`Self::drain_reports`].
    pub fn reports(&self) -> &[SegReport] {
        &self.reports
    }

    /// RACK loss detection over the board (RFC 8985 §6.2 step 5): every
    /// entry neither SACKed nor already marked lost that was sent before
    /// the RACK segment (`rack_sent`, `rack_end`; later send time, or the
    /// same time and a higher end) is lost once `sent + wait <= now`;
    /// otherwise it yields the time left until then. Returns the bytes
    /// newly marked and the longest time left (`None`: nothing pending).
    ///
    /// The walk stops at the first never-retransmitted entry sent after
    /// the RACK segment: first transmissions go out in sequence order, so
    /// every entry above it (first sent later still, and retransmitted
    /// later again) was sent after the RACK segment too.
    ///
    /// Each entry marked is appended to `marked` as `(start, end, gap)`,
    /// `gap` being how much earlier than the RACK segment it was sent.
    pub fn rack_detect(
        &mut self,
        now: Instant,
        rack_sent: Instant,
        rack_end: u64,
        wait: std::time::Duration,
        marked: &mut Vec<(u64, u64, std::time::Duration)>,
    ) -> (u64, Option<std::time::Duration>) {
        let mut newly = 0;
        let mut pending: Option<std::time::Duration> = None;
        for s in self.segs.iter_mut() {
            let rack_after = rack_sent > s.sent || (rack_sent == s.sent && rack_end > s.end);
            if !rack_after {
                if s.tx_count == 1 {
                    break;
                }
                continue;
            }
            if s.sacked || s.lost {
                continue;
            }
            let deadline = s.sent + wait;
            if deadline <= now {
                s.lost = true;
                newly += s.len();
                marked.push((s.start, s.end, rack_sent.saturating_duration_since(s.sent)));
                self.reports.push(SegReport {
                    sent: s.sent,
                    bytes: s.len(),
                    end: s.end,
                    retransmitted: s.tx_count > 1,
                    fate: SegFate::Lost,
                });
            } else {
                let left = deadline - now;
                pending = Some(pending.map_or(left, |p| p.max(left)));
            }
        }
        self.lost_bytes += newly;
        (newly, pending)
    }

    #[cfg(test)]
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }

    /// RFC 6675 "pipe": outstanding bytes not SACKed and not deemed lost
    /// (retransmitted-after-loss bytes count as in flight again).
    pub fn pipe(&self) -> u64 {
        self.outstanding()
            .saturating_sub(self.sacked_bytes)
            .saturating_sub(self.lost_bytes)
    }

    pub fn push(&mut self, seg: TxSeg) {
        self.segs.push_back(seg);
    }

    /// The send time of the newest never-retransmitted transmission among
    /// the deliveries recorded since the last [`Self::drain_reports`].
    pub fn newest_timed_delivery(&self) -> Option<Instant> {
        self.reports
            .iter()
            .filter(|r| matches!(r.fate, SegFate::Acked { rtt_valid: true }))
            .map(|r| r.sent)
            .max()
    }

    /// Takes the fates recorded since the last call.
    pub fn drain_reports(&mut self) -> std::vec::Drain<'_, SegReport> {
        self.reports.drain(..)
    }

    /// Removes everything below `ack`.
    pub fn ack_to(&mut self, ack: u64) -> Acked {
        let mut out = Acked::default();
        if self.reports.is_empty()
            && self.reports.capacity() * std::mem::size_of::<SegReport>() > IDLE_KEEP_BYTES
        {
            self.reports.shrink_to(0);
        }
        while let Some(f) = self.segs.front_mut() {
            if f.start >= ack {
                break;
            }
            if f.end <= ack {
                let Some(seg) = self.segs.pop_front() else {
                    break;
                };
                out.bytes += seg.len();
                if seg.sacked {
                    self.sacked_bytes -= seg.len();
                    self.sacked_segs = self.sacked_segs.saturating_sub(1);
                } else {
                    let fate = SegFate::Acked {
                        rtt_valid: seg.tx_count == 1,
                    };
                    self.reports.push(SegReport {
                        sent: seg.sent,
                        bytes: seg.len(),
                        end: seg.end,
                        retransmitted: seg.tx_count > 1,
                        fate,
                    });
                }
                if seg.lost {
                    self.lost_bytes -= seg.len();
                }
                if seg.tx_count == 1 {
                    out.rtt_sent = Some(out.rtt_sent.map_or(seg.sent, |t| t.max(seg.sent)));
                } else {
                    out.any_retransmitted = true;
                }
                out.newest_sent = Some(out.newest_sent.map_or(seg.sent, |t| t.max(seg.sent)));
                out.fin_acked |= seg.fin;
            } else {
                // partial ack of one segment: trim it
                let cut = ack - f.start;
                if f.sacked {
                    self.sacked_bytes -= cut;
                } else {
                    let fate = SegFate::Acked {
                        rtt_valid: f.tx_count == 1,
                    };
                    self.reports.push(SegReport {
                        sent: f.sent,
                        bytes: cut,
                        end: ack,
                        retransmitted: f.tx_count > 1,
                        fate,
                    });
                }
                if f.lost {
                    self.lost_bytes -= cut;
                }
                f.start = ack;
                out.bytes += cut;
                out.newest_sent = Some(out.newest_sent.map_or(f.sent, |t| t.max(f.sent)));
                if f.tx_count > 1 {
                    out.any_retransmitted = true;
                }
                break;
            }
        }
        shrink_idle(&mut self.segs);
        out
    }

    /// Marks whole segments inside `[left, right)` as SACKed. Returns the
    /// newly SACKed bytes and the newest send time of a newly SACKed,
    /// never-retransmitted segment.
    pub fn sack(&mut self, left: u64, right: u64) -> (u64, Option<Instant>) {
        let mut newly = 0;
        let mut sample = None;
        // binary search the first segment with end > left
        let idx = self.segs.partition_point(|s| s.end <= left);
        for s in self.segs.range_mut(idx..) {
            if s.start >= right {
                break;
            }
            if s.start >= left && s.end <= right && !s.sacked {
                s.sacked = true;
                self.sacked_segs += 1;
                newly += s.len();
                self.sacked_bytes += s.len();
                self.reports.push(SegReport {
                    sent: s.sent,
                    bytes: s.len(),
                    end: s.end,
                    retransmitted: s.tx_count > 1,
                    fate: SegFate::Acked {
                        rtt_valid: s.tx_count == 1,
                    },
                });
                if s.lost {
                    s.lost = false;
                    self.lost_bytes -= s.len();
                }
                if s.tx_count == 1 {
                    sample = Some(sample.map_or(s.sent, |t: Instant| t.max(s.sent)));
                }
            }
        }
        if newly > 0 {
            self.highest_sacked = self.highest_sacked.max(right);
        }
        (newly, sample)
    }

    /// Marks the first (un-SACKed) segment lost. Returns whether it changed.
    pub fn mark_first_lost(&mut self) -> bool {
        match self.segs.front_mut() {
            Some(f) if !f.sacked && !f.lost => {
                f.lost = true;
                self.lost_bytes += f.len();
                self.reports.push(SegReport {
                    sent: f.sent,
                    bytes: f.len(),
                    end: f.end,
                    retransmitted: f.tx_count > 1,
                    fate: SegFate::Lost,
                });
                true
            }
            _ => false,
        }
    }

    /// RTO: every un-SACKed segment is lost. Returns lost bytes now.
    pub fn mark_all_lost(&mut self) -> u64 {
        for s in self.segs.iter_mut() {
            s.rexmit_in_recovery = false;
            if !s.sacked && !s.lost {
                s.lost = true;
                self.lost_bytes += s.len();
                self.reports.push(SegReport {
                    sent: s.sent,
                    bytes: s.len(),
                    end: s.end,
                    retransmitted: s.tx_count > 1,
                    fate: SegFate::Lost,
                });
            }
        }
        self.lost_bytes
    }

    /// Ends a recovery episode.
    pub fn end_recovery(&mut self) {
        for s in self.segs.iter_mut() {
            s.rexmit_in_recovery = false;
        }
    }

    /// The first segment deemed lost (to retransmit next).
    pub fn next_lost(&self) -> Option<usize> {
        if self.lost_bytes == 0 {
            return None;
        }
        self.segs.iter().position(|s| s.lost)
    }

    pub fn get(&self, idx: usize) -> Option<&TxSeg> {
        self.segs.get(idx)
    }

    /// Records a retransmission of entry `idx` at `now`.
    pub fn on_retransmit(&mut self, idx: usize, now: Instant, in_recovery: bool) {
        if let Some(s) = self.segs.get_mut(idx) {
            if s.lost {
                s.lost = false;
                self.lost_bytes -= s.len();
            }
            s.sent = now;
            s.tx_count = s.tx_count.saturating_add(1);
            s.rexmit_in_recovery = in_recovery;
        }
    }

    /// Receiver reneging protection: forget all SACK marks (RFC 2018 says
    /// SACKed data may be discarded by the receiver).
    pub fn clear_sacks(&mut self) {
        for s in self.segs.iter_mut() {
            s.sacked = false;
        }
        self.sacked_bytes = 0;
        self.sacked_segs = 0;
        self.highest_sacked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: u64, end: u64, t: Instant) -> TxSeg {
        TxSeg {
            start,
            end,
            fin: false,
            sent: t,
            tx_count: 1,
            sacked: false,
            lost: false,
            rexmit_in_recovery: false,
        }
    }

    /// A drained buffer gives its capacity back, keeping its contents in
    /// order also when they wrap around the ring's end.
    #[test]
    fn shrinking_keeps_wrapped_contents() {
        let mut v: VecDeque<u8> = VecDeque::with_capacity(64 * 1024);
        let cap = v.capacity();
        v.extend(std::iter::repeat_n(0u8, cap - 100));
        v.drain(..cap - 1124);
        v.extend((0..=255u8).cycle().take(3000)); // wraps past the end
        v.drain(..1024);
        let before: Vec<u8> = v.iter().copied().collect();
        let (a, _) = v.as_slices();
        assert!(a.len() < v.len(), "the contents must wrap for this test");
        shrink_idle_bytes(&mut v);
        assert!(v.capacity() < 16 * 1024, "capacity {}", v.capacity());
        assert!(v.capacity() >= IDLE_KEEP_BYTES);
        assert_eq!(v.iter().copied().collect::<Vec<u8>>(), before);
        // Above a quarter full (now half) it is left alone.
        let cap = v.capacity();
        shrink_idle_bytes(&mut v);
        assert_eq!(v.capacity(), cap);
    }

    #[test]
    fn send_buffer_copy_across_wrap() {
        let mut b = SendBuffer::new(10);
        assert_eq!(b.write(b"0123456789abc"), 10);
        b.ack_to(5);
        assert_eq!(b.write(b"abcd"), 4);
        let mut out = [0u8; 8];
        assert_eq!(b.copy(5, &mut out), 8);
        assert_eq!(&out, b"456789ab");
        assert_eq!(b.copy(13, &mut out), 2);
        assert_eq!(b.end_seq(), 15);
    }

    /// `copy` against a plain reference at every offset and length, while
    /// the ring buffer's contents wrap around its end many times.
    #[test]
    fn send_buffer_copy_matches_reference() {
        let mut b = SendBuffer::new(37);
        let mut reference: Vec<u8> = Vec::new();
        let mut start = 1u64;
        let mut next = 0u8;
        for round in 0..60 {
            let chunk: Vec<u8> = (0..(round % 13 + 1))
                .map(|_| {
                    next = next.wrapping_add(1);
                    next
                })
                .collect();
            let n = b.write(&chunk);
            reference.extend_from_slice(&chunk[..n]);
            for off in 0..=reference.len() {
                for len in [0, 1, 5, reference.len() - off, reference.len() - off + 3] {
                    let mut out = vec![0u8; len];
                    let got = b.copy(start + off as u64, &mut out);
                    let want = &reference[off..(off + len).min(reference.len())];
                    assert_eq!(got, want.len());
                    assert_eq!(&out[..got], want);
                }
            }
            let drop = (round * 7) % (reference.len() + 1);
            b.ack_to(start + drop as u64);
            reference.drain(..drop);
            start += drop as u64;
            assert_eq!(
                b.copy(start - 1, &mut [0u8; 4]),
                0,
                "acknowledged bytes are gone"
            );
        }
    }

    #[test]
    fn sack_marks_loss_and_pipe() {
        let t = Instant::now();
        let mut sb = Scoreboard::default();
        for i in 0..6 {
            sb.push(seg(1 + i * 100, 101 + i * 100, t));
        }
        assert_eq!(sb.pipe(), 600);
        // segments 2,3,4 (101..401 → 201..501) SACKed; the first is lost
        sb.sack(201, 501);
        assert_eq!(sb.sacked_bytes(), 300);
        // RACK: the last SACKed segment (401..501) was sent with the others
        // but ends higher, so the two below the SACKed ones were sent
        // before it; the last one (501..601) was not
        let ms = std::time::Duration::from_millis;
        let mut m = Vec::new();
        let (lost, left) = sb.rack_detect(t + ms(4), t, 501, ms(5), &mut m);
        assert_eq!((lost, left), (0, Some(ms(1))), "inside the window");
        let (lost, left) = sb.rack_detect(t + ms(5), t, 501, ms(5), &mut m);
        assert_eq!((lost, left), (200, None)); // segs 1..101 and 101..201
        assert_eq!(m, vec![(1, 101, ms(0)), (101, 201, ms(0))]);
        assert_eq!(sb.pipe(), 100); // only the last one
        assert_eq!(sb.next_lost(), Some(0));
        sb.on_retransmit(0, t + ms(6), true);
        assert_eq!(sb.pipe(), 200);
        // the retransmission was sent after the RACK segment: not lost
        assert_eq!(sb.rack_detect(t + ms(20), t, 501, ms(5), &mut m), (0, None));
        // a delivery sent after it (and after the last segment) makes the
        // last one lost at once, the retransmission once its window ends
        assert_eq!(
            sb.rack_detect(t + ms(8), t + ms(7), 701, ms(5), &mut m),
            (100, Some(ms(3)))
        );
        assert_eq!(
            sb.rack_detect(t + ms(11), t + ms(7), 701, ms(5), &mut m),
            (100, None)
        );
        sb.on_retransmit(0, t + ms(12), true);
        sb.on_retransmit(5, t + ms(12), true);
        let acked = sb.ack_to(101);
        assert_eq!(acked.bytes, 100);
        assert!(acked.any_retransmitted);
        assert_eq!(sb.outstanding(), 500);
        let acked = sb.ack_to(501);
        assert_eq!(acked.bytes, 400);
        assert_eq!(sb.sacked_bytes(), 0);
        assert_eq!(sb.lost_bytes(), 0);
        assert_eq!(sb.pipe(), 100);
    }

    #[test]
    fn reports_each_transmission_once() {
        let t = Instant::now();
        let t2 = t + std::time::Duration::from_millis(5);
        let mut sb = Scoreboard::default();
        for i in 0..6 {
            sb.push(seg(1 + i * 100, 101 + i * 100, t));
        }
        let fates = |sb: &mut Scoreboard| -> Vec<(u64, SegFate)> {
            sb.drain_reports().map(|r| (r.bytes, r.fate)).collect()
        };
        let acked = SegFate::Acked { rtt_valid: true };
        // three SACKed, then the two below them deemed lost
        sb.sack(201, 501);
        assert_eq!(fates(&mut sb), vec![(100, acked); 3]);
        sb.rack_detect(t2, t, 501, std::time::Duration::ZERO, &mut Vec::new());
        assert_eq!(fates(&mut sb), vec![(100, SegFate::Lost); 2]);
        assert!(fates(&mut sb).is_empty(), "drained");
        // the first is retransmitted, then cumulatively acknowledged with
        // the SACKed ones: only it is reported (no RTT: Karn), the SACKed
        // ones were reported already
        sb.on_retransmit(0, t2, true);
        sb.ack_to(101);
        let r: Vec<SegReport> = sb.drain_reports().collect();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].sent, t2);
        assert_eq!(r[0].fate, SegFate::Acked { rtt_valid: false });
        // a partial ACK reports the bytes it covers (of the second, marked
        // lost and not yet resent); an RTO reports every un-SACKed segment
        // not yet marked lost: only the last
        sb.ack_to(151);
        assert_eq!(
            fates(&mut sb),
            vec![(50, SegFate::Acked { rtt_valid: true })]
        );
        sb.mark_all_lost();
        assert_eq!(fates(&mut sb), vec![(100, SegFate::Lost)]);
    }

    #[test]
    fn partial_segment_ack_trims() {
        let t = Instant::now();
        let mut sb = Scoreboard::default();
        sb.push(seg(1, 101, t));
        let a = sb.ack_to(51);
        assert_eq!(a.bytes, 50);
        assert_eq!(sb.outstanding(), 50);
        assert_eq!(sb.first().unwrap().start, 51);
    }
}

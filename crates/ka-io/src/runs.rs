//! A sender's own TCP segments written as super-packets: what lets a
//! userspace TCP stack send through a TUN device opened with offloads
//! ([`TunOptions::offload`](crate::tun::TunOptions::offload)) at the cost
//! the kernel's own TCP pays.
//!
//! A stack emits one MTU-sized segment at a time. [`RunWriter::push`]
//! appends each segment's payload to the *run* it continues — the same
//! flow, the next sequence number, headers equal but for the fields the
//! kernel rewrites per segment — and [`RunWriter::flush`] writes every run
//! with one `write(2)` behind a `virtio_net_hdr` that has the kernel cut it
//! back into the same segments (TSO/GSO: sequence numbers, IPv4
//! identification, lengths and checksums per segment; PSH and FIN on the
//! last only). Unlike [`CoalescingWriter`](crate::offload::CoalescingWriter)
//! (`tun-rs`'s GRO, for a forwarder that must take packets as they come)
//! it neither hashes flows nor verifies checksums: runs are only ever the
//! tail of what was pushed, and the **TCP checksum is the kernel's** — every
//! TCP packet leaves with `NEEDS_CSUM` and the pseudo-header's sum in its
//! checksum field, whatever the field held when pushed. A stack that writes
//! only through a `RunWriter` may skip computing TCP checksums
//! (`ka_endpoint`'s `StackConfig::checksum_offload`). A packet that is not
//! unfragmented TCP (UDP, ICMP, a fragment) is written unchanged, as pushed.
//!
//! Memory: at most [`MAX_RUNS`] buffers of 64 KB are held between flushes
//! ([`push`](RunWriter::push) flushes by itself beyond that), and up to as
//! many spare ones for reuse.

use std::io;

use ka_codec::wire::Segment;
use tun_rs::{SyncDevice, VIRTIO_NET_HDR_LEN, VirtioNetHdr};

use crate::offload::{GsoCounts, fix_ip_lengths, partial_checksum_header};
use crate::tun::MAX_PACKET;

/// Runs (super-packets or single packets) collected before a flush is
/// forced.
pub const MAX_RUNS: usize = 64;
/// Segments per super-packet at most (the kernel's own TSO limit is 64 KB,
/// which 1448-byte segments reach at 45).
pub const MAX_SEGMENTS: u16 = 64;

/// TCP flags that end a run: a segment with one of them is the last of its
/// run (PSH, FIN) or is never part of one (SYN, RST, URG, CWR: the kernel's
/// GSO would repeat or move them).
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;
const NEVER: u8 = 0x02 | 0x04 | 0x20 | 0x80;

/// An unfragmented TCP packet's layout, as [`RunWriter::push`] needs it.
#[derive(Debug, Clone, Copy)]
struct TcpLayout {
    /// Where TCP starts.
    l4: usize,
    v6: bool,
    /// TCP header length.
    tcp_hl: usize,
    seq: u32,
    flags: u8,
    payload: usize,
}

impl TcpLayout {
    /// From the packet's one parse (`ka_codec`'s [`Segment`]): an
    /// unfragmented TCP packet that fills its buffer, over IPv4 or over
    /// IPv6 without extension headers (what `partial_checksum_header`
    /// can describe); anything else is written as pushed.
    fn parse(p: &[u8]) -> Option<Self> {
        let seg = Segment::parse(p).ok()?;
        let h = seg.tcp_header()?;
        let l4 = seg.l4_offset()?;
        let v6 = seg.is_ipv6();
        if seg.is_fragment() || seg.total_len() != p.len() || (v6 && l4 != 40) {
            return None;
        }
        Some(Self {
            l4,
            v6,
            tcp_hl: h.header_len,
            seq: h.seq,
            flags: h.flags,
            payload: seg.tcp_payload_len()?,
        })
    }

    /// Whether a run may start with (or take) this segment at all.
    fn joinable(&self) -> bool {
        self.payload > 0 && self.flags & NEVER == 0 && (self.v6 || self.l4 == 20)
    }
}

/// One buffer to write: `VIRTIO_NET_HDR_LEN` bytes of room, then the packet.
#[derive(Debug)]
struct Run {
    buf: Vec<u8>,
    /// The TCP layout of its first segment, if it is TCP.
    tcp: Option<TcpLayout>,
    /// Segments in it (1 for anything but a TCP run).
    segments: u16,
    /// The sequence number the next segment must start at.
    next_seq: u32,
    /// More segments may join (the last one was full-sized, without PSH
    /// or FIN).
    open: bool,
}

impl Run {
    fn packet(&self) -> &[u8] {
        self.buf.get(VIRTIO_NET_HDR_LEN..).unwrap_or_default()
    }

    /// Whether segment `p` (layout `t`) continues this run.
    fn takes(&self, p: &[u8], t: &TcpLayout) -> bool {
        let Some(first) = self.tcp.filter(|_| self.open) else {
            return false;
        };
        let len = self.buf.len() - VIRTIO_NET_HDR_LEN;
        let hl = first.l4 + first.tcp_hl;
        t.joinable()
            && t.v6 == first.v6
            && t.l4 == first.l4
            && t.tcp_hl == first.tcp_hl
            && t.seq == self.next_seq
            && t.payload <= first.payload
            && (t.flags & !PSH & !FIN) == (first.flags & !PSH)
            && self.segments < MAX_SEGMENTS
            && len + t.payload <= MAX_PACKET
            && same_headers(self.packet(), p, first.l4, hl, first.v6)
    }
}

/// Whether two packets' IP and TCP headers (`hl` bytes, TCP from `l4`)
/// agree in everything the kernel copies from a super-packet into each
/// segment: all but the IP length, identification and header checksum
/// (IPv4) or payload length (IPv6), and TCP's sequence number, flags and
/// checksum.
fn same_headers(a: &[u8], b: &[u8], l4: usize, hl: usize, v6: bool) -> bool {
    let (Some(a), Some(b)) = (a.get(..hl), b.get(..hl)) else {
        return false;
    };
    let ip_same = if v6 {
        a.get(..4) == b.get(..4) && a.get(6..40) == b.get(6..40)
    } else {
        a.get(..2) == b.get(..2) && a.get(6..10) == b.get(6..10) && a.get(12..l4) == b.get(12..l4)
    };
    ip_same
        && a.get(l4..l4 + 4) == b.get(l4..l4 + 4)
        && a.get(l4 + 8..l4 + 13) == b.get(l4 + 8..l4 + 13)
        && a.get(l4 + 14..l4 + 16) == b.get(l4 + 14..l4 + 16)
        && a.get(l4 + 18..) == b.get(l4 + 18..)
}

/// Collects a sender's packets into runs and writes them as super-packets
/// (see the module docs).
#[derive(Debug, Default)]
pub struct RunWriter {
    runs: Vec<Run>,
    spare: Vec<Vec<u8>>,
    counts: GsoCounts,
}

impl RunWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Super-packets written so far, and the segments they carried.
    pub fn gso_counts(&self) -> GsoCounts {
        self.counts
    }

    /// Buffers collected and not yet written (runs and single packets).
    pub fn pending(&self) -> usize {
        self.runs.len()
    }

    /// Adds IP packet `packet` (copied): to the open run it continues, or
    /// as the start of a new one. With [`MAX_RUNS`] buffers collected they
    /// are written to `dev` first (the result of that flush is returned).
    pub fn push(&mut self, dev: &SyncDevice, packet: &[u8]) -> io::Result<usize> {
        let flushed = if self.runs.len() >= MAX_RUNS {
            self.flush(dev)
        } else {
            Ok(0)
        };
        self.add(packet);
        flushed
    }

    /// [`push`](Self::push) without the flush.
    fn add(&mut self, packet: &[u8]) {
        let tcp = TcpLayout::parse(packet);
        if let (Some(t), Some(run)) = (&tcp, self.runs.last_mut())
            && run.takes(packet, t)
        {
            let hl = t.l4 + t.tcp_hl;
            run.buf
                .extend_from_slice(packet.get(hl..).unwrap_or_default());
            run.segments += 1;
            run.next_seq = t.seq.wrapping_add(t.payload as u32);
            let full = run.tcp.is_some_and(|f| f.payload == t.payload);
            if !full || t.flags & (PSH | FIN) != 0 {
                run.open = false;
                // the last segment's PSH and FIN go on the super-packet;
                // the kernel puts them on its last segment only
                let l4 = run.tcp.map_or(0, |f| f.l4);
                if let Some(f) = run.buf.get_mut(VIRTIO_NET_HDR_LEN + l4 + 13) {
                    *f |= t.flags & (PSH | FIN);
                }
            }
            return;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.resize(VIRTIO_NET_HDR_LEN, 0);
        buf.extend_from_slice(packet);
        let open = tcp.is_some_and(|t| t.joinable() && t.flags & (PSH | FIN) == 0);
        self.runs.push(Run {
            buf,
            next_seq: tcp.map_or(0, |t| t.seq.wrapping_add(t.payload as u32)),
            tcp,
            segments: 1,
            open,
        });
    }

    /// Writes everything collected to `dev`, one `write(2)` per run, in the
    /// order pushed; returns the bytes the kernel accepted (headers
    /// included). Every run is tried; the first error is returned (what
    /// failed is lost, as a failed `write(2)` of one packet is).
    pub fn flush(&mut self, dev: &SyncDevice) -> io::Result<usize> {
        let mut written = 0;
        let mut first_err = None;
        for mut run in self.runs.drain(..) {
            match prepare(&mut run) {
                Ok(()) => match dev.send(&run.buf) {
                    Ok(n) => {
                        written += n;
                        if run.segments > 1 {
                            self.counts.writes += 1;
                            self.counts.segments += u64::from(run.segments);
                        }
                    }
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                },
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
            if self.spare.len() < MAX_RUNS {
                self.spare.push(run.buf);
            }
        }
        first_err.map_or(Ok(written), Err)
    }
}

/// Fills run `run`'s `virtio_net_hdr` room: a TCP run or packet gets the
/// header that has the kernel complete its checksum (and segment it, if it
/// holds more than one segment), with lengths and the IPv4 header checksum
/// made right for a super-packet; anything else a plain header.
fn prepare(run: &mut Run) -> io::Result<()> {
    let (head, packet) = run.buf.split_at_mut(VIRTIO_NET_HDR_LEN);
    let hdr = match run.tcp {
        None => VirtioNetHdr::default(),
        Some(first) => {
            let size = if run.segments > 1 {
                fix_ip_lengths(packet)?;
                u16::try_from(first.payload).ok()
            } else {
                None
            };
            partial_checksum_header(packet, size).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "not a TCP packet to write")
            })?
        }
    };
    hdr.encode(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ka_codec::wire::checksum::{finish, sum};
    use proptest::prelude::*;

    const ACK: u8 = 0x10;

    /// IPv4/TCP, 20-byte IP header, a 12-byte timestamp option, `payload`
    /// bytes from `fill` on, sequence number `seq`, acknowledgment `ack`,
    /// the given TCP flags, IP identification `ident`, checksums valid.
    fn seg(seq: u32, ack: u32, payload: usize, flags: u8, ident: u16, fill: u8) -> Vec<u8> {
        let total = 20 + 32 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&ident.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let c = finish(sum(&p[..20], 0));
        p[10..12].copy_from_slice(&c.to_be_bytes());
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&4000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5001u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12] = 8 << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&1000u16.to_be_bytes());
        t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7]);
        for (i, b) in t[32..].iter_mut().enumerate() {
            *b = fill.wrapping_add(i as u8);
        }
        let tcp_len = (total - 20) as u32;
        let pseudo = sum(&p[12..20], 6 + tcp_len);
        let c = finish(sum(&p[20..], pseudo));
        p[36..38].copy_from_slice(&c.to_be_bytes());
        p
    }

    fn writer_with(packets: &[Vec<u8>]) -> RunWriter {
        let mut w = RunWriter::new();
        for p in packets {
            w.add(p);
        }
        w
    }

    /// What the kernel makes of each prepared run: the packets it carries,
    /// cut as TSO cuts them, checksums completed.
    fn kernel_view(w: &mut RunWriter) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for run in &mut w.runs {
            prepare(run).unwrap();
            let (head, packet) = run.buf.split_at_mut(VIRTIO_NET_HDR_LEN);
            let hdr = VirtioNetHdr::decode(head).unwrap();
            if hdr.gso_type != 0 {
                let mut segs = vec![vec![0u8; 1600]; 64];
                let mut sizes = vec![0; 64];
                let v6 = packet[0] >> 4 == 6;
                let n = tun_rs::gso_split(packet, hdr, &mut segs, &mut sizes, 0, v6).unwrap();
                assert_eq!(n, usize::from(run.segments));
                out.extend(
                    segs.iter()
                        .zip(&sizes)
                        .take(n)
                        .map(|(s, &l)| s[..l].to_vec()),
                );
            } else {
                let mut p = packet.to_vec();
                if hdr.flags & 1 != 0 {
                    crate::offload::complete_checksum(&mut p, hdr.csum_start, hdr.csum_offset)
                        .unwrap();
                }
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn consecutive_segments_become_one_super_packet_the_kernel_cuts_back() {
        let mut segs: Vec<_> = (0..5u32)
            .map(|i| seg(1000 + i * 1400, 9, 1400, ACK, i as u16, i as u8))
            .collect();
        segs.push(seg(1000 + 5 * 1400, 9, 300, ACK | PSH, 5, 50));
        let mut w = writer_with(&segs);
        assert_eq!(w.runs.len(), 1);
        assert_eq!(w.runs[0].segments, 6);
        assert!(!w.runs[0].open, "a short segment ends the run");
        assert_eq!(kernel_view(&mut w), segs);
    }

    /// [`seg`] over IPv6 (40-byte header, no extension headers).
    fn seg6(seq: u32, payload: usize, flags: u8, fill: u8) -> Vec<u8> {
        let v4 = seg(seq, 9, payload, flags, 0, fill);
        let tcp = &v4[20..];
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&(tcp.len() as u16).to_be_bytes());
        p[6] = 6;
        p[7] = 64;
        p[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        p.extend_from_slice(tcp);
        p[56..58].copy_from_slice(&[0, 0]);
        let pseudo = sum(&p[8..40], 6 + tcp.len() as u32);
        let c = finish(sum(&p[40..], pseudo));
        p[56..58].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn ipv6_segments_run_too() {
        let mut segs: Vec<_> = (0..4u32)
            .map(|i| seg6(70 + i * 1300, 1300, ACK, i as u8))
            .collect();
        segs.push(seg6(70 + 4 * 1300, 20, ACK | PSH | FIN, 9));
        let mut w = writer_with(&segs);
        assert_eq!(w.runs.len(), 1);
        assert_eq!(w.runs[0].segments, 5);
        assert_eq!(kernel_view(&mut w), segs);
    }

    #[test]
    fn a_single_segment_leaves_its_checksum_to_the_kernel() {
        let s = seg(1, 9, 100, ACK, 3, 7);
        let mut broken = s.clone();
        broken[36] ^= 0xff; // whatever the field held: the kernel's now
        let mut w = writer_with(&[broken]);
        prepare(&mut w.runs[0]).unwrap();
        let hdr = VirtioNetHdr::decode(&w.runs[0].buf[..VIRTIO_NET_HDR_LEN]).unwrap();
        assert_eq!(
            (hdr.flags, hdr.gso_type, hdr.csum_start, hdr.csum_offset),
            (1, 0, 20, 16)
        );
        assert_eq!(kernel_view(&mut w), [s]);
    }

    #[test]
    fn what_cannot_join_starts_a_run_of_its_own() {
        let a = seg(1000, 9, 1400, ACK, 0, 0);
        let cases = [
            ("a gap", seg(2401, 9, 1400, ACK, 1, 0)),
            ("another acknowledgment", seg(2400, 10, 1400, ACK, 1, 0)),
            ("a larger segment", seg(2400, 9, 1401, ACK, 1, 0)),
            ("a FIN without data", seg(2400, 9, 0, ACK | FIN, 1, 0)),
            ("a pure ACK", seg(2400, 9, 0, ACK, 1, 0)),
            ("a SYN", seg(2400, 9, 10, 0x02 | ACK, 1, 0)),
            ("a CWR", seg(2400, 9, 1400, 0x80 | ACK, 1, 0)),
        ];
        for (what, b) in cases {
            let w = writer_with(&[a.clone(), b]);
            assert_eq!(w.runs.len(), 2, "{what}");
        }
        let mut frag = seg(2400, 9, 1400, ACK, 1, 0);
        frag[6] = 0x20; // MF
        assert_eq!(writer_with(&[a.clone(), frag]).runs.len(), 2, "a fragment");
        let mut udp = seg(2400, 9, 1400, ACK, 1, 0);
        udp[9] = 17;
        let mut w = writer_with(&[a.clone(), udp.clone()]);
        assert_eq!(w.runs.len(), 2, "UDP");
        assert_eq!(kernel_view(&mut w)[1], udp, "written as pushed");
        // a run ends at 64 KB
        let segs: Vec<_> = (0..50u32)
            .map(|i| seg(1000 + i * 1400, 9, 1400, ACK, i as u16, 0))
            .collect();
        let w = writer_with(&segs);
        assert_eq!(w.runs.len(), 2);
        assert!(
            w.runs
                .iter()
                .all(|r| r.buf.len() - VIRTIO_NET_HDR_LEN <= MAX_PACKET)
        );
    }

    proptest! {
        /// Any bytes pushed, including TCP-looking packets cut short or with
        /// lying length fields: no panic, and every run prepares or fails
        /// with an error.
        #[test]
        fn any_bytes_never_panic(
            packets in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..200), 0..40),
            tcp_like in any::<bool>(),
        ) {
            let mut w = RunWriter::new();
            for mut p in packets {
                if tcp_like && p.len() > 20 {
                    p[0] = 0x45;
                    p[9] = 6;
                    p[6] &= 0x40;
                    p[7] = 0;
                }
                w.add(&p);
            }
            for run in &mut w.runs {
                let _ = prepare(run);
            }
        }

        /// Whatever a sender pushes — runs broken by gaps, short segments,
        /// PSH, FIN, other acknowledgments — the kernel gets back exactly
        /// the packets pushed, in order, checksums valid.
        #[test]
        fn the_kernel_cuts_back_exactly_what_was_pushed(
            steps in proptest::collection::vec((0u32..3, 1usize..1200, 0u8..8, 0u32..2), 1..120)
        ) {
            let mut seq = 5u32;
            let mut packets = Vec::new();
            for (i, (gap, len, kind, ack)) in steps.into_iter().enumerate() {
                let (len, flags) = match kind {
                    0 => (len, ACK | PSH),
                    1 => (len, ACK | FIN),
                    2 => (0, ACK),
                    _ => (1200, ACK),
                };
                seq = seq.wrapping_add(if gap == 0 { 7 } else { 0 });
                packets.push(seg(seq, 9 + ack, len, flags, i as u16, i as u8));
                seq = seq.wrapping_add(len as u32 + u32::from(flags & FIN));
            }
            let mut w = RunWriter::new();
            let mut seen = Vec::new();
            for p in &packets {
                if w.runs.len() >= MAX_RUNS {
                    seen.extend(kernel_view(&mut w));
                    w.runs.clear();
                }
                w.add(p);
            }
            seen.extend(kernel_view(&mut w));
            prop_assert_eq!(seen, packets);
        }
    }
}

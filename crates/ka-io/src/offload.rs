//! Batched TUN I/O with the kernel's segmentation offloads
//! (`IFF_VNET_HDR`, Linux): what lets a userspace forwarder reach the
//! rates the kernel forwards at.
//!
//! Without offloads every 1500-byte packet costs one `read(2)` and one
//! `write(2)`. With them (a device opened with [`TunOptions::offload`]):
//!
//! * **In** ([`SegmentReader`]): the kernel hands the device TCP super-
//!   packets of up to 64 KB (TSO/USO, each behind a 12-byte
//!   `virtio_net_hdr`); one read returns up to 45 segments' worth, which
//!   `tun-rs` splits in userspace into ordinary IP packets (headers,
//!   identification and checksums filled in as the kernel would). The
//!   caller sees plain packets: a router core still decides per packet.
//! * **Out** ([`CoalescingWriter`]): packets to write are collected; at a
//!   flush, consecutive TCP (and UDP) segments of one flow are coalesced
//!   (GRO, `tun-rs`'s port of wireguard-go's) into super-packets, each
//!   written with one `write(2)` that the kernel segments again further
//!   on. Anything that cannot coalesce — a fragment (every KA leading
//!   fragment and its rest), a packet with IP options, a SYN or FIN — is
//!   written on its own, unchanged.
//!
//! * **Whole** ([`SegmentReader::read_whole`],
//!   [`CoalescingWriter::push_gso`]): a TCP super-packet read whole, with
//!   its segment size ([`Tso`]), and written whole behind a
//!   `virtio_net_hdr` that has the kernel segment it: a forwarder that
//!   needs to look at no single segment saves splitting and coalescing.
//!
//! wireguard-go and Tailscale passed 10 Gbit/s through TUN this way;
//! docs/PERFORMANCE.md has what it gives the ka gateway.
//!
//! Memory: a reader holds one 64 KB read buffer and [`BATCH`] segment
//! buffers of the MTU (plus one of 64 KB for a packet the kernel did not
//! segment); a writer holds at most [`BATCH`] packet buffers, each at most
//! 64 KB after coalescing: both bounded whatever the traffic.
//!
//! [`TunOptions::offload`]: crate::tun::TunOptions::offload

use std::io::{self, IoSlice};

use tun_rs::{
    GROTable, IDEAL_BATCH_SIZE, SyncDevice, VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6,
    VIRTIO_NET_HDR_GSO_UDP_L4, VIRTIO_NET_HDR_LEN, VirtioNetHdr,
};

use crate::tun::MAX_PACKET;
use ka_codec::wire::checksum::{finish, sum};

/// Packets per batch: the segments one read may yield, and the packets a
/// writer collects before it must flush (`tun-rs`'s `IDEAL_BATCH_SIZE`,
/// enough for a 64 KB super-packet of 536-byte segments).
pub const BATCH: usize = IDEAL_BATCH_SIZE;

/// A writer's buffer: what `tun-rs` requires to coalesce into it (twice
/// the header room and a 64 KB packet).
const BUF_CAPACITY: usize = 2 * VIRTIO_NET_HDR_LEN + MAX_PACKET;

/// `virtio_net_hdr.flags`: the checksum from `csum_start` on is left to
/// the receiver.
const F_NEEDS_CSUM: u8 = 1;
/// `virtio_net_hdr.gso_type`: not a super-packet.
const GSO_NONE: u8 = 0;
/// `virtio_net_hdr.gso_type` bit: the TCP segments carry ECN (CWR on the
/// first).
const GSO_ECN: u8 = 0x80;
/// Where the checksum field is in a TCP header.
const TCP_CSUM: usize = 16;

/// A TCP super-packet as read ([`SegmentReader::read_whole`]): the
/// segment size the kernel would cut it at, and how many segments that
/// makes (at least 2: one segment's worth is read as a plain packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tso {
    /// Payload bytes per segment (`virtio_net_hdr.gso_size`).
    pub size: u16,
    /// Segments it carries.
    pub segments: u16,
    /// IP and TCP header bytes, repeated in each segment.
    pub header_len: u16,
}

impl Tso {
    /// The bytes its segments take, headers included (`len`: the
    /// super-packet's length).
    pub fn wire_len(&self, len: usize) -> usize {
        len + usize::from(self.segments.saturating_sub(1)) * usize::from(self.header_len)
    }
}

/// Reads a TUN device opened with offloads, one super-packet at a time,
/// as the plain IP packets it carries.
pub struct SegmentReader {
    /// The raw read: `virtio_net_hdr` and the (super-)packet.
    raw: Vec<u8>,
    /// The segments of the last read (`segs[0]` is 64 KB: a packet that
    /// came unsegmented lands there whole).
    segs: Vec<Vec<u8>>,
    sizes: Vec<usize>,
}

impl std::fmt::Debug for SegmentReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentReader").finish_non_exhaustive()
    }
}

impl SegmentReader {
    /// Buffers for a device of this MTU (segments are at most one MTU
    /// long, headers included).
    pub fn new(mtu: u16) -> Self {
        let seg = usize::from(mtu).max(1280);
        let mut segs = vec![vec![0; seg]; BATCH];
        if let Some(first) = segs.first_mut() {
            first.resize(MAX_PACKET, 0);
        }
        Self {
            raw: vec![0; VIRTIO_NET_HDR_LEN + MAX_PACKET],
            segs,
            sizes: vec![0; BATCH],
        }
    }

    /// Reads one (super-)packet from `dev` (which must have been opened
    /// with offloads) and gives each IP packet in it to `each`, in order.
    /// Returns how many there were. A non-blocking device with nothing to
    /// read gives `WouldBlock`; a malformed `virtio_net_hdr` or a
    /// super-packet that does not split is `InvalidInput`/`Other` (that
    /// read is lost, the device stays usable).
    pub fn read(&mut self, dev: &SyncDevice, mut each: impl FnMut(&[u8])) -> io::Result<usize> {
        let n = dev.recv_multiple(&mut self.raw, &mut self.segs, &mut self.sizes, 0)?;
        for (seg, &len) in self.segs.iter().zip(&self.sizes).take(n) {
            each(seg.get(..len).unwrap_or_default());
        }
        Ok(n)
    }

    /// Reads one (super-)packet from `dev` (opened with offloads) and gives
    /// it to `each`: a TCP super-packet (TSO over IPv4, or IPv6 without
    /// extension headers) whole, with its [`Tso`] — its IP length fields
    /// and IPv4 header checksum made right, its TCP checksum left as the
    /// kernel's partial one (a writer with offloads asks the kernel to fill
    /// it, [`CoalescingWriter::push_gso`]; a segment cut from it gets its
    /// own); anything else as the plain packets it carries, as
    /// [`SegmentReader::read`] gives them. Returns the segments read.
    pub fn read_whole(
        &mut self,
        dev: &SyncDevice,
        mut each: impl FnMut(&mut [u8], Option<Tso>),
    ) -> io::Result<usize> {
        let n = dev.recv(&mut self.raw)?;
        let raw = self.raw.get_mut(..n).unwrap_or_default();
        let (head, packet) = raw.split_at_mut(VIRTIO_NET_HDR_LEN.min(n));
        let mut hdr = VirtioNetHdr::decode(head)?;
        let kind = hdr.gso_type & !GSO_ECN;
        if kind == GSO_NONE {
            if hdr.flags & F_NEEDS_CSUM != 0 {
                complete_checksum(packet, hdr.csum_start, hdr.csum_offset)?;
            }
            each(packet, None);
            return Ok(1);
        }
        if kind == VIRTIO_NET_HDR_GSO_TCPV4 || kind == VIRTIO_NET_HDR_GSO_TCPV6 {
            let tso = tcp_geometry(packet, hdr.gso_size)
                .filter(|(_, v6)| *v6 == (kind == VIRTIO_NET_HDR_GSO_TCPV6))
                .map(|(t, _)| t)
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "bad TCP super-packet")
                })?;
            fix_ip_lengths(packet)?;
            if tso.segments < 2 {
                // One segment's worth: a plain packet, its checksum whole.
                if hdr.flags & F_NEEDS_CSUM != 0 {
                    complete_checksum(packet, hdr.csum_start, hdr.csum_offset)?;
                }
                each(packet, None);
                return Ok(1);
            }
            each(packet, Some(tso));
            return Ok(usize::from(tso.segments));
        }
        if kind != VIRTIO_NET_HDR_GSO_UDP_L4 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "GSO type not supported",
            ));
        }
        // UDP super-packets: split here, as `read` does.
        hdr.hdr_len = hdr.csum_start.saturating_add(8);
        let is_v6 = packet.first().is_some_and(|b| b >> 4 == 6);
        let k = tun_rs::gso_split(packet, hdr, &mut self.segs, &mut self.sizes, 0, is_v6)?;
        for (seg, &len) in self.segs.iter_mut().zip(&self.sizes).take(k) {
            each(seg.get_mut(..len).unwrap_or_default(), None);
        }
        Ok(k)
    }
}

/// A TCP super-packet's [`Tso`] (and whether it is IPv6): the header
/// lengths from the packet itself (the kernel's `hdr_len` may be
/// anything on the forwarding path).
fn tcp_geometry(packet: &[u8], size: u16) -> Option<(Tso, bool)> {
    let (l4, v6) = ip_header_len(packet)?;
    let tcp_hl = usize::from(packet.get(l4 + 12)? >> 4) * 4;
    if !(20..=60).contains(&tcp_hl) || size == 0 {
        return None;
    }
    let payload = packet.len().checked_sub(l4 + tcp_hl)?;
    let segments = u16::try_from(payload.div_ceil(usize::from(size)).max(1)).ok()?;
    let header_len = u16::try_from(l4 + tcp_hl).ok()?;
    Some((
        Tso {
            size,
            segments,
            header_len,
        },
        v6,
    ))
}

/// Where TCP starts (IPv4: its IHL; IPv6: 40, next header TCP) and
/// whether it is IPv6.
fn ip_header_len(packet: &[u8]) -> Option<(usize, bool)> {
    let b0 = *packet.first()?;
    match b0 >> 4 {
        4 if *packet.get(9)? == 6 => Some((usize::from(b0 & 0x0f) * 4, false)),
        6 if *packet.get(6)? == 6 => Some((40, true)),
        _ => None,
    }
}

/// Sets the IP length field(s) of `packet` to its buffer's length and the
/// IPv4 header checksum to match.
pub(crate) fn fix_ip_lengths(packet: &mut [u8]) -> io::Result<()> {
    let bad = || io::Error::new(io::ErrorKind::InvalidInput, "super-packet too long");
    let len = packet.len();
    let (ihl, v6) = ip_header_len(packet).ok_or_else(bad)?;
    if v6 {
        let pl = u16::try_from(len.saturating_sub(40)).map_err(|_| bad())?;
        packet
            .get_mut(4..6)
            .ok_or_else(bad)?
            .copy_from_slice(&pl.to_be_bytes());
        return Ok(());
    }
    let total = u16::try_from(len).map_err(|_| bad())?;
    packet
        .get_mut(2..4)
        .ok_or_else(bad)?
        .copy_from_slice(&total.to_be_bytes());
    packet
        .get_mut(10..12)
        .ok_or_else(bad)?
        .copy_from_slice(&[0, 0]);
    let c = finish(sum(packet.get(..ihl).ok_or_else(bad)?, 0));
    packet
        .get_mut(10..12)
        .ok_or_else(bad)?
        .copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// `CHECKSUM_PARTIAL`: the field at `start + offset` holds the
/// pseudo-header's sum; the checksum over `start..` completes it.
pub(crate) fn complete_checksum(packet: &mut [u8], start: u16, offset: u16) -> io::Result<()> {
    let bad = || io::Error::new(io::ErrorKind::InvalidInput, "bad checksum offsets");
    let (start, at) = (usize::from(start), usize::from(start) + usize::from(offset));
    let field = packet.get(at..at + 2).ok_or_else(bad)?;
    let initial = u32::from(u16::from_be_bytes([
        *field.first().ok_or_else(bad)?,
        *field.get(1).ok_or_else(bad)?,
    ]));
    packet
        .get_mut(at..at + 2)
        .ok_or_else(bad)?
        .copy_from_slice(&[0, 0]);
    let c = finish(sum(packet.get(start..).ok_or_else(bad)?, initial));
    packet
        .get_mut(at..at + 2)
        .ok_or_else(bad)?
        .copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// The `virtio_net_hdr` that writes TCP super-packet `packet` of
/// `size`-byte segments, and the partial checksum (the pseudo-header's
/// sum over the whole TCP length, as the kernel's own TSO leaves it) it
/// stores in `packet` for the kernel to complete per segment.
fn gso_header(packet: &mut [u8], size: u16) -> Option<VirtioNetHdr> {
    partial_checksum_header(packet, Some(size))
}

/// The `virtio_net_hdr` that has the kernel complete TCP packet `packet`'s
/// checksum (`NEEDS_CSUM`; the pseudo-header's sum over the whole TCP
/// length goes into the checksum field, as the kernel's own TCP leaves
/// it) and, with `size`, cut it into `size`-byte segments (TSO).
pub(crate) fn partial_checksum_header(
    packet: &mut [u8],
    size: Option<u16>,
) -> Option<VirtioNetHdr> {
    let (l4, v6) = ip_header_len(packet)?;
    let tcp_hl = usize::from(packet.get(l4 + 12)? >> 4) * 4;
    let flags = *packet.get(l4 + 13)?;
    let tcp_len = u32::try_from(packet.len().checked_sub(l4)?).ok()?;
    let addrs = if v6 {
        packet.get(8..40)?
    } else {
        packet.get(12..20)?
    };
    let pseudo = sum(addrs, 6 + (tcp_len >> 16) + (tcp_len & 0xFFFF));
    packet
        .get_mut(l4 + TCP_CSUM..l4 + TCP_CSUM + 2)?
        .copy_from_slice(&(!finish(pseudo)).to_be_bytes());
    let gso_type = match size {
        None => GSO_NONE,
        Some(_) => {
            let t = if v6 {
                VIRTIO_NET_HDR_GSO_TCPV6
            } else {
                VIRTIO_NET_HDR_GSO_TCPV4
            };
            if flags & 0x80 != 0 { t | GSO_ECN } else { t }
        }
    };
    Some(VirtioNetHdr {
        flags: F_NEEDS_CSUM,
        gso_type,
        hdr_len: u16::try_from(l4 + tcp_hl).ok()?,
        gso_size: size.unwrap_or(0),
        csum_start: u16::try_from(l4).ok()?,
        csum_offset: TCP_CSUM as u16,
    })
}

/// Collects packets for a TUN device opened with offloads and writes them
/// coalesced (see the module docs).
pub struct CoalescingWriter {
    /// `bufs[..used]` hold the packets to write, each behind
    /// `VIRTIO_NET_HDR_LEN` bytes of room for the header; the rest are
    /// spare buffers kept for reuse.
    bufs: Vec<Vec<u8>>,
    used: usize,
    gro: GROTable,
    counts: GsoCounts,
}

/// What a [`CoalescingWriter`] has written as super-packets so far: how
/// often the kernel was handed more than one segment in one `write(2)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GsoCounts {
    /// Super-packets written (coalesced at a flush, or given whole to
    /// [`CoalescingWriter::push_gso`]).
    pub writes: u64,
    /// The segments they carried (each counts once, the first included).
    pub segments: u64,
}

impl std::fmt::Debug for CoalescingWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoalescingWriter")
            .field("pending", &self.used)
            .finish_non_exhaustive()
    }
}

impl Default for CoalescingWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl CoalescingWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self {
            bufs: Vec::with_capacity(BATCH),
            used: 0,
            gro: GROTable::default(),
            counts: GsoCounts::default(),
        }
    }

    /// Super-packets written so far ([`GsoCounts`]).
    pub fn gso_counts(&self) -> GsoCounts {
        self.counts
    }

    /// Packets collected and not yet written.
    pub fn pending(&self) -> usize {
        self.used
    }

    /// Whether [`BATCH`] packets are collected (the caller must
    /// [`flush`](Self::flush) before adding more; [`push`](Self::push)
    /// flushes by itself then).
    pub fn is_full(&self) -> bool {
        self.used >= BATCH
    }

    /// Adds one IP packet to the batch (copied). If the batch is full it is
    /// written to `dev` first.
    pub fn push(&mut self, dev: &SyncDevice, packet: &[u8]) -> io::Result<usize> {
        let flushed = if self.is_full() {
            self.flush(dev)
        } else {
            Ok(0)
        };
        if let Some(b) = self.bufs.get_mut(self.used) {
            b.clear();
            b.resize(VIRTIO_NET_HDR_LEN, 0);
            b.extend_from_slice(packet);
        } else {
            // Room for a whole coalesced super-packet: `tun-rs` appends a
            // segment to the buffer of its run only within its capacity
            // (it never reallocates while coalescing).
            let mut b = Vec::with_capacity(BUF_CAPACITY);
            b.resize(VIRTIO_NET_HDR_LEN, 0);
            b.extend_from_slice(packet);
            self.bufs.push(b);
        }
        self.used += 1;
        flushed
    }

    /// Writes TCP super-packet `packet` (of `size`-byte segments, TCP over
    /// IPv4 or over IPv6 without extension headers) to `dev` with one
    /// `write(2)` behind a `virtio_net_hdr` that has the kernel segment it
    /// (`gso_type`, `gso_size`, `NEEDS_CSUM`: the TCP checksum is
    /// rewritten to the partial one the kernel completes). What was
    /// collected before is written first, so a flow's packets stay in
    /// order. Returns the bytes written.
    pub fn push_gso(
        &mut self,
        dev: &SyncDevice,
        packet: &mut [u8],
        size: u16,
    ) -> io::Result<usize> {
        let flushed = self.flush(dev);
        let hdr = gso_header(packet, size)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a TCP super-packet"))?;
        let mut head = [0u8; VIRTIO_NET_HDR_LEN];
        hdr.encode(&mut head)?;
        let n = dev.send_vectored(&[IoSlice::new(&head), IoSlice::new(packet)])?;
        self.counts.writes += 1;
        self.counts.segments += u64::from(segments_of(&hdr, packet.len()));
        flushed.map(|_| n.saturating_sub(VIRTIO_NET_HDR_LEN))
    }

    /// Writes everything collected to `dev`, coalesced; returns the bytes
    /// the kernel accepted (IP bytes and headers of what was written). The
    /// batch is empty afterwards even on an error (what failed is lost, as
    /// a failed `write(2)` of one packet is).
    pub fn flush(&mut self, dev: &SyncDevice) -> io::Result<usize> {
        if self.used == 0 {
            return Ok(0);
        }
        let n = self.used;
        self.used = 0;
        let Some(bufs) = self.bufs.get_mut(..n) else {
            return Ok(0);
        };
        let written = dev.send_multiple(&mut self.gro, bufs, VIRTIO_NET_HDR_LEN);
        // The buffers a run was coalesced into now start with a header of
        // a GSO type; the others (written alone, or merged into a run)
        // keep a plain one.
        for b in bufs.iter() {
            if let Some(hdr) = b
                .get(..VIRTIO_NET_HDR_LEN)
                .and_then(|h| VirtioNetHdr::decode(h).ok())
                .filter(|h| h.gso_type & !GSO_ECN != GSO_NONE)
            {
                self.counts.writes += 1;
                self.counts.segments += u64::from(segments_of(
                    &hdr,
                    b.len().saturating_sub(VIRTIO_NET_HDR_LEN),
                ));
            }
        }
        written
    }
}

/// Segments the kernel cuts a super-packet of `len` bytes (headers
/// included) behind `hdr` into.
fn segments_of(hdr: &VirtioNetHdr, len: usize) -> u32 {
    let payload = len.saturating_sub(usize::from(hdr.hdr_len));
    let size = usize::from(hdr.gso_size.max(1));
    u32::try_from(payload.div_ceil(size).max(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IPv4/TCP: 20-byte headers, `payload` bytes of a pattern, checksums
    /// left as given (`tcp_csum`), IP total length `total`.
    fn v4(payload: usize, total: u16, flags: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 0, 0, 7, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2,
        ];
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 9, 0x50, flags]);
        p.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
        p.extend((0..payload).map(|i| (i * 13) as u8));
        p
    }

    /// The full TCP checksum of an IPv4 packet with 20-byte IP header.
    fn tcp_checksum(p: &[u8]) -> u16 {
        let mut q = p.to_vec();
        q[36..38].copy_from_slice(&[0, 0]);
        let len = (q.len() - 20) as u32;
        let pseudo = sum(&q[12..20], 6 + len);
        finish(sum(&q[20..], pseudo))
    }

    #[test]
    fn a_super_packet_counts_the_segments_the_kernel_cuts() {
        let hdr = |hdr_len, gso_size| VirtioNetHdr {
            hdr_len,
            gso_size,
            ..VirtioNetHdr::default()
        };
        // 40 bytes of headers and 3000 of payload: two 1448s and a 104.
        assert_eq!(segments_of(&hdr(40, 1448), 3040), 3);
        assert_eq!(segments_of(&hdr(40, 1500), 3040), 2);
        // Never fewer than one, whatever the header says.
        assert_eq!(segments_of(&hdr(40, 0), 40), 1);
        assert_eq!(segments_of(&hdr(100, 1448), 40), 1);
        assert_eq!(CoalescingWriter::new().gso_counts(), GsoCounts::default());
    }

    #[test]
    fn geometry_of_tcp_super_packets_only() {
        let p = v4(3000, 0, 0x10);
        let (t, v6) = tcp_geometry(&p, 1000).unwrap();
        assert!(!v6);
        assert_eq!((t.size, t.segments, t.header_len), (1000, 3, 40));
        assert_eq!(t.wire_len(p.len()), 3000 + 3 * 40);
        assert!(tcp_geometry(&p, 0).is_none());
        let mut udp = p.clone();
        udp[9] = 17;
        assert!(tcp_geometry(&udp, 1000).is_none());
        let mut v6p = vec![0x60, 0, 0, 0, 0, 0, 6, 64];
        v6p.extend_from_slice(&[0; 32]);
        v6p.extend_from_slice(&p[20..]);
        let (t, v6) = tcp_geometry(&v6p, 1400).unwrap();
        assert!(v6);
        assert_eq!((t.segments, t.header_len), (3, 60));
    }

    #[test]
    fn lengths_and_ipv4_header_checksum_are_made_right() {
        let mut p = v4(5000, 0, 0x10);
        fix_ip_lengths(&mut p).unwrap();
        assert_eq!(u16::from_be_bytes([p[2], p[3]]) as usize, p.len());
        assert_eq!(
            !finish(sum(&p[..20], 0)),
            0xFFFF,
            "header checksum verifies"
        );
    }

    #[test]
    fn a_partial_checksum_completes_to_the_full_one() {
        let mut p = v4(999, 0, 0x18);
        fix_ip_lengths(&mut p).unwrap();
        let full = tcp_checksum(&p);
        let len = (p.len() - 20) as u32;
        let partial = !finish(sum(&p[12..20], 6 + len));
        p[36..38].copy_from_slice(&partial.to_be_bytes());
        complete_checksum(&mut p, 20, 16).unwrap();
        assert_eq!(u16::from_be_bytes([p[36], p[37]]), full);
        assert!(complete_checksum(&mut p, 20, 2000).is_err());
    }

    #[test]
    fn a_super_packet_is_written_behind_a_tso_header_with_the_pseudo_header_sum() {
        let mut p = v4(4000, 0, 0x90); // ACK | CWR
        fix_ip_lengths(&mut p).unwrap();
        let full = tcp_checksum(&p);
        let h = gso_header(&mut p, 1448).unwrap();
        assert_eq!(h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4 | GSO_ECN);
        assert_eq!(
            (h.flags, h.hdr_len, h.gso_size, h.csum_start, h.csum_offset),
            (F_NEEDS_CSUM, 40, 1448, 20, 16)
        );
        // What the kernel does with NEEDS_CSUM on the whole: the full sum.
        complete_checksum(&mut p, h.csum_start, h.csum_offset).unwrap();
        assert_eq!(u16::from_be_bytes([p[36], p[37]]), full);
        let mut not_tcp = v4(10, 0, 0x10);
        not_tcp[9] = 17;
        assert!(gso_header(&mut not_tcp, 1448).is_none());
    }
}

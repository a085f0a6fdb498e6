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
//! wireguard-go and Tailscale passed 10 Gbit/s through TUN this way;
//! docs/PERFORMANCE.md has what it gives the ka gateway.
//!
//! Memory: a reader holds one 64 KB read buffer and [`BATCH`] segment
//! buffers of the MTU (plus one of 64 KB for a packet the kernel did not
//! segment); a writer holds at most [`BATCH`] packet buffers, each at most
//! 64 KB after coalescing: both bounded whatever the traffic.
//!
//! [`TunOptions::offload`]: crate::tun::TunOptions::offload

use std::io;

use tun_rs::{GROTable, IDEAL_BATCH_SIZE, SyncDevice, VIRTIO_NET_HDR_LEN};

use crate::tun::MAX_PACKET;

/// Packets per batch: the segments one read may yield, and the packets a
/// writer collects before it must flush (`tun-rs`'s `IDEAL_BATCH_SIZE`,
/// enough for a 64 KB super-packet of 536-byte segments).
pub const BATCH: usize = IDEAL_BATCH_SIZE;

/// A writer's buffer: what `tun-rs` requires to coalesce into it (twice
/// the header room and a 64 KB packet).
const BUF_CAPACITY: usize = 2 * VIRTIO_NET_HDR_LEN + MAX_PACKET;

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
        }
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
        match self.bufs.get_mut(..n) {
            Some(bufs) => dev.send_multiple(&mut self.gro, bufs, VIRTIO_NET_HDR_LEN),
            None => Ok(0),
        }
    }
}

//! Where the forwarding thread gets its packets ([`Input`]: both TUN
//! devices, read by the forwarding thread itself) and where it writes them
//! ([`Output`]).
//!
//! *Why the forwarding thread reads.* The first shell read on tokio tasks
//! and handed packets to the forwarding thread over a channel. On a small
//! VM every hand-over costs two context switches, and when the reader task
//! was descheduled for a few milliseconds its packets reached the port as a
//! bunch the wire never had (a phantom queue that RCP answered by cutting
//! R). Now one thread waits on both devices with `ppoll(2)` (nanosecond
//! timeout) until a packet is readable or the next departure is near, reads
//! every packet that is ready (non-blocking), and gives each to the core
//! stamped with the time it was read.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use ka_io::offload::{CoalescingWriter, SegmentReader, Tso};
use ka_io::pacing::{PollFd, PollFlags, wait_readable};
use ka_io::tun::MAX_PACKET;
use tun_rs::SyncDevice;

use super::stats::{Direction, IoCounters, SharedStats};
use crate::gso::Gso;

/// After a read error (other than "nothing to read") a device is left
/// alone this long, so a vanished device cannot make the thread spin.
pub const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// A source of packets for the forwarding loop.
pub(crate) trait Input {
    /// Waits until a packet may be ready or `deadline` has come; the last
    /// `spin` before the deadline is spent polling, not sleeping, so the
    /// return is punctual.
    fn wait(&mut self, deadline: Instant, spin: Duration);
    /// A packet that is ready now, with the direction it travels.
    fn next(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>)>;
    /// [`Input::next`], but a TCP super-packet comes whole, with its
    /// [`Tso`] (devices read with offloads; by default never).
    fn next_gso(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>, Option<Tso>)> {
        self.next(stats).map(|(d, p)| (d, p, None))
    }
    /// No packet will ever come again (test channels only).
    fn closed(&self) -> bool;
}

/// Where the forwarding thread writes packets.
pub(crate) trait Output {
    /// Writes one whole IP packet travelling in `dir` (any link layer is
    /// the implementation's business); the bytes written (or accepted for
    /// the next [`Output::flush`]).
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize>;

    /// [`Output::write`] of a packet the output may keep (an output that
    /// writes on another thread takes the buffer instead of copying it).
    fn write_owned(&mut self, dir: Direction, packet: Vec<u8>) -> io::Result<usize> {
        self.write(dir, &packet)
    }

    /// Writes TCP super-packet `packet` (its view `gso`,
    /// [`crate::gso`]). By default cut into its segments, each written
    /// with [`Output::write_owned`]; an output to a device with offloads
    /// writes it whole. The bytes written, as for its segments.
    fn write_gso(&mut self, dir: Direction, packet: Vec<u8>, gso: Gso) -> io::Result<usize> {
        let mut n = 0;
        for p in crate::gso::segments(&packet, gso) {
            n += self.write_owned(dir, p)?;
        }
        Ok(n)
    }

    /// Writes whatever [`Output::write`] collected (an output that batches
    /// its writes); `on_error` hears of each failed write. The forwarding
    /// loop calls it after every round of releases, before it waits.
    fn flush(&mut self, on_error: &mut dyn FnMut(Direction, io::Error)) {
        let _ = on_error;
    }
}

/// TUN devices: forward packets go to the `out` device (`[0]`), reverse
/// ones to the `in` device (`[1]`); one `write(2)` per packet.
impl Output for [File; 2] {
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize> {
        match self.get(dir.index()) {
            Some(mut f) => f.write(packet),
            None => Err(io::Error::other("no device for this direction")),
        }
    }
}

/// An [`Input`] and an [`Output`] that need not share anything.
pub(crate) struct Pair<I, O> {
    /// Where packets come from.
    pub(crate) input: I,
    /// Where they go.
    pub(crate) output: O,
}

impl<I: Input, O> Input for Pair<I, O> {
    fn wait(&mut self, deadline: Instant, spin: Duration) {
        self.input.wait(deadline, spin);
    }
    fn next(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>)> {
        self.input.next(stats)
    }
    fn next_gso(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>, Option<Tso>)> {
        self.input.next_gso(stats)
    }
    fn closed(&self) -> bool {
        self.input.closed()
    }
}

impl<I, O: Output> Output for Pair<I, O> {
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize> {
        self.output.write(dir, packet)
    }
    fn write_owned(&mut self, dir: Direction, packet: Vec<u8>) -> io::Result<usize> {
        self.output.write_owned(dir, packet)
    }
    fn write_gso(&mut self, dir: Direction, packet: Vec<u8>, gso: Gso) -> io::Result<usize> {
        self.output.write_gso(dir, packet, gso)
    }
    fn flush(&mut self, on_error: &mut dyn FnMut(Direction, io::Error)) {
        self.output.flush(on_error);
    }
}

/// TUN devices opened with offloads ([`TunOptions::offload`]): forward
/// packets go to the `out` device (`[0]`), reverse ones to the `in` device
/// (`[1]`), collected and written coalesced at each flush
/// ([`CoalescingWriter`]; a full batch is written at once).
///
/// [`TunOptions::offload`]: ka_io::tun::TunOptions::offload
pub(crate) struct TunOutput {
    devices: [Arc<SyncDevice>; 2],
    writers: [CoalescingWriter; 2],
    spares: Spares,
}

impl TunOutput {
    /// Writes forward packets to `out_dev`, reverse ones to `in_dev`, and
    /// gives each written packet's buffer to `spares`.
    pub(crate) fn new(in_dev: Arc<SyncDevice>, out_dev: Arc<SyncDevice>, spares: Spares) -> Self {
        Self {
            devices: [out_dev, in_dev],
            writers: [CoalescingWriter::new(), CoalescingWriter::new()],
            spares,
        }
    }
}

impl Output for TunOutput {
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize> {
        let i = dir.index();
        match (self.devices.get(i), self.writers.get_mut(i)) {
            (Some(d), Some(w)) => w.push(d, packet).map(|_| packet.len()),
            _ => Err(io::Error::other("no device for this direction")),
        }
    }

    fn write_owned(&mut self, dir: Direction, packet: Vec<u8>) -> io::Result<usize> {
        // `push` copies the packet into the coalescing buffers.
        let r = self.write(dir, &packet);
        self.spares.give(packet);
        r
    }

    fn write_gso(&mut self, dir: Direction, mut packet: Vec<u8>, gso: Gso) -> io::Result<usize> {
        let i = dir.index();
        let r = match (self.devices.get(i), self.writers.get_mut(i)) {
            (Some(d), Some(w)) => w
                .push_gso(d, &mut packet, gso.size())
                .map(|_| gso.wire_len(packet.len())),
            _ => Err(io::Error::other("no device for this direction")),
        };
        self.spares.give(packet);
        r
    }

    fn flush(&mut self, on_error: &mut dyn FnMut(Direction, io::Error)) {
        for dir in Direction::ALL {
            let i = dir.index();
            if let (Some(d), Some(w)) = (self.devices.get(i), self.writers.get_mut(i))
                && let Err(e) = w.flush(d)
            {
                on_error(dir, e);
            }
        }
    }
}

/// Packets of one read not handed out yet (a TCP super-packet whole, with
/// its [`Tso`]).
type Pending = VecDeque<(Vec<u8>, Option<Tso>)>;

/// Packet buffers that may wait on their way back from the writers to the
/// reader ([`spare_buffers`]): at most this many, each of at most one
/// packet's capacity ([`MAX_PACKET`]), 16 MiB in all.
pub const SPARE_BUFFERS: usize = 256;

/// The way written packets' buffers go back to [`TunInput`], which reads
/// the next packets into them: without it every packet was a fresh
/// allocation on the reading thread freed on a writing one, and at line
/// rate glibc gave the pages back and faulted them in again (up to 18 000
/// page faults a second in the router: docs/PERFORMANCE.md, "Written
/// packets' buffers go back to the reader"). Bounded
/// ([`SPARE_BUFFERS`]): a buffer that finds the way full is freed.
pub(crate) fn spare_buffers() -> (Spares, Receiver<Vec<u8>>) {
    let (tx, rx) = sync_channel(SPARE_BUFFERS);
    (Spares(tx), rx)
}

/// The writers' end of [`spare_buffers`].
#[derive(Clone, Debug)]
pub(crate) struct Spares(SyncSender<Vec<u8>>);

impl Spares {
    /// Hands a written packet's buffer back (or frees it if the way is full
    /// or the reader gone).
    pub(crate) fn give(&self, buf: Vec<u8>) {
        let _ = self.0.try_send(buf);
    }
}

/// Both TUN devices, non-blocking: `in` carries forward packets, `out`
/// reverse ones.
pub(crate) struct TunInput {
    /// Read handles (duplicates of the devices' descriptors).
    devices: [File; 2],
    /// The devices themselves, kept open for as long as we read (and read
    /// through when they have offloads).
    tun: [Arc<SyncDevice>; 2],
    /// Read the other device first next time (fairness under load).
    turn: usize,
    /// A device that failed is not polled until then.
    backoff: [Option<Instant>; 2],
    buf: Vec<u8>,
    /// Devices opened with offloads: each read may give many packets, and
    /// those not handed out yet wait here (at most one read's worth per
    /// device, [`ka_io::offload::BATCH`]).
    offload: Option<(SegmentReader, [Pending; 2])>,
    /// Buffers of written packets, to read into ([`spare_buffers`]).
    spares: Option<Receiver<Vec<u8>>>,
}

impl TunInput {
    /// Reads the `in` and `out` devices (their descriptors are switched to
    /// non-blocking mode).
    pub(crate) fn new(in_dev: SyncDevice, out_dev: SyncDevice) -> io::Result<Self> {
        Self::with_devices(Arc::new(in_dev), Arc::new(out_dev), None)
    }

    /// [`TunInput::new`] for devices opened with offloads (`mtu`: theirs).
    pub(crate) fn with_offload(
        in_dev: Arc<SyncDevice>,
        out_dev: Arc<SyncDevice>,
        mtu: u16,
    ) -> io::Result<Self> {
        Self::with_devices(in_dev, out_dev, Some(mtu))
    }

    pub(crate) fn with_devices(
        in_dev: Arc<SyncDevice>,
        out_dev: Arc<SyncDevice>,
        offload_mtu: Option<u16>,
    ) -> io::Result<Self> {
        let read_handle = |d: &SyncDevice| -> io::Result<File> {
            let f = File::from(d.as_fd().try_clone_to_owned()?);
            rustix::io::ioctl_fionbio(&f, true)?;
            Ok(f)
        };
        Ok(Self {
            devices: [read_handle(&in_dev)?, read_handle(&out_dev)?],
            tun: [in_dev, out_dev],
            turn: 0,
            backoff: [None, None],
            buf: if offload_mtu.is_some() {
                Vec::new()
            } else {
                vec![0; MAX_PACKET]
            },
            offload: offload_mtu.map(|mtu| (SegmentReader::new(mtu), Default::default())),
            spares: None,
        })
    }

    /// Reads into the buffers that come back through `spares` when there
    /// are any ([`spare_buffers`]).
    pub(crate) fn reuse(mut self, spares: Receiver<Vec<u8>>) -> Self {
        self.spares = Some(spares);
        self
    }

    /// One read from device `i`: the next packet, if any (a TCP
    /// super-packet whole, with its [`Tso`], from a device with offloads).
    fn read(&mut self, i: usize) -> io::Result<Option<(Vec<u8>, Option<Tso>)>> {
        if let Some((reader, pending)) = &mut self.offload {
            let (Some(q), Some(dev)) = (pending.get_mut(i), self.tun.get(i)) else {
                return Ok(None);
            };
            if let Some(p) = q.pop_front() {
                return Ok(Some(p));
            }
            let spares = self.spares.as_ref();
            reader.read_whole(dev, |p, tso| q.push_back((copy_into(spares, p), tso)))?;
            return Ok(q.pop_front());
        }
        let Some(mut dev) = self.devices.get(i) else {
            return Ok(None);
        };
        let n = dev.read(&mut self.buf)?;
        let packet = copy_into(self.spares.as_ref(), self.buf.get(..n).unwrap_or(&[]));
        Ok(Some((packet, None)))
    }

    /// Whether device `i` has packets of an earlier read waiting.
    fn has_pending(&self, i: usize) -> bool {
        self.offload
            .as_ref()
            .and_then(|(_, p)| p.get(i))
            .is_some_and(|q| !q.is_empty())
    }

    fn usable(&mut self, i: usize, now: Instant) -> bool {
        match self.backoff.get(i).copied().flatten() {
            Some(until) if now < until => false,
            Some(_) => {
                if let Some(b) = self.backoff.get_mut(i) {
                    *b = None;
                }
                true
            }
            None => true,
        }
    }
}

/// `packet` in a buffer that came back from the writers, or in a new one.
fn copy_into(spares: Option<&Receiver<Vec<u8>>>, packet: &[u8]) -> Vec<u8> {
    match spares.and_then(|r| r.try_recv().ok()) {
        Some(mut buf) => {
            buf.clear();
            // Grown to the packet exactly, not doubled: a buffer on the way
            // back stays within one packet's capacity ([`SPARE_BUFFERS`]).
            buf.reserve_exact(packet.len());
            buf.extend_from_slice(packet);
            buf
        }
        None => packet.to_vec(),
    }
}

impl Input for TunInput {
    fn wait(&mut self, deadline: Instant, spin: Duration) {
        if self.has_pending(0) || self.has_pending(1) {
            return;
        }
        let now = Instant::now();
        let use0 = self.usable(0, now);
        let use1 = self.usable(1, now);
        let [d0, d1] = &self.devices;
        let mut all = [
            PollFd::new(d0, PollFlags::IN),
            PollFd::new(d1, PollFlags::IN),
        ];
        let fds: &mut [PollFd<'_>] = match (use0, use1) {
            (true, true) => &mut all,
            (true, false) => all.get_mut(..1).unwrap_or_default(),
            (false, true) => all.get_mut(1..).unwrap_or_default(),
            (false, false) => &mut [],
        };
        // A device backing off is looked at again when its backoff ends.
        let deadline = if use0 && use1 {
            deadline
        } else {
            deadline.min(now + ERROR_BACKOFF)
        };
        wait_readable(fds, Some(deadline), spin);
    }

    fn next(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>)> {
        // Only for a caller that cannot take super-packets: cut them.
        let (dir, p, tso) = self.next_gso(stats)?;
        let Some(t) = tso else {
            return Some((dir, p));
        };
        let mut cut = ka_codec::wire::Layout::parse(&p)
            .ok()
            .and_then(|l| Gso::new(&p, &l, t.size))
            .map(|g| crate::gso::segments(&p, g).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter();
        let first = cut.next();
        if let Some((_, pending)) = &mut self.offload
            && let Some(q) = pending.get_mut(dir.index())
        {
            for (k, seg) in cut.enumerate() {
                q.insert(k, (seg, None));
            }
        }
        first.map(|f| (dir, f))
    }

    fn next_gso(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>, Option<Tso>)> {
        let now = Instant::now();
        for k in 0..2 {
            let i = (self.turn + k) % 2;
            if !self.usable(i, now) {
                continue;
            }
            let dir = if i == 0 {
                Direction::Forward
            } else {
                Direction::Reverse
            };
            let was_pending = self.has_pending(i);
            match self.read(i) {
                Ok(None) => {}
                Ok(Some((p, tso))) => {
                    if !was_pending {
                        IoCounters::add(&stats.io(dir).reads, 1);
                    }
                    self.turn = (i + 1) % 2;
                    return Some((dir, p, tso));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let io = stats.io(dir);
                    let n = io.read_errors.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_power_of_two() {
                        tracing::warn!(direction = dir.label(), errors = n, "read failed: {e}");
                    }
                    if let Some(b) = self.backoff.get_mut(i) {
                        *b = Some(now + ERROR_BACKOFF);
                    }
                }
            }
        }
        None
    }

    fn closed(&self) -> bool {
        false
    }
}

/// Packets from a channel: the loop's tests feed it without devices.
#[cfg(test)]
pub(crate) struct ChannelInput {
    pub(crate) rx: std::sync::mpsc::Receiver<(Direction, Vec<u8>)>,
    pub(crate) pending: Option<(Direction, Vec<u8>)>,
    pub(crate) closed: bool,
}

#[cfg(test)]
impl ChannelInput {
    pub(crate) fn new(rx: std::sync::mpsc::Receiver<(Direction, Vec<u8>)>) -> Self {
        Self {
            rx,
            pending: None,
            closed: false,
        }
    }
}

#[cfg(test)]
impl Input for ChannelInput {
    fn wait(&mut self, deadline: Instant, _spin: Duration) {
        if self.pending.is_some() || self.closed {
            return;
        }
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(timeout) {
            Ok(m) => self.pending = Some(m),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => self.closed = true,
        }
    }

    fn next(&mut self, _stats: &SharedStats) -> Option<(Direction, Vec<u8>)> {
        if let Some(m) = self.pending.take() {
            return Some(m);
        }
        match self.rx.try_recv() {
            Ok(m) => Some(m),
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.closed = true;
                None
            }
        }
    }

    fn closed(&self) -> bool {
        self.closed && self.pending.is_none()
    }
}

#[cfg(test)]
mod spare_tests {
    use super::*;

    #[test]
    fn a_packet_is_read_into_a_buffer_that_came_back() {
        let (spares, returned) = spare_buffers();
        let old = vec![7u8; MAX_PACKET];
        let ptr = old.as_ptr();
        spares.give(old);
        let p = copy_into(Some(&returned), &[1, 2, 3]);
        assert_eq!(p, [1, 2, 3]);
        assert_eq!(p.as_ptr(), ptr, "the spare buffer, not a new one");
        assert!(p.capacity() >= MAX_PACKET);
        // None left: a new buffer of the packet's size.
        let q = copy_into(Some(&returned), &[4; 10]);
        assert_eq!(q, [4; 10]);
        assert!(q.capacity() < MAX_PACKET);
    }

    #[test]
    fn a_spare_too_small_grows_to_the_packet_not_beyond() {
        let (spares, returned) = spare_buffers();
        spares.give(Vec::with_capacity(MAX_PACKET * 2 / 3));
        let p = copy_into(Some(&returned), &vec![5u8; MAX_PACKET]);
        assert_eq!(p.len(), MAX_PACKET);
        assert!(p.capacity() <= MAX_PACKET, "capacity {}", p.capacity());
    }

    #[test]
    fn the_way_back_holds_at_most_spare_buffers() {
        let (spares, returned) = spare_buffers();
        for _ in 0..SPARE_BUFFERS + 10 {
            spares.give(vec![0; 16]);
        }
        assert_eq!(returned.try_iter().count(), SPARE_BUFFERS);
        // A reader that is gone makes giving a no-op, not an error.
        drop(returned);
        spares.give(vec![0; 16]);
    }
}

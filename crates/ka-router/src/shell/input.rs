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

use ka_io::pacing::{PollFd, PollFlags, wait_readable};
use ka_io::tun::MAX_PACKET;
use tun_rs::SyncDevice;

use super::stats::{Direction, SharedStats};

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
    /// No packet will ever come again (test channels only).
    fn closed(&self) -> bool;
}

/// Where the forwarding thread writes packets.
pub(crate) trait Output {
    /// Writes one whole IP packet travelling in `dir` (any link layer is
    /// the implementation's business); the bytes written.
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize>;
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
    fn closed(&self) -> bool {
        self.input.closed()
    }
}

impl<I, O: Output> Output for Pair<I, O> {
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize> {
        self.output.write(dir, packet)
    }
}

/// Both TUN devices, non-blocking: `in` carries forward packets, `out`
/// reverse ones.
pub(crate) struct TunInput {
    /// Read handles (duplicates of the devices' descriptors).
    devices: [File; 2],
    /// The devices themselves, kept open for as long as we read.
    _tun: [SyncDevice; 2],
    /// Read the other device first next time (fairness under load).
    turn: usize,
    /// A device that failed is not polled until then.
    backoff: [Option<Instant>; 2],
    buf: Vec<u8>,
}

impl TunInput {
    /// Reads the `in` and `out` devices (their descriptors are switched to
    /// non-blocking mode).
    pub(crate) fn new(in_dev: SyncDevice, out_dev: SyncDevice) -> io::Result<Self> {
        let read_handle = |d: &SyncDevice| -> io::Result<File> {
            let f = File::from(d.as_fd().try_clone_to_owned()?);
            rustix::io::ioctl_fionbio(&f, true)?;
            Ok(f)
        };
        Ok(Self {
            devices: [read_handle(&in_dev)?, read_handle(&out_dev)?],
            _tun: [in_dev, out_dev],
            turn: 0,
            backoff: [None, None],
            buf: vec![0; MAX_PACKET],
        })
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

impl Input for TunInput {
    fn wait(&mut self, deadline: Instant, spin: Duration) {
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
            let Some(mut dev) = self.devices.get(i) else {
                continue;
            };
            match dev.read(&mut self.buf) {
                Ok(n) => {
                    self.turn = (i + 1) % 2;
                    return Some((dir, self.buf.get(..n).unwrap_or(&[]).to_vec()));
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

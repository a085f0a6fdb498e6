//! The driver thread: it owns the clock of the [`Stack`](crate::Stack) —
//! reads the TUN device, feeds the stack packets, runs its timers, writes
//! what it transmits.
//!
//! Why a thread and not a tokio task: KA pacing at 20 Mbit/s means a packet
//! every 0.6 ms, and tokio's timer wheel has 1 ms granularity (a sleep
//! rounds up to the next millisecond tick). The thread waits in `ppoll(2)`
//! on the device and on a [`Doorbell`] the handles ring, until the stack's
//! deadline ([`wait_readable`]: 1 ns timer slack, optionally spinning the
//! last `DriverConfig::spin`) — like the router's forwarding thread — so
//! departures are within tens of microseconds of the stack's schedule and
//! no tokio worker is ever blocked.
//!
//! Why the thread reads the device itself: the first driver read it on a
//! tokio task and handed each packet over a channel — two context switches
//! per packet, ~10 % of a core at 20 Mbit/s, and when the whole process had
//! been descheduled the thread could wake for a timer (e.g. KA's silence
//! deadline) before the task had passed on the ACKs that were already
//! waiting. Now every iteration reads what the device holds first, then
//! runs the timers. What the thread has not read yet waits in the device's
//! transmit queue (`DriverConfig::tun_queue_len` packets; beyond it the
//! kernel drops, reported as `DriverStats::input_dropped`).

use super::shared::Shared;
use crate::conn::State;
use ka_io::offload::SegmentReader;
use ka_io::pacing::{Pacer, PollFd, PollFlags, wait_readable};
use ka_io::runs::RunWriter;
use ka_io::tun::MAX_PACKET;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tun_rs::SyncDevice;

/// Packets written per lock hold (then the lock is released, the batch
/// written, and the loop continues without waiting).
const MAX_BATCH: usize = 64;
/// Packets read per iteration (more → the next iteration does not wait).
const MAX_INPUT_BATCH: usize = 64;
/// After a read error (other than "nothing to read") the device is left
/// alone this long, so a vanished device cannot make the thread spin.
const READ_ERROR_BACKOFF: Duration = Duration::from_millis(10);
/// This many read errors in a row fail the driver.
const FATAL_READ_ERRORS: u32 = 100;

/// How the handles wake the driver thread: an `eventfd(2)` it polls next to
/// the device. Ringing is coalesced by `Shared::kick_pending`.
#[derive(Debug)]
pub(crate) struct Doorbell(OwnedFd);

impl Doorbell {
    pub(crate) fn new() -> io::Result<Self> {
        use rustix::event::{EventfdFlags, eventfd};
        Ok(Self(eventfd(
            0,
            EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC,
        )?))
    }

    /// Wakes the thread (if it waits) or makes its next wait return at once.
    pub(crate) fn ring(&self) {
        // Fails only if the counter would overflow: it is rung already.
        let _ = rustix::io::write(&self.0, &1u64.to_ne_bytes());
    }

    /// Resets the bell (the thread is about to serve whatever rang it).
    fn clear(&self) {
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&self.0, &mut b);
    }
}

/// The device the driver thread works on.
pub(crate) struct DeviceIo {
    /// The device (read and written through with offloads).
    pub(crate) tun: SyncDevice,
    /// Its read handle (made non-blocking), polled for readiness.
    pub(crate) device: File,
    /// Its write handle (one packet per `write(2)` without offloads).
    pub(crate) writer: File,
    /// The device was opened with offloads (`DriverConfig::offload`).
    pub(crate) offload: bool,
}

/// The device's read side: non-blocking, with error backoff.
struct DeviceReader {
    dev: File,
    buf: Vec<u8>,
    /// With offloads: reads (super-)packets; a TCP super-packet is kept
    /// whole for the stack ([`Stack::handle_coalesced`](crate::Stack::handle_coalesced)),
    /// anything else comes out as plain packets.
    segments: Option<SegmentReader>,
    errors_in_a_row: u32,
    backoff_until: Option<Instant>,
}

impl DeviceReader {
    fn new(dev: File, offload_mtu: Option<u16>) -> io::Result<Self> {
        rustix::io::ioctl_fionbio(&dev, true)?;
        Ok(Self {
            dev,
            buf: if offload_mtu.is_some() {
                Vec::new()
            } else {
                vec![0; MAX_PACKET]
            },
            segments: offload_mtu.map(SegmentReader::new),
            errors_in_a_row: 0,
            backoff_until: None,
        })
    }

    /// Whether the device may be polled and read now.
    fn usable(&mut self, now: Instant) -> bool {
        match self.backoff_until {
            Some(t) if now < t => false,
            _ => {
                self.backoff_until = None;
                true
            }
        }
    }

    /// Reads up to `MAX_INPUT_BATCH` packets into `batch`, each with the
    /// segments it carries (1, or more for a TCP super-packet read whole;
    /// recycling buffers from `spare`; with offloads a last read may add up
    /// to [`ka_io::offload::BATCH`] more). Returns `Err` with the last error
    /// once `FATAL_READ_ERRORS` reads in a row have failed; counts failures
    /// in `read_errors`.
    fn read_batch(
        &mut self,
        tun: Option<&SyncDevice>,
        batch: &mut Vec<(Vec<u8>, u16)>,
        spare: &mut Vec<Vec<u8>>,
        read_errors: &mut u64,
    ) -> Result<(), io::Error> {
        let now = Instant::now();
        if !self.usable(now) {
            return Ok(());
        }
        while batch.len() < MAX_INPUT_BATCH {
            let mut add = |bytes: &[u8], segments: u16| {
                let mut p = spare.pop().unwrap_or_default();
                p.clear();
                p.extend_from_slice(bytes);
                batch.push((p, segments));
            };
            let read = match (&mut self.segments, tun) {
                (Some(r), Some(tun)) => r
                    .read_whole(tun, |p, tso| add(p, tso.map_or(1, |t| t.segments)))
                    .map(|_| ()),
                _ => self
                    .dev
                    .read(&mut self.buf)
                    .map(|n| add(self.buf.get(..n).unwrap_or(&[]), 1)),
            };
            match read {
                Ok(()) => {
                    self.errors_in_a_row = 0;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    *read_errors += 1;
                    self.errors_in_a_row += 1;
                    self.backoff_until = Some(now + READ_ERROR_BACKOFF);
                    if self.errors_in_a_row >= FATAL_READ_ERRORS {
                        return Err(e);
                    }
                    if self.errors_in_a_row.is_power_of_two() {
                        tracing::warn!("TUN read failed: {e}");
                    }
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Marks the driver as failed if its thread ends for any reason other than
/// the last handle going away (e.g. a panic), so no task waits forever.
struct ExitGuard(Arc<Shared>);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        if !self.0.stopping.load(Ordering::Acquire) {
            self.0
                .lock()
                .set_fatal("the driver thread stopped unexpectedly".into());
        }
    }
}

/// The driver thread's loop; returns when the last user handle is dropped.
pub(crate) fn run(shared: Arc<Shared>, io: DeviceIo, pacer: Pacer) {
    let DeviceIo {
        tun,
        device,
        mut writer,
        offload,
    } = io;
    let mtu = tun.mtu().unwrap_or(1500);
    let mut runs = offload.then(RunWriter::new);
    let _guard = ExitGuard(shared.clone());
    if let Err(e) = ka_io::pacing::tighten_timer_slack() {
        tracing::warn!("driver thread: timer slack unchanged: {e}");
    }
    let mut reader = match DeviceReader::new(device, offload.then_some(mtu)) {
        Ok(r) => r,
        Err(e) => {
            shared
                .lock()
                .set_fatal(format!("making the TUN device non-blocking: {e}"));
            return;
        }
    };
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(MAX_BATCH);
    let mut input: Vec<(Vec<u8>, u16)> = Vec::with_capacity(MAX_INPUT_BATCH);
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut deadline: Option<Instant> = Some(Instant::now());
    let mut eio_logged = false;
    // the previous iteration hit a batch limit: its "deadline" is not one
    let mut more_pending = false;
    loop {
        let now = Instant::now();
        let read_now = reader.usable(now);
        {
            let mut fds = [
                PollFd::new(&shared.bell.0, PollFlags::IN),
                PollFd::new(&reader.dev, PollFlags::IN),
            ];
            let (fds, wait_until): (&mut [PollFd<'_>], _) = if read_now {
                (&mut fds, deadline)
            } else {
                // The device is backing off after an error: the bell only,
                // and look at the device again when the backoff ends.
                let until = now + READ_ERROR_BACKOFF;
                (
                    fds.get_mut(..1).unwrap_or_default(),
                    Some(deadline.map_or(until, |d| d.min(until))),
                )
            };
            wait_readable(fds, wait_until, pacer.spin);
        }
        let woke = Instant::now();
        let late = deadline
            .filter(|&d| woke >= d)
            .map(|d| woke.saturating_duration_since(d));
        shared.bell.clear();
        shared.kick_pending.store(false, Ordering::Release);
        let stopping = shared.stopping.load(Ordering::Acquire);
        let mut read_errors = 0u64;
        let read = reader.read_batch(Some(&tun), &mut input, &mut spare, &mut read_errors);
        let input_full = input.len() >= MAX_INPUT_BATCH;
        let more;
        // Writes that failed while the batch was being collected (a full
        // writer flushes itself): how many, and the first.
        let mut early_errors = 0u64;
        let mut write_error: Option<io::Error> = None;
        {
            let mut inner = shared.lock();
            if let Some(l) = late
                && !more_pending
            {
                inner.stats.record_lateness(l);
            }
            inner.stats.read_errors += read_errors;
            if let Err(e) = read {
                inner.set_fatal(format!("reading the TUN device: {e}"));
            }
            let mut now = Instant::now();
            for (p, segments) in input.drain(..) {
                if segments > 1 {
                    inner.stack.handle_coalesced(now, &p, segments);
                    inner.stats.gro_reads += 1;
                } else {
                    inner.stack.handle_packet(now, &p);
                }
                inner.stats.packets_in += u64::from(segments);
                spare_push(&mut spare, p);
            }
            if stopping {
                // The last handle is gone: reset what is still open so peers
                // do not wait for us, then flush and stop.
                let handles: Vec<_> = inner.stack.handles().collect();
                for h in handles {
                    if let Some(c) = inner.stack.conn_mut(h)
                        && !matches!(c.state(), State::TimeWait | State::Closed)
                    {
                        c.abort();
                    }
                }
            }
            now = Instant::now();
            if inner.stack.poll_timeout().is_some_and(|t| t <= now) {
                inner.stack.handle_timeout(now);
            }
            // With offloads the packets go straight into the writer's
            // runs (one copy); without, into buffers written one by one.
            let mut polled = 0usize;
            loop {
                inner.after_io(now);
                let before = polled;
                while polled < MAX_BATCH {
                    let Some(n) = inner.stack.poll_transmit(now, &mut buf) else {
                        break;
                    };
                    let packet = buf.get(..n).unwrap_or(&[]);
                    polled += 1;
                    match &mut runs {
                        Some(w) => {
                            if let Err(e) = w.push(&tun, packet) {
                                early_errors += 1;
                                write_error.get_or_insert(e);
                            }
                        }
                        None => {
                            let mut p = spare.pop().unwrap_or_default();
                            p.clear();
                            p.extend_from_slice(packet);
                            out.push(p);
                        }
                    }
                }
                if polled == before || polled >= MAX_BATCH {
                    break;
                }
            }
            more = polled >= MAX_BATCH || input_full;
            inner.stats.packets_out += polled as u64;
            // The writer's running totals, as of the previous iteration's
            // writes (this thread owns the writer for the driver's life).
            if let Some(w) = &runs {
                let g = w.gso_counts();
                inner.stats.gso_writes = g.writes;
                inner.stats.gso_segments = g.segments;
            }
            deadline = if more {
                Some(now)
            } else {
                inner.stack.poll_timeout()
            };
        }
        let mut write_errors = early_errors.saturating_sub(1);
        // EIO: the device's kernel side is down (e.g. not yet moved into
        // its namespace); count and carry on, logging the first only.
        let mut failed = |e: io::Error| {
            write_errors += 1;
            if !eio_logged {
                tracing::warn!("TUN write failed (counted, further failures not logged): {e}");
                eio_logged = true;
            }
        };
        if let Some(e) = write_error.take() {
            failed(e);
        }
        for p in out.drain(..) {
            if let Err(e) = writer.write(&p) {
                failed(e);
            }
            spare_push(&mut spare, p);
        }
        // With offloads the round goes out now, as super-packets.
        if let Some(w) = &mut runs
            && let Err(e) = w.flush(&tun)
        {
            failed(e);
        }
        if write_errors > 0 {
            shared.lock().stats.write_errors += write_errors;
        }
        if stopping && !more {
            return;
        }
        more_pending = more;
    }
}

fn spare_push(spare: &mut Vec<Vec<u8>>, p: Vec<u8>) {
    if spare.len() < MAX_BATCH * 2 {
        spare.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rung(bell: &Doorbell) -> bool {
        let mut fds = [PollFd::new(&bell.0, PollFlags::IN)];
        wait_readable(
            &mut fds,
            Some(Instant::now() + Duration::from_millis(2)),
            Duration::ZERO,
        )
    }

    #[test]
    fn the_doorbell_wakes_a_wait_until_cleared() {
        let bell = Doorbell::new().unwrap();
        assert!(!rung(&bell), "a new bell is silent");
        bell.ring();
        bell.ring();
        assert!(rung(&bell), "a ring ends the wait");
        assert!(rung(&bell), "and keeps ending it until served");
        bell.clear();
        assert!(!rung(&bell), "one clear serves every ring before it");
    }

    #[test]
    fn the_reader_reads_a_batch_then_reports_nothing_waiting() {
        use std::os::unix::net::UnixDatagram;
        let (a, b) = UnixDatagram::pair().unwrap();
        for i in 0..3u8 {
            a.send(&[0x45, i]).unwrap();
        }
        let mut r = DeviceReader::new(File::from(OwnedFd::from(b)), None).unwrap();
        let (mut batch, mut spare, mut errors) = (Vec::new(), Vec::new(), 0);
        r.read_batch(None, &mut batch, &mut spare, &mut errors)
            .unwrap();
        assert_eq!(
            batch,
            [(vec![0x45, 0], 1), (vec![0x45, 1], 1), (vec![0x45, 2], 1)]
        );
        assert_eq!(errors, 0);
        // Non-blocking: an empty device ends the batch instead of blocking.
        batch.clear();
        r.read_batch(None, &mut batch, &mut spare, &mut errors)
            .unwrap();
        assert!(batch.is_empty());
    }

    #[test]
    fn read_errors_back_off_and_fail_the_driver_after_a_hundred() {
        // A write-only descriptor: every read fails (EBADF).
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        let mut r = DeviceReader::new(f, None).unwrap();
        let (mut batch, mut spare, mut errors) = (Vec::new(), Vec::new(), 0);
        r.read_batch(None, &mut batch, &mut spare, &mut errors)
            .unwrap();
        assert_eq!(errors, 1);
        assert!(!r.usable(Instant::now()), "backing off after an error");
        r.read_batch(None, &mut batch, &mut spare, &mut errors)
            .unwrap();
        assert_eq!(errors, 1, "not read while backing off");
        for _ in 1..FATAL_READ_ERRORS - 1 {
            r.backoff_until = None;
            r.read_batch(None, &mut batch, &mut spare, &mut errors)
                .unwrap();
        }
        r.backoff_until = None;
        assert!(
            r.read_batch(None, &mut batch, &mut spare, &mut errors)
                .is_err()
        );
        assert_eq!(errors, u64::from(FATAL_READ_ERRORS));
    }
}

//! Writing on threads of their own (`--write-threads`): the second core
//! for the half of the work that is the kernel's.
//!
//! A `write(2)` to a TUN device runs the receiving side's network stack in
//! the writer's context: writing a data segment towards B does B's TCP
//! receive processing, writing an ACK towards A does A's ACK processing and
//! lets A transmit its next segments. Profiled with the forwarding thread
//! doing everything (`perf record` on the router, kernel CUBIC at
//! 100 Gbit/s, passthrough), 73 % of its cycles were inside `write(2)`.
//! Here the forwarding thread still reads, runs the ports (each port's
//! state stays on that one thread) and decides every release; it hands the
//! released packets of each round to one writer thread per direction,
//! which writes them (coalesced, with offloads) while the forwarding
//! thread goes on. The price is a hand-over per round: a writer that was
//! asleep wakes in tens of microseconds, which adds to pacing lateness, so
//! this is for multi-Gbit/s links, not for a 20 Mbit/s testbed (off by
//! default).
//!
//! Memory: each direction holds at most [`QUEUE`] rounds in flight, each
//! at most [`BATCH`] packets (a full round is handed over at once). Write
//! errors come back over a channel the forwarding thread empties every
//! round, so at most the errors of the rounds in flight wait there; emptied
//! batches come back for reuse, no more than are in circulation, and the
//! written packets' buffers go back to the reader
//! ([`super::input::spare_buffers`], bounded).

use std::io;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use ka_io::offload::{BATCH, CoalescingWriter};
use tun_rs::SyncDevice;

use super::input::{Output, Spares};
use super::stats::Direction;
use crate::gso::Gso;

/// Rounds a direction may have in flight before the forwarding thread
/// waits for its writer.
pub const QUEUE: usize = 8;

/// A round's packets, each with the segment size it is to be cut at if it
/// is a TCP super-packet (written whole, `CoalescingWriter::push_gso`).
type Batch = Vec<(Vec<u8>, Option<u16>)>;

/// An [`Output`] whose writes happen on one thread per direction.
pub(crate) struct WriterThreads {
    tx: [Option<SyncSender<Batch>>; 2],
    pending: [Batch; 2],
    errors: Receiver<(Direction, io::Error)>,
    /// Emptied batches coming back for reuse.
    recycled: Receiver<Batch>,
    threads: Vec<JoinHandle<()>>,
    /// The devices were opened with offloads (super-packets are written
    /// whole).
    offload: bool,
}

impl WriterThreads {
    /// Writer threads for forward packets (to `out_dev`) and reverse ones
    /// (to `in_dev`); with `offload` the devices were opened with
    /// offloads and each round is written coalesced.
    pub(crate) fn spawn(
        in_dev: Arc<SyncDevice>,
        out_dev: Arc<SyncDevice>,
        offload: bool,
        spares: &Spares,
    ) -> io::Result<Self> {
        let (err_tx, errors) = channel();
        let (back_tx, recycled) = channel();
        let mut tx = [None, None];
        let mut threads = Vec::new();
        for dir in Direction::ALL {
            let dev = match dir {
                Direction::Forward => out_dev.clone(),
                Direction::Reverse => in_dev.clone(),
            };
            let (t, rx) = sync_channel::<Batch>(QUEUE);
            let (err_tx, back_tx, spares) = (err_tx.clone(), back_tx.clone(), spares.clone());
            let handle = std::thread::Builder::new()
                .name(format!("ka-write-{}", dir.label()))
                .spawn(move || writer(dir, &dev, offload, &rx, &err_tx, &back_tx, &spares))?;
            threads.push(handle);
            if let Some(slot) = tx.get_mut(dir.index()) {
                *slot = Some(t);
            }
        }
        Ok(Self {
            tx,
            pending: [Vec::new(), Vec::new()],
            errors,
            recycled,
            threads,
            offload,
        })
    }

    /// Adds a packet to direction `dir`'s round (handed over when full).
    fn queue(&mut self, dir: Direction, packet: Vec<u8>, gso: Option<u16>) -> io::Result<()> {
        let i = dir.index();
        let full = match self.pending.get_mut(i) {
            Some(p) => {
                p.push((packet, gso));
                p.len() >= BATCH
            }
            None => return Err(io::Error::other("no writer for this direction")),
        };
        if full {
            self.hand_over(i)?;
        }
        Ok(())
    }

    /// Hands direction `i`'s pending packets to its writer (waits if it is
    /// [`QUEUE`] rounds behind).
    fn hand_over(&mut self, i: usize) -> io::Result<()> {
        let (Some(pending), Some(Some(tx))) = (self.pending.get_mut(i), self.tx.get(i)) else {
            return Ok(());
        };
        if pending.is_empty() {
            return Ok(());
        }
        let empty = self.recycled.try_recv().unwrap_or_default();
        let batch = std::mem::replace(pending, empty);
        tx.send(batch)
            .map_err(|_| io::Error::other("writer thread gone"))
    }
}

impl Output for WriterThreads {
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize> {
        self.write_owned(dir, packet.to_vec())
    }

    fn write_owned(&mut self, dir: Direction, packet: Vec<u8>) -> io::Result<usize> {
        let len = packet.len();
        self.queue(dir, packet, None)?;
        Ok(len)
    }

    fn write_gso(&mut self, dir: Direction, packet: Vec<u8>, gso: Gso) -> io::Result<usize> {
        if !self.offload {
            let mut n = 0;
            for p in crate::gso::segments(&packet, gso) {
                n += self.write_owned(dir, p)?;
            }
            return Ok(n);
        }
        let len = gso.wire_len(packet.len());
        self.queue(dir, packet, Some(gso.size()))?;
        Ok(len)
    }

    fn flush(&mut self, on_error: &mut dyn FnMut(Direction, io::Error)) {
        for dir in Direction::ALL {
            if let Err(e) = self.hand_over(dir.index()) {
                on_error(dir, e);
            }
        }
        while let Ok((dir, e)) = self.errors.try_recv() {
            on_error(dir, e);
        }
    }
}

impl Drop for WriterThreads {
    fn drop(&mut self) {
        for dir in Direction::ALL {
            let _ = self.hand_over(dir.index());
        }
        self.tx = [None, None];
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One direction's writer: every round it is handed, in order.
fn writer(
    dir: Direction,
    dev: &SyncDevice,
    offload: bool,
    rx: &Receiver<Batch>,
    errors: &Sender<(Direction, io::Error)>,
    back: &Sender<Batch>,
    spares: &Spares,
) {
    let mut coalescing = CoalescingWriter::new();
    while let Ok(mut batch) = rx.recv() {
        for (p, gso) in &mut batch {
            let r = match (offload, *gso) {
                (true, Some(size)) => coalescing.push_gso(dev, p, size).map(|_| ()),
                (true, None) => coalescing.push(dev, p).map(|_| ()),
                (false, _) => dev.send(p).map(|_| ()),
            };
            if let Err(e) = r {
                let _ = errors.send((dir, e));
            }
        }
        if offload && let Err(e) = coalescing.flush(dev) {
            let _ = errors.send((dir, e));
        }
        // The packets' buffers go back to the reader, the emptied batch to
        // the forwarding thread.
        for (p, _) in batch.drain(..) {
            spares.give(p);
        }
        let _ = back.send(batch);
    }
}

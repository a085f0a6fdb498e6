//! State shared between the driver thread and the application's handles
//! (`KaStack`, `KaStream`, `KaListener`): the [`Stack`] itself behind one
//! mutex, plus per-connection bookkeeping ([`Slot`]) with the wakers of
//! pending reads, writes, connects and shutdowns.

use super::engine::Doorbell;
use super::stats::{DriverStats, StreamStats};
use crate::conn::{CloseReason, ConnStats, Event, ModeChange, State};
use crate::stack::{ConnHandle, Stack};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Instant;

/// Per-connection bookkeeping on the driver side.
#[derive(Debug)]
pub(crate) struct Slot {
    /// `connect` call or accept (handshake completion) time.
    pub opened: Instant,
    pub established: Option<Instant>,
    /// Our FIN was acknowledged, with the counters at that moment.
    pub send_done: Option<(Instant, ConnStats)>,
    /// The peer's FIN arrived, with the counters at that moment.
    pub recv_done: Option<(Instant, ConnStats)>,
    pub closed: Option<(Instant, CloseReason)>,
    /// Counters when the connection left the stack.
    pub final_stats: Option<ConnStats>,
    /// Readable bytes rescued from a connection as it was removed.
    pub leftover: VecDeque<u8>,
    /// The peer's FIN had been received when the connection was removed.
    pub leftover_eof: bool,
    pub mode_log: Vec<ModeChange>,
    pub mode_log_dropped: u64,
    pub read_waker: Option<Waker>,
    pub write_waker: Option<Waker>,
    pub connect_waker: Option<Waker>,
    pub shutdown_waker: Option<Waker>,
    /// `close()` was called (shutdown or drop): our FIN is queued.
    pub write_closed: bool,
    /// The stream handle is gone; remove the slot once closed.
    pub detached: bool,
    /// TIME-WAIT was reached (idle waiters were told).
    pub time_wait_seen: bool,
}

impl Slot {
    pub fn new(opened: Instant) -> Self {
        Slot {
            opened,
            established: None,
            send_done: None,
            recv_done: None,
            closed: None,
            final_stats: None,
            leftover: VecDeque::new(),
            leftover_eof: false,
            mode_log: Vec::new(),
            mode_log_dropped: 0,
            read_waker: None,
            write_waker: None,
            connect_waker: None,
            shutdown_waker: None,
            write_closed: false,
            detached: false,
            time_wait_seen: false,
        }
    }

    fn wake_all(&mut self) {
        for w in [
            self.read_waker.take(),
            self.write_waker.take(),
            self.connect_waker.take(),
            self.shutdown_waker.take(),
        ]
        .into_iter()
        .flatten()
        {
            w.wake();
        }
    }
}

/// A listening port's queue of established, not yet accepted connections.
#[derive(Debug, Default)]
pub(crate) struct ListenSlot {
    pub queue: VecDeque<ConnHandle>,
    pub waker: Option<Waker>,
}

/// Everything behind the mutex.
#[derive(Debug)]
pub(crate) struct Inner {
    pub stack: Stack,
    pub slots: HashMap<ConnHandle, Slot>,
    pub listeners: HashMap<u16, ListenSlot>,
    /// Wakers of `KaStack::close` futures (woken when connections finish).
    pub idle_wakers: Vec<Waker>,
    /// Set when the TUN device failed; every operation then errors.
    pub fatal: Option<String>,
    pub stats: DriverStats,
    pub backlog: usize,
    pub mode_log_cap: usize,
    /// Free space in a connection's send buffer at which a blocked writer
    /// is woken.
    pub write_low_water: usize,
}

impl Inner {
    /// Runs after every batch of input/timeouts: salvages connections that
    /// are about to leave the stack, drains events, wakes tasks.
    pub fn after_io(&mut self, now: Instant) {
        self.salvage_closed();
        while let Some((h, ev)) = self.stack.poll_event() {
            self.on_event(now, h, ev);
        }
        self.level_checks(now);
    }

    /// Before `poll_event` can remove a closed connection: keep its final
    /// counters and unread bytes in the slot.
    fn salvage_closed(&mut self) {
        for (h, slot) in self.slots.iter_mut() {
            if slot.final_stats.is_some() {
                continue;
            }
            let Some(conn) = self.stack.conn_mut(*h) else {
                continue;
            };
            if conn.state() != State::Closed {
                continue;
            }
            slot.final_stats = Some(conn.stats());
            let mut buf = [0u8; 16 * 1024];
            loop {
                let n = conn.read(&mut buf);
                if n == 0 {
                    break;
                }
                slot.leftover.extend(buf.get(..n).unwrap_or(&[]));
            }
            slot.leftover_eof = conn.is_eof();
        }
    }

    fn on_event(&mut self, now: Instant, h: ConnHandle, ev: Event) {
        if !self.slots.contains_key(&h) {
            if ev == Event::Connected {
                self.accept_new(now, h);
            }
            return;
        }
        let Some(slot) = self.slots.get_mut(&h) else {
            return;
        };
        match ev {
            Event::Connected => {
                slot.established = Some(now);
                if let Some(w) = slot.connect_waker.take() {
                    w.wake();
                }
            }
            Event::Readable => {
                if let Some(w) = slot.read_waker.take() {
                    w.wake();
                }
            }
            Event::PeerFin => {
                if slot.recv_done.is_none() {
                    let st = self.stack.conn(h).map(|c| c.stats()).unwrap_or_default();
                    slot.recv_done = Some((now, st));
                }
                if let Some(w) = slot.read_waker.take() {
                    w.wake();
                }
            }
            // Blocked writers are woken by `level_checks` once a useful
            // amount of space is free, not at every freed segment.
            Event::Writable => {}
            Event::ModeChanged(mc) => {
                tracing::debug!(conn = h.0, from = ?mc.from, to = ?mc.to, reason = ?mc.reason,
                    rate_bytes_per_ms = ?mc.rate, "mode change");
                if slot.mode_log.len() < self.mode_log_cap {
                    slot.mode_log.push(mc);
                } else {
                    slot.mode_log_dropped += 1;
                }
            }
            Event::Closed(reason) => {
                tracing::debug!(conn = h.0, ?reason, "connection closed");
                slot.closed = Some((now, reason));
                if slot.send_done.is_none() && slot.write_closed && reason == CloseReason::Normal {
                    slot.send_done = slot.final_stats.map(|s| (now, s));
                }
                slot.wake_all();
                if slot.detached {
                    self.slots.remove(&h);
                }
                for w in self.idle_wakers.drain(..) {
                    w.wake();
                }
            }
        }
    }

    /// A passive connection completed its handshake: queue it on its
    /// listener, or reset it if nobody listens or the backlog is full.
    fn accept_new(&mut self, now: Instant, h: ConnHandle) {
        let Some(conn) = self.stack.conn_mut(h) else {
            return;
        };
        if !conn.is_passive() {
            return;
        }
        let port = conn.local_addr().port();
        match self.listeners.get_mut(&port) {
            Some(l) if l.queue.len() < self.backlog => {
                let mut slot = Slot::new(now);
                slot.established = Some(now);
                self.slots.insert(h, slot);
                l.queue.push_back(h);
                if let Some(w) = l.waker.take() {
                    w.wake();
                }
            }
            Some(_) => {
                self.stats.backlog_full += 1;
                conn.abort();
            }
            None => conn.abort(),
        }
    }

    /// Level-triggered wake-ups (robust against missed edges), the "our FIN
    /// was acknowledged" moment, and resets for data nobody can read.
    fn level_checks(&mut self, now: Instant) {
        let low_water = self.write_low_water;
        let mut finished = false;
        let mut orphans_with_data = Vec::new();
        for (h, slot) in self.slots.iter_mut() {
            let Some(conn) = self.stack.conn(*h) else {
                continue;
            };
            let state = conn.state();
            if slot.write_closed
                && slot.send_done.is_none()
                && matches!(state, State::FinWait2 | State::TimeWait)
            {
                slot.send_done = Some((now, conn.stats()));
                finished = true;
                if let Some(w) = slot.shutdown_waker.take() {
                    w.wake();
                }
            }
            if slot.read_waker.is_some()
                && (conn.readable() > 0 || conn.is_eof())
                && let Some(w) = slot.read_waker.take()
            {
                w.wake();
            }
            if slot.write_waker.is_some()
                && conn.send_capacity() >= low_water
                && let Some(w) = slot.write_waker.take()
            {
                w.wake();
            }
            // Data for a stream nobody can read any more: reset, as Linux
            // does for data arriving on a closed socket.
            if slot.detached && conn.readable() > 0 {
                orphans_with_data.push(*h);
            }
            if state == State::TimeWait && !slot.time_wait_seen {
                slot.time_wait_seen = true;
                finished = true;
            }
        }
        for h in orphans_with_data {
            if let Some(c) = self.stack.conn_mut(h) {
                c.abort();
            }
        }
        if finished {
            for w in self.idle_wakers.drain(..) {
                w.wake();
            }
        }
    }

    /// Whether every connection has finished (closed or in TIME-WAIT).
    pub fn all_finished(&self) -> bool {
        self.stack.handles().all(|h| {
            self.stack
                .conn(h)
                .is_none_or(|c| matches!(c.state(), State::TimeWait | State::Closed))
        })
    }

    /// Fails every pending operation: the device is gone.
    pub fn set_fatal(&mut self, why: String) {
        tracing::error!("KA stack driver stopped: {why}");
        self.fatal = Some(why);
        for slot in self.slots.values_mut() {
            slot.wake_all();
        }
        for l in self.listeners.values_mut() {
            if let Some(w) = l.waker.take() {
                w.wake();
            }
        }
        for w in self.idle_wakers.drain(..) {
            w.wake();
        }
    }

    /// The statistics a `KaStream` reports.
    pub fn stream_stats(&self, h: ConnHandle) -> Option<StreamStats> {
        let slot = self.slots.get(&h)?;
        let conn = self
            .stack
            .conn(h)
            .map(|c| c.stats())
            .or(slot.final_stats)
            .unwrap_or_default();
        Some(StreamStats {
            conn,
            opened: slot.opened,
            established: slot.established,
            send_done: slot.send_done,
            recv_done: slot.recv_done,
            closed: slot.closed,
            mode_changes: slot.mode_log.clone(),
            mode_changes_dropped: slot.mode_log_dropped,
        })
    }
}

/// The shared part of a running driver.
#[derive(Debug)]
pub(crate) struct Shared {
    pub inner: Mutex<Inner>,
    /// Wakes the driver thread.
    pub bell: Doorbell,
    /// The bell has been rung and the thread has not served it yet
    /// (coalesces kicks).
    pub kick_pending: AtomicBool,
    /// The last user handle is gone: the driver thread stops.
    pub stopping: AtomicBool,
}

impl Shared {
    /// Locks the state; a panic in another holder does not poison us for
    /// good (the state is still consistent between calls into the stack).
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the driver thread for an iteration (coalesced: every iteration
    /// serves every connection).
    pub fn kick(&self) {
        if !self.kick_pending.swap(true, Ordering::AcqRel) {
            self.bell.ring();
        }
    }
}

/// Keeps the driver alive; the last one dropped stops it.
#[derive(Debug)]
pub(crate) struct Owner {
    pub shared: Arc<Shared>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.kick_pending.store(true, Ordering::Release);
        self.shared.bell.ring();
    }
}

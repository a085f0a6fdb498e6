//! The driver: a tokio task that reads the TUN device, and a dedicated
//! thread that owns the clock of the [`Stack`](crate::Stack) — feeds it
//! packets, runs its timers, writes what it transmits.
//!
//! Why a thread and not a tokio task: KA pacing at 20 Mbit/s means a packet
//! every 0.6 ms, and tokio's timer wheel has 1 ms granularity (a sleep
//! rounds up to the next millisecond tick). The thread waits with
//! [`Pacer`](ka_router::shell::Pacer) — block on the input channel with
//! 1 ns timer slack until the deadline (optionally spinning the last
//! `DriverConfig::spin`) — like the router's pacing thread, so departures
//! are within tens of microseconds of the stack's schedule and no tokio
//! worker is ever blocked.

use super::shared::{Msg, Shared};
use crate::conn::State;
use ka_router::shell::pacing::{Pacer, Wake};
use std::fs::File;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Instant;
use tun_rs::AsyncDevice;

/// Packets written per lock hold (then the lock is released, the batch
/// written, and the loop continues without waiting).
const MAX_BATCH: usize = 64;
/// Further queued input messages handled per iteration.
const MAX_INPUT_BATCH: usize = 64;

/// Reads packets from the device and queues them for the driver thread.
/// A full queue drops the packet (counted), as a NIC ring would.
pub(crate) async fn reader(dev: AsyncDevice, tx: SyncSender<Msg>, shared: Arc<Shared>, mtu: usize) {
    // Offloads are off, so a read is one IP packet of at most the MTU; the
    // extra room only catches oversized packets so they can be dropped.
    let mut buf = vec![0u8; mtu.max(1500) + 256];
    let mut errors = 0u32;
    loop {
        match dev.recv(&mut buf).await {
            Ok(n) => {
                errors = 0;
                let Some(pkt) = buf.get(..n) else { continue };
                match tx.try_send(Msg::Packet(pkt.to_vec())) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => shared.lock().stats.input_dropped += 1,
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                errors += 1;
                shared.lock().stats.read_errors += 1;
                tracing::warn!("TUN read failed: {e}");
                if errors >= 100 {
                    let _ = tx.send(Msg::Fatal(format!("reading the TUN device: {e}")));
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
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
pub(crate) fn run(shared: Arc<Shared>, rx: Receiver<Msg>, mut writer: File, pacer: Pacer) {
    let _guard = ExitGuard(shared.clone());
    if let Err(e) = ka_router::shell::pacing::tighten_timer_slack() {
        tracing::warn!("driver thread: timer slack unchanged: {e}");
    }
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(MAX_BATCH);
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut deadline: Option<Instant> = Some(Instant::now());
    let mut eio_logged = false;
    // the previous iteration hit the batch limit: its "deadline" is not one
    let mut more_pending = false;
    loop {
        let mut late = None;
        let first = match pacer.wait(&rx, deadline) {
            Wake::Message(m) => Some(m),
            Wake::Deadline => {
                late = deadline.map(|d| Instant::now().saturating_duration_since(d));
                None
            }
            Wake::Disconnected => return,
        };
        shared.kick_pending.store(false, Ordering::Release);
        let stopping = shared.stopping.load(Ordering::Acquire);
        let more;
        {
            let mut inner = shared.lock();
            if let Some(l) = late
                && !more_pending
            {
                inner.stats.record_lateness(l);
            }
            let mut now = Instant::now();
            let mut msg = first;
            let mut handled = 0;
            while let Some(m) = msg.take() {
                match m {
                    Msg::Packet(p) => {
                        inner.stack.handle_packet(now, &p);
                        inner.stats.packets_in += 1;
                        spare_push(&mut spare, p);
                    }
                    Msg::Kick => {}
                    Msg::Fatal(why) => inner.set_fatal(why),
                }
                handled += 1;
                if handled < MAX_INPUT_BATCH {
                    msg = rx.try_recv().ok();
                }
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
            loop {
                inner.after_io(now);
                let before = out.len();
                while out.len() < MAX_BATCH {
                    let Some(n) = inner.stack.poll_transmit(now, &mut buf) else {
                        break;
                    };
                    let mut p = spare.pop().unwrap_or_default();
                    p.clear();
                    p.extend_from_slice(buf.get(..n).unwrap_or(&[]));
                    out.push(p);
                }
                if out.len() == before || out.len() >= MAX_BATCH {
                    break;
                }
            }
            more = out.len() >= MAX_BATCH;
            inner.stats.packets_out += out.len() as u64;
            deadline = if more {
                Some(now)
            } else {
                inner.stack.poll_timeout()
            };
        }
        let mut write_errors = 0u64;
        for p in out.drain(..) {
            if let Err(e) = writer.write(&p) {
                write_errors += 1;
                // EIO: the device's kernel side is down (e.g. not yet moved
                // into its namespace); count and carry on.
                if !eio_logged {
                    tracing::warn!("TUN write failed (counted, further failures not logged): {e}");
                    eio_logged = true;
                }
            }
            spare_push(&mut spare, p);
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

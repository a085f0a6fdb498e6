//! [`KaStream`]: one TCP connection of a [`KaStack`](super::KaStack) as a
//! tokio `AsyncRead + AsyncWrite`.

use super::shared::{Owner, Shared};
use super::stats::StreamStats;
use crate::conn::{CloseReason, Mode, State};
use crate::stack::ConnHandle;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection of a [`KaStack`](super::KaStack); see the
/// [module docs](super) for an example.
///
/// * Reading: `poll_read` is pending until data or the peer's FIN (EOF,
///   `Ok(0)`) arrives; after a reset it fails with `ConnectionReset`.
/// * Writing: `poll_write` copies into the connection's send buffer
///   (`TcpConfig::send_buffer`, default 1 MiB) and is pending while it is
///   full — woken once a quarter of it (at most 64 KiB) is free again.
///   `poll_flush` is a no-op, as for a kernel socket.
/// * `poll_shutdown` (`AsyncWriteExt::shutdown`) sends our FIN after the
///   queued data and completes once the peer has **acknowledged** all of it
///   — so its completion time is the flow completion time. Reading still
///   works afterwards (half-close).
/// * Dropping the stream closes it gracefully (FIN after the queued data),
///   or resets it if received data is left unread (as Linux does).
#[derive(Debug)]
pub struct KaStream {
    owner: Arc<Owner>,
    handle: ConnHandle,
    local: SocketAddr,
    peer: SocketAddr,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "connection is gone")
}

pub(crate) fn fatal_error(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        format!("KA stack stopped: {why}"),
    )
}

fn close_error(reason: CloseReason) -> io::Error {
    match reason {
        CloseReason::Normal => io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"),
        CloseReason::Reset => {
            io::Error::new(io::ErrorKind::ConnectionReset, "connection reset by peer")
        }
        CloseReason::Refused => {
            io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused")
        }
        CloseReason::TimedOut => io::Error::new(io::ErrorKind::TimedOut, "connection timed out"),
        CloseReason::Aborted => {
            io::Error::new(io::ErrorKind::ConnectionAborted, "connection aborted")
        }
    }
}

impl KaStream {
    pub(crate) fn new(
        owner: Arc<Owner>,
        handle: ConnHandle,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> Self {
        KaStream {
            owner,
            handle,
            local,
            peer,
        }
    }

    fn shared(&self) -> &Shared {
        &self.owner.shared
    }

    /// Our address and port.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The peer's address and port.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// The stack's identifier of this connection.
    pub fn handle(&self) -> ConnHandle {
        self.handle
    }

    /// Counters, completion times and mode changes so far (final once the
    /// connection is closed).
    pub fn stats(&self) -> StreamStats {
        let inner = self.shared().lock();
        inner
            .stream_stats(self.handle)
            .unwrap_or_else(|| StreamStats {
                conn: Default::default(),
                opened: std::time::Instant::now(),
                established: None,
                send_done: None,
                recv_done: None,
                closed: None,
                mode_changes: Vec::new(),
                mode_changes_dropped: 0,
            })
    }

    /// Whether KA was negotiated on this connection.
    pub fn ka_enabled(&self) -> bool {
        self.stats().conn.ka_enabled
    }

    /// Whether XCP was negotiated (DESIGN §7.2).
    pub fn xcp_enabled(&self) -> bool {
        self.stats().conn.xcp_enabled
    }

    /// The current sender mode (KA or TCP).
    pub fn mode(&self) -> Mode {
        let inner = self.shared().lock();
        inner
            .stack
            .conn(self.handle)
            .map(|c| c.mode())
            .unwrap_or_default()
    }

    /// Resets the connection (RST) and discards all queued data.
    pub fn abort(&self) {
        let mut inner = self.shared().lock();
        if let Some(c) = inner.stack.conn_mut(self.handle) {
            c.abort();
        }
        drop(inner);
        self.shared().kick();
    }

    /// Waits until the handshake completes (or fails).
    pub(crate) async fn established(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| {
            let mut inner = self.shared().lock();
            if let Some(why) = &inner.fatal {
                return Poll::Ready(Err(fatal_error(why)));
            }
            let Some(slot) = inner.slots.get_mut(&self.handle) else {
                return Poll::Ready(Err(gone()));
            };
            if slot.established.is_some() {
                return Poll::Ready(Ok(()));
            }
            if let Some((_, reason)) = slot.closed {
                return Poll::Ready(Err(close_error(reason)));
            }
            slot.connect_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Waits until our FIN has been acknowledged (after `close`).
    fn poll_send_done(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut inner = self.shared().lock();
        let inner = &mut *inner;
        if let Some(why) = &inner.fatal {
            return Poll::Ready(Err(fatal_error(why)));
        }
        let Some(slot) = inner.slots.get_mut(&self.handle) else {
            return Poll::Ready(Err(gone()));
        };
        if slot.send_done.is_some() {
            return Poll::Ready(Ok(()));
        }
        if let Some((_, reason)) = slot.closed {
            return Poll::Ready(Err(close_error(reason)));
        }
        if !slot.write_closed {
            slot.write_closed = true;
            if let Some(c) = inner.stack.conn_mut(self.handle) {
                c.close();
            }
            self.owner.shared.kick();
        }
        slot.shutdown_waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncRead for KaStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let this = self.get_mut();
        let mut inner = this.shared().lock();
        let inner = &mut *inner;
        let Some(slot) = inner.slots.get_mut(&this.handle) else {
            return Poll::Ready(Err(gone()));
        };
        // bytes rescued from a connection that already left the stack
        if !slot.leftover.is_empty() {
            let n = buf.remaining().min(slot.leftover.len());
            let (a, b) = slot.leftover.as_slices();
            let from_a = n.min(a.len());
            buf.put_slice(a.get(..from_a).unwrap_or(&[]));
            buf.put_slice(b.get(..n - from_a).unwrap_or(&[]));
            slot.leftover.drain(..n);
            return Poll::Ready(Ok(()));
        }
        if let Some(conn) = inner.stack.conn_mut(this.handle) {
            let n = conn.read(buf.initialize_unfilled());
            if n > 0 {
                buf.advance(n);
                this.owner.shared.kick(); // a window update may be due
                return Poll::Ready(Ok(()));
            }
            if conn.is_eof() {
                return Poll::Ready(Ok(()));
            }
            if conn.state() != State::Closed {
                if let Some(why) = &inner.fatal {
                    return Poll::Ready(Err(fatal_error(why)));
                }
                slot.read_waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        // The connection is closed (or gone).
        match slot.closed {
            _ if slot.leftover_eof => Poll::Ready(Ok(())),
            Some((_, CloseReason::Normal)) => Poll::Ready(Ok(())),
            Some((_, reason)) => Poll::Ready(Err(close_error(reason))),
            None => {
                // closed in the stack, event not yet processed
                slot.read_waker = Some(cx.waker().clone());
                this.owner.shared.kick();
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for KaStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let this = self.get_mut();
        let mut inner = this.shared().lock();
        let inner = &mut *inner;
        if let Some(why) = &inner.fatal {
            return Poll::Ready(Err(fatal_error(why)));
        }
        let Some(slot) = inner.slots.get_mut(&this.handle) else {
            return Poll::Ready(Err(gone()));
        };
        if slot.write_closed {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "write after shutdown",
            )));
        }
        if let Some((_, reason)) = slot.closed {
            return Poll::Ready(Err(close_error(reason)));
        }
        let Some(conn) = inner.stack.conn_mut(this.handle) else {
            return Poll::Ready(Err(gone()));
        };
        match conn.state() {
            State::SynSent | State::SynReceived | State::Established | State::CloseWait => {}
            State::Closed => {
                slot.write_waker = Some(cx.waker().clone());
                this.owner.shared.kick();
                return Poll::Pending;
            }
            _ => {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "connection is closing",
                )));
            }
        }
        let n = conn.write(data);
        if n > 0 {
            this.owner.shared.kick();
            return Poll::Ready(Ok(n));
        }
        slot.write_waker = Some(cx.waker().clone());
        Poll::Pending
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_send_done(cx)
    }
}

impl Drop for KaStream {
    fn drop(&mut self) {
        let shared = &self.owner.shared;
        let mut guard = shared.lock();
        let inner = &mut *guard;
        let closed = match inner.slots.get_mut(&self.handle) {
            Some(slot) => {
                slot.detached = true;
                slot.write_closed = true;
                slot.closed.is_some()
            }
            None => return,
        };
        if closed {
            inner.slots.remove(&self.handle);
            return;
        }
        if let Some(c) = inner.stack.conn_mut(self.handle) {
            if c.readable() > 0 {
                c.abort();
            } else {
                c.close();
            }
        }
        drop(guard);
        shared.kick();
    }
}

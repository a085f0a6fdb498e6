//! [`KaListener`]: accepts connections to one port of a
//! [`KaStack`](super::KaStack).

use super::shared::Owner;
use super::stream::{KaStream, fatal_error};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;

/// Accepts connections to a port (from [`KaStack::listen`](super::KaStack::listen)).
///
/// Connections complete their handshake without waiting for `accept`; up to
/// `DriverConfig::accept_backlog` of them wait in a queue, further ones are
/// reset. Dropping the listener stops listening and resets the connections
/// still waiting in the queue.
#[derive(Debug)]
pub struct KaListener {
    owner: Arc<Owner>,
    port: u16,
}

impl KaListener {
    pub(crate) fn new(owner: Arc<Owner>, port: u16) -> Self {
        KaListener { owner, port }
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The next established connection and its peer's address.
    pub async fn accept(&self) -> io::Result<(KaStream, SocketAddr)> {
        let shared = &self.owner.shared;
        let (h, local, peer) = std::future::poll_fn(|cx| {
            let mut inner = shared.lock();
            let inner = &mut *inner;
            if let Some(why) = &inner.fatal {
                return Poll::Ready(Err(fatal_error(why)));
            }
            let Some(l) = inner.listeners.get_mut(&self.port) else {
                return Poll::Ready(Err(io::Error::other("listener is gone")));
            };
            while let Some(h) = l.queue.pop_front() {
                let addrs = inner
                    .stack
                    .conn(h)
                    .map(|c| (c.local_addr(), c.remote_addr()));
                match addrs {
                    Some((local, peer)) => return Poll::Ready(Ok((h, local, peer))),
                    // reset by the peer while queued: skip it
                    None => {
                        inner.slots.remove(&h);
                    }
                }
            }
            l.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await?;
        Ok((KaStream::new(self.owner.clone(), h, local, peer), peer))
    }
}

impl Drop for KaListener {
    fn drop(&mut self) {
        let shared = &self.owner.shared;
        let mut guard = shared.lock();
        let inner = &mut *guard;
        inner.stack.unlisten(self.port);
        if let Some(l) = inner.listeners.remove(&self.port) {
            for h in l.queue {
                if let Some(c) = inner.stack.conn_mut(h) {
                    c.abort();
                }
                if let Some(slot) = inner.slots.get_mut(&h) {
                    slot.detached = true;
                }
            }
        }
        drop(guard);
        shared.kick();
    }
}

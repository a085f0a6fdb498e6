//! Per-interface hooks ([`InterfaceHook`]): what a driver attaches to one
//! port of a [`Router`](super::Router) to watch the packets entering it or
//! to steer it over time — a middlebox's aggregate controller that moves
//! the port's capacity (DESIGN §5.3, [`crate::aggregate`]), a tap that
//! reports what the port did to some traffic.

use std::time::Instant;

use crate::port::{Port, PushOutcome};

/// A hook on one port interface of a [`Router`](super::Router). Every
/// method has a default that does nothing, so a hook implements only what
/// it uses.
///
/// Order of calls for a packet entering the hooked port at `now`:
/// [`follow`](InterfaceHook::follow); if it returned a note, the port is
/// advanced to `now` and the bytes queued ahead of the packet are read;
/// the packet is pushed; [`on_push`](InterfaceHook::on_push) with the note.
/// On the router's timeout at `now`, [`on_timeout`](InterfaceHook::on_timeout)
/// runs before the port is advanced to `now`.
pub trait InterfaceHook: std::fmt::Debug + Send {
    /// A packet is about to enter the port at `now`: `Some(note)` to be
    /// told what the port did with it (the note comes back in
    /// [`on_push`](InterfaceHook::on_push); e.g. the packet's size, or an
    /// index of the hook's own), `None` to let it pass unwatched (the
    /// default, and the cheap path: nothing else is done for it).
    fn follow(&mut self, now: Instant, packet: &[u8]) -> Option<usize> {
        let _ = (now, packet);
        None
    }

    /// The packet [`follow`](InterfaceHook::follow) returned `note` for
    /// found `queue_bytes_ahead` bytes queued in the port (as of `now`) and
    /// the port did `outcome` with it.
    fn on_push(
        &mut self,
        now: Instant,
        note: usize,
        queue_bytes_ahead: usize,
        outcome: PushOutcome,
    ) {
        let _ = (now, note, queue_bytes_ahead, outcome);
    }

    /// The router's timeout at `now`, before the port is advanced to it:
    /// the hook may act on the port (e.g. [`Port::set_capacity`]). Called
    /// at every router timeout, so a hook with its own period checks its
    /// time itself.
    fn on_timeout(&mut self, now: Instant, port: &mut Port) {
        let _ = (now, port);
    }

    /// When the hook next wants [`on_timeout`](InterfaceHook::on_timeout)
    /// (`None`: never on its own account). Part of
    /// [`Router::poll_timeout`](super::Router::poll_timeout).
    fn next_wakeup(&self) -> Option<Instant> {
        None
    }

    /// Whether [`on_timeout`](InterfaceHook::on_timeout) may change the
    /// port's capacity (a driver then reports the capacity over time, and
    /// a port's utilisation is of its current capacity).
    fn moves_capacity(&self) -> bool {
        false
    }
}

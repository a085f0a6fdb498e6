//! Undoing a KA exit that proved spurious (DESIGN §6.9, "Undo of a
//! spurious KA exit").

use super::dsack_mark::DsackMark;
use super::{Connection, LeftBy, Mode, ModeReason};
use std::time::Instant;

/// What a spurious KA exit is undone to (see [`Connection::ka_try_undo`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct KaUndo {
    /// The retransmitted and DSACKed byte counts when the flow left KA
    /// mode.
    pub mark: DsackMark,
    /// The cap the flow paced under in KA mode.
    pub cap: Option<f64>,
}

impl Connection {
    /// Undoes a KA exit that proved spurious (RFC 3708's DSACK detection of
    /// spurious retransmissions; Linux's DSACK undo): the flow left KA mode
    /// on a fast-retransmit loss, and since then every segment marked lost
    /// has been acknowledged — by its original before it was resent, or
    /// resent and then reported by the receiver as a duplicate (DSACKed
    /// bytes cover the retransmitted bytes): the originals arrived, late:
    /// reordering, not loss. Checked on every ACK of a SACK connection. The
    /// flow goes back to KA mode at once, under the cap it had, with no
    /// other congestion signal in between (that clears the undo, as does an
    /// RTO). A DSACK for a packet the network duplicated counts the same
    /// way; on such a path an exit may be undone that RACK would have kept
    /// (Linux has the same blind spot), and the next real loss leaves again.
    pub(super) fn ka_try_undo(&mut self, now: Instant) {
        let Some(u) = self.ka.undo else {
            return;
        };
        if self.ka.mode != Mode::Tcp || self.ka.left_by != Some(LeftBy::Loss) {
            self.ka.undo = None;
            return;
        }
        if !self.all_dsacked_since(u.mark) || self.ka.rate.is_none() {
            return;
        }
        self.ka.undo = None;
        self.ka.left_by = None;
        self.ka.last_loss = None;
        // the episode's retransmissions are all accounted for: it is over
        self.recovery = None;
        self.change_mode(now, Mode::Ka, ModeReason::Recovered);
        self.ka.cap = u.cap;
    }
}

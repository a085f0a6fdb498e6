//! Undoing a TCP-mode window reduction that proved spurious (DESIGN §6.9,
//! "Undo of a spurious window reduction").

use super::dsack_mark::DsackMark;
use super::{Connection, Mode};
use std::time::Instant;

/// What a spurious window reduction is undone to (see
/// [`Connection::cc_try_undo`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct CcUndo {
    /// The retransmitted and DSACKed byte counts when the recovery began.
    pub mark: DsackMark,
    /// The controller's window just before the reduction, bytes.
    pub window: usize,
    /// Linux's `prior_ssthresh`: the larger of the threshold and 3/4 of the
    /// window just before the reduction (`tcp_current_ssthresh`), so an
    /// undo in slow start returns to slow start.
    pub ssthresh: usize,
}

impl Connection {
    /// A fast-retransmit recovery is about to reduce the window (SACK
    /// connections outside KA mode; a KA exit has its own undo): remember
    /// what it is undone to. A pending undo is kept (its window is the one
    /// before the first of the reductions; see [`Connection::cc_try_undo`]).
    pub(super) fn cc_undo_arm(&mut self) {
        if !self.sack_ok || self.cc_undo.is_some() {
            return;
        }
        let window = self.cc.window();
        let three_quarters = window / 2 + window / 4;
        self.cc_undo = Some(CcUndo {
            mark: self.dsack_mark(),
            window,
            ssthresh: self.cc.ssthresh().max(three_quarters),
        });
    }

    /// Undoes a TCP-mode window reduction that proved spurious (RFC 3708's
    /// DSACK detection, RFC 4015's response as Linux's DSACK undo does
    /// it, `tcp_try_undo_dsack`): since the recovery began, every segment
    /// marked lost has been acknowledged — by its original before it was
    /// resent, or resent and then reported by the receiver as a duplicate
    /// (the bytes DSACKed cover the bytes retransmitted) — so the network
    /// reordered, it did not drop. The window and threshold go back to at
    /// least what they were (Linux's `tcp_undo_cwnd_reduction`: a flow cut
    /// in slow start resumes slow start) and the recovery ends. Checked on
    /// every ACK of a SACK connection; an RTO, an ECN echo or a loss a tail
    /// probe proved cancels it. A further fast-retransmit loss does not:
    /// the undo then needs every byte retransmitted since the first
    /// reduction DSACKed, which a real loss never is (the same rule as the
    /// KA exit's undo, `conn::ka_undo`).
    pub(super) fn cc_try_undo(&mut self, now: Instant) {
        let Some(u) = self.cc_undo else {
            return;
        };
        if self.ka.mode == Mode::Ka {
            // KA mode set its own window since; nothing to restore
            self.cc_undo = None;
            return;
        }
        if !self.all_dsacked_since(u.mark) {
            return;
        }
        self.cc_undo = None;
        self.recovery = None;
        self.stats.window_undos += 1;
        self.cc.undo_congestion_event(now, u.window, u.ssthresh);
    }
}

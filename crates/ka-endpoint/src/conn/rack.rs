//! RACK: time-based loss detection (RFC 8985 §6.2; DESIGN §6.9).
//!
//! With SACK on, a segment is deemed lost when a segment sent after it has
//! been delivered (SACKed or cumulatively acknowledged) and more than
//! `RACK.rtt + reo_wnd` has passed since it was sent; three duplicate ACKs
//! or three SACKed segments above it are no longer a loss by themselves.
//! A reordered segment that arrives within the reordering window is thus
//! never retransmitted, and a loss is found within one RTT plus the window
//! of its transmission (or of its retransmission: RACK also finds lost
//! retransmissions, which duplicate-ACK counting cannot).
//!
//! * `RACK.xmit_ts` / `RACK.end_seq`: send time and end of the most
//!   recently sent segment delivered so far; `RACK.rtt`: the RTT of the
//!   most recently sent segment the last ACK delivered (step 2). A
//!   retransmitted segment whose RTT would be below the minimum RTT was
//!   probably delivered by its original transmission and is skipped.
//! * Reordering is seen when a never-retransmitted segment is delivered
//!   below `RACK.fack`, the highest end delivered so far (step 3), and —
//!   as Linux does — when a DSACK arrives: the duplicate proves that the
//!   retransmission was not needed, so the original was late (delivered
//!   by its original transmission after being retransmitted, which step 3
//!   alone ignores).
//! * `reo_wnd = min(reo_wnd_mult · min_rtt / 4, srtt + 4·rttvar)` (step
//!   4; the RFC caps it at srtt, but RACK.rtt is the RTT of the latest
//!   delivery, and on a path whose RTT spreads wider than srtt — jitter —
//!   such a window cannot cover the spread; DESIGN §6.9 "Cap"); each
//!   round trip that brings a DSACK raises `reo_wnd_mult` by one, and 16
//!   recoveries without a DSACK reset it to 1. Beyond the RFC, a DSACK for
//!   a segment RACK marked lost raises the window to at least 5/4 of the
//!   send-time gap to the RACK segment it was marked by, or of the amount
//!   by which RACK.rtt fell short of srtt when it was marked, whichever is
//!   larger (`reo_extent`): that much reordering is proved. The gap covers
//!   an original that arrived late; the shortfall one that was overtaken
//!   by a segment arriving early (a path that lets some packets skip its
//!   delay, like netem's `reorder`: the early segment's RTT is short, and
//!   every segment sent before it looks overdue by the difference). On a
//!   jittery path (min_rtt near 0) the `min_rtt/4` steps would take
//!   hundreds of rounds to get there.
//!   Before any reordering has
//!   been seen the window is 0 in recovery or once [`DUP_THRESH`] segments
//!   are SACKed (the RFC's SHOULD, which makes a path without reordering
//!   recover as fast as with duplicate-ACK counting) — except in KA mode,
//!   where the router sets the rate, a loss is rare, and leaving KA mode on
//!   a reordering mistaken for a loss costs far more than the quarter RTT
//!   the window waits.
//! * The RACK timer (step 5) fires when the earliest segment that is still
//!   inside its window leaves it, so a loss at the tail of a flight is
//!   found without a further ACK.
//!
//! Without SACK (the peer did not permit it) no segment above `snd_una` is
//! ever known to be delivered, so RACK could only time segments out like
//! the RTO; the connection keeps RFC 5681 duplicate-ACK counting with
//! NewReno there (RFC 8985 §6.1 allows this; the fallback is documented in
//! DESIGN §6.9).
//!
//! Left out: TLP (tail loss probes, RFC 8985 §7) — a lost tail still waits
//! for the RTO — and the timestamp check of step 2 for retransmissions
//! (only the min-RTT check is made, as Linux does).

use super::Connection;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// RFC 6675 DupThresh: segments SACKed above a hole before, with no
/// reordering seen, the window shrinks to zero (RFC 8985 §6.2 step 4).
pub(super) const DUP_THRESH: usize = 3;

/// Recoveries without a DSACK after which `reo_wnd_mult` goes back to 1
/// (RFC 8985 §6.2 step 4).
const REO_WND_PERSIST: u8 = 16;

/// Segments RACK marked lost that are remembered for matching DSACKs.
const MARKS_KEPT: usize = 64;

/// RACK per-connection state (RFC 8985 §6.1).
#[derive(Debug, Clone)]
pub(super) struct RackState {
    /// Send time of the most recently sent segment delivered.
    xmit_ts: Option<Instant>,
    /// Its end sequence number.
    end_seq: u64,
    /// RTT of the most recently sent segment of the last ACK's deliveries.
    rtt: Duration,
    /// Highest end sequence number delivered.
    fack: u64,
    /// Reordering (or a DSACK) observed on this connection.
    pub reordering_seen: bool,
    /// Multiplier of `min_rtt / 4`.
    pub reo_wnd_mult: u32,
    /// Recoveries left before `reo_wnd_mult` resets.
    reo_wnd_persist: u8,
    /// `snd_nxt` when the last DSACK round began.
    dsack_round: Option<u64>,
    /// When the RACK timer fires.
    pub timer: Option<Instant>,
    /// The reordering a DSACK proved (see the module docs): the largest
    /// send-time gap to the RACK segment of a segment marked lost whose
    /// original then arrived, plus a quarter.
    pub reo_extent: Duration,
    /// The last segments marked lost: `(start, end, gap)`.
    marks: VecDeque<(u64, u64, Duration)>,
    /// Scratch for [`Scoreboard::rack_detect`](super::send::Scoreboard::rack_detect).
    marked: Vec<(u64, u64, Duration)>,
}

impl Default for RackState {
    fn default() -> Self {
        RackState {
            xmit_ts: None,
            end_seq: 0,
            rtt: Duration::ZERO,
            fack: 0,
            reordering_seen: false,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
            timer: None,
            reo_extent: Duration::ZERO,
            marks: VecDeque::new(),
            marked: Vec::new(),
        }
    }
}

impl RackState {
    /// A recovery episode (fast or RTO) ended (step 4).
    pub fn on_recovery_exit(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_mult = 1;
            self.reo_extent = Duration::ZERO;
        }
    }
}

impl Connection {
    /// Steps 2 and 3 over the deliveries the scoreboard recorded since its
    /// reports were last drained (called before they are).
    pub(super) fn rack_note_deliveries(&mut self, now: Instant) {
        let min_rtt = self.rtt.min_rtt().unwrap_or(Duration::ZERO);
        let fack_before = self.rack.fack;
        let mut newest: Option<(Instant, u64)> = None;
        for r in self.sb.reports() {
            if !matches!(r.fate, super::send::SegFate::Acked { .. }) {
                continue;
            }
            if r.end > self.rack.fack {
                self.rack.fack = r.end;
            } else if r.end < fack_before && !r.retransmitted {
                self.rack.reordering_seen = true;
            }
            if r.retransmitted && now.saturating_duration_since(r.sent) < min_rtt {
                continue;
            }
            if newest.is_none_or(|(t, e)| r.sent > t || (r.sent == t && r.end > e)) {
                newest = Some((r.sent, r.end));
            }
        }
        let Some((sent, end)) = newest else {
            return;
        };
        self.rack.rtt = now.saturating_duration_since(sent);
        let after = self
            .rack
            .xmit_ts
            .is_none_or(|t| sent > t || (sent == t && end > self.rack.end_seq));
        if after {
            self.rack.xmit_ts = Some(sent);
            self.rack.end_seq = end;
        }
    }

    /// A DSACK reported `[l, r)` twice: if RACK had marked it lost, the
    /// window was too small by at least the gap it was marked with.
    pub(super) fn rack_on_dsack(&mut self, l: u64, r: u64) {
        if let Some(&(_, _, gap)) = self.rack.marks.iter().rev().find(|m| m.0 < r && l < m.1) {
            self.rack.reo_extent = self.rack.reo_extent.max(gap + gap / 4);
        }
    }

    /// Step 4 after an ACK (`dsack`: it carried a DSACK block).
    pub(super) fn rack_update_reo_wnd(&mut self, dsack: bool) {
        if self.rack.dsack_round.is_some_and(|r| self.snd_una >= r) {
            self.rack.dsack_round = None;
        }
        if dsack {
            self.rack.reordering_seen = true;
            if self.rack.dsack_round.is_none() {
                self.rack.dsack_round = Some(self.snd_nxt);
                self.rack.reo_wnd_mult = self.rack.reo_wnd_mult.saturating_add(1);
                self.rack.reo_wnd_persist = REO_WND_PERSIST;
            }
        }
    }

    /// The reordering window (step 4, `RACK_reo_wnd`).
    pub(super) fn rack_reo_wnd(&self) -> Duration {
        let in_ka = self.ka.mode == super::Mode::Ka;
        if !self.rack.reordering_seen
            && !in_ka
            && (self.recovery.is_some() || self.sb.sacked_segs() >= DUP_THRESH)
        {
            return Duration::ZERO;
        }
        let srtt = self.rtt.srtt_or_initial();
        let min_rtt = self.rtt.min_rtt().unwrap_or(srtt);
        (min_rtt / 4)
            .saturating_mul(self.rack.reo_wnd_mult)
            .max(self.rack.reo_extent)
            .min(srtt + 4 * self.rtt.rttvar())
    }

    /// Step 5: marks the segments RACK deems lost and (re)arms the RACK
    /// timer for those still inside the window. Returns whether any segment
    /// was newly marked.
    pub(super) fn rack_detect_loss(&mut self, now: Instant) -> bool {
        self.rack.timer = None;
        let Some(xmit_ts) = self.rack.xmit_ts else {
            return false;
        };
        let wait = self.rack.rtt.saturating_add(self.rack_reo_wnd());
        let mut marked = std::mem::take(&mut self.rack.marked);
        let (newly, pending) =
            self.sb
                .rack_detect(now, xmit_ts, self.rack.end_seq, wait, &mut marked);
        self.rack.timer = pending.map(|p| now + p);
        // The window a DSACK for one of these will prove too small: the
        // send-time gap to the RACK segment (a late original), or the
        // amount by which RACK.rtt fell short of srtt (the RACK segment
        // overtook the others, arriving early: its RTT is short and every
        // segment sent before it looks overdue by the difference).
        let deficit = self.rtt.srtt_or_initial().saturating_sub(self.rack.rtt);
        for mut m in marked.drain(..) {
            m.2 = m.2.max(deficit);
            if self.rack.marks.len() >= MARKS_KEPT {
                self.rack.marks.pop_front();
            }
            self.rack.marks.push_back(m);
        }
        self.rack.marked = marked;
        newly > 0
    }
}

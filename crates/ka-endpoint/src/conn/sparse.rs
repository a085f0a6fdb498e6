//! Sparse signals: a KA router that signals each flow once per RTT
//! instead of on every packet (the router's `StampEvery::Rtt`, DESIGN
//! §3.9, §6.3) must not make the sender leave KA mode "by silence".
//!
//! The silence rule waits `max(silence_srtts · srtt, 3 packet times) +
//! srtt/16` after the last fresh signal. A once-per-RTT router tells each
//! flow at least once per the RTT the flow announced (the bottom of its
//! RTT indicator's range, so at most its srtt), so the next fresh echo is
//! due about one interval plus one packet gap after the last: within the
//! rule, but with only srtt/16 to spare when the srtt sits at the bottom
//! of an indicator range and the queues behind the router jitter. So a
//! sender that sees its signals arrive sparsely allows one more interval:
//!
//! * **Sparse**: a fresh signal arrives after at least
//!   [`SPARSE_STALE_ACKS`] acceptable segments that brought no fresh
//!   signal, and the one before it did too ([`SPARSE_STREAK`] in a row),
//!   in either mode: a router whose interval exceeds the plain rule (a
//!   fixed `StampEvery::Every` above the srtt) makes the flow leave by
//!   silence at its first gaps and come back at each next signal, and
//!   those returns build the streak, after which it stays.
//!   Per-packet signalling does not look like that while a router signals:
//!   every ACK of a data segment a router split is fresh, and the segments
//!   no router splits (an RTT indicator every 100 ms, the short last
//!   segment) come one at a time; a router that stops signalling brings no
//!   fresh signal at all, and when it resumes, its dense signals end the
//!   streak. So per-packet runs keep the rule bit for bit (checked: the
//!   paper's experiments give byte-identical outputs).
//! * **Allowance**: while sparse, the silence deadline and the TCP-mode
//!   "routers are silent" test (`ka_on_unsignalled_ack`) wait the longest
//!   gap between fresh signals of the streak longer, at most 2 srtt (the
//!   longest, not the last: a router also signals a flow early when its
//!   code changes, and such a short gap says nothing about the next). A flow signalled once
//!   per srtt thus falls back after about `2·srtt + srtt/16` without a
//!   signal, and a router that stops signalling is still noticed within
//!   three srtts. Below 1 ms of srtt the cap is 2 ms instead
//!   ([`SPARSE_MIN_CAP`]): a router signals a flow that announced RTT
//!   indicator 0 once per 1 ms, not once per its srtt.
//!
//! The streak ends after [`DENSE_RUN`] fresh signals in a row that each
//! follow fewer stale segments (the router signals every packet again).

use super::Connection;
use std::time::{Duration, Instant};

/// Segments without a fresh signal before a fresh one that make it a
/// sparse signal.
pub const SPARSE_STALE_ACKS: u32 = 2;

/// Sparse fresh signals before the allowance applies.
pub const SPARSE_STREAK: u8 = 2;

/// The least the allowance may grow to, whatever the srtt: the top of RTT
/// indicator class 0 (RTT < 2 ms). A router cannot tell a flow that
/// announced k = 0 apart by its RTT and signals it once per 1 ms (DESIGN
/// §3.9), which for a sender at 0.1 ms is ten srtts: capped at 2 srtt the
/// allowance would send such a flow to TCP mode between every two signals.
/// A router that stops signalling is then noticed within srtt + 2 ms.
pub const SPARSE_MIN_CAP: Duration = Duration::from_millis(2);

/// Fresh signals in a row that are not sparse (each after fewer than
/// [`SPARSE_STALE_ACKS`] stale segments) that end a streak: the router
/// signals every packet again.
pub const DENSE_RUN: u8 = 4;

impl Connection {
    /// An acceptable segment brought no fresh signal.
    pub(super) fn ka_note_stale(&mut self) {
        if self.ka.enabled {
            self.ka.stale_acks = self.ka.stale_acks.saturating_add(1);
        }
    }

    /// A fresh signal arrives at `now` (before `last_fresh` moves to it):
    /// extends or ends the sparse streak.
    pub(super) fn ka_note_fresh_spacing(&mut self, now: Instant) {
        if self.ka.stale_acks >= SPARSE_STALE_ACKS {
            self.ka.sparse_streak = self.ka.sparse_streak.saturating_add(1);
            self.ka.dense_run = 0;
            let gap = self.ka.last_fresh.map(|t| now.saturating_duration_since(t));
            self.ka.signal_gap = self.ka.signal_gap.max(gap);
        } else {
            self.ka.dense_run = self.ka.dense_run.saturating_add(1);
            if self.ka.dense_run >= DENSE_RUN {
                self.ka.sparse_streak = 0;
                self.ka.signal_gap = None;
            }
        }
        self.ka.stale_acks = 0;
    }

    /// How much longer than the plain silence rule to wait for a fresh
    /// signal: the last gap between fresh signals (at most 2 srtt) while
    /// signals come sparsely, else nothing.
    pub(super) fn ka_sparse_allowance(&self) -> Option<Duration> {
        if self.ka.sparse_streak < SPARSE_STREAK {
            return None;
        }
        let cap = self
            .rtt
            .srtt_or_initial()
            .saturating_mul(2)
            .max(SPARSE_MIN_CAP);
        self.ka.signal_gap.map(|g| g.min(cap))
    }
}

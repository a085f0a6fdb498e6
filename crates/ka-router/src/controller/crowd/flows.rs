//! The connections a [`Crowd`](super::Crowd) controller follows: their
//! phases and the totals over them.

use std::time::Duration;

use crate::controller::table::{Table, Totals, add, add_sum};

/// Where a connection is in its life at the port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Phase {
    /// Its SYN passed; no packet has carried a rate to it yet.
    Announced {
        /// When the SYN arrived.
        at: Duration,
    },
    /// A packet carried its grant `g` (B/ms) at `at`; it has not yet sent
    /// at that rate (its first paced packets arrive about an RTT later).
    Pending {
        /// When the grant left the port.
        at: Duration,
        /// The grant, B/ms.
        g: f64,
    },
    /// It sends at a signalled rate: its grant, then R.
    Active(Active),
}

/// An active connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Active {
    /// When its first packet after the grant's round trip arrived.
    pub since: Duration,
    /// Its grant, if it had one (`None`: adopted mid-connection).
    pub g: Option<f64>,
    /// Bytes that arrived since `since`.
    pub bytes: u64,
    /// Whether its first round trip of activity is over.
    pub learned: bool,
    /// Whether its size has been learned from.
    pub sampled: bool,
    /// Arrival rate (B/ms), an EWMA with time constant d, as of `m_at`.
    pub m: f64,
    /// When `m` was last updated.
    pub m_at: Duration,
    /// Sends clearly below what it is told (a bottleneck elsewhere).
    pub limited: bool,
    /// Its first-RTT demand while young, in [0, 1]: how far it has come
    /// towards counting as a full flow (see [`Crowd`](super::Crowd),
    /// "young").
    pub ramp: f64,
}

/// One followed connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Flow {
    /// Its phase.
    pub phase: Phase,
    /// Its last packet's arrival.
    pub last: Duration,
    /// The last rate stamped for it (B/ms), or `f64::INFINITY`.
    pub told: f64,
    /// It has sent data (or was first seen with data).
    pub sent: bool,
}

/// Totals over the followed connections.
#[derive(Debug, Clone, Default)]
pub(super) struct CrowdTotals {
    /// Announced connections.
    pub announced: usize,
    /// Pending connections and the sum of their grants (B/ms).
    pub pending: usize,
    pub pending_g: f64,
    /// Active connections, and how many of them are limited elsewhere.
    pub active: usize,
    pub limited: usize,
    /// Active connections still in their first round trip of activity,
    /// and the sum of their `ramp`s.
    pub young: usize,
    pub young_ramp: f64,
    /// Sum of the arrival rates of limited connections (B/ms), as of the
    /// last sweep.
    pub limited_m: f64,
}

/// The table a [`Crowd`](super::Crowd) keeps.
pub(super) type Flows = Table<Flow, CrowdTotals>;

impl Totals<Flow> for CrowdTotals {
    fn count(&mut self, f: &Flow, sign: i64) {
        match &f.phase {
            Phase::Announced { .. } => add(&mut self.announced, sign),
            Phase::Pending { g, .. } => {
                add(&mut self.pending, sign);
                add_sum(&mut self.pending_g, self.pending, sign, *g);
            }
            Phase::Active(a) => {
                add(&mut self.active, sign);
                if a.limited {
                    add(&mut self.limited, sign);
                }
                if !a.learned {
                    add(&mut self.young, sign);
                    add_sum(&mut self.young_ramp, self.young, sign, a.ramp);
                }
            }
        }
    }

    /// The sweep changes flows in place (`learned`, `limited`, `m`):
    /// every total is recomputed.
    fn after_sweep<'a>(&mut self, flows: impl Iterator<Item = &'a Flow>) {
        *self = Self::default();
        for f in flows {
            match f.phase {
                Phase::Announced { .. } => self.announced += 1,
                Phase::Pending { g, .. } => {
                    self.pending += 1;
                    self.pending_g += g;
                }
                Phase::Active(a) => {
                    self.active += 1;
                    if !a.learned {
                        self.young += 1;
                        self.young_ramp += a.ramp;
                    }
                    if a.limited {
                        self.limited += 1;
                        self.limited_m += a.m;
                    }
                }
            }
        }
    }
}

impl Flow {
    /// A connection first seen at `now` in `phase`.
    pub fn new(phase: Phase, now: Duration) -> Self {
        Self {
            phase,
            last: now,
            told: f64::INFINITY,
            sent: matches!(phase, Phase::Active(_)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::packet::FlowKey;

    fn key(n: u16) -> FlowKey {
        FlowKey {
            sport: n,
            ..FlowKey::default()
        }
    }

    #[test]
    fn totals_follow_phase_changes_and_cap_holds() {
        let mut t = Flows::new(3);
        let z = Duration::ZERO;
        let flow = |p| Flow::new(p, z);
        assert!(t.insert(key(1), flow(Phase::Announced { at: z })));
        assert!(
            !t.insert(key(1), flow(Phase::Announced { at: z })),
            "no duplicates"
        );
        assert!(t.insert(key(2), flow(Phase::Pending { at: z, g: 10.0 })));
        assert!(t.insert(key(3), flow(Phase::Pending { at: z, g: 5.0 })));
        assert!(!t.insert(key(4), flow(Phase::Announced { at: z })), "full");
        assert_eq!((t.announced, t.pending, t.pending_g), (1, 2, 15.0));
        let a = Active {
            since: z,
            g: Some(10.0),
            bytes: 0,
            learned: false,
            sampled: false,
            m: 3.0,
            m_at: z,
            limited: true,
            ramp: 0.25,
        };
        t.update(&key(2), |f| f.phase = Phase::Active(a));
        assert_eq!(
            (t.pending, t.pending_g, t.active, t.limited),
            (1, 5.0, 1, 1)
        );
        assert_eq!((t.young, t.young_ramp), (1, 0.25));
        t.update(&key(2), |f| {
            f.phase = Phase::Active(Active { ramp: 0.75, ..a })
        });
        assert_eq!((t.young, t.young_ramp), (1, 0.75));
        t.remove(&key(3));
        assert_eq!((t.pending, t.pending_g), (0, 0.0));
        t.sweep(|f| !matches!(f.phase, Phase::Announced { .. }));
        assert_eq!(
            (t.len(), t.announced, t.active, t.limited_m),
            (1, 0, 1, 3.0)
        );
    }
}

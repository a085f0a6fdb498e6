//! The bounded table of TCP connections a [`Crowd`](super::Crowd)
//! controller follows, with running totals over it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::controller::packet::FlowKey;

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
}

/// Followed connections and totals over them.
#[derive(Debug, Clone, Default)]
pub(super) struct Table {
    map: BTreeMap<FlowKey, Flow>,
    cap: usize,
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

impl Table {
    /// An empty table that follows at most `cap` connections.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// Connections followed.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The connection `key`.
    pub fn get(&self, key: &FlowKey) -> Option<&Flow> {
        self.map.get(key)
    }

    /// Mutable access for fields that do not affect the totals (`last`,
    /// `told`, an active connection's counters). Phase changes go through
    /// [`Table::set_phase`].
    pub fn get_mut(&mut self, key: &FlowKey) -> Option<&mut Flow> {
        self.map.get_mut(key)
    }

    fn count(&mut self, phase: &Phase, sign: i64) {
        let add = |v: &mut usize| {
            *v = if sign > 0 {
                v.saturating_add(1)
            } else {
                v.saturating_sub(1)
            }
        };
        match phase {
            Phase::Announced { .. } => add(&mut self.announced),
            Phase::Pending { g, .. } => {
                add(&mut self.pending);
                self.pending_g = (self.pending_g + sign as f64 * g).max(0.0);
                if self.pending == 0 {
                    self.pending_g = 0.0;
                }
            }
            Phase::Active(a) => {
                add(&mut self.active);
                if a.limited {
                    add(&mut self.limited);
                }
                if !a.learned {
                    add(&mut self.young);
                    self.young_ramp = (self.young_ramp + sign as f64 * a.ramp).max(0.0);
                    if self.young == 0 {
                        self.young_ramp = 0.0;
                    }
                }
            }
        }
    }

    /// Starts following `key` in `phase`; false (and nothing changes) if
    /// it is followed already or the table is full.
    pub fn insert(&mut self, key: FlowKey, phase: Phase, now: Duration) -> bool {
        if self.map.len() >= self.cap || self.map.contains_key(&key) {
            return false;
        }
        self.count(&phase, 1);
        self.map.insert(
            key,
            Flow {
                phase,
                last: now,
                told: f64::INFINITY,
            },
        );
        true
    }

    /// Moves `key` to `phase`, keeping the totals right.
    pub fn set_phase(&mut self, key: &FlowKey, phase: Phase) {
        let Some(old) = self.map.get(key).map(|f| f.phase) else {
            return;
        };
        self.count(&old, -1);
        self.count(&phase, 1);
        if let Some(f) = self.map.get_mut(key) {
            f.phase = phase;
        }
    }

    /// Stops following `key`; returns what it was.
    pub fn remove(&mut self, key: &FlowKey) -> Option<Flow> {
        let f = self.map.remove(key)?;
        self.count(&f.phase, -1);
        Some(f)
    }

    /// Visits every connection (in key order, so runs repeat exactly);
    /// `visit` returns false to drop it. Recomputes all totals.
    pub fn sweep(&mut self, mut visit: impl FnMut(&mut Flow) -> bool) {
        self.map.retain(|_, f| visit(f));
        self.announced = 0;
        self.pending = 0;
        self.pending_g = 0.0;
        self.active = 0;
        self.limited = 0;
        self.young = 0;
        self.young_ramp = 0.0;
        self.limited_m = 0.0;
        for f in self.map.values() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u16) -> FlowKey {
        FlowKey {
            sport: n,
            ..FlowKey::default()
        }
    }

    #[test]
    fn totals_follow_phase_changes_and_cap_holds() {
        let mut t = Table::new(3);
        let z = Duration::ZERO;
        assert!(t.insert(key(1), Phase::Announced { at: z }, z));
        assert!(
            !t.insert(key(1), Phase::Announced { at: z }, z),
            "no duplicates"
        );
        assert!(t.insert(key(2), Phase::Pending { at: z, g: 10.0 }, z));
        assert!(t.insert(key(3), Phase::Pending { at: z, g: 5.0 }, z));
        assert!(!t.insert(key(4), Phase::Announced { at: z }, z), "full");
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
        t.set_phase(&key(2), Phase::Active(a));
        assert_eq!(
            (t.pending, t.pending_g, t.active, t.limited),
            (1, 5.0, 1, 1)
        );
        assert_eq!((t.young, t.young_ramp), (1, 0.25));
        t.set_phase(&key(2), Phase::Active(Active { ramp: 0.75, ..a }));
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

//! The bounded table of TCP connections a connection-following controller
//! ([`Crowd`](super::Crowd), [`Echo`](super::Echo)) keeps, with running
//! totals over it that each controller defines ([`Totals`]).
//!
//! A `BTreeMap` keyed by the connection's addresses and ports: lookups are
//! O(log n) with no hash an attacker could collide, and visits go in key
//! order, so runs repeat exactly.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::time::Duration;

use super::packet::FlowKey;

/// Running totals over the connections of a [`Table`].
pub(super) trait Totals<F>: Default {
    /// Adds (`sign > 0`) or removes (`sign < 0`) `flow`'s share.
    fn count(&mut self, flow: &F, sign: i64);

    /// After a [`Table::sweep`], which may have changed flows in place:
    /// the chance to recompute the totals over every flow left. Default:
    /// keep the running ones.
    fn after_sweep<'a>(&mut self, flows: impl Iterator<Item = &'a F>)
    where
        F: 'a,
    {
        let _ = flows;
    }
}

/// Followed connections (records `F`) and totals `T` over them; derefs to
/// the totals.
#[derive(Debug, Clone)]
pub(super) struct Table<F, T> {
    map: BTreeMap<FlowKey, F>,
    cap: usize,
    totals: T,
}

impl<F, T: Totals<F>> Table<F, T> {
    /// An empty table that follows at most `cap` connections.
    pub fn new(cap: usize) -> Self {
        Self {
            map: BTreeMap::new(),
            cap,
            totals: T::default(),
        }
    }

    /// Connections followed.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The connection `key`.
    pub fn get(&self, key: &FlowKey) -> Option<&F> {
        self.map.get(key)
    }

    /// Mutable access for fields that do not affect the totals; changes
    /// that do go through [`Table::update`].
    pub fn get_mut(&mut self, key: &FlowKey) -> Option<&mut F> {
        self.map.get_mut(key)
    }

    /// Starts following `key` as `flow`; false (and nothing changes) if it
    /// is followed already or the table is full.
    pub fn insert(&mut self, key: FlowKey, flow: F) -> bool {
        if self.map.len() >= self.cap || self.map.contains_key(&key) {
            return false;
        }
        self.totals.count(&flow, 1);
        self.map.insert(key, flow);
        true
    }

    /// Changes `key` with `change`, keeping the totals right.
    pub fn update(&mut self, key: &FlowKey, change: impl FnOnce(&mut F)) {
        let Some(f) = self.map.get_mut(key) else {
            return;
        };
        self.totals.count(f, -1);
        change(f);
        self.totals.count(f, 1);
    }

    /// Stops following `key`; returns what it was.
    pub fn remove(&mut self, key: &FlowKey) -> Option<F> {
        let f = self.map.remove(key)?;
        self.totals.count(&f, -1);
        Some(f)
    }

    /// Visits every connection in key order; `visit` may change it in
    /// place and returns false to drop it (its share is removed at once,
    /// in key order). Then [`Totals::after_sweep`].
    pub fn sweep(&mut self, mut visit: impl FnMut(&mut F) -> bool) {
        let totals = &mut self.totals;
        self.map.retain(|_, f| {
            let keep = visit(f);
            if !keep {
                totals.count(f, -1);
            }
            keep
        });
        self.totals.after_sweep(self.map.values());
    }
}

impl<F, T> Deref for Table<F, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.totals
    }
}

/// `sign` applied to a count: +1 or −1, saturating at 0.
pub(super) fn add(v: &mut usize, sign: i64) {
    *v = if sign > 0 {
        v.saturating_add(1)
    } else {
        v.saturating_sub(1)
    };
}

/// `sign · x` added to a running sum of non-negative terms, never below 0,
/// and exactly 0 once `n`, the terms left, is 0.
pub(super) fn add_sum(sum: &mut f64, n: usize, sign: i64, x: f64) {
    *sum = (*sum + sign as f64 * x).max(0.0);
    if n == 0 {
        *sum = 0.0;
    }
}

/// How long four full-size packets take at `rate` (B/ms): a connection
/// told that rate is idle once it has sent nothing for longer.
pub(super) fn packets_at(rate: f64) -> Duration {
    /// A full-size packet, bytes.
    const MTU: f64 = 1500.0;
    Duration::try_from_secs_f64(4.0 * MTU / rate.max(1e-3) / 1e3).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Count {
        n: usize,
        sum: f64,
    }

    impl Totals<f64> for Count {
        fn count(&mut self, x: &f64, sign: i64) {
            add(&mut self.n, sign);
            add_sum(&mut self.sum, self.n, sign, *x);
        }
    }

    fn key(n: u16) -> FlowKey {
        FlowKey {
            sport: n,
            ..FlowKey::default()
        }
    }

    #[test]
    fn totals_follow_changes_and_cap_holds() {
        let mut t: Table<f64, Count> = Table::new(2);
        assert!(t.insert(key(1), 2.0));
        assert!(!t.insert(key(1), 5.0), "no duplicates");
        assert!(t.insert(key(2), 3.0));
        assert!(!t.insert(key(3), 1.0), "full");
        assert_eq!((t.n, t.sum), (2, 5.0));
        t.update(&key(1), |x| *x = 4.0);
        assert_eq!((t.n, t.sum), (2, 7.0));
        t.sweep(|x| *x > 3.5);
        assert_eq!((t.len(), t.n, t.sum), (1, 1, 4.0));
        assert_eq!(t.remove(&key(1)), Some(4.0));
        assert_eq!((t.n, t.sum), (0, 0.0));
    }
}

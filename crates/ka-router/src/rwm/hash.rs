//! The flow table's keyed hash: a folded multiply under a per-instance
//! random key (the construction of foldhash, hashbrown's default hasher).
//!
//! **Why not SipHash.** The table looks a connection up on every packet;
//! SipHash-1-3 over the 13-byte IPv4 key cost about 15 ns of the stage's
//! ~65 ns in-cache work. The fold below is two 64 × 64 → 128-bit
//! multiplies for IPv4 (three for IPv6), a few nanoseconds.
//!
//! **Why collisions cannot be aimed at the table.**
//! * The key is 256 bits drawn from the operating system's random source
//!   once per [`Rwm`](super::Rwm) (through std's `RandomState`, whose own
//!   keys come from it), never derived from anything on the wire, never
//!   written to a log, a metric or a packet. Without it, the bucket and
//!   tag a connection gets are unpredictable, so a stranger choosing
//!   addresses and ports cannot pick connections that land together.
//! * Even a stranger who could would gain little: a lookup reads at most
//!   [`MAX_PROBE`](super::buckets::MAX_PROBE) buckets (64-byte lines), so
//!   no chain makes a packet cost more than that; a new connection that
//!   finds no free entry within that many buckets (after the table has
//!   grown as far as its cap allows) is simply not tracked and counted in
//!   [`RwmStats::refused`](super::RwmStats::refused) — tracked flows are
//!   never displaced by it; and the table never holds more than its
//!   documented cap ([`RwmConfig::max_table_entries`](super::RwmConfig::max_table_entries)).
//!
//! The hash is not a MAC: its output is only ever used inside the process,
//! to place and find entries.

use std::hash::{BuildHasher, RandomState};

use super::segment::ConnKey;

/// `a · b` as a 128-bit product, its halves xored: the mixing step of
/// foldhash / wyhash.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// A keyed hash of [`ConnKey`]s (see the module docs).
#[derive(Clone)]
pub(crate) struct KeyedHash {
    k: [u64; 4],
}

impl std::fmt::Debug for KeyedHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.write_str("KeyedHash(..)")
    }
}

impl KeyedHash {
    /// A hash under a fresh random key.
    pub(crate) fn random() -> Self {
        let s = RandomState::new();
        Self {
            k: [0x243f_6a88_85a3_08d3_u64, 1, 2, 3].map(|i| s.hash_one(i)),
        }
    }

    /// The 64-bit fingerprint of `key`.
    #[inline]
    pub(crate) fn hash(&self, key: &ConnKey) -> u64 {
        let [k0, k1, k2, k3] = self.k;
        match *key {
            ConnKey::V4 { low, high } => fold(fold(low ^ k0, high ^ k1) ^ k2, k3 ^ 4),
            ConnKey::V6 { low, high, ports } => {
                let a = fold((low as u64) ^ k0, ((low >> 64) as u64) ^ k1);
                let b = fold((high as u64) ^ k2, ((high >> 64) as u64) ^ k3);
                fold(a ^ ((u64::from(ports) << 8) | 6) ^ k1, b ^ k2)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_deterministic_and_spread() {
        let h = KeyedHash::random();
        let other = KeyedHash::random();
        let key = |i: u64| ConnKey::V4 {
            low: (0x0a00_0001 << 16) | 443,
            high: ((0x0a01_0000 + i) << 16) | (20_000 + i),
        };
        assert_eq!(h.hash(&key(7)), h.hash(&key(7)));
        assert_ne!(h.hash(&key(7)), other.hash(&key(7)), "per-instance key");
        // 4096 neighbouring connections: distinct fingerprints, and the
        // top 12 bits (a bucket index) hit most of the 4096 values.
        let fps: Vec<u64> = (0..4096).map(|i| h.hash(&key(i))).collect();
        let mut sorted = fps.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), fps.len());
        let mut top: Vec<u64> = fps.iter().map(|f| f >> 52).collect();
        top.sort_unstable();
        top.dedup();
        assert!(top.len() > 2400, "{}", top.len()); // 4096·(1−1/e) ≈ 2589
        // IPv4 and IPv6 keys of the same numbers differ.
        let v6 = ConnKey::V6 {
            low: 1,
            high: 2,
            ports: 3,
        };
        let v6b = ConnKey::V6 {
            low: 1,
            high: 2,
            ports: 4,
        };
        assert_ne!(h.hash(&v6), h.hash(&v6b));
    }
}

//! The keyed 5-tuple hash of the port's fixed-size flow tables (the
//! `--stamp-every` table, `signal::every`, and the flow judge, `judge`):
//! keys drawn from the port's seed (so the simulator repeats itself) with a
//! domain tag per table, so a stranger who does not know the seed cannot
//! aim flows at one slot, and two tables never share keys.

use ka_codec::wire::FlowKey;

/// Four keys and the hash of a [`FlowKey`] under them.
#[derive(Clone)]
pub(crate) struct FlowHasher {
    keys: [u64; 4],
}

impl FlowHasher {
    /// Keys from `seed` xor the table's domain `tag`.
    pub(crate) fn new(seed: u64, tag: u64) -> Self {
        let mut state = seed ^ tag;
        Self {
            keys: [(); 4].map(|()| splitmix(&mut state) | 1),
        }
    }

    /// The 64-bit hash of `key`.
    #[inline]
    pub(crate) fn hash(&self, key: &FlowKey) -> u64 {
        let [k0, k1, k2, k3] = self.keys;
        let s = u128::from_le_bytes(key.src);
        let d = u128::from_le_bytes(key.dst);
        let tail =
            (u64::from(key.sport) << 24) | (u64::from(key.dport) << 8) | u64::from(key.proto);
        let h = fold((s as u64) ^ k0, ((s >> 64) as u64) ^ k1);
        let h = fold(h ^ (d as u64), ((d >> 64) as u64) ^ k2);
        fold(h ^ tail, k3)
    }
}

/// `a · b` as a 128-bit product, its halves xored (foldhash's mixing
/// step).
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// SplitMix64's step: the hash keys from the seed.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

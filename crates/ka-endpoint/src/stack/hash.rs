//! The hasher of the stack's address-keyed maps (the 4-tuple table, the
//! reassembly table): std's randomly keyed SipHash-1-3, as `HashMap`'s
//! default, so a peer that picks addresses and ports still cannot aim for
//! collisions (HashDoS), but fed in **one** `write`.
//!
//! Hashing a `(SocketAddr, SocketAddr)` the derived way makes about a dozen
//! small `write` calls (enum discriminants, octets, ports), each a pass
//! through SipHash's buffering; a packet looks its tuple up two or three
//! times. [`OneWrite`] collects those pieces in a buffer on the stack and
//! hashes them at `finish` as a single byte string: SipHash sees the very
//! same bytes in the same order, so the keyed function (and its collision
//! resistance) is unchanged; only the per-call overhead goes.

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::hash::{BuildHasher, Hasher};

/// Bytes buffered before they are handed to SipHash (a 4-tuple of IPv6
/// socket addresses with its discriminants is about 60).
const BUF: usize = 80;

/// A [`BuildHasher`] with a random key (per map, like [`RandomState`]) whose
/// hashers feed SipHash once.
#[derive(Debug, Clone, Default)]
pub struct OneWriteState(RandomState);

impl BuildHasher for OneWriteState {
    type Hasher = OneWrite;

    fn build_hasher(&self) -> OneWrite {
        OneWrite {
            inner: self.0.build_hasher(),
            buf: [0; BUF],
            len: 0,
        }
    }
}

/// A hasher that buffers what it is given and runs SipHash over it at
/// [`Hasher::finish`].
#[derive(Debug, Clone)]
pub struct OneWrite {
    inner: DefaultHasher,
    buf: [u8; BUF],
    len: usize,
}

impl Hasher for OneWrite {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
            return;
        }
        // More than the buffer holds: hand over what is buffered, then
        // this piece (the same byte stream either way).
        self.inner.write(self.buf.get(..self.len).unwrap_or(&[]));
        self.len = 0;
        self.inner.write(bytes);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.inner.clone();
        h.write(self.buf.get(..self.len).unwrap_or(&[]));
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;
    use std::net::SocketAddr;

    fn hash_of<T: Hash>(s: &OneWriteState, v: &T) -> u64 {
        s.hash_one(v)
    }

    /// The same byte stream as SipHash fed piece by piece, and keyed: the
    /// same value under one state, another under another state.
    #[test]
    fn same_stream_as_siphash_and_keyed() {
        let s = OneWriteState::default();
        let t: (SocketAddr, SocketAddr) = (
            "[2001:db8::1]:443".parse().unwrap(),
            "[2001:db8::2]:50000".parse().unwrap(),
        );
        // `RandomState::hash_one`: the derived piece-by-piece writes
        assert_eq!(hash_of(&s, &t), s.0.hash_one(t));
        // longer than the buffer: still the same stream
        let long = [7u8; 3 * BUF];
        let mut plain = s.0.build_hasher();
        plain.write(&long[..10]);
        plain.write(&long[10..]);
        let mut one = s.build_hasher();
        one.write(&long[..10]);
        one.write(&long[10..]);
        assert_eq!(one.finish(), plain.finish());
        let other = OneWriteState::default();
        assert_ne!(hash_of(&s, &t), hash_of(&other, &t));
    }
}

//! RFC 6528 initial sequence numbers and other keyed hashes.
//!
//! `ISN = M + F(local IP, local port, remote IP, remote port, secret)` where
//! `M` is a 4-microsecond clock (here: time since the stack's epoch, so it is
//! as deterministic as the `Instant`s the caller passes in) and `F` is
//! SipHash-2-4 keyed with the stack's secret (`StackConfig::isn_secret`).
//! The same keyed hash also derives per-connection timestamp offsets
//! (RFC 7323 §5.4 recommends randomising them) and ephemeral ports
//! (RFC 6056 algorithm 3).
//!
//! SipHash-2-4 is implemented here from the paper (Aumasson & Bernstein
//! 2012) to avoid a dependency; it is checked against the paper's test vector.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

/// SipHash-2-4 of `data` under the 128-bit `key`.
pub fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let k0 = u64::from_le_bytes(first8(&key[..8]));
    let k1 = u64::from_le_bytes(first8(&key[8..]));
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let m = u64::from_le_bytes(first8(chunk));
        v[3] ^= m;
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^= m;
    }
    let rest = chunks.remainder();
    let mut last = [0u8; 8];
    for (dst, src) in last.iter_mut().zip(rest) {
        *dst = *src;
    }
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    sip_round(&mut v);
    sip_round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        sip_round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

fn first8(s: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (d, b) in out.iter_mut().zip(s) {
        *d = *b;
    }
    out
}

#[inline]
fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

/// Keyed hash of a 4-tuple plus a one-byte domain separator.
pub fn tuple_hash(secret: &[u8; 16], domain: u8, local: SocketAddr, remote: SocketAddr) -> u64 {
    let mut buf = [0u8; 1 + 2 * (16 + 2)];
    let mut n = 0;
    let mut put = |bytes: &[u8]| {
        for b in bytes {
            if let Some(slot) = buf.get_mut(n) {
                *slot = *b;
                n += 1;
            }
        }
    };
    put(&[domain]);
    for addr in [local, remote] {
        match addr.ip() {
            IpAddr::V4(a) => put(&a.octets()),
            IpAddr::V6(a) => put(&a.octets()),
        }
        put(&addr.port().to_be_bytes());
    }
    siphash24(secret, buf.get(..n).unwrap_or(&[]))
}

/// RFC 6528 ISN generator.
#[derive(Debug, Clone)]
pub struct IsnGenerator {
    secret: [u8; 16],
    epoch: Instant,
}

impl IsnGenerator {
    /// A generator whose 4 µs clock `M` counts from `epoch`.
    pub fn new(secret: [u8; 16], epoch: Instant) -> Self {
        IsnGenerator { secret, epoch }
    }

    /// `M + F(4-tuple, secret)`.
    pub fn isn(&self, now: Instant, local: SocketAddr, remote: SocketAddr) -> u32 {
        let m = (now.saturating_duration_since(self.epoch).as_micros() / 4) as u32;
        let f = tuple_hash(&self.secret, 0, local, remote) as u32;
        m.wrapping_add(f)
    }

    /// A per-connection timestamp offset (RFC 7323 §5.4).
    pub fn ts_offset(&self, local: SocketAddr, remote: SocketAddr) -> u32 {
        tuple_hash(&self.secret, 1, local, remote) as u32
    }

    /// The secret.
    pub fn secret(&self) -> &[u8; 16] {
        &self.secret
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn siphash_paper_vector() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let msg: Vec<u8> = (0u8..15).collect();
        assert_eq!(siphash24(&key, &msg), 0xa129_ca61_49be_45e5);
    }

    #[test]
    fn siphash_empty_vector() {
        // first entry of the reference vectors (64-bit output, empty input)
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(siphash24(&key, &[]), 0x726f_db47_dd0e_0e31);
    }

    #[test]
    fn isn_depends_on_tuple_secret_and_clock() {
        let t0 = Instant::now();
        let g = IsnGenerator::new([7; 16], t0);
        let a: SocketAddr = "10.0.0.1:1000".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:80".parse().unwrap();
        let c: SocketAddr = "10.0.0.2:81".parse().unwrap();
        assert_ne!(g.isn(t0, a, b), g.isn(t0, a, c));
        let g2 = IsnGenerator::new([8; 16], t0);
        assert_ne!(g.isn(t0, a, b), g2.isn(t0, a, b));
        // M advances by 1 every 4 µs
        let later = g.isn(t0 + Duration::from_micros(400), a, b);
        assert_eq!(later.wrapping_sub(g.isn(t0, a, b)), 100);
        // deterministic
        assert_eq!(
            g.isn(t0, a, b),
            IsnGenerator::new([7; 16], t0).isn(t0, a, b)
        );
    }
}

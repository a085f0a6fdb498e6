//! Deterministic test payload, shared by the router's and the endpoint's
//! real-network tests (the endpoint `#[path]`-includes this file).

/// Deterministic test payload: xorshift64 bytes.
pub struct Payload(u64);

impl Payload {
    /// A fresh generator.
    pub fn new() -> Self {
        Payload(0x9E37_79B9_7F4A_7C15)
    }

    /// Fill `buf` with the next bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
    }
}

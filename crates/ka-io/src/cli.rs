//! What the `ka-router` and `ka-endpoint` binaries share: logging set-up,
//! the shutdown signal, and the deterministic payload `ka-endpoint send
//! --bytes` transmits (the real-network tests send the same bytes).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// Installs the global `tracing` subscriber: to stderr, filtered by
/// `RUST_LOG` (default `info`), coloured only when stderr is a terminal.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Completes on SIGINT or SIGTERM. If SIGTERM cannot be watched, calls
/// `cannot_watch_sigterm` with the error (the binaries log it under their
/// own target) and completes on SIGINT alone.
pub async fn shutdown_signal(cannot_watch_sigterm: impl FnOnce(std::io::Error)) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            cannot_watch_sigterm(e);
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Deterministic payload: xorshift64 bytes from a fixed seed, what
/// `ka-endpoint send --bytes` transmits.
#[derive(Debug, Clone)]
pub struct Payload(u64);

impl Payload {
    /// A fresh generator (always the same stream).
    pub fn new() -> Self {
        Payload(0x9E37_79B9_7F4A_7C15)
    }

    /// Fills `buf` with the next bytes of the stream.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            let bytes = x.to_le_bytes();
            let n = chunk.len();
            chunk.copy_from_slice(bytes.get(..n).unwrap_or(&[]));
        }
    }
}

impl Default for Payload {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Payload;

    #[test]
    fn payload_is_one_stream_whatever_the_word_aligned_chunking() {
        let mut whole = vec![0u8; 1000];
        Payload::new().fill(&mut whole);
        let mut pieces = vec![0u8; 1000];
        let mut p = Payload::default();
        for chunk in pieces.chunks_mut(24) {
            p.fill(chunk);
        }
        assert_eq!(whole, pieces);
        // Pinned: the tests of both crates send these bytes, and so does
        // `ka-endpoint send --bytes`.
        assert_eq!(whole[..8], 0xdc1b_77ae_0bf3_4dad_u64.to_le_bytes());
    }
}

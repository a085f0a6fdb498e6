//! # ka-endpoint — the Kick-Ass end host
//!
//! This crate will hold the sans-IO userspace TCP of DESIGN §5: one state
//! machine per connection (handshake, RFC 6298 RTO, NewReno/CUBIC behind a
//! congestion-control trait, pacing), a `Stack` that demultiplexes and
//! reassembles IP fragments while recording leading-fragment lengths, the
//! receiver's KA-Rate echo, and the sender's KA/TCP mode machine. A tokio/TUN
//! driver and the simulator both drive the same core.

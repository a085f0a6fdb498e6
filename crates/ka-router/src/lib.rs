//! # ka-router — the Kick-Ass router data plane
//!
//! This crate will hold the sans-IO router core of DESIGN §4: one `Port` per
//! direction that parses and classifies packets, learns the path RTT from
//! RTT-indicator packets, queues drop-tail, serialises at capacity C, runs a
//! pluggable `RateController` (RCP by default) and, on dequeue, fragments
//! IPv4/IPv6 packets so that the leading fragment's payload length encodes the
//! fair-share rate. A thin tokio/TUN binary (`ka-router`) and the simulator
//! both drive the same core. Nothing here reads a clock or touches a socket.

//! Host package for the runnable examples in this directory
//! (`cargo run -p ka-examples --example NAME`).

/// The repository README's Rust examples, compiled as doctests so they
/// cannot rot (`cargo test -p ka-examples --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

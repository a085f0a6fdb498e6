//! Host package for the runnable examples in this directory
//! (`cargo run -p ka-examples --example NAME`).

/// The repository README's Rust examples, compiled as doctests so they
/// cannot rot (`cargo test -p ka-examples --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the user manual's end-host page
/// (`docs/usage/endpoint.md`: `KaStream` in a tokio program), compiled as
/// doctests like the README's.
#[cfg(doctest)]
#[doc = include_str!("../docs/usage/endpoint.md")]
pub struct EndpointUsageDoctests;

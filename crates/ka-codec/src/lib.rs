//! ka-codec (being written)
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    warn(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

#[cfg(feature = "std")]
extern crate std;

pub mod options;
pub mod rcp_option;
pub mod rtt;
pub mod scale;
pub mod units;
pub mod wire;

#![no_main]
//! The differential oracle on arbitrary bytes: `ka_codec::wire` and
//! `etherparse` must agree on every field both expose, and reject the same
//! packets except for the documented differences (see
//! `crates/ka-codec/tests/oracle/diff.rs`).
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/ka-codec/tests/oracle/diff.rs"]
mod diff;

fuzz_target!(|data: &[u8]| {
    diff::check_ipv4(data);
    diff::check_ipv6(data);
    diff::check_tcp(data);
    diff::check_tcp_options(data.get(..40).unwrap_or(data));
    diff::check_option_iter(data.get(..40).unwrap_or(data));
    diff::check_segment(data);
});

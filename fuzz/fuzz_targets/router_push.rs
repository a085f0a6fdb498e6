#![no_main]
//! Fuzz target (being written).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|_data: &[u8]| {});

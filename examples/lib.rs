//! Host package for the runnable examples in this directory
//! (`cargo run -p ka-examples --example NAME`).

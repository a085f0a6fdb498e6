//! # ka-sim — a deterministic simulator on the real cores
//!
//! This crate will hold the discrete-event simulator of DESIGN §6: an
//! integer-nanosecond event engine with FIFO tie-breaking, links with rate
//! and delay, and nodes that run the very same `ka-router` ports and
//! `ka-endpoint` stacks used on real networks, plus the workloads,
//! topologies and outputs (`flows.csv`, `series.csv`, `summary.json`, SVG
//! plots) needed to reproduce the paper's figures.

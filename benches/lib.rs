//! Host package for ka's criterion benchmarks (`cargo bench -p ka-benches`).

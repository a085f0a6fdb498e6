//! ka-codec: rate ↔ length, table path vs float path, against a bare array
//! lookup as the yardstick (see docs/PERFORMANCE.md, section ka-codec).
//!
//! `cargo bench -p ka-benches --bench codec`
//!
//! Every benchmark does the same per-iteration bookkeeping (advance a cursor
//! through 1024 precomputed inputs, `black_box` in and out), so the numbers
//! differ only by the work being measured.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ka_codec::{Code, RateTable, Scale};

const N: usize = 1024;

/// Deterministic splitmix64.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Log-uniform rates across the paper scale (15 B/ms … 1.3e6 B/ms) and valid
/// codes, in random order so the branch predictor cannot learn them.
fn inputs() -> (Vec<f64>, Vec<Code>) {
    let mut s = 0x4B41;
    let lo = 15.0_f64.ln();
    let hi = 1.4e6_f64.ln();
    let rates = (0..N)
        .map(|_| {
            let u = (splitmix(&mut s) >> 11) as f64 / (1_u64 << 53) as f64;
            (lo + u * (hi - lo)).exp()
        })
        .collect();
    let codes = (0..N)
        .map(|_| Code::from_wire(3 + (splitmix(&mut s) % 183) as u8).expect("valid code"))
        .collect();
    (rates, codes)
}

fn bench(c: &mut Criterion) {
    let (rates, codes) = inputs();
    let table = RateTable::paper();
    let scale = Scale::PAPER;
    let mut g = c.benchmark_group("codec");

    // Yardstick: one indexed load from a 256-entry f64 array.
    let array: [f64; 256] = core::array::from_fn(|i| i as f64 * 1.5);
    let wires: Vec<u8> = codes.iter().map(|c| c.wire()).collect();
    g.bench_function("bare_array_lookup", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % N;
            black_box(array[usize::from(black_box(wires[i]))])
        })
    });
    g.bench_function("table_decode", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % N;
            black_box(table.decode(black_box(codes[i])))
        })
    });
    g.bench_function("table_encode", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % N;
            black_box(table.encode(black_box(rates[i])))
        })
    });
    g.bench_function("float_decode", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % N;
            black_box(scale.decode(black_box(codes[i])))
        })
    });
    g.bench_function("float_encode", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % N;
            black_box(scale.encode(black_box(rates[i])))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

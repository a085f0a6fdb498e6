//! Prints the paper's rate table: every code with its payload length `L`, the
//! wire byte `L/8`, the rate in B/ms and in bit/s, and the range of rates that
//! encode to it (each code covers `[R(L), R(L+8))`).
//!
//! `cargo run -p ka-examples --example rate_table`

use ka_codec::{Rate, RateTable, bytes_per_ms_to_bps};

fn main() {
    let table = RateTable::paper();
    let scale = table.scale();
    println!(
        "Kick-Ass rate table: R(L) = {} * e^(L/{}) B/ms, L = {}..={} step {} ({} codes)",
        scale.b,
        scale.a,
        scale.min_len,
        scale.max_len,
        scale.step,
        table.code_count()
    );
    println!(
        "Rates below R({}) are not encodable (the router does not fragment).",
        scale.min_len
    );
    println!();
    println!(
        "{:>5} {:>4} {:>14} {:>15}   {:>19} .. below",
        "L", "L/8", "R [B/ms]", "R", "covers [bit/s] from"
    );
    for code in table.codes() {
        let r = table.decode(code);
        let upper = scale
            .next_code(code)
            .map(|next| bytes_per_ms_to_bps(table.decode(next)));
        let upper = match upper {
            Some(bps) => format!("{bps:.0}"),
            None => "(and above)".to_owned(),
        };
        println!(
            "{:>5} {:>4} {:>14.4} {:>15}   {:>19.0} .. {}",
            code.len(),
            code.wire(),
            r,
            Rate::from_bytes_per_ms(r),
            bytes_per_ms_to_bps(r),
            upper
        );
    }
}

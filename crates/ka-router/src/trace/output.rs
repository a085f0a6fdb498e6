//! `flows.csv`, `series.csv` (ka-sim's columns) and `trace_flows.csv`.

use std::fmt::Write as _;

use super::flows::{Flow, fmt_secs, fmt_val};

/// The header of `flows.csv`: ka-sim's (`ka_sim::results::output::FLOWS_HEADER`;
/// a ka-sim test checks they stay equal).
pub const FLOWS_HEADER: &str =
    "flow,kind,size_pkts,size_bytes,start_s,end_s,fct_s,slowdown,ka_time_frac";
/// The header of `series.csv`: ka-sim's long format
/// (`ka_sim::results::output::SERIES_HEADER`).
pub const SERIES_HEADER: &str = "time_s,metric,entity,value";
/// The header of `trace_flows.csv` (what a capture shows beyond ka-sim's
/// columns).
pub const TRACE_FLOWS_HEADER: &str = "flow,src,sport,dst,dport,kind,sender_mode,handshake_rtt_ms,\
data_pkts,df_data_pkts,retransmits,leading_fragments,min_rate_bps,max_rate_bps,rtt_indicators,\
echoes,fresh_echoes,rcp_options,xcp_options,rcp_echoes,xcp_echoes,wire_bytes";

/// Series metrics, in the order they are written per (bin, flow). The
/// first ones are ka-sim's names with the same meaning seen from a
/// capture; the rest exist only here.
pub const METRICS: [&str; 10] = [
    "wire_bps",
    "throughput_bps",
    "rate_bps",
    "ka_mode",
    "echo_rate_bps",
    "fresh_echoes",
    "rtt_indicator_ms",
    "df_frac",
    "rcp_rate_bps",
    "xcp_feedback_bytes",
];

/// Bytes of sequence space the sender covered (first seen to highest end).
fn size_bytes(f: &Flow) -> Option<u64> {
    let d = &f.dir[f.sender()];
    match (d.seq_first, d.seq_end) {
        (Some(a), Some(b)) => {
            // The SYN takes one sequence number.
            let syn = u64::from(f.syn[f.sender()].is_some());
            Some(u64::from(b.wrapping_sub(a)).saturating_sub(syn))
        }
        _ => None,
    }
}

/// Fraction of the flow's bins in which the sender was in KA mode.
pub fn ka_time_frac(f: &Flow) -> f64 {
    let m = f.inferred_mode();
    if m.is_empty() {
        return 0.0;
    }
    m.iter().filter(|(_, ka)| *ka).count() as f64 / m.len() as f64
}

/// `flows.csv`. start = the SYN (else the first packet), end = the
/// sender's FIN (else the last packet), slowdown empty (the capture does
/// not know the path's capacity).
pub fn flows_csv(flows: &[Flow]) -> String {
    let mut s = String::new();
    s.push_str(FLOWS_HEADER);
    s.push('\n');
    for f in flows {
        let snd = f.sender();
        let start = f.syn[snd].unwrap_or(f.first);
        // A capture whose clock stepped back can stamp the FIN before the
        // SYN: the flow then ends where it starts.
        let end = f.dir[snd].fin.unwrap_or(f.last).max(start);
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},,{}",
            f.id,
            f.kind(),
            f.dir[snd].data_pkts,
            size_bytes(f).map(|b| b.to_string()).unwrap_or_default(),
            fmt_secs(start),
            fmt_secs(end),
            fmt_secs(end - start),
            fmt_val(ka_time_frac(f)),
        );
    }
    s
}

/// The sender's mode over the flow: `ka`, `tcp`, `mixed`, or `-` for
/// flows that did not negotiate KA.
pub fn sender_mode(f: &Flow) -> &'static str {
    let m = f.inferred_mode();
    if m.is_empty() {
        return "-";
    }
    match m.iter().filter(|(_, ka)| *ka).count() {
        0 => "tcp",
        n if n == m.len() => "ka",
        _ => "mixed",
    }
}

/// `trace_flows.csv`: one row per flow, src = the data sender.
pub fn trace_flows_csv(flows: &[Flow]) -> String {
    let mut s = String::new();
    s.push_str(TRACE_FLOWS_HEADER);
    s.push('\n');
    for f in flows {
        let snd = f.sender();
        let (src, dst) = f.ends();
        let d = &f.dir[snd];
        let r = &f.dir[snd.other()];
        let (lo, hi) = d
            .rate_range
            .map_or((String::new(), String::new()), |(a, b)| {
                (fmt_val(a), fmt_val(b))
            });
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            f.id,
            src.0,
            src.1,
            dst.0,
            dst.1,
            f.kind(),
            sender_mode(f),
            f.handshake_rtt
                .map(|r| fmt_val(r * 1e3))
                .unwrap_or_default(),
            d.data_pkts,
            d.df_data_pkts,
            d.retransmits,
            d.leading,
            lo,
            hi,
            d.indicators,
            r.echoes,
            r.fresh_echoes,
            d.rcp_options,
            d.xcp_options,
            r.rcp_echoes,
            r.xcp_echoes,
            d.wire_bytes + r.wire_bytes,
        );
    }
    s
}

/// One flow's series rows: (bin, metric index, value), metric indices
/// into [`METRICS`]. Values are from the sender's packets, except the
/// echoes (on the receiver's).
pub fn flow_rows(f: &Flow, bin_s: f64) -> Vec<(u64, usize, f64)> {
    let snd = f.sender();
    let rcv = snd.other();
    let mut rows = Vec::new();
    let modes: std::collections::HashMap<u64, bool> = f.inferred_mode().into_iter().collect();
    let bps = |bytes: u64| bytes as f64 * 8.0 / bin_s;
    let mut keys: Vec<u64> = f.bins.keys().copied().collect();
    keys.extend(modes.keys().copied());
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let b = f.bins.get(&k);
        let mut push = |m: usize, v: Option<f64>| {
            if let Some(v) = v {
                rows.push((k, m, v));
            }
        };
        push(0, Some(b.map_or(0.0, |b| bps(b.wire[snd]))));
        push(1, Some(b.map_or(0.0, |b| bps(b.advance[snd]))));
        if let Some(b) = b {
            push(2, b.signal_min[snd]);
        }
        push(3, modes.get(&k).map(|&ka| if ka { 1.0 } else { 0.0 }));
        if let Some(b) = b {
            push(4, b.echo[rcv]);
            push(5, (b.fresh[rcv] > 0).then_some(f64::from(b.fresh[rcv])));
            push(6, b.indicator_ms[snd]);
            push(
                7,
                (b.data[snd] > 0).then(|| f64::from(b.df_data[snd]) / f64::from(b.data[snd])),
            );
            push(8, b.rcp[snd]);
            push(9, b.xcp_feedback[snd].map(|x| x as f64));
        }
    }
    rows
}

/// `series.csv`: rows in time order (bin end), then flow, then metric;
/// entity `flow:<id>`.
pub fn series_csv(flows: &[Flow], bin_s: f64) -> String {
    let mut all: Vec<(u64, usize, usize, f64)> = Vec::new();
    for f in flows {
        for (k, m, v) in flow_rows(f, bin_s) {
            all.push((k, f.id, m, v));
        }
    }
    all.sort_by_key(|r| (r.0, r.1, r.2));
    let mut s = String::with_capacity(40 * (all.len() + 1));
    s.push_str(SERIES_HEADER);
    s.push('\n');
    for (k, id, m, v) in all {
        let _ = writeln!(
            s,
            "{},{},flow:{id},{}",
            fmt_secs((k + 1) as f64 * bin_s),
            METRICS.get(m).copied().unwrap_or(""),
            fmt_val(v)
        );
    }
    s
}

//! A real run in the simulator's form (`ka_sim::results::RunResult`), so that
//! the simulator's writers (`flows.csv`, `series.csv`, `summary.json`, the
//! per-run plots) and the experiment's headlines, checks and figures apply
//! to it unchanged.
//!
//! * Flows: one per `start` the senders printed, numbered in start order;
//!   the start is the sender application's (relative to time zero), the end
//!   the receiver's read of the last byte — counted only if it falls within
//!   the run, as in the simulator, whose flows still open at the end have
//!   no end. A flow's time in KA mode is the sender's.
//! * Series: per tracked flow the bytes the receiver read per 100 ms bin
//!   (`throughput_bps`, zero-filled from start to end), and the router's
//!   per-publication bins ([`crate::metrics::push_rows`]).
//! * Hop `bottleneck`: the router's final counters and sojourn histogram.

use std::collections::HashMap;

use anyhow::bail;
use ka_sim::engine::{EngineStats, NodeId};
use ka_sim::model::world::{FlowRecord, PathInfo};
use ka_sim::results::metrics::{Metric, Series};
use ka_sim::results::{HopResult, RunResult, offered_load};
use ka_sim::scenario::{Scenario, Topology};

use crate::hosts::BIN_NS;
use crate::metrics::{self, Poller};
use crate::wire::Record;

/// What the receiver said about a flow: end (ns), bytes, per-bin bytes.
type Ended = (u64, u64, Vec<(u64, u64)>);

fn records(lines: &[String]) -> Vec<Record> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str(l.trim()).ok())
        .collect()
}

/// Builds the run's results (see the module docs).
pub fn run_result(
    s: &Scenario,
    t0: u64,
    sender_lines: &[String],
    receiver_lines: &[String],
    poller: &Poller,
    wall_seconds: f64,
) -> anyhow::Result<RunResult> {
    let Topology::Dumbbell(d) = &s.topology else {
        bail!("not a dumbbell");
    };
    let Some(g) = s.groups.first() else {
        bail!("no sender group");
    };
    let duration_ns = (s.duration_s * 1e9) as u64;
    let capacity_bps = (d.capacity_mbps * 1e6).round() as u64;
    let rel = |t: u64| t.saturating_sub(t0);
    let mut starts = Vec::new();
    let mut dones: HashMap<(u32, u32), (u64, Option<f64>)> = HashMap::new();
    for r in records(sender_lines) {
        match r {
            Record::Start {
                sender,
                seq,
                size_pkts,
                size_bytes,
                start_ns,
            } => starts.push((start_ns, sender, seq, size_pkts, size_bytes)),
            Record::Done {
                sender,
                seq,
                stop_ns,
                ka_time_s,
                ..
            } => {
                dones.insert((sender, seq), (stop_ns, ka_time_s));
            }
            _ => {}
        }
    }
    let mut ends: HashMap<(u32, u32), Ended> = HashMap::new();
    for r in records(receiver_lines) {
        if let Record::End {
            sender,
            seq,
            size_bytes,
            end_ns,
            bins,
            ..
        } = r
        {
            ends.insert((sender, seq), (end_ns, size_bytes, bins));
        }
    }
    starts.sort();
    let mut series = Series::new(BIN_NS);
    let mut flows = Vec::with_capacity(starts.len());
    for (id, &(start_ns, sender, seq, size_pkts, size_bytes)) in starts.iter().enumerate() {
        let end = ends
            .get(&(sender, seq))
            .filter(|e| e.1 == size_bytes && rel(e.0) <= duration_ns)
            .map(|e| rel(e.0));
        let (stop, ka_time) = dones
            .get(&(sender, seq))
            .map_or((None, None), |&(t, k)| (Some(rel(t)), k));
        let tracked = (sender as usize) < g.track;
        if tracked && let Some(e) = ends.get(&(sender, seq)) {
            let ent = series.entity(&format!("flow:{id}"));
            let first = rel(start_ns) / BIN_NS;
            let last = end.unwrap_or(duration_ns).div_ceil(BIN_NS).max(first + 1);
            let by_bin: HashMap<u64, u64> = e.2.iter().copied().collect();
            for b in first..last {
                let t = (b + 1) * BIN_NS;
                if t > duration_ns {
                    break;
                }
                let bytes = by_bin.get(&b).copied().unwrap_or(0);
                series.push(
                    t,
                    Metric::ThroughputBps,
                    ent,
                    bytes as f64 * 8.0 / (BIN_NS as f64 / 1e9),
                );
            }
        }
        flows.push(FlowRecord {
            id: id as u32,
            kind: g.kind,
            group: 0,
            sender: NodeId(sender),
            tracked,
            size_pkts: Some(size_pkts),
            size_bytes: Some(size_bytes),
            start: rel(start_ns),
            end,
            stop,
            received: if end.is_some() { size_bytes } else { 0 },
            bin_bytes: 0,
            bin_wire_bytes: 0,
            ka_mode: false,
            ka_time: ka_time.map_or(0, |k| (k * 1e9) as u64),
            // The real run's endpoints report time in KA mode, not when
            // they first entered it.
            ka_first: None,
            // The real run's endpoints do not report their timeouts.
            rtos: 0,
            path: PathInfo {
                base_rtt: (d.rtt_ms * 1e6).round() as u64,
                bottleneck_bps: capacity_bps,
                first_hop: 0,
            },
        });
    }
    let ka_mode_frac = metrics::push_rows(
        &mut series,
        &poller.samples,
        t0,
        duration_ns,
        capacity_bps as f64,
        d.port,
    );
    // Rows in time order, as the simulator writes them.
    series.rows.sort_by_key(|r| r.t);
    let hop = HopResult {
        name: "bottleneck".into(),
        capacity_bps,
        port: d.port,
        qdisc: d.queue.name(),
        sojourn: metrics::sojourn(&poller.last),
        forward: metrics::counters(&poller.last, "forward"),
        reverse: metrics::counters(&poller.last, "reverse"),
        ka_mode_frac,
        // The testbed's router runs without --rwm.
        rwm: None,
    };
    let (rho, rho_source) = offered_load(s, &flows);
    Ok(RunResult {
        scenario: s.clone(),
        flows,
        series,
        hops: vec![hop],
        engine: EngineStats::default(),
        sim_seconds: s.duration_s,
        wall_seconds,
        rho,
        rho_source,
        unroutable: 0,
    })
}

//! Running a scenario: build the network, advance the engine bin by bin,
//! sample the series, and collect the results ([`run`],
//! [`run_scenario`]); a long stationary run cut into time segments run in
//! parallel ([`segment`]); parameter sweeps over scenarios ([`sweep`]).

pub mod segment;
pub mod sweep;
#[cfg(test)]
mod testhost;

use std::io::Write;
use std::time::Instant;

use crate::engine::{Clock, SimTime, secs, to_secs};
use crate::model::Host;
use crate::model::net::{self, HostSpec, Network};
use crate::results::metrics::{Metric, Series};
use crate::results::{HopResult, RunResult, offered_load};
use crate::scenario::{PortKind, Scenario, ScenarioError};

/// A progress line on stderr for runs longer than a couple of seconds.
#[derive(Debug)]
pub struct Progress {
    label: String,
    start: Instant,
    last: Instant,
    printed: bool,
}

impl Progress {
    /// Starts the wall clock for a run labelled `label`.
    pub fn new(label: &str) -> Self {
        let now = Instant::now();
        Self {
            label: label.to_string(),
            start: now,
            last: now,
            printed: false,
        }
    }

    fn update(&mut self, sim: SimTime, end: SimTime, events: u64) {
        let now = Instant::now();
        let wall = now.duration_since(self.start).as_secs_f64();
        if wall < 2.0 || now.duration_since(self.last).as_secs_f64() < 1.0 {
            return;
        }
        self.last = now;
        self.printed = true;
        let frac = if end == 0 {
            1.0
        } else {
            sim as f64 / end as f64
        };
        let eta = if frac > 0.0 {
            wall * (1.0 - frac) / frac
        } else {
            0.0
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{}: sim {:.1}/{:.1} s ({:.0}%)  {:.2} M ev/s  ETA {:.0} s   ",
            self.label,
            to_secs(sim),
            to_secs(end),
            100.0 * frac,
            events as f64 / wall / 1e6,
            eta
        );
        let _ = err.flush();
    }

    fn finish(&mut self) {
        if self.printed {
            let _ = writeln!(std::io::stderr().lock());
        }
    }
}

/// Builds and runs `scenario` with hosts from `make_host`.
pub fn run<H, F>(
    scenario: &Scenario,
    make_host: F,
    mut progress: Option<&mut Progress>,
) -> Result<RunResult, ScenarioError>
where
    H: Host,
    F: FnMut(&HostSpec) -> Result<H, ScenarioError>,
{
    crate::scenario::limits::check_memory(scenario, crate::scenario::limits::available_memory())?;
    let wall_start = Instant::now();
    let clock = Clock::new(wall_start);
    let mut net: Network<H> = net::build(scenario, clock, make_host)?;
    crate::model::middlebox::install(&mut net, scenario)?;
    let end = secs(scenario.duration_s);
    let bin = secs(scenario.bin_s).max(1);
    let mut series = Series::new(bin);
    let hop_ent: Vec<(u32, u32)> = net
        .hops
        .iter()
        .map(|h| {
            (
                series.entity(&format!("link:{}", h.name)),
                series.entity(&format!("port:{}", h.name)),
            )
        })
        .collect();
    let mut last_out = vec![0u64; net.hops.len()];
    // Per hop: sojourn (sum ns, count) and marks at the end of the last bin.
    let mut last_sojourn = vec![(0u64, 0u64); net.hops.len()];
    let mut last_marks = vec![0u64; net.hops.len()];
    let mut ka_bins = vec![0u64; net.hops.len()];
    let mut bins = 0u64;
    let mut flow_ent: Vec<Option<u32>> = Vec::new();
    let mut t = 0;
    while t < end {
        let next = (t + bin).min(end);
        net.engine.run_until(next);
        let width = to_secs(next - t);
        bins += 1;
        for i in 0..net.hops.len() {
            let (node, iface) = net.hops[i].fwd;
            let port_kind = net.hops[i].port;
            let Some(router) = net.router_mut(node) else {
                continue;
            };
            // A middlebox's capacity moves: utilisation is of the current C.
            let moving = router.moves_capacity(iface);
            let Some(port) = router.port_mut(iface) else {
                continue;
            };
            let capacity_bps = port.config().capacity_bps;
            port.handle_timeout(clock.instant(next));
            let snap = port.snapshot();
            let soj = *port.sojourn();
            let q = router.take_queue_max(iface).unwrap_or(0);
            net.engine.rearm_node(node);
            let out = snap.counters.bytes_out;
            // Pieces are counted whole when they leave (after the hop's
            // delay), so a bin can see one piece more than C·bin: clamp.
            let util =
                ((out - last_out[i]) as f64 * 8.0 / (capacity_bps as f64 * width)).clamp(0.0, 1.0);
            last_out[i] = out;
            let (link_e, port_e) = hop_ent[i];
            series.push(next, Metric::Utilization, link_e, util);
            if moving {
                series.push(next, Metric::CapacityBps, port_e, capacity_bps as f64);
            }
            series.push(next, Metric::QueuePkts, port_e, q as f64);
            if port_kind == PortKind::Ka {
                let ka = snap.mode == ka_router::Mode::Ka;
                ka_bins[i] += u64::from(ka);
                series.push(next, Metric::KaMode, port_e, f64::from(u8::from(ka)));
            }
            if port_kind != PortKind::Droptail {
                series.push(next, Metric::RateBps, port_e, snap.rate_bps);
            }
            let (sum0, n0) = last_sojourn[i];
            if soj.count > n0 {
                let mean_ns = (soj.sum_ns - sum0) as f64 / (soj.count - n0) as f64;
                series.push(next, Metric::SojournMs, port_e, mean_ns / 1e6);
            }
            last_sojourn[i] = (soj.sum_ns, soj.count);
            let marks = snap.counters.ecn_marks;
            series.push(next, Metric::Marks, port_e, (marks - last_marks[i]) as f64);
            last_marks[i] = marks;
        }
        let world = &mut net.engine.shared;
        for &id in &world.tracked {
            let Some(f) = world.flows.get_mut(id as usize) else {
                continue;
            };
            let done = f.end.or(f.stop);
            if f.start >= next || done.is_some_and(|d| d <= t) {
                continue;
            }
            let idx = id as usize;
            if flow_ent.len() <= idx {
                flow_ent.resize(idx + 1, None);
            }
            let e = *flow_ent[idx].get_or_insert_with(|| series.entity(&format!("flow:{id}")));
            series.push(
                next,
                Metric::ThroughputBps,
                e,
                f.bin_bytes as f64 * 8.0 / width,
            );
            series.push(
                next,
                Metric::WireBps,
                e,
                f.bin_wire_bytes as f64 * 8.0 / width,
            );
            if f.kind == crate::scenario::FlowKind::Ka {
                series.push(next, Metric::KaMode, e, f64::from(u8::from(f.ka_mode)));
            }
        }
        // Only tracked flows count per bin (`World::received`, the hosts'
        // wire counter): resetting every flow ever opened would make each
        // bin cost O(all flows), quadratic in a long Poisson run.
        for &id in &world.tracked {
            if let Some(f) = world.flows.get_mut(id as usize) {
                f.bin_bytes = 0;
                f.bin_wire_bytes = 0;
            }
        }
        t = next;
        if let Some(p) = progress.as_deref_mut() {
            p.update(t, end, net.engine.stats().events);
        }
    }
    if let Some(p) = progress {
        p.finish();
    }
    for &h in &net.hosts.clone() {
        let (node, world) = net.engine.node_and_shared_mut(h);
        if let net::SimNode::Host(host) = node {
            host.finish(end, world);
        }
    }
    let mut unroutable = 0;
    for &r in &net.routers {
        if let Some(r) = net.router(r) {
            unroutable += r.unroutable();
        }
    }
    let hops = net
        .hops
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let counters = |(node, iface): (crate::engine::NodeId, usize)| {
                net.router(node)
                    .and_then(|r| r.port(iface))
                    .map(|p| p.snapshot().counters)
                    .unwrap_or_default()
            };
            let fwd_port = net.router(h.fwd.0).and_then(|r| r.port(h.fwd.1));
            let sojourn = fwd_port.map(|p| *p.sojourn()).unwrap_or_default();
            let qdisc = fwd_port.map_or("droptail", |p| p.queue_discipline().name());
            HopResult {
                name: h.name.clone(),
                capacity_bps: h.capacity_bps,
                qdisc,
                sojourn,
                port: h.port,
                forward: counters(h.fwd),
                reverse: counters(h.rev),
                rwm: net.router(h.rev.0).and_then(|r| r.rwm_stats()),
                ka_mode_frac: if bins == 0 {
                    0.0
                } else {
                    ka_bins[i] as f64 / bins as f64
                },
            }
        })
        .collect::<Vec<_>>();
    let flows = std::mem::take(&mut net.engine.shared.flows);
    let (rho, rho_source) = offered_load(scenario, &flows);
    Ok(RunResult {
        scenario: scenario.clone(),
        flows,
        series,
        hops,
        engine: net.engine.stats(),
        sim_seconds: to_secs(end),
        wall_seconds: wall_start.elapsed().as_secs_f64(),
        rho,
        rho_source,
        unroutable,
    })
}

/// Runs `scenario` with [`HostNode`](crate::model::host::HostNode)s (the real
/// endpoint stack).
pub fn run_scenario(
    scenario: &Scenario,
    progress: Option<&mut Progress>,
) -> Result<RunResult, ScenarioError> {
    run(
        scenario,
        |spec| {
            crate::model::host::HostNode::new(spec, spec.clock)
                .map_err(|e| ScenarioError::Invalid(e.to_string()))
        },
        progress,
    )
}

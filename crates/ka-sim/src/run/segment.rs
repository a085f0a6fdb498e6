//! Time-parallel runs: one long scenario as consecutive time segments
//! simulated at once on several cores, stitched into one [`RunResult`].
//!
//! A stationary workload (Poisson arrivals) whose first `warmup` seconds
//! are discarded anyway can be cut in time: segment i of k simulates its
//! own warm-up, then its share of the measured span, then (all but the
//! last) a *drain* with arrivals going on, so the flows that started in
//! its share complete under the same load as in one long run.
//!
//! ```text
//! measured span S = D − W, split into k shares L_i (every one but the
//! last one drain shorter, so all segments simulate equally long)
//! segment 0:  [0, W + L_0) kept            + drain      (local = global time)
//! segment i:  [0, W) warm-up, [W, W + L_i) kept + drain  (global = local + offset_i)
//! last:       … kept up to its end, D (no drain)
//! ```
//!
//! The stitched result keeps, from every segment, the flows that *started*
//! in its kept window (renumbered in start order) and the series bins that
//! end in it; its port and engine counters are the sums over all segments
//! (warm-ups and drains included: the work done). Flows that started in
//! the first W seconds of segment 0 are in it: the experiment discards
//! them as it would in one long run. Each segment is deterministic (segment
//! 0 has the scenario's seed, segment i a seed mixed from it and i), so
//! the stitched result is too. What differs from one long run: each
//! segment after the first starts from an empty network W seconds before
//! its share (the same transient the warm-up removes in one run), and a
//! flow still running D seconds after its segment's share ended counts as
//! unfinished.
//!
//! Only scenarios without tracked flows can be segmented (their series are
//! per flow id, and ids are renumbered).

use std::time::Instant;

use ka_router::{Counters, SojournHistogram};

use crate::engine::{EngineStats, SimTime, secs, to_secs};
use crate::results::metrics::Series;
use crate::results::{HopResult, RunResult};
use crate::run::{self, Progress};
use crate::scenario::{Scenario, ScenarioError};

/// How to cut a run (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segments {
    /// Number of segments k (1: an ordinary run).
    pub count: usize,
    /// Warm-up W, seconds: discarded at the start of every segment but the
    /// first (which keeps it for the experiment to discard).
    pub warmup_s: f64,
    /// Drain after each share but the last, seconds.
    pub drain_s: f64,
}

impl Segments {
    /// One segment: an ordinary run.
    pub const ONE: Segments = Segments {
        count: 1,
        warmup_s: 0.0,
        drain_s: 0.0,
    };
}

/// The seed of segment `i` (segment 0 keeps the scenario's).
pub fn segment_seed(seed: u64, i: usize) -> u64 {
    if i == 0 {
        return seed;
    }
    let mut z = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One segment's plan: its scenario, global offset and kept window (local
/// seconds).
struct Plan {
    scenario: Scenario,
    offset_s: f64,
    keep_from_s: f64,
    keep_to_s: f64,
}

fn plans(s: &Scenario, seg: &Segments) -> Vec<Plan> {
    let k = seg.count.max(1);
    let w = seg.warmup_s.clamp(0.0, s.duration_s);
    let drain = seg.drain_s.max(0.0);
    // Equal simulated lengths: every share but the last is one drain
    // shorter, Σ shares = D − W.
    let last_share = (s.duration_s - w + (k - 1) as f64 * drain) / k as f64;
    let share = (last_share - drain).max(0.0);
    let mut kept_from_global = 0.0;
    (0..k)
        .map(|i| {
            let last = i + 1 == k;
            let mut scenario = s.clone();
            scenario.seed = segment_seed(s.seed, i);
            let len = if last {
                s.duration_s - w - share * (k - 1) as f64
            } else {
                share
            };
            let kept_end = w + len;
            scenario.duration_s = if last { kept_end } else { kept_end + drain };
            let (offset_s, keep_from_s) = if i == 0 {
                (0.0, 0.0)
            } else {
                (kept_from_global - w, w)
            };
            kept_from_global = offset_s + kept_end;
            Plan {
                scenario,
                offset_s,
                keep_from_s,
                keep_to_s: if last { f64::INFINITY } else { kept_end },
            }
        })
        .collect()
}

/// Runs `scenario` as `seg.count` time segments in parallel (rayon) and
/// stitches them (module docs). One segment is an ordinary run.
pub fn run_segmented(
    scenario: &Scenario,
    seg: &Segments,
    progress: Option<&mut Progress>,
) -> Result<RunResult, ScenarioError> {
    if seg.count <= 1 {
        return run::run_scenario(scenario, progress);
    }
    if scenario.groups.iter().any(|g| g.track > 0) {
        return Err(ScenarioError::Invalid(
            "a segmented run cannot track flows (flow ids are renumbered)".into(),
        ));
    }
    let wall = Instant::now();
    let plans = plans(scenario, seg);
    let mut results: Vec<Option<Result<RunResult, ScenarioError>>> =
        plans.iter().map(|_| None).collect();
    let (first, rest) = results.split_at_mut(1);
    rayon::scope(|sc| {
        for (slot, p) in rest.iter_mut().zip(&plans[1..]) {
            sc.spawn(move |_| *slot = Some(run::run_scenario(&p.scenario, None)));
        }
        // The first segment on this thread, with the progress line.
        if let (Some(slot), Some(p)) = (first.first_mut(), plans.first()) {
            *slot = Some(run::run_scenario(&p.scenario, progress));
        }
    });
    let mut runs = Vec::with_capacity(results.len());
    for r in results {
        runs.push(r.ok_or_else(|| ScenarioError::Invalid("a segment did not run".into()))??);
    }
    let mut out = stitch(scenario, &plans, runs);
    out.wall_seconds = wall.elapsed().as_secs_f64();
    Ok(out)
}

fn in_window(t: SimTime, from_s: f64, to_s: f64) -> bool {
    let t = to_secs(t);
    t >= from_s - 1e-9 && t < to_s - 1e-9
}

fn stitch(scenario: &Scenario, plans: &[Plan], runs: Vec<RunResult>) -> RunResult {
    let mut flows = Vec::new();
    let mut series = Series::new(secs(scenario.bin_s));
    let mut hops: Vec<HopResult> = Vec::new();
    let mut engine = EngineStats::default();
    let mut unroutable = 0;
    let mut rho = (0.0, "measured");
    for (p, r) in plans.iter().zip(runs) {
        let shift = secs(p.offset_s);
        for f in r.flows {
            if in_window(f.start, p.keep_from_s, p.keep_to_s) {
                let mut f = f;
                f.start += shift;
                f.end = f.end.map(|t| t + shift);
                f.stop = f.stop.map(|t| t + shift);
                flows.push(f);
            }
        }
        for row in &r.series.rows {
            let t = to_secs(row.t);
            let keep = t > p.keep_from_s + 1e-9 && t <= p.keep_to_s + 1e-9;
            if let (true, Some(name)) = (keep, r.series.entities.get(row.entity as usize)) {
                let e = series.entity(name);
                series.push(row.t + shift, row.metric, e, row.value);
            }
        }
        if hops.is_empty() {
            hops = r.hops;
        } else {
            for (a, b) in hops.iter_mut().zip(r.hops) {
                add_counters(&mut a.forward, &b.forward);
                add_counters(&mut a.reverse, &b.reverse);
                add_sojourn(&mut a.sojourn, &b.sojourn);
                a.ka_mode_frac = a.ka_mode_frac.min(b.ka_mode_frac);
            }
        }
        add_engine(&mut engine, &r.engine);
        unroutable += r.unroutable;
        rho = (r.rho, r.rho_source);
    }
    flows.sort_by_key(|f| f.start);
    for (i, f) in flows.iter_mut().enumerate() {
        f.id = i as u32;
    }
    let (rho, rho_source) = match scenario.rho {
        Some(v) => (v, "scenario"),
        None => rho,
    };
    RunResult {
        scenario: scenario.clone(),
        flows,
        series,
        hops,
        engine,
        sim_seconds: scenario.duration_s,
        wall_seconds: 0.0,
        rho,
        rho_source,
        unroutable,
    }
}

/// `a += b`, field by field (an exhaustive pattern: a new counter does not
/// compile until it is added here).
fn add_counters(a: &mut Counters, b: &Counters) {
    let Counters {
        packets_in,
        bytes_in,
        packets_out,
        bytes_out,
        drops_queue,
        drops_aqm,
        ecn_marks,
        drops_ttl,
        drops_malformed,
        non_ip,
        fragments_made,
        indicators_seen,
        mode_changes,
        rcp_options_lowered,
        echoes_lowered,
        unstampable,
        dithered_up,
        xcp_feedback_lowered,
        signals_skipped,
        drops_impair,
        duplicated,
        corrupted,
        reordered,
    } = *b;
    a.packets_in += packets_in;
    a.bytes_in += bytes_in;
    a.packets_out += packets_out;
    a.bytes_out += bytes_out;
    a.drops_queue += drops_queue;
    a.drops_aqm += drops_aqm;
    a.ecn_marks += ecn_marks;
    a.drops_ttl += drops_ttl;
    a.drops_malformed += drops_malformed;
    a.non_ip += non_ip;
    a.fragments_made += fragments_made;
    a.indicators_seen += indicators_seen;
    a.mode_changes += mode_changes;
    a.rcp_options_lowered += rcp_options_lowered;
    a.echoes_lowered += echoes_lowered;
    a.unstampable += unstampable;
    a.dithered_up += dithered_up;
    a.xcp_feedback_lowered += xcp_feedback_lowered;
    a.signals_skipped += signals_skipped;
    a.drops_impair += drops_impair;
    a.duplicated += duplicated;
    a.corrupted += corrupted;
    a.reordered += reordered;
}

fn add_sojourn(a: &mut SojournHistogram, b: &SojournHistogram) {
    let SojournHistogram {
        counts,
        sum_ns,
        count,
    } = b;
    for (x, y) in a.counts.iter_mut().zip(counts) {
        *x += y;
    }
    a.sum_ns = a.sum_ns.saturating_add(*sum_ns);
    a.count += count;
}

fn add_engine(a: &mut EngineStats, b: &EngineStats) {
    let EngineStats {
        events,
        stale_timers,
        early_timers,
        transmissions,
        link_drops,
        timer_stalls,
        max_heap,
    } = *b;
    a.events += events;
    a.stale_timers += stale_timers;
    a.early_timers += early_timers;
    a.transmissions += transmissions;
    a.link_drops += link_drops;
    a.timer_stalls += timer_stalls;
    a.max_heap = a.max_heap.max(max_heap);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_the_span_once() {
        let text = r#"
name = "t"
duration_s = 3700.0
[topology]
kind = "dumbbell"
[[group]]
name = "g"
kind = "tcp"
count = 1
[group.workload]
type = "poisson"
load = 0.5
sizes = { min_pkts = 1, max_pkts = 100, shape = 1.2, mean_pkts = 10 }
"#;
        let s = Scenario::from_toml(text).unwrap();
        let seg = Segments {
            count: 2,
            warmup_s: 100.0,
            drain_s: 150.0,
        };
        let p = plans(&s, &seg);
        assert_eq!(p.len(), 2);
        // Equal simulated lengths: shares of 1725 and 1875 s.
        assert_eq!((p[0].keep_from_s, p[0].keep_to_s), (0.0, 1825.0));
        assert_eq!(p[0].scenario.duration_s, 1975.0);
        assert_eq!(p[0].scenario.seed, s.seed);
        // Segment 1: local [100, end) = global [1825, 3700).
        assert_eq!(p[1].offset_s, 1725.0);
        assert_eq!(p[1].keep_from_s, 100.0);
        assert_eq!(p[1].keep_to_s, f64::INFINITY);
        assert_eq!(p[1].scenario.duration_s, 1975.0);
        assert_ne!(p[1].scenario.seed, s.seed);
        assert_eq!(p[1].offset_s + p[1].scenario.duration_s, 3700.0);
        // Three segments tile the span too.
        let p3 = plans(&s, &Segments { count: 3, ..seg });
        let kept: f64 = p3[0].keep_to_s
            + p3[1..]
                .iter()
                .map(|q| q.keep_to_s.min(q.scenario.duration_s) - q.keep_from_s)
                .sum::<f64>();
        assert!((kept - 3700.0).abs() < 1e-9, "{kept}");
        for w in p3.windows(2) {
            let end_prev = w[0].offset_s + w[0].keep_to_s;
            assert!((w[1].offset_s + w[1].keep_from_s - end_prev).abs() < 1e-9);
        }
    }
}

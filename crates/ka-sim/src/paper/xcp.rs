//! The XCP-vs-RCP seed's transient figures (seed `xcp-vs-rcp.txt` §4,
//! Figs 4–7), with Kick-Ass beside them: `xcp-fig4` (TCP), `xcp-fig5`
//! (window-based XCP), `xcp-fig6` (rate-based XCP) and `xcp-fig7` (RCP).
//!
//! One scenario for all (`scenarios/xcp-transient-*.toml`): 100 Mbit/s,
//! RTT 100 ms; flow 1 unlimited from t = 0, flows 2 and 3 finite from
//! t = 10 s and t = 20 s. The variants differ only in the endpoints and the
//! bottleneck port: TCP (NewReno) over a 400-packet drop-tail queue; XCP
//! window-based and rate-based (α 0.4, β 0.226; two rate-based senders,
//! see `ka_endpoint::XcpVariant`) and RCP (α 0.4, β 0.226)
//! over an effectively unlimited queue; KA with its own defaults over its
//! 1000-packet queue.
//!
//! | experiment | variants | the seed's claim checked |
//! |---|---|---|
//! | xcp-fig4 | `tcp/`, `ka/` | TCP never converges to equal rates and refills freed capacity slowly |
//! | xcp-fig5 | `xcp/`, `ka/` | window XCP converges to equal rates in ~50 RTTs, queue small, freed capacity taken at once |
//! | xcp-fig6 | `xcp-rate-pure/`, `xcp-rate/`, `xcp/` | rate-based XCP oscillates: rate std ≥ 2× window XCP's (for the seed's sender, paced at cwnd/min RTT, and DESIGN §7.2's, paced at cwnd/srtt) |
//! | xcp-fig7 | `rcp/`, `ka/` | RCP: equal rates at every instant after one RTT; queue peak above one BDP on an arrival (seed ≈ 1.7) |
//!
//! Rates are each flow's IP bytes reaching its receiver per 100 ms bin
//! ([`Metric::WireBps`], the seed's "sampling rate ... the same as the
//! RTT"); the queue is the largest queue of each bin. A *phase* is a stretch
//! between two arrivals or departures with a fixed set of active flows; its
//! bins are those entirely inside it.

use serde_json::{Value, json};

use super::{Experiment, find};
use crate::engine::to_secs;
use crate::paper::claims::Claim;
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{Curve, Panel};
use crate::scenario::Scenario;

/// The four transient figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XcpTransient {
    /// Seed Fig. 4: TCP.
    Fig4,
    /// Seed Fig. 5: window-based XCP.
    Fig5,
    /// Seed Fig. 6: rate-based XCP.
    Fig6,
    /// Seed Fig. 7: RCP.
    Fig7,
}

const TCP: &str = include_str!("../../scenarios/xcp-transient-tcp.toml");
const XCP: &str = include_str!("../../scenarios/xcp-transient-xcp.toml");
const XCP_RATE: &str = include_str!("../../scenarios/xcp-transient-xcp-rate.toml");
const XCP_RATE_PURE: &str = include_str!("../../scenarios/xcp-transient-xcp-rate-pure.toml");
const RCP: &str = include_str!("../../scenarios/xcp-transient-rcp.toml");
const KA: &str = include_str!("../../scenarios/xcp-transient-ka.toml");

/// Relative tolerance of "equal rates".
const EQUAL: f64 = 0.10;

/// One tracked flow of a run.
struct FlowTrace {
    start: f64,
    /// Completion (finite flows) or `None`.
    end: Option<f64>,
    /// (bin end, bit/s).
    rates: Vec<(f64, f64)>,
}

/// A stretch with a fixed set of active flows.
struct Phase {
    from: f64,
    to: f64,
    active: Vec<usize>,
}

/// The transient run, ready for the checks.
pub(crate) struct Transient {
    flows: Vec<FlowTrace>,
    queue: Vec<(f64, f64)>,
    util: Vec<(f64, f64)>,
    bin: f64,
    cap_bps: f64,
    rtt: f64,
    end: f64,
    /// Packets the bottleneck dropped.
    drops: u64,
}

impl Transient {
    pub(crate) fn new(r: &RunResult) -> Self {
        let flows = r
            .flows
            .iter()
            .filter(|f| f.tracked)
            .map(|f| FlowTrace {
                start: to_secs(f.start),
                end: f.end.map(to_secs),
                rates: r.series.points(Metric::WireBps, &format!("flow:{}", f.id)),
            })
            .collect();
        Self {
            flows,
            queue: r.series.points(Metric::QueuePkts, "port:bottleneck"),
            util: r.series.points(Metric::Utilization, "link:bottleneck"),
            bin: r.scenario.bin_s,
            cap_bps: r.hops.first().map_or(1.0, |h| h.capacity_bps as f64),
            rtt: r.flows.first().map_or(0.1, |f| to_secs(f.path.base_rtt)),
            end: r.sim_seconds,
            drops: r
                .hops
                .first()
                .map_or(0, |h| h.forward.drops_queue + h.forward.drops_aqm),
        }
    }

    /// The bandwidth-delay product in full packets.
    fn bdp_pkts(&self, packet_bytes: usize) -> f64 {
        self.cap_bps / 8.0 * self.rtt / packet_bytes as f64
    }

    fn arrivals(&self) -> Vec<f64> {
        self.flows
            .iter()
            .map(|f| f.start)
            .filter(|&s| s > 0.0)
            .collect()
    }

    fn departures(&self) -> Vec<f64> {
        self.flows.iter().filter_map(|f| f.end).collect()
    }

    fn phases(&self) -> Vec<Phase> {
        let mut cuts: Vec<f64> = vec![0.0, self.end];
        cuts.extend(self.flows.iter().map(|f| f.start));
        cuts.extend(self.departures());
        cuts.sort_by(f64::total_cmp);
        cuts.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        cuts.windows(2)
            .map(|w| {
                let active = self
                    .flows
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| {
                        f.start <= w[0] + 1e-9 && f.end.is_none_or(|e| e >= w[1] - 1e-9)
                    })
                    .map(|(i, _)| i)
                    .collect();
                Phase {
                    from: w[0],
                    to: w[1],
                    active,
                }
            })
            .collect()
    }

    /// Bin ends of the bins entirely inside (from, to].
    fn bin_ends(&self, from: f64, to: f64) -> Vec<f64> {
        let first = ((from + self.bin) / self.bin - 1e-6).ceil();
        let mut out = Vec::new();
        let mut k = first;
        while k * self.bin <= to + 1e-9 {
            out.push(k * self.bin);
            k += 1.0;
        }
        out
    }

    /// Mean rate (bit/s) of flow `i` over bins ending in (t − w, t].
    fn avg(&self, i: usize, t: f64, w: f64) -> f64 {
        let v: Vec<f64> = self.flows[i]
            .rates
            .iter()
            .filter(|&&(e, _)| e > t - w + 1e-9 && e <= t + 1e-9)
            .map(|p| p.1)
            .collect();
        metrics::mean(&v).unwrap_or(0.0)
    }

    /// Whether the active flows' `w`-averaged rates at `t` are within
    /// [`EQUAL`] of their mean.
    fn equal_at(&self, active: &[usize], t: f64, w: f64) -> bool {
        let r: Vec<f64> = active.iter().map(|&i| self.avg(i, t, w)).collect();
        let m = metrics::mean(&r).unwrap_or(0.0);
        m > 0.0 && r.iter().all(|x| (x - m).abs() <= EQUAL * m)
    }

    /// Share of the bins of multi-flow phases (from `skip` s after their
    /// start) in which the flows' `w`-averaged rates are equal.
    fn equal_share(&self, skip: f64, w: f64) -> Option<f64> {
        let mut n = 0usize;
        let mut eq = 0usize;
        for p in self.phases().iter().filter(|p| p.active.len() >= 2) {
            for t in self.bin_ends(p.from + skip.max(w), p.to) {
                n += 1;
                eq += usize::from(self.equal_at(&p.active, t, w));
            }
        }
        (n > 0).then(|| eq as f64 / n as f64)
    }

    /// Seconds after each arrival until the active flows' 0.5 s rates are
    /// within [`EQUAL`] of C/n and stay there until the phase ends (`None`
    /// for an arrival after which that never happens).
    fn convergence(&self) -> Vec<Option<f64>> {
        let phases = self.phases();
        self.arrivals()
            .into_iter()
            .map(|a| {
                let p = phases.iter().find(|p| (p.from - a).abs() < 1e-9)?;
                let fair = self.cap_bps / p.active.len().max(1) as f64;
                let ends = self.bin_ends(p.from + 0.5, p.to);
                let ok: Vec<bool> = ends
                    .iter()
                    .map(|&t| {
                        p.active
                            .iter()
                            .all(|&i| (self.avg(i, t, 0.5) - fair).abs() <= EQUAL * fair)
                    })
                    .collect();
                let last_bad = ok.iter().rposition(|&b| !b);
                match last_bad {
                    None => ends.first().map(|&t| t - a),
                    Some(k) if k + 1 < ends.len() => Some(ends[k + 1] - a),
                    Some(_) => None,
                }
            })
            .collect()
    }

    /// Seconds after each departure until a bin's utilisation is ≥ 95 %
    /// (`None` if never before the next event or the end).
    fn refill(&self) -> Vec<Option<f64>> {
        let mut cuts: Vec<f64> = self.arrivals();
        cuts.extend(self.departures());
        cuts.push(self.end);
        self.departures()
            .into_iter()
            .map(|d| {
                let next = cuts
                    .iter()
                    .copied()
                    .filter(|&c| c > d + 1e-9)
                    .fold(self.end, f64::min);
                self.util
                    .iter()
                    .filter(|&&(t, _)| t - self.bin >= d - 1e-9 && t <= next + 1e-9)
                    .find(|p| p.1 >= 0.95)
                    .map(|p| p.0 - d)
            })
            .collect()
    }

    /// The largest queue (packets) within `w` s after each arrival.
    fn arrival_peaks(&self, w: f64) -> Vec<f64> {
        self.arrivals()
            .into_iter()
            .map(|a| {
                self.queue
                    .iter()
                    .filter(|&&(t, _)| t > a && t <= a + w + 1e-9)
                    .map(|p| p.1)
                    .fold(0.0, f64::max)
            })
            .collect()
    }

    /// Mean per-bin queue over the steady parts of the phases (from 3 s
    /// after a phase starts).
    fn steady_queue(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .phases()
            .iter()
            .flat_map(|p| {
                self.queue
                    .iter()
                    .filter(move |&&(t, _)| t - self.bin >= p.from + 3.0 - 1e-9 && t <= p.to + 1e-9)
                    .map(|q| q.1)
            })
            .collect();
        metrics::mean(&v)
    }

    /// The standard deviation of each active flow's per-bin rate over the
    /// steady part of each phase (from 3 s after its start, phases ≥ 4 s),
    /// averaged over flows and phases, bit/s.
    fn steady_rate_std(&self) -> Option<f64> {
        let mut stds = Vec::new();
        for p in self.phases().iter().filter(|p| p.to - p.from >= 4.0) {
            for &i in &p.active {
                let v: Vec<f64> = self.flows[i]
                    .rates
                    .iter()
                    .filter(|&&(t, _)| t - self.bin >= p.from + 3.0 - 1e-9 && t <= p.to + 1e-9)
                    .map(|r| r.1)
                    .collect();
                if let Some(m) = metrics::mean(&v) {
                    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
                    stds.push(var.sqrt());
                }
            }
        }
        metrics::mean(&stds)
    }

    /// Share of the bins of multi-flow phases, from one RTT plus one bin
    /// after their start, in which every active flow's per-bin rate is
    /// within 5 % of their mean ("the same rate at every instant").
    fn instant_equal_share(&self) -> Option<f64> {
        let mut n = 0usize;
        let mut eq = 0usize;
        for p in self.phases().iter().filter(|p| p.active.len() >= 2) {
            for t in self.bin_ends(p.from + self.rtt, p.to) {
                let r: Vec<f64> = p.active.iter().map(|&i| self.avg(i, t, self.bin)).collect();
                let m = metrics::mean(&r).unwrap_or(0.0);
                n += 1;
                eq += usize::from(m > 0.0 && r.iter().all(|x| (x - m).abs() <= 0.05 * m));
            }
        }
        (n > 0).then(|| eq as f64 / n as f64)
    }

    fn mean_util(&self) -> Option<f64> {
        metrics::mean(&self.util.iter().map(|p| p.1).collect::<Vec<_>>())
    }
}

fn secs_list(v: &[Option<f64>]) -> String {
    let s: Vec<String> = v
        .iter()
        .map(|x| x.map_or("never".into(), |s| format!("{s:.1} s")))
        .collect();
    s.join(", ")
}

fn opt(v: Option<f64>, unit: &str, scale: f64) -> String {
    v.map_or("n/a".into(), |v| format!("{:.2}{unit}", v * scale))
}

/// Labels of the variants in plots.
fn label(variant: &str) -> &'static str {
    match variant {
        "tcp" => "TCP NewReno, 400-packet drop-tail",
        "xcp" => "XCP (window), α 0.4, β 0.226",
        "xcp-rate" => "XCP (rate, paced at cwnd/srtt), α 0.4, β 0.226",
        "xcp-rate-pure" => "XCP (rate, paced at cwnd/min RTT), α 0.4, β 0.226",
        "rcp" => "RCP, α 0.4, β 0.226",
        "ka" => "KA (RCP α 0.1, β 1.0), 1000-packet drop-tail",
        _ => "?",
    }
}

impl Experiment for XcpTransient {
    fn name(&self) -> &'static str {
        match self {
            XcpTransient::Fig4 => "xcp-fig4",
            XcpTransient::Fig5 => "xcp-fig5",
            XcpTransient::Fig6 => "xcp-fig6",
            XcpTransient::Fig7 => "xcp-fig7",
        }
    }

    fn about(&self) -> &'static str {
        match self {
            XcpTransient::Fig4 => {
                "XCP-vs-RCP seed Fig. 4: TCP with flows arriving at 0, 10, 20 s (KA beside)"
            }
            XcpTransient::Fig5 => {
                "XCP-vs-RCP seed Fig. 5: window-based XCP, same flows (KA beside)"
            }
            XcpTransient::Fig6 => "XCP-vs-RCP seed Fig. 6: rate-based XCP against window-based XCP",
            XcpTransient::Fig7 => {
                "XCP-vs-RCP seed Fig. 7: RCP with alpha 0.4, beta 0.226 (KA beside)"
            }
        }
    }

    fn title(&self) -> String {
        match self {
            XcpTransient::Fig4 => {
                "Seed Fig. 4: TCP, flows at t = 0, 10, 20 s (100 Mbit/s, RTT 100 ms)"
            }
            XcpTransient::Fig5 => "Seed Fig. 5: window-based XCP (α 0.4, β 0.226)",
            XcpTransient::Fig6 => "Seed Fig. 6: rate-based against window-based XCP",
            XcpTransient::Fig7 => "Seed Fig. 7: RCP (α 0.4, β 0.226)",
        }
        .into()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        match self {
            XcpTransient::Fig4 => vec![("tcp", TCP), ("ka", KA)],
            XcpTransient::Fig5 => vec![("xcp", XCP), ("ka", KA)],
            XcpTransient::Fig6 => vec![
                ("xcp-rate-pure", XCP_RATE_PURE),
                ("xcp-rate", XCP_RATE),
                ("xcp", XCP),
            ],
            XcpTransient::Fig7 => vec![("rcp", RCP), ("ka", KA)],
        }
    }

    /// The scenario files are shared by the four figures: the run takes
    /// the figure's name.
    fn prepare(&self, _variant: &str, scenario: &mut Scenario) {
        scenario.name = self.name().to_string();
    }

    fn headline(&self, r: &RunResult) -> Value {
        let tr = Transient::new(r);
        let bdp = tr.bdp_pkts(r.scenario.packet_bytes);
        let completions: Vec<Option<f64>> = tr.flows.iter().map(|f| f.end).collect();
        json!({
            "utilization": tr.mean_util(),
            "flow_end_s": completions,
            "convergence_s": tr.convergence(),
            "refill_s": tr.refill(),
            "equal_share_1s": tr.equal_share(2.0, 1.0),
            "equal_share_every_bin": tr.instant_equal_share(),
            "queue_peak_after_arrival_bdp": tr.arrival_peaks(2.0).iter().map(|q| q / bdp).collect::<Vec<_>>(),
            "steady_queue_pkts": tr.steady_queue(),
            "steady_rate_std_mbps": tr.steady_rate_std().map(|s| s / 1e6),
            "drops": r.hops.first().map(|h| h.forward.drops_queue),
        })
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        let tr = |v: &str| find(results, v).map(|r| (Transient::new(r), r.scenario.packet_bytes));
        let mut out = Vec::new();
        match self {
            XcpTransient::Fig4 => {
                if let Some((t, _)) = tr("tcp") {
                    out.extend(never_equal("TCP", &t));
                    out.push(slow_refill("TCP", &t));
                }
                if let Some((k, _)) = tr("ka") {
                    out.push(converges("KA", &k, 5.0));
                    out.push(quick_refill("KA", &k));
                }
            }
            XcpTransient::Fig5 => {
                if let Some((x, pkt)) = tr("xcp") {
                    out.push(converges("window XCP", &x, 5.0));
                    out.push(small_queue("window XCP", &x, pkt));
                    out.push(quick_refill("window XCP", &x));
                }
                if let Some((k, pkt)) = tr("ka") {
                    out.push(converges("KA", &k, 5.0));
                    out.push(small_queue("KA", &k, pkt));
                }
            }
            XcpTransient::Fig6 => {
                let Some((win, _)) = tr("xcp") else {
                    return out;
                };
                // The seed's sender (inter-packet time as its state)
                // reproduces the seed's oscillation.
                if let Some((rate, _)) = tr("xcp-rate-pure") {
                    let who = "rate-based XCP paced at cwnd/min RTT (the seed's sender)";
                    let (a, b) = (rate.steady_rate_std(), win.steady_rate_std());
                    out.push(Claim::new(
                        format!("{who} oscillates (seed Fig. 6): std of the flows' 100 ms rates over the steady phases >= 2x window XCP's"),
                        format!("rate-based {}, window {}", opt(a, " Mbit/s", 1e-6), opt(b, " Mbit/s", 1e-6)),
                        matches!((a, b), (Some(a), Some(b)) if a >= 2.0 * b),
                    ));
                    let (qa, qb) = (rate.steady_queue(), win.steady_queue());
                    out.push(Claim::new(
                        format!("{who} uses the queue more (seed Fig. 6): mean queue over the steady phases above window XCP's"),
                        format!("rate-based {}, window {}", opt(qa, " pkts", 1.0), opt(qb, " pkts", 1.0)),
                        matches!((qa, qb), (Some(a), Some(b)) if a > b),
                    ));
                }
                // DESIGN §7.2's sender paces at cwnd/srtt: a growing queue
                // (a longer srtt) slows it by itself, so it should stay as
                // calm as window XCP — our claim, not the seed's.
                if let Some((rate, _)) = tr("xcp-rate") {
                    let who = "rate-based XCP paced at cwnd/srtt (DESIGN §7.2's sender)";
                    let (a, b) = (rate.steady_rate_std(), win.steady_rate_std());
                    let (qa, qb) = (rate.steady_queue(), win.steady_queue());
                    out.push(Claim::new(
                        format!("{who} does not oscillate (the srtt in its pacing damps the loop): rate std <= 1.5x window XCP's and mean steady queue <= 2x window XCP's"),
                        format!(
                            "std {} vs {}, queue {} vs {}",
                            opt(a, " Mbit/s", 1e-6),
                            opt(b, " Mbit/s", 1e-6),
                            opt(qa, " pkts", 1.0),
                            opt(qb, " pkts", 1.0)
                        ),
                        matches!((a, b, qa, qb), (Some(a), Some(b), Some(qa), Some(qb)) if a <= 1.5 * b && qa <= 2.0 * qb),
                    ));
                }
            }
            XcpTransient::Fig7 => {
                if let Some((r, pkt)) = tr("rcp") {
                    out.push(same_rate("RCP", &r));
                    out.push(arrival_peak("RCP", &r, pkt));
                }
                if let Some((k, pkt)) = tr("ka") {
                    out.push(same_rate("KA", &k));
                    out.push(arrival_peak("KA", &k, pkt));
                }
            }
        }
        out
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        let mut panels = Vec::new();
        let mut queues = Vec::new();
        for (k, (v, _)) in self.variants().iter().enumerate() {
            let Some(r) = find(results, v) else {
                continue;
            };
            let tr = Transient::new(r);
            let letter = char::from(b'a' + k as u8);
            panels.push(Panel {
                title: format!("({letter}) Rate of each flow: {}", label(v)),
                x_label: "time (s)".into(),
                y_label: "Mbit/s".into(),
                curves: tr
                    .flows
                    .iter()
                    .enumerate()
                    .map(|(i, f)| Curve {
                        label: format!("flow {}", i + 1),
                        points: f.rates.iter().map(|&(t, v)| (t, v / 1e6)).collect(),
                    })
                    .collect(),
                ..Panel::default()
            });
            queues.push(Curve {
                label: label(v).into(),
                points: tr.queue.clone(),
            });
        }
        let letter = char::from(b'a' + panels.len() as u8);
        panels.push(Panel {
            title: format!("({letter}) Bottleneck queue (largest per 100 ms)"),
            x_label: "time (s)".into(),
            y_label: "packets".into(),
            curves: queues,
            ..Panel::default()
        });
        panels
    }
}

/// Seed Fig. 4: "no deterministic convergence to fairness".
fn never_equal(who: &str, t: &Transient) -> Vec<Claim> {
    let share = t.equal_share(2.0, 1.0);
    vec![Claim::new(
        format!(
            "{who} never converges to equal rates (seed Fig. 4): 1 s rates within 10 % of each other in < 20 % of the multi-flow time"
        ),
        opt(share.map(|s| s * 100.0), " %", 1.0),
        share.is_some_and(|s| s < 0.2),
    )]
}

/// Seed Fig. 4: "after flows 2 and 3 leave ... the free bandwidth is
/// reallocated very slowly".
fn slow_refill(who: &str, t: &Transient) -> Claim {
    let r = t.refill();
    Claim::new(
        format!(
            "{who} reallocates freed bandwidth slowly (seed Fig. 4): after the last departure utilisation stays below 95 % for > 5 s"
        ),
        format!("utilisation back at 95 % after: {}", secs_list(&r)),
        r.last().is_some_and(|x| x.is_none_or(|s| s > 5.0)),
    )
}

/// Seed Fig. 5: "when a flow leaves ... it is allocated very quickly".
fn quick_refill(who: &str, t: &Transient) -> Claim {
    let r = t.refill();
    Claim::new(
        format!(
            "{who} takes up freed bandwidth quickly: utilisation >= 95 % within 1 s (10 RTTs) of every departure"
        ),
        format!("after: {}", secs_list(&r)),
        !r.is_empty() && r.iter().all(|x| x.is_some_and(|s| s <= 1.0)),
    )
}

/// Seed Fig. 5: "the transition takes place in the order of 50 RTTs ... in
/// the steady state, however, perfect fairness is achieved".
fn converges(who: &str, t: &Transient, max_s: f64) -> Claim {
    let c = t.convergence();
    let rtts = max_s / t.rtt;
    Claim::new(
        format!(
            "{who} converges to equal rates (C/n +/- 10 %, 0.5 s averages, staying there) within {rtts:.0} RTTs of every arrival (seed Fig. 5: in the order of 50 RTTs)"
        ),
        secs_list(&c),
        !c.is_empty() && c.iter().all(|x| x.is_some_and(|s| s <= max_s)),
    )
}

/// Seed Fig. 5: "the queue occupation remains small during the whole
/// scenario".
fn small_queue(who: &str, t: &Transient, pkt: usize) -> Claim {
    let q = t.steady_queue();
    let limit = 0.02 * t.bdp_pkts(pkt);
    Claim::new(
        format!(
            "{who} keeps the queue small: mean queue over the steady phases < 2 % of the BDP ({limit:.0} packets)"
        ),
        opt(q, " pkts", 1.0),
        q.is_some_and(|q| q < limit),
    )
}

/// Seed Fig. 7: "all active flows have the same sending rate all the time".
fn same_rate(who: &str, t: &Transient) -> Claim {
    let s = t.instant_equal_share();
    Claim::new(
        format!(
            "{who} gives all flows the same rate at every instant after one RTT (seed Fig. 7): 100 ms rates within 5 % of each other in >= 95 % of the multi-flow bins"
        ),
        opt(s.map(|s| s * 100.0), " %", 1.0),
        s.is_some_and(|s| s >= 0.95),
    )
}

/// Seed Fig. 7: "the queue length exceeds the BDP by about 70 %".
fn arrival_peak(who: &str, t: &Transient, pkt: usize) -> Claim {
    let bdp = t.bdp_pkts(pkt);
    let peaks: Vec<String> = t
        .arrival_peaks(2.0)
        .iter()
        .map(|q| format!("{:.2}", q / bdp))
        .collect();
    let first = t.arrival_peaks(2.0).first().copied().map(|q| q / bdp);
    Claim::new(
        format!(
            "{who}: a flow arriving at a full link makes the queue peak above one BDP ({bdp:.0} packets; seed: about 1.7 BDP)"
        ),
        format!(
            "peaks after the arrivals: {} BDP; {} packets dropped",
            peaks.join(", "),
            t.drops
        ),
        first.is_some_and(|q| q > 1.0),
    )
}

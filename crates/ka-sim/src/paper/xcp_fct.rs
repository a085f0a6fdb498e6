//! The XCP-vs-RCP seed's flow-completion-time study (seed `xcp-vs-rcp.txt`
//! §5.1, Fig. 8), with Kick-Ass beside it: `xcp-fig8`.
//!
//! 100 Mbit/s, RTT 100 ms; Poisson flow arrivals (mean gap 3.33 ms, load
//! 0.9); truncated-Pareto sizes (shape 1.2, mean 25 packets, 1 … 40 000);
//! 3700 s simulated, flows that start in the first 100 s discarded (with a
//! `--duration` override: the first tenth, at most 100 s). Variants
//! (`scenarios/xcp-fig8-*.toml`): `tcp/` CUBIC over RED (limit 1000,
//! min_th 250, max_th 750, max_p 0.1); `xcp/` window-based XCP (α 0.4,
//! β 0.226) and `rcp/` RCP (α 0.1, β 1.0) over an effectively unlimited
//! queue; `rcp-fig7/` the same RCP with the gains of the seed's Fig. 7 (α
//! 0.4, β 0.226), whose law allows a mean queue 18 times longer (DESIGN
//! §3.5.1), and `rcp-deep/` (α 0.4, β 0.1), 40 times longer; `ka/` KA over
//! its normal 1000-packet queue.
//!
//! `ka-sim paper xcp-fig8` runs each variant as two time segments in
//! parallel ([`crate::run::segment`]: 0–1825 s and 1725–3700 s, the second's
//! first 100 s discarded as its warm-up, the first run on for a 200 s
//! drain so its flows finish under full load): ≈ 2000 simulated s per core
//! instead of 3700 on one. From the CPU time of a full run (0.97 µs per
//! event, `docs/PERFORMANCE.md`) that is ≈ 105–140 s per variant on two
//! free cores for TCP, XCP and RCP and ≈ 190 s for KA, which does the most
//! work per packet. `ka-sim run scenarios/xcp-fig8-*.toml` is the same
//! experiment as one ordinary run.
//!
//! Flow sizes are grouped into buckets of equal width on a log scale (four
//! per factor of ten, as [`crate::results::plot::fct_by_size`]); per bucket the mean FCT
//! and its 5 % and 95 % quantiles. The reference curves are processor
//! sharing, `FCT_PS(L) = 1.5·RTT + L/(C·(1−ρ))` (DESIGN §9), and the
//! minimal FCT of a flow alone on the link, `1.5·RTT + L/C` (handshake,
//! half a round trip, serialisation), with L the flow's size in full
//! packets on the wire.

use serde_json::{Value, json};

use super::{Experiment, find};
use crate::engine::to_secs;
use crate::paper::claims::Claim;
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{Curve, Panel};
use crate::run::segment::Segments;
use crate::scenario::Scenario;

/// The experiment (one: seed Fig. 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XcpFct;

/// Variants and plot labels, in plot order.
const VARIANTS: [(&str, &str); 6] = [
    ("tcp", "TCP (CUBIC, RED)"),
    ("xcp", "XCP (window)"),
    ("rcp", "RCP"),
    ("rcp-fig7", "RCP, alpha 0.4, beta 0.226"),
    ("rcp-deep", "RCP, alpha 0.4, beta 0.1"),
    ("ka", "KA"),
];

/// Flows that start before this are discarded (seed: the first 100 s of
/// 3700 s); shorter runs discard their first tenth.
pub fn warmup_s(duration_s: f64) -> f64 {
    (duration_s / 10.0).min(100.0)
}

/// The drain after the first segment's share, s: its flows keep running
/// under the full load this long (a 40 000-packet flow at a tenth of the
/// link takes ≈ 50 s).
const DRAIN_S: f64 = 200.0;

/// Flows below this many packets are "short": the seed's Fig. 8 plots
/// short and long flows apart, and 100 packets is the same split as KA's
/// Fig. 3 check.
const SHORT: u64 = 100;

/// One size bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// Mean size, packets.
    pub size: f64,
    /// Flows.
    pub n: usize,
    /// Mean FCT, s.
    pub mean: f64,
    /// 5 % quantile, s.
    pub p5: f64,
    /// 95 % quantile, s.
    pub p95: f64,
}

/// `(size in packets, FCT in s)` of the completed flows that started after
/// the warm-up.
fn samples(r: &RunResult) -> Vec<(u64, f64)> {
    let from = warmup_s(r.scenario.duration_s);
    r.flows
        .iter()
        .filter(|f| to_secs(f.start) >= from)
        .filter_map(|f| Some((f.size_pkts?, to_secs(f.fct()?))))
        .collect()
}

/// The size buckets of a run (4 per decade, as [`crate::results::plot::fct_by_size`]).
pub fn buckets(r: &RunResult) -> Vec<Bucket> {
    let mut groups: Vec<Vec<(u64, f64)>> = Vec::new();
    for (size, fct) in samples(r) {
        let b = ((size.max(1) as f64).log10() * 4.0).floor() as usize;
        if groups.len() <= b {
            groups.resize(b + 1, Vec::new());
        }
        groups[b].push((size, fct));
    }
    groups
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(|g| {
            let mut f: Vec<f64> = g.iter().map(|p| p.1).collect();
            f.sort_by(f64::total_cmp);
            let n = g.len();
            Bucket {
                size: g.iter().map(|p| p.0 as f64).sum::<f64>() / n as f64,
                n,
                mean: f.iter().sum::<f64>() / n as f64,
                p5: metrics::percentile(&f, 0.05).unwrap_or(0.0),
                p95: metrics::percentile(&f, 0.95).unwrap_or(0.0),
            }
        })
        .collect()
}

/// (RTT s, C bit/s, packet bytes, ρ) of a run.
fn params(r: &RunResult) -> (f64, f64, f64, f64) {
    let rtt = r.flows.first().map_or(0.1, |f| to_secs(f.path.base_rtt));
    let cap = r.hops.first().map_or(1.0, |h| h.capacity_bps as f64);
    (rtt, cap, r.scenario.packet_bytes as f64, r.rho)
}

/// Processor-sharing FCT of a flow of `size` packets, s.
fn ps(r: &RunResult, size: f64) -> f64 {
    let (rtt, cap, pkt, rho) = params(r);
    1.5 * rtt + size * pkt * 8.0 / (cap * (1.0 - rho.clamp(0.0, 0.99)))
}

/// Minimal FCT (alone on the link) of a flow of `size` packets, s.
fn min_fct(r: &RunResult, size: f64) -> f64 {
    let (rtt, cap, pkt, _) = params(r);
    1.5 * rtt + size * pkt * 8.0 / cap
}

/// Mean FCT of the flows below [`SHORT`] packets.
fn short_mean(r: &RunResult) -> Option<f64> {
    let v: Vec<f64> = samples(r)
        .into_iter()
        .filter(|p| p.0 < SHORT)
        .map(|p| p.1)
        .collect();
    metrics::mean(&v)
}

/// Buckets with at least this many flows count in the per-bucket checks.
const MIN_FLOWS: usize = 10;

fn s3(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.3} s"))
}

/// The worst ratio mean FCT / PS over the buckets with enough flows, and
/// where it is.
fn worst_vs_ps(r: &RunResult) -> Option<(f64, f64)> {
    buckets(r)
        .iter()
        .filter(|b| b.n >= MIN_FLOWS)
        .map(|b| (b.mean / ps(r, b.size), b.size))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Time-average number of flows in the system (started, not finished)
/// over `[from, to)`, s: the flows' own lifetimes, integrated exactly.
fn mean_active(r: &RunResult, from: f64, to: f64) -> Option<f64> {
    let spans = r
        .flows
        .iter()
        .map(|f| (to_secs(f.start), f.end.map(to_secs)));
    mean_in_system(spans, from, to)
}

/// Time-average count of `(start, end)` spans (`None`: still running) over
/// `[from, to)`.
fn mean_in_system(
    spans: impl Iterator<Item = (f64, Option<f64>)>,
    from: f64,
    to: f64,
) -> Option<f64> {
    if to <= from {
        return None;
    }
    let busy: f64 = spans
        .map(|(s, e)| (e.unwrap_or(to).min(to) - s.max(from)).max(0.0))
        .sum();
    Some(busy / (to - from))
}

/// Mean flows in the system over the first and the second half of the
/// counted period (after the warm-up).
fn active_halves(r: &RunResult) -> Option<(f64, f64)> {
    let from = warmup_s(r.scenario.duration_s);
    let mid = (from + r.sim_seconds) / 2.0;
    Some((
        mean_active(r, from, mid)?,
        mean_active(r, mid, r.sim_seconds)?,
    ))
}

/// RCP's equilibrium queue, packets: where `α(C − y) = β·q/d` holds with
/// y at the offered load ρ·C, `q = α(1 − ρ)·C·d/β` (DESIGN §3.5.1).
fn law_queue_pkts(r: &RunResult) -> f64 {
    let (rtt, cap, pkt, rho) = params(r);
    let k = &r.scenario.router.rcp;
    equilibrium_queue_pkts(k.alpha, k.beta, rho, cap, rtt, pkt)
}

/// `α(1 − ρ)·C·d/β` in packets of `pkt` bytes (C in bit/s, d in s).
fn equilibrium_queue_pkts(alpha: f64, beta: f64, rho: f64, cap: f64, d: f64, pkt: f64) -> f64 {
    alpha * (1.0 - rho) * cap / 8.0 * d / beta.max(1e-9) / pkt.max(1.0)
}

/// Mean queue seen by arriving packets, packets: mean sojourn × C.
fn packet_mean_queue(r: &RunResult) -> Option<f64> {
    let (_, cap, pkt, _) = params(r);
    let soj = r.hops.first()?.sojourn.mean_s()?;
    Some(soj * cap / 8.0 / pkt.max(1.0))
}

impl Experiment for XcpFct {
    fn name(&self) -> &'static str {
        "xcp-fig8"
    }

    fn about(&self) -> &'static str {
        "XCP-vs-RCP seed Fig. 8: FCT of TCP (CUBIC/RED), XCP, RCP and KA at 90 % load, Pareto sizes"
    }

    fn title(&self) -> String {
        "Seed Fig. 8: FCT at 90 % load (100 Mbit/s, RTT 100 ms, Pareto 1.2, mean 25 packets)".into()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("tcp", include_str!("../../scenarios/xcp-fig8-tcp.toml")),
            ("xcp", include_str!("../../scenarios/xcp-fig8-xcp.toml")),
            ("rcp", include_str!("../../scenarios/xcp-fig8-rcp.toml")),
            (
                "rcp-fig7",
                include_str!("../../scenarios/xcp-fig8-rcp-fig7.toml"),
            ),
            (
                "rcp-deep",
                include_str!("../../scenarios/xcp-fig8-rcp-deep.toml"),
            ),
            ("ka", include_str!("../../scenarios/xcp-fig8-ka.toml")),
        ]
    }

    /// Two time segments, run in parallel (see [`crate::run::segment`]): each
    /// simulates ≈ 2000 s instead of 3700 s. Runs shorter than 1000 s past
    /// the warm-up (`--duration`) are not cut.
    fn segments(&self, scenario: &Scenario) -> Segments {
        let w = warmup_s(scenario.duration_s);
        if scenario.duration_s - w < 1000.0 {
            return Segments::ONE;
        }
        Segments {
            count: 2,
            warmup_s: w,
            drain_s: DRAIN_S,
        }
    }

    fn headline(&self, r: &RunResult) -> Value {
        let b: Vec<Value> = buckets(r)
            .iter()
            .map(|b| {
                json!({
                    "size_pkts": b.size, "flows": b.n, "mean_fct_s": b.mean,
                    "p5_s": b.p5, "p95_s": b.p95,
                    "ps_s": ps(r, b.size), "min_s": min_fct(r, b.size),
                })
            })
            .collect();
        let hop = r.hops.first();
        let q = r.series.points(Metric::QueuePkts, "port:bottleneck");
        json!({
            "warmup_s": warmup_s(r.scenario.duration_s),
            "rho": r.rho,
            "flows_counted": samples(r).len(),
            "flows_unfinished": r.flows.iter().filter(|f| f.end.is_none()).count(),
            "utilization": super::mean_in(r, Metric::Utilization, "link:bottleneck", 0.0, r.sim_seconds),
            "mean_queue_pkts": metrics::mean(&q.iter().map(|p| p.1).collect::<Vec<_>>()),
            "mean_sojourn_ms": hop.and_then(|h| h.sojourn.mean_s()).map(|s| s * 1e3),
            "drops": hop.map(|h| h.forward.drops_queue + h.forward.drops_aqm),
            "mean_fct_s_short": short_mean(r),
            "worst_fct_over_ps": worst_vs_ps(r).map(|w| json!({"ratio": w.0, "size_pkts": w.1})),
            "buckets": b,
        })
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        let mut out = Vec::new();
        let per_bucket = |who: &str, r: &RunResult| {
            let w = worst_vs_ps(r);
            Claim::new(
                format!(
                    "{who}: mean FCT within 2x of processor sharing in every size bucket with >= {MIN_FLOWS} flows (seed Fig. 8: RCP approximates PS)"
                ),
                w.map_or("no buckets".into(), |(ratio, size)| {
                    format!("worst {ratio:.2}x PS at {size:.0} packets")
                }),
                w.is_some_and(|w| w.0 <= 2.0),
            )
        };
        for (v, who) in [
            ("rcp", "RCP"),
            ("rcp-fig7", "RCP (alpha 0.4, beta 0.226)"),
            ("rcp-deep", "RCP (alpha 0.4, beta 0.1)"),
        ] {
            let Some(r) = find(results, v) else {
                continue;
            };
            out.push(per_bucket(who, r));
            let halves = active_halves(r);
            out.push(Claim::new(
                format!(
                    "{who}: flows in the system stationary (second half's mean within 20 % of the first's)"
                ),
                halves.map_or("n/a".into(), |(a, b)| {
                    format!("{a:.1} then {b:.1} flows (PS: rho/(1-rho) = {:.1})", r.rho / (1.0 - r.rho))
                }),
                halves.is_some_and(|(a, b)| a > 0.0 && (b - a).abs() <= 0.2 * a),
            ));
            let law = law_queue_pkts(r);
            let q = packet_mean_queue(r);
            out.push(Claim::new(
                format!(
                    "{who}: mean queue where RCP's law puts it, alpha(1-rho)C d/beta (0.8-2x; the mechanism of DESIGN 3.5.1)"
                ),
                q.map_or("n/a".into(), |q| {
                    format!("{q:.1} packets seen by arrivals, law {law:.1}")
                }),
                q.is_some_and(|q| q >= 0.8 * law && q <= 2.0 * law),
            ));
        }
        let tcp = find(results, "tcp").and_then(short_mean);
        if let Some(x) = find(results, "xcp") {
            let x = short_mean(x);
            out.push(Claim::new(
                format!(
                    "XCP's mean FCT worse than TCP's for short flows (< {SHORT} packets; seed Fig. 8: new flows starve for positive feedback)"
                ),
                format!("XCP {}, TCP {}", s3(x), s3(tcp)),
                matches!((x, tcp), (Some(x), Some(t)) if x > t),
            ));
        }
        if let Some(k) = find(results, "ka") {
            let ks = short_mean(k);
            out.push(Claim::new(
                format!("KA: mean FCT of short flows (< {SHORT} packets) below TCP's"),
                format!("KA {}, TCP {}", s3(ks), s3(tcp)),
                matches!((ks, tcp), (Some(k), Some(t)) if k < t),
            ));
            if let Some(r) = find(results, "rcp") {
                let rs = short_mean(r);
                out.push(Claim::new(
                    format!("KA: mean FCT of short flows (< {SHORT} packets) within 20 % of RCP's (KA signals RCP's rate)"),
                    format!("KA {}, RCP {}", s3(ks), s3(rs)),
                    matches!((ks, rs), (Some(k), Some(r)) if (k - r).abs() <= 0.2 * r),
                ));
            }
            out.push(per_bucket("KA", k));
        }
        out
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        let mut means = Vec::new();
        let mut panels = Vec::new();
        let mut reference = None;
        for (k, (v, label)) in VARIANTS.iter().enumerate() {
            let Some(r) = find(results, v) else {
                continue;
            };
            let b = buckets(r);
            let pts = |f: fn(&Bucket) -> f64| -> Vec<(f64, f64)> {
                b.iter().map(|x| (x.size, f(x))).collect()
            };
            means.push(Curve {
                label: (*label).into(),
                points: pts(|x| x.mean),
            });
            let refs = reference_curves(r);
            panels.push(fct_panel(
                format!(
                    "({}) {label}: mean, 5 % and 95 % quantiles",
                    char::from(b'b' + k as u8)
                ),
                vec![
                    Curve {
                        label: "mean".into(),
                        points: pts(|x| x.mean),
                    },
                    Curve {
                        label: "5 %".into(),
                        points: pts(|x| x.p5),
                    },
                    Curve {
                        label: "95 %".into(),
                        points: pts(|x| x.p95),
                    },
                    refs.0.clone(),
                    refs.1.clone(),
                ],
            ));
            reference.get_or_insert(refs);
        }
        if let Some((ps, min)) = reference {
            means.push(ps);
            means.push(min);
        }
        panels.insert(0, fct_panel("(a) Mean FCT".into(), means));
        panels
    }
}

/// The PS and minimal-FCT curves over 1 … 40 000 packets.
fn reference_curves(r: &RunResult) -> (Curve, Curve) {
    let sizes: Vec<f64> = (0..=18).map(|k| 10f64.powf(k as f64 / 4.0)).collect();
    (
        Curve {
            label: "processor sharing".into(),
            points: sizes.iter().map(|&s| (s, ps(r, s))).collect(),
        },
        Curve {
            label: "minimal FCT".into(),
            points: sizes.iter().map(|&s| (s, min_fct(r, s))).collect(),
        },
    )
}

fn fct_panel(title: String, curves: Vec<Curve>) -> Panel {
    Panel {
        title,
        x_label: "flow length (packets)".into(),
        y_label: "FCT (s)".into(),
        curves,
        log_x: true,
        log_y: true,
        markers: true,
        ..Panel::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equilibrium_queue_of_the_seeds_gains() {
        // 100 Mbit/s, 100 ms, load 0.9, 1500-byte packets (seed Fig. 8).
        let q = |a, b| equilibrium_queue_pkts(a, b, 0.9, 100e6, 0.1, 1500.0);
        assert!((q(0.1, 1.0) - 8.333).abs() < 0.01, "{}", q(0.1, 1.0));
        assert!((q(0.4, 0.226) - 147.5).abs() < 0.1, "{}", q(0.4, 0.226));
        assert!((q(0.4, 0.1) - 333.3).abs() < 0.1, "{}", q(0.4, 0.1));
    }

    #[test]
    fn flows_in_system_integrates_lifetimes() {
        // [0, 10): one flow all the time, one for 2 s, one still running
        // from 8 s, one before the window.
        let spans = [
            (0.0, Some(20.0)),
            (3.0, Some(5.0)),
            (8.0, None),
            (-5.0, Some(-1.0)),
        ];
        let m = mean_in_system(spans.into_iter(), 0.0, 10.0).unwrap();
        assert!((m - (10.0 + 2.0 + 2.0) / 10.0).abs() < 1e-12, "{m}");
        assert_eq!(mean_in_system(spans.into_iter(), 5.0, 5.0), None);
    }

    #[test]
    fn warmup_is_the_seeds_100_s_or_a_tenth() {
        assert_eq!(warmup_s(3700.0), 100.0);
        assert_eq!(warmup_s(200.0), 20.0);
    }
}

//! The Kick-Ass paper's own figures (§III): scenarios (shipped as TOML
//! files in `crates/ka-sim/scenarios/`), headline numbers and combined
//! plots.
//!
//! | figure | variants (subdirectories) | scenario files |
//! |---|---|---|
//! | fig2 | `ka/`, `rcp/`, `ka-fast/`, `rcp-fast/` | `fig2-ka.toml`, `fig2-rcp.toml`, `fig2-*-fast.toml` (α 0.4, β 0.5) |
//! | fig3 | `ka/`, `rcp/`, `tcp/` | `fig3-*.toml` |
//! | fig4 | `tcp-alone/`, `mixed/` | `fig4-*.toml` |
//! | fig5 | `mixed/` | `fig5-mixed.toml` |
//! | fig7 | `mixed/` | `fig7-mixed.toml` (the topology of Fig. 6) |

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use super::{Experiment, fct_curve, find, flows_rate, group_fct, mean_in, series_curve};
use crate::engine::to_secs;
use crate::paper::claims::{Claim, tracked};
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{self, Curve, Panel};
use crate::results::report;
use crate::scenario::{FlowKind, Scenario};

/// A figure of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Fig. 2: KA and RCP dynamics with a flow joining every 10 s.
    Fig2,
    /// Fig. 3: FCT under light load, KA vs RCP vs TCP.
    Fig3,
    /// Fig. 4: FCT of TCP and KA sharing a KA router under light load.
    Fig4,
    /// Fig. 5: KA and TCP epochs at a KA router (router mode switching).
    Fig5,
    /// Fig. 7: KA flows meeting TCP cross traffic at a legacy router.
    Fig7,
}

impl FromStr for Figure {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fig2" => Ok(Figure::Fig2),
            "fig3" => Ok(Figure::Fig3),
            "fig4" => Ok(Figure::Fig4),
            "fig5" => Ok(Figure::Fig5),
            "fig7" => Ok(Figure::Fig7),
            _ => Err(format!(
                "unknown figure `{s}` (fig2, fig3, fig4, fig5, fig7)"
            )),
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Figure::Fig2 => "fig2",
            Figure::Fig3 => "fig3",
            Figure::Fig4 => "fig4",
            Figure::Fig5 => "fig5",
            Figure::Fig7 => "fig7",
        })
    }
}

/// The variants of a figure: (subdirectory, scenario TOML).
pub fn variants(fig: Figure) -> Vec<(&'static str, &'static str)> {
    match fig {
        Figure::Fig2 => vec![
            ("ka", include_str!("../../scenarios/fig2-ka.toml")),
            ("rcp", include_str!("../../scenarios/fig2-rcp.toml")),
            ("ka-fast", include_str!("../../scenarios/fig2-ka-fast.toml")),
            (
                "rcp-fast",
                include_str!("../../scenarios/fig2-rcp-fast.toml"),
            ),
        ],
        Figure::Fig3 => vec![
            ("ka", include_str!("../../scenarios/fig3-ka.toml")),
            ("rcp", include_str!("../../scenarios/fig3-rcp.toml")),
            ("tcp", include_str!("../../scenarios/fig3-tcp.toml")),
        ],
        Figure::Fig4 => vec![
            (
                "tcp-alone",
                include_str!("../../scenarios/fig4-tcp-alone.toml"),
            ),
            ("mixed", include_str!("../../scenarios/fig4-mixed.toml")),
        ],
        Figure::Fig5 => vec![("mixed", include_str!("../../scenarios/fig5-mixed.toml"))],
        Figure::Fig7 => vec![("mixed", include_str!("../../scenarios/fig7-mixed.toml"))],
    }
}

fn figure_title(fig: Figure) -> String {
    match fig {
        Figure::Fig2 => "Fig. 2: a flow joins every 10 s (KA vs RCP)",
        Figure::Fig3 => "Fig. 3: mean FCT under light load (isolated)",
        Figure::Fig4 => "Fig. 4: TCP and KA sharing a KA router, light load",
        Figure::Fig5 => "Fig. 5: KA and TCP at a KA router (grey: router in TCP mode)",
        Figure::Fig7 => "Fig. 7: congestion at a non-KA router (grey: KA flow in TCP mode)",
    }
    .to_string()
}

/// The headline numbers of one variant of a figure.
pub fn headline(fig: Figure, r: &RunResult) -> Value {
    let dur = r.sim_seconds;
    let cap = r.hops.first().map_or(0.0, |h| h.capacity_bps as f64);
    match fig {
        Figure::Fig2 => {
            let all_ids: Vec<u32> = r.flows.iter().filter(|f| f.tracked).map(|f| f.id).collect();
            let mut epochs = Vec::new();
            let mut k = 0.0;
            while k * 10.0 < dur - 1e-9 {
                let (a, b) = (k * 10.0, (k * 10.0 + 10.0).min(dur));
                let active: Vec<u32> = r
                    .flows
                    .iter()
                    .filter(|f| to_secs(f.start) < a + 1e-9)
                    .map(|f| f.id)
                    .collect();
                let n = active.len().max(1);
                let from = (b - 5.0).max(a);
                let rates: Vec<f64> = active
                    .iter()
                    .filter_map(|&id| flows_rate(r, &[id], from, b))
                    .collect();
                epochs.push(json!({
                    "from_s": a,
                    "flows": active.len(),
                    "fair_share_mbps": cap / n as f64 / 1e6,
                    "flow0_mbps_last_5s": flows_rate(r, &[0], from, b).map(|v| v / 1e6),
                    "jain_last_5s": metrics::jain(&rates),
                    "utilization_last_5s": mean_in(r, Metric::Utilization, "link:bottleneck", from, b),
                }));
                k += 1.0;
            }
            let q: Vec<f64> = r
                .series
                .points(Metric::QueuePkts, "port:bottleneck")
                .into_iter()
                .filter(|p| p.0 > 5.0)
                .map(|p| p.1)
                .collect();
            json!({
                "tracked_flows": all_ids.len(),
                "utilization_after_5s": mean_in(r, Metric::Utilization, "link:bottleneck", 5.0, dur),
                "mean_queue_pkts_after_5s": metrics::mean(&q),
                "max_queue_pkts_after_5s": q.iter().copied().reduce(f64::max),
                "epochs": epochs,
            })
        }
        Figure::Fig3 | Figure::Fig4 => json!({
            "rho": r.rho,
            "utilization": mean_in(r, Metric::Utilization, "link:bottleneck", 0.0, dur),
            "groups": group_fct(r),
        }),
        Figure::Fig5 | Figure::Fig7 => {
            let link = if fig == Figure::Fig5 {
                "bottleneck"
            } else {
                "legacy"
            };
            let ka = tracked(r, FlowKind::Ka);
            let tcp = tracked(r, FlowKind::TcpNewReno);
            let ka_one: Vec<u32> = ka.iter().copied().take(1).collect();
            let mut ka_epochs = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut tcp_epochs = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut t = 0.0;
            while t < dur - 1e-9 {
                let (a, b) = (t, (t + 20.0).min(dur));
                let from = a + 2.0;
                let util = mean_in(r, Metric::Utilization, &format!("link:{link}"), from, b);
                let port = if fig == Figure::Fig5 {
                    "bottleneck"
                } else {
                    "ka"
                };
                let port_ka = mean_in(r, Metric::KaMode, &format!("port:{port}"), from, b);
                let flow_ka = ka_one
                    .first()
                    .and_then(|id| mean_in(r, Metric::KaMode, &format!("flow:{id}"), from, b));
                let ka_rate = flows_rate(r, &ka, from, b);
                let tcp_epoch = ((t / 20.0).round() as u64) % 2 == 1;
                if tcp_epoch {
                    tcp_epochs.0.extend(util);
                    tcp_epochs.1.extend(port_ka);
                    tcp_epochs.2.extend(flow_ka);
                    tcp_epochs.3.extend(ka_rate);
                    tcp_epochs.4.extend(flows_rate(r, &tcp, from, b));
                } else {
                    ka_epochs.0.extend(util);
                    ka_epochs.1.extend(port_ka);
                    ka_epochs.2.extend(flow_ka);
                    ka_epochs.3.extend(ka_rate);
                }
                t += 20.0;
            }
            let mbps = |v: &[f64]| metrics::mean(v).map(|x| x / 1e6);
            json!({
                "link": link,
                "fair_share_ka_only_mbps": cap / 64.0 / 1e6,
                "fair_share_mixed_mbps": cap / 128.0 / 1e6,
                "note": "epoch means skip the first 2 s of each 20 s epoch",
                "ka_only_epochs": {
                    "utilization": metrics::mean(&ka_epochs.0),
                    "router_ka_mode_frac": metrics::mean(&ka_epochs.1),
                    "ka_flow_ka_mode_frac": metrics::mean(&ka_epochs.2),
                    "ka_flow_mbps": mbps(&ka_epochs.3),
                },
                "tcp_epochs": {
                    "utilization": metrics::mean(&tcp_epochs.0),
                    "router_ka_mode_frac": metrics::mean(&tcp_epochs.1),
                    "ka_flow_ka_mode_frac": metrics::mean(&tcp_epochs.2),
                    "ka_flow_mbps": mbps(&tcp_epochs.3),
                    "tcp_flow_mbps": mbps(&tcp_epochs.4),
                },
            })
        }
    }
}

impl Experiment for Figure {
    fn name(&self) -> &'static str {
        match self {
            Figure::Fig2 => "fig2",
            Figure::Fig3 => "fig3",
            Figure::Fig4 => "fig4",
            Figure::Fig5 => "fig5",
            Figure::Fig7 => "fig7",
        }
    }

    fn about(&self) -> &'static str {
        match self {
            Figure::Fig2 => "Kick-Ass paper Fig. 2: KA and RCP dynamics, a flow joins every 10 s",
            Figure::Fig3 => "Kick-Ass paper Fig. 3: mean FCT under light load, KA vs RCP vs TCP",
            Figure::Fig4 => "Kick-Ass paper Fig. 4: TCP and KA sharing a KA router",
            Figure::Fig5 => "Kick-Ass paper Fig. 5: KA and TCP epochs at a KA router",
            Figure::Fig7 => "Kick-Ass paper Fig. 7: KA flows meet TCP at a legacy router",
        }
    }

    fn title(&self) -> String {
        figure_title(*self)
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        variants(*self)
    }

    fn prepare(&self, _variant: &str, s: &mut Scenario) {
        if *self == Figure::Fig2 {
            // One more flow every 10 s for as long as the run lasts.
            if let Some(g) = s.groups.get_mut(1) {
                g.count = ((s.duration_s - 1e-9) / 10.0).floor().max(0.0) as usize;
                g.track = g.count;
            }
        }
    }

    fn headline(&self, r: &RunResult) -> Value {
        headline(*self, r)
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        crate::paper::claims::check(*self, results)
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        combined_panels(*self, results)
    }
}

/// The panels of the combined figure.
pub fn combined_panels(fig: Figure, results: &[(&str, RunResult)]) -> Vec<Panel> {
    let time = |title: &str, y: &str, curves: Vec<Curve>, shade: Vec<(f64, f64)>| Panel {
        title: title.into(),
        x_label: "time (s)".into(),
        y_label: y.into(),
        curves,
        shade,
        ..Panel::default()
    };
    match fig {
        Figure::Fig2 => {
            let mut thr = Vec::new();
            let mut util = Vec::new();
            let mut queue = Vec::new();
            for (name, r) in results {
                let label = name.to_uppercase();
                thr.push(series_curve(
                    r,
                    &label,
                    Metric::ThroughputBps,
                    "flow:0",
                    1e-6,
                ));
                util.push(series_curve(
                    r,
                    &label,
                    Metric::Utilization,
                    "link:bottleneck",
                    1.0,
                ));
                queue.push(series_curve(
                    r,
                    &label,
                    Metric::QueuePkts,
                    "port:bottleneck",
                    1.0,
                ));
            }
            if let Some((_, r)) = results.first() {
                let cap = r.hops.first().map_or(0.0, |h| h.capacity_bps as f64);
                let mut fair = Vec::new();
                for (t, _) in r.series.points(Metric::Utilization, "link:bottleneck") {
                    let n = r
                        .flows
                        .iter()
                        .filter(|f| to_secs(f.start) < t - 1e-9)
                        .count()
                        .max(1);
                    fair.push((t, cap / n as f64 / 1e6));
                }
                thr.push(Curve {
                    label: "fair share".into(),
                    points: fair,
                });
            }
            vec![
                time("(a) Throughput of a single flow", "Mbit/s", thr, Vec::new()),
                Panel {
                    y_range: Some((0.0, 1.1)),
                    ..time(
                        "(b) Bottleneck utilization",
                        "utilization",
                        util,
                        Vec::new(),
                    )
                },
                time("(c) Bottleneck queue", "packets", queue, Vec::new()),
            ]
        }
        Figure::Fig3 => {
            let curves = [("ka", "KA"), ("rcp", "RCP"), ("tcp", "TCP")]
                .iter()
                .filter_map(|(v, label)| find(results, v).map(|r| fct_curve(r, label, v)))
                .collect();
            vec![report::fct_size_panel(curves)]
        }
        Figure::Fig4 => {
            let mut curves = Vec::new();
            if let Some(r) = find(results, "tcp-alone") {
                curves.push(fct_curve(r, "TCP no KA", "tcp"));
            }
            if let Some(r) = find(results, "mixed") {
                curves.push(fct_curve(r, "TCP shared", "tcp"));
                curves.push(fct_curve(r, "KA shared", "ka"));
            }
            vec![report::fct_size_panel(curves)]
        }
        Figure::Fig5 | Figure::Fig7 => {
            let Some(r) = find(results, "mixed") else {
                return Vec::new();
            };
            let link = if fig == Figure::Fig5 {
                "bottleneck"
            } else {
                "legacy"
            };
            let ka = tracked(r, FlowKind::Ka);
            let ka0 = ka.first().copied().unwrap_or(0);
            let shade = if fig == Figure::Fig5 {
                plot::zero_intervals(&r.series, Metric::KaMode, "port:bottleneck")
            } else {
                plot::zero_intervals(&r.series, Metric::KaMode, &format!("flow:{ka0}"))
            };
            let mut thr = vec![series_curve(
                r,
                "KA flow",
                Metric::ThroughputBps,
                &format!("flow:{ka0}"),
                1e-6,
            )];
            let mut tcp_pts = Vec::new();
            for id in tracked(r, FlowKind::TcpNewReno) {
                if let Some(&(t, _)) = tcp_pts.last() {
                    tcp_pts.push((t, f64::NAN)); // a new flow: break the line
                }
                tcp_pts.extend(
                    r.series
                        .points(Metric::ThroughputBps, &format!("flow:{id}"))
                        .into_iter()
                        .map(|(t, v)| (t, v / 1e6)),
                );
            }
            if !tcp_pts.is_empty() {
                thr.push(Curve {
                    label: "TCP flow".into(),
                    points: tcp_pts,
                });
            }
            let mut util = vec![series_curve(
                r,
                link,
                Metric::Utilization,
                &format!("link:{link}"),
                1.0,
            )];
            if fig == Figure::Fig7 {
                util.push(series_curve(r, "ka", Metric::Utilization, "link:ka", 1.0));
            }
            vec![
                time(
                    "(a) Throughput of a single flow",
                    "Mbit/s",
                    thr,
                    shade.clone(),
                ),
                Panel {
                    y_range: Some((0.0, 1.1)),
                    ..time("(b) Link utilization", "utilization", util, shade.clone())
                },
                time(
                    "(c) Queue",
                    "packets",
                    vec![series_curve(
                        r,
                        link,
                        Metric::QueuePkts,
                        &format!("port:{link}"),
                        1.0,
                    )],
                    shade,
                ),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_scenario_parses_with_paper_parameters() {
        for fig in [
            Figure::Fig2,
            Figure::Fig3,
            Figure::Fig4,
            Figure::Fig5,
            Figure::Fig7,
        ] {
            for (name, text) in variants(fig) {
                let s = super::super::scenario(text, None, None).unwrap();
                assert_eq!(s.name, fig.to_string());
                assert_eq!(s.variant, name);
                assert_eq!(s.packet_bytes, 1500);
                let hops = s.topology.hops();
                let last = hops.last().unwrap();
                assert_eq!(last.capacity_mbps, 150.0, "{fig}/{name}");
                assert_eq!(last.queue_pkts, 1000);
                let rtt: f64 = 2.0 * hops.iter().map(|h| h.delay_ms).sum::<f64>();
                assert_eq!(rtt, 100.0);
            }
        }
        let s = super::super::scenario(variants(Figure::Fig3)[0].1, Some(7), Some(5.0)).unwrap();
        assert_eq!((s.seed, s.duration_s), (7, 5.0));
        assert_eq!("fig7".parse::<Figure>(), Ok(Figure::Fig7));
        assert!("fig6".parse::<Figure>().is_err());
    }
}

//! Paper §V "Overhead Reduction": Figs 2 and 3 with the ports signalling
//! each flow once per RTT (`[router] stamp_every = "rtt"`, DESIGN §3.9)
//! next to the paper's per-packet signalling.
//!
//! | experiment | variants (subdirectories) | scenario files |
//! |---|---|---|
//! | fig2-stamp | `ka/`, `ka-rtt/`, `rcp/`, `rcp-rtt/` | `fig2-ka.toml`, `fig2-ka-rtt.toml`, `fig2-rcp.toml`, `fig2-rcp-rtt.toml` |
//! | fig3-stamp | `ka/`, `ka-rtt/`, `rcp/`, `rcp-rtt/`, `tcp/` | `fig3-*.toml`, `fig3-*-rtt.toml` |
//!
//! The per-packet variants are the scenarios of `fig2` / `fig3` unchanged
//! but for their name (the same runs: `flows.csv` and `series.csv` are
//! byte-identical to the figure's). The checks: Fig. 2's and Fig. 3's own claims on the
//! once-per-RTT variants, and that once per RTT writes at least
//! [`MIN_REDUCTION`] times fewer signals (KA leading fragments, lowered RCP
//! options) than per-packet signalling.

use serde_json::{Value, json};

use super::{Experiment, Figure, fct_curve, find};
use crate::paper::claims::{self, Claim};
use crate::results::RunResult;
use crate::results::plot::Panel;
use crate::results::report;
use crate::scenario::Scenario;

/// The factor by which once-per-RTT signalling must cut the signals a
/// port writes, against per-packet signalling of the same scenario.
pub const MIN_REDUCTION: f64 = 10.0;

/// One of the paper's figures with once-per-RTT signalling beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampInterval {
    /// Fig. 2: a flow joins every 10 s.
    Fig2,
    /// Fig. 3: FCT under light load.
    Fig3,
}

impl StampInterval {
    fn figure(self) -> Figure {
        match self {
            StampInterval::Fig2 => Figure::Fig2,
            StampInterval::Fig3 => Figure::Fig3,
        }
    }
}

/// Signals the bottleneck port wrote: KA leading fragments plus lowered
/// native-RCP options (a port uses one carrier, so one of them is 0).
pub fn signals_written(r: &RunResult) -> u64 {
    r.hops.first().map_or(0, |h| {
        h.forward.fragments_made + h.forward.rcp_options_lowered
    })
}

/// The reduction claim for carrier `label`: `per_packet` vs `per_rtt`.
fn reduction(
    exp: &str,
    label: &str,
    per_packet: Option<&RunResult>,
    per_rtt: Option<&RunResult>,
) -> Option<Claim> {
    let (p, q) = (signals_written(per_packet?), signals_written(per_rtt?));
    let ratio = p as f64 / (q.max(1)) as f64;
    Some(Claim::new(
        format!("{exp}: {label} signals once per RTT >= {MIN_REDUCTION} x fewer than per packet"),
        format!("per packet {p}, once per RTT {q}: {ratio:.1}x"),
        ratio >= MIN_REDUCTION,
    ))
}

impl Experiment for StampInterval {
    fn name(&self) -> &'static str {
        match self {
            StampInterval::Fig2 => "fig2-stamp",
            StampInterval::Fig3 => "fig3-stamp",
        }
    }

    fn about(&self) -> &'static str {
        match self {
            StampInterval::Fig2 => {
                "Paper §V: Fig. 2 with each flow signalled once per RTT vs every packet"
            }
            StampInterval::Fig3 => {
                "Paper §V: Fig. 3 with each flow signalled once per RTT vs every packet"
            }
        }
    }

    fn title(&self) -> String {
        match self {
            StampInterval::Fig2 => "Fig. 2, signalled once per RTT (-RTT) or per packet",
            StampInterval::Fig3 => "Fig. 3, signalled once per RTT (-RTT) or per packet",
        }
        .to_string()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        match self {
            StampInterval::Fig2 => vec![
                ("ka", include_str!("../../scenarios/fig2-ka.toml")),
                ("ka-rtt", include_str!("../../scenarios/fig2-ka-rtt.toml")),
                ("rcp", include_str!("../../scenarios/fig2-rcp.toml")),
                ("rcp-rtt", include_str!("../../scenarios/fig2-rcp-rtt.toml")),
            ],
            StampInterval::Fig3 => vec![
                ("ka", include_str!("../../scenarios/fig3-ka.toml")),
                ("ka-rtt", include_str!("../../scenarios/fig3-ka-rtt.toml")),
                ("rcp", include_str!("../../scenarios/fig3-rcp.toml")),
                ("rcp-rtt", include_str!("../../scenarios/fig3-rcp-rtt.toml")),
                ("tcp", include_str!("../../scenarios/fig3-tcp.toml")),
            ],
        }
    }

    fn prepare(&self, variant: &str, s: &mut Scenario) {
        self.figure().prepare(variant, s);
        // The per-packet variants are the figure's own scenario files; the
        // name is a label only (no seed or stream derives from it).
        s.name = self.name().to_string();
    }

    fn headline(&self, r: &RunResult) -> Value {
        let mut h = self.figure().headline(r);
        if let Some(o) = h.as_object_mut() {
            let c = r.hops.first().map(|h| h.forward).unwrap_or_default();
            o.insert(
                "signals".into(),
                json!({
                    "fragments_made": c.fragments_made,
                    "rcp_options_lowered": c.rcp_options_lowered,
                    "signals_skipped": c.signals_skipped,
                    "packets_out": c.packets_out,
                }),
            );
        }
        h
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        let exp = self.name();
        let mut out = Vec::new();
        match self {
            StampInterval::Fig2 => {
                for v in ["ka", "ka-rtt", "rcp", "rcp-rtt"] {
                    if let Some(r) = find(results, v) {
                        out.extend(claims::fig2(v, r));
                    }
                }
            }
            StampInterval::Fig3 => out.extend(claims::fig3_of(
                "fig3-stamp (once per RTT)",
                find(results, "ka-rtt"),
                find(results, "rcp-rtt"),
                find(results, "tcp"),
            )),
        }
        for (carrier, pkt, rtt) in [("KA", "ka", "ka-rtt"), ("RCP", "rcp", "rcp-rtt")] {
            out.extend(reduction(
                exp,
                carrier,
                find(results, pkt),
                find(results, rtt),
            ));
        }
        out
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        match self {
            StampInterval::Fig2 => super::combined_panels(Figure::Fig2, results),
            StampInterval::Fig3 => {
                let curves = [
                    ("ka", "KA", "ka"),
                    ("ka-rtt", "KA-RTT", "ka"),
                    ("rcp", "RCP", "rcp"),
                    ("rcp-rtt", "RCP-RTT", "rcp"),
                    ("tcp", "TCP", "tcp"),
                ]
                .iter()
                .filter_map(|(v, label, group)| {
                    find(results, v).map(|r| fct_curve(r, label, group))
                })
                .collect();
                vec![report::fct_size_panel(curves)]
            }
        }
    }
}

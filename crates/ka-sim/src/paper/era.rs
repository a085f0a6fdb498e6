//! Figs 3 and 4 with the TCP of the paper's own ns-3 (3.18) beside the
//! TCP the figures run with (matched to ns-3.44, DESIGN §9.2).
//!
//! | experiment | variants (subdirectories) | scenario files |
//! |---|---|---|
//! | fig3-era | `ka/`, `rcp/`, `tcp/`, `ka-era/`, `rcp-era/`, `tcp-era/`, `tcp-era-536/` | `fig3-*.toml` |
//! | fig4-era | `tcp-alone/`, `mixed/`, `tcp-alone-era/`, `mixed-era/` | `fig4-*.toml` |
//!
//! The variants without `-era` are the figure's own scenarios (the same
//! runs as `fig3` / `fig4`: byte-identical `flows.csv` and `series.csv`).
//! The `-era` variants replace their `[tcp]` table by `profile = "ns3-18"`
//! ([`TcpProfile::Ns3_18`]) for every endpoint, as the paper's whole
//! simulation ran on ns-3.18: TCP's senders and receivers, KA's TCP mode
//! and the native-RCP carrier. The checks: the figure's own on the
//! ns-3.44 variants; on the `-era` ones, TCP/KA ≥ [`ERA_TCP_OVER_KA`] for
//! flows of ≥ 100 packets (the paper's "nearly an order of magnitude"),
//! also with KA kept on the figure's profile (only the TCP flows on
//! ns-3.18), and the per-bucket mean FCTs of both profiles in the JSON
//! headlines (`buckets`). `tcp-era-536` is a what-if: the ns-3.18 TCP
//! sending ns-3's default 536-byte segments (`[tcp] mss_bytes`) for the
//! same flows.

use serde_json::{Value, json};

use super::{Experiment, Figure, fct_curve, find};
use crate::paper::claims::{self, Claim};
use crate::results::RunResult;
use crate::results::plot::Panel;
use crate::results::report;
use crate::scenario::{Scenario, TcpKnobs, TcpProfile};

/// TCP/KA mean-FCT ratio for flows of ≥ 100 packets that the paper's
/// "nearly an order of magnitude" is read as.
pub const ERA_TCP_OVER_KA: f64 = 8.0;

/// Fig. 3 or Fig. 4 with both TCP profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Fig. 3: KA, RCP and TCP alone.
    Fig3,
    /// Fig. 4: TCP alone and TCP sharing with KA at a KA router.
    Fig4,
}

/// The suffix of the variants run with the ns-3.18 profile.
const ERA: &str = "-era";

/// The Fig. 3 variant whose TCP sends ns-3's default 536-byte segments
/// (the flows keep their sizes in 1500-byte packets): the paper says its
/// data packets were 1500 bytes long, so this is a what-if for a TCP
/// baseline left at ns-3's default `SegmentSize`.
const SMALL_SEGMENTS: &str = "tcp-era-536";

/// ns-3's default `SegmentSize` (bytes; 3.18 and every later release).
const NS3_DEFAULT_SEGMENT: usize = 536;

impl Era {
    fn figure(self) -> Figure {
        match self {
            Era::Fig3 => Figure::Fig3,
            Era::Fig4 => Figure::Fig4,
        }
    }
}

/// Mean FCT per quarter-decade size bucket of group `group`, as JSON rows.
fn bucket_rows(r: &RunResult, group: &str) -> Value {
    let rows: Vec<Value> = claims::pooled_buckets(&[r], group)
        .into_iter()
        .filter(|b| b.1 > 0)
        .map(|(b, n, m)| json!({"pkts": claims::bucket_label(b), "n": n, "mean_fct_s": m}))
        .collect();
    Value::Array(rows)
}

/// The ratio claim: TCP (group `tcp` of `tcp`) over KA (group `ka` of
/// `ka`), flows of ≥ 100 packets.
fn ratio(what: &str, tcp: Option<&RunResult>, ka: Option<&RunResult>) -> Option<Claim> {
    let (nt, t) = claims::mean_fct(tcp?, "tcp", 100, u64::MAX)?;
    let (nk, k) = claims::mean_fct(ka?, "ka", 100, u64::MAX)?;
    Some(Claim::new(
        format!("{what}: TCP mean FCT >= {ERA_TCP_OVER_KA} x KA for flows >= 100 packets"),
        format!(
            "TCP {t:.3} s (n={nt}) / KA {k:.3} s (n={nk}) = {:.2}x",
            t / k
        ),
        t >= ERA_TCP_OVER_KA * k,
    ))
}

impl Experiment for Era {
    fn name(&self) -> &'static str {
        match self {
            Era::Fig3 => "fig3-era",
            Era::Fig4 => "fig4-era",
        }
    }

    fn about(&self) -> &'static str {
        match self {
            Era::Fig3 => {
                "Kick-Ass paper Fig. 3 with ns-3.18's TCP (profile ns3-18) beside ns-3.44's"
            }
            Era::Fig4 => {
                "Kick-Ass paper Fig. 4 with ns-3.18's TCP (profile ns3-18) beside ns-3.44's"
            }
        }
    }

    fn title(&self) -> String {
        match self {
            Era::Fig3 => "Fig. 3, TCP as in ns-3.44 and (-era) as in ns-3.18",
            Era::Fig4 => "Fig. 4, TCP as in ns-3.44 and (-era) as in ns-3.18",
        }
        .to_string()
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        match self {
            Era::Fig3 => {
                let ka = include_str!("../../scenarios/fig3-ka.toml");
                let rcp = include_str!("../../scenarios/fig3-rcp.toml");
                let tcp = include_str!("../../scenarios/fig3-tcp.toml");
                vec![
                    ("ka", ka),
                    ("rcp", rcp),
                    ("tcp", tcp),
                    ("ka-era", ka),
                    ("rcp-era", rcp),
                    ("tcp-era", tcp),
                    ("tcp-era-536", tcp),
                ]
            }
            Era::Fig4 => {
                let alone = include_str!("../../scenarios/fig4-tcp-alone.toml");
                let mixed = include_str!("../../scenarios/fig4-mixed.toml");
                vec![
                    ("tcp-alone", alone),
                    ("mixed", mixed),
                    ("tcp-alone-era", alone),
                    ("mixed-era", mixed),
                ]
            }
        }
    }

    fn prepare(&self, variant: &str, s: &mut Scenario) {
        self.figure().prepare(variant, s);
        // A label only (no seed or stream derives from the name).
        s.name = self.name().to_string();
        if variant.contains(ERA) {
            s.tcp = TcpKnobs {
                profile: Some(TcpProfile::Ns3_18),
                ..TcpKnobs::default()
            };
        }
        if variant == SMALL_SEGMENTS {
            s.tcp.mss_bytes = Some(NS3_DEFAULT_SEGMENT);
        }
    }

    fn headline(&self, r: &RunResult) -> Value {
        let mut h = self.figure().headline(r);
        if let Some(o) = h.as_object_mut() {
            let profile = r.scenario.tcp.profile.unwrap_or_default();
            o.insert("tcp_profile".into(), json!(profile.name()));
            let groups: serde_json::Map<String, Value> = r
                .scenario
                .groups
                .iter()
                .map(|g| (g.name.clone(), bucket_rows(r, &g.name)))
                .collect();
            o.insert("buckets".into(), Value::Object(groups));
        }
        h
    }

    fn claims(&self, results: &[(&str, RunResult)]) -> Vec<Claim> {
        let f = |v: &str| find(results, v);
        match self {
            Era::Fig3 => {
                let mut out =
                    claims::fig3_of("fig3-era (ns-3.44 profile)", f("ka"), f("rcp"), f("tcp"));
                out.extend(claims::fig3_of(
                    "fig3-era (ns3-18 profile)",
                    f("ka-era"),
                    f("rcp-era"),
                    f("tcp-era"),
                ));
                out.extend(ratio(
                    "fig3-era (ns3-18 profile)",
                    f("tcp-era"),
                    f("ka-era"),
                ));
                out.extend(ratio(
                    "fig3-era (TCP ns3-18, KA ns-3.44 profile)",
                    f("tcp-era"),
                    f("ka"),
                ));
                out.extend(ratio(
                    "fig3-era (TCP ns3-18 with 536-byte segments, KA ns-3.44 profile)",
                    f(SMALL_SEGMENTS),
                    f("ka"),
                ));
                out
            }
            Era::Fig4 => {
                let mut out =
                    claims::fig4_of("fig4-era (ns-3.44 profile)", f("tcp-alone"), f("mixed"));
                out.extend(claims::fig4_of(
                    "fig4-era (ns3-18 profile)",
                    f("tcp-alone-era"),
                    f("mixed-era"),
                ));
                out.extend(ratio(
                    "fig4-era (ns3-18 profile, mixed)",
                    f("mixed-era"),
                    f("mixed-era"),
                ));
                out
            }
        }
    }

    fn panels(&self, results: &[(&str, RunResult)]) -> Vec<Panel> {
        let curves: &[(&str, &str, &str)] = match self {
            Era::Fig3 => &[
                ("ka", "KA", "ka"),
                ("rcp", "RCP", "rcp"),
                ("tcp", "TCP", "tcp"),
                ("ka-era", "KA-era", "ka"),
                ("rcp-era", "RCP-era", "rcp"),
                ("tcp-era", "TCP-era", "tcp"),
                (SMALL_SEGMENTS, "TCP-era 536 B", "tcp"),
            ],
            Era::Fig4 => &[
                ("tcp-alone", "TCP no KA", "tcp"),
                ("mixed", "TCP shared", "tcp"),
                ("mixed", "KA shared", "ka"),
                ("tcp-alone-era", "TCP no KA-era", "tcp"),
                ("mixed-era", "TCP shared-era", "tcp"),
                ("mixed-era", "KA shared-era", "ka"),
            ],
        };
        let curves = curves
            .iter()
            .filter_map(|(v, label, group)| find(results, v).map(|r| fct_curve(r, label, group)))
            .collect();
        vec![report::fct_size_panel(curves)]
    }
}

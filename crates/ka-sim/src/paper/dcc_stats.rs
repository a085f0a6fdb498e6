//! The DCC experiments' statistics (flow completion times, the
//! concurrent flows' rates over 1 s windows, the middle link's rate) and
//! their FCT panel, shared by `dcc` and `dcc_seeds`; see `dcc`'s module
//! docs for the definitions.

use crate::engine::to_secs;
use crate::results::RunResult;
use crate::results::metrics::{self, Metric};
use crate::results::plot::{Curve, Panel};

/// The bound of the fairness claim.
pub const LCCP_JAIN: f64 = 0.95;

/// Window of the concurrent-rates statistics, s.
pub const WINDOW_S: f64 = 1.0;

/// Completion times (s) of the sized (TCP) flows, sorted.
pub fn fcts(r: &RunResult) -> Vec<f64> {
    let mut v: Vec<f64> = r
        .flows
        .iter()
        .filter(|f| f.size_bytes.is_some())
        .filter_map(|f| f.fct())
        .map(to_secs)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Statistics of the concurrent flows over [`WINDOW_S`] windows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Windows {
    /// (window end, Jain's index of the sized flows' rates), windows with
    /// at least two sized flows sending throughout.
    pub jain: Vec<(f64, f64)>,
    /// The same with the UDP flows' rates included (windows with at least
    /// one sized flow and one UDP flow).
    pub jain_with_udp: Vec<(f64, f64)>,
    /// Per window with n ≥ 1 sized flows sending throughout: each UDP
    /// flow's rate over the fair share `C/(n+1)`.
    pub udp_over_share: Vec<f64>,
}

/// The concurrent-rate statistics of a run (see the module docs).
pub fn windows(r: &RunResult, capacity_bps: f64) -> Windows {
    let bin = to_secs(r.series.bin).max(1e-9);
    let per = (WINDOW_S / bin).round().max(1.0) as usize;
    let rtt = r.flows.first().map_or(0.1, |f| to_secs(f.path.base_rtt));
    let n_windows = (r.sim_seconds / WINDOW_S).floor() as usize;
    let series_of = |id: u32| {
        r.series
            .points(Metric::ThroughputBps, &format!("flow:{id}"))
    };
    let mean_in = |pts: &[(f64, f64)], a: f64, b: f64| {
        let v: Vec<f64> = pts
            .iter()
            .filter(|(t, _)| *t > a + 1e-9 && *t <= b + 1e-9)
            .map(|p| p.1)
            .collect();
        (v.len() == per).then(|| v.iter().sum::<f64>() / per as f64)
    };
    let throughout = |f: &crate::model::world::FlowRecord, a: f64, b: f64| {
        to_secs(f.start) + 2.0 * rtt <= a && f.end.or(f.stop).is_none_or(|e| to_secs(e) >= b)
    };
    let sized: Vec<_> = r
        .flows
        .iter()
        .filter(|f| f.size_bytes.is_some())
        .map(|f| (f, series_of(f.id)))
        .collect();
    let udp: Vec<_> = r
        .flows
        .iter()
        .filter(|f| f.kind.is_udp())
        .map(|f| (f, series_of(f.id)))
        .collect();
    let mut out = Windows::default();
    for w in 0..n_windows {
        let (a, b) = (w as f64 * WINDOW_S, (w + 1) as f64 * WINDOW_S);
        let x: Vec<f64> = sized
            .iter()
            .filter(|(f, _)| throughout(f, a, b))
            .filter_map(|(_, p)| mean_in(p, a, b))
            .collect();
        let u: Vec<f64> = udp
            .iter()
            .filter(|(f, _)| throughout(f, a, b))
            .filter_map(|(_, p)| mean_in(p, a, b))
            .collect();
        if x.len() >= 2
            && let Some(j) = metrics::jain(&x)
        {
            out.jain.push((b, j));
        }
        if x.is_empty() || u.is_empty() {
            continue;
        }
        let fair = capacity_bps / (x.len() + u.len()) as f64;
        out.udp_over_share.extend(u.iter().map(|v| v / fair));
        let all: Vec<f64> = x.iter().chain(&u).copied().collect();
        if let Some(j) = metrics::jain(&all) {
            out.jain_with_udp.push((b, j));
        }
    }
    out
}

pub(crate) fn mean_of(v: &[(f64, f64)]) -> Option<f64> {
    metrics::mean(&v.iter().map(|p| p.1).collect::<Vec<_>>())
}

pub(crate) fn middle_bps(r: &RunResult) -> f64 {
    r.hops
        .iter()
        .find(|h| h.name == "middle")
        .map_or(1.0, |h| h.capacity_bps as f64)
}

/// The seed's Fig. 2 panel: CDFs of the flow completion time.
pub(crate) fn fct_cdf_panel(title: &str, cdf: Vec<Curve>) -> Panel {
    Panel {
        title: title.into(),
        x_label: "flow completion time (s)".into(),
        y_label: "CDF".into(),
        curves: cdf,
        y_range: Some((0.0, 1.02)),
        ..Panel::default()
    }
}

//! The checks a run prints: the hosts' invariants (every flow's bytes
//! arrive, FCTs are positive, the router was sampled), and the simulation
//! against the real run, scheme by scheme. The paper's claims themselves
//! are `ka_sim::paper::testbed::claims`, applied to both halves.

use std::collections::{HashMap, HashSet};

use ka_sim::claims::Claim;
use ka_sim::engine::to_secs;
use ka_sim::metrics::Metric;
use ka_sim::paper::mean_fct_in;
use ka_sim::paper::testbed::SIZE_BUCKETS;
use ka_sim::sim::RunResult;

use crate::wire::Record;

/// Fewest completed flows a size bucket needs in both runs to be compared.
pub const MIN_BUCKET_FLOWS: usize = 10;
/// Largest relative difference of the mean FCT per bucket, real against
/// simulated.
pub const SIM_REAL_TOLERANCE: f64 = 0.30;

fn parse(lines: &[String]) -> Vec<Record> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str(l.trim()).ok())
        .collect()
}

/// The invariants of one real run, from what its hosts printed and the
/// result assembled from it.
pub fn sanity(label: &str, senders: &[String], receiver: &[String], r: &RunResult) -> Vec<Claim> {
    let (sent, recvd) = (parse(senders), parse(receiver));
    let mut size: HashMap<(u32, u32), u64> = HashMap::new();
    let mut ok = HashSet::new();
    let mut failed = Vec::new();
    for rec in &sent {
        match rec {
            Record::Start {
                sender,
                seq,
                size_bytes,
                ..
            } => {
                size.insert((*sender, *seq), *size_bytes);
            }
            Record::Done {
                sender,
                seq,
                ok: true,
                ..
            } => {
                ok.insert((*sender, *seq));
            }
            Record::Done {
                sender, seq, error, ..
            } => failed.push(format!(
                "{sender}/{seq}: {}",
                error.clone().unwrap_or_default()
            )),
            _ => {}
        }
    }
    let mut arrived: HashMap<(u32, u32), u64> = HashMap::new();
    let mut broken = Vec::new();
    for rec in &recvd {
        match rec {
            Record::End {
                sender,
                seq,
                size_bytes,
                ..
            } => {
                arrived.insert((*sender, *seq), *size_bytes);
            }
            Record::Broken {
                flow: Some(f),
                bytes,
                error,
            } if ok.contains(f) => broken.push(format!("{}/{}: {bytes} bytes, {error}", f.0, f.1)),
            _ => {}
        }
    }
    let missing: Vec<String> = ok
        .iter()
        .filter(|f| arrived.get(f) != size.get(f))
        .map(|f| format!("{}/{}", f.0, f.1))
        .collect();
    let fcts: Vec<f64> = r
        .flows
        .iter()
        .filter_map(|f| f.fct())
        .map(to_secs)
        .collect();
    let completed = fcts.len();
    let bins = (r.sim_seconds / 0.1).floor();
    let util_bins = r
        .series
        .points(Metric::Utilization, "link:bottleneck")
        .len() as f64;
    let queue_bins = r.series.points(Metric::QueuePkts, "port:bottleneck").len() as f64;
    let sojourn_bins = r.series.points(Metric::SojournMs, "port:bottleneck").len();
    let show = |v: &[String]| v.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    vec![
        Claim::new(
            format!("{label}: every flow the sender completed arrived whole at the receiver"),
            format!(
                "{} completed by the senders, {} arrived with exactly their bytes{}",
                ok.len(),
                ok.len() - missing.len(),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!("; missing or short: {}", show(&missing))
                }
            ),
            !ok.is_empty() && missing.is_empty() && broken.is_empty(),
        ),
        Claim::new(
            format!("{label}: no flow failed (connect, send or close)"),
            if failed.is_empty() {
                "none".to_string()
            } else {
                format!("{} failed: {}", failed.len(), show(&failed))
            },
            failed.is_empty(),
        ),
        Claim::new(
            format!("{label}: flows completed within the run, all with positive FCTs"),
            format!(
                "{completed} of {} flows, shortest FCT {:.1} ms",
                r.flows.len(),
                fcts.iter().copied().fold(f64::INFINITY, f64::min) * 1e3
            ),
            completed > 0 && fcts.iter().all(|&f| f > 0.0),
        ),
        Claim::new(
            format!("{label}: the router's queue was sampled in at least 80 % of the 100 ms bins"),
            format!(
                "{util_bins:.0} utilisation and {queue_bins:.0} queue samples of {bins:.0} bins, {sojourn_bins} with packets dequeued"
            ),
            util_bins >= 0.8 * bins && queue_bins >= 0.8 * bins && sojourn_bins > 0,
        ),
    ]
}

/// One size bucket's mean FCTs.
#[derive(Debug, Clone)]
pub struct BucketCmp {
    /// `lo..hi` packets.
    pub range: (u64, u64),
    /// Simulated (mean s, flows).
    pub sim: (Option<f64>, usize),
    /// Real (mean s, flows).
    pub real: (Option<f64>, usize),
}

impl BucketCmp {
    /// Real over simulated, if both have enough flows.
    pub fn ratio(&self) -> Option<f64> {
        let (Some(s), Some(r)) = (self.sim.0, self.real.0) else {
            return None;
        };
        (self.sim.1 >= MIN_BUCKET_FLOWS && self.real.1 >= MIN_BUCKET_FLOWS && s > 0.0)
            .then(|| r / s)
    }

    /// "1-9", "1000+" …
    pub fn name(&self) -> String {
        match self.range {
            (lo, u64::MAX) => format!("{lo}+"),
            (lo, hi) => format!("{lo}-{}", hi - 1),
        }
    }
}

/// The per-bucket comparison of two runs of one scheme.
pub fn buckets(sim: &RunResult, real: &RunResult) -> Vec<BucketCmp> {
    SIZE_BUCKETS
        .iter()
        .map(|&(lo, hi)| BucketCmp {
            range: (lo, hi),
            sim: mean_fct_in(sim, lo, hi),
            real: mean_fct_in(real, lo, hi),
        })
        .collect()
}

/// Simulation against reality for one scheme: the mean FCT in every size
/// bucket with at least [`MIN_BUCKET_FLOWS`] flows in both within
/// [`SIM_REAL_TOLERANCE`].
pub fn sim_vs_real(label: &str, cmp: &[BucketCmp]) -> Claim {
    let mut parts = Vec::new();
    let mut pass = true;
    let mut compared = 0;
    for b in cmp {
        let f = |v: (Option<f64>, usize)| match v.0 {
            Some(m) => format!("{m:.3} s ({})", v.1),
            None => "-".into(),
        };
        match b.ratio() {
            Some(r) => {
                compared += 1;
                let ok = (r - 1.0).abs() <= SIM_REAL_TOLERANCE;
                pass &= ok;
                parts.push(format!(
                    "{} pkts: real {}, sim {}, {:+.0} %{}",
                    b.name(),
                    f(b.real),
                    f(b.sim),
                    (r - 1.0) * 100.0,
                    if ok { "" } else { " (!)" }
                ));
            }
            None => parts.push(format!(
                "{} pkts: real {}, sim {} (too few flows to compare)",
                b.name(),
                f(b.real),
                f(b.sim)
            )),
        }
    }
    Claim::new(
        format!(
            "{label}: simulated and real mean FCT within {:.0} % in every size bucket (>= {MIN_BUCKET_FLOWS} flows in both)",
            SIM_REAL_TOLERANCE * 100.0
        ),
        parts.join("; "),
        pass && compared > 0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_ratios_need_enough_flows_and_judge_30_percent() {
        let b = |sim: (Option<f64>, usize), real: (Option<f64>, usize)| BucketCmp {
            range: (100, 1000),
            sim,
            real,
        };
        assert_eq!(b((Some(1.0), 20), (Some(1.2), 20)).ratio(), Some(1.2));
        assert_eq!(b((Some(1.0), 9), (Some(1.2), 20)).ratio(), None);
        assert_eq!(b((None, 0), (Some(1.2), 20)).ratio(), None);
        let close = sim_vs_real("x", &[b((Some(1.0), 20), (Some(1.25), 30))]);
        assert!(close.pass, "{}", close.ours);
        let far = sim_vs_real(
            "x",
            &[
                b((Some(1.0), 20), (Some(1.25), 30)),
                b((Some(1.0), 20), (Some(1.4), 30)),
            ],
        );
        assert!(!far.pass);
        assert!(far.ours.contains("+40 %"), "{}", far.ours);
        let none = sim_vs_real("x", &[b((Some(1.0), 2), (Some(9.0), 2))]);
        assert!(!none.pass, "nothing compared is no pass");
        assert_eq!(b((None, 0), (None, 0)).name(), "100-999");
    }
}

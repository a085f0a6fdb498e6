//! The checks a run prints: the hosts' invariants (every flow's bytes
//! arrive, FCTs are positive, the router was sampled), and the simulation
//! against the real run, scheme by scheme. The paper's claims themselves
//! are `ka_sim::paper::testbed::claims`, applied to both halves.

use std::collections::{HashMap, HashSet};

use ka_sim::engine::to_secs;
use ka_sim::paper::claims::Claim;
use ka_sim::paper::testbed::SIZE_BUCKETS;
use ka_sim::paper::{fcts_in, mean_fct_in};
use ka_sim::results::RunResult;
use ka_sim::results::metrics::Metric;

use crate::wire::Record;

/// Fewest completed flows a size bucket needs in both runs to be compared.
pub const MIN_BUCKET_FLOWS: usize = 10;
/// Largest relative difference of the mean FCT per bucket, real against
/// simulated ...
pub const SIM_REAL_TOLERANCE: f64 = 0.30;
/// ... unless the difference is within this many standard errors (Welch:
/// `√(se_real² + se_sim²)`), i.e. the bucket holds too few flows, or flows
/// whose FCTs spread too widely, to resolve 30 %. At the heavy load a
/// bucket of 13–17 flows of 1–9 packets has a standard error of up to
/// 29 % of its mean: a flow that meets CUBIC's or PCC's queue takes 0.5 s
/// where the others take 0.2 s, so two halves that agree flow by flow can
/// still differ by 30 % in the mean by chance. In the buckets of 100
/// packets and more two standard errors are 11–26 %, and 30 % is what
/// binds (`docs/RESULTS.md`, the testbed's heavy load).
pub const SIM_REAL_NOISE_SE: f64 = 2.0;

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
    /// Standard errors of the two means, s (simulated, real); `None` with
    /// fewer than two flows.
    pub se: (Option<f64>, Option<f64>),
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

    /// The difference of the means in standard errors of the difference,
    /// if both have enough flows and a spread.
    pub fn z(&self) -> Option<f64> {
        self.ratio()?;
        let (Some(s), Some(r)) = (self.sim.0, self.real.0) else {
            return None;
        };
        let (Some(es), Some(er)) = self.se else {
            return None;
        };
        let se = (es * es + er * er).sqrt();
        (se > 0.0).then(|| (r - s).abs() / se)
    }

    /// Whether the two means agree: within [`SIM_REAL_TOLERANCE`], or
    /// within [`SIM_REAL_NOISE_SE`] standard errors. `None` if the bucket
    /// is not compared.
    pub fn agrees(&self) -> Option<bool> {
        let r = self.ratio()?;
        Some(
            (r - 1.0).abs() <= SIM_REAL_TOLERANCE
                || self.z().is_some_and(|z| z <= SIM_REAL_NOISE_SE),
        )
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
            se: (std_error_in(sim, lo, hi), std_error_in(real, lo, hi)),
        })
        .collect()
}

/// The standard error of the mean FCT (s) of the flows of `lo..hi`
/// packets: sample standard deviation over √n.
fn std_error_in(r: &RunResult, lo: u64, hi: u64) -> Option<f64> {
    std_error(&fcts_in(r, lo, hi))
}

fn std_error(v: &[f64]) -> Option<f64> {
    let n = v.len();
    if n < 2 {
        return None;
    }
    let m = v.iter().sum::<f64>() / n as f64;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    Some((var / n as f64).sqrt())
}

/// Simulation against reality for one scheme: the mean FCT in every size
/// bucket with at least [`MIN_BUCKET_FLOWS`] flows in both within
/// [`SIM_REAL_TOLERANCE`] or, where the bucket cannot resolve that, within
/// [`SIM_REAL_NOISE_SE`] standard errors ([`BucketCmp::agrees`]).
pub fn sim_vs_real(label: &str, cmp: &[BucketCmp]) -> Claim {
    let mut parts = Vec::new();
    let mut pass = true;
    let mut compared = 0;
    for b in cmp {
        let f = |v: (Option<f64>, usize)| match v.0 {
            Some(m) => format!("{m:.3} s ({})", v.1),
            None => "-".into(),
        };
        match (b.ratio(), b.agrees()) {
            (Some(r), Some(ok)) => {
                compared += 1;
                pass &= ok;
                let note = match b.z() {
                    _ if !ok => " (!)".to_string(),
                    Some(z) if (r - 1.0).abs() > SIM_REAL_TOLERANCE => {
                        format!(" (within noise: {z:.1} s.e.)")
                    }
                    _ => String::new(),
                };
                parts.push(format!(
                    "{} pkts: real {}, sim {}, {:+.0} %{note}",
                    b.name(),
                    f(b.real),
                    f(b.sim),
                    (r - 1.0) * 100.0,
                ));
            }
            _ => parts.push(format!(
                "{} pkts: real {}, sim {} (too few flows to compare)",
                b.name(),
                f(b.real),
                f(b.sim)
            )),
        }
    }
    Claim::new(
        format!(
            "{label}: simulated and real mean FCT within {:.0} % (or {SIM_REAL_NOISE_SE} standard errors) in every size bucket (>= {MIN_BUCKET_FLOWS} flows in both)",
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
        // Tight buckets: a standard error of 1 % of the mean.
        let b = |sim: (Option<f64>, usize), real: (Option<f64>, usize)| BucketCmp {
            range: (100, 1000),
            sim,
            real,
            se: (sim.0.map(|m| m * 0.01), real.0.map(|m| m * 0.01)),
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

    #[test]
    fn a_bucket_too_noisy_to_resolve_30_percent_passes_within_two_standard_errors() {
        let b = |real: f64, se: (f64, f64)| BucketCmp {
            range: (1, 10),
            sim: (Some(0.244), 13),
            real: (Some(real), 13),
            se: (Some(se.0), Some(se.1)),
        };
        // The heavy load's PCC 1-9 bucket: +33 %, 1.3 standard errors.
        let noisy = b(0.324, (0.022, 0.058));
        assert!((noisy.z().unwrap() - 1.29).abs() < 0.01);
        assert_eq!(noisy.agrees(), Some(true));
        let c = sim_vs_real("x", &[noisy]);
        assert!(
            c.pass && c.ours.contains("within noise: 1.3 s.e."),
            "{}",
            c.ours
        );
        // The same means measured tightly: a real disagreement.
        let tight = b(0.324, (0.005, 0.005));
        assert_eq!(tight.agrees(), Some(false));
        assert!(!sim_vs_real("x", &[tight]).pass);
        // Within 30 % needs no noise clause and says nothing about it.
        let close = sim_vs_real("x", &[b(0.3, (0.005, 0.005))]);
        assert!(
            close.pass && !close.ours.contains("noise"),
            "{}",
            close.ours
        );
        // No spread at all: only the 30 % rule.
        assert_eq!(b(0.4, (0.0, 0.0)).agrees(), Some(false));
        assert_eq!(std_error(&[1.0]), None);
        assert!((std_error(&[1.0, 3.0]).unwrap() - 1.0).abs() < 1e-12);
    }
}

//! The `queue = { kind = … }` table of a hop: which queue discipline a
//! router port runs (DESIGN §8.1–8.3), with its knobs.
//!
//! ```toml
//! [topology]
//! kind = "dumbbell"
//! queue_pkts = 1000                        # the discipline's hard limit
//! queue = { kind = "fq-codel" }            # Linux fq_codel defaults, ECN on
//! # queue = { kind = "red", min_th = 250, max_th = 750, max_p = 0.1, ecn = true }
//! # queue = { kind = "droptail" }          # the default
//! ```
//!
//! Unset knobs take the router's defaults ([`RedConfig`], [`FqCodelConfig`]).
//! The packet limit is always the hop's `queue_pkts`.

use std::time::Duration;

use ka_router::qdisc::{FqCodelConfig, QdiscConfig, RedConfig};
use serde::{Deserialize, Serialize};

/// A queue discipline and its knobs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum QueueSpec {
    /// FIFO, tail drop (DESIGN §4.1). The default.
    #[default]
    Droptail,
    /// RED (DESIGN §8.2).
    Red {
        /// min_th, packets. Default 250.
        #[serde(default)]
        min_th: Option<f64>,
        /// max_th, packets. Default 750.
        #[serde(default)]
        max_th: Option<f64>,
        /// Probability at max_th. Default 0.1.
        #[serde(default)]
        max_p: Option<f64>,
        /// EWMA weight. Default 0.002.
        #[serde(default)]
        w_q: Option<f64>,
        /// Gentle RED. Default true.
        #[serde(default)]
        gentle: Option<bool>,
        /// Mark ECT packets instead of dropping. Default true.
        #[serde(default)]
        ecn: Option<bool>,
    },
    /// FQ-CoDel (DESIGN §8.3).
    FqCodel {
        /// CoDel target, ms. Default 5.
        #[serde(default)]
        target_ms: Option<f64>,
        /// CoDel interval, ms. Default 100.
        #[serde(default)]
        interval_ms: Option<f64>,
        /// Flow queues. Default 1024.
        #[serde(default)]
        flows: Option<usize>,
        /// DRR quantum, bytes. Default 1514.
        #[serde(default)]
        quantum: Option<usize>,
        /// Mark ECT packets instead of dropping. Default true.
        #[serde(default)]
        ecn: Option<bool>,
    },
}

impl QueueSpec {
    /// The router's configuration for this spec.
    pub fn config(&self) -> QdiscConfig {
        let ms = |v: f64| Duration::from_secs_f64(v.max(0.0) / 1e3);
        match *self {
            QueueSpec::Droptail => QdiscConfig::DropTail,
            QueueSpec::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
                ecn,
            } => {
                let d = RedConfig::default();
                QdiscConfig::Red(RedConfig {
                    min_th: min_th.unwrap_or(d.min_th),
                    max_th: max_th.unwrap_or(d.max_th),
                    max_p: max_p.unwrap_or(d.max_p),
                    w_q: w_q.unwrap_or(d.w_q),
                    gentle: gentle.unwrap_or(d.gentle),
                    ecn: ecn.unwrap_or(d.ecn),
                    ..d
                })
            }
            QueueSpec::FqCodel {
                target_ms,
                interval_ms,
                flows,
                quantum,
                ecn,
            } => {
                let d = FqCodelConfig::default();
                QdiscConfig::FqCodel(FqCodelConfig {
                    target: target_ms.map_or(d.target, ms),
                    interval: interval_ms.map_or(d.interval, ms),
                    flows: flows.unwrap_or(d.flows),
                    quantum: quantum.unwrap_or(d.quantum),
                    ecn: ecn.unwrap_or(d.ecn),
                    ..d
                })
            }
        }
    }

    /// Checks ranges serde cannot; `what` names the hop in the message.
    pub fn validate(&self, what: &str) -> Result<(), String> {
        let pos = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v > 0.0);
        match *self {
            QueueSpec::Droptail => Ok(()),
            QueueSpec::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                ..
            } => {
                let d = RedConfig::default();
                let (lo, hi) = (min_th.unwrap_or(d.min_th), max_th.unwrap_or(d.max_th));
                if !(pos(min_th) && pos(max_th) && lo < hi) {
                    return Err(format!("{what}: red needs 0 < min_th < max_th"));
                }
                if !max_p.is_none_or(|p| p.is_finite() && p > 0.0 && p <= 1.0) {
                    return Err(format!("{what}: red max_p must be in (0, 1]"));
                }
                if !w_q.is_none_or(|w| w.is_finite() && w > 0.0 && w <= 1.0) {
                    return Err(format!("{what}: red w_q must be in (0, 1]"));
                }
                Ok(())
            }
            QueueSpec::FqCodel {
                target_ms,
                interval_ms,
                flows,
                quantum,
                ..
            } => {
                if !(pos(target_ms) && pos(interval_ms)) {
                    return Err(format!("{what}: fq-codel target/interval must be > 0"));
                }
                if flows.is_some_and(|f| !(1..=65_536).contains(&f)) {
                    return Err(format!("{what}: fq-codel flows must be in 1..=65536"));
                }
                if quantum.is_some_and(|q| q == 0) {
                    return Err(format!("{what}: fq-codel quantum must be > 0"));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct W {
        queue: QueueSpec,
    }

    fn parse(s: &str) -> Result<QueueSpec, toml::de::Error> {
        toml::from_str::<W>(s).map(|w| w.queue)
    }

    #[test]
    fn kinds_and_defaults() {
        assert_eq!(
            parse(r#"queue = { kind = "droptail" }"#).unwrap().config(),
            QdiscConfig::DropTail
        );
        let QdiscConfig::Red(r) = parse(r#"queue = { kind = "red", max_p = 0.2 }"#)
            .unwrap()
            .config()
        else {
            panic!("red");
        };
        assert_eq!(r.max_p, 0.2);
        assert_eq!(r.min_th, RedConfig::default().min_th);
        let QdiscConfig::FqCodel(f) =
            parse(r#"queue = { kind = "fq-codel", target_ms = 2.5, ecn = false }"#)
                .unwrap()
                .config()
        else {
            panic!("fq-codel");
        };
        assert_eq!(f.target, Duration::from_micros(2500));
        assert!(!f.ecn);
        assert_eq!(f.flows, 1024);
    }

    #[test]
    fn typos_and_bad_values_are_rejected() {
        assert!(parse(r#"queue = { kind = "fq_codel" }"#).is_err());
        assert!(parse(r#"queue = { kind = "red", min = 3 }"#).is_err());
        let bad = parse(r#"queue = { kind = "red", min_th = 800, max_th = 700 }"#).unwrap();
        assert!(bad.validate("hop x").unwrap_err().contains("hop x"));
        let bad = parse(r#"queue = { kind = "fq-codel", flows = 0 }"#).unwrap();
        assert!(bad.validate("h").is_err());
        let ok = parse(r#"queue = { kind = "red", max_p = 1.0 }"#).unwrap();
        assert!(ok.validate("h").is_ok());
    }
}

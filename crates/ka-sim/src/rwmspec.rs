//! The `rwm = { … }` table of a hop: receive-window modulation (DESIGN
//! §8.5) on the router at the hop's far end — the receivers' edge router
//! of the seed's Fig. 2, which sees data arriving over the hop and ACKs
//! leaving through the hop's reverse port.
//!
//! ```toml
//! [topology]
//! kind = "dumbbell"
//! capacity_mbps = 1000.0
//! rwm = { delta = 0.0 }                      # one class, the whole hop
//! # rwm = { classes = [{ name = "web", ports = [80, 443], share = 0.6 }],
//! #         default_share = 0.4, delta = -0.1, capacity_mbps = 900.0 }
//! ```
//!
//! The same [`ka_router::rwm::Rwm`] the `ka-router --rwm` binary runs, fed
//! every packet the router forwards, in virtual time: the RTT comes from
//! the simulated handshake as on the real box. Capacity C defaults to the
//! hop's own rates (forward for data crossing the hop towards the
//! receivers, reverse for the other way).

use ka_router::rwm::{RwmClass, RwmConfig, RwmStats};
use serde::{Deserialize, Serialize};

/// One traffic class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// Name.
    pub name: String,
    /// Responder (server) ports of the class. Simulated receivers listen
    /// on port 5001.
    pub ports: Vec<u16>,
    /// Share of the capacity, in (0, 1].
    pub share: f64,
}

/// RWM on a hop.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RwmSpec {
    /// Traffic classes (first match wins). Default none.
    #[serde(default)]
    pub classes: Vec<ClassSpec>,
    /// Share of the default class. Default: what the classes leave.
    #[serde(default)]
    pub default_share: Option<f64>,
    /// δ: caps are scaled by 1 + δ. Default 0.
    #[serde(default)]
    pub delta: f64,
    /// Capacity C, Mbit/s, both directions. Default: the hop's rates.
    #[serde(default)]
    pub capacity_mbps: Option<f64>,
    /// Flow-table cap. Default 65 536.
    #[serde(default)]
    pub max_flows: Option<usize>,
}

impl RwmSpec {
    /// The router's configuration, with the hop's capacities (bit/s) as
    /// the default C.
    pub fn config(&self, forward_bps: u64, reverse_bps: u64) -> RwmConfig {
        let mut c = RwmConfig::new(forward_bps);
        c.capacity_bps = match self.capacity_mbps {
            Some(m) => [(m * 1e6).round().max(1.0) as u64; 2],
            None => [forward_bps, reverse_bps],
        };
        c.classes = self
            .classes
            .iter()
            .map(|k| RwmClass {
                name: k.name.clone(),
                ports: k.ports.clone(),
                share: k.share,
            })
            .collect();
        c.default_share = self.default_share;
        c.delta = self.delta;
        if let Some(m) = self.max_flows {
            c.max_flows = m;
            c.max_half_open = (m / 16).max(64);
        }
        c
    }

    /// Checks the values (`what` names the hop in the message).
    pub fn validate(&self, what: &str) -> Result<(), String> {
        if let Some(m) = self.capacity_mbps
            && !(m.is_finite() && m > 0.0)
        {
            return Err(format!("{what}: rwm.capacity_mbps must be > 0"));
        }
        self.config(1, 1)
            .validate()
            .map_err(|e| format!("{what}: {e}"))
    }
}

/// RWM's counters as `summary.json` shows them.
pub fn stats_json(s: &RwmStats) -> serde_json::Value {
    serde_json::json!({
        "handshakes": s.handshakes,
        "handshake_rtt_mean_ms": s.handshake_rtt_sum_ns as f64 / 1e6 / s.handshakes.max(1) as f64,
        "handshake_rtt_max_ms": s.handshake_rtt_max_ns as f64 / 1e6,
        "windows_rewritten_forward": s.windows_rewritten[0],
        "windows_rewritten_reverse": s.windows_rewritten[1],
        "segments": s.segments,
        "untracked": s.untracked,
        "closed": s.closed,
        "evicted": s.evicted,
        "flows_at_end": s.flows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_classes() {
        let s: RwmSpec = toml::from_str("delta = -0.1").unwrap();
        let c = s.config(1_000_000_000, 100_000_000);
        assert_eq!(c.capacity_bps, [1_000_000_000, 100_000_000]);
        assert_eq!((c.delta, c.default_class_share()), (-0.1, 1.0));
        let s: RwmSpec = toml::from_str(
            "classes = [{ name = \"web\", ports = [80, 443], share = 0.6 }]\ncapacity_mbps = 50.0",
        )
        .unwrap();
        let c = s.config(1, 1);
        assert_eq!(c.capacity_bps, [50_000_000; 2]);
        assert_eq!(c.classes[0].ports, vec![80, 443]);
        assert!((c.default_class_share() - 0.4).abs() < 1e-12);
        assert!(s.validate("hop x").is_ok());
        let bad: RwmSpec = toml::from_str("delta = -1.5").unwrap();
        assert!(bad.validate("hop x").unwrap_err().contains("hop x"));
        assert!(toml::from_str::<RwmSpec>("detla = 0.1").is_err());
    }
}

//! Receive-window modulation (DESIGN §5.2) in the simulator: the `rwm`
//! table of a hop is `ka_router::rwm::RwmConfig` itself, run on the router
//! at the hop's far end — the receivers' edge router of the seed's Fig. 2,
//! which sees data arriving over the hop and ACKs leaving through the
//! hop's reverse port.
//!
//! ```toml
//! [topology]
//! kind = "dumbbell"
//! capacity_mbps = 1000.0
//! rwm = { delta = 0.0 }                      # one class, the whole hop
//! # rwm = { classes = [{ name = "web", ports = [80, 443], share = 0.6 }],
//! #         default_share = 0.4, delta = -0.1, capacity = "900mbit" }
//! ```
//!
//! The same [`ka_router::rwm::Rwm`] the `ka-router --rwm` binary runs, fed
//! every packet the router forwards, in virtual time: the RTT comes from
//! the simulated handshake as on the real box. Capacity C defaults to the
//! hop's own rates (forward for data crossing the hop towards the
//! receivers, reverse for the other way: `RwmConfig::for_ports`).

use ka_router::rwm::RwmStats;

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
    use ka_router::rwm::RwmConfig;

    #[test]
    fn defaults_and_classes() {
        let s: RwmConfig = toml::from_str("delta = -0.1").unwrap();
        let c = s.for_ports(1_000_000_000, 100_000_000);
        assert_eq!(c.capacity_bps, [1_000_000_000, 100_000_000]);
        assert_eq!((c.delta, c.default_class_share()), (-0.1, 1.0));
        assert_eq!((c.max_flows, c.max_half_open), (65_536, 4_096));
        let s: RwmConfig = toml::from_str(
            "classes = [{ name = \"web\", ports = [80, 443], share = 0.6 }]\ncapacity = \"50mbit\"\nmax_flows = 1000",
        )
        .unwrap();
        let c = s.for_ports(1, 1);
        assert_eq!(c.capacity_bps, [50_000_000; 2]);
        assert_eq!(c.classes[0].ports, vec![80, 443]);
        assert_eq!(c.max_half_open, 64);
        assert!((c.default_class_share() - 0.4).abs() < 1e-12);
        assert!(c.validate().is_ok());
        let s: RwmConfig = toml::from_str("capacity = [\"1gbit\", \"100mbit\"]").unwrap();
        assert_eq!(s.capacity_bps, [1_000_000_000, 100_000_000]);
        let bad: RwmConfig = toml::from_str("delta = -1.5").unwrap();
        assert!(bad.for_ports(1, 1).validate().is_err());
        assert!(toml::from_str::<RwmConfig>("detla = 0.1").is_err());
    }
}

//! Scenario files (TOML, serde): topology, router knobs, sender groups and
//! their workloads.
//!
//! ```toml
//! name = "fig3"
//! variant = "ka"
//! seed = 1
//! duration_s = 60.0
//!
//! [topology]
//! kind = "dumbbell"          # dumbbell | ka-legacy | parking-lot | line | dcc
//! capacity_mbps = 150.0
//! rtt_ms = 100.0
//! port = "ka"                # ka | rcp | xcp | droptail
//! queue = { kind = "red", max_p = 0.2 }   # ka_router::qdisc::QdiscConfig
//!
//! [router]                   # ka_router::RouterConfig
//! controller = "echo"        # rcp | crowd | echo, or { kind = "crowd", caution = 2.5 }
//!
//! [[group]]
//! name = "ka"
//! kind = "ka"                # ka | rcp | tcp-newreno | tcp-cubic | tcp-bbr | xcp | xcp-rate
//!                            # | xcp-rate-pure | pcc | udp-lccp | udp-cbr (with cbr_mbps)
//! count = 32
//! [group.workload]
//! type = "on-off"            # long-lived | on-off | poisson | arrivals
//! off_mean_s = 0.5
//! sizes = { min_pkts = 1, max_pkts = 2000, shape = 1.8, mean_pkts = 100 }
//! # or an empirical CDF, [size_pkts, P(X <= size)] points:
//! # sizes = { cdf = [[1, 0.0], [7, 0.15], [138, 0.6], [20718, 1.0]] }
//! ```
//!
//! Every topology is a *line* of routers `R0 … Rm` with one hop (a pair of
//! router ports, forward and reverse) between neighbours; a group's senders
//! attach to router `from` (default 0) and its receivers to router `to`
//! (default m), each host over its own access link. See [`Topology`].

pub mod dcc;
mod group;
mod knobs;
pub mod limits;
mod profile;
#[cfg(test)]
mod tests;
mod topology;

pub use group::{FlowKind, Group, RttSpec, Workload};
pub use knobs::{KaCc, TcpKnobs};
pub use profile::{NS2_WINDOW_BYTES, TcpProfile};
pub use topology::{Access, Dumbbell, Hop, KaLegacy, Line, ParkingLot, PortKind, Topology};

use serde::{Deserialize, Serialize};

/// A whole scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Scenario name (written to `summary.json`).
    pub name: String,
    /// Variant label (e.g. "ka", "tcp"); empty if none.
    #[serde(default)]
    pub variant: String,
    /// Seed of all random streams.
    #[serde(default = "one")]
    pub seed: u64,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Width of a `series.csv` bin, seconds. Default 0.1.
    #[serde(default = "default_bin")]
    pub bin_s: f64,
    /// Size of a full data packet on the wire (IP total length). Default
    /// 1500. Flow sizes in packets are multiples of the TCP payload such a
    /// packet carries.
    #[serde(default = "default_packet")]
    pub packet_bytes: usize,
    /// Offered load ρ for `FCT_PS`. Default: the Poisson target load if every
    /// sized group is Poisson with the same load, else measured (bytes of
    /// all sized flows started / (C · duration) on the first hop of the
    /// first sized group's path).
    #[serde(default)]
    pub rho: Option<f64>,
    /// The network.
    pub topology: Topology,
    /// Knobs of every router port: the rate controller of its KA and
    /// native-RCP ports, RCP's, XCP's and the TCP-mode detector's knobs
    /// (`ka_router::RouterConfig`; unset keys take its defaults), e.g.
    ///
    /// ```toml
    /// [router]
    /// controller = { kind = "crowd", caution = 2.5 }   # or "rcp", "echo"
    /// dither = true
    /// rcp = { queue_measure = "persistent", queue_target = "5ms" }
    /// xcp = { alpha = 0.4, beta = 0.226, gamma = 0.1 }
    /// ```
    #[serde(default)]
    pub router: ka_router::RouterConfig,
    /// TCP parameters of every endpoint (senders and receivers; for KA
    /// endpoints they govern TCP mode). Unset = the endpoint's defaults.
    #[serde(default)]
    pub tcp: TcpKnobs,
    /// Sender groups.
    #[serde(rename = "group", default)]
    pub groups: Vec<Group>,
}

fn one() -> u64 {
    1
}
fn default_bin() -> f64 {
    0.1
}
fn default_packet() -> usize {
    1500
}

/// Why a scenario is not runnable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// TOML syntax or schema error.
    #[error("scenario file: {0}")]
    Parse(String),
    /// A value is out of range.
    #[error("scenario: {0}")]
    Invalid(String),
    /// The run would need more memory than the machine has available
    /// ([`limits::check_memory`]).
    #[error(
        "scenario: {hosts} hosts need about {estimate_mib} MiB, more than the {available_mib} MiB available (estimate: {} KiB per host; see ka_sim::scenario::limits)",
        limits::HOST_BYTES / 1024
    )]
    Memory {
        /// Sender hosts over all groups.
        hosts: usize,
        /// [`Scenario::estimated_bytes`], MiB.
        estimate_mib: u64,
        /// `MemAvailable`, MiB.
        available_mib: u64,
    },
}

impl Scenario {
    /// Parses a scenario from TOML text.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse(e.to_string()))?;
        s.validate()?;
        Ok(s)
    }

    /// Parses a scenario from an already-parsed TOML table.
    pub fn from_value(v: toml::Value) -> Result<Scenario, ScenarioError> {
        let s: Scenario = v
            .try_into()
            .map_err(|e: toml::de::Error| ScenarioError::Parse(e.to_string()))?;
        s.validate()?;
        Ok(s)
    }

    /// Serialises to TOML (what the run actually used).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Checks ranges that serde cannot.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            return bad("duration_s must be > 0".into());
        }
        self.check_limits()?;
        if !(self.bin_s.is_finite() && self.bin_s > 0.0) {
            return bad("bin_s must be > 0".into());
        }
        if !(600..=9000).contains(&self.packet_bytes) {
            return bad("packet_bytes must be in 600..=9000".into());
        }
        if let Some(r) = self.rho
            && !(r.is_finite() && (0.0..1.0).contains(&r))
        {
            return bad("rho must be in [0, 1)".into());
        }
        let t = &self.tcp;
        if t.initial_window == Some(0) {
            return bad("tcp.initial_window must be >= 1".into());
        }
        let nonneg = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v >= 0.0);
        if !(nonneg(t.delayed_ack_ms) && nonneg(t.min_rto_ms)) {
            return bad("tcp: delayed_ack_ms and min_rto_ms must be >= 0".into());
        }
        if t.buffer_bytes
            .is_some_and(|b| !(65_536..=1 << 30).contains(&b))
        {
            return bad("tcp.buffer_bytes must be in 64 KiB ..= 1 GiB".into());
        }
        if t.receive_window_bytes
            .is_some_and(|b| !(536..=1 << 30).contains(&b))
        {
            return bad("tcp.receive_window_bytes must be in 536 ..= 1 GiB".into());
        }
        if t.mss_bytes
            .is_some_and(|m| !(88..=self.packet_bytes - 40).contains(&m))
        {
            return bad("tcp.mss_bytes must be in 88 ..= packet_bytes - 40".into());
        }
        if t.clock_granularity_ms
            .is_some_and(|v| !(v.is_finite() && v >= 0.0))
        {
            return bad("tcp: clock_granularity_ms must be >= 0".into());
        }
        if let Err(e) = self.router.validate() {
            return bad(format!("router: {e}"));
        }
        if t.initial_rto_ms
            .is_some_and(|v| !(v.is_finite() && v > 0.0))
        {
            return bad("tcp: initial_rto_ms must be > 0".into());
        }
        // Round-trip times that the hop delays are derived from (and
        // clamped at 0 there): checked here so NaN or a negative value is an
        // error, not a 0 ms path.
        let (rtt, extra) = match &self.topology {
            Topology::Dumbbell(d) => (Some(d.rtt_ms), 0.0),
            Topology::KaLegacy(k) => (Some(k.rtt_ms), k.ka_delay_ms),
            Topology::ParkingLot(p) => (Some(p.rtt_ms), 0.0),
            Topology::Line(_) | Topology::Dcc(_) => (None, 0.0),
        };
        if rtt.is_some_and(|v| !(v.is_finite() && v >= 0.0)) || !(extra.is_finite() && extra >= 0.0)
        {
            return bad("topology: rtt_ms and ka_delay_ms must be finite and >= 0".into());
        }
        let hops = self.topology.hops();
        if hops.is_empty() {
            return bad("topology has no hops".into());
        }
        for h in &hops {
            if !(h.capacity_mbps.is_finite() && h.capacity_mbps > 0.0) {
                return bad(format!("hop {}: capacity must be > 0", h.name));
            }
            if !(h.delay_ms.is_finite() && h.delay_ms >= 0.0) {
                return bad(format!("hop {}: delay must be >= 0", h.name));
            }
            if h.queue_pkts == 0 {
                return bad(format!("hop {}: queue must be > 0", h.name));
            }
            // The delay exactly as the hop's ports get it (model::net).
            let delay = std::time::Duration::from_nanos(crate::engine::secs(h.delay_ms / 1e3));
            for (which, i) in [("impair", &h.impair), ("reverse_impair", &h.reverse_impair)] {
                if let Err(e) = i.validate(delay) {
                    return bad(format!("hop {}: {which}: {e}", h.name));
                }
            }
            for q in [&h.queue, &h.reverse_queue] {
                if let Err(e) = q.validate() {
                    return bad(format!("hop {}: {} {e}", h.name, q.name()));
                }
            }
            if let Some(r) = &h.rwm
                && let Err(e) = r.clone().for_ports(1, 1).validate()
            {
                return bad(format!("hop {}: {e}", h.name));
            }
        }
        if let Topology::Dcc(d) = &self.topology {
            d.validate(&self.groups)?;
        }
        let acc = self.topology.access();
        if !(acc.rate_mbps.is_finite() && acc.rate_mbps > 0.0 && acc.delay_ms >= 0.0) {
            return bad("access: rate must be > 0 and delay >= 0".into());
        }
        let m = hops.len();
        for g in &self.groups {
            let to = g.to.unwrap_or(m);
            if g.from >= to || to > m {
                return bad(format!(
                    "group {}: need from < to <= {m} (routers 0..={m})",
                    g.name
                ));
            }
            if g.initial_window == Some(0) {
                return bad(format!("group {}: initial_window must be >= 1", g.name));
            }
            let rtt_ok = match g.rtt_ms {
                None => true,
                Some(RttSpec::Fixed(v)) => v.is_finite() && v >= 0.0,
                Some(RttSpec::Range([lo, hi])) => {
                    lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi
                }
            };
            if !rtt_ok {
                return bad(format!(
                    "group {}: rtt_ms must be finite and >= 0 (a range: lo <= hi)",
                    g.name
                ));
            }
            group::check_udp(g).map_err(ScenarioError::Invalid)?;
            let sizes = match &g.workload {
                Workload::Arrivals { .. } => {
                    dcc::check_arrivals(g).map_err(ScenarioError::Invalid)?;
                    None
                }
                Workload::OnOff { off_mean_s, sizes } => {
                    if !(off_mean_s.is_finite() && *off_mean_s >= 0.0) {
                        return bad(format!("group {}: off_mean_s must be >= 0", g.name));
                    }
                    Some(sizes)
                }
                Workload::Poisson { load, sizes } => {
                    if !(load.is_finite() && *load > 0.0 && *load < 1.0) {
                        return bad(format!("group {}: load must be in (0, 1)", g.name));
                    }
                    Some(sizes)
                }
                Workload::LongLived {
                    start_s,
                    stagger_s,
                    on_s,
                    period_s,
                    repeat,
                    size_pkts,
                } => {
                    if size_pkts.is_some_and(|n| n == 0) || (size_pkts.is_some() && on_s.is_some())
                    {
                        return bad(format!(
                            "group {}: size_pkts must be >= 1 and excludes on_s",
                            g.name
                        ));
                    }
                    let fine = |v: f64| v.is_finite() && v >= 0.0;
                    if !(fine(*start_s)
                        && fine(*stagger_s)
                        && on_s.is_none_or(|v| fine(v) && v > 0.0)
                        && period_s.is_none_or(|v| fine(v) && v > 0.0))
                    {
                        return bad(format!("group {}: bad long-lived times", g.name));
                    }
                    if *repeat == 0 || (*repeat > 1 && period_s.is_none()) {
                        return bad(format!(
                            "group {}: repeat must be >= 1, and > 1 needs period_s",
                            g.name
                        ));
                    }
                    None
                }
            };
            if let Some(sizes) = sizes {
                sizes
                    .build()
                    .map_err(|e| ScenarioError::Invalid(format!("group {}: {e}", g.name)))?;
            }
        }
        Ok(())
    }
}

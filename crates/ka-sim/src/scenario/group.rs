//! Sender groups of a scenario: flow kinds, RTT specs and workloads.

use serde::{Deserialize, Serialize};

use crate::engine::rng::Sizes;

/// What a sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FlowKind {
    /// Kick-Ass endpoint (NewReno in TCP mode).
    #[serde(rename = "ka")]
    Ka,
    /// Native RCP carrier (DESIGN §7.1).
    #[serde(rename = "rcp")]
    Rcp,
    /// Plain TCP NewReno.
    #[serde(rename = "tcp-newreno", alias = "tcp")]
    TcpNewReno,
    /// Plain TCP CUBIC.
    #[serde(rename = "tcp-cubic")]
    TcpCubic,
    /// XCP, window-based (DESIGN §7.2). Through ports that are no XCP
    /// router the feedback comes back as the sender asked it.
    #[serde(rename = "xcp")]
    Xcp,
    /// XCP, rate-based (seed `xcp-vs-rcp.txt` §4.2).
    #[serde(rename = "xcp-rate")]
    XcpRate,
    /// XCP, purely rate-based: paced at cwnd / min RTT
    /// (`ka_endpoint::XcpVariant::PureRate`).
    #[serde(rename = "xcp-rate-pure")]
    XcpRatePure,
    /// Plain TCP (no KA) with the rate-based PCC Vivace controller
    /// (the paper's testbed baseline, §IV-A).
    #[serde(rename = "pcc")]
    Pcc,
    /// Plain TCP (no KA) with BBR v1 (`ka_endpoint::Bbr`): a paced,
    /// delay-aware legacy sender, Linux's default.
    #[serde(rename = "tcp-bbr")]
    TcpBbr,
    /// A constant-bit-rate UDP source whose rate LCCP controls
    /// (`ka_endpoint::udp`; the group's `cbr_mbps` is its application
    /// rate).
    #[serde(rename = "udp-lccp")]
    UdpLccp,
    /// A plain constant-bit-rate UDP source (DF set, ignores feedback).
    #[serde(rename = "udp-cbr")]
    UdpCbr,
}

impl FlowKind {
    /// The label used in `flows.csv`.
    pub fn label(self) -> &'static str {
        match self {
            FlowKind::Ka => "ka",
            FlowKind::Rcp => "rcp",
            FlowKind::TcpNewReno => "tcp-newreno",
            FlowKind::TcpCubic => "tcp-cubic",
            FlowKind::Xcp => "xcp",
            FlowKind::XcpRate => "xcp-rate",
            FlowKind::XcpRatePure => "xcp-rate-pure",
            FlowKind::Pcc => "pcc",
            FlowKind::TcpBbr => "tcp-bbr",
            FlowKind::UdpLccp => "udp-lccp",
            FlowKind::UdpCbr => "udp-cbr",
        }
    }

    /// Whether the kind is a UDP source (not a TCP connection).
    pub fn is_udp(self) -> bool {
        matches!(self, FlowKind::UdpLccp | FlowKind::UdpCbr)
    }
}

/// A group of identical senders (each its own host, with its own receiver
/// host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Name (for plots and summaries).
    pub name: String,
    /// Endpoint kind.
    pub kind: FlowKind,
    /// Number of sender hosts.
    pub count: usize,
    /// Router the senders attach to. Default 0.
    #[serde(default)]
    pub from: usize,
    /// Router the receivers attach to. Default: the last one.
    #[serde(default)]
    pub to: Option<usize>,
    /// Round-trip propagation delay of this group's flows, ms: a number, or
    /// `[lo, hi]` spread evenly over the group's hosts. The difference to
    /// the path's own RTT goes into the sender's access links. Default: the
    /// path's RTT.
    #[serde(default)]
    pub rtt_ms: Option<RttSpec>,
    /// TCP initial window of the senders, segments. Default 10 (RFC 6928,
    /// Linux); older simulators (ns-3 before 3.28) used 1.
    #[serde(default)]
    pub initial_window: Option<usize>,
    /// TCP profile of this group's senders and receivers (DESIGN §9.2),
    /// replacing the scenario's `[tcp] profile` for them; the knobs set in
    /// `[tcp]` still override it. Default: the scenario's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_profile: Option<super::TcpProfile>,
    /// What each sender does.
    pub workload: Workload,
    /// Application rate of UDP kinds, Mbit/s (IP bytes); required for them,
    /// rejected for the others.
    #[serde(default)]
    pub cbr_mbps: Option<f64>,
    /// Track the flows of the first `track` hosts in `series.csv`
    /// (throughput and endpoint mode). Default 0.
    #[serde(default)]
    pub track: usize,
}

/// A fixed RTT or an evenly spread range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RttSpec {
    /// Every host the same, ms.
    Fixed(f64),
    /// Host i of n gets `lo + (hi − lo)·i/(n−1)`, ms.
    Range([f64; 2]),
}

impl RttSpec {
    /// The RTT (ms) of host `i` of `n`.
    pub fn for_host(&self, i: usize, n: usize) -> f64 {
        match *self {
            RttSpec::Fixed(v) => v,
            RttSpec::Range([lo, hi]) => {
                if n <= 1 {
                    lo
                } else {
                    lo + (hi - lo) * i as f64 / (n - 1) as f64
                }
            }
        }
    }
}

/// What one sender host does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Workload {
    /// Unbounded flows: host i starts at `start_s + i·stagger_s` and sends
    /// for `on_s` (default: until the end); with `period_s`, this repeats
    /// `repeat` times, each time as a new connection (flow). With
    /// `size_pkts`, each flow is finite instead: it sends that many packets
    /// and closes (seed `xcp-vs-rcp.txt` §4: flows of "limited length"
    /// starting at fixed times).
    LongLived {
        /// First start, s. Default 0.
        #[serde(default)]
        start_s: f64,
        /// Extra start offset per host index, s. Default 0.
        #[serde(default)]
        stagger_s: f64,
        /// How long each flow sends, s. Default: until the end of the run.
        #[serde(default)]
        on_s: Option<f64>,
        /// Start-to-start period of repeats, s.
        #[serde(default)]
        period_s: Option<f64>,
        /// Number of flows per host. Default 1.
        #[serde(default = "one_u32")]
        repeat: u32,
        /// Each flow is this many full packets of data and ends when they
        /// are delivered (bulk transfers, e.g. the RWM seed's 1 GB
        /// downloads). Default: unbounded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size_pkts: Option<u64>,
    },
    /// Paper §III-B: start off; wait Exp(off_mean); send a flow of a bounded
    /// Pareto (or empirical-CDF) size to completion; repeat.
    OnOff {
        /// Mean off time, s.
        off_mean_s: f64,
        /// Flow sizes, packets: a bounded Pareto or an empirical CDF
        /// ([`Sizes`]).
        sizes: Sizes,
    },
    /// `flows` flows of `size_bytes` each whose starts are one Poisson
    /// process of the whole group (exponential gaps of mean `gap_mean_s`,
    /// the first gap after `start_s`); flow i is sent by host i mod count
    /// (the DCC seed's workload: 100 flows of 100 KB, mean gap 1 s).
    Arrivals {
        /// Number of flows.
        flows: u32,
        /// Mean gap between starts, s.
        gap_mean_s: f64,
        /// Size of every flow, bytes of application data.
        size_bytes: u64,
        /// Start of the process, s. Default 0.
        #[serde(default)]
        start_s: f64,
    },
    /// Flows arrive as a Poisson process so that the group offers `load`
    /// (fraction of the path's bottleneck) in total; each host runs a
    /// Poisson process of rate λ/count and may have several flows at once.
    Poisson {
        /// Offered load, 0 < load < 1.
        load: f64,
        /// Flow sizes, packets: a bounded Pareto or an empirical CDF
        /// ([`Sizes`]).
        sizes: Sizes,
    },
}

fn one_u32() -> u32 {
    1
}

/// Checks a group's UDP settings: UDP kinds need `cbr_mbps > 0` and a
/// long-lived workload without `size_pkts` (a CBR source sends until its
/// `on_s` ends); other kinds take no `cbr_mbps`.
pub(super) fn check_udp(g: &Group) -> Result<(), String> {
    match (g.kind.is_udp(), g.cbr_mbps) {
        (true, Some(r)) if r.is_finite() && r > 0.0 => {}
        (true, _) => return Err(format!("group {}: UDP kinds need cbr_mbps > 0", g.name)),
        (false, Some(_)) => return Err(format!("group {}: cbr_mbps is for UDP kinds", g.name)),
        (false, None) => {}
    }
    if g.kind.is_udp() && !matches!(g.workload, Workload::LongLived { .. }) {
        return Err(format!(
            "group {}: UDP kinds need a long-lived workload",
            g.name
        ));
    }
    if g.kind.is_udp()
        && matches!(
            g.workload,
            Workload::LongLived {
                size_pkts: Some(_),
                ..
            }
        )
    {
        return Err(format!(
            "group {}: size_pkts is for TCP kinds (a CBR source has no size)",
            g.name
        ));
    }
    Ok(())
}

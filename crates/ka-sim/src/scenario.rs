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
//!
//! [[group]]
//! name = "ka"
//! kind = "ka"                # ka | rcp | tcp-newreno | tcp-cubic | xcp | xcp-rate | xcp-rate-pure
//! kind = "ka"                # ka | rcp | tcp-newreno | tcp-cubic | xcp | xcp-rate | pcc
//!                            # | udp-lccp | udp-cbr (with cbr_mbps)
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

use serde::{Deserialize, Serialize};

use crate::qspec::QueueSpec;
use crate::rng::Sizes;
use crate::rwmspec::RwmSpec;

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
    /// Knobs of every router port's controller and mode detector.
    #[serde(default)]
    pub router: RouterKnobs,
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
fn default_queue() -> usize {
    1000
}
fn default_access() -> f64 {
    1000.0
}
fn default_capacity() -> f64 {
    150.0
}
fn default_rtt() -> f64 {
    100.0
}

/// What a router port does with its rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PortKind {
    /// Kick-Ass signalling (fragmentation) with RCP.
    #[default]
    Ka,
    /// Native RCP (IPv4 option carrier).
    Rcp,
    /// Plain drop-tail.
    Droptail,
    /// XCP router (DESIGN §8.4): lowers the feedback of the IPv4 XCP
    /// option; knobs `xcp_alpha`, `xcp_beta`, `xcp_gamma` in `[router]`.
    Xcp,
}

/// The network: a line of routers (see module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    /// One bottleneck hop named `bottleneck` (paper §III-B).
    Dumbbell(Dumbbell),
    /// A KA router in front of a legacy bottleneck (paper Fig. 6): hop `ka`
    /// (KA port) then hop `legacy` (drop-tail). Groups with `from = 1`
    /// (cross traffic) enter at the legacy router.
    KaLegacy(KaLegacy),
    /// `bottlenecks` equal hops `hop1 … hopk`.
    ParkingLot(ParkingLot),
    /// Any list of hops.
    Line(Line),
    /// Two middleboxes and the congestion-control segments between them
    /// (DESIGN §8.7; see [`crate::dcc`]).
    Dcc(crate::dcc::DccTopology),
}

/// Parameters of [`Topology::Dumbbell`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dumbbell {
    /// Bottleneck rate, Mbit/s. Default 150.
    #[serde(default = "default_capacity")]
    pub capacity_mbps: f64,
    /// Round-trip propagation delay of the default path, ms. Default 100.
    #[serde(default = "default_rtt")]
    pub rtt_ms: f64,
    /// Bottleneck queue, packets. Default 1000.
    #[serde(default = "default_queue")]
    pub queue_pkts: usize,
    /// Signalling of the forward bottleneck port. Default `ka`.
    #[serde(default)]
    pub port: PortKind,
    /// Queue discipline of the forward bottleneck port (its limit is
    /// `queue_pkts`). Default drop-tail.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Signalling of the reverse (ACK) port. Default `droptail`.
    #[serde(default = "droptail")]
    pub reverse_port: PortKind,
    /// Receive-window modulation at the receivers' router
    /// ([`RwmSpec`]). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwm: Option<RwmSpec>,
    /// Access links.
    #[serde(default)]
    pub access: Access,
}

/// Parameters of [`Topology::KaLegacy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KaLegacy {
    /// Rate of the legacy (second) hop, Mbit/s. Default 150.
    #[serde(default = "default_capacity")]
    pub capacity_mbps: f64,
    /// Rate of the KA (first) hop, Mbit/s. Default: `capacity_mbps`.
    #[serde(default)]
    pub ka_capacity_mbps: Option<f64>,
    /// Round-trip propagation delay through both hops, ms. Default 100.
    #[serde(default = "default_rtt")]
    pub rtt_ms: f64,
    /// One-way delay of the KA hop, ms (the rest of `rtt_ms/2` is on the
    /// legacy hop). Default 0.
    #[serde(default)]
    pub ka_delay_ms: f64,
    /// Queue of both hops, packets. Default 1000.
    #[serde(default = "default_queue")]
    pub queue_pkts: usize,
    /// Queue discipline of the legacy hop's forward port (the KA hop is
    /// always drop-tail). Default drop-tail.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Access links.
    #[serde(default)]
    pub access: Access,
}

/// Parameters of [`Topology::ParkingLot`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParkingLot {
    /// Number of hops k (≥ 1).
    pub bottlenecks: usize,
    /// Rate of every hop, Mbit/s. Default 150.
    #[serde(default = "default_capacity")]
    pub capacity_mbps: f64,
    /// Round-trip propagation delay across all k hops, ms. Default 100.
    #[serde(default = "default_rtt")]
    pub rtt_ms: f64,
    /// Queue of every hop, packets. Default 1000.
    #[serde(default = "default_queue")]
    pub queue_pkts: usize,
    /// Signalling of every forward port. Default `ka`.
    #[serde(default)]
    pub port: PortKind,
    /// Queue discipline of every forward port. Default drop-tail.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Access links.
    #[serde(default)]
    pub access: Access,
}

/// Parameters of [`Topology::Line`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// Hops from router 0 to router m.
    pub hops: Vec<Hop>,
    /// Access links.
    #[serde(default)]
    pub access: Access,
}

/// One hop between two neighbouring routers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hop {
    /// Name (used as `port:<name>` / `link:<name>` in outputs; the reverse
    /// port is `<name>-rev`).
    pub name: String,
    /// Forward rate, Mbit/s.
    pub capacity_mbps: f64,
    /// Reverse rate, Mbit/s. Default: the forward rate.
    #[serde(default)]
    pub reverse_capacity_mbps: Option<f64>,
    /// One-way propagation delay (each direction), ms.
    pub delay_ms: f64,
    /// Queue limit of both ports, packets. Default 1000.
    #[serde(default = "default_queue")]
    pub queue_pkts: usize,
    /// Forward port signalling. Default `ka`.
    #[serde(default)]
    pub port: PortKind,
    /// Reverse port signalling. Default `droptail`.
    #[serde(default = "droptail")]
    pub reverse_port: PortKind,
    /// Forward port queue discipline (limit `queue_pkts`). Default
    /// drop-tail.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Reverse port queue discipline. Default drop-tail.
    #[serde(default)]
    pub reverse_queue: QueueSpec,
    /// Receive-window modulation on the router at the hop's far end
    /// ([`RwmSpec`]). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwm: Option<RwmSpec>,
}

fn droptail() -> PortKind {
    PortKind::Droptail
}

/// Host access links (one pair per host).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Access {
    /// Rate, Mbit/s. Default 1000.
    #[serde(default = "default_access")]
    pub rate_mbps: f64,
    /// One-way delay, ms (each direction, both ends). Default 0.
    #[serde(default)]
    pub delay_ms: f64,
}

impl Default for Access {
    fn default() -> Self {
        Self {
            rate_mbps: default_access(),
            delay_ms: 0.0,
        }
    }
}

/// Router port knobs (DESIGN §4.3/4.4, §8.4); unset = the router's
/// defaults. `alpha`/`beta` are RCP's (KA and native-RCP ports),
/// `xcp_*` XCP's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterKnobs {
    /// RCP α.
    pub alpha: Option<f64>,
    /// RCP β.
    pub beta: Option<f64>,
    /// R₀ as a fraction of C.
    pub initial_frac: Option<f64>,
    /// d before the first RTT indicator, ms.
    pub initial_rtt_ms: Option<f64>,
    /// TCP-mode threshold as a fraction of the queue.
    pub threshold_frac: Option<f64>,
    /// TCP-mode hold, ms (default one average RTT).
    pub hold_ms: Option<f64>,
    /// The queue RCP sees: `"now"` (at the end of each control interval,
    /// DESIGN §4.3; the default) or `"persistent"` (the smallest during the
    /// last RTT, as the `ka-router` binary does).
    pub queue_measure: Option<QueueMeasureKnob>,
    /// RCP queue target, ms (default 0; the `ka-router` binary uses 5).
    pub queue_target_ms: Option<f64>,
    /// Dither the KA signal between adjacent codes (default false; the
    /// `ka-router` binary turns it on).
    pub dither: Option<bool>,
    /// The rate controller of every explicit-rate port: `"rcp"` (the
    /// paper's, the default) or `"crowd"` (RCP's law plus admission of new
    /// connections, no flash-crowd overflow: `ka_router::Crowd`).
    pub controller: Option<ControllerKnob>,
    /// `crowd` only: its caution (`ka_router::CrowdConfig::caution`).
    pub crowd_caution: Option<f64>,
    /// XCP α of `xcp` ports (default 0.4).
    pub xcp_alpha: Option<f64>,
    /// XCP β of `xcp` ports (default 0.226).
    pub xcp_beta: Option<f64>,
    /// XCP γ of `xcp` ports (default 0.1).
    pub xcp_gamma: Option<f64>,
    /// How a control interval updates R: `"exponential"` (R·eˣ, the
    /// default) or `"linear"` (R·(1 + x), DESIGN §4.3's formula; see
    /// `ka_router::RcpUpdate`).
    pub rcp_update: Option<RcpUpdateKnob>,
}

/// `controller` values of [`RouterKnobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControllerKnob {
    /// `ka_router::Rcp`.
    Rcp,
    /// `ka_router::Crowd`.
    Crowd,
}

/// `rcp_update` values of [`RouterKnobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RcpUpdateKnob {
    /// R·eˣ.
    Exponential,
    /// R·(1 + x).
    Linear,
}

/// `queue_measure` values of [`RouterKnobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueMeasureKnob {
    /// The smallest queue during the last RTT.
    Persistent,
    /// The queue when the interval ends.
    Now,
}

/// TCP knobs of all endpoints of a scenario; unset = `ka-endpoint`'s
/// defaults (RFC 6928 initial window, no initial ssthresh, 40 ms delayed
/// ACKs, min RTO 1 s, SACK on). The paper's scenarios set the TCP of the
/// paper's ns-3 runs (see `scenarios/*.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpKnobs {
    /// Initial congestion window, segments (a group's `initial_window`
    /// overrides it for that group's senders).
    pub initial_window: Option<usize>,
    /// Initial slow-start threshold, bytes.
    pub initial_ssthresh_bytes: Option<usize>,
    /// Delayed-ACK timer, ms (0 = acknowledge every segment).
    pub delayed_ack_ms: Option<f64>,
    /// Minimum RTO, ms.
    pub min_rto_ms: Option<f64>,
    /// RTO before the first RTT sample (the SYN's), ms (RFC 6298: 1 s).
    pub initial_rto_ms: Option<f64>,
    /// Offer SACK.
    pub sack: Option<bool>,
    /// NewReno byte counting (RFC 3465/5681); false = per-ACK counting.
    pub byte_counting: Option<bool>,
    /// Window-update ACKs when the application's read opens the window.
    pub window_update_on_read: Option<bool>,
    /// ECN (RFC 3168): `true` = every endpoint asks for ECN on its active
    /// opens and accepts it on passive ones (`EcnMode::On`), `false` =
    /// never (`EcnMode::Off`). Unset = the endpoint's default
    /// (`EcnMode::Accept`: accept, never ask, so no connection uses ECN).
    /// Data packets of ECN connections are ECT(0); a CE mark makes the
    /// sender reduce its window once per RTT (in KA mode: leave it).
    pub ecn: Option<bool>,
    /// Acknowledge the first data segment after the handshake at once
    /// (ns-3's `TcpSocketBase`; see `ka_endpoint::TcpConfig`).
    pub quick_ack_first_data: Option<bool>,
    /// Send and receive buffer of every endpoint, bytes (the seed of RWM
    /// sets 60 MB so the endpoints' own windows never limit). Default
    /// 4 MiB; 64 KiB … 1 GiB.
    pub buffer_bytes: Option<usize>,
}

impl TcpKnobs {
    /// Applies the set knobs to `t`.
    pub fn apply(&self, t: &mut ka_endpoint::TcpConfig) {
        let ms = |v: f64| std::time::Duration::from_secs_f64(v.max(0.0) / 1e3);
        if let Some(v) = self.initial_window {
            t.initial_window_segments = v.max(1);
        }
        if let Some(v) = self.initial_ssthresh_bytes {
            t.initial_ssthresh = Some(v);
        }
        if let Some(v) = self.delayed_ack_ms {
            t.delayed_ack = (v > 0.0).then(|| ms(v));
        }
        if let Some(v) = self.min_rto_ms {
            t.min_rto = ms(v);
        }
        if let Some(v) = self.initial_rto_ms {
            t.initial_rto = ms(v);
        }
        if let Some(v) = self.sack {
            t.sack = v;
        }
        if let Some(v) = self.byte_counting {
            t.byte_counting = v;
        }
        if let Some(v) = self.window_update_on_read {
            t.window_update_on_read = v;
        }
        if let Some(v) = self.ecn {
            t.ecn = if v {
                ka_endpoint::EcnMode::On
            } else {
                ka_endpoint::EcnMode::Off
            };
        }
        if let Some(v) = self.quick_ack_first_data {
            t.quick_ack_first_data = v;
        }
        if let Some(v) = self.buffer_bytes {
            t.send_buffer = v;
            t.recv_buffer = v;
        }
    }
}

/// What a sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FlowKind {
    /// Kick-Ass endpoint (NewReno in TCP mode).
    #[serde(rename = "ka")]
    Ka,
    /// Native RCP carrier (DESIGN §3.4).
    #[serde(rename = "rcp")]
    Rcp,
    /// Plain TCP NewReno.
    #[serde(rename = "tcp-newreno", alias = "tcp")]
    TcpNewReno,
    /// Plain TCP CUBIC.
    #[serde(rename = "tcp-cubic")]
    TcpCubic,
    /// XCP, window-based (DESIGN §8.4). Through ports that are no XCP
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

/// Why a scenario is not runnable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// TOML syntax or schema error.
    #[error("scenario file: {0}")]
    Parse(String),
    /// A value is out of range.
    #[error("scenario: {0}")]
    Invalid(String),
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
        if !nonneg(self.router.crowd_caution) {
            return bad("router.crowd_caution must be >= 0".into());
        }
        if t.initial_rto_ms
            .is_some_and(|v| !(v.is_finite() && v > 0.0))
        {
            return bad("tcp: initial_rto_ms must be > 0".into());
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
            for q in [&h.queue, &h.reverse_queue] {
                q.validate(&format!("hop {}", h.name))
                    .map_err(ScenarioError::Invalid)?;
            }
            if let Some(r) = &h.rwm {
                r.validate(&format!("hop {}", h.name))
                    .map_err(ScenarioError::Invalid)?;
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
            if let Some(RttSpec::Range([lo, hi])) = g.rtt_ms
                && !(lo.is_finite() && hi.is_finite() && lo <= hi)
            {
                return bad(format!("group {}: bad rtt range", g.name));
            }
            crate::udp::check_group(g).map_err(ScenarioError::Invalid)?;
            let sizes = match &g.workload {
                Workload::Arrivals { .. } => {
                    crate::dcc::check_arrivals(g).map_err(ScenarioError::Invalid)?;
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

impl Topology {
    /// The hops from router 0 to router m.
    pub fn hops(&self) -> Vec<Hop> {
        match self {
            Topology::Dumbbell(d) => vec![Hop {
                name: "bottleneck".into(),
                capacity_mbps: d.capacity_mbps,
                reverse_capacity_mbps: None,
                delay_ms: (d.rtt_ms / 2.0 - 2.0 * d.access.delay_ms).max(0.0),
                queue_pkts: d.queue_pkts,
                port: d.port,
                reverse_port: d.reverse_port,
                queue: d.queue,
                reverse_queue: QueueSpec::Droptail,
                rwm: d.rwm.clone(),
            }],
            Topology::KaLegacy(k) => {
                let one_way = (k.rtt_ms / 2.0 - 2.0 * k.access.delay_ms).max(0.0);
                let ka_delay = k.ka_delay_ms.min(one_way);
                vec![
                    Hop {
                        name: "ka".into(),
                        capacity_mbps: k.ka_capacity_mbps.unwrap_or(k.capacity_mbps),
                        reverse_capacity_mbps: None,
                        delay_ms: ka_delay,
                        queue_pkts: k.queue_pkts,
                        port: PortKind::Ka,
                        reverse_port: PortKind::Droptail,
                        queue: QueueSpec::Droptail,
                        reverse_queue: QueueSpec::Droptail,
                        rwm: None,
                    },
                    Hop {
                        name: "legacy".into(),
                        capacity_mbps: k.capacity_mbps,
                        reverse_capacity_mbps: None,
                        delay_ms: one_way - ka_delay,
                        queue_pkts: k.queue_pkts,
                        port: PortKind::Droptail,
                        reverse_port: PortKind::Droptail,
                        queue: k.queue,
                        reverse_queue: QueueSpec::Droptail,
                        rwm: None,
                    },
                ]
            }
            Topology::ParkingLot(p) => {
                let k = p.bottlenecks;
                let one_way = (p.rtt_ms / 2.0 - 2.0 * p.access.delay_ms).max(0.0);
                (1..=k)
                    .map(|i| Hop {
                        name: format!("hop{i}"),
                        capacity_mbps: p.capacity_mbps,
                        reverse_capacity_mbps: None,
                        delay_ms: one_way / k as f64,
                        queue_pkts: p.queue_pkts,
                        port: p.port,
                        reverse_port: PortKind::Droptail,
                        queue: p.queue,
                        reverse_queue: QueueSpec::Droptail,
                        rwm: None,
                    })
                    .collect()
            }
            Topology::Line(l) => l.hops.clone(),
            Topology::Dcc(d) => d.hops(),
        }
    }

    /// The access-link parameters.
    pub fn access(&self) -> Access {
        match self {
            Topology::Dumbbell(d) => d.access,
            Topology::KaLegacy(k) => k.access,
            Topology::ParkingLot(p) => p.access,
            Topology::Line(l) => l.access,
            Topology::Dcc(d) => d.access(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIG3: &str = r#"
name = "fig3"
variant = "ka"
duration_s = 60.0

[topology]
kind = "dumbbell"
capacity_mbps = 150.0
rtt_ms = 100.0
port = "ka"

[[group]]
name = "ka"
kind = "ka"
count = 32
[group.workload]
type = "on-off"
off_mean_s = 0.5
sizes = { min_pkts = 1, max_pkts = 2000, shape = 1.8, mean_pkts = 100 }
"#;

    #[test]
    fn parses_with_defaults() {
        let s = Scenario::from_toml(FIG3).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.bin_s, 0.1);
        assert_eq!(s.packet_bytes, 1500);
        let hops = s.topology.hops();
        assert_eq!(hops.len(), 1);
        assert_eq!(hops[0].name, "bottleneck");
        assert_eq!(hops[0].delay_ms, 50.0);
        assert_eq!(hops[0].queue_pkts, 1000);
        assert_eq!(hops[0].reverse_port, PortKind::Droptail);
        assert_eq!(s.groups[0].kind, FlowKind::Ka);
        assert!(matches!(s.groups[0].workload, Workload::OnOff { .. }));
        // Round trip through TOML.
        let again = Scenario::from_toml(&s.to_toml()).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn rejects_unknown_fields_and_bad_values() {
        let typo = FIG3.replace("count = 32", "count = 32\ncuont = 1");
        assert!(matches!(
            Scenario::from_toml(&typo),
            Err(ScenarioError::Parse(_))
        ));
        let typo = FIG3.replace("rtt_ms = 100.0", "rtt_ms = 100.0\nrtt = 3");
        assert!(Scenario::from_toml(&typo).is_err());
        let bad = FIG3.replace("duration_s = 60.0", "duration_s = -1.0");
        assert!(matches!(
            Scenario::from_toml(&bad),
            Err(ScenarioError::Invalid(_))
        ));
        let bad = FIG3.replace("mean_pkts = 100", "mean_pkts = 5000");
        assert!(Scenario::from_toml(&bad).is_err());
        let bad = FIG3.replace("count = 32", "count = 32\nfrom = 1");
        assert!(Scenario::from_toml(&bad).is_err());
    }

    #[test]
    fn kinds_and_topologies() {
        let t = FIG3
            .replace("kind = \"ka\"\ncount", "kind = \"tcp\"\ncount")
            .replace(
                "kind = \"dumbbell\"",
                "kind = \"ka-legacy\"\nka_delay_ms = 5.0",
            )
            .replace("port = \"ka\"\n", "");
        let s = Scenario::from_toml(&t).unwrap();
        assert_eq!(s.groups[0].kind, FlowKind::TcpNewReno);
        let pcc =
            Scenario::from_toml(&FIG3.replace("kind = \"ka\"\ncount", "kind = \"pcc\"\ncount"))
                .unwrap();
        assert_eq!(pcc.groups[0].kind, FlowKind::Pcc);
        assert_eq!(FlowKind::Pcc.label(), "pcc");
        let hops = s.topology.hops();
        assert_eq!(hops.len(), 2);
        assert_eq!((hops[0].name.as_str(), hops[0].delay_ms), ("ka", 5.0));
        assert_eq!((hops[1].port, hops[1].delay_ms), (PortKind::Droptail, 45.0));
        let p = Topology::ParkingLot(ParkingLot {
            bottlenecks: 5,
            capacity_mbps: 100.0,
            rtt_ms: 100.0,
            queue_pkts: 100,
            port: PortKind::Ka,
            queue: QueueSpec::Droptail,
            access: Access::default(),
        });
        let hops = p.hops();
        assert_eq!(hops.len(), 5);
        assert_eq!(hops[4].name, "hop5");
        assert!((hops.iter().map(|h| h.delay_ms).sum::<f64>() - 50.0).abs() < 1e-9);
    }

    /// `[tcp] ecn` turns ECN on (or off) for the endpoints it is applied
    /// to; unset leaves the endpoint's default.
    #[test]
    fn tcp_ecn_knob() {
        use ka_endpoint::{EcnMode, TcpConfig};
        let with = |v: &str| FIG3.replace("[topology]", &format!("[tcp]\necn = {v}\n\n[topology]"));
        for (text, want) in [
            (with("true"), EcnMode::On),
            (with("false"), EcnMode::Off),
            (FIG3.to_string(), TcpConfig::default().ecn),
        ] {
            let s = Scenario::from_toml(&text).unwrap();
            let mut t = TcpConfig::default();
            s.tcp.apply(&mut t);
            assert_eq!(t.ecn, want, "{:?}", s.tcp.ecn);
        }
        assert_eq!(TcpConfig::default().ecn, EcnMode::Accept);
        assert!(Scenario::from_toml(&with("1")).is_err());
    }

    /// `[tcp] initial_rto_ms` and `min_rto_ms` reach the endpoint's
    /// config; a zero initial RTO is refused.
    #[test]
    fn tcp_rto_knobs() {
        use ka_endpoint::TcpConfig;
        use std::time::Duration;
        let with = |v: &str| FIG3.replace("[topology]", &format!("[tcp]\n{v}\n\n[topology]"));
        let s = Scenario::from_toml(&with("initial_rto_ms = 10.0\nmin_rto_ms = 5.0")).unwrap();
        let mut t = TcpConfig::default();
        s.tcp.apply(&mut t);
        assert_eq!(t.initial_rto, Duration::from_millis(10));
        assert_eq!(t.min_rto, Duration::from_millis(5));
        assert_ne!(TcpConfig::default().initial_rto, t.initial_rto);
        assert!(Scenario::from_toml(&with("initial_rto_ms = 0.0")).is_err());
    }

    #[test]
    fn finite_long_lived_flows() {
        let lived = |extra: &str| {
            FIG3.replace(
                "type = \"on-off\"\noff_mean_s = 0.5\nsizes = { min_pkts = 1, max_pkts = 2000, shape = 1.8, mean_pkts = 100 }",
                &format!("type = \"long-lived\"\nstart_s = 10.0\n{extra}"),
            )
        };
        let s = Scenario::from_toml(&lived("size_pkts = 5000")).unwrap();
        assert!(matches!(
            s.groups[0].workload,
            Workload::LongLived {
                size_pkts: Some(5000),
                ..
            }
        ));
        assert_eq!(Scenario::from_toml(&s.to_toml()).unwrap(), s);
        assert!(Scenario::from_toml(&lived("size_pkts = 0")).is_err());
        assert!(Scenario::from_toml(&lived("size_pkts = 10\non_s = 5.0")).is_err());
        // Unbounded flows do not write the key.
        let s = Scenario::from_toml(&lived("")).unwrap();
        assert!(!s.to_toml().contains("size_pkts"));
    }

    #[test]
    fn rtt_spread() {
        let r = RttSpec::Range([10.0, 250.0]);
        assert_eq!(r.for_host(0, 5), 10.0);
        assert_eq!(r.for_host(4, 5), 250.0);
        assert_eq!(r.for_host(2, 5), 130.0);
        assert_eq!(RttSpec::Fixed(7.0).for_host(3, 9), 7.0);
    }
}

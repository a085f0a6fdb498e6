//! The DCC topology: congestion-control segments between two middleboxes
//! (DESIGN §5.3; seed `dcc-middleboxes.txt`, Neumann et al.).
//!
//! ```text
//!  site A hosts ─ MA ══ aggregate port A→B (capacity = aggregate rate, LCCP) ══▶ R1
//!                                                                               │ middle segment
//!  site B hosts ─ MB ◀════ aggregate port B→A ══ R2 ◀── middle (rate, delay, queue) ─┘
//! ```
//!
//! ```toml
//! [topology]
//! kind = "dcc"
//! local_mbps = 100.0          # every host's link (site hosts and cross hosts)
//! local_delay_ms = 1.0        # one way, each host link
//! middle_mbps = 1.0           # the inter-site link
//! middle_delay_ms = 48.0      # one way
//! middle_queue_pkts = 50
//! middlebox_queue_pkts = 100  # the aggregate ports' queues
//! local = "lccp"              # lccp | tcp | xcp: the local segments
//! lccp = "ka"                 # ka | rcp: LCCP's carrier
//! lccp_scale = "dcc"          # dcc | paper: the KA rate scale of the sites
//! feedback = "ack"            # ack | direct: how LCCP's rate reaches the hosts
//! aggregate = { kind = "sla", rate_mbps = 1.0 }   # or multcp, or none
//! ```
//!
//! The network is a line of four routers: **R0 = MA** (site A's hosts),
//! **R1** and **R2** (the ends of the middle segment, where cross traffic
//! enters and leaves) and **R3 = MB** (site B's hosts), with hops `ma`
//! (R0→R1), `middle` (R1→R2) and `mb` (R2→R3). Groups default to `from =
//! 0, to = 3` (site A → site B); cross traffic through the middle segment
//! is `from = 1, to = 2`.
//!
//! ## Middleboxes
//!
//! A middlebox is the real router port at the entry of the middle segment
//! — MA's `ma` port for A→B, MB's `mb-rev` port for B→A — whose capacity
//! is the aggregate's current rate, plus an aggregate controller
//! (`ka_router::aggregate`) that sets it:
//!
//! * `aggregate = { kind = "sla", rate_mbps = R }`: a fixed SLA rate (the
//!   seed's data-centre case; `rate_mbps` defaults to `middle_mbps`).
//! * `aggregate = { kind = "multcp", weight = N, initial_mbps, max_mbps }`:
//!   MulTCP, an aggregate that takes the share of N TCP flows (see
//!   `ka_router::aggregate` for the rule and why).
//! * `aggregate = { kind = "none" }`: no middleboxes — `ma`/`mb-rev` are
//!   plain drop-tail ports at `local_mbps`, so the path is plain end to
//!   end (the seed's baseline; needs `local = "tcp"`).
//!
//! `reverse_aggregate` sets MB's aggregate separately (default: the same
//! as `aggregate`). The reverse direction carries the ACKs of A→B flows
//! and the UDP feedback reports; sender groups run A→B.
//!
//! **How MulTCP learns about the middle segment.** A real aggregate needs
//! feedback from the far middlebox (PA-MulTCP sends probes and gets ACKs
//! back). The simulator does not build those packets: a *tap* on the middle
//! port (`model::middlebox`) reports, for every packet of the aggregate
//! (source host attached at the middlebox's router), whether the port
//! queued or dropped it and the queueing delay ahead of it, and the report
//! reaches the middlebox's controller `queueing delay + 2·middle_delay`
//! later — when the far middlebox would have seen the packet (or the gap it
//! left in a sequence number space) and its report would be back. The
//! controller runs every millisecond ([`MIDDLEBOX_TICK`]). A queued packet
//! counts as delivered (true for drop-tail and RED, which drop only on
//! arrival). Use RED in the middle segment (`middle_queue = { kind = "red",
//! … }`) when MulTCP competes with TCP cross traffic: on drop-tail the
//! paced aggregate dodges the drops bursty TCP takes and gets far more than
//! N flows' share (see `ka_router::aggregate`, "Tolerance").
//!
//! ## Local segments (LCCP)
//!
//! * `local = "lccp"`: the aggregate port runs RCP at C = the aggregate's
//!   rate and tells every local host its per-flow share through the KA
//!   signal (`lccp = "ka"`, hosts of kind `ka`) or the native-RCP option
//!   (`lccp = "rcp"`, hosts of kind `rcp`), as DESIGN §5.3 fixes the
//!   carrier. How the rate reaches the host is `feedback` (below). Site
//!   hosts stay in KA mode through
//!   losses (`ka_endpoint::KaConfig::loss_leaves_ka = false`, unless the
//!   scenario's `[tcp] ka_leave_on_loss` says otherwise; [`host_tcp`]):
//!   congestion beyond the middlebox is its aggregate controller's to
//!   answer, and a host that fell back to TCP on every middle-segment loss
//!   would leave the aggregate's rate unused (with MulTCP against two TCP
//!   flows on RED, the hosts used 0.22–0.34 of the segment that way).
//! * `local = "tcp"`: the aggregate port is a drop-tail shaper at the
//!   aggregate's rate (segments, no LCCP); with `aggregate = "none"`, plain
//!   end-to-end TCP.
//! * `local = "xcp"`: the aggregate port is an XCP router port at the
//!   aggregate's rate (hosts of kind `xcp`/`xcp-rate`), the seed's first
//!   experiment: the middlebox tells each host its window change through
//!   XCP's per-packet feedback (`ka_router::signal::xcp`), and a MulTCP
//!   aggregate's changing rate moves the XCP stage's C.
//!
//! **LCCP's feedback channel** (`feedback`, DESIGN §5.3). The seed:
//! "LCCP enables the local middlebox to signal the allowed transmission
//! rate to the end-hosts. It uses a direct feedback channel", "much faster
//! and direct feedback to the local hosts", "LCCP presets an accurate
//! congestion control value to the local nodes".
//!
//! * `feedback = "ack"` (the default): the middlebox stamps the rate on
//!   the data, the receiver echoes it in its ACKs (KA's own path), so a
//!   host hears a rate one end-to-end RTT after the middlebox chose it.
//! * `feedback = "direct"`: the middlebox also writes its *current* rate
//!   into the rate echo (KA-Rate or RCP-Echo option) of every ACK it
//!   forwards towards its hosts — the aggregate port runs
//!   `ka_router::ControllerKind::Echo` (DESIGN §3.8), whose reverse-path
//!   stage does exactly that — so what the middlebox decides reaches the
//!   host after the local segment's one-way delay. Echo also *presets* a
//!   newcomer: its first echo carries its share of the aggregate (Echo's
//!   admission), not a rate it must probe for. κ's ceiling is [`DIRECT_TARGET`] (1.0,
//!   not Echo's 0.98): the port is the middlebox's own shaper, where a few
//!   packets of standing queue cost local delay only, whereas idle time
//!   wastes the aggregate's rate (LCCP's RCP already keeps a 12-packet
//!   queue target). A `[router] controller` other than the default wins.
//!   We write the rate onto packets already going to the host rather than
//!   send a control datagram: every TCP host behind the middlebox gets an
//!   ACK per one or two segments, so the channel is as fresh as a
//!   datagram per ACK would be, costs no extra packets and needs nothing
//!   new at the host. LCCP's UDP sources (DESIGN §6.6) have no ACKs; they
//!   keep their receiver reports.
//!
//! **The LCCP rate scale.** KA's paper scale cannot signal less than 120
//! kbit/s; on the seed's 1 Mbit/s middle segment that is the share of 8
//! flows, and the seed's load has more at times (then the port would stop
//! signalling and hosts fall back to TCP). The local segment is under the
//! operator's control, so a deployment may pick its own scale (DESIGN
//! §2.1): `lccp_scale = "dcc"` (the default) is the paper scale shifted
//! down 16× (b = 12.4392/16: 7.5 kbit/s … 654 Mbit/s, the same 6.45 %
//! steps), used by the aggregate ports and every endpoint of the run;
//! `"paper"` keeps [`Scale::PAPER`]. RCP's floor R_min on the aggregate
//! ports is half the scale's smallest rate (other KA ports use the smallest
//! rate itself, [`ka_router::RcpConfig::min_rate`]).
//!
//! **LCCP's RCP.** RCP's defaults (DESIGN §3.5: α = 0.1, β = 1, R₀ =
//! 0.05·C, the queue at the end of the interval) suit the paper's 150
//! Mbit/s. On a 1 Mbit/s aggregate one new host's initial window (10
//! packets) is 120 ms of queue, and β·q/d then drives R down by an order of
//! magnitude at every arrival: in `dcc-fig2-modern` (seed 1) the middlebox
//! dropped 186 packets, hosts spent 95 % of their time back in TCP mode
//! and the mean FCT was 6.1 s. So the aggregate ports take, unless the
//! scenario's `[router]` table moves them from the router's defaults: α = 0.4 and β = 0.226 (the gains
//! the XCP-vs-RCP seed uses for RCP, its Fig. 7: faster to hand a new
//! flow its share), R₀ = C (LCCP "presets" the rate: the first host gets
//! the whole aggregate), the persistent queue (smallest over the last RTT,
//! so a burst that drains is not held against R) and a queue target of
//! [`LCCP_BURST_PKTS`] full packets at the aggregate's initial rate (one
//! initial window is free). With them: no drops, 88 % of the time in KA
//! mode, mean FCT 4.2 s.

use std::time::Duration;

use ka_codec::scale::Scale;
use ka_router::PortConfig;
use ka_router::qdisc::QdiscConfig;
use serde::{Deserialize, Serialize};

use crate::engine::SimTime;
use crate::scenario::{Access, Group, Hop, PortKind, Scenario, ScenarioError};

/// Router index of MA (site A).
pub const SITE_A: usize = 0;
/// Router index of the middle segment's entry (A→B).
pub const MIDDLE_IN: usize = 1;
/// Router index of the middle segment's exit (A→B).
pub const MIDDLE_OUT: usize = 2;
/// Router index of MB (site B).
pub const SITE_B: usize = 3;

/// How often a middlebox with an adaptive aggregate reads its reports.
pub const MIDDLEBOX_TICK: SimTime = 1_000_000;

/// Parameters of the `dcc` topology (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DccTopology {
    /// Rate of every host link, Mbit/s. Default 100.
    #[serde(default = "float::<100>")]
    pub local_mbps: f64,
    /// One-way delay of every host link, ms. Default 1.
    #[serde(default = "float::<1>")]
    pub local_delay_ms: f64,
    /// Rate of the middle segment, Mbit/s. Default 1.
    #[serde(default = "float::<1>")]
    pub middle_mbps: f64,
    /// One-way delay of the middle segment, ms. Default 48 (a 100 ms RTT
    /// with the host links).
    #[serde(default = "float::<48>")]
    pub middle_delay_ms: f64,
    /// Queue of the middle segment's ports, packets. Default 50 (ns-2's
    /// default queue, the simulator of the seed's era).
    #[serde(default = "count::<50>")]
    pub middle_queue_pkts: usize,
    /// Queue discipline of the middle segment's ports. Default drop-tail.
    #[serde(default)]
    pub middle_queue: QdiscConfig,
    /// Queue of the aggregate ports, packets. Default 100.
    #[serde(default = "count::<100>")]
    pub middlebox_queue_pkts: usize,
    /// What the local segments run. Default `lccp`.
    #[serde(default)]
    pub local: LocalSegment,
    /// LCCP's carrier. Default `ka`.
    #[serde(default)]
    pub lccp: LccpCarrier,
    /// The KA rate scale of the sites. Default `dcc`.
    #[serde(default)]
    pub lccp_scale: LccpScale,
    /// How LCCP's rate reaches the hosts. Default `ack` (written only when
    /// it is not the default, so older scenarios serialise as before).
    #[serde(default, skip_serializing_if = "LccpFeedback::is_ack")]
    pub feedback: LccpFeedback,
    /// MA's aggregate (A→B). Default: SLA at `middle_mbps`.
    #[serde(default)]
    pub aggregate: AggregateSpec,
    /// MB's aggregate (B→A). Default: as `aggregate`.
    #[serde(default)]
    pub reverse_aggregate: Option<AggregateSpec>,
}

/// A serde default of `N` (for `#[serde(default = "float::<N>")]`).
fn float<const N: u32>() -> f64 {
    f64::from(N)
}

/// A serde default of `N` (for `#[serde(default = "count::<N>")]`).
fn count<const N: usize>() -> usize {
    N
}

/// What the local segments run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalSegment {
    /// The middlebox tells each host its rate (LCCP).
    #[default]
    Lccp,
    /// Plain TCP; the aggregate port is a drop-tail shaper.
    Tcp,
    /// XCP in the local segment (an `xcp` port at the aggregate's rate).
    Xcp,
}

/// LCCP's carrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LccpCarrier {
    /// The KA signal (leading-fragment length).
    #[default]
    Ka,
    /// The native-RCP IPv4 option.
    Rcp,
}

/// How LCCP's rate reaches the hosts (see the module docs, "LCCP's
/// feedback channel").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LccpFeedback {
    /// The middlebox stamps the data; the receiver echoes the rate in its
    /// ACKs (KA's own path): one end-to-end RTT.
    #[default]
    Ack,
    /// The middlebox also writes its current rate into the echo of every
    /// ACK it forwards towards its hosts ([`ka_router::ControllerKind::Echo`]
    /// on the aggregate port): the local segment's delay.
    Direct,
}

impl LccpFeedback {
    /// Whether this is the default (`ack`).
    pub fn is_ack(&self) -> bool {
        *self == LccpFeedback::Ack
    }
}

/// The KA rate scale of a DCC run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LccpScale {
    /// The paper scale shifted down 16× (7.5 kbit/s … 654 Mbit/s).
    #[default]
    Dcc,
    /// [`Scale::PAPER`] (120 kbit/s … 10.5 Gbit/s).
    Paper,
}

impl LccpScale {
    /// The scale.
    pub fn scale(self) -> Scale {
        match self {
            LccpScale::Paper => Scale::PAPER,
            LccpScale::Dcc => Scale {
                b: Scale::PAPER.b / 16.0,
                ..Scale::PAPER
            },
        }
    }
}

/// A middlebox's aggregate controller.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum AggregateSpec {
    /// No middlebox: plain end-to-end path.
    None,
    /// A fixed SLA rate.
    Sla {
        /// The rate, Mbit/s. Default: `middle_mbps`.
        #[serde(default)]
        rate_mbps: Option<f64>,
    },
    /// MulTCP: the share of `weight` TCP flows.
    Multcp {
        /// N (≥ 1). Default 1.
        #[serde(default = "one_f64")]
        weight: f64,
        /// Rate at start, Mbit/s. Default: half of `middle_mbps`.
        #[serde(default)]
        initial_mbps: Option<f64>,
        /// Upper bound, Mbit/s. Default: `local_mbps` (no bound below the
        /// hosts' links: an aggregate capped at the middle segment's rate
        /// and paced at exactly that rate keeps the segment's queue full
        /// without ever losing a packet itself, so it would never back off
        /// and TCP cross traffic would starve).
        #[serde(default)]
        max_mbps: Option<f64>,
    },
}

fn one_f64() -> f64 {
    1.0
}

impl Default for AggregateSpec {
    fn default() -> Self {
        AggregateSpec::Sla { rate_mbps: None }
    }
}

/// Mbit/s to bit/s (at least 1).
pub(crate) fn mbps(v: f64) -> u64 {
    (v * 1e6).round().max(1.0) as u64
}

impl DccTopology {
    /// MB's aggregate.
    pub fn reverse(&self) -> AggregateSpec {
        self.reverse_aggregate.unwrap_or(self.aggregate)
    }

    /// The initial capacity of an aggregate port, bit/s.
    pub fn initial_bps(&self, agg: AggregateSpec) -> u64 {
        match agg {
            AggregateSpec::None => mbps(self.local_mbps),
            AggregateSpec::Sla { rate_mbps } => mbps(rate_mbps.unwrap_or(self.middle_mbps)),
            AggregateSpec::Multcp { initial_mbps, .. } => {
                mbps(initial_mbps.unwrap_or(self.middle_mbps / 2.0))
            }
        }
    }

    /// The signalling of the aggregate ports.
    pub fn aggregate_port_kind(&self, agg: AggregateSpec) -> PortKind {
        if agg == AggregateSpec::None {
            return PortKind::Droptail;
        }
        match (self.local, self.lccp) {
            (LocalSegment::Lccp, LccpCarrier::Ka) => PortKind::Ka,
            (LocalSegment::Lccp, LccpCarrier::Rcp) => PortKind::Rcp,
            (LocalSegment::Tcp, _) => PortKind::Droptail,
            (LocalSegment::Xcp, _) => PortKind::Xcp,
        }
    }

    /// The three hops `ma`, `middle`, `mb` (see the module docs).
    pub fn hops(&self) -> Vec<Hop> {
        let kind = |a| self.aggregate_port_kind(a);
        let (fwd, rev) = (self.aggregate, self.reverse());
        let local = |bps: u64| bps as f64 / 1e6;
        vec![
            Hop {
                reverse_capacity_mbps: Some(self.local_mbps),
                ..Hop::link(
                    "ma",
                    local(self.initial_bps(fwd)),
                    0.0,
                    self.middlebox_queue_pkts,
                    kind(fwd),
                )
            },
            Hop {
                queue: self.middle_queue,
                reverse_queue: self.middle_queue,
                ..Hop::link(
                    "middle",
                    self.middle_mbps,
                    self.middle_delay_ms,
                    self.middle_queue_pkts,
                    PortKind::Droptail,
                )
            },
            Hop {
                reverse_capacity_mbps: Some(local(self.initial_bps(rev))),
                reverse_port: kind(rev),
                ..Hop::link(
                    "mb",
                    self.local_mbps,
                    0.0,
                    self.middlebox_queue_pkts,
                    PortKind::Droptail,
                )
            },
        ]
    }

    /// Every host's link.
    pub fn access(&self) -> Access {
        Access {
            rate_mbps: self.local_mbps,
            delay_ms: self.local_delay_ms,
        }
    }

    /// Checks what the generic checks cannot.
    pub fn validate(&self, groups: &[Group]) -> Result<(), ScenarioError> {
        let bad = |m: &str| Err(ScenarioError::Invalid(format!("dcc: {m}")));
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !(pos(self.local_mbps) && pos(self.middle_mbps)) {
            return bad("local_mbps and middle_mbps must be > 0");
        }
        if !(self.local_delay_ms.is_finite()
            && self.local_delay_ms >= 0.0
            && self.middle_delay_ms.is_finite()
            && self.middle_delay_ms >= 0.0)
        {
            return bad("delays must be >= 0");
        }
        if self.middle_queue_pkts == 0 || self.middlebox_queue_pkts == 0 {
            return bad("queues must be > 0");
        }
        if self.feedback == LccpFeedback::Direct && self.local != LocalSegment::Lccp {
            return bad("feedback = \"direct\" needs local = \"lccp\"");
        }
        for agg in [self.aggregate, self.reverse()] {
            match agg {
                AggregateSpec::None => {
                    if self.local != LocalSegment::Tcp {
                        return bad("aggregate \"none\" (no middleboxes) needs local = \"tcp\"");
                    }
                }
                AggregateSpec::Sla { rate_mbps } => {
                    if rate_mbps.is_some_and(|r| !pos(r)) {
                        return bad("sla rate_mbps must be > 0");
                    }
                }
                AggregateSpec::Multcp {
                    weight,
                    initial_mbps,
                    max_mbps,
                } => {
                    if !(weight.is_finite() && weight >= 1.0) {
                        return bad("multcp weight must be >= 1");
                    }
                    if initial_mbps.is_some_and(|r| !pos(r)) || max_mbps.is_some_and(|r| !pos(r)) {
                        return bad("multcp rates must be > 0");
                    }
                }
            }
        }
        for g in groups {
            let to = g.to.unwrap_or(SITE_B);
            let ok =
                (g.from == SITE_A && to == SITE_B) || (g.from == MIDDLE_IN && to == MIDDLE_OUT);
            if !ok {
                return bad(&format!(
                    "group {}: from/to must be 0→3 (site A to site B) or 1→2 (cross traffic)",
                    g.name
                ));
            }
        }
        Ok(())
    }

    /// The aggregate spec and the middle port (hop, direction) of an
    /// aggregate port (hop `hop`, direction `dir`: 0 forward, 1 reverse).
    fn aggregate_at(&self, hop: usize, dir: u8) -> Option<AggregateSpec> {
        match (hop, dir) {
            (0, 0) => Some(self.aggregate),
            (2, 1) => Some(self.reverse()),
            _ => None,
        }
    }

    /// Sets what an aggregate port needs beyond the generic hop settings
    /// (`hop`, direction `dir`: 0 forward, 1 reverse): the LCCP scale,
    /// RCP's floor (half the scale's smallest rate) and LCCP's RCP knobs
    /// where the scenario's `[router]` table leaves them unset (see the
    /// module docs, "LCCP's RCP"; a knob left at the router's default
    /// counts as unset).
    pub fn adjust_port(&self, scenario: &Scenario, hop: usize, dir: u8, cfg: &mut PortConfig) {
        let Some(agg) = self.aggregate_at(hop, dir) else {
            return;
        };
        if agg == AggregateSpec::None {
            return;
        }
        if self.feedback == LccpFeedback::Direct {
            direct_controller(scenario, &mut cfg.signalling);
        }
        let scale = self.lccp_scale.scale();
        cfg.scale = scale;
        cfg.rcp.min_rate = scale.rate_of_len(usize::from(scale.min_len)) / 2.0;
        let (k, def) = (&scenario.router.rcp, ka_router::RcpConfig::default());
        if k.alpha == def.alpha {
            cfg.rcp.alpha = LCCP_ALPHA;
        }
        if k.beta == def.beta {
            cfg.rcp.beta = LCCP_BETA;
        }
        if k.initial_frac == def.initial_frac {
            cfg.rcp.initial_frac = 1.0;
        }
        if k.queue_measure == def.queue_measure {
            cfg.rcp.queue_measure = ka_router::QueueMeasure::Persistent;
        }
        if k.queue_target == def.queue_target {
            let bits = (LCCP_BURST_PKTS * scenario.packet_bytes * 8) as f64;
            cfg.rcp.queue_target =
                Duration::from_secs_f64(bits / self.initial_bps(agg).max(1) as f64);
        }
    }
}

/// κ's ceiling of the direct channel's controller (see the module docs,
/// "LCCP's feedback channel").
pub const DIRECT_TARGET: f64 = 1.0;

/// The controller of an aggregate port with `feedback = "direct"`: Echo
/// (κ ceiling [`DIRECT_TARGET`]) unless the scenario's `[router]` table
/// names a controller other than the default.
fn direct_controller(scenario: &Scenario, signalling: &mut ka_router::Signalling) {
    use ka_router::{ControllerKind, EchoConfig, Signalling};
    if scenario.router.controller != ControllerKind::Rcp {
        return;
    }
    let echo = ControllerKind::Echo(EchoConfig {
        target: DIRECT_TARGET,
        ..EchoConfig::default()
    });
    if let Signalling::Ka { controller } | Signalling::NativeRcp { controller } = signalling {
        *controller = echo;
    }
}

/// LCCP's RCP α (see the module docs).
pub const LCCP_ALPHA: f64 = 0.4;
/// LCCP's RCP β (see the module docs).
pub const LCCP_BETA: f64 = 0.226;
/// Full packets of standing queue LCCP's RCP does not drain: one host's
/// initial window (RFC 6928: 10) plus two.
pub const LCCP_BURST_PKTS: usize = 12;

/// Checks an `arrivals` workload (the seed's: a fixed number of flows of
/// one size on one Poisson process): flows and size > 0, times ≥ 0.
pub fn check_arrivals(g: &Group) -> Result<(), String> {
    let super::Workload::Arrivals {
        flows,
        gap_mean_s,
        size_bytes,
        start_s,
    } = g.workload
    else {
        return Ok(());
    };
    if flows == 0 || size_bytes == 0 {
        return Err(format!(
            "group {}: flows and size_bytes must be > 0",
            g.name
        ));
    }
    let fine = |v: f64| v.is_finite() && v >= 0.0;
    if !(fine(gap_mean_s) && fine(start_s)) {
        return Err(format!("group {}: bad arrival times", g.name));
    }
    Ok(())
}

/// The KA scale every endpoint of `scenario` decodes with.
pub fn ka_scale(scenario: &Scenario) -> Scale {
    match &scenario.topology {
        super::Topology::Dcc(d) => d.lccp_scale.scale(),
        _ => Scale::PAPER,
    }
}

/// The `[tcp]` knobs of the hosts of a group attached at router `from`:
/// site hosts behind a middlebox with LCCP (`dcc`, `local = "lccp"`,
/// `from` = MA or MB) do not leave KA mode on a loss unless the scenario
/// says so (`ka_leave_on_loss`): the middlebox owns the middle segment,
/// whose losses reach its aggregate controller and come back to the hosts
/// as a lower LCCP rate (see the module docs, "Local segments").
pub fn host_tcp(scenario: &Scenario, from: usize) -> super::TcpKnobs {
    let mut tcp = scenario.tcp;
    if let super::Topology::Dcc(d) = &scenario.topology
        && d.local == LocalSegment::Lccp
        && (from == SITE_A || from == SITE_B)
    {
        tcp.ka_leave_on_loss = tcp.ka_leave_on_loss.or(Some(false));
    }
    tcp
}

//! The network of a scenario: topologies, hops, access links and port kinds.

use serde::{Deserialize, Serialize};

use ka_router::qdisc::QdiscConfig;
use ka_router::rwm::RwmConfig;
use ka_router::{Carrier, ImpairConfig};

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
    /// XCP router (DESIGN §7.2): lowers the feedback of the IPv4 XCP
    /// option; knobs `xcp = { alpha, beta, gamma }` in `[router]`.
    Xcp,
}

impl PortKind {
    /// The router's carrier for this kind (the rate controller and XCP's
    /// knobs come from `[router]`).
    pub fn carrier(self) -> Carrier {
        match self {
            PortKind::Ka => Carrier::Ka,
            PortKind::Rcp => Carrier::NativeRcp,
            PortKind::Droptail => Carrier::None,
            PortKind::Xcp => Carrier::Xcp,
        }
    }
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
    /// (DESIGN §5.3; see [`crate::scenario::dcc`]).
    Dcc(super::dcc::DccTopology),
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
    pub queue: QdiscConfig,
    /// Signalling of the reverse (ACK) port. Default `droptail`.
    #[serde(default = "droptail")]
    pub reverse_port: PortKind,
    /// Receive-window modulation at the receivers' router
    /// (`ka_router::rwm::RwmConfig`; capacity default: the hop's rates). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwm: Option<RwmConfig>,
    /// Impairments of the forward bottleneck port ([`Hop::impair`]).
    /// Default none.
    #[serde(default, skip_serializing_if = "ImpairConfig::is_default")]
    pub impair: ImpairConfig,
    /// Impairments of the reverse (ACK) port. Default none.
    #[serde(default, skip_serializing_if = "ImpairConfig::is_default")]
    pub reverse_impair: ImpairConfig,
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
    pub queue: QdiscConfig,
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
    pub queue: QdiscConfig,
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
    pub queue: QdiscConfig,
    /// Reverse port queue discipline. Default drop-tail.
    #[serde(default)]
    pub reverse_queue: QdiscConfig,
    /// Receive-window modulation on the router at the hop's far end
    /// (`ka_router::rwm::RwmConfig`; capacity default: the hop's rates). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwm: Option<RwmConfig>,
    /// Impairments of the forward port in its delay line
    /// (`ka_router::ImpairConfig`, DESIGN §3.10): e.g. `impair = { loss =
    /// "1%", jitter = "3ms", duplicate = 0.01, corrupt = 0.001, reorder =
    /// 0.1 }`. Probabilities are fractions in [0, 1] or percentages
    /// (`"1%"`); `jitter` at most `delay_ms`; `reorder` needs a delay. The
    /// draws come from the port's seed (a mix of the scenario seed), or
    /// `seed`. Default none.
    #[serde(default, skip_serializing_if = "ImpairConfig::is_default")]
    pub impair: ImpairConfig,
    /// Impairments of the reverse port. Default none.
    #[serde(default, skip_serializing_if = "ImpairConfig::is_default")]
    pub reverse_impair: ImpairConfig,
}

fn droptail() -> PortKind {
    PortKind::Droptail
}

impl Hop {
    /// A hop named `name` of `capacity_mbps` both ways, `delay_ms` one way,
    /// `queue_pkts` per port, with `port` forward and the defaults for the
    /// rest: a drop-tail reverse port, drop-tail queues, no RWM, no
    /// impairments. Set other fields with struct update syntax.
    pub fn link(
        name: impl Into<String>,
        capacity_mbps: f64,
        delay_ms: f64,
        queue_pkts: usize,
        port: PortKind,
    ) -> Self {
        Hop {
            name: name.into(),
            capacity_mbps,
            reverse_capacity_mbps: None,
            delay_ms,
            queue_pkts,
            port,
            reverse_port: PortKind::Droptail,
            queue: QdiscConfig::DropTail,
            reverse_queue: QdiscConfig::DropTail,
            rwm: None,
            impair: ImpairConfig::OFF,
            reverse_impair: ImpairConfig::OFF,
        }
    }
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
                reverse_queue: QdiscConfig::DropTail,
                rwm: d.rwm.clone(),
                impair: d.impair,
                reverse_impair: d.reverse_impair,
            }],
            Topology::KaLegacy(k) => {
                let one_way = (k.rtt_ms / 2.0 - 2.0 * k.access.delay_ms).max(0.0);
                let ka_delay = k.ka_delay_ms.min(one_way);
                vec![
                    Hop::link(
                        "ka",
                        k.ka_capacity_mbps.unwrap_or(k.capacity_mbps),
                        ka_delay,
                        k.queue_pkts,
                        PortKind::Ka,
                    ),
                    Hop {
                        queue: k.queue,
                        ..Hop::link(
                            "legacy",
                            k.capacity_mbps,
                            one_way - ka_delay,
                            k.queue_pkts,
                            PortKind::Droptail,
                        )
                    },
                ]
            }
            Topology::ParkingLot(p) => {
                let k = p.bottlenecks;
                let one_way = (p.rtt_ms / 2.0 - 2.0 * p.access.delay_ms).max(0.0);
                (1..=k)
                    .map(|i| Hop {
                        queue: p.queue,
                        ..Hop::link(
                            format!("hop{i}"),
                            p.capacity_mbps,
                            one_way / k as f64,
                            p.queue_pkts,
                            p.port,
                        )
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

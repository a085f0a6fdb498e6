//! Building the simulated network from a [`Scenario`]: routers in a line,
//! hosts on access links, router ports per hop and direction, and static
//! shortest-path routing.

use std::collections::VecDeque;
use std::time::Duration;

use ka_router::{PortConfig, RouterConfig};

use crate::engine::{Clock, Ctx, Engine, LinkConfig, Node, NodeId, SimTime, secs};
use crate::model::addr;
use crate::model::router::{NO_ROUTE, RouterNode};
use crate::model::world::{PathInfo, World};
use crate::scenario::{FlowKind, Hop, PortKind, Scenario, ScenarioError, TcpKnobs, Workload};

/// A node of the simulated network.
#[derive(Debug)]
pub enum SimNode<H> {
    /// A router.
    Router(RouterNode),
    /// An end host.
    Host(H),
}

impl<H: Node<Shared = World>> Node for SimNode<H> {
    type Shared = World;

    fn handle_packet(&mut self, ctx: &mut Ctx<'_, World>, iface: u16, packet: Vec<u8>) {
        match self {
            SimNode::Router(r) => r.handle_packet(ctx, packet),
            SimNode::Host(h) => h.handle_packet(ctx, iface, packet),
        }
    }

    fn handle_timeout(&mut self, ctx: &mut Ctx<'_, World>) {
        match self {
            SimNode::Router(r) => r.handle_timeout(ctx),
            SimNode::Host(h) => h.handle_timeout(ctx),
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            SimNode::Router(r) => r.poll_timeout(),
            SimNode::Host(h) => h.poll_timeout(),
        }
    }
}

/// What a sender host is told when it is built.
#[derive(Debug, Clone)]
pub struct SenderSpec {
    /// Group index.
    pub group: usize,
    /// Index of this host within its group.
    pub index_in_group: usize,
    /// Endpoint kind.
    pub kind: FlowKind,
    /// The receiver host's address.
    pub peer: [u8; 4],
    /// What to send.
    pub workload: Workload,
    /// Id of this sender's random stream.
    pub rng_stream: u64,
    /// Whether its flows are tracked in `series.csv`.
    pub tracked: bool,
    /// Path properties.
    pub path: PathInfo,
    /// Number of hosts in the group (for Poisson rates).
    pub group_size: usize,
    /// TCP initial window, segments (None = the endpoint's default).
    pub initial_window: Option<usize>,
    /// Application rate of a UDP source, bit/s (UDP kinds only).
    pub cbr_bps: Option<u64>,
}

/// The role of a host.
#[derive(Debug, Clone)]
pub enum HostRole {
    /// Opens flows.
    Sender(SenderSpec),
    /// Accepts flows.
    Receiver {
        /// Group index.
        group: usize,
        /// Endpoint kind of the peer.
        kind: FlowKind,
    },
}

/// Everything a host factory needs.
#[derive(Debug, Clone)]
pub struct HostSpec {
    /// Host number (address index).
    pub index: usize,
    /// The node id it will get.
    pub node: NodeId,
    /// Its address.
    pub addr: [u8; 4],
    /// Sender or receiver.
    pub role: HostRole,
    /// IP total length of a full data packet.
    pub packet_bytes: usize,
    /// Run seed.
    pub seed: u64,
    /// End of the run.
    pub duration: SimTime,
    /// The engine clock (for the cores' `Instant`s).
    pub clock: Clock,
    /// TCP knobs of the scenario (applied to senders and receivers).
    pub tcp: TcpKnobs,
    /// The KA rate scale of the run's endpoints (the paper's, except where
    /// a topology picks its own: [`crate::scenario::dcc`]).
    pub ka_scale: ka_codec::scale::Scale,
}

/// A hop as built.
#[derive(Debug, Clone)]
pub struct HopInfo {
    /// Name.
    pub name: String,
    /// Forward capacity, bit/s.
    pub capacity_bps: u64,
    /// Forward signalling.
    pub port: PortKind,
    /// Router holding the forward port, and its interface.
    pub fwd: (NodeId, usize),
    /// Router holding the reverse port, and its interface.
    pub rev: (NodeId, usize),
}

/// The built network.
pub struct Network<H: Node<Shared = World>> {
    /// The engine with all nodes and links.
    pub engine: Engine<SimNode<H>>,
    /// Routers R0 … Rm.
    pub routers: Vec<NodeId>,
    /// Hops 1 … m (index 0 = hop between R0 and R1).
    pub hops: Vec<HopInfo>,
    /// All hosts, by host number.
    pub hosts: Vec<NodeId>,
}

fn mbps(v: f64) -> u64 {
    (v * 1e6).round().max(1.0) as u64
}

fn ms(v: f64) -> SimTime {
    secs(v / 1e3)
}

/// The seed of the queue discipline of hop `hop`, direction `dir` (0
/// forward, 1 reverse): a SplitMix64 mix of the scenario seed, so each port
/// draws its own reproducible stream.
fn qdisc_seed(seed: u64, hop: usize, dir: u64) -> u64 {
    let mut z = seed ^ ((hop as u64) << 1 | dir).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The port configuration of one direction of a hop: the scenario's
/// `[router]` knobs on a `kind` port of the hop's link.
pub fn port_config(
    capacity_bps: u64,
    delay: SimTime,
    queue: usize,
    kind: PortKind,
    router: &RouterConfig,
) -> PortConfig {
    let mut c = router.port(kind.carrier(), capacity_bps);
    c.queue_limit = queue;
    c.delay = Duration::from_nanos(delay);
    c
}

struct Builder<H: Node<Shared = World>> {
    engine: Engine<SimNode<H>>,
    edges: Vec<(NodeId, usize, NodeId)>,
}

impl<H: Node<Shared = World>> Builder<H> {
    fn router(&mut self, id: NodeId) -> Option<&mut RouterNode> {
        match self.engine.node_mut(id) {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    fn port_link(&mut self, from: NodeId, to: NodeId, name: &str, cfg: PortConfig) -> usize {
        let i = self.router(from).map(|r| r.add_egress_port(name, cfg, 0));
        let (_, iface) = self.engine.add_link(from, LinkConfig::new(0, 0, to, 0));
        debug_assert_eq!(i, Some(iface), "router egress numbering out of step");
        self.edges.push((from, iface, to));
        iface
    }

    fn host_links(&mut self, host: NodeId, router: NodeId, rate: u64, delay: SimTime) {
        let (_, up) = self
            .engine
            .add_link(host, LinkConfig::new(rate, delay, router, 0));
        self.edges.push((host, up, router));
        let i = self.router(router).map(|r| r.add_egress_direct());
        let (_, down) = self
            .engine
            .add_link(router, LinkConfig::new(rate, delay, host, 0));
        debug_assert_eq!(i, Some(down), "router egress numbering out of step");
        self.edges.push((router, down, host));
    }
}

/// Builds the network of `scenario`, asking `make_host` for each host.
/// A DCC topology's middleboxes are installed on it afterwards by
/// [`crate::model::middlebox::install`] (the network does not know them).
pub fn build<H, F>(
    scenario: &Scenario,
    clock: Clock,
    mut make_host: F,
) -> Result<Network<H>, ScenarioError>
where
    H: Node<Shared = World>,
    F: FnMut(&HostSpec) -> Result<H, ScenarioError>,
{
    scenario.validate()?;
    let hops: Vec<Hop> = scenario.topology.hops();
    let access = scenario.topology.access();
    let access_bps = mbps(access.rate_mbps);
    let access_delay = ms(access.delay_ms);
    let m = hops.len();
    let mut b = Builder {
        engine: Engine::new(clock, World::default()),
        edges: Vec::new(),
    };
    let routers: Vec<NodeId> = (0..=m)
        .map(|_| b.engine.add_node(SimNode::Router(RouterNode::new(clock))))
        .collect();
    let mut hop_infos = Vec::with_capacity(m);
    let mut hop_delay = Vec::with_capacity(m);
    for (i, h) in hops.iter().enumerate() {
        let delay = ms(h.delay_ms);
        hop_delay.push(delay);
        let fwd_bps = mbps(h.capacity_mbps);
        let rev_bps = mbps(h.reverse_capacity_mbps.unwrap_or(h.capacity_mbps));
        let mut fwd_cfg = port_config(fwd_bps, delay, h.queue_pkts, h.port, &scenario.router);
        fwd_cfg.qdisc = h.queue;
        fwd_cfg.seed = qdisc_seed(scenario.seed, i, 0);
        let mut rev_cfg = port_config(
            rev_bps,
            delay,
            h.queue_pkts,
            h.reverse_port,
            &scenario.router,
        );
        rev_cfg.qdisc = h.reverse_queue;
        rev_cfg.seed = qdisc_seed(scenario.seed, i, 1);
        fwd_cfg.impair = h.impair;
        rev_cfg.impair = h.reverse_impair;
        if let crate::scenario::Topology::Dcc(d) = &scenario.topology {
            d.adjust_port(scenario, i, 0, &mut fwd_cfg);
            d.adjust_port(scenario, i, 1, &mut rev_cfg);
        }
        let (a, z) = (routers[i], routers[i + 1]);
        let f = b.port_link(a, z, &h.name, fwd_cfg);
        let r = b.port_link(z, a, &format!("{}-rev", h.name), rev_cfg);
        if let Some(spec) = &h.rwm {
            let rwm = ka_router::rwm::Rwm::new(
                spec.clone().for_ports(fwd_bps, rev_bps),
                clock.instant(0),
            )
            .map_err(|e| ScenarioError::Invalid(format!("hop {}: {e}", h.name)))?;
            if let Some(router) = b.router(z) {
                router.set_rwm(rwm, r);
            }
        }
        hop_infos.push(HopInfo {
            name: h.name.clone(),
            capacity_bps: fwd_bps,
            port: h.port,
            fwd: (a, f),
            rev: (z, r),
        });
    }

    let duration = secs(scenario.duration_s);
    let ka_scale = crate::scenario::dcc::ka_scale(scenario);
    let mut hosts = Vec::new();
    let mut stream = 0u64;
    for (gi, g) in scenario.groups.iter().enumerate() {
        let to = g.to.unwrap_or(m);
        let tcp = crate::scenario::dcc::host_tcp(scenario, g.from).resolve(g.tcp_profile);
        let path_delay: SimTime = hop_delay[g.from..to].iter().sum();
        let path_bps = hops[g.from..to]
            .iter()
            .map(|h| mbps(h.capacity_mbps))
            .min()
            .unwrap_or(access_bps)
            .min(access_bps);
        let natural_rtt = 2 * (2 * access_delay + path_delay);
        // Host `index`, the next node, in `role`: what every host of the
        // group shares.
        let host = |index: usize, node: NodeId, role: HostRole| HostSpec {
            index,
            node,
            addr: addr::host_addr(index),
            role,
            packet_bytes: scenario.packet_bytes,
            seed: scenario.seed,
            duration,
            clock,
            tcp,
            ka_scale,
        };
        for j in 0..g.count {
            if hosts.len() + 2 > addr::MAX_HOSTS {
                return Err(ScenarioError::Invalid("too many hosts".into()));
            }
            let (extra, base_rtt) = match g.rtt_ms {
                None => (0, natural_rtt),
                Some(spec) => {
                    let want = ms(spec.for_host(j, g.count));
                    if want < natural_rtt {
                        return Err(ScenarioError::Invalid(format!(
                            "group {}: RTT {} ms is below the path's {} ms",
                            g.name,
                            want as f64 / 1e6,
                            natural_rtt as f64 / 1e6
                        )));
                    }
                    // Split the difference over the two access directions;
                    // any odd nanosecond goes to the base RTT bookkeeping.
                    let e = (want - natural_rtt) / 2;
                    (e, natural_rtt + 2 * e)
                }
            };
            let s_index = hosts.len();
            let d_index = s_index + 1;
            let path = PathInfo {
                base_rtt,
                bottleneck_bps: path_bps,
                first_hop: g.from,
            };
            let sender = host(
                s_index,
                NodeId(b.engine.node_count() as u32),
                HostRole::Sender(SenderSpec {
                    group: gi,
                    index_in_group: j,
                    kind: g.kind,
                    peer: addr::host_addr(d_index),
                    workload: g.workload.clone(),
                    rng_stream: stream,
                    tracked: j < g.track,
                    path,
                    group_size: g.count,
                    initial_window: g.initial_window,
                    cbr_bps: g.cbr_mbps.map(mbps),
                }),
            );
            stream += 1;
            let s_node = b.engine.add_node(SimNode::Host(make_host(&sender)?));
            debug_assert_eq!(s_node, sender.node);
            let receiver = host(
                d_index,
                NodeId(b.engine.node_count() as u32),
                HostRole::Receiver {
                    group: gi,
                    kind: g.kind,
                },
            );
            let d_node = b.engine.add_node(SimNode::Host(make_host(&receiver)?));
            b.host_links(s_node, routers[g.from], access_bps, access_delay + extra);
            b.host_links(d_node, routers[to], access_bps, access_delay);
            hosts.push(s_node);
            hosts.push(d_node);
        }
    }

    // Static routing: for every destination host, a reverse BFS over the
    // links (routers forward, hosts do not); ties go to the lower interface.
    let n = b.engine.node_count();
    let mut incoming: Vec<Vec<(NodeId, usize)>> = vec![Vec::new(); n];
    for &(from, iface, to) in &b.edges {
        incoming[to.0 as usize].push((from, iface));
    }
    let is_router = |id: NodeId| routers.contains(&id);
    let mut tables: Vec<Vec<u16>> = vec![vec![NO_ROUTE; hosts.len()]; routers.len()];
    for (h, &dst) in hosts.iter().enumerate() {
        let mut next: Vec<Option<usize>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut q = VecDeque::from([dst]);
        seen[dst.0 as usize] = true;
        while let Some(v) = q.pop_front() {
            if v != dst && !is_router(v) {
                continue;
            }
            for &(u, iface) in &incoming[v.0 as usize] {
                if !seen[u.0 as usize] {
                    seen[u.0 as usize] = true;
                    next[u.0 as usize] = Some(iface);
                    q.push_back(u);
                }
            }
        }
        for (ri, &r) in routers.iter().enumerate() {
            if let Some(i) = next[r.0 as usize] {
                tables[ri][h] = u16::try_from(i).unwrap_or(NO_ROUTE);
            }
        }
    }
    for (ri, table) in tables.into_iter().enumerate() {
        if let Some(r) = b.router(routers[ri]) {
            r.set_routes(table);
        }
    }
    for i in 0..n {
        b.engine.rearm_node(NodeId(i as u32));
    }
    Ok(Network {
        engine: b.engine,
        routers,
        hops: hop_infos,
        hosts,
    })
}

impl<H: Node<Shared = World>> Network<H> {
    /// The router behind a node id.
    pub fn router(&self, id: NodeId) -> Option<&RouterNode> {
        match self.engine.node(id) {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    /// Mutable router access.
    pub fn router_mut(&mut self, id: NodeId) -> Option<&mut RouterNode> {
        match self.engine.node_mut(id) {
            SimNode::Router(r) => Some(r),
            SimNode::Host(_) => None,
        }
    }

    /// The host behind a node id.
    pub fn host(&self, id: NodeId) -> Option<&H> {
        match self.engine.node(id) {
            SimNode::Host(h) => Some(h),
            SimNode::Router(_) => None,
        }
    }
}

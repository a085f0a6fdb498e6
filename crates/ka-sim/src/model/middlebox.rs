//! The DCC topology's middleboxes in the built network: the tap on each
//! middle port that reports what the segment does to the aggregate's
//! packets, and the hook that runs the aggregate controller on the
//! aggregate port (see [`crate::scenario::dcc`] for the topology, its
//! scenario table and how MulTCP learns about the middle segment).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ka_router::aggregate::{
    AggregateController, FeedbackQueue, MulTcp, MulTcpConfig, SegmentFeedback,
};
use ka_router::router::InterfaceHook;
use ka_router::{Port, PushOutcome};

use crate::engine::{Clock, Node, SimTime, secs};
use crate::model::addr;
use crate::model::net::Network;
use crate::model::world::World;
use crate::scenario::dcc::{AggregateSpec, MIDDLEBOX_TICK, SITE_A, SITE_B, mbps};
use crate::scenario::{Scenario, ScenarioError};

/// Reports what the middle segment does to one direction's aggregate
/// packets (see [`crate::scenario::dcc`], "How MulTCP learns about the
/// middle segment"). Sits on a middle port as its [`InterfaceHook`].
#[derive(Debug)]
pub struct SegmentTap {
    /// Host index → whether it belongs to the aggregate.
    members: Vec<bool>,
    capacity_bps: u64,
    base_rtt: SimTime,
    clock: Clock,
    reports: Arc<Mutex<FeedbackQueue>>,
}

impl SegmentTap {
    /// Whether `packet` belongs to the aggregate: its IP bytes if so.
    pub fn classify(&self, packet: &[u8]) -> Option<usize> {
        let p = ka_codec::wire::ipv4::Ipv4Packet::new_checked(packet).ok()?;
        let host = addr::host_index(p.src_addr())?;
        self.members
            .get(host)
            .copied()
            .unwrap_or(false)
            .then_some(packet.len())
    }

    /// An aggregate packet of `bytes` met `queue_bytes` ahead of it at
    /// `now` and the port did `outcome`.
    pub fn report(&self, now: SimTime, bytes: usize, queue_bytes: usize, outcome: PushOutcome) {
        let qdelay_ns = (queue_bytes as u128 * 8 * 1_000_000_000
            / u128::from(self.capacity_bps.max(1)))
        .min(u128::from(u64::MAX / 4)) as u64;
        let fb = SegmentFeedback {
            bytes,
            lost: matches!(outcome, PushOutcome::Dropped(_)),
            queue_delay: Duration::from_nanos(qdelay_ns),
        };
        let at = self
            .clock
            .instant(now.saturating_add(qdelay_ns).saturating_add(self.base_rtt));
        if let Ok(mut q) = self.reports.lock() {
            q.push(at, fb);
        }
    }
}

impl InterfaceHook for SegmentTap {
    /// Follows the aggregate's packets (the note is their size).
    fn follow(&mut self, _now: Instant, packet: &[u8]) -> Option<usize> {
        self.classify(packet)
    }

    fn on_push(&mut self, now: Instant, bytes: usize, queue_bytes: usize, outcome: PushOutcome) {
        self.report(self.clock.sim_time(now), bytes, queue_bytes, outcome);
    }
}

/// The aggregate controller of a middlebox port and its report queue: the
/// port's [`InterfaceHook`].
#[derive(Debug)]
pub struct MiddleboxHook {
    controller: Box<dyn AggregateController>,
    reports: Arc<Mutex<FeedbackQueue>>,
    next_tick: SimTime,
    clock: Clock,
}

impl MiddleboxHook {
    /// When the hook next wants to run.
    pub fn next_wakeup(&self) -> SimTime {
        self.next_tick
    }

    /// Feeds the controller every report due at `now` (at its own delivery
    /// time) and sets the port's capacity to the aggregate's rate.
    pub fn run(&mut self, now: SimTime, port: &mut Port) {
        if now < self.next_tick {
            return;
        }
        let t = self.clock.instant(now);
        if let Ok(mut q) = self.reports.lock() {
            while let Some((at, fb)) = q.pop_due(t) {
                self.controller.on_feedback(at, &fb);
            }
        }
        port.set_capacity(t, self.controller.rate_bps());
        self.next_tick = now + MIDDLEBOX_TICK;
    }

    /// The aggregate's rate now, bit/s.
    pub fn rate_bps(&self) -> u64 {
        self.controller.rate_bps()
    }

    /// The controller's name.
    pub fn name(&self) -> &'static str {
        self.controller.name()
    }
}

impl InterfaceHook for MiddleboxHook {
    fn on_timeout(&mut self, now: Instant, port: &mut Port) {
        self.run(self.clock.sim_time(now), port);
    }

    fn next_wakeup(&self) -> Option<Instant> {
        Some(self.clock.instant(self.next_tick))
    }

    fn moves_capacity(&self) -> bool {
        true
    }
}

/// Attaches the adaptive aggregates' controllers and taps to a built DCC
/// network (nothing to do for SLA and "none": their ports were built at
/// their fixed capacity).
pub fn install<H: Node<Shared = World>>(
    net: &mut Network<H>,
    scenario: &Scenario,
) -> Result<(), ScenarioError> {
    let crate::scenario::Topology::Dcc(d) = &scenario.topology else {
        return Ok(());
    };
    // Host index → the router it is attached to, in build order.
    let mut attached = Vec::new();
    for g in &scenario.groups {
        for _ in 0..g.count {
            attached.push(g.from);
            attached.push(g.to.unwrap_or(SITE_B));
        }
    }
    let clock = net.engine.clock();
    let base_rtt = secs(2.0 * d.middle_delay_ms / 1e3);
    let middle_bps = mbps(d.middle_mbps);
    // (aggregate, site router, aggregate port (hop, dir), middle port dir)
    let dirs = [
        (d.aggregate, SITE_A, 0usize, false, false),
        (d.reverse(), SITE_B, 2usize, true, true),
    ];
    for (agg, site, hop, agg_rev, mid_rev) in dirs {
        let AggregateSpec::Multcp {
            weight,
            initial_mbps: _,
            max_mbps,
        } = agg
        else {
            continue;
        };
        let cfg = MulTcpConfig::new(
            weight,
            d.initial_bps(agg),
            mbps(max_mbps.unwrap_or(d.local_mbps)),
            Duration::from_nanos(base_rtt),
        );
        let reports = Arc::new(Mutex::new(FeedbackQueue::default()));
        let tap = SegmentTap {
            members: attached.iter().map(|&r| r == site).collect(),
            capacity_bps: middle_bps,
            base_rtt,
            clock,
            reports: Arc::clone(&reports),
        };
        let hook = MiddleboxHook {
            controller: Box::new(MulTcp::new(cfg)),
            reports,
            next_tick: 0,
            clock,
        };
        let missing = || ScenarioError::Invalid("dcc: topology not built as expected".into());
        let (agg_node, agg_iface) = {
            let h = net.hops.get(hop).ok_or_else(missing)?;
            if agg_rev { h.rev } else { h.fwd }
        };
        let (mid_node, mid_iface) = {
            let h = net.hops.get(1).ok_or_else(missing)?;
            if mid_rev { h.rev } else { h.fwd }
        };
        net.router_mut(agg_node)
            .ok_or_else(missing)?
            .set_hook(agg_iface, Box::new(hook))
            .map_err(|_| missing())?;
        net.router_mut(mid_node)
            .ok_or_else(missing)?
            .set_hook(mid_iface, Box::new(tap))
            .map_err(|_| missing())?;
        net.engine.rearm_node(agg_node);
    }
    Ok(())
}

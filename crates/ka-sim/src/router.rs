//! Router nodes: `ka_router::Port`s (one per egress interface that has a
//! queue) plus static per-destination routing.
//!
//! A port does its own serialisation and propagation delay, so the engine
//! link behind it is instantaneous. Egress interfaces towards hosts are
//! plain engine links ("direct": rate and delay of the access link, no
//! router logic), which is where the paper's fast access links live.

use ka_router::rwm::{Rwm, RwmStats, Side};
use ka_router::{Mode, Port, PortConfig, PortSnapshot, PushOutcome};

use crate::addr;
use crate::dcc::{MiddleboxHook, SegmentTap};
use crate::engine::{Clock, Ctx, SimTime};

/// One egress interface of a router.
#[derive(Debug)]
pub enum Egress {
    /// A router port (queue, shaper, controller, stamping, delay).
    Port(Box<PortSlot>),
    /// Forward straight onto the engine link (an access link).
    Direct,
}

/// A port and the simulator's bookkeeping for it.
#[derive(Debug)]
pub struct PortSlot {
    /// Name used in outputs (`port:<name>`, `link:<name>`).
    pub name: String,
    /// The real router core.
    pub port: Port,
    /// Largest queue (packets) seen after a push since the last
    /// [`PortSlot::take_queue_max`].
    queue_max: usize,
    /// A DCC middlebox's aggregate controller, which sets this port's
    /// capacity ([`crate::dcc`]).
    pub middlebox: Option<Box<MiddleboxHook>>,
    /// A DCC tap reporting what this (middle-segment) port does to an
    /// aggregate's packets ([`crate::dcc`]).
    pub tap: Option<Box<SegmentTap>>,
}

impl PortSlot {
    /// The largest queue length seen since the last call (at least the
    /// current length), and resets the tracker.
    pub fn take_queue_max(&mut self) -> usize {
        let m = self.queue_max.max(self.port.queue_len());
        self.queue_max = 0;
        m
    }

    /// The port's state.
    pub fn snapshot(&self) -> PortSnapshot {
        self.port.snapshot()
    }

    /// Whether the port is in KA mode.
    pub fn in_ka_mode(&self) -> bool {
        self.port.mode() == Mode::Ka
    }
}

/// A router: egress interfaces and a routing table.
#[derive(Debug)]
pub struct RouterNode {
    clock: Clock,
    egress: Vec<Egress>,
    /// Interfaces that have a port (the ones with timers).
    port_ifaces: Vec<usize>,
    /// Host index → egress interface (`u16::MAX` = unreachable).
    routes: Vec<u16>,
    /// Packets whose destination had no route (dropped).
    pub unroutable: u64,
    /// Packets the ports dropped (queue, TTL, malformed).
    pub port_drops: u64,
    /// Receive-window modulation in front of every egress, and the
    /// interface whose packets travel [`Side::Reverse`] (the hop's
    /// reverse port; everything else is `Forward`).
    rwm: Option<(Box<Rwm>, usize)>,
    /// Whether any port wants to see the opposite direction's packets
    /// ([`Port::wants_reverse`]).
    any_reverse: bool,
}

/// Marker for "no route" in the table.
pub const NO_ROUTE: u16 = u16::MAX;

impl RouterNode {
    /// A router with no interfaces yet.
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            egress: Vec::new(),
            port_ifaces: Vec::new(),
            routes: Vec::new(),
            unroutable: 0,
            port_drops: 0,
            rwm: None,
            any_reverse: false,
        }
    }

    /// Runs every packet this router forwards through `rwm` before its
    /// egress (DESIGN §8.5); packets leaving through `reverse_iface` travel
    /// [`Side::Reverse`], all others [`Side::Forward`].
    pub fn set_rwm(&mut self, rwm: Rwm, reverse_iface: usize) {
        self.rwm = Some((Box::new(rwm), reverse_iface));
    }

    /// RWM's counters, if this router runs it.
    pub fn rwm_stats(&self) -> Option<RwmStats> {
        self.rwm.as_ref().map(|(r, _)| r.stats())
    }

    /// Declares the next egress interface (must be called in the order the
    /// engine numbers the router's links). Returns its number.
    pub fn add_egress_port(&mut self, name: &str, config: PortConfig, now: SimTime) -> usize {
        let port = Port::new(config, self.clock.instant(now));
        self.any_reverse |= port.wants_reverse();
        self.egress.push(Egress::Port(Box::new(PortSlot {
            name: name.to_string(),
            port,
            queue_max: 0,
            middlebox: None,
            tap: None,
        })));
        self.port_ifaces.push(self.egress.len() - 1);
        self.egress.len() - 1
    }

    /// Declares the next egress interface as a direct link.
    pub fn add_egress_direct(&mut self) -> usize {
        self.egress.push(Egress::Direct);
        self.egress.len() - 1
    }

    /// Sets the routing table (host index → egress interface).
    pub fn set_routes(&mut self, routes: Vec<u16>) {
        self.routes = routes;
    }

    /// The routing table.
    pub fn routes(&self) -> &[u16] {
        &self.routes
    }

    /// The port behind egress `iface`, if it is one.
    pub fn port(&self, iface: usize) -> Option<&PortSlot> {
        match self.egress.get(iface) {
            Some(Egress::Port(p)) => Some(p),
            _ => None,
        }
    }

    /// Mutable access to the port behind egress `iface`.
    pub fn port_mut(&mut self, iface: usize) -> Option<&mut PortSlot> {
        match self.egress.get_mut(iface) {
            Some(Egress::Port(p)) => Some(p),
            _ => None,
        }
    }

    /// Advances every port to `now` (used before sampling state).
    pub fn advance<S>(&mut self, ctx: &mut Ctx<'_, S>) {
        self.handle_timeout(ctx);
    }

    /// The egress towards host address `addr`.
    fn route_to(&self, addr: Option<[u8; 4]>) -> Option<usize> {
        let host = addr::host_index(addr?)?;
        match self.routes.get(host) {
            Some(&i) if i != NO_ROUTE => Some(usize::from(i)),
            _ => None,
        }
    }

    fn route(&self, packet: &[u8]) -> Option<usize> {
        self.route_to(addr::ipv4_dst(packet))
    }

    /// The egress towards `packet`'s source.
    fn route_back(&self, packet: &[u8]) -> Option<usize> {
        self.route_to(addr::ipv4_src(packet))
    }

    /// A packet arrived.
    pub fn handle_packet<S>(&mut self, ctx: &mut Ctx<'_, S>, mut packet: Vec<u8>) {
        let Some(iface) = self.route(&packet) else {
            self.unroutable += 1;
            ctx.recycle(packet);
            return;
        };
        let now = ctx.instant();
        if self.any_reverse
            && let Some(back) = self.route_back(&packet)
            && back != iface
            && let Some(Egress::Port(slot)) = self.egress.get_mut(back)
            && slot.port.wants_reverse()
        {
            slot.port.on_reverse(now, &mut packet);
            while let Some(p) = slot.port.poll_transmit(now) {
                ctx.send(back, p);
            }
        }
        if let Some((rwm, rev)) = &mut self.rwm {
            let side = if iface == *rev {
                Side::Reverse
            } else {
                Side::Forward
            };
            rwm.process(now, side, &mut packet);
        }
        match self.egress.get_mut(iface) {
            Some(Egress::Port(slot)) => {
                let tapped = slot.tap.as_ref().and_then(|t| t.classify(&packet));
                if tapped.is_some() {
                    // The queue as the packet finds it.
                    slot.port.handle_timeout(now);
                }
                let ahead = slot.port.queue_discipline().bytes();
                let outcome = slot.port.push(now, packet);
                if let (Some(tap), Some(bytes)) = (slot.tap.as_ref(), tapped) {
                    tap.report(ctx.now(), bytes, ahead, outcome);
                }
                if let PushOutcome::Dropped(_) = outcome {
                    self.port_drops += 1;
                }
                let q = slot.port.queue_len();
                slot.queue_max = slot.queue_max.max(q);
                while let Some(p) = slot.port.poll_transmit(now) {
                    ctx.send(iface, p);
                }
            }
            Some(Egress::Direct) => {
                ctx.send(iface, packet);
            }
            None => {
                self.unroutable += 1;
                ctx.recycle(packet);
            }
        }
    }

    /// Runs due port work and forwards what departs.
    pub fn handle_timeout<S>(&mut self, ctx: &mut Ctx<'_, S>) {
        let now = ctx.instant();
        for &iface in &self.port_ifaces {
            if let Some(Egress::Port(slot)) = self.egress.get_mut(iface) {
                if let Some(hook) = slot.middlebox.as_mut() {
                    hook.run(ctx.now(), self.clock, &mut slot.port);
                }
                slot.port.handle_timeout(now);
                while let Some(p) = slot.port.poll_transmit(now) {
                    ctx.send(iface, p);
                }
            }
        }
    }

    /// The earliest time a port can have something to send
    /// ([`Port::next_departure`]): the ports' dequeues before it need no
    /// wake-up of their own (a port processes them exactly whenever it is
    /// advanced), which saves one event per packet on a link with a delay.
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.port_ifaces
            .iter()
            .filter_map(|&i| match self.egress.get(i) {
                Some(Egress::Port(slot)) => {
                    let port = slot.port.next_departure().map(|t| self.clock.sim_time(t));
                    let hook = slot.middlebox.as_ref().map(|h| h.next_wakeup());
                    port.into_iter().chain(hook).min()
                }
                _ => None,
            })
            .min()
    }
}

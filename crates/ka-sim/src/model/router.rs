//! Router nodes: the real `ka_router::Router` (the same composition the
//! `ka-router` binary runs) on the engine, with static per-destination
//! routing.
//!
//! Egress interfaces are `ka_router::Port`s (hops between routers) or
//! direct links (towards hosts: the access link's rate and delay are the
//! engine link's, no router logic), which is where the paper's fast
//! access links live. A port does its own serialisation and propagation
//! delay, so the engine link behind it is instantaneous. This node only
//! converts time (engine [`SimTime`] ↔ the cores' `Instant`s, by its
//! [`Clock`]) and hands what the router forwards to the engine, in the
//! router's order ([`Router::poll_transmit`]).

use ka_router::router::{AddressTable, InterfaceHook, RouterError, Routes};
use ka_router::rwm::{Rwm, RwmStats};
use ka_router::{Port, PortConfig, Router};

use crate::engine::{Clock, Ctx, SimTime};
use crate::model::addr;

/// Marker for "no route" in the table.
pub const NO_ROUTE: u16 = ka_router::router::NO_ROUTE;

/// A router: egress interfaces and a routing table over host numbers.
#[derive(Debug)]
pub struct RouterNode {
    clock: Clock,
    /// Boxed: a node is one variant of the engine's node enum, beside hosts.
    router: Box<Router>,
    /// Port names (`port:<name>`, `link:<name>` in outputs), by interface.
    names: Vec<Option<String>>,
}

impl RouterNode {
    /// A router with no interfaces yet.
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            router: Box::new(Router::new(table(Vec::new()))),
            names: Vec::new(),
        }
    }

    /// Runs every packet this router forwards through `rwm` before its
    /// egress (DESIGN §5.2); packets leaving through `reverse_iface` travel
    /// `Side::Reverse` (the hop's reverse port), all others `Side::Forward`.
    pub fn set_rwm(&mut self, rwm: Rwm, reverse_iface: usize) {
        self.router.set_rwm(rwm, [reverse_iface]);
    }

    /// RWM's counters, if this router runs it.
    pub fn rwm_stats(&self) -> Option<RwmStats> {
        self.router.rwm_stats()
    }

    /// Declares the next egress interface (must be called in the order the
    /// engine numbers the router's links). Returns its number.
    pub fn add_egress_port(&mut self, name: &str, config: PortConfig, now: SimTime) -> usize {
        self.names.push(Some(name.to_string()));
        self.router
            .add_port(Port::new(config, self.clock.instant(now)))
    }

    /// Declares the next egress interface as a direct link.
    pub fn add_egress_direct(&mut self) -> usize {
        self.names.push(None);
        self.router.add_direct()
    }

    /// Sets the routing table (host index → egress interface, [`NO_ROUTE`]
    /// for none).
    pub fn set_routes(&mut self, routes: Vec<u16>) {
        self.router.set_routes(table(routes));
    }

    /// The router.
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// The port behind egress `iface`, if it is one.
    pub fn port(&self, iface: usize) -> Option<&Port> {
        self.router.port(iface)
    }

    /// Mutable access to the port behind egress `iface`.
    pub fn port_mut(&mut self, iface: usize) -> Option<&mut Port> {
        self.router.port_mut(iface)
    }

    /// The name of the port behind egress `iface`.
    pub fn port_name(&self, iface: usize) -> Option<&str> {
        self.names.get(iface)?.as_deref()
    }

    /// The largest queue (packets) port `iface` held since the last call
    /// (at least its current length); resets the tracker.
    pub fn take_queue_max(&mut self, iface: usize) -> Option<usize> {
        self.router.take_queue_max(iface)
    }

    /// Attaches `hook` to the port behind egress `iface`.
    pub fn set_hook(
        &mut self,
        iface: usize,
        hook: Box<dyn InterfaceHook>,
    ) -> Result<(), RouterError> {
        self.router.set_hook(iface, hook)
    }

    /// Whether a hook moves the capacity of the port behind `iface`.
    pub fn moves_capacity(&self, iface: usize) -> bool {
        self.router.hook(iface).is_some_and(|h| h.moves_capacity())
    }

    /// Packets whose destination had no route (dropped).
    pub fn unroutable(&self) -> u64 {
        self.router.counters().unroutable
    }

    /// A packet arrived. Table routing does not look at the ingress.
    pub fn handle_packet<S>(&mut self, ctx: &mut Ctx<'_, S>, packet: Vec<u8>) {
        let now = ctx.instant();
        if let Some(p) = self.router.handle_packet(now, 0, packet) {
            ctx.recycle(p);
        }
        while let Some((iface, p)) = self.router.poll_transmit(now) {
            ctx.send(iface, p);
        }
    }

    /// Runs due router work and forwards what departs.
    pub fn handle_timeout<S>(&mut self, ctx: &mut Ctx<'_, S>) {
        let now = ctx.instant();
        self.router.handle_timeout(now);
        while let Some((iface, p)) = self.router.poll_transmit(now) {
            ctx.send(iface, p);
        }
    }

    /// When the router next has something to send or a hook to run
    /// ([`Router::poll_timeout`]: the ports' dequeues before a departure
    /// need no wake-up of their own, which saves one event per packet on a
    /// link with a delay).
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.router.poll_timeout().map(|t| self.clock.sim_time(t))
    }
}

/// Routes by host number: host `i` is address `addr::host_addr(i)`.
fn table(egress: Vec<u16>) -> Routes {
    Routes::Table(AddressTable::new(addr::host_addr(0), egress))
}

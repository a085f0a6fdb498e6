//! A whole router: ports, routing, receive-window modulation and the
//! reverse path, composed once ([`Router`]) for every driver — the
//! `ka-router` binary (two TUN devices: `shell::KaPorts`, feature `cli`)
//! and the simulator's router nodes (`ka-sim`).
//!
//! ```text
//! handle_packet(now, ingress, pkt)
//!   → route: egress = Routes::egress(ingress, pkt)        (none: dropped, counted)
//!   → reverse path: the port towards pkt's SOURCE may lower the rate echo
//!     pkt carries (Port::on_reverse: the `echo` controller)
//!   → receive-window modulation (Rwm::process; Side::Reverse if the egress
//!     is one of RWM's reverse interfaces)
//!   → egress: a Port (its hook sees the packet; push), or a direct link
//!     (forwarded at once, unchanged)
//! handle_timeout(now): hooks, then ports advanced to now; RWM's expiry
//! poll_transmit(now) / poll_transmit_on(iface, now): what departs
//! poll_timeout(): the earliest departure (Port::next_departure) or hook wake-up
//! ```
//!
//! Sans-IO like the ports: no I/O, no clock; time is the `Instant` the
//! driver passes in.
//!
//! # Where an ACK's echo is lowered
//!
//! On the ACK's **arrival** at the router, before receive-window
//! modulation and before the ACK enters its own port (its queue, then the
//! port's delay line). Three reasons:
//!
//! * A router can only act on a packet it holds. It holds the ACK from its
//!   arrival until it leaves the ACK's port; the port's delay line
//!   (`--delay`, [`PortConfig::delay`](crate::PortConfig)) models
//!   propagation *beyond* the router, so a packet in it is already on the
//!   wire. The last point inside the router would be the ACK's dequeue,
//!   which happens inside the ACK port's own event processing: lowering
//!   there would have one port call into another in the middle of its
//!   timeline. At arrival, every stage sees each packet once, in arrival
//!   order, at the instant the driver hands it in.
//! * The ACK's queue is the router's output queue towards the sender: the
//!   rate written at arrival reaches the sender one reverse queueing delay
//!   later, as any information the router sends does. ACK queues are short
//!   (the ACK direction of a flow carries a few percent of its bytes), so
//!   the echo is as fresh as at dequeue in the common case.
//! * Receive-window modulation acts on arrival too: both rewrite headers
//!   of the same packet, at the same instant, before it queues.
//!
//! Lowering the echo and RWM's window rewrite commute: the echo is a TCP
//! option, the window a fixed header field, each patch updates the TCP
//! checksum incrementally (RFC 1624, one's-complement sums, which
//! commute), and neither reads what the other writes (RWM reads the
//! window, flags, sequence numbers and, in SYNs, the MSS and window-scale
//! options; the reverse path reads the flags, ports and the echo option,
//! found by kind and ExID). That is what lets
//! [`Router::handle_batch`] run RWM over a whole batch first
//! ([`Rwm::process_batch`]) and still give exactly what
//! [`Router::handle_packet`] gives one by one.
//!
//! # One parse
//!
//! A packet is parsed once, on arrival ([`ka_codec::wire::Layout::parse`]),
//! and that parse is handed to the reverse path
//! ([`Port::on_reverse_segment`]), RWM ([`Rwm::process_parsed`],
//! [`Rwm::process_batch_parsed`]) and the egress port
//! ([`Port::push_parsed`]), whose queue keeps it with the packet for the
//! signalling stage on dequeue. Every rewrite on the way changes field
//! values only, never a header length or offset, so the parse stays valid.
//!
//! # Driving it
//!
//! Two ways, with the same packets at the same instants:
//!
//! * **Eager** (the simulator): after every `handle_packet` /
//!   `handle_timeout`, take [`Router::poll_transmit`] until `None`: the
//!   packets due at `now` on the interfaces that call acted on, in a fixed
//!   order (for an arrival: the reverse-path port, then the egress; for a
//!   timeout: every port in interface order); wake at
//!   [`Router::poll_timeout`].
//! * **Per interface** (the binary, whose output devices are pulled one
//!   at a time): [`Router::poll_transmit_on`] each interface at the
//!   instants [`Router::poll_timeout`] names.
//!
//! A port's output does not depend on when it is advanced (the port
//! processes its events exactly, in time order, whenever it is next
//! called), and [`Router::poll_timeout`] is a lower bound of every
//! departure that is exact for the next piece in a delay line, so both
//! ways see every piece at its departure instant; only the order across
//! interfaces at one instant can differ. `tests/router_drivers.rs` in
//! `ka-sim` checks this on a trace through both real drivers.

mod hooks;
mod routes;
#[cfg(test)]
pub(crate) mod tests;

pub use hooks::InterfaceHook;
pub use routes::{AddressTable, NO_ROUTE, Routes};

use std::collections::VecDeque;
use std::time::Instant;

use ka_codec::wire::{Layout, SegmentMut};

use crate::gso::{self, Gso};
use crate::port::{Port, PushOutcome};
use crate::rwm::{Rwm, RwmStats, Side};

/// One interface of a router.
#[derive(Debug)]
enum Interface {
    /// A router port (queue, shaper, signalling, delay) and its extras.
    Port(Box<PortSlot>),
    /// A direct link: packets leave at once, unchanged. Held here (with
    /// their arrival) only until the driver takes them.
    Direct(VecDeque<(Instant, Vec<u8>)>),
}

/// A port and what the router keeps beside it.
#[derive(Debug)]
struct PortSlot {
    port: Port,
    /// Largest queue (packets) seen after a push since the last
    /// [`Router::take_queue_max`].
    queue_max: usize,
    hook: Option<Box<dyn InterfaceHook>>,
}

/// A packet of a batch between routing and its port.
#[derive(Debug)]
struct Batched {
    now: Instant,
    ingress: usize,
    egress: Option<usize>,
    /// The one parse of `packet` (`None`: not IP).
    layout: Option<Layout>,
    /// Its view as a TCP super-packet, if it is one.
    gso: Option<Gso>,
    packet: Vec<u8>,
}

/// What a router counts beside its ports' own counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouterCounters {
    /// Packets dropped for want of a route (or of the interface it named).
    pub unroutable: u64,
    /// Packets the ports dropped on arrival (queue full, AQM, TTL,
    /// malformed; see each port's counters for which).
    pub port_drops: u64,
}

/// A request the router cannot honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RouterError {
    /// The interface does not exist or is a direct link.
    #[error("interface {0} is not a port")]
    NotAPort(usize),
}

/// A router: interfaces (each a [`Port`] or a direct link), [`Routes`],
/// optional receive-window modulation in front of every egress, the
/// reverse path for rate echoes, and a hook per port (see the module docs
/// for the order of the stages and how to drive it).
#[derive(Debug)]
pub struct Router {
    interfaces: Vec<Interface>,
    /// The interfaces that are ports, in order.
    ports: Vec<usize>,
    routes: Routes,
    rwm: Option<Box<Rwm>>,
    /// The egress interfaces whose packets RWM sees as [`Side::Reverse`].
    rwm_reverse: Vec<usize>,
    /// Whether any port wants to see the opposite direction's packets
    /// ([`Port::wants_reverse`]).
    any_reverse: bool,
    counters: RouterCounters,
    /// The interfaces the latest `handle_*` call acted on, in the order
    /// [`Router::poll_transmit`] drains them, and how far it got.
    pending: Vec<usize>,
    cursor: usize,
    /// Packets held on direct links.
    direct_backlog: usize,
    /// [`Router::handle_batch`]'s buffer, kept for its allocation.
    batch: Vec<Batched>,
}

impl Router {
    /// A router without interfaces that routes by `routes`.
    pub fn new(routes: Routes) -> Self {
        Self {
            interfaces: Vec::new(),
            ports: Vec::new(),
            routes,
            rwm: None,
            rwm_reverse: Vec::new(),
            any_reverse: false,
            counters: RouterCounters::default(),
            pending: Vec::new(),
            cursor: 0,
            direct_backlog: 0,
            batch: Vec::new(),
        }
    }

    /// Adds `port` as the next interface; returns its number.
    pub fn add_port(&mut self, port: Port) -> usize {
        self.any_reverse |= port.wants_reverse();
        self.interfaces.push(Interface::Port(Box::new(PortSlot {
            port,
            queue_max: 0,
            hook: None,
        })));
        let i = self.interfaces.len() - 1;
        self.ports.push(i);
        i
    }

    /// Adds a direct link as the next interface; returns its number.
    pub fn add_direct(&mut self) -> usize {
        self.interfaces.push(Interface::Direct(VecDeque::new()));
        self.interfaces.len() - 1
    }

    /// Replaces the routes.
    pub fn set_routes(&mut self, routes: Routes) {
        self.routes = routes;
    }

    /// The routes.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Runs every packet the router forwards through `rwm` before its
    /// egress (DESIGN §5.2): packets leaving by one of `reverse` travel
    /// [`Side::Reverse`], all others [`Side::Forward`].
    pub fn set_rwm(&mut self, rwm: Rwm, reverse: impl IntoIterator<Item = usize>) {
        self.rwm = Some(Box::new(rwm));
        self.rwm_reverse = reverse.into_iter().collect();
    }

    /// The receive-window modulation, if the router runs it.
    pub fn rwm(&self) -> Option<&Rwm> {
        self.rwm.as_deref()
    }

    /// RWM's counters, if the router runs it.
    pub fn rwm_stats(&self) -> Option<RwmStats> {
        self.rwm.as_ref().map(|r| r.stats())
    }

    /// Attaches `hook` to port interface `iface` (replacing any hook it
    /// had).
    pub fn set_hook(
        &mut self,
        iface: usize,
        hook: Box<dyn InterfaceHook>,
    ) -> Result<(), RouterError> {
        match self.interfaces.get_mut(iface) {
            Some(Interface::Port(slot)) => {
                slot.hook = Some(hook);
                Ok(())
            }
            _ => Err(RouterError::NotAPort(iface)),
        }
    }

    /// The hook on interface `iface`, if it has one.
    pub fn hook(&self, iface: usize) -> Option<&dyn InterfaceHook> {
        match self.interfaces.get(iface) {
            Some(Interface::Port(slot)) => slot.hook.as_deref(),
            _ => None,
        }
    }

    /// How many interfaces the router has.
    pub fn interface_count(&self) -> usize {
        self.interfaces.len()
    }

    /// The port of interface `iface`, if it is one.
    pub fn port(&self, iface: usize) -> Option<&Port> {
        match self.interfaces.get(iface) {
            Some(Interface::Port(slot)) => Some(&slot.port),
            _ => None,
        }
    }

    /// Mutable access to the port of interface `iface` (e.g. to advance
    /// it before sampling it).
    pub fn port_mut(&mut self, iface: usize) -> Option<&mut Port> {
        match self.interfaces.get_mut(iface) {
            Some(Interface::Port(slot)) => Some(&mut slot.port),
            _ => None,
        }
    }

    /// The largest queue (packets) port `iface` held after a push since
    /// the last call (at least its current length), and resets the
    /// tracker. `None` if `iface` is no port.
    pub fn take_queue_max(&mut self, iface: usize) -> Option<usize> {
        match self.interfaces.get_mut(iface) {
            Some(Interface::Port(slot)) => {
                let m = slot.queue_max.max(slot.port.queue_len());
                slot.queue_max = 0;
                Some(m)
            }
            _ => None,
        }
    }

    /// The router's own counters.
    pub fn counters(&self) -> RouterCounters {
        self.counters
    }

    /// A packet (a whole IP packet) read on interface `ingress` at `now`:
    /// routed, its echo possibly lowered by the port towards its source,
    /// through RWM, into its egress (module docs). Returns the packet if
    /// it has no route (dropped and counted; the buffer is the caller's to
    /// reuse).
    pub fn handle_packet(
        &mut self,
        now: Instant,
        ingress: usize,
        mut packet: Vec<u8>,
    ) -> Option<Vec<u8>> {
        self.pending.clear();
        self.cursor = 0;
        let Some(egress) = self.routes.egress(ingress, &packet) else {
            self.counters.unroutable += 1;
            return Some(packet);
        };
        // The one parse of this packet: every stage below takes it (their
        // rewrites change no header length or offset, so it stays valid).
        let layout = Layout::parse(&packet).ok();
        self.reverse_path(now, ingress, egress, &mut packet, layout);
        if let Some(rwm) = &mut self.rwm {
            let side = side(&self.rwm_reverse, egress);
            match layout {
                Some(l) => {
                    rwm.process_parsed(now, side, &mut SegmentMut::with_layout(&mut packet, l));
                }
                None => {
                    rwm.process(now, side, &mut packet);
                }
            }
        }
        self.enter(now, egress, packet, layout)
    }

    /// The packets read together (each with its time and ingress, in
    /// order): the same result as [`Router::handle_packet`] on each in
    /// turn, but RWM sees the whole batch first ([`Rwm::process_batch`]:
    /// its table lookups overlap). That is exact because RWM looks at no
    /// port, no port looks at RWM, and RWM's rewrite commutes with the
    /// reverse path's (module docs). Packets without a route are dropped
    /// and counted. [`Router::poll_transmit`] then drains every interface
    /// the batch acted on; a per-interface driver polls as usual.
    pub fn handle_batch(&mut self, arrivals: impl IntoIterator<Item = (Instant, usize, Vec<u8>)>) {
        self.handle_batch_gso(
            arrivals
                .into_iter()
                .map(|(now, ingress, packet)| (now, ingress, packet, None)),
        );
    }

    /// [`Router::handle_batch`] of packets among which are TCP
    /// super-packets (`Some(gso_size)`: the `virtio_net_hdr`'s segment
    /// size; see [`crate::gso`]). A super-packet enters its egress port
    /// whole ([`Port::push_gso`], which decides whether it stays whole),
    /// unless a stage of the router itself works per packet: then it is
    /// cut into its segments here first (receive-window modulation, a
    /// reverse path that lowers echoes, a hook on its egress). A
    /// super-packet whose view cannot be made ([`Gso::new`]: not TCP, IPv6
    /// extension headers) goes on as one plain packet. A direct link
    /// carries its segments.
    pub fn handle_batch_gso(
        &mut self,
        arrivals: impl IntoIterator<Item = (Instant, usize, Vec<u8>, Option<u16>)>,
    ) {
        self.pending.clear();
        self.cursor = 0;
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let routes = &self.routes;
        let per_packet = self.rwm.is_some() || self.any_reverse;
        let interfaces = &self.interfaces;
        for (now, ingress, packet, gso_size) in arrivals {
            let egress = routes.egress(ingress, &packet);
            let layout = Layout::parse(&packet).ok();
            let view = gso_size
                .zip(layout)
                .and_then(|(size, l)| Gso::new(&packet, &l, size));
            let Some(g) = view else {
                batch.push(Batched {
                    egress,
                    layout,
                    gso: None,
                    now,
                    ingress,
                    packet,
                });
                continue;
            };
            let whole = !per_packet
                && matches!(
                    egress.and_then(|e| interfaces.get(e)),
                    Some(Interface::Port(slot)) if slot.hook.is_none()
                );
            if whole {
                batch.push(Batched {
                    egress,
                    layout,
                    gso: Some(g),
                    now,
                    ingress,
                    packet,
                });
            } else {
                batch.extend(gso::segments(&packet, g).map(|p| Batched {
                    egress,
                    layout: Layout::parse(&p).ok(),
                    gso: None,
                    now,
                    ingress,
                    packet: p,
                }));
            }
        }
        if let Some(rwm) = &mut self.rwm {
            let reverse = &self.rwm_reverse;
            rwm.process_batch_parsed(batch.iter_mut().filter_map(|b| {
                Some((
                    b.now,
                    side(reverse, b.egress?),
                    b.packet.as_mut_slice(),
                    b.layout,
                ))
            }));
        }
        for b in batch.drain(..) {
            let Batched {
                now,
                ingress,
                egress,
                layout,
                gso,
                mut packet,
            } = b;
            let Some(egress) = egress else {
                self.counters.unroutable += 1;
                continue;
            };
            if let (Some(g), Some(l)) = (gso, layout) {
                // Whole: no reverse path, no RWM, no hook (see above).
                if let Some(Interface::Port(slot)) = self.interfaces.get_mut(egress) {
                    let o = slot.port.push_gso(now, packet, l, g);
                    self.counters.port_drops += u64::from(o.dropped);
                    slot.queue_max = slot.queue_max.max(slot.port.queue_len());
                    self.pending.push(egress);
                }
                continue;
            }
            self.reverse_path(now, ingress, egress, &mut packet, layout);
            // Counted when the egress does not exist; nothing to give back.
            let _ = self.enter(now, egress, packet, layout);
        }
        self.batch = batch;
    }

    /// Runs what is due at `now`: each port's hook, then the port advanced
    /// to `now` (in interface order), then RWM's expiry.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.pending.clear();
        self.cursor = 0;
        for &i in &self.ports {
            if let Some(Interface::Port(slot)) = self.interfaces.get_mut(i) {
                if let Some(hook) = slot.hook.as_mut() {
                    hook.on_timeout(now, &mut slot.port);
                }
                slot.port.handle_timeout(now);
            }
        }
        if self.direct_backlog > 0 {
            self.pending.extend(0..self.interfaces.len());
        } else {
            self.pending.extend_from_slice(&self.ports);
        }
        if let Some(rwm) = &mut self.rwm {
            rwm.handle_timeout(now);
        }
    }

    /// The earliest instant a packet may depart or a hook wants its
    /// timeout: the ports' [`Port::next_departure`] (a lower bound of
    /// their departures, exact for the next piece already in a delay
    /// line; their dequeues before it need no wake-up of their own), the
    /// hooks' [`InterfaceHook::next_wakeup`], and the arrival of any
    /// packet still held on a direct link. `None`: nothing to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ports = self
            .ports
            .iter()
            .filter_map(|&i| match self.interfaces.get(i) {
                Some(Interface::Port(slot)) => {
                    let hook = slot.hook.as_ref().and_then(|h| h.next_wakeup());
                    slot.port.next_departure().into_iter().chain(hook).min()
                }
                _ => None,
            })
            .min();
        let direct = if self.direct_backlog > 0 {
            self.interfaces
                .iter()
                .filter_map(|i| match i {
                    Interface::Direct(q) => q.front().map(|&(at, _)| at),
                    Interface::Port(_) => None,
                })
                .min()
        } else {
            None
        };
        ports.into_iter().chain(direct).min()
    }

    /// The next packet due at or before `now` on the interfaces the latest
    /// `handle_packet` / `handle_batch` / `handle_timeout` acted on, with
    /// its interface: after an arrival, the reverse-path port's, then the
    /// egress's; after a timeout, every port's in interface order. Call
    /// until `None` after each of those calls.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        while let Some(&i) = self.pending.get(self.cursor) {
            if let Some(p) = self.poll_transmit_on(i, now) {
                return Some((i, p));
            }
            self.cursor += 1;
        }
        None
    }

    /// [`Router::poll_transmit_on`], but a super-packet departs whole with
    /// its view ([`Port::poll_transmit_gso`]).
    pub fn poll_transmit_on_gso(
        &mut self,
        iface: usize,
        now: Instant,
    ) -> Option<(Vec<u8>, Option<Gso>)> {
        match self.interfaces.get_mut(iface)? {
            Interface::Port(slot) => slot.port.poll_transmit_gso(now),
            Interface::Direct(_) => self.poll_transmit_on(iface, now).map(|p| (p, None)),
        }
    }

    /// The next packet of interface `iface` due at or before `now`, if any.
    pub fn poll_transmit_on(&mut self, iface: usize, now: Instant) -> Option<Vec<u8>> {
        match self.interfaces.get_mut(iface)? {
            Interface::Port(slot) => slot.port.poll_transmit(now),
            Interface::Direct(q) => {
                if q.front()?.0 > now {
                    return None;
                }
                let (_, p) = q.pop_front()?;
                self.direct_backlog = self.direct_backlog.saturating_sub(1);
                Some(p)
            }
        }
    }

    /// The reverse path: the port towards `packet`'s source (if another
    /// than its egress) sees it and may lower its rate echo.
    fn reverse_path(
        &mut self,
        now: Instant,
        ingress: usize,
        egress: usize,
        packet: &mut [u8],
        layout: Option<Layout>,
    ) {
        if !self.any_reverse {
            return;
        }
        let Some(back) = self.routes.towards_source(ingress, packet) else {
            return;
        };
        if back == egress {
            return;
        }
        if let Some(Interface::Port(slot)) = self.interfaces.get_mut(back)
            && slot.port.wants_reverse()
        {
            match layout {
                Some(l) => {
                    slot.port
                        .on_reverse_segment(now, &mut SegmentMut::with_layout(packet, l));
                }
                None => {
                    slot.port.on_reverse(now, packet);
                }
            }
            self.pending.push(back);
        }
    }

    /// `packet` enters interface `egress`. Returns it if there is no such
    /// interface (counted as unroutable).
    fn enter(
        &mut self,
        now: Instant,
        egress: usize,
        packet: Vec<u8>,
        layout: Option<Layout>,
    ) -> Option<Vec<u8>> {
        match self.interfaces.get_mut(egress) {
            Some(Interface::Port(slot)) => {
                let followed = slot.hook.as_mut().and_then(|h| h.follow(now, &packet));
                let ahead = match followed {
                    Some(_) => {
                        // The queue as the packet finds it.
                        slot.port.handle_timeout(now);
                        slot.port.queue_discipline().bytes()
                    }
                    None => 0,
                };
                let outcome = match layout {
                    Some(l) => slot.port.push_parsed(now, packet, l),
                    None => slot.port.push(now, packet),
                };
                if let (Some(hook), Some(note)) = (slot.hook.as_mut(), followed) {
                    hook.on_push(now, note, ahead, outcome);
                }
                if let PushOutcome::Dropped(_) = outcome {
                    self.counters.port_drops += 1;
                }
                slot.queue_max = slot.queue_max.max(slot.port.queue_len());
                self.pending.push(egress);
                None
            }
            Some(Interface::Direct(q)) => {
                q.push_back((now, packet));
                self.direct_backlog += 1;
                self.pending.push(egress);
                None
            }
            None => {
                self.counters.unroutable += 1;
                Some(packet)
            }
        }
    }
}

/// The side RWM sees a packet leaving by `egress` on.
#[inline]
fn side(reverse: &[usize], egress: usize) -> Side {
    if reverse.contains(&egress) {
        Side::Reverse
    } else {
        Side::Forward
    }
}

//! The KA core as a [`Forwarder`]: a [`Router`] with two interfaces.

use std::time::Instant;

use super::forwarder::{Arrivals, Forwarder};
use super::stats::{CoreStats, Direction};
use crate::gso::Gso;
use crate::router::{Router, Routes};
use crate::rwm::{Rwm, RwmStats};
use crate::{Mode, Port, PortConfig};

/// Interface 0: the `--in` device (where the senders are, by convention);
/// its port shapes [`Direction::Reverse`].
const IN: usize = 0;
/// Interface 1: the `--out` device; its port shapes [`Direction::Forward`].
const OUT: usize = 1;

/// The interface packets of `dir` leave by.
fn egress(dir: Direction) -> usize {
    match dir {
        Direction::Forward => OUT,
        Direction::Reverse => IN,
    }
}

/// The interface packets of `dir` are read on.
fn ingress(dir: Direction) -> usize {
    match dir {
        Direction::Forward => IN,
        Direction::Reverse => OUT,
    }
}

/// The router proper: a [`Router`] with two interfaces, the `--in` device
/// (0) and the `--out` device (1), each with its [`Port`], crossover
/// routing ([`Routes::Crossover`]: a packet read on one leaves by the
/// other), and optionally receive-window modulation in front of both. The
/// forward port (in → out) is interface 1's, the reverse port interface
/// 0's. The reverse path, RWM and the order of the stages are the
/// [`Router`]'s, exactly as in the simulator ([`crate::router`]).
#[derive(Debug)]
pub struct KaPorts {
    router: Router,
    capacity_bps: [f64; 2],
}

impl KaPorts {
    /// Both ports, created at `now`.
    pub fn new(forward: PortConfig, reverse: PortConfig, now: Instant) -> Self {
        let mut router = Router::new(Routes::Crossover);
        let rev = router.add_port(Port::new(reverse, now));
        let fwd = router.add_port(Port::new(forward, now));
        debug_assert_eq!((rev, fwd), (IN, OUT));
        Self {
            capacity_bps: [forward.capacity_bps as f64, reverse.capacity_bps as f64],
            router,
        }
    }

    /// Puts `rwm` in front of both ports (DESIGN §5.2): packets leaving by
    /// the `--in` device travel [`Side::Reverse`](crate::rwm::Side).
    pub fn with_rwm(mut self, rwm: Rwm) -> Self {
        self.router.set_rwm(rwm, [IN]);
        self
    }

    /// The port of one direction.
    pub fn port(&self, dir: Direction) -> Option<&Port> {
        self.router.port(egress(dir))
    }

    /// The router.
    pub fn router(&self) -> &Router {
        &self.router
    }
}

impl Forwarder for KaPorts {
    fn push(&mut self, dir: Direction, now: Instant, packet: Vec<u8>) {
        // Crossover routing always finds a route; drops are counted by the
        // ports.
        let _ = self.router.handle_packet(now, ingress(dir), packet);
    }

    /// [`Router::handle_batch`]: RWM sees the whole batch first (its table
    /// lookups overlap), with the same result as `push` one by one.
    fn push_batch(&mut self, batch: &mut Vec<(Direction, Vec<u8>, Instant)>) {
        self.router.handle_batch(
            batch
                .drain(..)
                .map(|(dir, packet, now)| (now, ingress(dir), packet)),
        );
    }

    /// [`Router::handle_batch_gso`]: a super-packet enters its port whole
    /// (the port and the router decide whether it stays whole).
    fn push_batch_gso(&mut self, batch: &mut Arrivals) {
        self.router.handle_batch_gso(
            batch
                .drain(..)
                .map(|(dir, packet, now, size)| (now, ingress(dir), packet, size)),
        );
    }

    fn poll_transmit(&mut self, dir: Direction, now: Instant) -> Option<Vec<u8>> {
        self.router.poll_transmit_on(egress(dir), now)
    }

    fn poll_transmit_gso(
        &mut self,
        dir: Direction,
        now: Instant,
    ) -> Option<(Vec<u8>, Option<Gso>)> {
        self.router.poll_transmit_on_gso(egress(dir), now)
    }

    /// [`Router::poll_timeout`]: the next departure (or a lower bound of
    /// it); dequeues before it need no wake-up.
    fn poll_timeout(&self) -> Option<Instant> {
        self.router.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.router.handle_timeout(now);
    }

    fn rwm_stats(&self) -> Option<RwmStats> {
        self.router.rwm_stats()
    }

    fn stats(&self, dir: Direction) -> CoreStats {
        let Some(port) = self.port(dir) else {
            return CoreStats::default();
        };
        let s = port.snapshot();
        let c = &s.counters;
        CoreStats {
            capacity_bps: self.capacity_bps.get(dir.index()).copied().unwrap_or(0.0),
            rate_bps: s.rate_bps,
            ka_mode: s.mode == Mode::Ka,
            queue_packets: s.queue_packets as u64,
            queue_bytes: s.queue_bytes as u64,
            rtt: s.rtt,
            qdisc: port.queue_discipline().name(),
            drops_queue: c.drops_queue,
            drops_aqm: c.drops_aqm,
            ecn_marks: c.ecn_marks,
            active_flows: port.queue_discipline().active_flows().map(|n| n as u64),
            sojourn: *port.sojourn(),
            drops_ttl: c.drops_ttl,
            drops_malformed: c.drops_malformed,
            non_ip: c.non_ip,
            fragments: c.fragments_made,
            indicators: c.indicators_seen,
            mode_changes: c.mode_changes,
            rcp_options_lowered: c.rcp_options_lowered,
            echoes_lowered: c.echoes_lowered,
            xcp_feedback_lowered: c.xcp_feedback_lowered,
            signals_skipped: c.signals_skipped,
            unstampable: c.unstampable,
            signal_len: s.signal.map_or(0, |code| code.len() as u64),
            drops_impair: c.drops_impair,
            duplicated: c.duplicated,
            corrupted: c.corrupted,
            reordered: c.reordered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::tests::tcp_v4;
    use crate::{ControllerKind, EchoConfig};
    use ka_codec::wire::checksum;
    use ka_codec::wire::tcp::TcpRepr;
    use std::time::Duration;

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    /// Runs a connection's handshake and first data segment through `k`,
    /// then its ACK echoing KA-Rate code 185: returns the ACK as it leaves
    /// towards the sender.
    fn ack_leaving(controller: ControllerKind) -> Vec<u8> {
        let t0 = Instant::now();
        let mut fwd = PortConfig::new(100_000_000);
        fwd.signalling = crate::Signalling::Ka { controller };
        let rev = PortConfig::new(100_000_000);
        let mut k = KaPorts::new(fwd, rev, t0);
        let mut t = t0;
        let through = |k: &mut KaPorts, dir: Direction, p: Vec<u8>, t: &mut Instant| {
            *t += Duration::from_millis(10);
            k.push(dir, *t, p);
            *t += Duration::from_millis(10);
            k.handle_timeout(*t);
            let mut out = Vec::new();
            while let Some(p) = k.poll_transmit(dir, *t) {
                out.push(p);
            }
            out
        };
        through(
            &mut k,
            Direction::Forward,
            tcp_v4(A, B, TcpRepr::new(40000, 5001, 0, 0, 0x02, 0), &[], 0),
            &mut t,
        );
        through(
            &mut k,
            Direction::Reverse,
            tcp_v4(B, A, TcpRepr::new(5001, 40000, 0, 0, 0x12, 0), &[], 0),
            &mut t,
        );
        through(
            &mut k,
            Direction::Forward,
            tcp_v4(A, B, TcpRepr::new(40000, 5001, 0, 0, 0x10, 0), &[], 1000),
            &mut t,
        );
        let echo = [253, 6, 0x4B, 0x41, 185, 1, 1, 1];
        let mut out = through(
            &mut k,
            Direction::Reverse,
            tcp_v4(B, A, TcpRepr::new(5001, 40000, 0, 0, 0x10, 0), &echo, 0),
            &mut t,
        );
        assert_eq!(out.len(), 1);
        out.remove(0)
    }

    #[test]
    fn an_ack_leaving_towards_the_sender_carries_the_echo_controllers_rate() {
        let p = ack_leaving(ControllerKind::Echo(EchoConfig::default()));
        let code = p[44];
        assert!(code < 185, "code {code}");
        let pseudo = checksum::pseudo_v4(B, A, 6, (p.len() - 20) as u32);
        assert_eq!(checksum::finish(checksum::sum(&p[20..], pseudo)), 0);
        // The paper's RCP leaves the echo alone.
        let p = ack_leaving(ControllerKind::Rcp);
        assert_eq!(p[44], 185);
    }
}

//! The KA core's two ports as a [`Forwarder`].

use std::time::Instant;

use super::forwarder::Forwarder;
use super::stats::{CoreStats, Direction};
use crate::rwm::{Rwm, RwmStats, Side};
use crate::{Mode, Port, PortConfig};

/// The router proper: one [`Port`] per direction (forward = in → out),
/// optionally with receive-window modulation in front of both.
#[derive(Debug)]
pub struct KaPorts {
    forward: Port,
    reverse: Port,
    capacity_bps: [f64; 2],
    rwm: Option<Rwm>,
}

impl KaPorts {
    /// Both ports, created at `now`.
    pub fn new(forward: PortConfig, reverse: PortConfig, now: Instant) -> Self {
        Self {
            capacity_bps: [forward.capacity_bps as f64, reverse.capacity_bps as f64],
            forward: Port::new(forward, now),
            reverse: Port::new(reverse, now),
            rwm: None,
        }
    }

    /// Puts `rwm` in front of both ports: every packet goes through
    /// [`Rwm::process`] before its port's `push` (DESIGN §8.5).
    pub fn with_rwm(mut self, rwm: Rwm) -> Self {
        self.rwm = Some(rwm);
        self
    }

    /// The port of one direction.
    pub fn port(&self, dir: Direction) -> &Port {
        match dir {
            Direction::Forward => &self.forward,
            Direction::Reverse => &self.reverse,
        }
    }

    fn port_mut(&mut self, dir: Direction) -> &mut Port {
        match dir {
            Direction::Forward => &mut self.forward,
            Direction::Reverse => &mut self.reverse,
        }
    }
}

fn side(dir: Direction) -> Side {
    match dir {
        Direction::Forward => Side::Forward,
        Direction::Reverse => Side::Reverse,
    }
}

impl Forwarder for KaPorts {
    fn push(&mut self, dir: Direction, now: Instant, mut packet: Vec<u8>) {
        if let Some(rwm) = &mut self.rwm {
            rwm.process(now, side(dir), &mut packet);
        }
        // Drops are counted by the port; nothing else to do with the outcome.
        let _ = self.port_mut(dir).push(now, packet);
    }

    /// RWM sees the whole batch first ([`Rwm::process_batch`]: its table
    /// lookups overlap), then each packet goes into its port, in order —
    /// the same result as `push` one by one (RWM never looks at a port).
    fn push_batch(&mut self, batch: &mut Vec<(Direction, Vec<u8>, Instant)>) {
        if let Some(rwm) = &mut self.rwm {
            rwm.process_batch(
                batch
                    .iter_mut()
                    .map(|(dir, p, now)| (*now, side(*dir), p.as_mut_slice())),
            );
        }
        for (dir, packet, now) in batch.drain(..) {
            let _ = self.port_mut(dir).push(now, packet);
        }
    }

    fn poll_transmit(&mut self, dir: Direction, now: Instant) -> Option<Vec<u8>> {
        self.port_mut(dir).poll_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match (self.forward.poll_timeout(), self.reverse.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.forward.handle_timeout(now);
        self.reverse.handle_timeout(now);
        if let Some(rwm) = &mut self.rwm {
            rwm.handle_timeout(now);
        }
    }

    fn rwm_stats(&self) -> Option<RwmStats> {
        self.rwm.as_ref().map(Rwm::stats)
    }

    fn stats(&self, dir: Direction) -> CoreStats {
        let s = self.port(dir).snapshot();
        let c = &s.counters;
        CoreStats {
            capacity_bps: self.capacity_bps.get(dir.index()).copied().unwrap_or(0.0),
            rate_bps: s.rate_bps,
            ka_mode: s.mode == Mode::Ka,
            queue_packets: s.queue_packets as u64,
            queue_bytes: s.queue_bytes as u64,
            rtt: s.rtt,
            qdisc: self.port(dir).queue_discipline().name(),
            drops_queue: c.drops_queue,
            drops_aqm: c.drops_aqm,
            ecn_marks: c.ecn_marks,
            active_flows: self
                .port(dir)
                .queue_discipline()
                .active_flows()
                .map(|n| n as u64),
            sojourn: *self.port(dir).sojourn(),
            drops_ttl: c.drops_ttl,
            drops_malformed: c.drops_malformed,
            non_ip: c.non_ip,
            fragments: c.fragments_made,
            indicators: c.indicators_seen,
            mode_changes: c.mode_changes,
            rcp_options_lowered: c.rcp_options_lowered,
            xcp_feedback_lowered: c.xcp_feedback_lowered,
            unstampable: c.unstampable,
            signal_len: s.signal.map_or(0, |code| code.len() as u64),
        }
    }
}

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

impl KaPorts {
    /// The other direction's port sees `packet` as it leaves the router, so
    /// its controller may lower the rate echo the packet carries (the
    /// `echo` controller, [`Port::on_reverse`]). On the way out, after this
    /// direction's queue and `--delay`: the router's emulated path lies
    /// between its two interfaces, so a packet leaving towards the senders
    /// is next to them, and a rate written now acts at once.
    fn reverse_hook(&mut self, dir: Direction, now: Instant, packet: &mut [u8]) {
        let other = match dir {
            Direction::Forward => &mut self.reverse,
            Direction::Reverse => &mut self.forward,
        };
        if other.wants_reverse() {
            other.on_reverse(now, packet);
        }
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
        let mut p = self.port_mut(dir).poll_transmit(now)?;
        self.reverse_hook(dir, now, &mut p);
        Some(p)
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
            echoes_lowered: c.echoes_lowered,
            xcp_feedback_lowered: c.xcp_feedback_lowered,
            unstampable: c.unstampable,
            signal_len: s.signal.map_or(0, |code| code.len() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ControllerKind, EchoConfig};
    use ka_codec::wire::checksum;
    use std::time::Duration;

    /// An IPv4 TCP segment with valid checksums.
    fn seg(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        flags: u8,
        opts: &[u8],
        payload: usize,
    ) -> Vec<u8> {
        let hl = 20 + opts.len();
        let total = 20 + hl + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        let c = checksum::checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[32] = ((hl / 4) as u8) << 4;
        p[33] = flags;
        p[40..40 + opts.len()].copy_from_slice(opts);
        let pseudo = checksum::pseudo_v4(src, dst, 6, (total - 20) as u32);
        let c = checksum::finish(checksum::sum(&p[20..], pseudo));
        p[36..38].copy_from_slice(&c.to_be_bytes());
        p
    }

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
            seg(A, B, 40000, 5001, 0x02, &[], 0),
            &mut t,
        );
        through(
            &mut k,
            Direction::Reverse,
            seg(B, A, 5001, 40000, 0x12, &[], 0),
            &mut t,
        );
        through(
            &mut k,
            Direction::Forward,
            seg(A, B, 40000, 5001, 0x10, &[], 1000),
            &mut t,
        );
        let echo = [253, 6, 0x4B, 0x41, 185, 1, 1, 1];
        let mut out = through(
            &mut k,
            Direction::Reverse,
            seg(B, A, 5001, 40000, 0x10, &echo, 0),
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

//! The XCP router stage (`Signalling::Xcp`) on a packet-level fluid model,
//! driven through a real `Port` in virtual time.
//!
//! N ideal window-based XCP senders share one 100 Mbit/s port with a 50 ms
//! one-way delay; acknowledgements come back after another 50 ms without
//! queueing (base RTTs 100–120 ms, see [`SPREAD`]). Each sender keeps at most `cwnd / 1500`
//! packets of 1500 bytes in flight, stamps every packet with the XCP option
//! (`H_cwnd` = cwnd, `H_rtt` = its smoothed RTT, `H_feedback` = the window
//! change that would take it to a window far above the link's within one
//! window of packets, as ka-endpoint's sender asks), and applies the
//! feedback each ACK echoes at once (`cwnd ← max(cwnd + feedback, 1500)`).
//! Flows start with unequal windows, so fairness has to be reached, not
//! just kept. The port's queue is effectively unlimited.
//!
//! Checked: every flow converges to C/N ± 5 % with a persistent queue under
//! 5 packets (N = 1, 10, 50); when half the flows leave, the spare capacity
//! is taken up within 5 control intervals; per control interval the stage
//! hands out h + max(φ, 0) of positive and h + max(−φ, 0) of negative
//! feedback within 1 %, and the feedback actually written into the packets
//! adds up to the same.

mod common;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use ka_codec::XcpOption;
use ka_codec::xcp_option;
use ka_router::{Port, PortConfig, Signalling, XcpInterval, XcpSignal};

const C_BPS: u64 = 100_000_000;
/// C in bytes per second.
const C: f64 = C_BPS as f64 / 8.0;
const PKT: usize = 1500;
const MS: u64 = 1_000_000;
/// One-way delay of the port, and of the ACK path.
const ONE_WAY: u64 = 50 * MS;
/// Serialisation time of one packet at C, ns.
const SER: u64 = (PKT as u64 * 8 * 1_000_000_000) / C_BPS;
/// Base RTTs are spread evenly over 100 ms … 100 ms + SPREAD (on the ACK
/// path): with identical RTTs the converged windows are identical too and
/// the whole population crosses whole-packet window boundaries at once,
/// a synchronisation artefact (seed `xcp-vs-rcp.txt` §4.2) that moves the
/// queue in steps of N packets.
const SPREAD: u64 = 20 * MS;
/// The window every sender asks for (far above the link's BDP).
const DESIRED: f64 = 50e6;

struct Flow {
    /// Extra delay of this flow's ACK path, ns.
    extra: u64,
    cwnd: f64,
    /// Smoothed RTT, seconds (0 = none yet).
    srtt: f64,
    /// Send times of the packets in flight, oldest first.
    in_flight: VecDeque<u64>,
    active: bool,
    /// ACKs received, with their times (ns).
    acked: Vec<u64>,
}

/// One egress packet as the test sees it.
struct Out {
    /// When the port dequeued it (ns).
    dequeued: u64,
    rtt_s: f64,
    feedback: i32,
}

struct Sim {
    port: Port,
    t0: Instant,
    now: u64,
    flows: Vec<Flow>,
    /// (ack time, flow, feedback).
    acks: BinaryHeap<Reverse<(u64, usize, i32)>>,
    /// Port queue (bytes) sampled every millisecond.
    queue: Vec<usize>,
    /// Control intervals as the stage reports them, in order.
    intervals: Vec<XcpInterval>,
    out: Vec<Out>,
    /// When every packet was pushed (ns), in order.
    pushes: Vec<u64>,
}

impl Sim {
    /// `windows[i]` = the initial window of flow i, packets.
    fn new(windows: &[usize]) -> Self {
        let t0 = Instant::now();
        let mut cfg = PortConfig::new(C_BPS);
        cfg.signalling = Signalling::XCP;
        cfg.queue_limit = 1_000_000;
        cfg.delay = Duration::from_nanos(ONE_WAY);
        let mut sim = Self {
            port: Port::new(cfg, t0),
            t0,
            now: 0,
            flows: windows
                .iter()
                .enumerate()
                .map(|(i, &w)| Flow {
                    extra: i as u64 * SPREAD / windows.len() as u64,
                    cwnd: (w * PKT) as f64,
                    srtt: 0.0,
                    in_flight: VecDeque::new(),
                    active: true,
                    acked: Vec::new(),
                })
                .collect(),
            acks: BinaryHeap::new(),
            queue: Vec::new(),
            intervals: Vec::new(),
            out: Vec::new(),
            pushes: Vec::new(),
        };
        for i in 0..windows.len() {
            sim.send_allowed(i);
        }
        sim
    }

    fn stage(&self) -> &XcpSignal {
        self.port
            .signaller()
            .as_any()
            .and_then(|a| a.downcast_ref::<XcpSignal>())
            .expect("an XCP port")
    }

    fn packet(&self, i: usize) -> Vec<u8> {
        let f = &self.flows[i];
        let packets = (f.cwnd / PKT as f64).max(1.0);
        let request = if f.srtt > 0.0 {
            ((DESIRED - f.cwnd) / packets) as i32
        } else {
            0
        };
        let opt = XcpOption {
            cwnd_bytes: f.cwnd as u32,
            rtt_us: (f.srtt * 1e6) as u32,
            feedback_bytes: request,
        };
        let payload = vec![0u8; PKT - 20 - XcpOption::PADDED_LEN];
        common::ipv4(
            &payload,
            &opt.to_padded_bytes(),
            false,
            false,
            0,
            i as u16,
            64,
            17,
        )
    }

    fn send_allowed(&mut self, i: usize) {
        while self.flows[i].active
            && (self.flows[i].in_flight.len() as f64) < (self.flows[i].cwnd / PKT as f64).floor()
        {
            let p = self.packet(i);
            self.flows[i].in_flight.push_back(self.now);
            self.pushes.push(self.now);
            self.port.push(self.t0 + Duration::from_nanos(self.now), p);
        }
    }

    fn collect(&mut self) {
        let now = self.t0 + Duration::from_nanos(self.now);
        while let Some(p) = self.port.poll_transmit(now) {
            let (_, opt) = xcp_option::find_in_packet(&p).unwrap().unwrap();
            let flow = usize::from(u16::from_be_bytes([p[4], p[5]]));
            self.out.push(Out {
                dequeued: self.now - ONE_WAY - SER,
                rtt_s: f64::from(opt.rtt_us) / 1e6,
                feedback: opt.feedback_bytes,
            });
            let back = self.now + ONE_WAY + self.flows[flow].extra;
            self.acks.push(Reverse((back, flow, opt.feedback_bytes)));
        }
        let last = self.stage().last_interval();
        if last.end > 0 && self.intervals.last().is_none_or(|l| l.end != last.end) {
            self.intervals.push(last);
        }
    }

    fn run_until(&mut self, end_ms: u64) {
        let end = end_ms * MS;
        let mut next_sample = (self.queue.len() as u64 + 1) * MS;
        loop {
            let port_at = self
                .port
                .poll_timeout()
                .map(|i| i.duration_since(self.t0).as_nanos() as u64);
            let ack_at = self.acks.peek().map(|r| r.0.0);
            let t = [port_at, ack_at, Some(next_sample)]
                .into_iter()
                .flatten()
                .min()
                .unwrap();
            if t > end {
                break;
            }
            self.now = t;
            if t == next_sample {
                self.port.handle_timeout(self.t0 + Duration::from_nanos(t));
                self.queue.push(self.port.snapshot().queue_bytes);
                next_sample += MS;
            }
            self.collect();
            while self.acks.peek().is_some_and(|r| r.0.0 <= t) {
                let Reverse((_, i, fb)) = self.acks.pop().unwrap();
                let f = &mut self.flows[i];
                let sent = f.in_flight.pop_front().unwrap();
                let sample = (t - sent) as f64 / 1e9;
                f.srtt = if f.srtt == 0.0 {
                    sample
                } else {
                    f.srtt + (sample - f.srtt) / 8.0
                };
                f.cwnd = (f.cwnd + f64::from(fb)).max(PKT as f64);
                f.acked.push(t);
                self.send_allowed(i);
            }
        }
        self.now = end;
    }

    /// Throughput of flow i over (from, to] ms, bytes per second.
    fn rate(&self, i: usize, from_ms: u64, to_ms: u64) -> f64 {
        let n = self.flows[i]
            .acked
            .iter()
            .filter(|&&t| t > from_ms * MS && t <= to_ms * MS)
            .count();
        (n * PKT) as f64 / ((to_ms - from_ms) as f64 / 1e3)
    }

    /// The persistent queue over the control intervals that end in
    /// (from, to] ms, counted by the test itself: per interval, the
    /// smallest queue (packets) a dequeue left behind, from the push and
    /// dequeue times; the largest of these minima.
    fn persistent_queue(&self, from_ms: u64, to_ms: u64) -> usize {
        let mut worst = 0;
        for iv in self.intervals_in(from_ms, to_ms) {
            let min = self
                .out
                .iter()
                .enumerate()
                .filter(|(_, o)| o.dequeued >= iv.start && o.dequeued < iv.end)
                .map(|(k, o)| {
                    let pushed = self.pushes.partition_point(|&t| t <= o.dequeued);
                    pushed - (k + 1)
                })
                .min()
                .unwrap_or(0);
            worst = worst.max(min);
        }
        worst
    }

    fn intervals_in(&self, from_ms: u64, to_ms: u64) -> impl Iterator<Item = &XcpInterval> {
        self.intervals
            .iter()
            .filter(move |iv| iv.end > from_ms * MS && iv.end <= to_ms * MS)
    }

    fn assert_fair(&self, flows: &[usize], from_ms: u64, to_ms: u64) {
        let fair = C / flows.len() as f64;
        let rates: Vec<f64> = flows
            .iter()
            .map(|&i| self.rate(i, from_ms, to_ms))
            .collect();
        let q = self.persistent_queue(from_ms, to_ms);
        let router_q = self
            .intervals_in(from_ms, to_ms)
            .map(|iv| iv.persistent_queue)
            .max()
            .unwrap();
        let (lo, hi) = rates
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)));
        let msg = format!(
            "N={}: fair {:.0} B/s, rates [{lo:.0}, {hi:.0}], persistent queue {q} packets (the router's Q: {router_q} B), d {:?}",
            flows.len(),
            fair,
            self.port.rtt()
        );
        eprintln!("{msg}");
        assert!(lo >= 0.95 * fair && hi <= 1.05 * fair, "{msg}");
        assert!(q < 5 && router_q < 5 * PKT, "queue: {msg}");
    }
}

/// Initial windows 1, 4, 7, … packets.
fn uneven(n: usize) -> Vec<usize> {
    (0..n).map(|i| 1 + 3 * i).collect()
}

fn converges(n: usize) -> Sim {
    let mut sim = Sim::new(&uneven(n));
    sim.run_until(30_000);
    let all: Vec<usize> = (0..n).collect();
    sim.assert_fair(&all, 27_000, 30_000);
    assert_eq!(sim.port.snapshot().counters.drops_queue, 0);
    sim
}

#[test]
fn one_flow_fills_the_link() {
    converges(1);
}

#[test]
fn ten_flows_converge_to_fair_shares() {
    converges(10);
}

#[test]
fn fifty_flows_converge_to_fair_shares() {
    converges(50);
}

#[test]
fn spare_capacity_is_taken_up_within_five_intervals_when_flows_leave() {
    let mut sim = Sim::new(&uneven(10));
    sim.run_until(20_000);
    for f in &mut sim.flows[5..] {
        f.active = false;
    }
    let left = 20_000 * MS;
    sim.run_until(30_000);
    // The intervals that began after the last packet of the departed
    // flows had arrived (one RTT later at most, when their final ACKs have
    // come back and nothing of theirs is left in the queue).
    let gone = sim.flows[5..]
        .iter()
        .flat_map(|f| f.acked.last().copied())
        .max()
        .unwrap()
        .max(left);
    let after: Vec<&XcpInterval> = sim.intervals.iter().filter(|iv| iv.start >= gone).collect();
    let util: Vec<f64> = after.iter().map(|iv| iv.input_rate / C).take(8).collect();
    eprintln!("utilisation per interval after the departure: {util:.3?}");
    assert!(util[0] < 0.8, "the departure made room: {util:?}");
    // Within 5 intervals the remaining flows use ≥ 95 % of C again.
    let k = util
        .iter()
        .position(|&u| u >= 0.95)
        .expect("never refilled");
    assert!(k < 5, "refilled only in interval {}: {util:?}", k + 1);
    let remaining: Vec<usize> = (0..5).collect();
    sim.assert_fair(&remaining, 27_000, 30_000);
}

/// A DCC middlebox halves C (`Port::set_capacity`): the stage's φ uses the
/// new C, so the flows settle at the new C/N with a small queue (without
/// it φ aims at the old C: the shaper still holds the rates at C/N, but
/// the persistent queue keeps growing — this test's queue check fails).
#[test]
fn a_new_capacity_moves_the_fair_share() {
    let mut sim = Sim::new(&uneven(10));
    sim.run_until(15_000);
    sim.port
        .set_capacity(sim.t0 + Duration::from_millis(15_000), C_BPS / 2);
    sim.run_until(30_000);
    let fair = C / 2.0 / 10.0;
    let rates: Vec<f64> = (0..10).map(|i| sim.rate(i, 27_000, 30_000)).collect();
    assert!(
        rates.iter().all(|&r| (r - fair).abs() <= 0.05 * fair),
        "fair {fair:.0} B/s, rates {rates:.0?}"
    );
    assert!(sim.persistent_queue(27_000, 30_000) < 5);
}

#[test]
fn each_interval_hands_out_phi_plus_shuffling() {
    let mut sim = Sim::new(&uneven(10));
    sim.run_until(20_000);
    let steady: Vec<XcpInterval> = sim
        .intervals
        .iter()
        .filter(|iv| iv.start >= 10_000 * MS)
        .copied()
        .collect();
    assert!(steady.len() > 80, "{} intervals", steady.len());
    // φ and h of each interval come from the previous one's measurements.
    for w in steady.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let d = b.rtt_s;
        let phi = 0.4 * d * (C - a.input_rate) - 0.226 * a.persistent_queue as f64;
        let h = (0.1 * a.input_rate * d - phi.abs()).max(0.0);
        assert!((b.phi - phi).abs() < 1e-6 * C * d, "φ: {a:?} → {b:?}");
        assert!((b.shuffle - h).abs() < 1e-6 * C * d, "h: {a:?} → {b:?}");
    }
    for iv in &steady {
        let pos = iv.shuffle + iv.phi.max(0.0);
        let neg = iv.shuffle + (-iv.phi).max(0.0);
        assert!(
            iv.shuffle > 0.05 * C * iv.rtt_s,
            "h = γ·y·d ≈ 0.1·C·d: {iv:?}"
        );
        assert!((iv.positive - pos).abs() <= 0.01 * pos, "positive: {iv:?}");
        assert!((iv.negative - neg).abs() <= 0.01 * neg, "negative: {iv:?}");
        // What the packets carry (rounded to bytes), as traffic change per d.
        let written: f64 = sim
            .out
            .iter()
            .filter(|o| o.dequeued >= iv.start && o.dequeued < iv.end)
            .map(|o| f64::from(o.feedback) * iv.rtt_s / o.rtt_s)
            .sum();
        assert!(
            (written - iv.net()).abs() <= 0.01 * (pos + neg),
            "written {written:.0} vs handed out {:.0}: {iv:?}",
            iv.net()
        );
    }
}

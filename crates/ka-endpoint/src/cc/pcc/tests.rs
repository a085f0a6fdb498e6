//! The controller driven in virtual time: by hand for the state machine,
//! and through a one-queue drop-tail link for its dynamics.

use super::*;
use crate::cc::events::tests::{ack, loss, packet_acked, packet_lost, packet_sent, rto};
use crate::cc::window::tests::rtt;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const MSS: usize = 1448;
const WIRE: usize = MSS + 52;

fn pcc(seed: u64) -> Pcc {
    let mut p = Pcc::new(PccConfig {
        mss: MSS,
        initial_window: 10 * MSS,
        ..PccConfig::default()
    });
    p.set_seed(seed);
    p
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Rate in Mbit/s of a wire-bytes-per-second value.
fn mbps(rate: f64) -> f64 {
    rate * 8e-6
}

/// A FIFO bottleneck of `capacity` bytes/s with a drop-tail buffer of
/// `buffer` bytes and a fixed two-way propagation delay, carrying one PCC
/// sender that is always backlogged and paced at its `pacing_rate`. Each
/// packet's fate is reported one propagation delay plus its queueing and
/// serialisation after it was sent (a loss at the time its successor's
/// ACK would reveal it, i.e. as a SACK-based sender learns it).
struct Link {
    pcc: Pcc,
    est: RttEstimator,
    t0: Instant,
    now: Instant,
    capacity: f64,
    buffer: f64,
    prop: Duration,
    /// When the link finishes sending what it holds.
    busy_until: Instant,
    next_send: Instant,
    /// (due, sent, rtt or None = lost)
    feedback: BinaryHeap<Reverse<(Instant, Instant, Option<Duration>)>>,
    sent: u64,
    lost: u64,
    /// Bytes delivered per 100 ms bin.
    delivered: Vec<f64>,
}

impl Link {
    fn new(mbit: f64, prop: Duration, buffer_pkts: usize, seed: u64) -> Link {
        let t0 = Instant::now();
        let mut est = rtt(prop.as_millis() as u64);
        est.on_sample(prop);
        Link {
            pcc: pcc(seed),
            est,
            t0,
            now: t0,
            capacity: mbit * 1e6 / 8.0,
            buffer: (buffer_pkts * WIRE) as f64,
            prop,
            busy_until: t0,
            next_send: t0,
            feedback: BinaryHeap::new(),
            sent: 0,
            lost: 0,
            delivered: Vec::new(),
        }
    }

    fn send(&mut self) {
        let now = self.now;
        self.pcc
            .on_packet_sent(packet_sent(now, MSS, WIRE, &self.est));
        self.sent += 1;
        let backlog = self.busy_until.saturating_duration_since(now).as_secs_f64() * self.capacity;
        let serialise = Duration::from_secs_f64(WIRE as f64 / self.capacity);
        if backlog + WIRE as f64 > self.buffer {
            self.lost += 1;
            // revealed when the packets behind it are acknowledged
            let due = self.busy_until.max(now) + serialise + self.prop;
            self.feedback.push(Reverse((due, now, None)));
        } else {
            self.busy_until = self.busy_until.max(now) + serialise;
            let due = self.busy_until + self.prop;
            self.feedback.push(Reverse((due, now, Some(due - now))));
            let bin = (self.busy_until - self.t0).as_millis() as usize / 100;
            if self.delivered.len() <= bin {
                self.delivered.resize(bin + 1, 0.0);
            }
            self.delivered[bin] += WIRE as f64;
        }
        let rate = self.pcc.pacing_rate(&self.est).expect("paced after a send");
        self.next_send = now + Duration::from_secs_f64(WIRE as f64 / rate);
    }

    /// Runs until `t` (from the start).
    fn run_until(&mut self, t: Duration) {
        let end = self.t0 + t;
        loop {
            let fb = self.feedback.peek().map(|Reverse((due, _, _))| *due);
            let next = match fb {
                Some(d) if d <= self.next_send => d,
                _ => self.next_send,
            };
            if next > end {
                self.now = end;
                return;
            }
            self.now = next;
            if fb == Some(next) {
                let Some(Reverse((_, sent, fate))) = self.feedback.pop() else {
                    unreachable!()
                };
                match fate {
                    Some(r) => {
                        self.est.on_sample(r);
                        self.pcc
                            .on_packet_acked(packet_acked(next, sent, MSS, Some(r)));
                        self.pcc.on_ack(ack(next, sent, MSS, &self.est));
                    }
                    None => self.pcc.on_packet_lost(packet_lost(next, sent, MSS)),
                }
            } else {
                self.send();
            }
        }
    }

    /// Mean delivered rate over `[from, to)` seconds, as a share of capacity.
    fn utilisation(&self, from: f64, to: f64) -> f64 {
        let (a, b) = ((from * 10.0) as usize, (to * 10.0) as usize);
        let sum: f64 = (a..b)
            .map(|i| self.delivered.get(i).copied().unwrap_or(0.0))
            .sum();
        sum / ((to - from) * self.capacity)
    }
}

#[test]
fn paced_from_the_first_packet_and_window_never_limits() {
    let t0 = Instant::now();
    let r = rtt(40);
    let mut p = pcc(1);
    assert!(p.rate_based());
    assert_eq!(p.pacing_rate(&r), None, "no rate before the first packet");
    assert_eq!(p.window(), 10 * MSS);
    p.on_packet_sent(packet_sent(t0, MSS, WIRE, &r));
    let first = p.pacing_rate(&r).unwrap();
    assert!((first - (10 * MSS) as f64 / 0.040).abs() < 1.0, "{first}");
    assert_eq!(p.phase(), PccPhase::Starting);
    assert!(p.in_slow_start());
    assert_eq!(p.ssthresh(), usize::MAX);
    // window ≥ 2 · rate · srtt
    assert!(p.window() as f64 >= 2.0 * first * 0.040 - 1.0);
    // fast-retransmit episodes leave the rate alone
    p.on_congestion_event(loss(t0, t0, 10 * MSS));
    assert_eq!(p.pacing_rate(&r), Some(first));
}

#[test]
fn starting_phase_doubles_only_after_a_better_result() {
    let r = rtt(40);
    let t0 = Instant::now();
    let mut p = pcc(1);
    let mut now = t0;
    // MI 1 (one srtt, at least 10 packets): 12 packets over 40 ms
    let first_sent: Vec<Instant> = (0..12)
        .map(|i| {
            let t = t0 + ms(i * 4);
            p.on_packet_sent(packet_sent(t, MSS, WIRE, &r));
            t
        })
        .collect();
    let r1 = p.pacing_rate(&r).unwrap();
    // the next MI holds the rate: MI 1's result is not in yet
    now += ms(48);
    p.on_packet_sent(packet_sent(now, MSS, WIRE, &r));
    assert_eq!(p.pacing_rate(&r), Some(r1));
    // MI 1 comes back clean: u(r1) > 0, so the following MI doubles
    for s in &first_sent {
        p.on_packet_acked(packet_acked(*s + ms(40), *s, MSS, Some(ms(40))));
    }
    assert_eq!(p.phase(), PccPhase::Starting);
    now += ms(48);
    p.on_packet_sent(packet_sent(now, MSS, WIRE, &r));
    assert_eq!(p.pacing_rate(&r), Some(2.0 * r1));
}

#[test]
fn starting_phase_ends_at_the_rate_the_link_served() {
    // 20 Mbit/s, 40 ms, 100-packet buffer: the doubling that overshoots
    // builds a queue at dRTT/dT = (x − C)/C, so the phase ends near
    // C·(1 − ε), not at the previous rate (between C/2 and C).
    let mut link = Link::new(20.0, ms(40), 100, 3);
    let mut t = 0.0;
    while link.pcc.phase() == PccPhase::Starting && t < 3.0 {
        t += 0.01;
        link.run_until(Duration::from_secs_f64(t));
    }
    assert_eq!(
        link.pcc.phase(),
        PccPhase::Probing,
        "still starting at {t} s"
    );
    let base = mbps(link.pcc.base_rate().unwrap());
    // wire rate; C = 20 Mbit/s; ε = 5 %
    assert!((17.0..=20.0).contains(&base), "left at {base} Mbit/s");
    assert!(t < 1.0, "took {t} s");
}

#[test]
fn lone_flow_converges_to_capacity_with_little_loss_or_queue() {
    for (mbit, prop, buffer) in [(20.0, 40, 100), (50.0, 20, 80), (5.0, 100, 40)] {
        let mut link = Link::new(mbit, ms(prop), buffer, 7);
        link.run_until(Duration::from_secs(15));
        for s in 5..15 {
            let u = link.utilisation(f64::from(s), f64::from(s + 1));
            assert!(u >= 0.9, "{mbit} Mbit/s {prop} ms: {u} in second {s}");
        }
        let loss = link.lost as f64 / link.sent as f64;
        assert!(loss < 0.05, "{mbit} Mbit/s {prop} ms: loss {loss}");
        assert!(link.pcc.decisions() > 10);
    }
}

#[test]
fn trial_order_and_lengths_follow_the_seed() {
    // the base-rate trajectory of a lone flow depends on the trial order
    // and the MI lengths, hence on the seed, and only on the seed
    let trajectory = |seed| {
        let mut link = Link::new(20.0, ms(40), 100, seed);
        (1..=40)
            .map(|i| {
                link.run_until(ms(100 * i));
                link.pcc.base_rate().map(|r| r.to_bits())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(trajectory(11), trajectory(11));
    assert_ne!(trajectory(11), trajectory(12));
}

/// Sends paced packets from `*now` until `rounds` more trial rounds have
/// ended, acknowledging each packet `40 ms + g·(t − MI start)` after it
/// was sent, `g = gradient(role, rate in Mbit/s)` of the MI it was sent in.
fn drive(p: &mut Pcc, now: &mut Instant, rounds: u64, gradient: impl Fn(Role, f64) -> f64) {
    let r = rtt(40);
    let target = p.decisions() + p.inconclusive_rounds() + rounds;
    let mut acks: BinaryHeap<Reverse<(Instant, Instant, Duration)>> = BinaryHeap::new();
    let mut next_send = *now;
    while p.decisions() + p.inconclusive_rounds() < target {
        let ack_due = acks.peek().map(|Reverse((d, _, _))| *d);
        match ack_due {
            Some(d) if d <= next_send => {
                let Some(Reverse((d, sent, rtt_sample))) = acks.pop() else {
                    unreachable!()
                };
                *now = d;
                p.on_packet_acked(packet_acked(d, sent, MSS, Some(rtt_sample)));
                p.on_ack(ack(d, sent, MSS, &r));
            }
            _ => {
                *now = next_send;
                p.on_packet_sent(packet_sent(next_send, MSS, WIRE, &r));
                let mi = p.mis.back().expect("an open MI");
                let g = gradient(mi.role, mbps(mi.rate));
                let queued = Duration::from_secs_f64(g * (next_send - mi.start).as_secs_f64());
                let sample = ms(40) + queued;
                acks.push(Reverse((next_send + sample, next_send, sample)));
                let rate = p.pacing_rate(&r).unwrap();
                next_send += Duration::from_secs_f64(WIRE as f64 / rate);
            }
        }
        assert!(*now < Instant::now() + Duration::from_secs(3600), "runaway");
    }
}

fn probing(seed: u64) -> (Pcc, Instant) {
    let r = rtt(40);
    let t0 = Instant::now();
    let mut p = pcc(seed);
    p.on_packet_sent(packet_sent(t0, MSS, WIRE, &r));
    // hand over a base rate of 2 MB/s (16 Mbit/s) in the probing phase
    p.set_window(t0, 80_000, 80_000);
    assert_eq!(p.phase(), PccPhase::Probing);
    (p, t0 + ms(1))
}

#[test]
fn conclusive_rounds_step_by_the_gradient_and_the_boundary() {
    let (mut p, mut now) = probing(5);
    let r0 = mbps(p.base_rate().unwrap());
    assert!((r0 - 16.0).abs() < 1e-6);
    // no congestion at either rate: γ = 0.9·x^(−0.1) (a secant over ±5 %),
    // step m(1)·θ₀·γ, inside the boundary ω₀·r = 0.8
    drive(&mut p, &mut now, 1, |_, _| 0.0);
    let r1 = mbps(p.base_rate().unwrap());
    let gamma = 0.9 * 16f64.powf(-0.1);
    assert!((r1 - r0 - gamma).abs() < 0.01, "{r0} → {r1}");
    // again: the amplifier doubles the step (m(2) = 2), which the
    // boundary ω₀·r clips
    assert!(2.0 * 0.9 * r1.powf(-0.1) > 0.05 * r1);
    drive(&mut p, &mut now, 1, |_, _| 0.0);
    let r2 = mbps(p.base_rate().unwrap());
    assert!((r2 - 1.05 * r1).abs() < 1e-6, "{r1} → {r2}");
    assert_eq!(p.decisions(), 2);
    // the higher trials build a queue: the RTT term dominates and the
    // step down is the boundary's, reset to ω₀ = 5 % by the turn
    drive(&mut p, &mut now, 1, |_, x| if x > r2 { 0.1 } else { 0.0 });
    let r3 = mbps(p.base_rate().unwrap());
    assert!((r3 - 0.95 * r2).abs() < 1e-6, "{r2} → {r3}");
}

#[test]
fn disagreeing_pairs_leave_the_rate_alone() {
    // The first trial of the round sees a queue, whatever its rate (as if
    // another flow's trial were under way). If it is the higher trial of
    // its pair, that pair says "down" and the clean second pair says
    // "up": inconclusive. If it is the lower one, both say "up".
    let (mut up, mut stay) = (0, 0);
    for seed in 0..12 {
        let (mut p, mut now) = probing(seed);
        let r0 = p.base_rate().unwrap();
        drive(&mut p, &mut now, 1, |role, _| {
            if role == Role::Probe(0) { 0.2 } else { 0.0 }
        });
        if p.inconclusive_rounds() == 1 {
            stay += 1;
            assert_eq!(p.base_rate(), Some(r0));
            assert_eq!(p.decisions(), 0);
        } else {
            up += 1;
            assert!(p.base_rate().unwrap() > r0);
        }
    }
    assert!(up > 0 && stay > 0, "up {up}, stay {stay}");
}

#[test]
fn rto_restarts_at_the_delivered_rate_and_halves_when_blind() {
    let (mut p, mut now) = probing(2);
    let r = rtt(40);
    // one clean round: the last evaluated MI delivered its full rate
    drive(&mut p, &mut now, 1, |_, _| 0.0);
    let base = p.base_rate().unwrap();
    p.on_congestion_event(rto(now, now, 0));
    let after_one = p.base_rate().unwrap();
    assert!(
        after_one <= base && after_one > 0.8 * base,
        "{base} → {after_one}"
    );
    // a second RTO with no MI result in between: halve
    p.on_packet_sent(packet_sent(now, MSS, WIRE, &r));
    p.on_congestion_event(rto(now + ms(1000), now, 0));
    let after_two = p.base_rate().unwrap();
    assert!(
        (after_two - after_one / 2.0).abs() < 1.0,
        "{after_one} → {after_two}"
    );
    // never below one packet per srtt
    for _ in 0..40 {
        p.on_congestion_event(rto(now + ms(2000), now, 0));
    }
    assert!((p.base_rate().unwrap() - WIRE as f64 / 0.040).abs() < 1.0);
}

#[test]
fn late_and_foreign_feedback_is_harmless() {
    let (mut p, mut now) = probing(4);
    let r = rtt(40);
    // ACKs and losses of packets sent before any MI, or twice, or never
    // sent, do not panic or move the rate
    let before = now - ms(500);
    let base = p.base_rate();
    p.on_packet_acked(packet_acked(now, before, MSS, Some(ms(40))));
    p.on_packet_lost(packet_lost(now, before, MSS));
    p.on_packet_acked(packet_acked(now, before, MSS, None));
    assert_eq!(p.base_rate(), base);
    // a blackout: MIs are given up after srtt + RTO and count as lost
    for i in 0..200u32 {
        p.on_packet_sent(packet_sent(now + ms(2) * i, MSS, WIRE, &r));
    }
    now += ms(3000);
    p.on_ack(ack(now, now, 0, &r));
    assert!(p.mis.len() <= 2, "{} MIs pending", p.mis.len());
    assert!(p.mis.len() <= MAX_PENDING_MIS);
}

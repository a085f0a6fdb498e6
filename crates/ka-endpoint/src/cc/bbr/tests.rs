//! BBR's state machine driven in virtual time through a one-queue link:
//! a sender that obeys the window and the pacing rate, a bottleneck that
//! serialises wire bytes at a fixed rate, a fixed propagation delay and an
//! ACK per segment.

use super::sampler::Sampler;
use super::*;
use crate::cc::events::tests::{ack, loss, packet_acked, packet_sent};
use std::collections::VecDeque;

const MSS: usize = 1448;
const WIRE: usize = MSS + 52;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn bbr() -> Bbr {
    Bbr::new(BbrConfig {
        mss: MSS,
        initial_window: 10 * MSS,
    })
}

fn estimator() -> RttEstimator {
    RttEstimator::new(
        Duration::from_secs(1),
        Duration::from_millis(200),
        Duration::from_secs(60),
        Duration::from_millis(1),
    )
}

/// One snapshot per delivered segment.
#[derive(Debug, Clone, Copy)]
struct Snap {
    at: Duration,
    state: BbrState,
    pacing_gain: f64,
    cwnd: usize,
    inflight: u64,
    btlbw: f64,
    bdp: Option<usize>,
    /// `inflight_target(1.0)`: one BDP plus the quantization budget.
    target1: usize,
    round: u64,
    /// Bytes queued at the bottleneck (wire bytes).
    queue: f64,
}

/// A sender, a bottleneck of `rate` wire bytes/s and `prop` round-trip
/// propagation delay; `extra_rtt(t)` adds delay to the ACK path (to model
/// a path whose RTT moves).
struct Link {
    t0: Instant,
    now: Instant,
    rate: f64,
    prop: Duration,
    busy_until: Instant,
    next_send: Instant,
    /// (ack arrival, sent, queue at departure) in arrival order.
    acks: VecDeque<(Instant, Instant)>,
    rtt: RttEstimator,
    cc: Bbr,
    snaps: Vec<Snap>,
}

impl Link {
    fn new(cc: Bbr, mbps: f64, prop: Duration) -> Self {
        let t0 = Instant::now();
        Link {
            t0,
            now: t0,
            rate: mbps * 1e6 / 8.0,
            prop,
            busy_until: t0,
            next_send: t0,
            acks: VecDeque::new(),
            rtt: estimator(),
            cc,
            snaps: Vec::new(),
        }
    }

    fn queue_bytes(&self) -> f64 {
        self.busy_until
            .saturating_duration_since(self.now)
            .as_secs_f64()
            * self.rate
    }

    /// Runs until `until` (from the start).
    fn run(&mut self, until: Duration) {
        let end = self.t0 + until;
        while self.now < end {
            let can_send = self.cc.inflight() as usize + MSS <= self.cc.window();
            let send_at = can_send.then_some(self.next_send.max(self.now));
            let ack_at = self.acks.front().map(|&(at, _)| at);
            let next = match (send_at, ack_at) {
                (Some(s), Some(a)) => s.min(a),
                (Some(s), None) => s,
                (None, Some(a)) => a,
                (None, None) => break,
            };
            self.now = next;
            if ack_at == Some(next) {
                let Some((_, sent)) = self.acks.pop_front() else {
                    break;
                };
                let sample = self.now - sent;
                self.rtt.on_sample(sample);
                self.cc
                    .on_packet_acked(packet_acked(self.now, sent, MSS, Some(sample)));
                self.cc.on_ack(ack(self.now, sent, MSS, &self.rtt));
                self.snaps.push(Snap {
                    at: self.now - self.t0,
                    state: self.cc.state(),
                    pacing_gain: self.cc.pacing_gain(),
                    cwnd: self.cc.window(),
                    inflight: self.cc.inflight(),
                    btlbw: self.cc.btlbw(),
                    bdp: self.cc.bdp(),
                    target1: self.cc.inflight_target(1.0),
                    round: self.cc.round_count(),
                    queue: self.queue_bytes(),
                });
            } else {
                self.cc
                    .on_packet_sent(packet_sent(self.now, MSS, WIRE, &self.rtt));
                let depart = self.busy_until.max(self.now)
                    + Duration::from_secs_f64(WIRE as f64 / self.rate);
                self.busy_until = depart;
                self.acks.push_back((depart + self.prop, self.now));
                let gap = self
                    .cc
                    .pacing_rate(&self.rtt)
                    .filter(|r| *r > 0.0)
                    .map_or(Duration::ZERO, |r| Duration::from_secs_f64(WIRE as f64 / r));
                self.next_send = self.now + gap;
            }
        }
    }

    /// The link's rate in sequence bytes per second.
    fn goodput_rate(&self) -> f64 {
        self.rate * MSS as f64 / WIRE as f64
    }
}

/// 10 Mbit/s, 40 ms: BDP ≈ 48 kB ≈ 33 segments.
fn link() -> Link {
    Link::new(bbr(), 10.0, ms(40))
}

#[test]
fn starts_in_startup_with_high_gain_and_reports_its_name() {
    let b = bbr();
    assert_eq!(b.state(), BbrState::Startup);
    assert!((b.pacing_gain() - 2.885).abs() < 1e-3);
    assert_eq!(b.window(), 10 * MSS);
    assert!(b.rate_based());
    assert_eq!(b.name(), "bbr");
    assert_eq!(b.ssthresh(), usize::MAX);
}

#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let mut l = link();
    l.run(Duration::from_secs(2));
    let exit = l
        .snaps
        .iter()
        .position(|s| s.state != BbrState::Startup)
        .expect("startup never ended");
    let at_exit = l.snaps[exit];
    // The estimate is the link's rate when Startup ends...
    let rel = at_exit.btlbw / l.goodput_rate();
    assert!((0.9..=1.05).contains(&rel), "btlbw/link {rel}");
    // ... and it stopped growing by 25 % three rounds before.
    let plateau_round = l
        .snaps
        .iter()
        .find(|s| s.btlbw >= at_exit.btlbw / FULL_BW_THRESHOLD)
        .map(|s| s.round)
        .expect("no plateau");
    let rounds = at_exit.round - plateau_round;
    assert!(
        (FULL_BW_ROUNDS as u64..=FULL_BW_ROUNDS as u64 + 1).contains(&rounds),
        "startup lasted {rounds} rounds past the plateau"
    );
    // Before the plateau the estimate grew by at least 25 % per round
    // (the initial window's burst makes the first step the smallest).
    let early: Vec<f64> = (1..=4)
        .filter_map(|r| l.snaps.iter().rev().find(|s| s.round == r).map(|s| s.btlbw))
        .collect();
    assert!(
        early.windows(2).all(|w| w[1] >= FULL_BW_THRESHOLD * w[0]),
        "{early:?}"
    );
    assert!(plateau_round >= 4, "plateau at round {plateau_round}");
}

#[test]
fn drain_ends_once_the_flight_is_at_most_one_bdp() {
    let mut l = link();
    l.run(Duration::from_secs(2));
    let drain = l
        .snaps
        .iter()
        .position(|s| s.state == BbrState::Drain)
        .expect("no drain");
    assert!((l.snaps[drain].pacing_gain - 0.3466).abs() < 1e-3);
    let probe = l
        .snaps
        .iter()
        .position(|s| s.state == BbrState::ProbeBw)
        .expect("no probe_bw");
    assert!(probe > drain);
    // Drain's first snapshot is over one BDP plus the quantization budget
    // (the queue Startup built)...
    let bdp = |s: &Snap| {
        assert!(s.target1 >= s.bdp.expect("model") + 6 * MSS, "{s:?}");
        s.target1 as u64
    };
    assert!(l.snaps[drain].inflight > bdp(&l.snaps[drain]));
    // ... and it ends on the ACK that brings the flight to one BDP.
    let last = l.snaps[probe];
    assert!(last.inflight <= bdp(&last), "{last:?}");
    assert!(l.snaps[probe - 1].inflight > bdp(&l.snaps[probe - 1]));
}

#[test]
fn probe_bw_cycles_its_pacing_gains() {
    let mut l = link();
    l.run(Duration::from_secs(6));
    let gains: Vec<f64> = l
        .snaps
        .iter()
        .filter(|s| s.state == BbrState::ProbeBw && s.at > Duration::from_secs(1))
        .map(|s| s.pacing_gain)
        .fold(Vec::new(), |mut v, g| {
            if v.last() != Some(&g) {
                v.push(g);
            }
            v
        });
    // Every up-probe is followed by a drain phase, then cruising.
    let ups = gains.iter().filter(|&&g| g == 1.25).count();
    assert!(ups >= 4, "{gains:?}");
    for w in gains.windows(3) {
        if w[0] == 1.25 {
            assert_eq!((w[1], w[2]), (0.75, 1.0), "{gains:?}");
        }
    }
    // One cycle is 8 phases of about one RTprop: 6 s of 40-50 ms rounds
    // hold at least 10 cycles.
    assert!(ups >= 10, "{ups} up-probes in 5 s");
}

#[test]
fn steady_state_keeps_the_link_busy_with_a_small_queue() {
    let mut l = link();
    l.run(Duration::from_secs(8));
    let steady: Vec<&Snap> = l
        .snaps
        .iter()
        .filter(|s| s.at > Duration::from_secs(2))
        .collect();
    let delivered = steady.len() as f64 * MSS as f64;
    let span = (steady.last().expect("acks").at - steady[0].at).as_secs_f64();
    let util = delivered / span / l.goodput_rate();
    assert!(util > 0.95, "utilisation {util}");
    let mean_queue = steady.iter().map(|s| s.queue).sum::<f64>() / steady.len() as f64;
    let bdp = l.rate * 0.040;
    assert!(
        mean_queue < 0.5 * bdp,
        "mean queue {mean_queue} vs BDP {bdp}"
    );
}

#[test]
fn probe_rtt_after_10_s_without_a_lower_rtt_holds_4_segments_for_200_ms() {
    let mut l = link();
    l.run(Duration::from_secs(25));
    let entries: Vec<usize> = l
        .snaps
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0].state != BbrState::ProbeRtt && w[1].state == BbrState::ProbeRtt)
        .map(|(i, _)| i + 1)
        .collect();
    assert!(!entries.is_empty(), "no ProbeRTT in 25 s");
    // The path's RTT never goes below what the first round saw, so the
    // first ProbeRTT comes 10 s after the last new minimum, which the
    // first seconds set.
    let first = l.snaps[entries[0]].at;
    assert!(
        first >= Duration::from_secs(10) && first < Duration::from_secs(12),
        "first ProbeRTT at {first:?}"
    );
    for &i in &entries {
        let start = l.snaps[i].at;
        let end = l.snaps[i..]
            .iter()
            .find(|s| s.state != BbrState::ProbeRtt)
            .map(|s| s.at)
            .expect("ProbeRTT never ended");
        assert!(end - start >= PROBE_RTT_DURATION, "{:?}", end - start);
        assert!(end - start < ms(400), "{:?}", end - start);
        for s in l.snaps[i..]
            .iter()
            .take_while(|s| s.state == BbrState::ProbeRtt)
        {
            assert_eq!(s.cwnd, MIN_CWND_SEGMENTS * MSS);
        }
    }
    // Back to ProbeBW afterwards, and the next one is ~10 s later.
    assert_eq!(l.snaps.last().map(|s| s.state), Some(BbrState::ProbeBw));
    if let Some(&second) = entries.get(1) {
        let gap = l.snaps[second].at - first;
        assert!(gap >= Duration::from_secs(10), "{gap:?}");
    }
}

#[test]
fn a_lower_rtt_postpones_probe_rtt() {
    // The same link, but the path's RTT drops by 20 ms at 8 s: a new
    // minimum, so no ProbeRTT before 18 s. (ProbeBW keeps the quantization
    // budget queued, about 10 ms at this rate: a drop of less than that
    // would not show.)
    let mut l = link();
    l.run(Duration::from_secs(8));
    l.prop = ms(20);
    l.run(Duration::from_secs(17));
    assert!(
        l.snaps.iter().all(|s| s.state != BbrState::ProbeRtt),
        "ProbeRTT though the RTT fell at 8 s"
    );
    assert_eq!(l.cc.rtprop().map(|r| r < ms(40)), Some(true));
}

#[test]
fn loss_conserves_packets_then_restores_the_window() {
    let mut l = link();
    l.run(Duration::from_secs(3));
    let before = l.cc.window();
    let now = l.now;
    let flight = l.cc.inflight() as usize;
    l.cc.on_congestion_event(loss(now, now - ms(20), flight));
    assert!(l.cc.window() <= flight.max(MSS));
    // The model survives the loss.
    assert_eq!(l.cc.state(), BbrState::ProbeBw);
    assert!(l.cc.btlbw() > 0.9 * l.goodput_rate());
    // A later event for a segment sent before the episode is the same
    // episode.
    let w = l.cc.window();
    l.cc.on_congestion_event(loss(now, now - ms(10), flight));
    assert_eq!(l.cc.window(), w);
    l.run(Duration::from_secs(4));
    assert!(l.cc.window() >= before.min(l.cc.inflight_target(2.0)));
}

#[test]
fn app_limited_samples_do_not_lower_the_estimate() {
    let mut b = bbr();
    let t0 = Instant::now();
    let mut rtt = estimator();
    rtt.on_sample(ms(40));
    // Fill the filter with a high rate: 10 segments every 10 ms.
    for i in 0..40u32 {
        let sent = t0 + ms(10) * i;
        for _ in 0..10 {
            b.on_packet_sent(packet_sent(sent, MSS, WIRE, &rtt));
        }
        let at = sent + ms(40);
        for _ in 0..10 {
            b.on_packet_acked(packet_acked(at, sent, MSS, Some(ms(40))));
        }
    }
    let high = b.btlbw();
    assert!(high > 0.0);
    // Then the application sends one segment per 40 ms.
    let mut now = t0 + ms(1000);
    let app_limited = Ack {
        app_limited: true,
        ..ack(now, now, MSS, &rtt)
    };
    b.on_ack(app_limited);
    for _ in 0..50 {
        b.on_packet_sent(packet_sent(now, MSS, WIRE, &rtt));
        now += ms(40);
        b.on_packet_acked(packet_acked(now, now - ms(40), MSS, Some(ms(40))));
        b.on_ack(Ack {
            app_limited: true,
            ..ack(now, now - ms(40), MSS, &rtt)
        });
    }
    // 50 round trips later, far past the 10-round window: still the
    // high rate, because the low samples were app-limited.
    assert_eq!(b.btlbw(), high);
}

#[test]
fn rate_sample_is_delivered_bytes_over_the_longer_of_send_and_ack_intervals() {
    let mut s = Sampler::default();
    let t0 = Instant::now();
    // 10 segments 1 ms apart, ACKed 2 ms apart from 40 ms on: the ACK
    // interval (58 ms) is the longer one.
    for k in 0..10u32 {
        s.on_sent(t0 + ms(1) * k, MSS);
    }
    assert_eq!(s.inflight(), 10 * MSS as u64);
    let mut last = None;
    for k in 0..10u32 {
        last = s.on_acked(t0 + ms(40) + ms(2) * k, t0 + ms(1) * k, Some(ms(40)), None);
    }
    let rs = last.expect("tracked");
    let want = 10.0 * MSS as f64 / 0.058;
    let got = rs.delivery_rate.expect("long enough");
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    assert_eq!(
        (rs.prior_delivered, s.delivered(), s.inflight()),
        (0, 10 * MSS as u64, 0)
    );
    // An interval shorter than the minimum RTT gives no rate; an unknown
    // transmission gives no sample; a loss leaves the flight.
    s.on_sent(t0 + ms(100), MSS);
    s.on_sent(t0 + ms(100), MSS);
    let short = s.on_acked(t0 + ms(101), t0 + ms(100), None, Some(ms(40)));
    assert_eq!(short.map(|r| r.delivery_rate), Some(None));
    assert!(s.on_acked(t0 + ms(101), t0 + ms(99), None, None).is_none());
    s.on_lost(t0 + ms(100));
    assert_eq!(s.inflight(), 0);
}

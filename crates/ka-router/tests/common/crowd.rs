//! What the flash-crowd port harnesses (`crowd_port.rs`, `echo_port.rs`)
//! share: the link, the senders' packets, the virtual-time loop
//! ([`run`]), the convergence check and the tests both run
//! ([`crowd_tests!`]).

use std::time::{Duration, Instant};

use ka_codec::rcp_option::RcpOption;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{ControllerKind, Port, PortConfig, Signalling};

/// The bottleneck: 150 Mbit/s.
pub const C_BPS: u64 = 150_000_000;
/// The same in B/ms.
pub const C: f64 = C_BPS as f64 / 8000.0;
/// One millisecond, ns.
pub const MS: u64 = 1_000_000;
/// The RTT, ns.
pub const D: u64 = 100 * MS;
/// The harness's time step, ns.
pub const STEP: u64 = 20_000;
/// When the crowd starts (after an idle port's R has climbed), ns.
pub const START: u64 = 4_000 * MS;
/// Packet size, bytes.
pub const PKT: usize = 1500;

/// Which explicit-rate carrier the senders use.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Carrier {
    Ka,
    Native,
}

/// A TCP header (`opts` a multiple of 4 bytes) and `payload` zero bytes.
pub fn tcp(sport: u16, dport: u16, flags: u8, opts: &[u8], payload: usize) -> Vec<u8> {
    let hl = 20 + opts.len();
    let mut t = vec![0u8; hl + payload];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[12] = ((hl / 4) as u8) << 4;
    t[13] = flags;
    t[20..hl].copy_from_slice(opts);
    t
}

/// Sender `sport`'s SYN or full data packet to port 5001 (native RCP: with
/// the RCP option asking for as much as possible).
pub fn data(carrier: Carrier, sport: u16, syn: bool) -> Vec<u8> {
    let opts = match carrier {
        Carrier::Native => RcpOption {
            rate_bytes_per_sec: u32::MAX,
            rtt_ms: 100,
        }
        .to_bytes()
        .to_vec(),
        Carrier::Ka => Vec::new(),
    };
    let seg = if syn {
        tcp(sport, 5001, 0x02, &[], 0)
    } else {
        tcp(sport, 5001, 0x10, &[], PKT - 20 - opts.len() - 20)
    };
    super::ipv4(&seg, &opts, false, false, 0, sport, 64, 6)
}

/// The port under test: C, the carrier's signalling, `controller`.
pub fn port(carrier: Carrier, controller: ControllerKind, t0: Instant) -> Port {
    let mut cfg = PortConfig::new(C_BPS);
    cfg.signalling = match carrier {
        Carrier::Ka => Signalling::Ka { controller },
        Carrier::Native => Signalling::NativeRcp { controller },
    };
    Port::new(cfg, t0)
}

/// When flow `i` of `n` starts: the starts spread evenly over 10 ms from
/// `START`.
pub fn start(i: usize, n: usize) -> u64 {
    let spread = if n > 1 { 10 * MS / (n as u64 - 1) } else { 0 };
    START + i as u64 * spread
}

/// The harness's clock after `t`: 1 ms steps while the port idles, `STEP`
/// from 10 ms before the crowd on.
pub fn tick(t: u64) -> u64 {
    t + if t < START - 10 * MS { MS } else { STEP }
}

/// Sender `sport`'s data packets due by `t` into `port` at `rate` (B/ms):
/// one every `PKT / rate`, from `*next_send` (then the next one's time),
/// none timed more than a step back.
pub fn pace(
    port: &mut Port,
    t0: Instant,
    t: u64,
    carrier: Carrier,
    sport: u16,
    rate: f64,
    next_send: &mut u64,
) {
    while *next_send <= t {
        let at = t0 + Duration::from_nanos((*next_send).max(t - STEP));
        port.push(at, data(carrier, sport, false));
        *next_send += (PKT as f64 / rate * 1e6) as u64;
    }
}

/// A piece leaving the port that may carry a signal to its sender (not a
/// later fragment), and the sender's port.
pub fn leading_piece(piece: &[u8]) -> Option<(Ipv4Packet<&[u8]>, u16)> {
    let p = Ipv4Packet::new_checked(piece).ok()?;
    if p.frag_offset() != 0 {
        return None;
    }
    let sport = u16::from_be_bytes([*p.payload().first()?, *p.payload().get(1)?]);
    Some((p, sport))
}

/// One sender of the crowd.
pub struct Flow {
    /// When it sends its SYN, ns.
    pub start: u64,
    /// The rate (B/ms) it paces at, once it learned one.
    pub rate: Option<f64>,
    /// When its next data packet is due, ns.
    pub next_send: u64,
    pub syn_sent: bool,
    /// KA: whether its first data segment went out.
    pub first_sent: bool,
}

/// Flow `i`'s sender port.
pub fn sport(i: usize) -> u16 {
    40_000 + i as u16
}

/// The flow whose sender port is `sport`.
pub fn flow_of(sport: u16) -> usize {
    usize::from(sport - 40_000)
}

/// The port and its senders as [`run`] drives them.
pub struct Harness {
    pub carrier: Carrier,
    pub port: Port,
    pub t0: Instant,
    pub flows: Vec<Flow>,
    /// Per flow: (time, rate) of every rate it adopted.
    pub adopted: Vec<Vec<(u64, f64)>>,
    pub queue_max: usize,
}

impl Harness {
    /// Virtual time `ns` as an instant.
    pub fn at(&self, ns: u64) -> Instant {
        self.t0 + Duration::from_nanos(ns)
    }

    /// Flow `i` learns rate `r` at `t` and paces at it (from now on if it
    /// had none).
    pub fn adopt(&mut self, i: usize, t: u64, r: f64) {
        let f = &mut self.flows[i];
        if f.rate.is_none() {
            f.next_send = t;
        }
        f.rate = Some(r);
        self.adopted[i].push((t, r));
    }

    /// Flow `i`'s first data segment goes out at `t` (KA: after the
    /// handshake, before any rate).
    pub fn send_first(&mut self, i: usize, t: u64) {
        self.flows[i].first_sent = true;
        let p = data(self.carrier, sport(i), false);
        self.port.push(self.at(t), p);
    }
}

/// How a harness's signals travel back to the senders.
pub trait Feedback {
    /// At `t`, before the senders act: deliver what has reached them.
    fn deliver(&mut self, h: &mut Harness, t: u64);
    /// At `t`, flow `i` after its SYN went out (`syn`: just now), before
    /// it paces.
    fn on_flow(&mut self, h: &mut Harness, i: usize, t: u64, syn: bool);
    /// `piece` leaves the port at `t`.
    fn on_piece(&mut self, h: &mut Harness, t: u64, piece: &[u8]);
}

/// What a run measured.
pub struct Run {
    pub queue_max: usize,
    pub drops: u64,
    /// Echoes the port lowered on the reverse path.
    pub lowered: u64,
    /// Per flow: (time, rate) of every rate it adopted.
    pub adopted: Vec<Vec<(u64, f64)>>,
}

/// `n` senders start within 10 ms from `START` on a port running
/// `controller`, until `end`: each step the feedback is delivered, the
/// senders send their SYNs and pace, the port runs and transmits.
pub fn run(
    carrier: Carrier,
    controller: ControllerKind,
    n: usize,
    end: u64,
    feedback: &mut impl Feedback,
) -> Run {
    let t0 = Instant::now();
    let mut h = Harness {
        carrier,
        port: port(carrier, controller, t0),
        t0,
        flows: (0..n)
            .map(|i| Flow {
                start: start(i, n),
                rate: None,
                next_send: u64::MAX,
                syn_sent: false,
                first_sent: false,
            })
            .collect(),
        adopted: vec![Vec::new(); n],
        queue_max: 0,
    };
    let mut t = 0;
    while t < end {
        t = tick(t);
        feedback.deliver(&mut h, t);
        for i in 0..n {
            let syn = !h.flows[i].syn_sent && t >= h.flows[i].start;
            if syn {
                h.flows[i].syn_sent = true;
                h.port.push(h.at(t), data(carrier, sport(i), true));
            }
            feedback.on_flow(&mut h, i, t, syn);
            let f = &mut h.flows[i];
            if let Some(r) = f.rate {
                pace(&mut h.port, t0, t, carrier, sport(i), r, &mut f.next_send);
            }
        }
        h.port.handle_timeout(h.at(t));
        while let Some(piece) = h.port.poll_transmit(h.at(t)) {
            feedback.on_piece(&mut h, t, &piece);
        }
        h.queue_max = h.queue_max.max(h.port.queue_len());
    }
    let c = h.port.snapshot().counters;
    Run {
        queue_max: h.queue_max,
        drops: c.drops_queue,
        lowered: c.echoes_lowered,
        adopted: h.adopted,
    }
}

/// The tests every flash-crowd harness runs: convergence and the queue's
/// bound for both carriers (`check(carrier, n)`), and the 64-flow crowd
/// against RCP's overflow. `run(carrier, controller, n, end)` is the
/// harness, `controller` the one under test, `bound(carrier)` the queue
/// it keeps in the 64-flow crowd.
#[allow(unused_macros)] // only the crowd harnesses expand it
macro_rules! crowd_tests {
    (check: $check:expr, run: $run:expr, controller: $controller:expr, bound: $bound:expr $(,)?) => {
        #[test]
        fn ka_converges_and_stays_bounded() {
            for n in [1, 10, 64] {
                $check(Carrier::Ka, n);
            }
        }

        #[test]
        fn native_converges_and_stays_bounded() {
            for n in [1, 10, 64] {
                $check(Carrier::Native, n);
            }
        }

        #[test]
        fn a_crowd_of_64_keeps_the_queue_short_where_rcp_overflows() {
            let end = START + 10 * MS + 4 * D;
            for carrier in [Carrier::Ka, Carrier::Native] {
                let rcp = $run(carrier, ControllerKind::Rcp, 64, end);
                crowd::assert_rcp_overflows(carrier, rcp.queue_max, rcp.drops);
                let c = $run(carrier, $controller, 64, end);
                assert_eq!(c.drops, 0, "{carrier:?}");
                let bound = $bound(carrier);
                assert!(c.queue_max <= bound, "{carrier:?}: {}", c.queue_max);
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use crowd_tests;

/// The control: the paper's RCP in the same 64-flow crowd fills the
/// 1000-packet queue and drops, so a bound a controller keeps is not a
/// property of the harness.
pub fn assert_rcp_overflows(carrier: Carrier, queue_max: usize, drops: u64) {
    assert!(
        drops > 0 && queue_max == 1000,
        "{carrier:?}: RCP's queue {queue_max} drops {drops}"
    );
}

/// From `from` to `end`, every flow (its adopted `(time, rate)`s) paces on
/// average at C/N ± `tol`, and no rate it adopts is more than `step` of
/// C/N away.
pub fn converged(
    adopted: &[Vec<(u64, f64)>],
    n: usize,
    from: u64,
    end: u64,
    step: f64,
    tol: f64,
) -> Result<(), String> {
    let fair = C / n as f64;
    for (i, a) in adopted.iter().enumerate() {
        let Some(first) = a.iter().rev().find(|e| e.0 <= from) else {
            return Err(format!("flow {i}: no rate by 5 RTTs"));
        };
        let mut steps = vec![(from, first.1)];
        steps.extend(a.iter().filter(|e| e.0 > from).copied());
        let mut area = 0.0;
        for (k, &(t, v)) in steps.iter().enumerate() {
            if (v - fair).abs() > step * fair {
                return Err(format!("flow {i}: {v:.1} B/ms vs C/N {fair:.1}"));
            }
            let next = steps.get(k + 1).map_or(end, |e| e.0);
            area += v * (next - t) as f64;
        }
        let mean = area / (end - from) as f64;
        if (mean - fair).abs() > tol * fair {
            return Err(format!("flow {i}: mean {mean:.1} B/ms vs C/N {fair:.1}"));
        }
    }
    Ok(())
}

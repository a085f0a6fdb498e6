//! The `Crowd` controller through a real `Port`, in virtual time.
//!
//! N senders open TCP connections within 10 ms on an idle 150 Mbit/s port
//! (1000-packet queue, 100 ms RTT) and then behave like the endpoints: a
//! sender learns a rate one RTT after the packet that carried it left the
//! port (the rest of the path plus the echo), and paces 1500-byte packets
//! at the latest rate it learned. Native RCP: the SYN carries the RCP
//! option and the sender paces from its echo on. KA: the first data
//! segment goes out an RTT after the SYN (the handshake) and the sender
//! paces from the echo of its leading fragment on (the paper's one-segment
//! initial window). The port has run idle for 4 s first, so RCP's R sits
//! at its ceiling as it does at light load.
//!
//! Checked: the queue's peak and drops (the bound), and that every flow
//! paces at C/N ± 10 % from 5 RTTs after the last start (convergence), for
//! N ∈ {1, 10, 64} and both carriers; and that the paper's RCP does
//! overflow in the same 64-flow crowd (so the bound is not a property of
//! the harness).

mod common;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use common::crowd::{C_BPS, Carrier, D, MS, PKT, START, STEP, converged, data};
use ka_codec::rcp_option;
use ka_codec::scale::Scale;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{ControllerKind, CrowdConfig, Port, PortConfig, Signalling};

struct Flow {
    start: u64,
    /// Pacing rate (B/ms) and when it was learned.
    rate: Option<f64>,
    next_send: u64,
    syn_sent: bool,
    first_sent: bool,
}

struct Run {
    queue_max: usize,
    drops: u64,
    /// Per flow: (time, rate) of every rate it adopted.
    adopted: Vec<Vec<(u64, f64)>>,
}

/// The rate a piece leaving the port carries to its sender, and the
/// sender's port number.
fn signal(carrier: Carrier, piece: &[u8]) -> Option<(u16, f64)> {
    let p = Ipv4Packet::new_checked(piece).ok()?;
    if p.frag_offset() != 0 {
        return None;
    }
    let sport = u16::from_be_bytes([*p.payload().first()?, *p.payload().get(1)?]);
    match carrier {
        Carrier::Native => {
            let (_, o) = rcp_option::find_in(p.options()).ok()??;
            (o.rate_bytes_per_sec != u32::MAX)
                .then(|| (sport, f64::from(o.rate_bytes_per_sec) / 1000.0))
        }
        Carrier::Ka => p
            .more_frags()
            .then(|| (sport, Scale::PAPER.rate_of_len(p.payload().len()))),
    }
}

fn run(carrier: Carrier, controller: ControllerKind, n: usize, end: u64) -> Run {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(C_BPS);
    cfg.signalling = match carrier {
        Carrier::Ka => Signalling::Ka { controller },
        Carrier::Native => Signalling::NativeRcp { controller },
    };
    let mut port = Port::new(cfg, t0);
    let at = |ns: u64| t0 + Duration::from_nanos(ns);
    let spread = if n > 1 { 10 * MS / (n as u64 - 1) } else { 0 };
    let mut flows: Vec<Flow> = (0..n)
        .map(|i| Flow {
            start: START + i as u64 * spread,
            rate: None,
            next_send: u64::MAX,
            syn_sent: false,
            first_sent: false,
        })
        .collect();
    let mut echoes: VecDeque<(u64, usize, f64)> = VecDeque::new();
    let mut out = Run {
        queue_max: 0,
        drops: 0,
        adopted: vec![Vec::new(); n],
    };
    let mut t = 0;
    while t < end {
        t += if t < START - 10 * MS { MS } else { STEP };
        while echoes.front().is_some_and(|e| e.0 <= t) {
            let Some((_, i, r)) = echoes.pop_front() else {
                break;
            };
            let f = &mut flows[i];
            if f.rate.is_none() {
                f.next_send = t;
            }
            f.rate = Some(r);
            out.adopted[i].push((t, r));
        }
        for (i, f) in flows.iter_mut().enumerate() {
            let sport = 40_000 + i as u16;
            if !f.syn_sent && t >= f.start {
                f.syn_sent = true;
                port.push(at(t), data(carrier, sport, true));
            }
            if carrier == Carrier::Ka && !f.first_sent && t >= f.start + D {
                f.first_sent = true;
                port.push(at(t), data(carrier, sport, false));
            }
            if let Some(r) = f.rate {
                while f.next_send <= t {
                    port.push(at(f.next_send.max(t - STEP)), data(carrier, sport, false));
                    f.next_send += (PKT as f64 / r * 1e6) as u64;
                }
            }
        }
        port.handle_timeout(at(t));
        while let Some(piece) = port.poll_transmit(at(t)) {
            if let Some((sport, r)) = signal(carrier, &piece) {
                let i = usize::from(sport - 40_000);
                echoes.push_back((t + D, i, r));
            }
        }
        out.queue_max = out.queue_max.max(port.queue_len());
    }
    out.drops = port.snapshot().counters.drops_queue;
    out
}

fn crowd() -> ControllerKind {
    ControllerKind::Crowd(CrowdConfig::default())
}

fn check(carrier: Carrier, n: usize) {
    // A lone flow's rate dithers among the codes around C for many RTTs
    // (RCP's law, see `converged`): average over longer.
    let end = START + 10 * MS + if n == 1 { 25 * D } else { 8 * D };
    let r = run(carrier, crowd(), n, end);
    assert_eq!(r.drops, 0, "{carrier:?} N={n}");
    assert!(
        r.queue_max <= 300,
        "{carrier:?} N={n}: queue {}",
        r.queue_max
    );
    let last = START + 10 * MS;
    // A KA sender can only pace at code rates, 6.45 % apart, and RCP's
    // law dithers a lone flow between the codes around C: a rate may be
    // two codes (13 %) off C/N, the mean 10 %.
    converged(&r.adopted, n, last + 5 * D, end, 0.13, 0.1)
        .unwrap_or_else(|e| panic!("{carrier:?} N={n}: {e}"));
}

#[test]
fn ka_converges_and_stays_bounded() {
    for n in [1, 10, 64] {
        check(Carrier::Ka, n);
    }
}

#[test]
fn native_converges_and_stays_bounded() {
    for n in [1, 10, 64] {
        check(Carrier::Native, n);
    }
}

#[test]
fn a_crowd_of_64_keeps_the_queue_short_where_rcp_overflows() {
    let end = START + 10 * MS + 4 * D;
    for carrier in [Carrier::Ka, Carrier::Native] {
        let rcp = run(carrier, ControllerKind::Rcp, 64, end);
        assert!(
            rcp.drops > 0 && rcp.queue_max == 1000,
            "{carrier:?}: RCP's queue {} drops {}",
            rcp.queue_max,
            rcp.drops
        );
        let c = run(carrier, crowd(), 64, end);
        assert_eq!(c.drops, 0, "{carrier:?}");
        // KA: all 64 are announced by their SYNs before the first grant.
        // Native: the first SYN gets the link, the others floors.
        let bound = match carrier {
            Carrier::Ka => 20,
            Carrier::Native => 150,
        };
        assert!(c.queue_max <= bound, "{carrier:?}: {}", c.queue_max);
    }
}

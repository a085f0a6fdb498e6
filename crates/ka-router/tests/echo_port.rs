//! The `Echo` controller through a real `Port`, in virtual time, with the
//! ACKs coming back through the router.
//!
//! N senders open TCP connections within 10 ms on an idle 150 Mbit/s port
//! (1000-packet queue, 100 ms RTT, all of it between the router and the
//! receivers, as in the paper's dumbbell). Every packet that leaves the
//! port is acknowledged 100 ms later by an ACK that echoes its signal
//! (KA-Rate with the leading fragment's code, or RCP-Echo with the RCP
//! option's rate); the ACK passes `Port::on_reverse` on its way back and
//! the sender paces 1500-byte packets at whatever echo reaches it. KA: the
//! SYN-ACK carries no echo, the first data segment goes out when it
//! arrives (the paper's one-segment initial window); native RCP: the
//! SYN-ACK echoes the SYN's option. The port has run idle for 4 s first.
//!
//! Checked: the queue's peak and drops (the bound), that every flow paces
//! at C/N ± 10 % from 5 RTTs after the last start (convergence), for N ∈
//! {1, 10, 64} and both carriers; that the echoes were lowered on the way
//! back (the mechanism, not the forward stamps, did it); and that a
//! connection whose ACKs do not pass still gets a rate on its data.

mod common;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use common::crowd::{C_BPS, Carrier, D, MS, PKT, START, STEP, converged, data, tcp};
use ka_codec::options::{KaRate, RcpEcho};
use ka_codec::rcp_option;
use ka_codec::scale::{Code, Scale};
use ka_codec::wire::checksum;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{ControllerKind, EchoConfig, Port, PortConfig, Signalling};

struct Flow {
    start: u64,
    rate: Option<f64>,
    next_send: u64,
    syn_sent: bool,
    first_sent: bool,
    count: u8,
}

struct Run {
    queue_max: usize,
    drops: u64,
    lowered: u64,
    adopted: Vec<Vec<(u64, f64)>>,
}

/// What goes back: (when, flow, the signal to echo; `None` for a KA
/// SYN-ACK).
type Ack = (u64, usize, Option<Signal>);

#[derive(Clone, Copy, Debug)]
enum Signal {
    Code(u8),
    Rate(u32),
}

/// The receiver's ACK to `sport`, echoing `signal`, with valid checksums.
fn ack(sport: u16, syn: bool, signal: Option<Signal>, count: u8) -> Vec<u8> {
    let mut opt = Vec::new();
    match signal {
        Some(Signal::Code(c)) => {
            let mut b = [0u8; 6];
            let code = Code::from_wire(c).unwrap_or(Code::MAX);
            KaRate::new(code, count).emit(&mut b).unwrap();
            opt.extend_from_slice(&b);
            opt.extend_from_slice(&[1, 1]);
        }
        Some(Signal::Rate(r)) => {
            let mut b = [0u8; 8];
            RcpEcho {
                rate_bytes_per_sec: r,
            }
            .emit(&mut b)
            .unwrap();
            opt.extend_from_slice(&b);
        }
        None => {}
    }
    let flags = if syn { 0x12 } else { 0x10 };
    let mut seg = tcp(5001, sport, flags, &opt, 0);
    let pseudo = checksum::pseudo_v4([10, 0, 0, 2], [10, 0, 0, 1], 6, seg.len() as u32);
    let c = checksum::finish(checksum::sum(&seg, pseudo));
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    let mut p = common::ipv4(&seg, &[], false, false, 0, sport, 64, 6);
    p[12..16].copy_from_slice(&[10, 0, 0, 2]);
    p[16..20].copy_from_slice(&[10, 0, 0, 1]);
    Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
    p
}

/// The echo an ACK carries after the router, as a rate (B/ms), checking
/// its TCP checksum.
fn echoed(p: &[u8]) -> Option<f64> {
    let ip = Ipv4Packet::new_checked(p).ok()?;
    let seg = ip.payload();
    let pseudo = checksum::pseudo_v4([10, 0, 0, 2], [10, 0, 0, 1], 6, seg.len() as u32);
    assert_eq!(
        checksum::finish(checksum::sum(seg, pseudo)),
        0,
        "TCP checksum"
    );
    let opts = seg.get(20..usize::from(seg.get(12)? >> 4) * 4)?;
    match opts {
        [253, 6, 0x4B, 0x41, code, ..] => Some(Scale::PAPER.decode(Code::from_wire(*code)?)),
        [253, 8, 0x4B, 0x52, a, b, c, d, ..] => {
            Some(f64::from(u32::from_be_bytes([*a, *b, *c, *d])) / 1000.0)
        }
        _ => None,
    }
}

/// The signal a piece leaving the port carries, and its sender's port.
fn signal(carrier: Carrier, piece: &[u8]) -> Option<(u16, Signal)> {
    let p = Ipv4Packet::new_checked(piece).ok()?;
    if p.frag_offset() != 0 {
        return None;
    }
    let sport = u16::from_be_bytes([*p.payload().first()?, *p.payload().get(1)?]);
    match carrier {
        Carrier::Native => {
            let (_, o) = rcp_option::find_in(p.options()).ok()??;
            Some((sport, Signal::Rate(o.rate_bytes_per_sec)))
        }
        Carrier::Ka => p
            .more_frags()
            .then(|| (sport, Signal::Code((p.payload().len() / 8) as u8))),
    }
}

/// `reverse`: whether the ACKs pass the router.
fn run(carrier: Carrier, controller: ControllerKind, n: usize, end: u64, reverse: bool) -> Run {
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
            count: 0,
        })
        .collect();
    let mut acks: VecDeque<Ack> = VecDeque::new();
    let mut out = Run {
        queue_max: 0,
        drops: 0,
        lowered: 0,
        adopted: vec![Vec::new(); n],
    };
    let mut t = 0;
    while t < end {
        t += if t < START - 10 * MS { MS } else { STEP };
        while acks.front().is_some_and(|a| a.0 <= t) {
            let Some((_, i, sig)) = acks.pop_front() else {
                break;
            };
            let f = &mut flows[i];
            let sport = 40_000 + i as u16;
            let syn_ack = sig.is_none() || (carrier == Carrier::Native && f.rate.is_none());
            f.count = f.count.wrapping_add(1);
            let mut p = ack(sport, syn_ack, sig, f.count);
            if reverse {
                port.on_reverse(at(t), &mut p);
            }
            match echoed(&p) {
                Some(r) => {
                    if f.rate.is_none() {
                        f.next_send = t;
                    }
                    f.rate = Some(r);
                    out.adopted[i].push((t, r));
                }
                // KA: the SYN-ACK; the first data segment goes now.
                None if carrier == Carrier::Ka && !f.first_sent => {
                    f.first_sent = true;
                    port.push(at(t), data(carrier, sport, false));
                }
                None => {}
            }
        }
        for (i, f) in flows.iter_mut().enumerate() {
            let sport = 40_000 + i as u16;
            if !f.syn_sent && t >= f.start {
                f.syn_sent = true;
                port.push(at(t), data(carrier, sport, true));
                if carrier == Carrier::Ka {
                    acks.push_back((t + D, i, None));
                }
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
            if let Some((sport, s)) = signal(carrier, &piece) {
                acks.push_back((t + D, usize::from(sport - 40_000), Some(s)));
            }
        }
        out.queue_max = out.queue_max.max(port.queue_len());
    }
    let c = port.snapshot().counters;
    out.drops = c.drops_queue;
    out.lowered = c.echoes_lowered;
    out
}

/// The queue a start may build. KA: every SYN-ACK of a crowd passes
/// before the first start, so the first start sees the crowd and every
/// grant is C/64; a lone flow paces at the code above C (κ at its
/// ceiling, as with `Rcp`) until RCP's law pulls κ back, about 100
/// packets.
/// Native RCP: the SYN-ACK is the start, the first one finds nobody else
/// echoed and gets the link, the others in its RTT get floors (about
/// `b·H(64)/4`, 1.2 × 8 ms at C: 120 packets), as with `Crowd`.
fn bound(carrier: Carrier) -> usize {
    match carrier {
        Carrier::Ka => 120,
        Carrier::Native => 150,
    }
}

fn echo() -> ControllerKind {
    ControllerKind::Echo(EchoConfig::default())
}

fn check(carrier: Carrier, n: usize) {
    let end = START + 10 * MS + if n == 1 { 25 * D } else { 8 * D };
    let r = run(carrier, echo(), n, end, true);
    assert_eq!(r.drops, 0, "{carrier:?} N={n}");
    assert!(
        r.queue_max <= bound(carrier),
        "{carrier:?} N={n}: queue {}",
        r.queue_max
    );
    if n > 1 {
        assert!(r.lowered > 0, "{carrier:?} N={n}: no echo lowered");
    }
    let last = START + 10 * MS;
    // The echoes dither between the KA codes around each share, so a
    // single rate may be a code or two off; the mean within 10 %.
    converged(&r.adopted, n, last + 5 * D, end, 0.2, 0.1)
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
        let rcp = run(carrier, ControllerKind::Rcp, 64, end, true);
        assert!(
            rcp.drops > 0 && rcp.queue_max == 1000,
            "{carrier:?}: RCP's queue {} drops {}",
            rcp.queue_max,
            rcp.drops
        );
        let e = run(carrier, echo(), 64, end, true);
        assert_eq!(e.drops, 0, "{carrier:?}");
        assert!(
            e.queue_max <= bound(carrier),
            "{carrier:?}: {}",
            e.queue_max
        );
    }
}

#[test]
fn without_the_acks_the_data_still_carry_a_rate() {
    // Asymmetric routing: nothing passes on_reverse. The flows still get
    // rates from the forward stamps (RCP's way, counted from their first
    // data packet; the crowd rule keeps the start bounded) and share the
    // link; no echo is lowered. Undithered forward codes round down and κ
    // stays at the busy-link target, so the shares are up to 15 % low.
    let end = START + 10 * MS + 30 * D;
    let r = run(Carrier::Ka, echo(), 10, end, false);
    assert_eq!(r.lowered, 0);
    assert_eq!(r.drops, 0);
    let last = START + 10 * MS;
    assert!(r.queue_max <= 300, "{}", r.queue_max);
    converged(&r.adopted, 10, last + 20 * D, end, 0.2, 0.15).unwrap_or_else(|e| panic!("{e}"));
}

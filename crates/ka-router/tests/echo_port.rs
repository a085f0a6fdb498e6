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

use common::crowd::{self, Carrier, D, Feedback, Harness, MS, START, converged};
use ka_codec::options::{KaRate, RcpEcho};
use ka_codec::rcp_option;
use ka_codec::scale::{Code, Scale};
use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::checksum;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::tcp::{ACK, SYN, TcpRepr};
use ka_router::{ControllerKind, EchoConfig};

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
    let flags = if syn { SYN | ACK } else { ACK };
    let header = TcpRepr {
        src_port: 5001,
        dst_port: sport,
        flags,
        ..TcpRepr::default()
    };
    TcpSegment {
        ident: sport,
        raw_tcp_options: &opt,
        ..TcpSegment::new(Addrs::V4([10, 0, 0, 2], [10, 0, 0, 1]), header)
    }
    .to_vec()
    .unwrap()
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
    let (p, sport) = crowd::leading_piece(piece)?;
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

/// The receivers' ACKs, an RTT after each packet left the port, through
/// the router's reverse path if `reverse`.
struct Acks {
    queue: VecDeque<Ack>,
    /// Per flow: the KA-Rate echo counter of its last ACK.
    counts: Vec<u8>,
    reverse: bool,
}

impl Feedback for Acks {
    fn deliver(&mut self, h: &mut Harness, t: u64) {
        while self.queue.front().is_some_and(|a| a.0 <= t) {
            let Some((_, i, sig)) = self.queue.pop_front() else {
                break;
            };
            let carrier = h.carrier;
            let syn_ack =
                sig.is_none() || (carrier == Carrier::Native && h.flows[i].rate.is_none());
            self.counts[i] = self.counts[i].wrapping_add(1);
            let mut p = ack(crowd::sport(i), syn_ack, sig, self.counts[i]);
            if self.reverse {
                let at = h.at(t);
                h.port.on_reverse(at, &mut p);
            }
            match echoed(&p) {
                Some(r) => h.adopt(i, t, r),
                // KA: the SYN-ACK; the first data segment goes now.
                None if carrier == Carrier::Ka && !h.flows[i].first_sent => h.send_first(i, t),
                None => {}
            }
        }
    }

    /// KA: the SYN-ACK, without an echo, comes back an RTT after the SYN.
    fn on_flow(&mut self, h: &mut Harness, i: usize, t: u64, syn: bool) {
        if syn && h.carrier == Carrier::Ka {
            self.queue.push_back((t + D, i, None));
        }
    }

    fn on_piece(&mut self, h: &mut Harness, t: u64, piece: &[u8]) {
        if let Some((sport, s)) = signal(h.carrier, piece) {
            self.queue
                .push_back((t + D, crowd::flow_of(sport), Some(s)));
        }
    }
}

/// `reverse`: whether the ACKs pass the router.
fn run_acks(
    carrier: Carrier,
    controller: ControllerKind,
    n: usize,
    end: u64,
    reverse: bool,
) -> crowd::Run {
    let mut acks = Acks {
        queue: VecDeque::new(),
        counts: vec![0; n],
        reverse,
    };
    crowd::run(carrier, controller, n, end, &mut acks)
}

/// With the ACKs through the router.
fn run(carrier: Carrier, controller: ControllerKind, n: usize, end: u64) -> crowd::Run {
    run_acks(carrier, controller, n, end, true)
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
    let r = run(carrier, echo(), n, end);
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

crowd::crowd_tests! {
    check: check,
    run: run,
    controller: echo(),
    bound: bound,
}

#[test]
fn without_the_acks_the_data_still_carry_a_rate() {
    // Asymmetric routing: nothing passes on_reverse. The flows still get
    // rates from the forward stamps (RCP's way, counted from their first
    // data packet; the crowd rule keeps the start bounded) and share the
    // link; no echo is lowered. Undithered forward codes round down and κ
    // stays at the busy-link target, so the shares are up to 15 % low.
    let end = START + 10 * MS + 30 * D;
    let r = run_acks(Carrier::Ka, echo(), 10, end, false);
    assert_eq!(r.lowered, 0);
    assert_eq!(r.drops, 0);
    let last = START + 10 * MS;
    assert!(r.queue_max <= 300, "{}", r.queue_max);
    converged(&r.adopted, 10, last + 20 * D, end, 0.2, 0.15).unwrap_or_else(|e| panic!("{e}"));
}

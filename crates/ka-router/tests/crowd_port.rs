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

use common::crowd::{self, Carrier, D, Feedback, Harness, MS, START, converged};
use ka_codec::rcp_option;
use ka_codec::scale::Scale;
use ka_router::{ControllerKind, CrowdConfig};

/// The rate a piece leaving the port carries to its sender, and the
/// sender's port number.
fn signal(carrier: Carrier, piece: &[u8]) -> Option<(u16, f64)> {
    let (p, sport) = crowd::leading_piece(piece)?;
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

/// The rest of the path and the echo: a rate reaches its sender an RTT
/// after it left the port.
#[derive(Default)]
struct Echoes(VecDeque<(u64, usize, f64)>);

impl Feedback for Echoes {
    fn deliver(&mut self, h: &mut Harness, t: u64) {
        while self.0.front().is_some_and(|e| e.0 <= t) {
            let Some((_, i, r)) = self.0.pop_front() else {
                break;
            };
            h.adopt(i, t, r);
        }
    }

    /// KA: the first data segment goes out an RTT after the SYN.
    fn on_flow(&mut self, h: &mut Harness, i: usize, t: u64, _syn: bool) {
        let f = &h.flows[i];
        if h.carrier == Carrier::Ka && !f.first_sent && t >= f.start + D {
            h.send_first(i, t);
        }
    }

    fn on_piece(&mut self, h: &mut Harness, t: u64, piece: &[u8]) {
        if let Some((sport, r)) = signal(h.carrier, piece) {
            self.0.push_back((t + D, crowd::flow_of(sport), r));
        }
    }
}

fn run(carrier: Carrier, controller: ControllerKind, n: usize, end: u64) -> crowd::Run {
    crowd::run(carrier, controller, n, end, &mut Echoes::default())
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

/// The queue the 64-flow crowd may build. KA: all 64 are announced by
/// their SYNs before the first grant. Native: the first SYN gets the
/// link, the others floors.
fn bound(carrier: Carrier) -> usize {
    match carrier {
        Carrier::Ka => 20,
        Carrier::Native => 150,
    }
}

crowd::crowd_tests! {
    check: check,
    run: run,
    controller: crowd(),
    bound: bound,
}

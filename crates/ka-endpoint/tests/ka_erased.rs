//! A path whose middlebox reassembles fragments (the KA signal is erased,
//! DESIGN §6.7; what `ka-endpoint probe` reports as "leading-fragment
//! length: ERASED", DESIGN §6.7): KA is negotiated but no code ever
//! arrives. The sender must stay in TCP mode and lose nothing against a
//! plain TCP connection on the same path.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use ka_endpoint::Mode;
use ka_router::PortConfig;

const ONE_WAY: Duration = Duration::from_millis(20);
const C: u64 = 10_000_000;
const RUN: Duration = Duration::from_secs(8);

/// One bulk flow for [`RUN`] through a signalling KA port at `C` followed
/// by an eraser that is always on; returns B's received bytes and A's
/// connection stats.
fn run(ka: bool, seed: u64) -> (usize, ka_endpoint::ConnStats) {
    let mut a = test_tcp();
    a.ka.enabled = ka;
    let mut net = Net::new(stack_cfg(1, a), stack_cfg(2, test_tcp()), ONE_WAY, seed);
    let now = net.now;
    let mut pc = PortConfig::new(C);
    pc.initial_rtt = 2 * ONE_WAY;
    net.ab.hops.push(Hop::port(pc, now));
    net.ab.hops.push(Hop::Eraser {
        on: true,
        held: HashMap::new(),
    });
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(40_000_000, 9), false);
    net.run_for(RUN);
    let hb = net.accepted(5001).expect("accepted");
    let st = net.a.conn(h).expect("connection").stats();
    assert_eq!(net.a.conn(h).unwrap().ka_enabled(), ka, "KA negotiated");
    (net.received(Side::B, hb).len(), st)
}

#[test]
fn erased_signal_stays_tcp_without_penalty() {
    let (ka_bytes, ka) = run(true, 31);
    let (tcp_bytes, tcp) = run(false, 31);
    // never a code, never KA mode, never an indicator's worth of harm
    assert_eq!(ka.ka_signals_fresh, 0, "{ka:?}");
    assert_eq!(ka.mode_changes, 0, "{ka:?}");
    assert_eq!(
        ka.indicators_sent, 0,
        "indicators start with the first signal"
    );
    let goodput = |b: usize| b as f64 * 8.0 / RUN.as_secs_f64();
    let (g_ka, g_tcp) = (goodput(ka_bytes), goodput(tcp_bytes));
    eprintln!(
        "KA negotiated, signal erased: {:.3} Mbit/s ({} retransmits); plain TCP: {:.3} Mbit/s ({} retransmits)",
        g_ka / 1e6,
        ka.retransmits,
        g_tcp / 1e6,
        tcp.retransmits
    );
    assert!(g_tcp > 0.8 * C as f64, "the path is used: {g_tcp}");
    // The port splits every KA data packet in two before the eraser joins
    // them again: one more 20-byte IP header per 1500 bytes on the
    // bottleneck (1.3 %; measured 9.396 against 9.521 Mbit/s). The
    // endpoint itself adds nothing.
    assert!(
        (g_ka - g_tcp).abs() / g_tcp < 0.03,
        "KA with an erased signal {g_ka} vs plain TCP {g_tcp}"
    );
}

/// The same with the mode checked at the end (the flow never leaves TCP
/// mode, so it never paces at a rate nobody signalled).
#[test]
fn erased_signal_mode_is_tcp_throughout() {
    let (_, st) = run(true, 32);
    assert_eq!(st.mode, Mode::Tcp);
    assert_eq!(st.time_in_ka, Duration::ZERO);
    assert_eq!(st.ka_rate, None);
}

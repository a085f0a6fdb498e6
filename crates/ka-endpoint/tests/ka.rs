//! The KA mode machine against a real KA router port (ka_router::Port).
mod common;

use common::*;
use ka_codec::scale::Scale;
use ka_endpoint::{Event, LeftBy, Mode, ModeReason};
use ka_router::{PortConfig, Signalling};
#[allow(unused_imports)]
use std::collections::HashMap;
use std::time::Duration;

const ONE_WAY: Duration = Duration::from_millis(20);
const RTT: Duration = Duration::from_millis(40);
const C: u64 = 10_000_000;

fn port_cfg() -> PortConfig {
    let mut pc = PortConfig::new(C);
    pc.initial_rtt = RTT;
    pc
}

fn ka_net(seed: u64) -> Net {
    let mut net = Net::default_pair(ONE_WAY, seed);
    let now = net.now;
    net.ab.hops.push(Hop::port(port_cfg(), now));
    net
}

fn port(net: &Net, i: usize) -> &ka_router::Port {
    match &net.ab.hops[i] {
        Hop::Port(p) => p,
        _ => panic!("hop {i} is not a port"),
    }
}

/// The rate the port signals now, B/ms (decoded code).
fn signalled(net: &Net, i: usize) -> Option<f64> {
    port(net, i)
        .snapshot()
        .signal
        .map(|c| Scale::PAPER.decode(c))
}

fn mode_changes(net: &Net, h: ka_endpoint::ConnHandle) -> Vec<(Duration, ka_endpoint::ModeChange)> {
    net.events_of(Side::A, h)
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::ModeChanged(m) => Some((t - net.base, m)),
            _ => None,
        })
        .collect()
}

/// IP bytes per second A sent on connection `port` in `[from, to)`.
fn send_rate(net: &Net, from: Duration, to: Duration) -> f64 {
    let bytes: usize = net
        .sent_a
        .iter()
        .filter(|s| {
            let t = s.at - net.base;
            t >= from && t < to
        })
        .map(|s| s.len)
        .sum();
    bytes as f64 / (to - from).as_secs_f64()
}

#[test]
fn ka_mode_through_port_paces_at_r() {
    let mut net = ka_net(21);
    net.record_a = true;
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 5), false);
    let mut mismatch = vec![];
    net.run_for_with(Duration::from_secs(6), |n| {
        let t = n.elapsed();
        if let (true, Some(c), Some(r)) =
            (t >= Duration::from_secs(4), n.a.conn(h), signalled(n, 0))
        {
            let mine = c.stats().ka_rate.unwrap();
            if (mine - r).abs() / r > 0.07 {
                mismatch.push((t, mine, r));
            }
        }
    });
    let changes = mode_changes(&net, h);
    let (t_ka, first) = changes[0];
    assert_eq!(first.to, Mode::Ka);
    assert_eq!(first.reason, ModeReason::Signal);
    assert!(t_ka <= 3 * RTT, "KA mode only at {t_ka:?}");
    assert_eq!(changes.len(), 1, "stayed in KA mode: {changes:?}");
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.mode, Mode::Ka);
    assert_eq!(
        st.ka_cwnd_limited, 0,
        "the KA window never limits the paced rate"
    );
    assert_eq!(st.retransmits, 0);
    // steady state: the paced rate matches the signalled R within 5 %
    let r = signalled(&net, 0).unwrap() * 1000.0;
    let sent = send_rate(&net, Duration::from_secs(4), Duration::from_secs(6));
    // the rate the sender uses tracks the signal (one RTT behind)
    assert!(
        mismatch.is_empty(),
        "{:?}",
        &mismatch[..mismatch.len().min(5)]
    );
    assert!((sent - r).abs() / r < 0.05, "sent {sent} B/s vs R {r} B/s");
    assert!((st.ka_rate.unwrap() * 1000.0 - r).abs() / r < 1e-9);
}

fn set_eraser(net: &mut Net, on: bool) {
    match &mut net.ab.hops[1] {
        Hop::Eraser { on: o, .. } => *o = on,
        _ => panic!("hop 1 is not the eraser"),
    }
}

#[test]
fn silence_falls_back_to_tcp_and_signal_returns_to_ka() {
    let mut net = ka_net(22);
    net.ab.hops.push(Hop::eraser());
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 6), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    // the path stops signalling (a reassembling middlebox after the port)
    set_eraser(&mut net, true);
    let t_off = net.elapsed();
    let srtt = net.a.conn(h).unwrap().stats().srtt.unwrap();
    let flight_before = net.a.conn(h).unwrap().stats().in_flight;
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
            == Mode::Tcp)
    );
    let changes = mode_changes(&net, h);
    let (t_tcp, m) = *changes.last().unwrap();
    assert_eq!(m.reason, ModeReason::Silence);
    // the last stamped packet needs one RTT to be echoed back, then the
    // sender waits one srtt
    assert!(
        t_tcp - t_off <= 2 * srtt,
        "TCP mode after {:?} (srtt {srtt:?})",
        t_tcp - t_off
    );
    // left by silence: cwnd = flight, ssthresh = cwnd
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.left_by, Some(LeftBy::Silence));
    assert!(
        st.ssthresh > flight_before / 2 && st.ssthresh < flight_before * 2,
        "{st:?}"
    );
    net.run_for(Duration::from_millis(800));
    assert_eq!(
        net.a.conn(h).unwrap().mode(),
        Mode::Tcp,
        "no signal → stays TCP"
    );
    // signals come back: KA again at the first fresh echo
    set_eraser(&mut net, false);
    let t_on = net.elapsed();
    let fresh_before = net.a.conn(h).unwrap().stats().ka_signals_fresh;
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
            == Mode::Ka)
    );
    let (t_ka, m) = *mode_changes(&net, h).last().unwrap();
    assert_eq!(m.reason, ModeReason::Signal);
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(
        st.ka_signals_fresh,
        fresh_before + 1,
        "switched at the first fresh signal"
    );
    assert!(
        t_ka - t_on <= RTT + Duration::from_millis(25),
        "KA again after {:?}",
        t_ka - t_on
    );
    assert_eq!(st.retransmits, 0);
}

#[test]
fn loss_at_legacy_bottleneck_returns_to_ka_only_when_cwnd_reaches_r() {
    let mut net = ka_net(23);
    let now = net.now;
    let mut legacy = PortConfig::new(C);
    legacy.signalling = Signalling::None;
    legacy.queue_limit = 8;
    net.ab.hops.push(Hop::port(legacy, now));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(30_000_000, 7), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    assert_eq!(net.a.conn(h).unwrap().stats().retransmits, 0);
    // cross traffic floods the legacy port's small queue: our packets drop
    for i in 0..40 {
        net.inject(Side::A, 1, cross_packet(1500, i));
    }
    let mut samples = vec![];
    net.run_for_with(Duration::from_secs(8), |n| {
        if let Some(c) = n.a.conn(h) {
            let s = c.stats();
            samples.push((n.elapsed(), s.mode, s.ka_signals_fresh));
        }
    });
    let changes = mode_changes(&net, h);
    let after: Vec<_> = changes
        .iter()
        .filter(|(t, _)| *t > Duration::from_secs(2))
        .collect();
    assert!(after.len() >= 2, "{changes:?}");
    let (t_loss, m) = after[0];
    assert_eq!(m.to, Mode::Tcp);
    assert!(
        matches!(m.reason, ModeReason::Loss | ModeReason::Timeout),
        "{m:?}"
    );
    let (t_back, back) = after[1];
    assert_eq!(back.to, Mode::Ka);
    assert_eq!(back.reason, ModeReason::Recovered);
    // the switch happened only once cwnd / srtt reached R …
    let srtt_ms = back.srtt.unwrap().as_secs_f64() * 1e3;
    let r = back.rate.unwrap();
    assert!(back.cwnd as f64 / srtt_ms >= r, "{back:?}");
    // … although fresh signals kept coming the whole time in TCP mode
    let in_tcp: Vec<_> = samples
        .iter()
        .filter(|(t, _, _)| t > t_loss && t < t_back)
        .collect();
    let first = in_tcp.first().unwrap().2;
    let last = in_tcp.last().unwrap().2;
    assert!(
        last > first + 10,
        "signals while in TCP mode: {first} → {last}"
    );
    assert!(
        *t_back - *t_loss > RTT * 3,
        "recovered after {:?}",
        *t_back - *t_loss
    );
    let st = net.a.conn(h).unwrap().stats();
    assert!(st.retransmits > 0);
    assert_eq!(st.mode, Mode::Ka, "{st:?}");
}

#[test]
fn rtt_indicators_every_100ms_per_connection_with_df() {
    let mut net = ka_net(24);
    net.record_a = true;
    let h1 = net.connect(5001);
    let h2 = net.connect(5002);
    net.send_bulk(Side::A, h1, payload(20_000_000, 8), false);
    net.send_bulk(Side::A, h2, payload(20_000_000, 9), false);
    net.run_for(Duration::from_secs(3));
    let mut ports = std::collections::BTreeMap::new();
    for h in [h1, h2] {
        let c = net.a.conn(h).unwrap();
        assert!(c.ka_enabled());
        ports.insert(c.local_addr().port(), h);
    }
    for (&port, &h) in &ports {
        let mine: Vec<&Sent> = net.sent_a.iter().filter(|s| s.src_port == port).collect();
        let ind: Vec<&&Sent> = mine.iter().filter(|s| s.df).collect();
        // ~30 in 3 s (the first goes out with the first data after the handshake)
        assert!(
            ind.len() >= 28 && ind.len() <= 30,
            "{} indicators",
            ind.len()
        );
        for s in &ind {
            let want = ka_codec::rtt::indicator_len(s.srtt.unwrap());
            assert_eq!(s.len, want, "indicator length for srtt {:?}", s.srtt);
            assert!(s.tcp_payload > 0);
        }
        for w in ind.windows(2) {
            let gap = w[1].at - w[0].at;
            if gap > Duration::from_millis(105) {
                eprintln!(
                    "gap {gap:?} at {:?}: {:?}",
                    w[1].at - net.base,
                    mode_changes(&net, h)
                );
            }
            assert!(
                gap >= Duration::from_millis(90) && gap <= Duration::from_millis(110),
                "indicator gap {gap:?}"
            );
        }
        // no other packet of a KA connection has DF
        let other_df = mine
            .iter()
            .filter(|s| s.df && !(600..=611).contains(&s.len))
            .count();
        assert_eq!(other_df, 0);
        let data_no_df = mine.iter().filter(|s| !s.df && s.tcp_payload > 0).count();
        assert!(data_no_df > 500);
        assert_eq!(
            net.a.conn(h).unwrap().stats().indicators_sent,
            ind.len() as u64
        );
    }
    // the router learnt the RTT from them (k = 5 → 48 ms for srtt 32..63 ms)
    let p = port(&net, 0).snapshot();
    assert!(p.counters.indicators_seen >= 56);
}

#[test]
fn plain_tcp_sets_df_and_never_sends_indicators() {
    let mut tcp = test_tcp();
    tcp.ka.enabled = false;
    let mut net = Net::new(stack_cfg(1, tcp), stack_cfg(2, test_tcp()), ONE_WAY, 25);
    let now = net.now;
    net.ab.hops.push(Hop::port(port_cfg(), now));
    net.record_a = true;
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(2_000_000, 10), true);
    net.run_for(Duration::from_secs(3));
    let hb = net.accepted(5001).unwrap();
    assert_eq!(net.received(Side::B, hb).len(), 2_000_000);
    assert!(
        net.sent_a.iter().all(|s| s.df),
        "plain TCP sets DF on everything"
    );
    assert_eq!(
        net.b.stats().leading_fragments,
        0,
        "DF'd packets are never fragmented"
    );
    let p = port(&net, 0).snapshot();
    assert_eq!(p.counters.fragments_made, 0);
    assert_eq!(p.counters.indicators_seen, 0);
}

#[test]
fn port_in_tcp_mode_stops_signals_then_ka_resumes() {
    let mut net = Net::default_pair(ONE_WAY, 26);
    let now = net.now;
    let mut pc = port_cfg();
    pc.queue_limit = 100;
    net.ab.hops.push(Hop::port(pc, now));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(30_000_000, 11), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    let srtt = net.a.conn(h).unwrap().stats().srtt.unwrap();
    let fresh_before = net.a.conn(h).unwrap().stats().ka_signals_fresh;
    // cross traffic that ignores KA fills the queue past 50 %
    let t_inj = net.elapsed();
    for i in 0..70 {
        net.inject(Side::A, 0, cross_packet(1500, i));
    }
    let mut port_modes = vec![];
    net.run_for_with(Duration::from_secs(3), |n| {
        let m = port(n, 0).snapshot().mode;
        if port_modes.last().map(|x: &(Duration, ka_router::Mode)| x.1) != Some(m) {
            port_modes.push((n.elapsed(), m));
        }
    });
    assert_eq!(port_modes[0].1, ka_router::Mode::Tcp, "{port_modes:?}");
    let port_back = port_modes
        .iter()
        .find(|(_, m)| *m == ka_router::Mode::Ka)
        .expect("port recovers")
        .0;
    let changes: Vec<_> = mode_changes(&net, h)
        .into_iter()
        .filter(|(t, _)| *t > t_inj)
        .collect();
    assert_eq!(changes.len(), 2, "no flapping: {changes:?}");
    let (t_tcp, m) = changes[0];
    assert_eq!((m.to, m.reason), (Mode::Tcp, ModeReason::Silence));
    assert!(t_tcp - t_inj <= 2 * srtt, "TCP after {:?}", t_tcp - t_inj);
    let (t_ka, m) = changes[1];
    assert_eq!((m.to, m.reason), (Mode::Ka, ModeReason::Signal));
    assert!(t_ka > port_back, "KA only after the port signals again");
    // at once: the first packet stamped again needs one RTT to come back
    assert!(
        t_ka - port_back <= RTT + Duration::from_millis(5),
        "{:?}",
        t_ka - port_back
    );
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.mode, Mode::Ka);
    assert!(st.ka_signals_fresh > fresh_before);
    assert_eq!(st.retransmits, 0, "no loss: the queue had room");
}

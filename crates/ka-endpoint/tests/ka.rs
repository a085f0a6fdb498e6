//! The KA mode machine against a real KA router port (ka_router::Port).
mod common;

use common::*;
use ka_codec::scale::Scale;
use ka_endpoint::{LeftBy, Mode, ModeReason};
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

/// [`ka_net`] followed by a legacy (non-signalling, drop-tail) port at the
/// same rate with a `queue_limit`-packet queue.
fn ka_then_legacy_net(seed: u64, queue_limit: usize) -> Net {
    let mut net = ka_net(seed);
    let now = net.now;
    let mut legacy = PortConfig::new(C);
    legacy.signalling = Signalling::None;
    legacy.queue_limit = queue_limit;
    net.ab.hops.push(Hop::port(legacy, now));
    net
}

/// A hop dropping our data packets (> 1000 bytes) for 20 ms from the
/// instant set in the returned cell (unset: drops nothing): one loss
/// episode on demand.
fn drop_data_window(net: &mut Net) -> std::rc::Rc<std::cell::Cell<Option<std::time::Instant>>> {
    let drop_from = std::rc::Rc::new(std::cell::Cell::new(None::<std::time::Instant>));
    let d = drop_from.clone();
    net.ab.hops.push(Hop::Filter(Box::new(move |at, pkt| {
        d.get()
            .is_some_and(|t| at >= t && at < t + Duration::from_millis(20))
            && pkt.len() > 1000
    })));
    drop_from
}

/// The rate the port signals now, B/ms (decoded code).
fn signalled(net: &Net, i: usize) -> Option<f64> {
    net.port(i)
        .snapshot()
        .signal
        .map(|c| Scale::PAPER.decode(c))
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
    let changes = net.mode_changes(h);
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

/// [`ka_net`] with `tcp` on both ends and a signal eraser after the port
/// (off): a 12 MB flow run for 2 s, in KA mode by then.
fn ka_flow_before_an_eraser(tcp: ka_endpoint::TcpConfig) -> (Net, ka_endpoint::ConnHandle) {
    let mut net = Net::new(stack_cfg(1, tcp), stack_cfg(2, tcp), ONE_WAY, 22);
    let now = net.now;
    net.ab.hops.push(Hop::port(port_cfg(), now));
    net.ab.hops.push(Hop::eraser());
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 6), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    (net, h)
}

#[test]
fn silence_falls_back_to_tcp_and_signal_returns_to_ka() {
    let (mut net, h) = ka_flow_before_an_eraser(test_tcp());
    // the path stops signalling (a reassembling middlebox after the port)
    set_eraser(&mut net, true);
    let t_off = net.elapsed();
    let srtt = net.a.conn(h).unwrap().stats().srtt.unwrap();
    let flight_before = net.a.conn(h).unwrap().stats().in_flight;
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
            == Mode::Tcp)
    );
    let changes = net.mode_changes(h);
    let (t_tcp, m) = *changes.last().unwrap();
    assert_eq!(m.reason, ModeReason::Silence);
    // the last stamped packet needs one RTT to be echoed back, then the
    // sender waits one srtt (plus the srtt/16 jitter margin)
    assert!(
        t_tcp - t_off <= 2 * srtt + srtt / 8,
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
    let (t_ka, m) = *net.mode_changes(h).last().unwrap();
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

/// With `KaConfig::silence_backoff` (the binary's default, DESIGN §6.3.1)
/// leaving KA mode by silence is one congestion event for the TCP-mode
/// controller: CUBIC enters TCP mode at 0.7 of the flight, where the
/// paper's rule keeps the whole flight. Same seed, same path, so both runs
/// leave KA mode at the same instant with the same flight.
#[test]
fn silence_backoff_enters_tcp_mode_one_decrease_below_the_flight() {
    let exit = |backoff: bool| {
        let mut tcp = test_tcp();
        tcp.cc = ka_endpoint::CcAlgorithm::Cubic;
        tcp.ka.silence_backoff = backoff;
        let (mut net, h) = ka_flow_before_an_eraser(tcp);
        set_eraser(&mut net, true);
        assert!(
            net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
                == Mode::Tcp)
        );
        let (at, m) = *net.mode_changes(h).last().unwrap();
        assert_eq!(m.reason, ModeReason::Silence);
        let st = net.a.conn(h).unwrap().stats();
        (at, st.cwnd, st.ssthresh)
    };
    let (at_keep, cwnd_keep, ssthresh_keep) = exit(false);
    let (at_cut, cwnd_cut, ssthresh_cut) = exit(true);
    assert_eq!(at_keep, at_cut, "the same exit");
    let ratio = ssthresh_cut as f64 / ssthresh_keep as f64;
    assert!(
        (0.65..=0.75).contains(&ratio),
        "ssthresh {ssthresh_cut} with the backoff, {ssthresh_keep} without ({ratio:.2})"
    );
    assert!(
        cwnd_cut < cwnd_keep,
        "cwnd {cwnd_cut} with the backoff, {cwnd_keep} without"
    );
}

/// After a loss, a flow returns to KA mode once its loss episode is over and
/// the path shows no standing queue (the crate's deviation from DESIGN §6.3;
/// see `conn::ka`), without waiting for `cwnd / srtt ≥ R`.
#[test]
fn loss_at_legacy_bottleneck_returns_to_ka_once_the_path_is_clear() {
    let mut net = ka_then_legacy_net(23, 8);
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(30_000_000, 7), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    assert_eq!(net.a.conn(h).unwrap().stats().retransmits, 0);
    let rate_before = net.a.conn(h).unwrap().stats().ka_rate.unwrap();
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
    let changes = net.mode_changes(h);
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
    // not before the loss episode was over (recovery, then an srtt without
    // a standing queue) …
    let srtt = back.srtt.unwrap();
    assert!(*t_back - *t_loss > srtt * 2, "{:?}", *t_back - *t_loss);
    // … and then promptly: recovery plus `clear_srtts` (8) srtts
    assert!(
        *t_back - *t_loss < RTT * 14,
        "recovered after {:?}",
        *t_back - *t_loss
    );
    // fresh signals kept coming the whole time in TCP mode
    let in_tcp: Vec<_> = samples
        .iter()
        .filter(|(t, _, _)| t > t_loss && t < t_back)
        .collect();
    let first = in_tcp.first().unwrap().2;
    let last = in_tcp.last().unwrap().2;
    assert!(
        last > first + 3,
        "signals while in TCP mode: {first} → {last}"
    );
    let st = net.a.conn(h).unwrap().stats();
    assert!(st.retransmits > 0);
    assert_eq!(st.mode, Mode::Ka, "{st:?}");
    // R rose while the flow was in TCP mode (the KA port saw less input);
    // the flow came back at no more than it had before the loss
    if let Some(cap) = st.ka_rate_cap {
        assert!(cap >= 0.9 * rate_before && cap <= 1.1 * rate_before);
    }
}

/// Paper Fig. 6/7 in small: two KA flows cross a KA port, then a legacy
/// port. While cross traffic keeps the legacy queue standing, they stay in
/// TCP mode although the KA port keeps signalling (and, no longer the
/// bottleneck, raises R). When the cross traffic stops they come back in
/// KA mode at the rate they had before, not at the inflated R.
#[test]
fn legacy_congestion_keeps_tcp_mode_and_return_is_capped() {
    let mut net = ka_then_legacy_net(31, 60);
    let h1 = net.connect(5001);
    let h2 = net.connect(5002);
    net.send_bulk(Side::A, h1, payload(40_000_000, 1), false);
    net.send_bulk(Side::A, h2, payload(40_000_000, 2), false);
    net.run_for(Duration::from_secs(3));
    let before: Vec<f64> = [h1, h2]
        .iter()
        .map(|&h| {
            let c = net.a.conn(h).unwrap();
            assert_eq!(c.mode(), Mode::Ka);
            c.stats().ka_rate.unwrap()
        })
        .collect();
    // each about C/2 (R quantised down), 1250 B/ms = 10 Mbit/s
    for r in &before {
        assert!(*r > 450.0 && *r < 650.0, "{before:?}");
    }
    // 3–7 s: DF cross traffic at 60 % of C into the legacy port
    let gap = Duration::from_secs_f64(1500.0 * 8.0 / (0.6 * C as f64));
    let mut next = net.elapsed();
    let mut id = 0u16;
    let mut in_tcp_late = true;
    net.run_for_with(Duration::from_secs(4), |n| {
        while n.elapsed() >= next {
            id = id.wrapping_add(1);
            n.inject(Side::A, 1, cross_packet(1500, id));
            next += gap;
        }
        if n.elapsed() > Duration::from_secs(4) {
            for h in [h1, h2] {
                in_tcp_late &= n.a.conn(h).unwrap().mode() == Mode::Tcp;
            }
        }
    });
    assert!(in_tcp_late, "TCP mode while the legacy queue stands");
    // the KA port, no longer the bottleneck, raised R well above C/2
    let r_now = signalled(&net, 0).unwrap();
    assert!(r_now > 1.4 * before[0], "R {r_now} vs {before:?}");
    // cross traffic stops: both back in KA mode within a second …
    let t_stop = net.elapsed();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        [h1, h2]
            .iter()
            .all(|&h| n.a.conn(h).unwrap().mode() == Mode::Ka)
    }));
    assert!(net.elapsed() - t_stop < Duration::from_secs(1));
    // … paced at no more than about their old rate (the rate they had when
    // they left KA mode), whatever R is by then
    let retx: u64 = [h1, h2]
        .iter()
        .map(|&h| net.a.conn(h).unwrap().stats().retransmits)
        .sum();
    for (i, &h) in [h1, h2].iter().enumerate() {
        let st = net.a.conn(h).unwrap().stats();
        let r = st.ka_rate.unwrap();
        let paced = st.ka_rate_cap.map_or(r, |c| c.min(r));
        assert!(
            paced <= 1.2 * before[i],
            "{paced} vs {} ({st:?})",
            before[i]
        );
    }
    net.record_a = true;
    let t0 = net.elapsed();
    net.run_for(Duration::from_secs(1));
    let rate = send_rate(&net, t0, net.elapsed());
    assert!(rate < 1.05 * (before[0] + before[1]) * 1000.0, "{rate} B/s");
    // and no new loss from overshooting
    let retx_after: u64 = [h1, h2]
        .iter()
        .map(|&h| net.a.conn(h).unwrap().stats().retransmits)
        .sum();
    assert_eq!(retx_after, retx);
}

/// The cap after a return into an inflated R, with a fixed-code stamper in
/// place of a router so R is exactly what the test says: the flow comes
/// back at the rate it had, stays there while R is higher, follows R once R
/// comes down to the cap, and then follows it up again.
#[test]
fn return_into_an_inflated_rate_is_capped_until_r_comes_down() {
    use ka_codec::scale::Code;
    let rate = |len: usize| Scale::PAPER.decode(Code::from_len(len).unwrap());
    let (lo, hi, lower) = (520, 760, 480);
    let mut net = Net::default_pair(ONE_WAY, 41);
    // drop our data packets in a 20 ms window: one loss episode
    let drop_from = drop_data_window(&mut net);
    net.ab.hops.push(Hop::Stamp(Code::from_len(lo).unwrap()));
    net.record_a = true;
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(60_000_000, 4), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().stats().ka_rate, Some(rate(lo)));
    drop_from.set(Some(net.now));
    net.run_for(Duration::from_millis(150));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Tcp);
    let (_, m) = *net.mode_changes(h).last().unwrap();
    assert_eq!(m.reason, ModeReason::Loss);
    // R jumps to 6.5 × while the flow is in TCP mode
    net.ab.hops[1] = Hop::Stamp(Code::from_len(hi).unwrap());
    let t_switch = net.elapsed();
    assert!(
        net.run_until(Duration::from_secs(2), |n| n.a.conn(h).unwrap().mode()
            == Mode::Ka)
    );
    let back = net.elapsed() - t_switch;
    assert!(back < Duration::from_secs(1), "back after {back:?}");
    let (_, m) = *net.mode_changes(h).last().unwrap();
    assert_eq!(m.reason, ModeReason::Recovered);
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.ka_rate, Some(rate(hi)));
    // the cap: the rate it had in KA mode
    let cap = st.ka_rate_cap.unwrap();
    assert_eq!(cap, rate(lo));
    let t0 = net.elapsed() + RTT;
    net.run_for(Duration::from_secs(1) + RTT);
    let sent = send_rate(&net, t0, net.elapsed()) / 1000.0;
    assert!((sent - cap).abs() < 0.08 * cap, "{sent} B/ms");
    // R comes down below the cap: the cap goes, the flow follows R …
    net.ab.hops[1] = Hop::Stamp(Code::from_len(lower).unwrap());
    net.run_for(RTT * 2);
    assert_eq!(net.a.conn(h).unwrap().stats().ka_rate_cap, None);
    let t0 = net.elapsed();
    net.run_for(Duration::from_secs(1));
    let sent = send_rate(&net, t0, net.elapsed()) / 1000.0;
    assert!(
        (sent - rate(lower)).abs() < 0.08 * rate(lower),
        "{sent} B/ms"
    );
    // … and up again
    net.ab.hops[1] = Hop::Stamp(Code::from_len(hi).unwrap());
    net.run_for(RTT * 2);
    let t0 = net.elapsed();
    net.run_for(Duration::from_secs(1));
    let sent = send_rate(&net, t0, net.elapsed()) / 1000.0;
    assert!((sent - rate(hi)).abs() < 0.08 * rate(hi), "{sent} B/ms");
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
}

/// A flow that left by loss, whose routers then stop signalling while its
/// ACKs keep coming (a KA router in TCP mode, which freezes R), trusts R
/// again: it comes back at the first fresh signal, uncapped (paper Fig. 5).
#[test]
fn losses_while_the_routers_are_silent_do_not_cap_the_return() {
    use ka_codec::scale::Code;
    let rate = |len: usize| Scale::PAPER.decode(Code::from_len(len).unwrap());
    let mut net = Net::default_pair(ONE_WAY, 43);
    let drop_from = drop_data_window(&mut net);
    net.ab.hops.push(Hop::Stamp(Code::from_len(520).unwrap()));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(60_000_000, 5), false);
    net.run_for(Duration::from_secs(2));
    drop_from.set(Some(net.now));
    net.run_for(Duration::from_millis(150));
    let (_, m) = *net.mode_changes(h).last().unwrap();
    assert_eq!((m.to, m.reason), (Mode::Tcp, ModeReason::Loss));
    // the routers fall silent: nothing stamps any more, ACKs keep coming
    net.ab.hops[1] = Hop::Filter(Box::new(|_, _| false));
    net.run_for(Duration::from_millis(500));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Tcp);
    // signals come back at 6.5 × the old rate: KA at the first fresh echo,
    // following R, no cap
    net.ab.hops[1] = Hop::Stamp(Code::from_len(760).unwrap());
    let t_on = net.elapsed();
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
            == Mode::Ka)
    );
    assert!(net.elapsed() - t_on <= RTT + Duration::from_millis(10));
    let (_, m) = *net.mode_changes(h).last().unwrap();
    assert_eq!(m.reason, ModeReason::Signal);
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.ka_rate, Some(rate(760)));
    assert_eq!(st.ka_rate_cap, None);
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
                    net.mode_changes(h)
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
    let p = net.port(0).snapshot();
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
    let p = net.port(0).snapshot();
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
        let m = n.port(0).snapshot().mode;
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
    let changes: Vec<_> = net
        .mode_changes(h)
        .into_iter()
        .filter(|(t, _)| *t > t_inj)
        .collect();
    assert_eq!(changes.len(), 2, "no flapping: {changes:?}");
    let (t_tcp, m) = changes[0];
    assert_eq!((m.to, m.reason), (Mode::Tcp, ModeReason::Silence));
    assert!(
        t_tcp - t_inj <= 2 * srtt + srtt / 8,
        "TCP after {:?}",
        t_tcp - t_inj
    );
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

/// A controller whose rate the test sets.
struct SetRate(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl ka_router::RateController for SetRate {
    fn on_interval(&mut self, _: &ka_router::Measurement) -> f64 {
        self.rate()
    }
    fn rate(&self) -> f64 {
        f64::from_bits(self.0.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// With a scale that reaches below the RTT indicators' own rate (one
/// ~600-byte DF packet per 100 ms, 48 kbit/s), a KA flow told 20 kbit/s
/// must still send segments the router can stamp (never two indicators in
/// a row), so it hears when R rises and follows it.
#[test]
fn below_the_indicator_rate_the_flow_still_hears_r_rise() {
    let low = Scale {
        b: Scale::PAPER.b / 16.0,
        ..Scale::PAPER
    };
    let mut tcp = test_tcp();
    tcp.ka.scale = low;
    let mut net = Net::new(stack_cfg(1, tcp), stack_cfg(2, tcp), ONE_WAY, 31);
    let rate = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(2.5f64.to_bits()));
    let mut pc = port_cfg();
    pc.scale = low;
    let now = net.now;
    net.ab
        .hops
        .push(Hop::Port(Box::new(ka_router::Port::with_controller(
            pc,
            Box::new(SetRate(rate.clone())),
            now,
        ))));
    net.record_a = true;
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(4_000_000, 3), false);
    net.run_for(Duration::from_secs(10));
    // At 2.5 B/ms (20 kbit/s): ordinary (stampable) segments keep going out.
    let data = |from: u64, to: u64| {
        net.sent_a
            .iter()
            .filter(|s| {
                let t = s.at - net.base;
                s.tcp_payload > 0
                    && !s.df
                    && t >= Duration::from_secs(from)
                    && t < Duration::from_secs(to)
            })
            .count()
    };
    assert!(
        data(4, 10) >= 3,
        "{} stampable segments in 6 s",
        data(4, 10)
    );
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.mode, Mode::Ka);
    // R rises to 100 B/ms (800 kbit/s): the flow follows within seconds.
    rate.store(100f64.to_bits(), std::sync::atomic::Ordering::Relaxed);
    net.run_for(Duration::from_secs(10));
    let r = net.a.conn(h).unwrap().stats().ka_rate.unwrap();
    let want = low.decode(low.encode(100.0).unwrap());
    assert!(
        (r - want).abs() / want < 1e-9,
        "paces at {r} B/ms, R {want}"
    );
    let sent = send_rate(&net, Duration::from_secs(16), Duration::from_secs(20));
    assert!(
        (sent - want * 1000.0).abs() / (want * 1000.0) < 0.1,
        "sent {sent} B/s"
    );
}

/// With `KaConfig::loss_leaves_ka = false` (hosts behind a DCC middlebox)
/// the same loss episode as above leaves the flow in KA mode at the
/// signalled rate, retransmitting what was lost; a path that drops
/// everything still ends KA mode (its signals stop).
#[test]
fn a_loss_keeps_ka_mode_when_the_router_owns_congestion() {
    use ka_codec::scale::Code;
    let mut tcp = test_tcp();
    tcp.ka.loss_leaves_ka = false;
    let mut net = Net::new(stack_cfg(1, tcp), stack_cfg(2, test_tcp()), ONE_WAY, 43);
    let drop_from = drop_data_window(&mut net);
    net.ab.hops.push(Hop::Stamp(Code::from_len(520).unwrap()));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(60_000_000, 5), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    let retx_before = net.a.conn(h).unwrap().stats().retransmits;
    drop_from.set(Some(net.now));
    net.run_for(Duration::from_millis(500));
    let st = net.a.conn(h).unwrap().stats();
    assert!(st.retransmits > retx_before, "the episode lost data");
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    assert!(
        net.mode_changes(h).iter().all(|(_, m)| m.to == Mode::Ka),
        "{:?}",
        net.mode_changes(h)
    );
    // a path that drops every data packet: silence ends KA mode
    net.ab.hops[0] = Hop::Filter(Box::new(|_, pkt| pkt.len() > 1000));
    assert!(net.run_until(Duration::from_secs(3), |n| {
        n.a.conn(h).is_some_and(|c| c.mode() == Mode::Tcp)
    }));
    let (_, m) = *net.mode_changes(h).last().unwrap();
    assert_eq!(m.reason, ModeReason::Silence);
}

/// A flow whose whole first flight is lost, before any signal, was never
/// in KA mode: the loss says nothing about R (it never paced at R). It
/// enters KA mode at the first fresh signal after its loss episode (the
/// RTO and the RTT sample after it) instead of waiting, with the
/// two-segment ssthresh the RTO left it, until `cwnd/srtt` reaches R.
#[test]
fn a_flow_that_lost_its_first_flight_enters_ka_after_the_episode() {
    use ka_codec::scale::Code;
    let mut net = Net::default_pair(ONE_WAY, 47);
    let start = net.now;
    // every data packet of the first 100 ms is lost (the initial flight)
    net.ab.hops.push(Hop::Filter(Box::new(move |at, pkt| {
        at < start + Duration::from_millis(100) && pkt.len() > 1000
    })));
    // a KA router signalling 1000 B/ms (8 Mbit/s), far above what a
    // window of two segments per 40 ms RTT carries (≈ 0.6 Mbit/s)
    net.ab.hops.push(Hop::Stamp(Code::from_len(728).unwrap()));
    let r = Scale::PAPER.decode(Code::from_len(728).unwrap());
    assert!(r > 500.0, "{r}");
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(4_000_000, 3), false);
    assert!(net.run_until(Duration::from_secs(4), |n| {
        n.a.conn(h).is_some_and(|c| c.mode() == Mode::Ka)
    }));
    let st = net.a.conn(h).unwrap().stats();
    assert!(st.rtos >= 1, "{st:?}");
    let changes = net.mode_changes(h);
    let (t_ka, m) = changes[0];
    assert_eq!(m.to, Mode::Ka);
    assert_eq!(m.reason, ModeReason::Recovered);
    // the RTO (1 s) and one RTT sample later, not seconds later
    assert!(t_ka < Duration::from_millis(1400), "{t_ka:?}");
    assert_eq!(st.ka_rate_cap, None, "{st:?}");
}

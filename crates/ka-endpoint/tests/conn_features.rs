//! Individual TCP mechanisms: delayed ACKs, TIME-WAIT, TCP-mode pacing,
//! simultaneous open, abort, events.
mod common;

use common::*;
use ka_codec::wire::tcp::{FIN, RST};
use ka_endpoint::{CloseReason, Event, State};
use std::time::Duration;

fn plain() -> ka_endpoint::TcpConfig {
    let mut t = test_tcp();
    t.ka.enabled = false;
    t
}

#[test]
fn delayed_ack_timer_and_every_second_segment() {
    let mut net = Net::new(
        stack_cfg(1, plain()),
        stack_cfg(2, plain()),
        Duration::from_millis(10),
        41,
    );
    net.ab.impair.rate_bps = Some(100_000_000);
    net.record_a = true;
    net.record_b = true;
    let h = net.connect(80);
    net.run_for(Duration::from_millis(100));
    // (the first data opens the window from the unscaled SYN value to the
    // whole buffer, which is acknowledged at once as a window update)
    net.a.conn_mut(h).unwrap().write(&[7u8; 100]);
    net.run_for(Duration::from_millis(100));
    // one small segment: acknowledged by the 40 ms timer
    net.a.conn_mut(h).unwrap().write(&[7u8; 100]);
    let t_send = net.now;
    net.run_for(Duration::from_millis(200));
    let acks: Vec<&Sent> = net.sent_b.iter().filter(|s| s.at > t_send).collect();
    assert_eq!(acks.len(), 1);
    let delay = acks[0].at - t_send;
    assert!(
        delay >= Duration::from_millis(50) && delay <= Duration::from_millis(51),
        "{delay:?}"
    );
    // ten full segments back to back: an ACK for every second one
    let n_before = net.sent_b.len();
    net.a.conn_mut(h).unwrap().write(&[1u8; 14_480]);
    net.run_for(Duration::from_millis(200));
    let acks = net.sent_b.len() - n_before;
    assert_eq!(acks, 5, "{:?}", &net.sent_b[n_before..]);
}

#[test]
fn time_wait_lasts_the_configured_2msl() {
    let mut net = Net::new(
        stack_cfg(1, plain()),
        stack_cfg(2, plain()),
        Duration::from_millis(10),
        42,
    );
    net.record_a = true;
    let h = net.connect(80);
    net.send_bulk(Side::A, h, payload(1000, 1), true);
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.a.conn(h).is_some_and(|c| c.state() == State::TimeWait)
    }));
    let t_tw = net.now;
    net.run_for(Duration::from_secs(2));
    let ev = net.events_of(Side::A, h);
    let (t_closed, last) = *ev.last().unwrap();
    assert_eq!(last, Event::Closed(CloseReason::Normal));
    assert_eq!(t_closed - t_tw, Duration::from_millis(500));
    // the FIN went out with the data
    assert!(
        net.sent_a
            .iter()
            .any(|s| s.flags & FIN != 0 && s.tcp_payload == 1000)
    );
}

#[test]
fn tcp_mode_pacing_spreads_bursts() {
    let bursts = |pacing: bool| {
        let mut t = plain();
        t.tcp_pacing = pacing;
        let mut net = Net::new(
            stack_cfg(1, t),
            stack_cfg(2, plain()),
            Duration::from_millis(20),
            43,
        );
        net.record_a = true;
        let h = net.connect(80);
        net.send_bulk(Side::A, h, payload(300_000, 2), false);
        net.run_for(Duration::from_secs(2));
        let hb = net.accepted(80).unwrap();
        assert_eq!(net.received(Side::B, hb).len(), 300_000);
        let data: Vec<&Sent> = net.sent_a.iter().filter(|s| s.tcp_payload > 0).collect();
        data.windows(2).filter(|w| w[1].at == w[0].at).count()
    };
    let unpaced = bursts(false);
    let paced = bursts(true);
    assert!(unpaced > 50, "window bursts without pacing: {unpaced}");
    // the pacer still allows a 1 ms burst after an idle (window-limited)
    // period, so a few back-to-back pairs remain
    assert!(
        paced * 5 < unpaced,
        "paced {paced} vs unpaced {unpaced} back-to-back pairs"
    );
}

#[test]
fn simultaneous_open() {
    let mut net = Net::default_pair(Duration::from_millis(10), 44);
    let now = net.now;
    let ha = net.a.connect(now, a_sock(7000), b_sock(8000)).unwrap();
    let hb = net.b.connect(now, b_sock(8000), a_sock(7000)).unwrap();
    net.run_for(Duration::from_millis(200));
    assert_eq!(net.a.conn(ha).unwrap().state(), State::Established);
    assert_eq!(net.b.conn(hb).unwrap().state(), State::Established);
    net.send_bulk(Side::A, ha, payload(50_000, 3), false);
    net.send_bulk(Side::B, hb, payload(40_000, 4), false);
    net.run_for(Duration::from_secs(1));
    assert!(net.received(Side::B, hb) == &payload(50_000, 3)[..]);
    assert!(net.received(Side::A, ha) == &payload(40_000, 4)[..]);
}

#[test]
fn abort_resets_the_peer() {
    let mut net = Net::default_pair(Duration::from_millis(10), 45);
    net.record_a = true;
    let h = net.connect(80);
    net.send_bulk(Side::A, h, payload(5_000_000, 5), false);
    net.run_for(Duration::from_millis(300));
    net.a.conn_mut(h).unwrap().abort();
    net.run_for(Duration::from_millis(100));
    assert!(net.sent_a.iter().any(|s| s.flags & RST != 0));
    let hb = net.accepted(80).unwrap();
    assert_eq!(
        net.events_of(Side::A, h).last().unwrap().1,
        Event::Closed(CloseReason::Aborted)
    );
    assert_eq!(
        net.events_of(Side::B, hb).last().unwrap().1,
        Event::Closed(CloseReason::Reset)
    );
    // late segments from A now get RSTs from B's stack, not a crash
    assert_eq!(net.b.connection_count(), 0);
}

#[test]
fn writable_and_readable_events() {
    let mut t = plain();
    t.send_buffer = 16 * 1024;
    let mut net = Net::new(
        stack_cfg(1, t),
        stack_cfg(2, plain()),
        Duration::from_millis(5),
        46,
    );
    let h = net.connect(80);
    net.run_for(Duration::from_millis(50));
    let c = net.a.conn_mut(h).unwrap();
    assert_eq!(c.write(&[0u8; 20_000]), 16 * 1024);
    assert_eq!(c.send_capacity(), 0);
    net.run_for(Duration::from_millis(200));
    let ev: Vec<Event> = net.events_of(Side::A, h).into_iter().map(|e| e.1).collect();
    assert!(ev.contains(&Event::Writable), "{ev:?}");
    let hb = net.accepted(80).unwrap();
    let evb: Vec<Event> = net
        .events_of(Side::B, hb)
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert!(evb.contains(&Event::Readable));
}

/// The TCP of the paper's ns-3 runs: IW 1, ssthresh 65 535, per-ACK
/// growth, 200 ms delayed ACKs, no window update on read (ka-sim's paper
/// profile), with or without `quick_ack_first_data`.
fn ns3_newreno(quick_ack_first_data: bool) -> ka_endpoint::TcpConfig {
    let mut t = plain();
    t.initial_window_segments = 1;
    t.initial_ssthresh = Some(65_535);
    t.byte_counting = false;
    t.delayed_ack = Some(Duration::from_millis(200));
    t.window_update_on_read = false;
    t.quick_ack_first_data = quick_ack_first_data;
    t
}

/// Time from `connect` until B has read a 2-segment transfer, RTT 100 ms,
/// no serialisation delay.
fn two_segment_transfer(tcp: ka_endpoint::TcpConfig) -> Duration {
    let mut net = Net::new(
        stack_cfg(1, tcp),
        stack_cfg(2, tcp),
        Duration::from_millis(50),
        43,
    );
    let h = net.connect(80);
    let len = 2 * 1448;
    net.send_bulk(Side::A, h, payload(len, 5), false);
    let t0 = net.now;
    // (the harness reads at its next step: count unread bytes as arrived)
    let done = net.run_until(Duration::from_secs(2), |n| {
        n.accepted(80).is_some_and(|b| {
            let unread = n.b.conn(b).map_or(0, |c| c.readable());
            n.received(Side::B, b).len() + unread == len
        })
    });
    assert!(done, "transfer incomplete");
    net.now - t0
}

#[test]
fn ns3_acknowledges_the_first_data_segment_at_once() {
    // ns-3's TcpSocketBase presets its delayed-ACK counter when the
    // handshake completes: SYN/SYN-ACK (1 RTT), segment 1 and its
    // immediate ACK (1 RTT), segment 2 (½ RTT) = 2.5 RTT.
    let fct = two_segment_transfer(ns3_newreno(true));
    assert_eq!(fct, Duration::from_millis(250));
    // Without it the first segment waits for the 200 ms delayed-ACK timer
    // (no window update on read acknowledges it either).
    let fct = two_segment_transfer(ns3_newreno(false));
    assert_eq!(fct, Duration::from_millis(450));
}

#[test]
fn congestion_window_counts_segments_without_their_options() {
    // SMSS excludes the options every data segment carries (RFC 5681 §2):
    // with timestamps a 1500-byte path carries 1448 bytes a segment, and
    // an initial window of one segment is 1448 bytes (ns-3's SegmentSize,
    // Linux's mss_cache), not the 1460 of the MSS option.
    for (timestamps, smss) in [(true, 1448), (false, 1460)] {
        let mut tcp = ns3_newreno(true);
        tcp.timestamps = timestamps;
        let mut net = Net::new(
            stack_cfg(1, tcp),
            stack_cfg(2, tcp),
            Duration::from_millis(10),
            44,
        );
        let h = net.connect(80);
        net.run_for(Duration::from_millis(50));
        let c = net.a.conn(h).unwrap();
        assert_eq!(c.state(), State::Established);
        assert_eq!(c.mss(), 1460);
        assert_eq!(c.stats().cwnd, smss, "timestamps {timestamps}");
    }
}

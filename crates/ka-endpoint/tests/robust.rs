//! RTO backoff after a blackout, RFC 5961 defences, bad input.
mod common;

use common::*;
use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::tcp::{ACK, RST, SYN, TcpPacket, TcpRepr};
use ka_endpoint::{CloseReason, Event, State};
use std::time::Duration;

#[test]
fn rto_backoff_and_recovery_after_3s_blackout() {
    let mut small = test_tcp();
    small.recv_buffer = 64 * 1024;
    let mut net = Net::new(
        stack_cfg(1, test_tcp()),
        stack_cfg(2, small),
        Duration::from_millis(10),
        31,
    );
    net.record_a = true;
    for p in [&mut net.ab, &mut net.ba] {
        p.impair.rate_bps = Some(20_000_000);
        p.impair.blackouts = vec![(Duration::from_secs(1), Duration::from_secs(4))];
    }
    let h = net.connect(80);
    let data = payload(6_000_000, 3);
    net.send_bulk(Side::A, h, data.clone(), false);
    let ok = net.run_until(Duration::from_secs(30), |n| {
        n.accepted(80)
            .is_some_and(|hb| n.received(Side::B, hb).len() == data.len())
    });
    assert!(ok);
    let hb = net.accepted(80).unwrap();
    assert!(net.received(Side::B, hb) == &data[..]);
    let st = net.a.conn(h).unwrap().stats();
    assert!(st.rtos >= 4, "{st:?}");
    // the segment at the head of the blackout is retransmitted with
    // exponentially growing gaps (200 ms minimum RTO, doubled each time)
    let base = net.base;
    let after: Vec<&Sent> = net
        .sent_a
        .iter()
        .filter(|s| s.at - base > Duration::from_secs(1) && s.tcp_payload > 0)
        .collect();
    let mut seqs = std::collections::HashMap::<u32, Vec<Duration>>::new();
    for s in &after {
        seqs.entry(s.seq).or_default().push(s.at - base);
    }
    let (_, times) = seqs.iter().max_by_key(|(_, v)| v.len()).unwrap();
    assert!(times.len() >= 4, "{times:?}");
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    for g in gaps.windows(2) {
        let ratio = g[1] / g[0];
        assert!((1.9..=2.1).contains(&ratio), "backoff gaps {gaps:?}");
    }
    assert!(gaps[0] >= 0.2, "{gaps:?}");
    // the last retransmission (after the blackout) got through, the
    // transfer recovered and the RTO is back to its base value
    let last = *times.last().unwrap();
    assert!(
        last >= Duration::from_secs(4) && last < Duration::from_secs(8),
        "{times:?}"
    );
    assert!(st.rto <= Duration::from_millis(250), "{:?}", st.rto);
    assert_eq!(net.a.conn(h).unwrap().state(), State::Established);
}

#[test]
fn connection_times_out_when_peer_vanishes() {
    let mut tcp = test_tcp();
    tcp.max_retransmits = 4;
    let mut net = Net::new(
        stack_cfg(1, tcp),
        stack_cfg(2, tcp),
        Duration::from_millis(10),
        32,
    );
    for p in [&mut net.ab, &mut net.ba] {
        p.impair.blackouts = vec![(Duration::from_millis(500), Duration::from_secs(3600))];
    }
    let h = net.connect(80);
    net.send_bulk(Side::A, h, payload(2_000_000, 4), false);
    net.run_for(Duration::from_secs(30));
    let ev = net.events_of(Side::A, h);
    assert_eq!(
        ev.last().map(|e| e.1),
        Some(Event::Closed(CloseReason::TimedOut))
    );
}

/// An established, idle connection A → B; returns (net, A handle, B handle,
/// A's next sequence number = B's rcv_nxt, B's next sequence number).
fn idle_pair() -> (
    Net,
    ka_endpoint::ConnHandle,
    ka_endpoint::ConnHandle,
    u32,
    u32,
) {
    let mut net = Net::default_pair(Duration::from_millis(5), 33);
    net.record_a = true;
    let h = net.connect(80);
    net.send_bulk(Side::A, h, payload(10_000, 1), false);
    net.run_for(Duration::from_secs(1));
    let hb = net.accepted(80).unwrap();
    assert_eq!(net.received(Side::B, hb).len(), 10_000);
    let last = net.sent_a.iter().rev().find(|s| s.tcp_payload > 0).unwrap();
    let a_nxt = last.seq.wrapping_add(last.tcp_payload as u32);
    // B's snd_nxt: the ack number A sends
    let b_nxt = net
        .sent_a
        .last()
        .map(|_| ())
        .and_then(|_| peer_ack(&net))
        .unwrap();
    (net, h, hb, a_nxt, b_nxt)
}

/// The acknowledgement number of A's latest segment.
fn peer_ack(net: &Net) -> Option<u32> {
    net.last_a_packet.as_ref().and_then(|p| {
        let ip = Ipv4Packet::new_checked(&p[..]).ok()?;
        Some(TcpPacket::new_checked(ip.payload()).ok()?.ack())
    })
}

/// A segment from A's 4-tuple to B's.
fn forge(
    net: &Net,
    h: ka_endpoint::ConnHandle,
    flags: u8,
    seq: u32,
    ack: u32,
    payload: &[u8],
) -> Vec<u8> {
    let c = net.a.conn(h).unwrap();
    let (l, r) = (c.local_addr(), c.remote_addr());
    let repr = TcpRepr::new(l.port(), r.port(), seq, ack, flags, 1000);
    TcpSegment {
        ident: 1,
        payload,
        ..TcpSegment::new(Addrs::V4([10, 0, 0, 1], [10, 0, 0, 2]), repr)
    }
    .to_vec()
    .unwrap()
}

/// What B sends right now (parsed TCP headers).
fn b_output(net: &mut Net) -> Vec<TcpRepr> {
    let mut out = vec![];
    let mut buf = vec![0u8; 2000];
    let now = net.now;
    while let Some(n) = net.b.poll_transmit(now, &mut buf) {
        let ip = Ipv4Packet::new_checked(&buf[..n]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        out.push(TcpRepr::parse(&tcp).unwrap());
    }
    out
}

#[test]
fn rfc5961_in_window_rst_gets_challenge_ack() {
    let (mut net, h, hb, a_nxt, b_nxt) = idle_pair();
    let now = net.now;
    let pkt = forge(&net, h, RST, a_nxt.wrapping_add(1000), 0, &[]);
    net.b.handle_packet(now, &pkt);
    let out = b_output(&mut net);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].flags & (ACK | RST), ACK);
    assert_eq!(out[0].ack, a_nxt);
    assert_eq!(out[0].seq, b_nxt);
    let c = net.b.conn(hb).unwrap();
    assert_eq!(c.state(), State::Established);
    assert_eq!(c.stats().challenge_acks, 1);
    // out of window: silently dropped
    let pkt = forge(&net, h, RST, a_nxt.wrapping_add(1 << 30), 0, &[]);
    net.b.handle_packet(now, &pkt);
    assert!(b_output(&mut net).is_empty());
    assert_eq!(net.b.conn(hb).unwrap().state(), State::Established);
    // exactly rcv_nxt: the connection is reset
    let pkt = forge(&net, h, RST, a_nxt, 0, &[]);
    net.b.handle_packet(now, &pkt);
    assert!(b_output(&mut net).is_empty());
    assert_eq!(net.b.conn(hb).unwrap().state(), State::Closed);
    let ev: Vec<_> = std::iter::from_fn(|| net.b.poll_event()).collect();
    assert!(ev.contains(&(hb, Event::Closed(CloseReason::Reset))));
}

#[test]
fn rfc5961_syn_in_synchronized_state_gets_challenge_ack() {
    let (mut net, h, hb, a_nxt, b_nxt) = idle_pair();
    let now = net.now;
    for seq in [a_nxt, a_nxt.wrapping_add(77), a_nxt.wrapping_sub(5000)] {
        let pkt = forge(&net, h, SYN, seq, 0, &[]);
        net.b.handle_packet(now, &pkt);
        let out = b_output(&mut net);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].flags, ACK);
        assert_eq!(out[0].ack, a_nxt);
        assert_eq!(out[0].seq, b_nxt);
        assert_eq!(net.b.conn(hb).unwrap().state(), State::Established);
    }
}

#[test]
fn rfc5961_unacceptable_ack_is_not_processed() {
    let (mut net, h, hb, a_nxt, b_nxt) = idle_pair();
    let now = net.now;
    // acknowledges data B never sent, and carries data: challenge ACK,
    // the data is not accepted
    let pkt = forge(&net, h, ACK, a_nxt, b_nxt.wrapping_add(100_000), b"evil");
    net.b.handle_packet(now, &pkt);
    let out = b_output(&mut net);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, a_nxt, "the payload was not accepted");
    assert_eq!(net.b.conn(hb).unwrap().readable(), 0);
    // a valid one is accepted
    let pkt = forge(&net, h, ACK, a_nxt, b_nxt, b"good");
    net.b.handle_packet(now, &pkt);
    assert_eq!(net.b.conn(hb).unwrap().readable(), 4);
}

#[test]
fn challenge_acks_are_rate_limited() {
    let (mut net, h, hb, a_nxt, _) = idle_pair();
    let now = net.now;
    let mut acks = 0;
    for i in 0..50u32 {
        let pkt = forge(&net, h, RST, a_nxt.wrapping_add(10 + i), 0, &[]);
        net.b.handle_packet(now, &pkt);
        acks += b_output(&mut net).len();
    }
    assert_eq!(acks, 10, "default budget is 10 per second");
    assert_eq!(net.b.conn(hb).unwrap().state(), State::Established);
}

#[test]
fn corrupted_segments_are_dropped() {
    let (mut net, h, hb, a_nxt, b_nxt) = idle_pair();
    let now = net.now;
    let mut pkt = forge(&net, h, ACK, a_nxt, b_nxt, b"data");
    let n = pkt.len();
    pkt[n - 1] ^= 0xff;
    net.b.handle_packet(now, &pkt);
    assert_eq!(net.b.stats().bad_checksum, 1);
    assert_eq!(net.b.conn(hb).unwrap().readable(), 0);
    // a broken IPv4 header checksum
    let mut pkt = forge(&net, h, ACK, a_nxt, b_nxt, b"data");
    pkt[8] ^= 1;
    net.b.handle_packet(now, &pkt);
    assert_eq!(net.b.stats().malformed, 1);
    let _ = Ipv4Packet::new_checked(&pkt[..]).unwrap();
}

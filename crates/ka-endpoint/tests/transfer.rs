//! Bulk transfers under loss, reordering, duplication and fragmentation.
mod common;

use common::*;
use ka_codec::scale::Code;
use ka_endpoint::{CcAlgorithm, CloseReason, Event};
use std::time::Duration;

fn lossy(net: &mut Net) {
    for p in [&mut net.ab, &mut net.ba] {
        p.impair.loss = 0.01;
        p.impair.dup = 0.01;
        p.impair.reorder = 0.02;
        p.impair.reorder_extra = Duration::from_millis(3);
        p.impair.rate_bps = Some(50_000_000);
    }
}

/// Sends `len` bytes A → B and checks they arrive byte-exact; returns the net.
fn transfer(mut net: Net, len: usize, max: Duration) -> Net {
    let h = net.connect(5001);
    let data = payload(len, 42);
    net.send_bulk(Side::A, h, data.clone(), true);
    let ok = net.run_until(max, |n| {
        n.accepted(5001)
            .is_some_and(|hb| n.received(Side::B, hb).len() >= data.len())
    });
    let hb = net.accepted(5001).expect("accepted");
    let got = net.received(Side::B, hb);
    assert!(
        ok,
        "only {} of {} bytes after {:?}",
        got.len(),
        len,
        net.elapsed()
    );
    assert!(got == &data[..], "payload corrupted");
    let st = net.a.conn(h).unwrap().stats();
    eprintln!("done at {:?}: {st:?}", net.elapsed());
    // and both sides close cleanly
    net.run_for(Duration::from_secs(3));
    let closed_a = net.events_of(Side::A, h).last().map(|e| e.1);
    assert_eq!(closed_a, Some(Event::Closed(CloseReason::Normal)));
    net
}

#[test]
fn five_mb_lossy_reordered_duplicated() {
    let mut net = Net::default_pair(Duration::from_millis(10), 11);
    lossy(&mut net);
    let net = transfer(net, 5_000_000, Duration::from_secs(60));
    assert!(
        net.dropped > 20,
        "the link dropped packets: {}",
        net.dropped
    );
}

#[test]
fn five_mb_lossy_with_fragmentation() {
    let mut net = Net::default_pair(Duration::from_millis(10), 12);
    lossy(&mut net);
    // every data packet is split (KA-style) before the lossy link, so
    // fragments are lost, reordered and duplicated independently
    net.ab.hops.push(Hop::Stamp(Code::from_len(600).unwrap()));
    let net = transfer(net, 5_000_000, Duration::from_secs(60));
    let r = net.b.reassembler().stats();
    assert!(r.completed > 3000, "{r:?}");
    assert!(r.duplicates > 10, "{r:?}");
    // lost tails leave incomplete datagrams that expire or are evicted
    assert!(net.b.reassembler().memory() <= 4 << 20);
}

#[test]
fn two_mb_lossy_without_sack() {
    let mut tcp = test_tcp();
    tcp.sack = false;
    let mut net = Net::new(
        stack_cfg(1, tcp),
        stack_cfg(2, tcp),
        Duration::from_millis(10),
        13,
    );
    lossy(&mut net);
    let net = transfer(net, 2_000_000, Duration::from_secs(60));
    let h = net.a.handles().next();
    assert!(h.is_none(), "connection closed and removed");
}

#[test]
fn two_mb_lossy_cubic_without_timestamps() {
    let mut tcp = test_tcp();
    tcp.cc = CcAlgorithm::Cubic;
    tcp.timestamps = false;
    let mut net = Net::new(
        stack_cfg(1, tcp),
        stack_cfg(2, tcp),
        Duration::from_millis(10),
        14,
    );
    lossy(&mut net);
    transfer(net, 2_000_000, Duration::from_secs(60));
}

#[test]
fn bidirectional_transfer() {
    let mut net = Net::default_pair(Duration::from_millis(5), 15);
    lossy(&mut net);
    let h = net.connect(7);
    let up = payload(1_000_000, 1);
    let down = payload(700_000, 2);
    net.send_bulk(Side::A, h, up.clone(), true);
    net.run_until(Duration::from_secs(1), |n| n.accepted(7).is_some());
    let hb = net.accepted(7).unwrap();
    net.send_bulk(Side::B, hb, down.clone(), false);
    let ok = net.run_until(Duration::from_secs(30), |n| {
        n.received(Side::B, hb).len() == up.len() && n.received(Side::A, h).len() == down.len()
    });
    assert!(ok);
    assert!(net.received(Side::B, hb) == &up[..]);
    assert!(net.received(Side::A, h) == &down[..]);
}

#[test]
fn zero_window_then_reader_resumes() {
    let mut tcp = test_tcp();
    tcp.recv_buffer = 64 * 1024;
    let mut net = Net::new(
        stack_cfg(1, test_tcp()),
        stack_cfg(2, tcp),
        Duration::from_millis(10),
        16,
    );
    net.auto_read = false;
    let h = net.connect(9);
    let data = payload(300_000, 3);
    net.send_bulk(Side::A, h, data.clone(), true);
    net.run_for(Duration::from_secs(3));
    let hb = net.accepted(9).unwrap();
    // receiver buffer full, sender stuck on a zero window but still alive
    let readable = net.b.conn(hb).unwrap().readable();
    assert!(
        readable > 64 * 1024 - 2 && readable <= 64 * 1024,
        "{readable}"
    );
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.snd_wnd, 0);
    assert_eq!(st.bytes_acked, readable as u64);
    let probes_before = net.a.conn(h).unwrap().stats().segments_sent;
    net.run_for(Duration::from_secs(5));
    assert!(
        net.a.conn(h).unwrap().stats().segments_sent > probes_before,
        "window probes sent"
    );
    assert_eq!(
        net.a.conn(h).unwrap().stats().rtos,
        0,
        "probes are not congestion"
    );
    net.auto_read = true;
    let ok = net.run_until(Duration::from_secs(20), |n| {
        n.received(Side::B, hb).len() == data.len()
    });
    assert!(ok, "got {}", net.received(Side::B, hb).len());
    assert!(net.received(Side::B, hb) == &data[..]);
}

#[test]
fn ipv6_lossy_with_fragmentation_and_ka_signal() {
    let mut net = Net::default_pair(Duration::from_millis(10), 17);
    lossy(&mut net);
    let code = Code::from_len(800).unwrap();
    net.ab.hops.push(Hop::Stamp6(code, 0));
    net.b.listen(6000);
    let now = net.now;
    let a: std::net::SocketAddr = "[fd00::1]:0".parse().unwrap();
    let b: std::net::SocketAddr = "[fd00::2]:6000".parse().unwrap();
    let h = net.a.connect(now, a, b).unwrap();
    let data = payload(2_000_000, 9);
    net.send_bulk(Side::A, h, data.clone(), false);
    let ok = net.run_until(Duration::from_secs(60), |n| {
        n.accepted(6000)
            .is_some_and(|hb| n.received(Side::B, hb).len() == data.len())
    });
    assert!(ok);
    let hb = net.accepted(6000).unwrap();
    assert!(net.received(Side::B, hb) == &data[..]);
    let c = net.a.conn(h).unwrap();
    assert_eq!(c.mss(), 1440);
    let st = c.stats();
    // the receiver recorded leading fragments (before reassembly) and the
    // sender got the rate R(800) back
    assert!(net.b.conn(hb).unwrap().stats().ka_fragments_seen > 1000);
    assert!(net.b.stats().leading_fragments > 1000);
    assert_eq!(st.ka_rate, Some(ka_codec::scale::Scale::PAPER.decode(code)));
    assert!(st.mode_changes >= 1);
    assert!(net.b.reassembler().stats().completed > 1000);
}

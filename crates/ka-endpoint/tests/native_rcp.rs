//! The native-RCP carrier (DESIGN §7.1, the paper's RCP baseline): IPv4 RCP
//! option on SYN and data, RCP-Echo back, the KA mode machine on top of it,
//! against a real native-RCP router port.
mod common;

use common::*;
use ka_codec::RcpOption;
use ka_codec::rcp_option;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::tcp::{SYN, TcpPacket};
use ka_endpoint::{Event, Mode, ModeReason};
use ka_router::{PortConfig, Signalling};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

const ONE_WAY: Duration = Duration::from_millis(20);
const C: u64 = 10_000_000;

/// What A's packets looked like as they entered the path.
#[derive(Debug, Clone, Copy)]
struct Seen {
    at: Instant,
    len: usize,
    syn: bool,
    payload: usize,
    option: Option<RcpOption>,
}

fn seen(at: Instant, pkt: &[u8]) -> Seen {
    let ip = Ipv4Packet::new_checked(pkt).unwrap();
    let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
    Seen {
        at,
        len: ip.total_len(),
        syn: tcp.flags() & SYN != 0,
        payload: tcp.payload().len(),
        option: rcp_option::find_in(ip.options()).unwrap().map(|(_, o)| o),
    }
}

fn rcp_tcp() -> ka_endpoint::TcpConfig {
    let mut t = test_tcp();
    t.ka.native_rcp = true;
    t
}

/// A (native RCP) → RCP router port → B (KA receiver); A's packets are
/// recorded before the port.
fn rcp_net(a: ka_endpoint::TcpConfig, b: ka_endpoint::TcpConfig) -> (Net, Rc<RefCell<Vec<Seen>>>) {
    let mut net = Net::new(stack_cfg(1, a), stack_cfg(2, b), ONE_WAY, 7);
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    net.ab.hops.push(Hop::Filter(Box::new(move |at, pkt| {
        l.borrow_mut().push(seen(at, pkt));
        false
    })));
    let mut pc = PortConfig::new(C);
    pc.signalling = Signalling::NATIVE_RCP;
    let now = net.now;
    net.ab.hops.push(Hop::port(pc, now));
    (net, log)
}

fn port(net: &Net) -> &ka_router::Port {
    match &net.ab.hops[1] {
        Hop::Port(p) => p,
        _ => panic!("hop 1 is not a port"),
    }
}

#[test]
fn rate_known_from_the_syn_ack_and_paced_from_the_first_segment() {
    let (mut net, log) = rcp_net(rcp_tcp(), test_tcp());
    let h = net.connect(5001);
    // 6 MB take about 5 s at C: the transfer is still running at 4 s, when
    // the checks look (a finished, idle sender leaves KA mode by silence).
    net.send_bulk(Side::A, h, payload(6_000_000, 1), false);
    net.run_for(Duration::from_secs(4));

    let a = net.a.conn(h).unwrap();
    assert!(a.ka_enabled() && a.native_rcp());
    let b = net.b.conn(net.accepted(5001).unwrap()).unwrap();
    assert!(b.native_rcp());
    assert!(b.stats().rcp_options_seen > 100);
    assert_eq!(b.stats().ka_fragments_seen, 0);

    // The SYN carries the option with "as much as possible" and no RTT yet.
    let log = log.borrow();
    let syn = log.first().unwrap();
    assert!(syn.syn);
    let o = syn.option.unwrap();
    assert_eq!((o.rate_bytes_per_sec, o.rtt_ms), (u32::MAX, 0));

    // KA mode (signal from the SYN-ACK) before the first data segment.
    let first_data = log.iter().find(|s| s.payload > 0).unwrap();
    let changes: Vec<_> = net
        .events_of(Side::A, h)
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::ModeChanged(m) => Some((t, m)),
            _ => None,
        })
        .collect();
    let (t, m) = changes.first().unwrap();
    assert_eq!((m.to, m.reason), (Mode::Ka, ModeReason::Signal));
    assert!(*t <= first_data.at);

    // Data segments carry the option with A's srtt; full packets are
    // exactly the MTU (the MSS leaves room for the 8 option bytes).
    let data: Vec<&Seen> = log.iter().filter(|s| s.payload > 0).collect();
    assert!(data.iter().all(|s| s.option.is_some()));
    let rtt = data.last().unwrap().option.unwrap().rtt_ms;
    assert!((40..=60).contains(&rtt), "rtt field {rtt}");
    assert_eq!(data.iter().map(|s| s.len).max(), Some(1500));

    // The router learned d from the options, not its 100 ms default.
    let d = port(&net).rtt();
    assert!(
        d > Duration::from_millis(35) && d < Duration::from_millis(70),
        "d = {d:?}"
    );

    // A paces at the router's R.
    let r = port(&net).snapshot().rate_bytes_per_ms;
    let mine = net.a.conn(h).unwrap().stats().ka_rate.unwrap();
    assert!((mine - r).abs() / r < 0.05, "sender {mine} vs router {r}");
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
}

#[test]
fn pure_acks_and_non_rcp_peers_carry_no_option() {
    // B without KA: A offers RCP-Permitted, B ignores it → plain TCP, and
    // after the SYN nothing carries the option.
    let mut plain = test_tcp();
    plain.ka.enabled = false;
    let (mut net, log) = rcp_net(rcp_tcp(), plain);
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(200_000, 2), true);
    net.run_for(Duration::from_secs(3));
    assert!(!net.a.conn(h).is_some_and(|c| c.ka_enabled()));
    let log = log.borrow();
    assert!(log.first().unwrap().option.is_some(), "the SYN offers");
    assert!(log.iter().skip(1).all(|s| s.option.is_none()));
    assert!(log.iter().any(|s| s.payload > 0));
    assert_eq!(
        net.received(Side::B, net.accepted(5001).unwrap()).len(),
        200_000
    );

    // KA on both sides without native RCP: KA, and no RCP option anywhere.
    let (mut net, log) = rcp_net(test_tcp(), test_tcp());
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(100_000, 3), true);
    net.run_for(Duration::from_secs(2));
    assert!(log.borrow().iter().all(|s| s.option.is_none()));
    let _ = h;
}

#[test]
fn receiver_echoes_each_rate_once() {
    let (mut net, log) = rcp_net(rcp_tcp(), test_tcp());
    // B's packets, parsed on the way back: (has RCP-Echo, has KA-Rate).
    let acks = Rc::new(RefCell::new(Vec::new()));
    let l = acks.clone();
    net.ba.hops.push(Hop::Filter(Box::new(move |_, pkt| {
        let ip = Ipv4Packet::new_checked(pkt).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        let o = ka_codec::wire::tcp::TcpOptions::parse(tcp.options()).unwrap();
        l.borrow_mut()
            .push((o.rcp_echo.is_some(), o.ka_rate.is_some()));
        false
    })));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(500_000, 4), false);
    net.run_for(Duration::from_secs(3));
    let b = net.accepted(5001).unwrap();
    assert_eq!(net.received(Side::B, b).len(), 500_000);
    let data = log.borrow().iter().filter(|s| s.payload > 0).count();
    let acks = acks.borrow();
    let echoes = acks.iter().filter(|a| a.0).count();
    // One echo per data packet that carried a lowered rate (plus the
    // SYN-ACK's), never a KA-Rate; ACKs without a new rate carry none.
    assert_eq!(echoes, data + 1);
    assert!(acks.iter().all(|a| !a.1));
    assert_eq!(
        net.b.conn(b).unwrap().stats().rcp_options_seen as usize,
        data + 1
    );
    assert_eq!(
        net.a.conn(h).unwrap().stats().ka_signals_fresh as usize,
        echoes
    );
}

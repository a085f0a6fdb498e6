//! Handshake and option negotiation, with and without KA on either side.
mod common;

use common::*;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::tcp::{SYN, TcpOptions, TcpPacket};
use ka_endpoint::{CloseReason, Event, State};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

#[derive(Default, Debug)]
struct Seen {
    syn_ka_permitted: Vec<bool>,
    non_syn_with_ka_option: usize,
    non_syn_with_ka_rate: usize,
    total: usize,
}

/// A hop that records the options of every TCP segment passing.
fn spy(seen: Rc<RefCell<Seen>>) -> Hop {
    Hop::Filter(Box::new(move |_, pkt| {
        let ip = Ipv4Packet::new_checked(pkt).unwrap();
        if ip.is_fragment() {
            return false;
        }
        if let Ok(tcp) = TcpPacket::new_checked(ip.payload()) {
            let o = TcpOptions::parse(tcp.options()).unwrap();
            let mut s = seen.borrow_mut();
            s.total += 1;
            if tcp.flags() & SYN != 0 {
                s.syn_ka_permitted.push(o.ka_permitted);
            } else {
                if o.ka_permitted || o.ka_rate.is_some() {
                    s.non_syn_with_ka_option += 1;
                }
                if o.ka_rate.is_some() {
                    s.non_syn_with_ka_rate += 1;
                }
            }
        }
        false
    }))
}

fn run_pair(a_ka: bool, b_ka: bool) -> (Net, Rc<RefCell<Seen>>, Rc<RefCell<Seen>>) {
    let mut ta = test_tcp();
    ta.ka.enabled = a_ka;
    let mut tb = test_tcp();
    tb.ka.enabled = b_ka;
    let mut net = Net::new(
        stack_cfg(1, ta),
        stack_cfg(2, tb),
        Duration::from_millis(10),
        7,
    );
    let seen_ab = Rc::new(RefCell::new(Seen::default()));
    let seen_ba = Rc::new(RefCell::new(Seen::default()));
    // a fixed-rate "KA router" on the path so that KA-Rate would flow if on
    net.ab.hops.push(spy(seen_ab.clone()));
    net.ab
        .hops
        .push(Hop::Stamp(ka_codec::scale::Code::from_len(800).unwrap()));
    net.ba.hops.push(spy(seen_ba.clone()));
    let h = net.connect(80);
    let data = payload(200_000, 1);
    net.send_bulk(Side::A, h, data.clone(), true);
    let ok = net.run_until(Duration::from_secs(10), |n| {
        n.accepted(80)
            .is_some_and(|hb| n.received(Side::B, hb).len() == data.len())
    });
    assert!(ok, "transfer incomplete");
    let hb = net.accepted(80).unwrap();
    assert_eq!(net.received(Side::B, hb), &data[..]);
    (net, seen_ab, seen_ba)
}

#[test]
fn handshake_both_ka() {
    let (net, ab, ba) = run_pair(true, true);
    let ha = net.a.handles().next().unwrap();
    let hb = net.accepted(80).unwrap();
    assert!(net.a.conn(ha).unwrap().ka_enabled());
    assert!(net.b.conn(hb).unwrap().ka_enabled());
    assert_eq!(ab.borrow().syn_ka_permitted, vec![true]);
    assert_eq!(ba.borrow().syn_ka_permitted, vec![true]);
    // the receiver echoes KA-Rate; KA-Permitted never appears after the SYNs
    assert!(ba.borrow().non_syn_with_ka_rate > 10);
    assert_eq!(
        ba.borrow().non_syn_with_ka_option,
        ba.borrow().non_syn_with_ka_rate
    );
    // the sender saw the signal
    let st = net.a.conn(ha).unwrap().stats();
    assert!(st.ka_signals_fresh > 0);
    assert!(net.b.conn(hb).unwrap().stats().ka_fragments_seen > 10);
}

#[test]
fn handshake_client_without_ka() {
    let (net, ab, ba) = run_pair(false, true);
    let hb = net.accepted(80).unwrap();
    assert!(!net.b.conn(hb).unwrap().ka_enabled());
    assert_eq!(ab.borrow().syn_ka_permitted, vec![false]);
    // the server must not offer KA in its SYN-ACK when the SYN lacked it
    assert_eq!(ba.borrow().syn_ka_permitted, vec![false]);
    assert_eq!(ab.borrow().non_syn_with_ka_option, 0);
    assert_eq!(ba.borrow().non_syn_with_ka_option, 0);
}

#[test]
fn handshake_server_without_ka() {
    let (net, ab, ba) = run_pair(true, false);
    let ha = net.a.handles().next().unwrap();
    assert!(!net.a.conn(ha).unwrap().ka_enabled());
    assert_eq!(ab.borrow().syn_ka_permitted, vec![true]);
    assert_eq!(ba.borrow().syn_ka_permitted, vec![false]);
    assert_eq!(ab.borrow().non_syn_with_ka_option, 0);
    assert_eq!(ba.borrow().non_syn_with_ka_option, 0);
    // plain TCP: the sender never leaves TCP mode
    assert_eq!(net.a.conn(ha).unwrap().stats().mode_changes, 0);
}

#[test]
fn orderly_close_both_sides() {
    let (mut net, _, _) = run_pair(true, true);
    let ha = net.a.handles().next().unwrap();
    let hb = net.accepted(80).unwrap();
    net.run_for(Duration::from_secs(2));
    let a_ev = net.events_of(Side::A, ha);
    let b_ev = net.events_of(Side::B, hb);
    assert_eq!(a_ev.first().map(|e| e.1), Some(Event::Connected));
    assert_eq!(
        a_ev.last().map(|e| e.1),
        Some(Event::Closed(CloseReason::Normal))
    );
    assert_eq!(
        b_ev.last().map(|e| e.1),
        Some(Event::Closed(CloseReason::Normal))
    );
    assert!(b_ev.iter().any(|e| e.1 == Event::PeerFin));
    // both connections are gone from the stacks
    assert_eq!(net.a.connection_count(), 0);
    assert_eq!(net.b.connection_count(), 0);
}

#[test]
fn negotiated_options() {
    let (net, _, _) = run_pair(true, true);
    let ha = net.a.handles().next().unwrap();
    let c = net.a.conn(ha).unwrap();
    // MSS 1460 (1500 MTU, IPv4)
    assert_eq!(c.mss(), 1460);
    assert!(matches!(
        c.state(),
        State::FinWait1 | State::FinWait2 | State::TimeWait
    ));
    assert!(c.stats().srtt.unwrap() >= Duration::from_millis(20));
}

#[test]
fn connect_to_closed_port_is_refused() {
    let mut net = Net::default_pair(Duration::from_millis(5), 3);
    let now = net.now;
    let h = net.a.connect(now, a_sock(0), b_sock(9)).unwrap();
    net.run_for(Duration::from_secs(1));
    let ev = net.events_of(Side::A, h);
    assert_eq!(
        ev.last().map(|e| e.1),
        Some(Event::Closed(CloseReason::Refused))
    );
    assert_eq!(net.b.stats().rsts_sent, 1);
}

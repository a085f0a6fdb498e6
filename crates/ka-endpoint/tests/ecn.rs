//! ECN (RFC 3168, DESIGN §6.4): negotiation, ECT on data, the receiver's
//! ECE/CWR handshake, the sender's once-per-window reaction in TCP mode and
//! the end of KA mode on an echo. Marks are made on the harness's path with
//! `ka_codec::wire::ecn::mark_ce` (the `Hop::Mark` stage).
mod common;

use common::*;
use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::ecn::Ecn;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::tcp::{ACK, CWR, ECE, SYN, TcpOptions, TcpPacket, TcpRepr};
use ka_endpoint::{
    CcAlgorithm, ConnHandle, EcnMode, Event, LeftBy, Mode, ModeReason, Stack, TcpConfig,
};
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

const ONE_WAY: Duration = Duration::from_millis(20);
const RTT: Duration = Duration::from_millis(40);

/// Plain TCP (no KA) with the given ECN policy.
fn tcp(ecn: EcnMode) -> TcpConfig {
    let mut t = test_tcp();
    t.ka.enabled = false;
    t.ecn = ecn;
    t
}

fn pair(a: TcpConfig, b: TcpConfig, seed: u64) -> Net {
    let mut net = Net::new(stack_cfg(1, a), stack_cfg(2, b), ONE_WAY, seed);
    net.record_a = true;
    net.record_b = true;
    net
}

fn is_syn(s: &Sent) -> bool {
    s.flags & SYN != 0
}

/// Whether `a` comes before `b` in sequence space.
fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// A connects, then both sides send 100 kB; returns both handles.
fn exchange(net: &mut Net) -> (ConnHandle, ConnHandle) {
    let h = net.connect(80);
    net.send_bulk(Side::A, h, payload(100_000, 1), false);
    assert!(net.run_until(Duration::from_secs(5), |n| n.accepted(80).is_some()));
    let hb = net.accepted(80).unwrap();
    net.send_bulk(Side::B, hb, payload(100_000, 2), false);
    let done = net.run_until(Duration::from_secs(10), |n| {
        n.received(Side::B, hb).len() == 100_000 && n.received(Side::A, h).len() == 100_000
    });
    assert!(done, "transfer incomplete");
    (h, hb)
}

/// Every packet after the handshake: ECT(0) exactly on data when ECN is
/// on, never ECE or CWR (nothing was marked), SYNs Not-ECT.
fn check_codepoints(net: &Net, ecn: bool) {
    for (side, sent) in [("A", &net.sent_a), ("B", &net.sent_b)] {
        let data = sent.iter().filter(|s| s.tcp_payload > 0).count();
        assert!(data > 50, "{side} sent data");
        for s in sent {
            let want = if ecn && s.tcp_payload > 0 && !is_syn(s) {
                Ecn::Ect0
            } else {
                Ecn::NotEct
            };
            assert_eq!(s.ecn, want, "{side}: {s:?}");
            if !is_syn(s) {
                assert_eq!(s.flags & (ECE | CWR), 0, "{side}: {s:?}");
            }
        }
    }
}

#[test]
fn negotiation_matrix() {
    use EcnMode::*;
    // (active, passive, agreed)
    let cases = [
        (On, On, true),
        (On, Accept, true),
        (On, Off, false),
        (Accept, On, false),
        (Accept, Accept, false),
        (Off, On, false),
    ];
    for (i, (a, b, agreed)) in cases.into_iter().enumerate() {
        let mut net = pair(tcp(a), tcp(b), 10 + i as u64);
        let (h, hb) = exchange(&mut net);
        let ctx = format!("{a:?} -> {b:?}");
        let syn = net.sent_a.iter().find(|s| is_syn(s)).unwrap();
        let synack = net.sent_b.iter().find(|s| is_syn(s)).unwrap();
        let want_syn = if a == On { ECE | CWR } else { 0 };
        assert_eq!(syn.flags & (ECE | CWR), want_syn, "{ctx}: ECN-setup SYN");
        let want_synack = if agreed { ECE } else { 0 };
        assert_eq!(
            synack.flags & (ECE | CWR),
            want_synack,
            "{ctx}: ECN-setup SYN-ACK is ECE without CWR"
        );
        let ca = net.a.conn(h).unwrap();
        let cb = net.b.conn(hb).unwrap();
        assert_eq!(
            (ca.ecn_enabled(), cb.ecn_enabled()),
            (agreed, agreed),
            "{ctx}"
        );
        assert_eq!((ca.stats().ecn, cb.stats().ecn), (agreed, agreed), "{ctx}");
        check_codepoints(&net, agreed);
    }
}

/// A hop dropping the first SYN (or SYN-ACK) that passes.
fn drop_first_syn(dropped: Rc<Cell<bool>>) -> Hop {
    Hop::Filter(Box::new(move |_, pkt| {
        let ip = Ipv4Packet::new_checked(pkt).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        let first_syn = tcp.flags() & SYN != 0 && !dropped.get();
        dropped.set(dropped.get() || first_syn);
        first_syn
    }))
}

/// The first ECN-setup SYN, or the first SYN-ACK, is lost: the SYN
/// retransmission goes without ECE and CWR (RFC 3168 §6.1.1.1), and the
/// connection runs without ECN on both sides.
#[test]
fn syn_retransmission_falls_back_to_no_ecn() {
    for lose_synack in [false, true] {
        let mut net = pair(tcp(EcnMode::On), tcp(EcnMode::On), 20);
        let dropped = Rc::new(Cell::new(false));
        let path = if lose_synack {
            &mut net.ba
        } else {
            &mut net.ab
        };
        path.hops.push(drop_first_syn(dropped.clone()));
        let (h, hb) = exchange(&mut net);
        assert!(dropped.get());
        let flags = |sent: &[Sent]| -> Vec<u8> {
            sent.iter()
                .filter(|s| is_syn(s))
                .map(|s| s.flags & (ECE | CWR))
                .collect()
        };
        assert_eq!(
            flags(&net.sent_a),
            vec![ECE | CWR, 0],
            "ECN-setup, then plain"
        );
        let synacks = flags(&net.sent_b);
        if lose_synack {
            // the first answered the ECN-setup SYN, the second the plain one
            assert_eq!(synacks, vec![ECE, 0]);
        } else {
            assert_eq!(synacks, vec![0]);
        }
        assert!(!net.a.conn(h).unwrap().ecn_enabled());
        assert!(!net.b.conn(hb).unwrap().ecn_enabled());
        check_codepoints(&net, false);
    }
}

/// A SYN-ACK crafted by hand for the SYN `syn` (an IPv4 packet from A).
fn synack_for(syn: &[u8], flags: u8) -> Vec<u8> {
    let ip = Ipv4Packet::new_checked(syn).unwrap();
    let t = TcpRepr::parse(&TcpPacket::new_checked(ip.payload()).unwrap()).unwrap();
    let repr = TcpRepr {
        src_port: t.dst_port,
        dst_port: t.src_port,
        seq: 77_000,
        ack: t.seq.wrapping_add(1),
        flags: SYN | ACK | flags,
        window: 65_535,
        urgent: 0,
        options: TcpOptions {
            mss: Some(1460),
            ..TcpOptions::default()
        },
    };
    TcpSegment {
        ident: 1,
        dont_frag: true,
        ..TcpSegment::new(Addrs::V4(ip.dst_addr(), ip.src_addr()), repr)
    }
    .to_vec()
    .unwrap()
}

/// The SYN-ACK decides: ECE alone is ECN-setup; ECE with CWR (a peer or
/// middlebox reflecting the SYN's bits) and no bits at all are not, and
/// then no data goes out ECN-capable.
#[test]
fn active_open_needs_an_ecn_setup_syn_ack() {
    for (bits, agreed) in [(ECE, true), (ECE | CWR, false), (0, false)] {
        let t0 = Instant::now();
        let mut a = Stack::new(stack_cfg(1, tcp(EcnMode::On)), t0);
        let h = a.connect(t0, a_sock(0), b_sock(80)).unwrap();
        let mut buf = vec![0u8; 2048];
        let n = a.poll_transmit(t0, &mut buf).unwrap();
        let syn = buf[..n].to_vec();
        assert_eq!(describe(t0, &syn, None).flags & (ECE | CWR), ECE | CWR);
        let t1 = t0 + RTT;
        a.handle_packet(t1, &synack_for(&syn, bits));
        let c = a.conn_mut(h).unwrap();
        assert_eq!(c.state(), ka_endpoint::State::Established);
        assert_eq!(c.ecn_enabled(), agreed, "SYN-ACK bits {bits:#x}");
        c.write(&[5u8; 3000]);
        let mut data = 0;
        while let Some(n) = a.poll_transmit(t1, &mut buf) {
            let s = describe(t1, &buf[..n], None);
            if s.tcp_payload > 0 {
                data += 1;
                let want = if agreed { Ecn::Ect0 } else { Ecn::NotEct };
                assert_eq!(s.ecn, want, "SYN-ACK bits {bits:#x}");
            }
        }
        assert!(data >= 2);
    }
}

/// Shared state of an on-demand marking stage.
#[derive(Default)]
struct Marker {
    /// Mark data packets sent in `[from, from + len)`.
    window: Cell<Option<(Instant, Duration)>>,
    /// Mark the next data packet only.
    one: Cell<bool>,
    marked: Cell<u64>,
    /// Send time and sequence number of the last packet marked.
    last: Cell<Option<(Instant, u32)>>,
}

/// A marking stage on A → B for data packets (more than 1000 bytes).
fn marker(net: &mut Net) -> Rc<Marker> {
    let m = Rc::new(Marker::default());
    let mm = m.clone();
    net.ab.hops.push(Hop::Mark(Box::new(move |at, pkt| {
        if pkt.len() <= 1000 {
            return false;
        }
        let in_window = mm
            .window
            .get()
            .is_some_and(|(from, len)| at >= from && at < from + len);
        let one = mm.one.replace(false);
        if in_window || one {
            mm.marked.set(mm.marked.get() + 1);
            mm.last.set(Some((at, describe(at, pkt, None).seq)));
        }
        in_window || one
    })));
    m
}

/// A bulk TCP flow in congestion avoidance (ssthresh 64 kB) over a lossless
/// 40 ms path with a 20 Mbit/s link (BDP 100 kB, so ACKs are clocked by
/// the link and the flow is window-limited), ECN on both ends.
fn ca_flow(cc: CcAlgorithm, seed: u64) -> (Net, ConnHandle, Rc<Marker>) {
    let mut t = tcp(EcnMode::On);
    t.cc = cc;
    t.initial_ssthresh = Some(64_000);
    let mut net = pair(t, t, seed);
    net.ab.impair.rate_bps = Some(20_000_000);
    let m = marker(&mut net);
    let h = net.connect(80);
    net.send_bulk(Side::A, h, payload(40_000_000, 3), false);
    net.run_for(Duration::from_secs(1));
    assert!(net.a.conn(h).unwrap().ecn_enabled());
    (net, h, m)
}

/// A burst of CE marks (half an RTT of data) costs exactly one window
/// reduction, by the controller's factor, without any retransmission.
fn one_reduction_for_a_burst(cc: CcAlgorithm, factor: f64) {
    let (mut net, h, m) = ca_flow(cc, 30);
    m.window.set(Some((net.now, Duration::from_millis(20))));
    let mut prev = net.a.conn(h).unwrap().stats();
    assert_eq!(prev.ece_reactions, 0);
    let mut reaction = None;
    net.run_for_with(Duration::from_secs(2), |n| {
        let st = n.a.conn(h).unwrap().stats();
        if st.ece_reactions > prev.ece_reactions && reaction.is_none() {
            reaction = Some((prev.cwnd, st.cwnd, st.ssthresh));
        }
        prev = st;
    });
    let st = net.a.conn(h).unwrap().stats();
    let hb = net.accepted(80).unwrap();
    let rx = net.b.conn(hb).unwrap().stats();
    assert!(m.marked.get() >= 10, "{} marks", m.marked.get());
    assert_eq!(rx.ce_received, m.marked.get(), "every mark seen");
    assert!(
        st.ece_received >= 2,
        "the echo repeats: {}",
        st.ece_received
    );
    assert_eq!(st.ece_reactions, 1, "one reduction for one window");
    assert_eq!(st.cwr_sent, 1);
    assert_eq!((st.retransmits, st.fast_retransmits, st.rtos), (0, 0, 0));
    let (before, after, ssthresh) = reaction.unwrap();
    assert_eq!(after, ssthresh);
    let ratio = after as f64 / before as f64;
    assert!(
        (ratio - factor).abs() < 0.05,
        "{cc:?}: cwnd {before} -> {after} ({ratio:.3}, want {factor})"
    );
}

#[test]
fn ce_burst_halves_newreno_once() {
    one_reduction_for_a_burst(CcAlgorithm::NewReno, 0.5);
}

#[test]
fn ce_burst_reduces_cubic_by_beta_once() {
    one_reduction_for_a_burst(CcAlgorithm::Cubic, 0.7);
}

/// Every data packet marked for a second: the sender reduces once per
/// round trip — never twice within one, and again in every one.
#[test]
fn persistent_marking_reduces_once_per_rtt() {
    let (mut net, h, m) = ca_flow(CcAlgorithm::NewReno, 31);
    let start = net.now;
    m.window.set(Some((start, Duration::from_secs(1))));
    let mut reactions: Vec<Instant> = vec![];
    let mut count = 0;
    net.run_for_with(Duration::from_millis(1100), |n| {
        let st = n.a.conn(h).unwrap().stats();
        if st.ece_reactions > count {
            assert_eq!(st.ece_reactions, count + 1, "two reductions at one instant");
            count = st.ece_reactions;
            reactions.push(n.now);
        }
    });
    let st = net.a.conn(h).unwrap().stats();
    assert!(st.ece_received >= 2 * st.ece_reactions, "{st:?}");
    assert_eq!(st.retransmits, 0);
    let gaps: Vec<Duration> = reactions.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|&g| g >= RTT && g <= 3 * RTT),
        "reductions {:?} apart",
        gaps
    );
    assert!(reactions.len() >= 10, "{} reductions", reactions.len());
    let last = *reactions.last().unwrap();
    assert!(last - start >= Duration::from_millis(900));
}

/// RFC 3168 §6.1: one CE mark; the receiver sets ECE on every ACK from the
/// one for the marked segment until the CWR segment arrives, and on none
/// after; the sender reacts to the first ECE and puts CWR on its first new
/// data segment after that. (Delivery is in order and lossless, so B's
/// acknowledgement number tells which of A's segments it had received.)
#[test]
fn ece_until_cwr_and_cwr_on_next_new_data() {
    let (mut net, h, m) = ca_flow(CcAlgorithm::NewReno, 32);
    m.one.set(true);
    net.run_for(Duration::from_secs(1));
    let hb = net.accepted(80).unwrap();
    let (_, mark_seq) = m.last.get().unwrap();
    assert_eq!(m.marked.get(), 1);
    let acks_b: Vec<&Sent> = net
        .sent_b
        .iter()
        .filter(|s| s.flags & ACK != 0 && !is_syn(s))
        .collect();
    let first_ece = acks_b.iter().find(|s| s.flags & ECE != 0).unwrap();
    assert!(seq_lt(mark_seq, first_ece.ack), "echo only after the mark");

    // the sender's CWR
    let cwrs: Vec<&Sent> = net
        .sent_a
        .iter()
        .filter(|s| s.flags & CWR != 0 && !is_syn(s))
        .collect();
    assert_eq!(cwrs.len(), 1, "{cwrs:?}");
    let cwr = cwrs[0];
    let ece_at_a = first_ece.at + ONE_WAY;
    assert!(cwr.at >= ece_at_a);
    assert!(cwr.tcp_payload > 0);
    assert_eq!(cwr.ecn, Ecn::Ect0);
    let first_data_after = net
        .sent_a
        .iter()
        .find(|s| s.at >= ece_at_a && s.tcp_payload > 0)
        .unwrap();
    assert_eq!(
        (first_data_after.at, first_data_after.seq),
        (cwr.at, cwr.seq),
        "CWR on the first data segment after the reduction"
    );
    assert!(
        net.sent_a
            .iter()
            .filter(|s| s.at < cwr.at && s.tcp_payload > 0)
            .all(|s| seq_lt(s.seq, cwr.seq)),
        "the CWR segment carries new data"
    );

    // ECE exactly on the ACKs sent after the marked segment arrived and
    // before the CWR segment did
    let mut echoes = 0;
    for s in &acks_b {
        let after_mark = seq_lt(mark_seq, s.ack);
        let after_cwr = seq_lt(cwr.seq, s.ack);
        let ece = s.flags & ECE != 0;
        assert_eq!(ece, after_mark && !after_cwr, "{s:?}");
        echoes += u64::from(ece);
        assert_eq!(s.ecn, Ecn::NotEct, "pure ACKs are Not-ECT");
    }
    let st = net.a.conn(h).unwrap().stats();
    let rx = net.b.conn(hb).unwrap().stats();
    assert!(echoes >= 2, "{echoes} echoes");
    assert_eq!(st.ece_received, echoes);
    assert_eq!((st.ece_reactions, st.cwr_sent), (1, 1));
    assert_eq!((rx.ce_received, rx.cwr_sent), (1, 0));
    assert_eq!(st.retransmits, 0);
}

/// A CE-marked segment is acknowledged at once (with ECE), where an
/// unmarked one waits for the delayed-ACK timer.
#[test]
fn ce_marked_data_is_acked_at_once() {
    let mut net = pair(tcp(EcnMode::On), tcp(EcnMode::On), 34);
    let m = marker(&mut net);
    let h = net.connect(80);
    net.run_for(Duration::from_millis(200));
    // the first data opens the window (acknowledged as a window update)
    net.a.conn_mut(h).unwrap().write(&[1u8; 100]);
    net.run_for(Duration::from_millis(200));
    let ack_delay = |net: &mut Net, mark: bool| {
        m.one.set(mark);
        net.a.conn_mut(h).unwrap().write(&[2u8; 1200]);
        let t = net.now;
        let n_before = net.sent_b.len();
        net.run_for(Duration::from_millis(200));
        let acks: Vec<Sent> = net.sent_b[n_before..].to_vec();
        assert_eq!(acks.len(), 1, "{acks:?}");
        (acks[0].at - t - ONE_WAY, acks[0].flags & ECE != 0)
    };
    assert_eq!(
        ack_delay(&mut net, false),
        (Duration::from_millis(40), false)
    );
    assert_eq!(ack_delay(&mut net, true), (Duration::ZERO, true));
    assert_eq!(m.marked.get(), 1);
}

/// A loss reduction also sends CWR (§6.1.2: "for any reason"); the
/// retransmission itself is Not-ECT (§6.1.5), and nothing is echoed.
#[test]
fn loss_reduction_sends_cwr_and_retransmissions_are_not_ect() {
    let (mut net, h, _m) = ca_flow(CcAlgorithm::NewReno, 33);
    let drop_seq: Rc<Cell<Option<u32>>> = Rc::new(Cell::new(None));
    let armed = Rc::new(Cell::new(true));
    let (d, a) = (drop_seq.clone(), armed.clone());
    net.ab.hops.insert(
        0,
        Hop::Filter(Box::new(move |at, pkt| {
            if pkt.len() <= 1000 || !a.get() {
                return false;
            }
            a.set(false);
            d.set(Some(describe(at, pkt, None).seq));
            true
        })),
    );
    let t_drop = net.now;
    net.run_for(Duration::from_secs(1));
    let seq = drop_seq.get().unwrap();
    let copies: Vec<&Sent> = net
        .sent_a
        .iter()
        .filter(|s| s.at >= t_drop && s.seq == seq && s.tcp_payload > 0)
        .collect();
    assert_eq!(copies.len(), 2, "sent, retransmitted");
    assert_eq!(copies[0].ecn, Ecn::Ect0);
    assert_eq!(copies[1].ecn, Ecn::NotEct, "retransmissions are Not-ECT");
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!((st.fast_retransmits, st.ece_reactions), (1, 0));
    let cwrs: Vec<&Sent> = net
        .sent_a
        .iter()
        .filter(|s| s.flags & CWR != 0 && !is_syn(s))
        .collect();
    assert_eq!(cwrs.len(), 1);
    assert_eq!(st.cwr_sent, 1);
    let cwr = cwrs[0];
    assert!(cwr.at >= copies[1].at && cwr.tcp_payload > 0 && cwr.seq != seq);
    let first_new = net
        .sent_a
        .iter()
        .find(|s| s.at >= copies[1].at && s.tcp_payload > 0 && s.seq != seq)
        .unwrap();
    assert_eq!(first_new.seq, cwr.seq);
    assert!(net.sent_b.iter().all(|s| s.flags & ECE == 0 || is_syn(s)));
}

/// A KA flow through a KA router leaves KA mode when a CE mark — here on
/// the second piece of a fragment the router split — is echoed (paper
/// §II-C3), as after a loss but without a retransmission.
#[test]
fn ka_flow_leaves_ka_mode_on_ce_echo() {
    let mut t = test_tcp();
    t.ecn = EcnMode::On;
    let mut net = Net::new(stack_cfg(1, t), stack_cfg(2, t), ONE_WAY, 40);
    net.record_a = true;
    let now = net.now;
    let mut pc = ka_router::PortConfig::new(10_000_000);
    pc.initial_rtt = RTT;
    net.ab.hops.push(Hop::port(pc, now));
    let arm = Rc::new(Cell::new(false));
    let marked_at = Rc::new(Cell::new(None::<Instant>));
    let (a, ma) = (arm.clone(), marked_at.clone());
    net.ab.hops.push(Hop::Mark(Box::new(move |at, pkt| {
        let ip = Ipv4Packet::new_checked(pkt).unwrap();
        let tail = ip.frag_offset() > 0;
        if a.get() && tail {
            a.set(false);
            ma.set(Some(at));
            return true;
        }
        false
    })));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 4), false);
    net.run_for(Duration::from_secs(2));
    let c = net.a.conn(h).unwrap();
    assert!(c.ecn_enabled() && c.ka_enabled());
    assert_eq!(c.mode(), Mode::Ka);
    arm.set(true);
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
            == Mode::Tcp)
    );
    let t_mark = marked_at.get().expect("a fragment tail was marked");
    let change = net
        .events_of(Side::A, h)
        .into_iter()
        .filter_map(|(at, e)| match e {
            Event::ModeChanged(m) => Some((at, m)),
            _ => None,
        })
        .next_back()
        .unwrap();
    assert_eq!((change.1.from, change.1.to), (Mode::Ka, Mode::Tcp));
    assert_eq!(change.1.reason, ModeReason::Ecn);
    assert!(change.0 - t_mark <= 2 * RTT, "{:?}", change.0 - t_mark);
    let st = net.a.conn(h).unwrap().stats();
    assert_eq!(st.left_by, Some(LeftBy::Loss));
    assert_eq!(st.ece_reactions, 1);
    assert_eq!((st.retransmits, st.fast_retransmits, st.rtos), (0, 0, 0));
    let hb = net.accepted(5001).unwrap();
    assert_eq!(net.b.conn(hb).unwrap().stats().ce_received, 1);
    // the TCP window took over the KA window and was halved
    assert!(st.ssthresh <= change.1.cwnd / 2 + 1, "{st:?} {change:?}");
    net.run_for(Duration::from_millis(300));
    assert_eq!(net.a.conn(h).unwrap().stats().ece_reactions, 1);
}

/// Over IPv6 the codepoint lives in the traffic class: data leaves ECT(0),
/// a CE mark reaches the receiver and comes back as one reaction.
#[test]
fn ipv6_carries_ect_and_ce() {
    let t0 = Instant::now();
    let mut a = Stack::new(stack_cfg(1, tcp(EcnMode::On)), t0);
    let mut b = Stack::new(stack_cfg(2, tcp(EcnMode::Accept)), t0);
    b.listen(80);
    let h = a
        .connect(
            t0,
            "[fd00::1]:0".parse().unwrap(),
            "[fd00::2]:80".parse().unwrap(),
        )
        .unwrap();
    let mut buf = vec![0u8; 2048];
    let (mut now, mut data_seen, mut marked) = (t0, 0, false);
    for _ in 0..200 {
        now += Duration::from_millis(5);
        if a.conn(h).unwrap().state() == ka_endpoint::State::Established
            && a.conn(h).unwrap().send_queued() == 0
            && data_seen < 40
        {
            a.conn_mut(h).unwrap().write(&[9u8; 5000]);
        }
        while let Some(n) = a.poll_transmit(now, &mut buf) {
            let pkt = &mut buf[..n];
            let tcp_len = n - 40;
            let ecn = ka_codec::wire::ecn::ecn(pkt).unwrap();
            if tcp_len > 100 {
                data_seen += 1;
                assert_eq!(ecn, Ecn::Ect0);
                if !marked {
                    marked = true;
                    ka_codec::wire::ecn::mark_ce(pkt);
                }
            } else {
                assert_eq!(ecn, Ecn::NotEct);
            }
            b.handle_packet(now, pkt);
        }
        while let Some(n) = b.poll_transmit(now, &mut buf) {
            assert_eq!(ka_codec::wire::ecn::ecn(&buf[..n]), Some(Ecn::NotEct));
            a.handle_packet(now, &buf[..n]);
        }
        while b.poll_event().is_some() {}
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    let hb = b.handles().next().unwrap();
    assert!(data_seen >= 20 && marked);
    assert!(a.conn(h).unwrap().ecn_enabled());
    assert_eq!(b.conn(hb).unwrap().stats().ce_received, 1);
    let st = a.conn(h).unwrap().stats();
    assert_eq!((st.ece_reactions, st.cwr_sent), (1, 1), "{st:?}");
}

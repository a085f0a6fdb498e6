//! XCP end to end (DESIGN §7.2, §6.4) in virtual time: negotiation in SYN /
//! SYN-ACK and the fallback to plain TCP, the IPv4 XCP option on data, the
//! receiver's echo, the sender's window (never below one MSS), the NewReno
//! reaction to losses, and the rate-based variant's pacing. A tiny "XCP
//! router stub" on the A → B path lowers `H_feedback` with the codec call a
//! real XCP router makes (`xcp_option::lower_feedback_in_packet`).
mod common;

use common::*;
use ka_codec::XcpOption;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::tcp::{SYN, TcpOptions, TcpPacket};
use ka_codec::xcp_option;
use ka_endpoint::cc::rfc6928_initial_window as rfc6928_initial_window_of;
use ka_endpoint::{CcAlgorithm, TcpConfig};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

const ONE_WAY: Duration = Duration::from_millis(20);

/// One packet as seen on the wire.
#[derive(Debug, Clone)]
struct Pkt {
    at: Instant,
    len: usize,
    syn: bool,
    payload: usize,
    seq: u32,
    xcp: Option<XcpOption>,
    tcp: TcpOptions,
}

fn parse(at: Instant, pkt: &[u8]) -> Pkt {
    let ip = Ipv4Packet::new_checked(pkt).unwrap();
    assert!(ip.verify_checksum(), "IPv4 checksum");
    let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
    Pkt {
        at,
        len: ip.total_len(),
        syn: tcp.flags() & SYN != 0,
        payload: tcp.payload().len(),
        seq: tcp.seq(),
        xcp: xcp_option::find_in(ip.options()).unwrap().map(|(_, o)| o),
        tcp: TcpOptions::parse(tcp.options()).unwrap(),
    }
}

type Log = Rc<RefCell<Vec<Pkt>>>;

fn logger(log: &Log) -> Hop {
    let l = log.clone();
    Hop::Filter(Box::new(move |at, pkt| {
        l.borrow_mut().push(parse(at, pkt));
        false
    }))
}

/// A → [log: sent] → [XCP router stub] → [log: arrived] → B, and
/// B → [log: acks] → A. For each packet with an XCP option the stub asks
/// `grant(now)` and lowers `H_feedback` to it when that is `Some`.
struct Setup {
    net: Net,
    sent: Log,
    arrived: Log,
    acks: Log,
}

type Grant = Rc<RefCell<dyn FnMut(Instant) -> Option<i32>>>;

fn setup(a: TcpConfig, b: TcpConfig, grant: Grant) -> Setup {
    let mut net = Net::new(stack_cfg(1, a), stack_cfg(2, b), ONE_WAY, 3);
    let (sent, arrived, acks) = (Log::default(), Log::default(), Log::default());
    net.ab.hops.push(logger(&sent));
    net.ab.hops.push(Hop::Rewrite(Box::new(move |now, pkt| {
        // Packets without the option (SYN, pure ACKs) are left alone.
        if let Ok(Some(_)) = xcp_option::find_in_packet(pkt)
            && let Some(g) = (grant.borrow_mut())(now)
        {
            xcp_option::lower_feedback_in_packet(pkt, g).unwrap();
        }
    })));
    net.ab.hops.push(logger(&arrived));
    net.ba.hops.push(logger(&acks));
    Setup {
        net,
        sent,
        arrived,
        acks,
    }
}

fn fixed(g: Option<i32>) -> Grant {
    Rc::new(RefCell::new(move |_| g))
}

fn cc(alg: CcAlgorithm) -> TcpConfig {
    let mut t = test_tcp();
    t.cc = alg;
    t
}

/// Σ of the XCP-Echo feedback on B's packets, and how many carried one.
fn echoed(acks: &Log) -> (i64, usize) {
    let acks = acks.borrow();
    let e: Vec<i64> = acks
        .iter()
        .filter_map(|p| p.tcp.xcp_echo.map(|e| i64::from(e.feedback_bytes)))
        .collect();
    (e.iter().sum(), e.len())
}

#[test]
fn negotiates_with_an_xcp_peer() {
    // B is an XCP sender too: both directions carry the option.
    let mut s = setup(cc(CcAlgorithm::Xcp), cc(CcAlgorithm::Xcp), fixed(None));
    let h = s.net.connect(5001);
    s.net.send_bulk(Side::A, h, payload(400_000, 1), false);
    s.net
        .run_until(Duration::from_secs(2), |n| n.accepted(5001).is_some());
    let hb = s.net.accepted(5001).unwrap();
    s.net.send_bulk(Side::B, hb, payload(50_000, 2), false);
    s.net.run_for(Duration::from_secs(3));

    let (a, b) = (s.net.a.conn(h).unwrap(), s.net.b.conn(hb).unwrap());
    assert!(a.xcp_enabled() && b.xcp_enabled());
    assert!(
        !a.ka_enabled() && !b.ka_enabled(),
        "XCP connections do no KA"
    );
    assert_eq!(
        (a.controller().name(), b.controller().name()),
        ("xcp", "xcp")
    );
    assert_eq!(s.net.received(Side::B, hb), &payload(400_000, 1)[..]);
    assert_eq!(s.net.received(Side::A, h), &payload(50_000, 2)[..]);

    let sent = s.sent.borrow();
    let syn = sent.first().unwrap();
    assert!(syn.syn && syn.tcp.xcp_permitted);
    assert!(!syn.tcp.ka_permitted && !syn.tcp.rcp_permitted);
    assert!(syn.xcp.is_none(), "the SYN asks for no window");
    let acks = s.acks.borrow();
    assert!(acks.first().unwrap().syn && acks.first().unwrap().tcp.xcp_permitted);

    // Every data segment carries the option, pure ACKs do not; full data
    // packets are exactly the MTU (the MSS leaves room for 16 bytes).
    let data: Vec<&Pkt> = sent.iter().filter(|p| p.payload > 0).collect();
    assert!(data.iter().all(|p| p.xcp.is_some()));
    assert!(
        sent.iter()
            .filter(|p| p.payload == 0)
            .all(|p| p.xcp.is_none())
    );
    assert_eq!(data.iter().map(|p| p.len).max(), Some(1500));
    assert_eq!(a.mss(), 1500 - 20 - 16 - 20);
    // H_rtt is A's srtt in µs: 40 ms of propagation plus ACK delays.
    let rtt = data.last().unwrap().xcp.unwrap().rtt_us;
    assert!((40_000..=60_000).contains(&rtt), "H_rtt {rtt}");

    // The first data segment: H_cwnd = the initial window, and the
    // request takes the window to the peer's offer (its SYN-ACK window,
    // 65 535) within one window of packets: (65 535 − IW) / (IW / MSS).
    let first = data.first().unwrap().xcp.unwrap();
    let iw = rfc6928_initial_window_of(a.smss());
    assert_eq!(first.cwnd_bytes as usize, iw);
    let want = (65_535.0 - iw as f64) / (iw as f64 / a.smss() as f64);
    assert_eq!(first.feedback_bytes, want as i32);

    // B's data carried options too, and A echoed them.
    assert!(b.stats().xcp_echoes > 0 && a.stats().xcp_options_seen > 0);
    assert!(
        acks.iter()
            .filter(|p| p.payload > 0)
            .all(|p| p.xcp.is_some())
    );
}

#[test]
fn falls_back_to_plain_tcp_without_an_xcp_peer() {
    // A peer that does not answer XCP-Permitted (like Linux, which ignores
    // unknown experiments) gets plain NewReno, and no option after the SYN.
    let mut plain = test_tcp();
    plain.xcp.accept = false;
    for alg in [CcAlgorithm::Xcp, CcAlgorithm::XcpRate] {
        let mut s = setup(cc(alg), plain, fixed(None));
        let h = s.net.connect(5001);
        s.net.send_bulk(Side::A, h, payload(300_000, 3), false);
        s.net.run_for(Duration::from_secs(3));
        let a = s.net.a.conn(h).unwrap();
        assert!(!a.xcp_enabled() && !a.ka_enabled());
        assert_eq!(a.controller().name(), "newreno");
        assert!(s.sent.borrow().first().unwrap().tcp.xcp_permitted);
        assert!(s.sent.borrow().iter().all(|p| p.xcp.is_none()));
        assert!(!s.acks.borrow().first().unwrap().tcp.xcp_permitted);
        let hb = s.net.accepted(5001).unwrap();
        assert_eq!(s.net.received(Side::B, hb).len(), 300_000);
        // NewReno's slow start grew the window without any feedback.
        let (cwnd, iw) = (a.stats().cwnd, rfc6928_initial_window_of(a.smss()));
        assert!(cwnd >= 2 * iw, "cwnd {cwnd}, iw {iw}");
        assert_eq!(a.stats().xcp_echoes, 0);
    }

    // A plain sender never offers XCP to a peer that would take it.
    let mut s = setup(test_tcp(), test_tcp(), fixed(None));
    let h = s.net.connect(5001);
    s.net.send_bulk(Side::A, h, payload(100_000, 4), false);
    s.net.run_for(Duration::from_secs(2));
    assert!(!s.net.a.conn(h).unwrap().xcp_enabled());
    assert!(
        s.sent
            .borrow()
            .iter()
            .all(|p| !p.tcp.xcp_permitted && p.xcp.is_none())
    );
    assert!(s.acks.borrow().iter().all(|p| p.tcp.xcp_echo.is_none()));
}

#[test]
fn the_routers_feedback_reaches_the_sender() {
    // The stub grants every packet +100 bytes (far below what A asks).
    let mut s = setup(cc(CcAlgorithm::Xcp), test_tcp(), fixed(Some(100)));
    let h = s.net.connect(5001);
    s.net.send_bulk(Side::A, h, payload(600_000, 5), false);
    s.net.run_for(Duration::from_secs(5));
    let hb = s.net.accepted(5001).unwrap();
    assert_eq!(s.net.received(Side::B, hb).len(), 600_000);

    let sent = s.sent.borrow();
    let arrived = s.arrived.borrow();
    let asked: Vec<i32> = sent
        .iter()
        .filter_map(|p| p.xcp.map(|o| o.feedback_bytes))
        .collect();
    assert!(
        asked.iter().all(|&f| f > 100),
        "A asks for more than it gets"
    );
    let got: Vec<i32> = arrived
        .iter()
        .filter_map(|p| p.xcp.map(|o| o.feedback_bytes))
        .collect();
    assert_eq!(got.len(), asked.len());
    assert!(
        got.iter().all(|&f| f == 100),
        "the stub lowered every packet"
    );

    // B echoed exactly what arrived, each packet once (summed over the
    // packets one ACK covers), and A applied all of it.
    let (sum, n) = echoed(&s.acks);
    assert_eq!(sum, 100 * got.len() as i64);
    assert!(n < got.len(), "delayed ACKs sum two packets' feedback");
    let (a, b) = (s.net.a.conn(h).unwrap(), s.net.b.conn(hb).unwrap());
    assert_eq!(b.stats().xcp_options_seen as usize, got.len());
    assert_eq!(a.stats().xcp_echoes as usize, n);
    assert_eq!(a.stats().retransmits, 0);
    let iw = rfc6928_initial_window_of(a.smss());
    assert_eq!(a.stats().cwnd, iw + sum as usize, "cwnd += feedback");
    // The window in each packet's H_cwnd only ever grew.
    let cwnds: Vec<u32> = sent
        .iter()
        .filter_map(|p| p.xcp.map(|o| o.cwnd_bytes))
        .collect();
    assert!(cwnds.windows(2).all(|w| w[0] <= w[1]));
    assert!(*cwnds.last().unwrap() as usize <= a.stats().cwnd);
}

#[test]
fn window_never_drops_below_one_mss() {
    // Random grants, mostly large cuts: the window is floored at one MSS,
    // every arriving feedback is echoed once, and the data still gets
    // through.
    let rng = Rc::new(RefCell::new(Rng::new(11)));
    let r = rng.clone();
    let grant: Grant = Rc::new(RefCell::new(move |_| {
        let mut r = r.borrow_mut();
        Some(if r.chance(0.7) {
            -(r.below(1 << 29) as i32)
        } else {
            r.below(3000) as i32
        })
    }));
    let mut s = setup(cc(CcAlgorithm::Xcp), test_tcp(), grant);
    let h = s.net.connect(5001);
    s.net.send_bulk(Side::A, h, payload(150_000, 6), false);
    let mut min_cwnd = usize::MAX;
    s.net.run_for_with(Duration::from_secs(20), |n| {
        if let Some(c) = n.a.conn(h) {
            min_cwnd = min_cwnd.min(c.stats().cwnd);
        }
    });
    let a = s.net.a.conn(h).unwrap();
    assert_eq!(min_cwnd, a.smss(), "floored at, and reaching, one MSS");
    let hb = s.net.accepted(5001).unwrap();
    assert_eq!(s.net.received(Side::B, hb), &payload(150_000, 6)[..]);
    let arrived: i64 = s
        .arrived
        .borrow()
        .iter()
        .filter_map(|p| p.xcp.map(|o| i64::from(o.feedback_bytes)))
        .sum();
    // Each echo sums a few packets of at least −2^29 each, so no sum
    // saturates and the totals agree exactly.
    assert_eq!(echoed(&s.acks).0, arrived);
}

#[test]
fn a_loss_takes_the_newreno_path_then_feedback_resumes() {
    // Grant 0 keeps the window at its initial size; one data segment is
    // lost; then the stub grants +200 per packet.
    let phase = Rc::new(Cell::new(0));
    let p = phase.clone();
    let grant: Grant = Rc::new(RefCell::new(move |_| {
        Some(if p.get() == 2 { 200 } else { 0 })
    }));
    let mut s = setup(cc(CcAlgorithm::Xcp), test_tcp(), grant);
    let mut seen = 0;
    let dropped_seq = Rc::new(Cell::new(None));
    let d = dropped_seq.clone();
    s.net.ab.hops.insert(
        0,
        Hop::Filter(Box::new(move |at, pkt| {
            let p = parse(at, pkt);
            if p.payload > 0 {
                seen += 1;
                if seen == 35 {
                    d.set(Some(p.seq));
                    return true;
                }
            }
            false
        })),
    );
    let h = s.net.connect(5001);
    s.net.send_bulk(Side::A, h, payload(3_000_000, 7), false);
    s.net.run_for(Duration::from_millis(100));
    let iw = rfc6928_initial_window_of(s.net.a.conn(h).unwrap().smss());
    assert!(dropped_seq.get().is_none());
    let st = s.net.a.conn(h).unwrap().stats();
    assert!(st.xcp_echoes > 0);
    assert_eq!(st.cwnd, iw, "zero feedback, no growth");

    s.net.run_for(Duration::from_millis(900));
    assert!(dropped_seq.get().is_some());
    let st = s.net.a.conn(h).unwrap().stats();
    assert_eq!((st.fast_retransmits, st.rtos), (1, 0));
    // NewReno: ssthresh = FlightSize/2 (at least 2 MSS), cwnd = ssthresh ...
    assert_eq!(st.cwnd, st.ssthresh);
    assert!(st.ssthresh < iw * 6 / 10 && st.ssthresh >= 2 * s.net.a.conn(h).unwrap().smss());
    // ... and no additive increase afterwards: the window waits for the
    // routers (NewReno would have grown by one MSS per RTT by now).
    s.net.run_for(Duration::from_millis(500));
    let later = s.net.a.conn(h).unwrap().stats();
    assert_eq!(later.cwnd, st.ssthresh);

    phase.set(2);
    s.net.run_for(Duration::from_millis(300));
    let grown = s.net.a.conn(h).unwrap().stats();
    assert!(
        grown.cwnd > st.ssthresh + 2_000,
        "feedback drives the window again"
    );
    assert_eq!(grown.fast_retransmits, 1);
    s.net.run_for(Duration::from_secs(10));
    let hb = s.net.accepted(5001).unwrap();
    assert_eq!(s.net.received(Side::B, hb), &payload(3_000_000, 7)[..]);
}

#[test]
fn a_timeout_collapses_the_window_to_one_segment() {
    let mut s = setup(cc(CcAlgorithm::Xcp), test_tcp(), fixed(Some(0)));
    s.net.ab.impair.blackouts = vec![(Duration::from_millis(300), Duration::from_millis(900))];
    let h = s.net.connect(5001);
    s.net.send_bulk(Side::A, h, payload(2_000_000, 8), false);
    s.net.run_until(Duration::from_secs(3), |n| {
        n.a.conn(h).is_some_and(|c| c.stats().rtos > 0)
    });
    let a = s.net.a.conn(h).unwrap();
    assert_eq!(a.stats().cwnd, a.smss(), "RTO: the loss window");
    s.net.run_for(Duration::from_secs(1));
    let a = s.net.a.conn(h).unwrap();
    assert_eq!(
        a.stats().cwnd,
        a.smss(),
        "grant 0: no slow start after an RTO"
    );
}

/// Gaps between A's consecutive data segments after `from`.
fn gaps(log: &Log, from: Instant) -> Vec<Duration> {
    let log = log.borrow();
    let t: Vec<Instant> = log
        .iter()
        .filter(|p| p.payload > 0 && p.at >= from)
        .map(|p| p.at)
        .collect();
    t.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn the_rate_variant_paces_at_cwnd_over_srtt() {
    // Grant 0: both variants keep the initial window; the window-based one
    // sends it in bursts, the rate-based one spreads it over the srtt.
    for alg in [CcAlgorithm::Xcp, CcAlgorithm::XcpRate] {
        let mut s = setup(cc(alg), test_tcp(), fixed(Some(0)));
        let h = s.net.connect(5001);
        s.net.send_bulk(Side::A, h, payload(4_000_000, 9), false);
        s.net.run_for(Duration::from_secs(2));
        let a = s.net.a.conn(h).unwrap();
        assert_eq!(a.stats().retransmits, 0);
        let from = s.net.base + Duration::from_millis(500);
        let mut g = gaps(&s.sent, from);
        g.sort();
        let zero = g.iter().filter(|d| d.is_zero()).count() as f64 / g.len() as f64;
        if alg == CcAlgorithm::Xcp {
            assert!(!a.controller().rate_based());
            assert!(zero >= 0.4, "window-based: back-to-back bursts ({zero})");
        } else {
            assert!(a.controller().rate_based());
            let srtt = a.stats().srtt.unwrap().as_secs_f64();
            let rate = a.controller().pacing_rate(a.rtt()).unwrap();
            let iw = rfc6928_initial_window_of(a.smss()) as f64;
            assert!((rate - iw / srtt).abs() < 1e-6 * rate, "exactly cwnd/srtt");
            let expect = 1500.0 / rate;
            let m = g[g.len() / 2].as_secs_f64();
            assert!((m - expect).abs() < 0.05 * expect, "gap {m} vs {expect}");
            let short = g.iter().filter(|d| d.as_secs_f64() < expect / 2.0).count();
            assert!(short * 20 <= g.len(), "{short} of {} gaps short", g.len());
            // and over the run: about one window per srtt
            let n = s
                .sent
                .borrow()
                .iter()
                .filter(|p| p.payload > 0 && p.at >= from)
                .count();
            let per_s = n as f64 * 1500.0 / 1.5;
            assert!((per_s / rate - 1.0).abs() < 0.1, "{per_s} B/s vs {rate}");
        }
    }
}

#[test]
fn the_rate_variant_spreads_feedback_over_an_rtt() {
    // One grant of 4000 bytes on the first data packet (which asks for
    // 5109), then zero: the window-based sender takes it at once, the
    // rate-based one ramps up over about an srtt.
    let grant = || -> Grant {
        let mut given = false;
        Rc::new(RefCell::new(move |_| {
            if given {
                Some(0)
            } else {
                given = true;
                Some(4_000)
            }
        }))
    };
    let mut cwnd_after = vec![];
    for alg in [CcAlgorithm::Xcp, CcAlgorithm::XcpRate] {
        let mut s = setup(cc(alg), test_tcp(), grant());
        let h = s.net.connect(5001);
        s.net.send_bulk(Side::A, h, payload(2_000_000, 10), false);
        // the first echo arrives at about 2 RTTs (handshake, then data)
        let mut at_echo = None;
        s.net.run_until(Duration::from_secs(1), |n| {
            let c = n.a.conn(h).unwrap();
            if c.stats().xcp_echoes > 0 && at_echo.is_none() {
                at_echo = Some((n.now, c.stats().cwnd));
            }
            at_echo.is_some()
        });
        let (t, w) = at_echo.unwrap();
        s.net.run_until(Duration::from_secs(1), |n| {
            n.now >= t + Duration::from_millis(20)
        });
        let half = s.net.a.conn(h).unwrap().stats().cwnd;
        s.net.run_until(Duration::from_secs(1), |n| {
            n.now >= t + Duration::from_millis(100)
        });
        let full = s.net.a.conn(h).unwrap().stats().cwnd;
        cwnd_after.push((w, half, full));
    }
    // 10 segments of SMSS 1432 = 1500 − 20 (IP) − 16 (XCP option) − 20
    // (TCP) − 12 (timestamps).
    let iw = 14_320;
    let (w, _, full) = cwnd_after[0];
    assert_eq!((w, full), (iw + 4_000, iw + 4_000), "window-based: at once");
    let (w, half, full) = cwnd_after[1];
    // the reported window includes 2 MSS of slack over the rate window
    let slack = 2 * 1432;
    assert_eq!(w - slack, iw, "rate-based: nothing at first");
    assert!(
        half - slack > iw + 1_000 && half - slack < iw + 3_500,
        "{half}"
    );
    assert!(
        (full - slack).abs_diff(iw + 4_000) <= 1,
        "all of it after an srtt"
    );
}

/// Overwrites the XCP IPv4 option of `pkt` (if any) with `junk`, keeping
/// the header checksum valid so the stack does look at it.
fn scramble_ip_option(pkt: &mut [u8], junk: &[u8; 16]) {
    let Ok(Some((at, _))) = xcp_option::find_in_packet(pkt) else {
        return;
    };
    pkt[at..at + 16].copy_from_slice(junk);
    Ipv4Packet::new_unchecked(&mut pkt[..]).fill_checksum();
}

/// Sets the feedback of the XCP-Echo in `pkt` (if any) to `fb`, keeping
/// the TCP checksum valid.
fn rewrite_echo(pkt: &mut [u8], fb: i32) {
    let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
    let (hl, src, dst) = (ip.header_len(), ip.src_addr(), ip.dst_addr());
    let tcp_len = ip.total_len() - hl;
    let opts_end = hl + usize::from(pkt[hl + 12] >> 4) * 4;
    let Some(pos) = pkt[hl + 20..opts_end]
        .windows(4)
        .position(|w| w == [253, 8, 0x58, 0x43])
    else {
        return;
    };
    let at = hl + 20 + pos + 4;
    pkt[at..at + 4].copy_from_slice(&fb.to_be_bytes());
    let pseudo = ka_codec::wire::checksum::pseudo_v4(src, dst, 6, tcp_len as u32);
    TcpPacket::new_unchecked(&mut pkt[hl..hl + tcp_len]).fill_checksum(pseudo);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Garbage in the IPv4 XCP option (the receiver's parser) and any
    /// feedback value in the echo (the sender's window) never panic, never
    /// take the window below one MSS, and never corrupt the data.
    #[test]
    fn arbitrary_options_and_echoes_are_harmless(seed in proptest::prelude::any::<u64>(), rate in proptest::prelude::any::<bool>()) {
        let alg = if rate { CcAlgorithm::XcpRate } else { CcAlgorithm::Xcp };
        let mut net = Net::new(stack_cfg(1, cc(alg)), stack_cfg(2, test_tcp()), ONE_WAY, seed);
        let mut rng = Rng::new(seed);
        net.ab.hops.push(Hop::Rewrite(Box::new(move |_, pkt| {
            if rng.chance(0.5) {
                let mut junk = [0u8; 16];
                for b in junk.iter_mut() {
                    *b = rng.next_u64() as u8;
                }
                if rng.chance(0.5) {
                    junk[0] = 94; // a real XCP type byte with a random length
                }
                scramble_ip_option(pkt, &junk);
            }
        })));
        let mut rng = Rng::new(!seed);
        net.ba.hops.push(Hop::Rewrite(Box::new(move |_, pkt| {
            let fb = match rng.below(4) {
                0 => i32::MIN,
                1 => i32::MAX,
                _ => rng.next_u64() as i32,
            };
            rewrite_echo(pkt, fb);
        })));
        let h = net.connect(5001);
        net.send_bulk(Side::A, h, payload(60_000, seed), false);
        let mut ok = true;
        net.run_for_with(Duration::from_secs(8), |n| {
            if let Some(c) = n.a.conn(h) {
                ok &= c.stats().cwnd >= c.smss();
            }
        });
        proptest::prop_assert!(ok, "window below one MSS");
        let hb = net.accepted(5001).unwrap();
        let (a, b) = (net.a.conn(h).unwrap().stats(), net.b.conn(hb).unwrap().stats());
        proptest::prop_assert!(a.xcp_echoes > 0 && b.xcp_options_seen > 0);
        proptest::prop_assert_eq!(net.received(Side::B, hb), &payload(60_000, seed)[..]);
    }
}

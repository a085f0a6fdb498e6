//! The path prober (`ka_endpoint::probe`, DESIGN §6.7) against a real KA
//! receiver (the sans-IO `Stack`) in virtual time, through stand-ins for
//! the middleboxes DESIGN §6.7 is about: a clean path with a smaller
//! MTU, a reassembling middlebox (whole, or re-fragmented at the largest
//! piece as Linux conntrack does when it cannot reuse the pieces), one that drops fragments, one that ignores DF.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use ka_codec::wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_ICMP};
use ka_endpoint::probe::{Finding, Outcome, ProbeConfig, Prober, Report, Signal, split_ipv4};
use ka_endpoint::{Stack, StackConfig};

const ONE_WAY: Duration = Duration::from_millis(5);

fn prober_addr() -> SocketAddrV4 {
    "10.0.0.1:40000".parse().unwrap()
}
fn receiver_addr() -> SocketAddrV4 {
    "10.0.0.2:5001".parse().unwrap()
}

/// What the middle of the path does to a packet from the prober: the
/// packets it forwards to the receiver, and the ones it sends back.
type Middle = Box<dyn FnMut(Vec<u8>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>)>;

/// An ICMP "fragmentation needed" from 10.0.9.9 about `pkt`, naming `mtu`.
fn frag_needed(pkt: &[u8], mtu: u16) -> Vec<u8> {
    let mut icmp = vec![3u8, 4, 0, 0, 0, 0];
    icmp.extend_from_slice(&mtu.to_be_bytes());
    icmp.extend_from_slice(&pkt[..28]);
    let ck = ka_codec::wire::checksum::checksum(&icmp);
    icmp[2..4].copy_from_slice(&ck.to_be_bytes());
    let src = Ipv4Packet::new_checked(pkt).unwrap().src_addr();
    let mut out = vec![0u8; 20 + icmp.len()];
    Ipv4Repr {
        ttl: 64,
        ..Ipv4Repr::new([10, 0, 9, 9], src, PROTO_ICMP, icmp.len())
    }
    .emit(&mut out)
    .unwrap();
    out[20..].copy_from_slice(&icmp);
    out
}

/// A router with link MTU `mtu`: DF packets above it are dropped with an
/// ICMP (or, `ignore_df`, fragmented anyway); others above it fragmented.
fn mtu_hop(mtu: u16, ignore_df: bool) -> impl FnMut(Vec<u8>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    move |pkt| {
        if pkt.len() <= usize::from(mtu) {
            return (vec![pkt], vec![]);
        }
        let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        if ip.dont_frag() && !ignore_df {
            return (vec![], vec![frag_needed(&pkt, mtu)]);
        }
        let mut p = pkt.clone();
        if ip.dont_frag() {
            let mut w = Ipv4Packet::new_unchecked(&mut p[..]);
            w.set_flags_and_offset(false, false, 0);
            w.fill_checksum();
        }
        let lead = (usize::from(mtu) - 20) / 8 * 8;
        let (a, b) = split_ipv4(&p, lead).expect("splittable");
        (vec![a, b], vec![])
    }
}

fn clean(mtu: u16) -> Middle {
    Box::new(mtu_hop(mtu, false))
}

/// Reassembles two-piece datagrams; forwards them whole, or (`linux`)
/// fragments again with the largest piece's size as Linux conntrack does.
fn reassembler(linux: bool) -> Middle {
    let mut held: HashMap<u16, Vec<u8>> = HashMap::new();
    Box::new(move |pkt| {
        let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        if !ip.is_fragment() {
            return (vec![pkt], vec![]);
        }
        let id = ip.ident();
        if ip.frag_offset() == 0 {
            held.insert(id, pkt);
            return (vec![], vec![]);
        }
        let lead = held.remove(&id).expect("leading piece first");
        let l = Ipv4Packet::new_checked(&lead[..]).unwrap();
        let biggest = l.payload().len().max(ip.payload().len());
        let joined = common::join_fragments(&l, &ip);
        if !linux {
            return (vec![joined], vec![]);
        }
        let (a, b) = split_ipv4(&joined, biggest / 8 * 8).expect("splittable");
        (vec![a, b], vec![])
    })
}

fn drops_fragments() -> Middle {
    Box::new(|pkt| {
        let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        if ip.is_fragment() {
            (vec![], vec![])
        } else {
            (vec![pkt], vec![])
        }
    })
}

/// Runs a probe with a receiver behind `middle` (`receiver: None` = nobody
/// answers); returns the report and the virtual time it took.
fn run(mut middle: Middle, receiver: Option<StackConfig>, timeout: Duration) -> (Report, Duration) {
    let t0 = Instant::now();
    let mut cfg = ProbeConfig::new(prober_addr(), receiver_addr(), 0x1234_5678);
    cfg.timeout = timeout;
    let mut prober = Prober::new(cfg, t0);
    let mut stack = receiver.map(|c| {
        let mut s = Stack::new(c, t0);
        s.listen(5001);
        s
    });
    // (arrival, seq) → (to_receiver, packet)
    let mut wire: BTreeMap<(Instant, u64), (bool, Vec<u8>)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut now = t0;
    let mut buf = vec![0u8; 65_536];
    let mut rbuf = vec![0u8; 65_536];
    let mut steps = 0;
    while !prober.is_done() {
        steps += 1;
        assert!(steps < 1_000_000, "the prober never finishes");
        while let Some(p) = prober.poll_transmit() {
            let (fwd, back) = middle(p);
            for f in fwd {
                seq += 1;
                wire.insert((now + ONE_WAY, seq), (true, f));
            }
            for b in back {
                seq += 1;
                wire.insert((now + ONE_WAY / 2, seq), (false, b));
            }
        }
        if let Some(s) = stack.as_mut() {
            while let Some(n) = s.poll_transmit(now, &mut buf) {
                seq += 1;
                wire.insert((now + ONE_WAY, seq), (false, buf[..n].to_vec()));
            }
            // the application: read everything, close at EOF
            for h in s.handles().collect::<Vec<_>>() {
                if let Some(c) = s.conn_mut(h) {
                    while c.read(&mut rbuf) > 0 {}
                    if c.is_eof() {
                        c.close();
                    }
                }
            }
            while s.poll_event().is_some() {}
            while let Some(n) = s.poll_transmit(now, &mut buf) {
                seq += 1;
                wire.insert((now + ONE_WAY, seq), (false, buf[..n].to_vec()));
            }
        }
        let next = [
            wire.keys().next().map(|k| k.0),
            prober.poll_timeout(),
            stack.as_ref().and_then(|s| s.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("something to wait for");
        now = now.max(next);
        while let Some(e) = wire.first_entry() {
            if e.key().0 > now {
                break;
            }
            let (to_receiver, pkt) = e.remove();
            if to_receiver {
                if let Some(s) = stack.as_mut() {
                    s.handle_packet(now, &pkt);
                }
            } else {
                prober.handle_packet(now, &pkt);
            }
        }
        prober.handle_timeout(now);
        if let Some(s) = stack.as_mut() {
            s.handle_timeout(now);
        }
    }
    (prober.report().clone(), now - t0)
}

fn ka_receiver() -> StackConfig {
    StackConfig::deterministic([7; 16])
}

fn print(r: &Report) {
    for l in r.lines() {
        eprintln!("{l}");
    }
}

#[test]
fn clean_path_with_a_smaller_mtu() {
    let (r, took) = run(clean(1400), Some(ka_receiver()), Duration::from_secs(10));
    print(&r);
    assert!(r.connected && r.ka_negotiated && !r.reset && !r.timed_out);
    assert_eq!(r.path_mtu(), Some(1400));
    assert_eq!(r.icmp_mtu, Some(1400));
    assert_eq!(r.fragments_delivered(), Finding::Yes);
    assert_eq!(r.signal(), Signal::Preserved);
    let lens: Vec<u16> = r.codes.iter().map(|c| c.len).collect();
    assert_eq!(lens, [24, 200, 504, 880, 1200, 1376], "largest L < 1380");
    assert!(r.codes.iter().all(|c| c.preserved()), "{:?}", r.codes);
    assert_eq!(r.indicators_pass(), Finding::Yes);
    assert_eq!(r.df_respected(), Finding::Yes);
    assert!(r.ka_usable());
    assert!(r.closed, "FINs both ways");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn full_mtu_path_cannot_test_df() {
    let (r, _) = run(clean(1500), Some(ka_receiver()), Duration::from_secs(10));
    print(&r);
    assert_eq!(r.path_mtu(), Some(1500));
    assert_eq!(r.df_probes.len(), 1, "one DF probe at the local MTU");
    assert!(matches!(r.df_respected(), Finding::Untested(_)));
    assert_eq!(r.codes.last().map(|c| c.len), Some(1472));
    assert!(r.ka_usable());
}

#[test]
fn reassembling_middlebox_erases_the_signal() {
    for linux in [false, true] {
        let (r, _) = run(
            reassembler(linux),
            Some(ka_receiver()),
            Duration::from_secs(10),
        );
        print(&r);
        assert_eq!(r.fragments_delivered(), Finding::Yes, "linux={linux}");
        assert_eq!(r.signal(), Signal::Erased, "linux={linux}");
        assert!(!r.ka_usable());
        if linux {
            // Re-fragmented at the largest piece: small codes come back as
            // 1480 − L rounded down, the large ones (the bigger piece) survive.
            let c24 = r.codes.iter().find(|c| c.len == 24).unwrap();
            assert_eq!(c24.outcome, Outcome::Fragmented(Some(1456)));
            assert!(r.codes.iter().find(|c| c.len == 1200).unwrap().preserved());
        } else {
            assert!(r.codes.iter().all(|c| c.outcome == Outcome::Whole));
        }
        // DF packets are not fragments: the rest of the path is fine
        assert_eq!(r.indicators_pass(), Finding::Yes);
        assert!(r.closed);
    }
}

#[test]
fn fragment_dropping_middlebox() {
    let timeout = Duration::from_secs(10);
    let (r, took) = run(drops_fragments(), Some(ka_receiver()), timeout);
    print(&r);
    assert_eq!(r.fragments_delivered(), Finding::No);
    assert!(r.codes.iter().all(|c| c.outcome == Outcome::Lost));
    assert!(matches!(r.signal(), Signal::Untested(_)));
    assert_eq!(r.indicators_pass(), Finding::Yes);
    assert!(!r.ka_usable());
    assert!(took <= timeout, "took {took:?}");
    assert!(!r.timed_out, "two attempts per length fit in the budget");
    assert!(
        r.closed,
        "the lost probes' bytes were re-sent by the next ones"
    );
}

#[test]
fn df_ignoring_router_is_caught() {
    let (r, _) = run(
        Box::new(mtu_hop(1400, true)),
        Some(ka_receiver()),
        Duration::from_secs(10),
    );
    print(&r);
    assert_eq!(r.df_respected(), Finding::No);
    // fragmented DF probes do not count; with no ICMP the search bisects
    // to 8 bytes
    let mtu = r.path_mtu().unwrap();
    assert!((1393..=1400).contains(&mtu), "path MTU {mtu}");
    assert_eq!(r.icmp_mtu, None);
}

#[test]
fn receiver_without_ka() {
    let mut cfg = ka_receiver();
    cfg.tcp.ka.enabled = false;
    let (r, _) = run(clean(1500), Some(cfg), Duration::from_secs(10));
    print(&r);
    assert!(r.connected && !r.ka_negotiated);
    assert!(matches!(r.signal(), Signal::Untested(_)));
    assert_eq!(r.fragments_delivered(), Finding::Yes);
    assert!(r.lines()[0].contains("KA NOT negotiated"));
    assert!(!r.ka_usable());
}

#[test]
fn nobody_answers_within_the_timeout() {
    let timeout = Duration::from_secs(4);
    let (r, took) = run(clean(1500), None, timeout);
    print(&r);
    assert!(!r.connected);
    assert!(took <= timeout, "took {took:?}");
    assert!(r.lines()[0].contains("no connection"));
    assert!(matches!(r.fragments_delivered(), Finding::Untested(_)));
}

#[test]
fn a_short_budget_ends_in_time_with_what_it_has() {
    let timeout = Duration::from_millis(1500);
    let (r, took) = run(drops_fragments(), Some(ka_receiver()), timeout);
    print(&r);
    assert!(took <= timeout, "took {took:?}");
    assert!(r.timed_out);
    assert_eq!(r.path_mtu(), Some(1500));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Whatever arrives — garbage, or a real ACK with bytes flipped or cut
    /// short — the prober neither panics nor outlives its budget.
    #[test]
    fn any_input_is_survived(
        garbage in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
        flip in 0usize..80,
        bit in 0u8..8,
        cut in 0usize..80,
    ) {
        let t0 = Instant::now();
        let mut cfg = ProbeConfig::new(prober_addr(), receiver_addr(), 1);
        cfg.timeout = Duration::from_secs(2);
        let mut prober = Prober::new(cfg, t0);
        let mut server = Stack::new(ka_receiver(), t0);
        server.listen(5001);
        let mut buf = vec![0u8; 65_536];
        let mut now = t0;
        while !prober.is_done() {
            while let Some(p) = prober.poll_transmit() {
                server.handle_packet(now, &p);
            }
            while let Some(n) = server.poll_transmit(now, &mut buf) {
                let mut pkt = buf[..n].to_vec();
                prober.handle_packet(now, &garbage);
                let i = flip % pkt.len();
                pkt[i] ^= 1 << bit;
                prober.handle_packet(now, &pkt[..cut.min(pkt.len())]);
                prober.handle_packet(now, &pkt);
                pkt[i] ^= 1 << bit;
                prober.handle_packet(now, &pkt);
            }
            now = prober.poll_timeout().unwrap_or(now).max(now + Duration::from_millis(1));
            prober.handle_timeout(now);
            server.handle_timeout(now);
        }
        proptest::prop_assert!(now - t0 <= Duration::from_secs(2) + Duration::from_millis(1));
    }
}

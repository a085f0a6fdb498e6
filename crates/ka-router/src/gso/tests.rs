use std::time::{Duration, Instant};

use etherparse::{
    IpHeaders, Ipv4Header, Ipv6Header, NetSlice, PacketBuilder, SlicedPacket, TransportSlice,
};
use proptest::prelude::*;

use super::*;
use crate::config::{PortConfig, Signalling, StampEvery};
use crate::port::Port;

const SRC4: [u8; 4] = [10, 0, 0, 1];
const DST4: [u8; 4] = [10, 0, 1, 2];
/// Timestamps option (NOP NOP TS), as Linux sends on every segment.
const TS_OPTS: [u8; 12] = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];

/// A TCP super-packet as the kernel's TSO hands it over: DF clear (as the
/// gateway's tests and benchmarks send), `payload` bytes of a pattern.
fn super_v4(payload: usize, seq: u32, ident: u16, flags: (bool, bool, bool)) -> Vec<u8> {
    let mut ip = Ipv4Header::new(0, 64, etherparse::IpNumber::TCP, SRC4, DST4).unwrap();
    ip.dont_fragment = false;
    ip.identification = ident;
    build(IpHeaders::Ipv4(ip, Default::default()), payload, seq, flags)
}

fn super_v6(payload: usize, seq: u32, flags: (bool, bool, bool)) -> Vec<u8> {
    let ip = Ipv6Header {
        traffic_class: 0,
        flow_label: Default::default(),
        payload_length: 0,
        next_header: etherparse::IpNumber::TCP,
        hop_limit: 64,
        source: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        destination: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2],
    };
    build(IpHeaders::Ipv6(ip, Default::default()), payload, seq, flags)
}

/// `flags`: (CWR, PSH, FIN).
fn build(ip: IpHeaders, payload: usize, seq: u32, (cwr, psh, fin): (bool, bool, bool)) -> Vec<u8> {
    let data: Vec<u8> = (0..payload).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut b = PacketBuilder::ip(ip)
        .tcp(40000, 5201, seq, 502)
        .ack(77)
        .options_raw(&TS_OPTS)
        .unwrap();
    if cwr {
        b = b.cwr();
    }
    if psh {
        b = b.psh();
    }
    if fin {
        b = b.fin();
    }
    let mut out = Vec::new();
    b.write(&mut out, &data).unwrap();
    out
}

fn view(p: &[u8], size: u16) -> Gso {
    Gso::new(p, &Layout::parse(p).unwrap(), size).unwrap()
}

/// Checks every segment against etherparse: IP and TCP checksums, lengths,
/// sequence numbers, identification and flags as the kernel cuts them;
/// their payloads reassemble to the original's.
fn check_segments(orig: &[u8], size: u16) {
    let g = view(orig, size);
    let o = SlicedPacket::from_ip(orig).unwrap();
    let Some(TransportSlice::Tcp(ot)) = &o.transport else {
        panic!("not TCP")
    };
    let segs: Vec<Vec<u8>> = segments(orig, g).collect();
    assert_eq!(segs.len(), usize::from(g.segments()));
    assert_eq!(
        segs.iter().map(Vec::len).sum::<usize>(),
        g.wire_len(orig.len())
    );
    let mut payload = Vec::new();
    for (k, s) in segs.iter().enumerate() {
        let last = k + 1 == segs.len();
        assert_eq!(s.len(), g.segment_len(orig.len(), k as u16));
        let p = SlicedPacket::from_ip(s).unwrap();
        let Some(TransportSlice::Tcp(t)) = &p.transport else {
            panic!("segment {k} not TCP")
        };
        assert!(t.payload().len() <= usize::from(size));
        assert!(last || t.payload().len() == usize::from(size));
        let th = t.to_header();
        let want = match &p.net {
            Some(NetSlice::Ipv4(ip)) => {
                let h = ip.header().to_header();
                assert_eq!(h.calc_header_checksum(), h.header_checksum, "IPv4 checksum");
                assert_eq!(usize::from(h.total_len), s.len());
                let Some(NetSlice::Ipv4(oip)) = &o.net else {
                    panic!()
                };
                let id = oip.header().identification().wrapping_add(k as u16);
                assert_eq!(h.identification, id);
                th.calc_checksum_ipv4(&h, t.payload()).unwrap()
            }
            Some(NetSlice::Ipv6(ip)) => {
                let h = ip.header().to_header();
                assert_eq!(usize::from(h.payload_length) + 40, s.len());
                th.calc_checksum_ipv6(&h, t.payload()).unwrap()
            }
            _ => panic!("no IP"),
        };
        assert_eq!(th.checksum, want, "TCP checksum of segment {k}");
        assert_eq!(
            th.sequence_number,
            ot.sequence_number()
                .wrapping_add((k * usize::from(size)) as u32)
        );
        assert_eq!(th.cwr, ot.cwr() && k == 0);
        assert_eq!(th.psh, ot.psh() && last);
        assert_eq!(th.fin, ot.fin() && last);
        assert_eq!(th.options.as_slice(), ot.options());
        payload.extend_from_slice(t.payload());
    }
    assert_eq!(payload, ot.payload());
}

#[test]
fn segments_of_ipv4_and_ipv6_super_packets_are_the_kernels() {
    check_segments(&super_v4(64_000, 1000, 7, (true, true, true)), 1448);
    check_segments(
        &super_v4(2 * 1448, u32::MAX - 10, u16::MAX, (false, true, false)),
        1448,
    );
    check_segments(&super_v4(1, 5, 0, (false, false, true)), 1448);
    check_segments(&super_v6(60_000, 9, (true, true, false)), 1428);
}

#[test]
fn a_piece_of_several_segments_is_a_smaller_super_packet_of_the_same_segments() {
    let orig = super_v4(20 * 1000 + 3, 1, 100, (true, true, true));
    let g = view(&orig, 1000);
    assert_eq!(g.segments(), 21);
    let all: Vec<_> = segments(&orig, g).collect();
    let (mid, mg) = piece(&orig, g, 4, 21).unwrap();
    let mg = mg.unwrap();
    assert_eq!(mg.segments(), 17);
    assert_eq!(mg, view(&mid, 1000), "the piece's view is its own parse");
    let again: Vec<_> = segments(&mid, mg).collect();
    assert_eq!(again.as_slice(), &all[4..]);
    assert!(piece(&orig, g, 3, 3).is_none());
    assert!(piece(&orig, g, 0, 22).is_none());
    assert!(
        piece(&orig[..100], g, 0, 2).is_none(),
        "not the packet it describes"
    );
}

#[test]
fn not_a_super_packet() {
    let p = super_v4(100, 1, 1, (false, false, false));
    let l = Layout::parse(&p).unwrap();
    assert!(Gso::new(&p, &l, 0).is_none());
    let bare = super_v4(0, 1, 1, (false, false, false));
    assert!(Gso::new(&bare, &Layout::parse(&bare).unwrap(), 1448).is_none());
    let g = Gso::new(&p, &l, 1448).unwrap();
    assert_eq!((g.segments(), g.wire_len(p.len())), (1, p.len()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_super_packet_segments_exactly(
        payload in 1usize..65_000,
        size in 64u16..9000,
        seq in any::<u32>(),
        ident in any::<u16>(),
        flags in any::<(bool, bool, bool)>(),
        v6 in any::<bool>(),
    ) {
        let orig = if v6 { super_v6(payload, seq, flags) } else { super_v4(payload, seq, ident, flags) };
        check_segments(&orig, size);
    }
}

/// A port pair: one is handed the super-packet, the other its segments,
/// at the same instants.
fn ports(cfg: PortConfig, t0: Instant) -> (Port, Port) {
    (Port::new(cfg, t0), Port::new(cfg, t0))
}

/// Pushes a filler (so the link is busy), then `sup` whole into `a` and its
/// segments into `b`; returns the view.
fn feed(a: &mut Port, b: &mut Port, t: Instant, sup: &[u8], size: u16) -> Gso {
    let filler = super_v4(1000, 1, 1, (false, false, false));
    a.push(t, filler.clone());
    b.push(t, filler);
    let g = view(sup, size);
    let l = Layout::parse(sup).unwrap();
    let o = a.push_gso(t, sup.to_vec(), l, g);
    let mut dropped = 0;
    for s in segments(sup, g) {
        if let crate::PushOutcome::Dropped(_) = b.push(t, s) {
            dropped += 1;
        }
    }
    assert_eq!(o.dropped, dropped);
    g
}

/// Everything both ports send until they are empty, as plain packets.
fn drain(p: &mut Port, t: Instant) -> Vec<Vec<u8>> {
    let end = t + Duration::from_secs(10);
    std::iter::from_fn(|| p.poll_transmit(end)).collect()
}

fn assert_same_accounting(a: &Port, b: &Port) {
    let (sa, sb) = (a.snapshot(), b.snapshot());
    assert_eq!(sa.counters, sb.counters);
    assert_eq!(
        (sa.queue_packets, sa.queue_bytes),
        (sb.queue_packets, sb.queue_bytes)
    );
}

#[test]
fn a_port_accounts_a_super_packet_as_its_segments_and_sends_the_same_bytes() {
    let t0 = Instant::now();
    for signalling in [
        Signalling::None,
        Signalling::Ka {
            controller: Default::default(),
        },
    ] {
        let mut cfg = PortConfig::new(10_000_000_000);
        cfg.signalling = signalling;
        cfg.stamp_every = StampEvery::Rtt;
        let (mut a, mut b) = ports(cfg, t0);
        let sup = super_v4(60_000, 1000, 9, (false, true, false));
        let t = t0 + Duration::from_millis(1);
        let g = feed(&mut a, &mut b, t, &sup, 1448);
        assert_eq!(a.queue_len(), usize::from(g.segments()));
        assert_same_accounting(&a, &b);
        let (oa, ob) = (drain(&mut a, t), drain(&mut b, t));
        assert_eq!(oa, ob, "{signalling:?}: not the same bytes out");
        assert_same_accounting(&a, &b);
        if matches!(signalling, Signalling::Ka { .. }) {
            // The filler, of the same flow, was signalled; the segments
            // within its interval are not.
            assert_eq!(a.snapshot().counters.fragments_made, 1);
            assert!(a.snapshot().counters.signals_skipped > 0);
        }
    }
}

#[test]
fn a_stamped_segment_is_a_leading_fragment_and_its_rest_then_the_rest_leaves_whole() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(10_000_000_000);
    cfg.signalling = Signalling::Ka {
        controller: Default::default(),
    };
    cfg.stamp_every = StampEvery::Rtt;
    let mut port = Port::new(cfg, t0);
    let sup = super_v4(40 * 1448, 5, 3, (false, true, false));
    let g = view(&sup, 1448);
    let first = segments(&sup, g).next().unwrap();
    let o = port.push_gso(t0, sup.clone(), Layout::parse(&sup).unwrap(), g);
    assert_eq!(o.dropped, 0);
    let end = t0 + Duration::from_secs(1);
    let out: Vec<_> = std::iter::from_fn(|| port.poll_transmit_gso(end)).collect();
    assert_eq!(
        out.len(),
        3,
        "leading fragment, its rest, the other 39 whole"
    );
    let (lead, rest) = (&out[0], &out[1]);
    assert!(lead.1.is_none() && rest.1.is_none());
    let (ls, rs) = (
        ka_codec::wire::Segment::parse(&lead.0).unwrap(),
        ka_codec::wire::Segment::parse(&rest.0).unwrap(),
    );
    assert!(ls.is_leading_fragment());
    assert_eq!(rs.frag_offset(), ls.l4_bytes().len());
    assert!(ls.ident() == rs.ident() && !rs.more_frags());
    // The fragments carry the first segment's bytes (the leading one's
    // length is the KA code).
    let mut l4 = lead.0[20..].to_vec();
    l4.extend_from_slice(&rest.0[20..]);
    assert_eq!(l4, first[20..]);
    let (whole, wg) = &out[2];
    let wg = wg.unwrap();
    assert_eq!(wg.segments(), 39);
    let mut expect: Vec<_> = segments(&sup, g).skip(1).collect();
    for s in &mut expect {
        // The port decremented the TTL.
        s[8] -= 1;
        s[10..12].copy_from_slice(&[0, 0]);
        let c = checksum::checksum(&s[..20]);
        s[10..12].copy_from_slice(&c.to_be_bytes());
    }
    assert_eq!(segments(whole, wg).collect::<Vec<_>>(), expect);
    assert_eq!(port.snapshot().counters.signals_skipped, 39);
}

#[test]
fn a_df_set_super_packet_crosses_a_ka_port_whole_and_untouched() {
    // Kernel TCP sets DF, which the KA stamper never splits: whole in and
    // out whether the port stamps once per RTT or every packet, the same
    // bytes and accounting as its segments one by one.
    let t0 = Instant::now();
    for every in [StampEvery::Rtt, StampEvery::Packet] {
        let mut cfg = PortConfig::new(10_000_000_000);
        cfg.signalling = Signalling::Ka {
            controller: Default::default(),
        };
        cfg.stamp_every = every;
        let (mut a, mut b) = ports(cfg, t0);
        let mut ip = Ipv4Header::new(0, 64, etherparse::IpNumber::TCP, SRC4, DST4).unwrap();
        ip.dont_fragment = true;
        ip.identification = 3;
        let sup = build(
            IpHeaders::Ipv4(ip, Default::default()),
            40 * 1448,
            5,
            (false, true, false),
        );
        let g = feed(&mut a, &mut b, t0, &sup, 1448);
        assert_eq!(a.queue_len(), usize::from(g.segments()));
        assert_same_accounting(&a, &b);
        let end = t0 + Duration::from_secs(1);
        let out: Vec<_> = std::iter::from_fn(|| a.poll_transmit_gso(end)).collect();
        assert_eq!(out.len(), 2, "{every:?}: the filler, then one departure");
        let mut sent = vec![out[0].0.clone()];
        let (whole, wg) = &out[1];
        let wg = wg.expect("still a super-packet");
        assert_eq!(wg.segments(), 40);
        sent.extend(segments(whole, wg));
        assert_eq!(sent, drain(&mut b, t0), "{every:?}: the segments' bytes");
        assert_same_accounting(&a, &b);
    }
}

#[test]
fn drop_tail_drops_the_same_segments_when_the_queue_overflows() {
    let t0 = Instant::now();
    let mut cfg = PortConfig::new(10_000_000_000);
    cfg.queue_limit = 10;
    let (mut a, mut b) = ports(cfg, t0);
    let sup = super_v4(30 * 1448, 5, 3, (false, false, false));
    let g = feed(&mut a, &mut b, t0, &sup, 1448);
    assert_eq!(g.segments(), 30);
    assert_same_accounting(&a, &b);
    assert!(a.snapshot().counters.drops_queue > 0);
    assert_eq!(drain(&mut a, t0), drain(&mut b, t0));
}

#[test]
fn a_slow_link_cuts_super_packets_to_its_burst_and_red_takes_segments() {
    let t0 = Instant::now();
    // 1 Gbit/s: 100 µs is 12 500 bytes, 8 segments of 1500.
    let mut cfg = PortConfig::new(1_000_000_000);
    cfg.queue_limit = 1000;
    cfg.signalling = Signalling::None;
    let (mut a, mut b) = ports(cfg, t0);
    let sup = super_v4(40 * 1448, 5, 3, (false, false, false));
    feed(&mut a, &mut b, t0, &sup, 1448);
    assert_same_accounting(&a, &b);
    let end = t0 + Duration::from_secs(1);
    let sizes: Vec<_> = std::iter::from_fn(|| a.poll_transmit_gso(end))
        .map(|(_, g)| g.map_or(1, Gso::segments))
        .collect();
    assert_eq!(sizes, [1, 8, 8, 8, 8, 8]);
    let mut red = cfg;
    red.qdisc = crate::QdiscConfig::Red(Default::default());
    let (mut a, mut b) = ports(red, t0);
    feed(&mut a, &mut b, t0, &sup, 1448);
    assert_same_accounting(&a, &b);
    assert!(std::iter::from_fn(|| a.poll_transmit_gso(end)).all(|(_, g)| g.is_none()));
}

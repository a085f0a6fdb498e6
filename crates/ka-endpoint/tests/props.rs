//! Property tests: nothing a peer sends can make the stack panic, and
//! fragment floods cannot push reassembly memory over its cap.
mod common;

use common::*;
use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::ipv4::Ipv4Repr;
use ka_codec::wire::tcp::TcpRepr;
use ka_endpoint::{ReassemblyConfig, Stack, StackConfig};
use proptest::prelude::*;
use std::time::{Duration, Instant};

/// A stack listening on port 80 with one half-open active connection, plus
/// an established connection pair in a `Net` for the deeper cases.
fn lone_stack(now: Instant) -> Stack {
    let mut s = Stack::new(stack_cfg(9, test_tcp()), now);
    s.listen(80);
    s.connect(now, a_sock(0), b_sock(1234)).unwrap();
    s
}

fn drain(s: &mut Stack, now: Instant) {
    let mut buf = vec![0u8; 1600];
    for _ in 0..1000 {
        if s.poll_transmit(now, &mut buf).is_none() {
            break;
        }
    }
    while s.poll_event().is_some() {}
}

fn ipv4(
    src: [u8; 4],
    dst: [u8; 4],
    ident: u16,
    mf: bool,
    off: usize,
    proto: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut p = vec![0u8; 20 + payload.len()];
    Ipv4Repr {
        src,
        dst,
        protocol: proto,
        ttl: 64,
        ident,
        dont_frag: false,
        more_frags: mf,
        frag_offset: off,
        dscp_ecn: 0,
        payload_len: payload.len(),
    }
    .emit(&mut p)
    .unwrap();
    p[20..].copy_from_slice(payload);
    p
}

/// A checksum-correct TCP segment from 10.0.0.1:`sport` to 10.0.0.2:`dport`.
#[allow(clippy::too_many_arguments)]
fn segment(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    opts: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    // raw options (cut to a multiple of 4) so malformed ones reach the parser
    let olen = opts.len().min(40) / 4 * 4;
    let tcp = TcpRepr::new(sport, dport, seq, ack, flags, window);
    TcpSegment {
        ident: 7,
        raw_tcp_options: &opts[..olen],
        payload,
        ..TcpSegment::new(Addrs::V4([10, 0, 0, 1], [10, 0, 0, 2]), tcp)
    }
    .to_vec()
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(pkts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1600), 1..8)) {
        let now = Instant::now();
        let mut s = lone_stack(now);
        for (i, p) in pkts.iter().enumerate() {
            let t = now + Duration::from_millis(i as u64 * 10);
            s.handle_packet(t, p);
            drain(&mut s, t);
            s.handle_timeout(t);
        }
    }

    #[test]
    fn arbitrary_ip_headers_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..200),
        ident in any::<u16>(), mf in any::<bool>(), off in 0usize..8192, proto in prop_oneof![Just(6u8), any::<u8>()],
    ) {
        let now = Instant::now();
        let mut s = lone_stack(now);
        let p = ipv4([10, 0, 0, 1], [10, 0, 0, 2], ident, mf, off / 8 * 8, proto, &body);
        s.handle_packet(now, &p);
        drain(&mut s, now);
        // IPv6 with arbitrary extension headers
        let mut v6 = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
        v6[4..6].copy_from_slice(&(body.len() as u16).to_be_bytes());
        v6.extend_from_slice(&[0u8; 32]);
        v6.extend_from_slice(&body);
        s.handle_packet(now, &v6);
        drain(&mut s, now);
    }

    #[test]
    fn forged_segments_into_live_connections_never_panic(
        segs in proptest::collection::vec(
            (any::<u8>(), prop_oneof![-3000i32..70_000, any::<i32>()],
             prop_oneof![-3000i32..3000, any::<i32>()], any::<u16>(),
             proptest::collection::vec(any::<u8>(), 0..40),
             proptest::collection::vec(any::<u8>(), 0..1500), 0usize..3),
            1..12)
    ) {
        // a real established pair; the forged segments come "from A" to B
        let mut net = Net::default_pair(Duration::from_millis(5), 77);
        let h = net.connect(80);
        net.send_bulk(Side::A, h, payload(3000, 1), false);
        net.run_for(Duration::from_millis(200));
        let sport = net.a.conn(h).unwrap().local_addr().port();
        // sequence and acknowledgement numbers near the live ones
        let last = net.last_a_packet.clone().unwrap();
        let tcp = ka_codec::wire::tcp::TcpPacket::new_checked(&last[20..]).unwrap();
        let (base_seq, base_ack) = (tcp.seq().wrapping_add(tcp.payload().len() as u32), tcp.ack());
        for (flags, dseq, dack, win, opts, body, target) in segs {
            let dport = [80u16, 80, 81][target];
            let seq = base_seq.wrapping_add(dseq as u32);
            let ack = base_ack.wrapping_add(dack as u32);
            let pkt = segment(sport, dport, seq, ack, flags, win, &opts, &body);
            let now = net.now;
            net.b.handle_packet(now, &pkt);
            net.run_for(Duration::from_millis(30));
        }
        // invariants still hold
        for hb in net.b.handles().collect::<Vec<_>>() {
            let c = net.b.conn(hb).unwrap();
            prop_assert!(c.readable() <= 1 << 20);
        }
    }
}

#[test]
fn fragment_flood_respects_memory_cap() {
    let now = Instant::now();
    for cap in [64 * 1024, 4 << 20] {
        let mut cfg = StackConfig::deterministic([3; 16]);
        cfg.reassembly = ReassemblyConfig {
            max_bytes: cap,
            ..ReassemblyConfig::default()
        };
        let mut s = Stack::new(cfg, now);
        let mut rng = common::Rng::new(5);
        let body = vec![0xabu8; 1480];
        let mut peak = 0;
        for i in 0..20_000u32 {
            let len = 8 * (1 + rng.below(185) as usize);
            let off = 8 * rng.below(8000) as usize;
            let src = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
            let p = ipv4(
                src,
                [10, 0, 0, 2],
                rng.next_u64() as u16,
                true,
                off,
                6,
                &body[..len],
            );
            s.handle_packet(now + Duration::from_micros(u64::from(i)), &p);
            peak = peak.max(s.reassembler().memory());
            assert!(s.reassembler().memory() <= cap);
        }
        // datagrams that never complete: every other 1480-byte slot filled
        for d in 0..256u32 {
            for k in 0..22usize {
                let src = [10, 1, (d >> 8) as u8, d as u8];
                let p = ipv4(src, [10, 0, 0, 2], d as u16, true, k * 2960, 6, &body);
                s.handle_packet(now + Duration::from_millis(100), &p);
                peak = peak.max(s.reassembler().memory());
                assert!(s.reassembler().memory() <= cap);
            }
        }
        assert!(peak > cap / 2, "the flood did fill reassembly: {peak}");
        assert!(s.reassembler().in_progress() <= 256);
        // after 30 s everything is gone
        s.handle_timeout(now + Duration::from_secs(31));
        assert_eq!(s.reassembler().memory(), 0);
    }
}

#[test]
fn overlapping_fragments_drop_the_datagram() {
    let now = Instant::now();
    let mut s = Stack::new(StackConfig::deterministic([3; 16]), now);
    s.listen(80);
    let syn = segment(
        1000,
        80,
        1,
        0,
        ka_codec::wire::tcp::SYN,
        1000,
        &[],
        &[0u8; 64],
    );
    let tcp = &syn[20..];
    // first fragment 0..48, then an overlapping 40..(end)
    let f1 = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 9, true, 0, 6, &tcp[..48]);
    let f2 = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 9, false, 40, 6, &tcp[40..]);
    s.handle_packet(now, &f1);
    s.handle_packet(now, &f2);
    assert_eq!(s.reassembler().stats().overlaps, 1);
    assert_eq!(s.connection_count(), 0);
    // the same datagram split cleanly is accepted
    let f1 = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 10, true, 0, 6, &tcp[..48]);
    let f2 = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 10, false, 48, 6, &tcp[48..]);
    s.handle_packet(now, &f2);
    s.handle_packet(now, &f1);
    assert_eq!(s.connection_count(), 1);
}

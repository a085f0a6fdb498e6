//! RWM in virtual time: handshakes, caps, classes, the table's bounds.

use std::time::{Duration, Instant};

use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::checksum::{pseudo_v4, pseudo_v6};
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_codec::wire::ipv6::Ipv6Packet;
use ka_codec::wire::tcp::{ACK, FIN, RST, SYN, TcpOptions, TcpPacket, TcpRepr};
use proptest::prelude::*;

use super::*;

const MS: u64 = 1_000_000;

/// One TCP endpoint pair; `a` is the initiator (its packets travel
/// `Side::Forward`), `b` the responder.
#[derive(Debug, Clone, Copy)]
struct Conn {
    a: [u8; 16],
    b: [u8; 16],
    pa: u16,
    pb: u16,
    v6: bool,
    isn_a: u32,
    isn_b: u32,
    ws_a: Option<u8>,
    ws_b: Option<u8>,
    mss: u16,
    /// IPv4 options / an IPv6 destination-options header.
    ip_opts: bool,
}

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut o = [0u8; 16];
    o[12..].copy_from_slice(&a);
    o
}

impl Conn {
    fn new(i: u16) -> Conn {
        Conn {
            a: v4([10, 0, 0, 1]),
            b: v4([10, 0, 1, 1]),
            pa: 40_000 + i,
            pb: 5001,
            v6: false,
            isn_a: 1000 * u32::from(i) + 7,
            isn_b: 0xFFFF_FF00u32.wrapping_add(u32::from(i)),
            ws_a: Some(7),
            ws_b: Some(7),
            mss: 1460,
            ip_opts: false,
        }
    }

    fn v6(mut self) -> Conn {
        self.a = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        self.b = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        self.v6 = true;
        self
    }

    /// A segment from `a` (`from_a`) or `b`.
    fn seg(
        &self,
        from_a: bool,
        flags: u8,
        seq: u32,
        ack: u32,
        window: u16,
        payload: usize,
    ) -> Vec<u8> {
        let mut options = TcpOptions::default();
        if flags & SYN != 0 {
            options.mss = Some(self.mss);
            options.window_scale = if from_a { self.ws_a } else { self.ws_b };
            options.sack_permitted = true;
        }
        options.timestamps = Some((12345, 678));
        let (src, dst, sp, dp) = if from_a {
            (self.a, self.b, self.pa, self.pb)
        } else {
            (self.b, self.a, self.pb, self.pa)
        };
        let tcp = TcpRepr {
            options,
            ..TcpRepr::new(sp, dp, seq, ack, flags, window)
        };
        let data: Vec<u8> = (0..payload).map(|i| (i * 13) as u8).collect();
        // the IP options of `ip_opts`: three NOPs and an EOL (IPv4), an
        // 8-byte Destination Options header holding one PadN (IPv6)
        let (addrs, ip_options): (_, &[u8]) = if self.v6 {
            (Addrs::V6(src, dst), &[1, 4, 0, 0, 0, 0])
        } else {
            let s4 = src[12..].try_into().unwrap();
            let d4 = dst[12..].try_into().unwrap();
            (Addrs::V4(s4, d4), &[1, 1, 1, 0])
        };
        TcpSegment {
            ident: 1,
            dont_frag: true,
            ip_options: if self.ip_opts { ip_options } else { &[] },
            payload: &data,
            ..TcpSegment::new(addrs, tcp)
        }
        .to_vec()
        .unwrap()
    }

    /// Runs the handshake through `rwm`: SYN at `t`, SYN-ACK `far` later,
    /// ACK `near` after that. Returns the time of the ACK.
    fn handshake(&self, rwm: &mut Rwm, t: Instant, far: u64, near: u64) -> Instant {
        let syn = self.seg(true, SYN, self.isn_a, 0, 65_535, 0);
        assert_eq!(process(rwm, t, Side::Forward, syn).0, RwmOutcome::Handshake);
        let t1 = t + Duration::from_nanos(far);
        let sa = self.seg(false, SYN | ACK, self.isn_b, self.isn_a + 1, 65_535, 0);
        assert_eq!(process(rwm, t1, Side::Reverse, sa).0, RwmOutcome::Handshake);
        let t2 = t1 + Duration::from_nanos(near);
        let ack = self.seg(
            true,
            ACK,
            self.isn_a + 1,
            self.isn_b.wrapping_add(1),
            100,
            0,
        );
        let (o, _) = process(rwm, t2, Side::Forward, ack);
        assert!(
            matches!(o, RwmOutcome::Unchanged | RwmOutcome::Rewritten { .. }),
            "handshake not completed: {o:?}"
        );
        t2
    }

    /// An ACK from the responder `b` (travels `Side::Reverse`) advertising
    /// `window`; returns what RWM did and the packet.
    fn ack_from_b(&self, rwm: &mut Rwm, t: Instant, window: u16) -> (RwmOutcome, Vec<u8>) {
        let p = self.seg(
            false,
            ACK,
            self.isn_b.wrapping_add(1),
            self.isn_a + 1,
            window,
            0,
        );
        process(rwm, t, Side::Reverse, p)
    }

    fn ack_from_a(&self, rwm: &mut Rwm, t: Instant, window: u16) -> (RwmOutcome, Vec<u8>) {
        let p = self.seg(
            true,
            ACK,
            self.isn_a + 1,
            self.isn_b.wrapping_add(1),
            window,
            0,
        );
        process(rwm, t, Side::Forward, p)
    }
}

/// Runs `p` through `rwm` and checks the invariants every call keeps:
/// same length, only window and checksum bytes changed, checksum valid.
fn process(rwm: &mut Rwm, t: Instant, side: Side, mut p: Vec<u8>) -> (RwmOutcome, Vec<u8>) {
    let before = p.clone();
    let o = rwm.process(t, side, &mut p);
    assert_eq!(p.len(), before.len());
    rwm.table.check();
    if let RwmOutcome::Rewritten { written, .. } = o {
        assert!(tcp_checksum_ok(&p), "checksum broken");
        let at = segment::parse(&p).unwrap().tcp_at;
        for (i, (x, y)) in before.iter().zip(&p).enumerate() {
            if !(at + 14..at + 18).contains(&i) {
                assert_eq!(x, y, "byte {i} changed");
            }
        }
        assert_eq!(segment::window(&p, at), Some(written));
    } else {
        assert_eq!(p, before, "{o:?} but the packet changed");
    }
    (o, p)
}

fn tcp_checksum_ok(p: &[u8]) -> bool {
    let at = segment::parse(p).unwrap().tcp_at;
    if p[0] >> 4 == 4 {
        let ip = Ipv4Packet::new_checked(p).unwrap();
        let seg = &p[at..ip.total_len()];
        let pseudo = pseudo_v4(ip.src_addr(), ip.dst_addr(), 6, seg.len() as u32);
        ip.verify_checksum() && TcpPacket::new_checked(seg).unwrap().verify_checksum(pseudo)
    } else {
        let ip = Ipv6Packet::new_checked(p).unwrap();
        let seg = &p[at..ip.total_len()];
        let pseudo = pseudo_v6(ip.src_addr(), ip.dst_addr(), 6, seg.len() as u32);
        TcpPacket::new_checked(seg).unwrap().verify_checksum(pseudo)
    }
}

fn rwm(c_bps: u64) -> (Rwm, Instant) {
    let t0 = Instant::now();
    (Rwm::new(RwmConfig::new(c_bps), t0).unwrap(), t0)
}

/// The window the sender sees after RWM: `field << wscale`.
fn scaled(o: RwmOutcome, ws: u8) -> u64 {
    match o {
        RwmOutcome::Rewritten { written, .. } => u64::from(written) << ws,
        other => panic!("not rewritten: {other:?}"),
    }
}

#[test]
fn one_flow_gets_the_bdp_and_checksums_verify() {
    for v6 in [false, true] {
        for ip_opts in [false, true] {
            let (mut r, t0) = rwm(50_000_000);
            let mut c = Conn::new(1);
            c.ip_opts = ip_opts;
            if v6 {
                c = c.v6();
            }
            // 12 ms beyond the router, 8 ms before it: RTT 20 ms.
            let t = c.handshake(&mut r, t0, 12 * MS, 8 * MS);
            // BDP = 50 Mbit/s · 20 ms = 125 000 bytes; wscale 7 → 976.
            let (o, p) = c.ack_from_b(&mut r, t, 60_000);
            assert_eq!(
                o,
                RwmOutcome::Rewritten {
                    advertised: 60_000,
                    written: (125_000u32 >> 7) as u16
                },
                "v6 {v6} ip options {ip_opts}"
            );
            assert!(tcp_checksum_ok(&p));
            // The other way (b's data to a) is capped the same (same C).
            let (o, _) = c.ack_from_a(&mut r, t, 60_000);
            assert_eq!(scaled(o, 7), (125_000 >> 7) << 7);
            assert_eq!(r.stats().windows_rewritten, [1, 1]);
        }
    }
}

#[test]
fn a_window_below_the_cap_is_untouched() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, 10 * MS, 10 * MS);
    // Cap: 976 units; 900 is below, 976 is at it.
    for w in [0, 1, 900, 976] {
        assert_eq!(c.ack_from_b(&mut r, t, w).0, RwmOutcome::Unchanged, "{w}");
    }
    assert_eq!(r.stats().windows_rewritten, [0, 0]);
}

#[test]
fn without_window_scaling_on_both_sides_no_shift() {
    let (mut r, t0) = rwm(50_000_000);
    let mut c = Conn::new(1);
    c.ws_b = None; // the responder does not scale: neither side does
    let t = c.handshake(&mut r, t0, 2 * MS, 2 * MS);
    // BDP = 50 Mbit/s · 4 ms = 25 000 bytes, unscaled.
    let (o, _) = c.ack_from_b(&mut r, t, 65_535);
    assert_eq!(scaled(o, 0), 25_000);
}

#[test]
fn n_flows_of_one_class_get_c_over_n_each() {
    let (mut r, t0) = rwm(100_000_000);
    let conns: Vec<Conn> = (0..5).map(Conn::new).collect();
    let mut t = t0;
    for c in &conns {
        t = c.handshake(&mut r, t, 30 * MS, 10 * MS); // RTT 40 ms
    }
    assert_eq!(r.active_in_class(0), 5);
    assert_eq!(r.stats().flows, 5);
    // 100 Mbit/s · 40 ms / 5 = 100 000 bytes each.
    for c in &conns {
        let (o, _) = c.ack_from_b(&mut r, t, u16::MAX);
        let got = scaled(o, 7);
        assert!((100_000 - 128..=100_000).contains(&got), "{got}");
    }
    // Σ RWND_i / RTT_i = C (seed Eq. 1) within rounding.
    let sum: f64 = conns
        .iter()
        .map(|c| scaled(c.ack_from_b(&mut r, t, u16::MAX).0, 7) as f64 / 0.040)
        .sum();
    assert!((sum * 8.0 / 100e6 - 1.0).abs() < 0.01, "{sum}");
}

#[test]
fn different_rtts_get_windows_proportional_to_rtt() {
    let (mut r, t0) = rwm(80_000_000);
    let a = Conn::new(1);
    let b = Conn::new(2);
    let t = a.handshake(&mut r, t0, 10 * MS, 10 * MS); // 20 ms
    let t = b.handshake(&mut r, t, 50 * MS, 50 * MS); // 100 ms
    let wa = scaled(a.ack_from_b(&mut r, t, u16::MAX).0, 7);
    let wb = scaled(b.ack_from_b(&mut r, t, u16::MAX).0, 7);
    // Equal rates C/2: windows 40 Mbit/s × RTT.
    assert!((wa as f64 - 100_000.0).abs() <= 128.0, "{wa}");
    assert!((wb as f64 - 500_000.0).abs() <= 128.0, "{wb}");
}

#[test]
fn two_classes_get_their_shares() {
    let t0 = Instant::now();
    let mut cfg = RwmConfig::new(100_000_000);
    cfg.classes = vec![RwmClass {
        name: "web".into(),
        ports: vec![80, 443],
        share: 0.6,
    }];
    let mut r = Rwm::new(cfg, t0).unwrap();
    let mut web = Conn::new(1);
    web.pb = 443;
    let mut web2 = Conn::new(2);
    web2.pb = 80;
    let bulk = Conn::new(3); // port 5001: the default class, 40 %
    let mut t = t0;
    for c in [&web, &web2, &bulk] {
        t = c.handshake(&mut r, t, 25 * MS, 25 * MS); // 50 ms
    }
    assert_eq!((r.active_in_class(0), r.active_in_class(1)), (2, 1));
    // web: 60 Mbit/s · 50 ms / 2 = 187 500; default: 40 Mbit/s · 50 ms = 250 000.
    for (c, want) in [(&web, 187_500.0), (&web2, 187_500.0), (&bulk, 250_000.0)] {
        let got = scaled(c.ack_from_b(&mut r, t, u16::MAX).0, 7) as f64;
        assert!((got - want).abs() <= 128.0, "{got} vs {want}");
    }
}

#[test]
fn delta_scales_the_cap() {
    for (delta, want) in [(-0.1, 112_500.0), (0.0, 125_000.0), (0.1, 137_500.0)] {
        let t0 = Instant::now();
        let mut cfg = RwmConfig::new(50_000_000);
        cfg.delta = delta;
        let mut r = Rwm::new(cfg, t0).unwrap();
        let c = Conn::new(1);
        let t = c.handshake(&mut r, t0, 10 * MS, 10 * MS);
        let got = scaled(c.ack_from_b(&mut r, t, u16::MAX).0, 7) as f64;
        assert!((got - want).abs() <= 128.0, "δ {delta}: {got}");
    }
}

#[test]
fn each_direction_uses_its_own_capacity() {
    let t0 = Instant::now();
    let mut cfg = RwmConfig::new(0);
    // Forward data (a → b) at 100 Mbit/s, reverse data at 10 Mbit/s.
    cfg.capacity_bps = [100_000_000, 10_000_000];
    let mut r = Rwm::new(cfg, t0).unwrap();
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, 10 * MS, 10 * MS);
    // b's ACKs travel Reverse and limit the forward data: 250 000 bytes.
    assert_eq!(scaled(c.ack_from_b(&mut r, t, u16::MAX).0, 7), 249_984);
    // a's ACKs limit the reverse data: 25 000 bytes.
    assert_eq!(scaled(c.ack_from_a(&mut r, t, u16::MAX).0, 7), 24_960);
}

#[test]
fn unseen_handshakes_and_non_tcp_are_untouched() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    // Mid-stream: no SYN seen.
    assert_eq!(c.ack_from_b(&mut r, t0, 65_535).0, RwmOutcome::Untracked);
    // Only the SYN seen: still nothing to cap.
    let syn = c.seg(true, SYN, c.isn_a, 0, 65_535, 0);
    process(&mut r, t0, Side::Forward, syn);
    assert_eq!(c.ack_from_b(&mut r, t0, 65_535).0, RwmOutcome::Handshake);
    // UDP, ICMP, garbage.
    let mut udp = c.seg(true, ACK, 1, 1, 65_535, 10);
    udp[9] = 17;
    Ipv4Packet::new_unchecked(&mut udp[..]).fill_checksum();
    assert_eq!(
        process(&mut r, t0, Side::Forward, udp).0,
        RwmOutcome::NotTcp
    );
    assert_eq!(
        process(&mut r, t0, Side::Forward, vec![0x45; 10]).0,
        RwmOutcome::Malformed
    );
    assert_eq!(
        process(&mut r, t0, Side::Forward, vec![]).0,
        RwmOutcome::NotTcp
    );
    let s = r.stats();
    assert_eq!(
        (s.untracked, s.not_tcp, s.malformed, s.windows_rewritten),
        (1, 2, 1, [0, 0])
    );
}

#[test]
fn a_non_first_fragment_and_a_cut_leading_fragment_are_untouched() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, 10 * MS, 10 * MS);
    let mut p = c.seg(false, ACK, c.isn_b.wrapping_add(1), c.isn_a + 1, 60_000, 0);
    // Offset 8: not the first fragment.
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
        ip.set_flags_and_offset(false, false, 8);
        ip.fill_checksum();
    }
    assert_eq!(process(&mut r, t, Side::Reverse, p).0, RwmOutcome::NotTcp);
    // A leading fragment holding only 24 bytes of a 32-byte TCP header.
    let mut p = c.seg(
        false,
        ACK,
        c.isn_b.wrapping_add(1),
        c.isn_a + 1,
        60_000,
        100,
    );
    p.truncate(44);
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
        ip.set_total_len(44);
        ip.set_flags_and_offset(false, true, 0);
        ip.fill_checksum();
    }
    assert_eq!(
        process(&mut r, t, Side::Reverse, p).0,
        RwmOutcome::Malformed
    );
}

#[test]
fn rtt_is_syn_to_ack_and_a_retransmitted_syn_restarts_it() {
    let (mut r, t0) = rwm(80_000_000);
    let c = Conn::new(1);
    let syn = c.seg(true, SYN, c.isn_a, 0, 65_535, 0);
    process(&mut r, t0, Side::Forward, syn.clone());
    // The first SYN was lost beyond the router; the copy 1 s later gets a
    // SYN-ACK 15 ms after it and the ACK 5 ms after that.
    let t1 = t0 + Duration::from_secs(1);
    process(&mut r, t1, Side::Forward, syn);
    let t = t1 + Duration::from_millis(15);
    let sa = c.seg(false, SYN | ACK, c.isn_b, c.isn_a + 1, 65_535, 0);
    process(&mut r, t, Side::Reverse, sa);
    let t = t + Duration::from_millis(5);
    let ack = c.seg(true, ACK, c.isn_a + 1, c.isn_b.wrapping_add(1), 100, 0);
    process(&mut r, t, Side::Forward, ack);
    // 80 Mbit/s · 20 ms = 200 000 bytes (not 80 Mbit/s · 1.02 s).
    assert_eq!(scaled(c.ack_from_b(&mut r, t, u16::MAX).0, 7), 199_936);
    let s = r.stats();
    assert_eq!(s.handshake_rtt_sum_ns, 20 * MS);
    assert_eq!(
        (s.handshake_rtt_min_ns, s.handshake_rtt_max_ns),
        (20 * MS, 20 * MS)
    );
}

#[test]
fn a_syn_ack_that_does_not_acknowledge_the_syn_is_ignored() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    process(
        &mut r,
        t0,
        Side::Forward,
        c.seg(true, SYN, c.isn_a, 0, 65_535, 0),
    );
    let bad = c.seg(false, SYN | ACK, c.isn_b, c.isn_a + 99, 65_535, 0);
    process(&mut r, t0, Side::Reverse, bad);
    let ack = c.seg(true, ACK, c.isn_a + 1, c.isn_b.wrapping_add(1), 100, 0);
    assert_eq!(
        process(&mut r, t0, Side::Forward, ack).0,
        RwmOutcome::Handshake
    );
    assert_eq!(r.stats().flows, 0);
}

#[test]
fn fin_from_both_sides_and_rst_remove_the_flow() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, MS, MS);
    let fin_a = c.seg(
        true,
        FIN | ACK,
        c.isn_a + 1,
        c.isn_b.wrapping_add(1),
        60_000,
        0,
    );
    // The FIN's own window is still capped (it is a segment like any).
    assert!(matches!(
        process(&mut r, t, Side::Forward, fin_a).0,
        RwmOutcome::Rewritten { .. }
    ));
    assert_eq!(r.stats().flows, 1, "half-closed: b may still send");
    let fin_b = c.seg(
        false,
        FIN | ACK,
        c.isn_b.wrapping_add(1),
        c.isn_a + 2,
        60_000,
        0,
    );
    process(&mut r, t, Side::Reverse, fin_b);
    assert_eq!((r.stats().flows, r.stats().closed), (0, 1));
    assert_eq!(c.ack_from_b(&mut r, t, 60_000).0, RwmOutcome::Untracked);

    let c = Conn::new(2);
    let t = c.handshake(&mut r, t, MS, MS);
    let rst = c.seg(false, RST, c.isn_b.wrapping_add(1), 0, 0, 0);
    process(&mut r, t, Side::Reverse, rst);
    assert_eq!((r.stats().flows, r.stats().closed), (0, 2));
    assert_eq!(r.active_in_class(0), 0);
}

#[test]
fn idle_flows_stop_counting_then_expire() {
    let (mut r, t0) = rwm(100_000_000);
    let a = Conn::new(1);
    let b = Conn::new(2);
    let t = a.handshake(&mut r, t0, 10 * MS, 10 * MS);
    let t = b.handshake(&mut r, t, 10 * MS, 10 * MS);
    assert_eq!(r.active_in_class(0), 2);
    // a keeps sending; b goes quiet for more than the active window.
    let mut t = t;
    for _ in 0..15 {
        t += Duration::from_millis(100);
        a.ack_from_b(&mut r, t, 100);
    }
    assert_eq!(r.active_in_class(0), 1, "b is idle");
    assert_eq!(r.stats().flows, 2, "but still tracked");
    // a now gets the whole 100 Mbit/s · 20 ms.
    assert_eq!(scaled(a.ack_from_b(&mut r, t, u16::MAX).0, 7), 249_984);
    // b speaks again: counted again, both at half.
    b.ack_from_a(&mut r, t, 100);
    assert_eq!(r.active_in_class(0), 2);
    assert_eq!(scaled(a.ack_from_b(&mut r, t, u16::MAX).0, 7), 124_928);
    // Both silent past the idle timeout: forgotten.
    r.handle_timeout(t + Duration::from_secs(301));
    let s = r.stats();
    assert_eq!((s.flows, s.active_flows, s.expired), (0, 0, 2));
    r.table.check();
}

#[test]
fn syn_flood_neither_grows_the_table_nor_evicts_active_flows() {
    let t0 = Instant::now();
    let mut cfg = RwmConfig::new(100_000_000);
    cfg.max_flows = 8;
    cfg.max_half_open = 16;
    let mut r = Rwm::new(cfg, t0).unwrap();
    let conns: Vec<Conn> = (0..8).map(Conn::new).collect();
    let mut t = t0;
    for c in &conns {
        t = c.handshake(&mut r, t, MS, MS);
    }
    // 10 000 spoofed SYNs from everywhere, while the flows keep talking.
    for k in 0..10_000u32 {
        let mut f = Conn::new(100);
        f.a = v4(k.to_be_bytes());
        f.pa = k as u16;
        t += Duration::from_micros(10);
        let syn = f.seg(true, SYN, k, 0, 65_535, 0);
        assert_eq!(
            process(&mut r, t, Side::Forward, syn).0,
            RwmOutcome::Handshake
        );
        if k % 1000 == 0 {
            for c in &conns {
                c.ack_from_b(&mut r, t, 100);
            }
        }
    }
    let s = r.stats();
    assert_eq!((s.flows, s.active_flows, s.half_open), (8, 8, 16));
    assert_eq!(s.evicted_half_open, 10_000 - 16);
    assert_eq!(s.evicted, 0);
    // ⌈(8 + 16) / 3⌉ buckets of four: 32 positions at most.
    assert_eq!(r.config().max_table_entries(), 32);
    assert!(r.allocated_entries() <= 32);
    // Every established flow is still capped.
    for c in &conns {
        assert!(matches!(
            c.ack_from_b(&mut r, t, u16::MAX).0,
            RwmOutcome::Rewritten { .. }
        ));
    }
    // A ninth real connection while all eight are active: not tracked.
    let extra = Conn::new(50);
    let syn = extra.seg(true, SYN, extra.isn_a, 0, 65_535, 0);
    process(&mut r, t, Side::Forward, syn);
    let sa = extra.seg(false, SYN | ACK, extra.isn_b, extra.isn_a + 1, 65_535, 0);
    process(&mut r, t, Side::Reverse, sa);
    let ack = extra.seg(
        true,
        ACK,
        extra.isn_a + 1,
        extra.isn_b.wrapping_add(1),
        100,
        0,
    );
    assert_eq!(
        process(&mut r, t, Side::Forward, ack).0,
        RwmOutcome::Handshake
    );
    assert_eq!((r.stats().refused, r.stats().flows), (1, 8));
    // Once the first flow has been idle a while, a new one evicts it (LRU).
    t += Duration::from_secs(2);
    for c in &conns[1..] {
        c.ack_from_b(&mut r, t, 100);
    }
    let late = Conn::new(60);
    late.handshake(&mut r, t, MS, MS);
    let s = r.stats();
    assert_eq!((s.flows, s.evicted), (8, 1));
    assert_eq!(conns[0].ack_from_b(&mut r, t, 100).0, RwmOutcome::Untracked);
}

#[test]
fn the_index_grows_and_rebuilds_without_losing_a_flow() {
    let t0 = Instant::now();
    let mut cfg = RwmConfig::new(100_000_000);
    cfg.max_flows = 300;
    cfg.max_half_open = 30;
    let mut r = Rwm::new(cfg, t0).unwrap();
    let conns: Vec<Conn> = (0..600).map(Conn::new).collect();
    let mut t = t0;
    // 200 flows: the index grows from 4 buckets, rebuilt each time with
    // established, active flows in it (`process` checks every invariant,
    // the lists' order and each entry's place, after every packet).
    for c in &conns[..200] {
        t = c.handshake(&mut r, t, MS, MS);
    }
    let grown = r.allocated_entries();
    // At most 7/8 occupied: at least 229 positions.
    assert!(
        (229..=r.config().max_table_entries()).contains(&grown),
        "{grown}"
    );
    // Churn: every RST leaves a tombstone; they force same-size rebuilds.
    for k in 0..400 {
        let c = &conns[k];
        let rst = c.seg(false, RST, c.isn_b.wrapping_add(1), 0, 0, 0);
        process(&mut r, t, Side::Reverse, rst);
        t = conns[k + 200].handshake(&mut r, t, MS, MS);
    }
    let s = r.stats();
    assert_eq!((s.flows, s.active_flows, s.closed), (200, 200, 400));
    assert_eq!((s.evicted, s.refused), (0, 0));
    assert_eq!(r.allocated_entries(), r.config().max_table_entries());
    for c in &conns[..400] {
        assert_eq!(c.ack_from_b(&mut r, t, u16::MAX).0, RwmOutcome::Untracked);
    }
    for c in &conns[400..] {
        assert!(matches!(
            c.ack_from_b(&mut r, t, u16::MAX).0,
            RwmOutcome::Rewritten { .. }
        ));
    }
}

#[test]
fn default_share_zero_tracks_but_never_rewrites() {
    let t0 = Instant::now();
    let mut cfg = RwmConfig::new(100_000_000);
    cfg.classes = vec![RwmClass {
        name: "all-web".into(),
        ports: vec![80],
        share: 1.0,
    }];
    let mut r = Rwm::new(cfg, t0).unwrap();
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, MS, MS);
    assert_eq!(c.ack_from_b(&mut r, t, u16::MAX).0, RwmOutcome::Unchanged);
    assert_eq!(r.stats().flows, 1);
}

#[test]
fn config_validation() {
    let ok = RwmConfig::new(1_000_000);
    assert!(ok.validate().is_ok());
    let class = |share| RwmClass {
        name: "x".into(),
        ports: vec![1],
        share,
    };
    let mut c = ok.clone();
    c.classes = vec![class(0.7), class(0.7)];
    assert!(matches!(
        c.validate(),
        Err(RwmConfigError::Oversubscribed(_))
    ));
    c.classes = vec![class(0.0)];
    assert!(matches!(c.validate(), Err(RwmConfigError::BadShare(_))));
    c.classes = vec![class(0.5)];
    c.default_share = Some(0.6);
    assert!(c.validate().is_err());
    c.default_share = Some(0.5);
    assert!(c.validate().is_ok());
    let mut c = ok.clone();
    c.delta = -1.0;
    assert!(c.validate().is_err());
    let mut c = ok.clone();
    c.max_flows = 0;
    assert!(c.validate().is_err());
    let mut c = ok;
    c.capacity_bps = [1, 0];
    assert!(Rwm::new(c, Instant::now()).is_err());
}

mod accept;
mod props;

//! Virtual-time tests of the LCCP-controlled UDP source and sink.

use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use ka_codec::RcpOption;
use ka_codec::scale::Scale;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{Measurement, ModeConfig, Port, PortConfig, RateController, Signalling};
use proptest::prelude::*;

use super::*;

fn src_addr() -> SocketAddrV4 {
    "10.0.0.1:4000".parse().unwrap()
}
fn dst_addr() -> SocketAddrV4 {
    "10.0.0.2:5001".parse().unwrap()
}

/// A feedback packet from the sink's address to the source.
fn report_packet(fb: &Feedback) -> Vec<u8> {
    udp_packet(dst_addr(), src_addr(), &fb.to_bytes())
}

fn udp_packet(from: SocketAddrV4, to: SocketAddrV4, body: &[u8]) -> Vec<u8> {
    let len = 28 + body.len();
    let mut b = vec![0u8; len];
    b[0] = 0x45;
    let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
    p.set_total_len(len as u16);
    p.set_ttl(64);
    p.set_protocol(17);
    p.set_src_addr(from.ip().octets());
    p.set_dst_addr(to.ip().octets());
    p.fill_checksum();
    b[20..22].copy_from_slice(&from.port().to_be_bytes());
    b[22..24].copy_from_slice(&to.port().to_be_bytes());
    b[24..26].copy_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    b[28..].copy_from_slice(body);
    b
}

/// Runs the source alone from `from` to `to`; returns (send time, bytes).
fn drive(src: &mut CbrSource, from: Instant, to: Instant) -> Vec<(Instant, usize)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 2000];
    let mut now = from;
    while let Some(t) = src.poll_timeout() {
        if t > to {
            break;
        }
        now = now.max(t);
        src.handle_timeout(now);
        while let Some(n) = src.poll_transmit(now, &mut buf) {
            out.push((now, n));
        }
    }
    out
}

fn bits_in(out: &[(Instant, usize)], from: Instant, to: Instant) -> f64 {
    out.iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .map(|(_, n)| *n as f64 * 8.0)
        .sum()
}

/// A report as a sink 100 ms of RTT away would send it at `now` (the
/// source's clock starts at `t0`).
fn fresh(fb: Feedback, t0: Instant, now: Instant) -> Vec<u8> {
    let us = (now - t0).as_micros() as u32;
    report_packet(&Feedback {
        echo_ts: us.wrapping_sub(100_000),
        ..fb
    })
}

/// Feeds the source a fresh copy of `fb` every 50 ms for `secs`; returns
/// its departures.
fn run_signalled(
    src: &mut CbrSource,
    fb: Feedback,
    t0: Instant,
    secs: u16,
) -> Vec<(Instant, usize)> {
    let mut out = Vec::new();
    let mut t = t0;
    for i in 0..secs * 20 {
        let f = Feedback {
            count: fb.count.wrapping_add(i),
            ..fb
        };
        assert_eq!(src.handle_packet(t, &fresh(f, t0, t)), SourceInput::Fresh);
        let next = t + Duration::from_millis(50);
        out.extend(drive(src, t, next));
        t = next;
    }
    out
}

/// The source obeys a signalled rate within 2 % over 1 s, whichever
/// carrier signalled it, and never exceeds its application rate.
#[test]
fn obeys_the_signalled_rate_within_2_percent_over_1_s() {
    let scale = Scale::PAPER;
    for code_wire in [3u8, 40, 80, 120] {
        let t0 = Instant::now();
        let code = scale.code_from_wire(code_wire).unwrap();
        let want = scale.decode(code) * 8000.0;
        let mut cfg = CbrConfig::new(src_addr(), dst_addr(), 10_000_000_000);
        cfg.initial_rate_bps = 1_000_000;
        let mut src = CbrSource::new(cfg, t0).unwrap();
        src.start(t0);
        let fb = Feedback {
            ka_code: code_wire,
            count: 1,
            ..Feedback::default()
        };
        let out = run_signalled(&mut src, fb, t0, 2);
        assert_eq!(src.signalled_bps(), Some(want as u64));
        assert_eq!(src.srtt(), Some(Duration::from_millis(100)));
        let s = Duration::from_secs(1);
        let got = bits_in(&out, t0 + s / 2, t0 + s / 2 + s);
        let err = (got - want).abs() / want;
        assert!(
            err < 0.02,
            "code {code_wire}: {got} bit/s vs {want} ({err:.4})"
        );
    }
    // The RCP carrier: 200 000 B/s = 1.6 Mbit/s, capped by the app rate.
    for (app, want) in [(5_000_000u64, 1_600_000f64), (1_000_000, 1_000_000.0)] {
        let t0 = Instant::now();
        let mut src = CbrSource::new(CbrConfig::new(src_addr(), dst_addr(), app), t0).unwrap();
        src.start(t0);
        let fb = Feedback {
            rcp_rate: 200_000,
            count: 7,
            ..Feedback::default()
        };
        let out = run_signalled(&mut src, fb, t0, 2);
        let got = bits_in(&out, t0, t0 + Duration::from_secs(1));
        assert!((got - want).abs() / want < 0.02, "{got} vs {want}");
        assert_eq!(src.stats().halvings, 0);
    }
}

/// The smaller of the two carriers wins; a report with an unchanged count
/// is stale and changes nothing.
#[test]
fn takes_the_smaller_signal_and_ignores_stale_reports() {
    let t0 = Instant::now();
    let mut src = CbrSource::new(CbrConfig::new(src_addr(), dst_addr(), 50_000_000), t0).unwrap();
    src.start(t0);
    let ka = Scale::PAPER.code_from_wire(60).unwrap(); // ≈ 4.2 Mbit/s
    let ka_bps = (Scale::PAPER.decode(ka) * 8000.0) as u64;
    let fb = Feedback {
        ka_code: 60,
        rcp_rate: 100_000, // 800 kbit/s
        count: 1,
        ..Feedback::default()
    };
    assert_eq!(
        src.handle_packet(t0, &report_packet(&fb)),
        SourceInput::Fresh
    );
    assert_eq!(src.rate_bps(), 800_000);
    let fb2 = Feedback { rcp_rate: 0, ..fb };
    assert_eq!(
        src.handle_packet(t0, &report_packet(&fb2)),
        SourceInput::Stale
    );
    assert_eq!(src.rate_bps(), 800_000);
    let fb3 = Feedback { count: 2, ..fb2 };
    assert_eq!(
        src.handle_packet(t0, &report_packet(&fb3)),
        SourceInput::Fresh
    );
    assert_eq!(src.rate_bps(), ka_bps);
    // Not ours: wrong port, wrong address, not UDP, garbage.
    let other = udp_packet(
        "10.0.0.9:5001".parse().unwrap(),
        src_addr(),
        &fb3.to_bytes(),
    );
    assert_eq!(src.handle_packet(t0, &other), SourceInput::NotOurs);
    assert_eq!(src.handle_packet(t0, &[0x45, 0, 0]), SourceInput::NotOurs);
    let bad = udp_packet(dst_addr(), src_addr(), b"LCFB\x02xxxxxxxxxxxxxxx");
    assert_eq!(
        src.handle_packet(t0, &bad),
        SourceInput::Malformed(FeedbackError::BadVersion(2))
    );
    assert_eq!(src.stats().malformed, 1);
}

/// No fresh signal: the rate halves once per no-feedback interval, down to
/// the floor; an uncontrolled source never changes its rate.
#[test]
fn silence_halves_and_uncontrolled_ignores_reports() {
    let t0 = Instant::now();
    let mut cfg = CbrConfig::new(src_addr(), dst_addr(), 2_000_000);
    cfg.initial_rate_bps = 2_000_000;
    cfg.min_rate_bps = 400_000;
    let mut src = CbrSource::new(cfg, t0).unwrap();
    src.start(t0);
    drive(&mut src, t0, t0 + Duration::from_millis(1999));
    assert_eq!(src.rate_bps(), 2_000_000);
    drive(&mut src, t0, t0 + Duration::from_millis(2001));
    assert_eq!(src.rate_bps(), 1_000_000);
    drive(&mut src, t0, t0 + Duration::from_secs(9));
    assert_eq!(src.rate_bps(), 400_000, "floor");
    assert_eq!(src.stats().halvings, 3);

    let mut plain = CbrSource::new(cfg.uncontrolled(), t0).unwrap();
    plain.start(t0);
    let fb = Feedback {
        rcp_rate: 1000,
        count: 1,
        ..Feedback::default()
    };
    assert_eq!(
        plain.handle_packet(t0, &report_packet(&fb)),
        SourceInput::Stale
    );
    let out = drive(&mut plain, t0, t0 + Duration::from_secs(5));
    let got = bits_in(
        &out,
        t0 + Duration::from_secs(3),
        t0 + Duration::from_secs(4),
    );
    assert!((got - 2e6).abs() / 2e6 < 0.02, "{got}");
    let mut buf = [0u8; 1500];
    let mut p2 = CbrSource::new(cfg.uncontrolled(), t0).unwrap();
    p2.start(t0);
    let n = p2.poll_transmit(t0, &mut buf).unwrap();
    let ip = Ipv4Packet::new_checked(&buf[..n]).unwrap();
    assert!(ip.dont_frag() && ip.header_len() == 20 && ip.verify_checksum());
}

struct Fixed(f64);

impl RateController for Fixed {
    fn on_interval(&mut self, _: &Measurement) -> f64 {
        self.0
    }
    fn rate(&self) -> f64 {
        self.0
    }
}

/// Source → a KA (or native-RCP) router port that signals a fixed rate →
/// sink → reports → source: the source settles at the signalled rate and
/// holds it within 2 % over a second.
#[test]
fn closed_loop_through_a_router_port() {
    for carrier in [Signalling::KA, Signalling::NATIVE_RCP] {
        let t0 = Instant::now();
        let r = 250.0; // B/ms = 2 Mbit/s
        let mut pc = PortConfig::new(100_000_000);
        pc.signalling = carrier;
        pc.mode = ModeConfig {
            foreign_frac: 0.0,
            ..ModeConfig::default()
        };
        pc.delay = Duration::from_millis(10);
        let mut port = Port::with_controller(pc, Box::new(Fixed(r)), t0);
        let mut src =
            CbrSource::new(CbrConfig::new(src_addr(), dst_addr(), 20_000_000), t0).unwrap();
        let mut sink = CbrSink::new(SinkConfig::new(dst_addr()));
        src.start(t0);
        let mut buf = vec![0u8; 2000];
        // (arrival time at the source, report) in flight back, 10 ms.
        let mut back: Vec<(Instant, Vec<u8>)> = Vec::new();
        let mut now = t0;
        let end = t0 + Duration::from_secs(3);
        let mut sent: Vec<(Instant, usize)> = Vec::new();
        let mut delivered = 0usize;
        while now < end {
            let next = [
                src.poll_timeout(),
                port.poll_timeout(),
                back.first().map(|b| b.0),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
            now = next;
            src.handle_timeout(now);
            while let Some(n) = src.poll_transmit(now, &mut buf) {
                sent.push((now, n));
                port.push(now, buf[..n].to_vec());
            }
            while let Some(p) = port.poll_transmit(now) {
                delivered += sink.handle_packet(&p);
                while let Some(n) = sink.poll_transmit(&mut buf) {
                    back.push((now + Duration::from_millis(10), buf[..n].to_vec()));
                }
            }
            while back.first().is_some_and(|b| b.0 <= now) {
                let (_, p) = back.remove(0);
                assert_ne!(src.handle_packet(now, &p), SourceInput::NotOurs);
            }
        }
        let want = match carrier {
            Signalling::Ka { .. } => {
                let code = Scale::PAPER.encode(r).unwrap();
                Scale::PAPER.decode(code) * 8000.0
            }
            _ => r * 8000.0,
        };
        let got = bits_in(
            &sent,
            t0 + Duration::from_secs(1),
            t0 + Duration::from_secs(2),
        );
        assert!(
            (got - want).abs() / want < 0.02,
            "{carrier:?}: {got} bit/s vs {want}"
        );
        assert!(src.srtt().unwrap() >= Duration::from_millis(20));
        assert!(delivered > 0 && sink.stats().reports > 10);
        assert_eq!(sink.peer(), Some(src_addr()));
    }
}

/// The datagram the source writes is valid IPv4/UDP with the RCP option.
#[test]
fn datagram_format() {
    let t0 = Instant::now();
    let mut cfg = CbrConfig::new(src_addr(), dst_addr(), 1_000_000);
    cfg.packet_bytes = 600; // below the indicator range has no meaning for UDP
    let mut src = CbrSource::new(cfg, t0).unwrap();
    src.start(t0);
    let mut buf = [0u8; 600];
    assert_eq!(src.poll_transmit(t0, &mut buf), Some(600));
    let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
    assert!(p.verify_checksum() && !p.dont_frag() && p.header_len() == 28);
    let (_, opt) = ka_codec::rcp_option::find_in(p.options()).unwrap().unwrap();
    assert_eq!(
        opt,
        RcpOption {
            rate_bytes_per_sec: u32::MAX,
            rtt_ms: 0
        }
    );
    assert_eq!(&p.payload()[8..16], &[0, 0, 0, 0, 0, 0, 0, 0]);
    let mut small = [0u8; 100];
    src.start(t0);
    assert_eq!(
        src.poll_transmit(t0 + Duration::from_secs(1), &mut small),
        None
    );
    assert_eq!(src.stats().buffer_too_small, 1);
    assert!(matches!(
        CbrSource::new(
            CbrConfig {
                packet_bytes: 40,
                ..cfg
            },
            t0
        ),
        Err(CbrError::PacketSize(40))
    ));
}

proptest! {
    /// Arbitrary bytes, or arbitrary UDP payloads from the sink's own
    /// address, never panic the source and never change its rate unless
    /// they are a well-formed fresh report.
    #[test]
    fn malformed_feedback_never_panics(
        raw in proptest::collection::vec(any::<u8>(), 0..80),
        body in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let t0 = Instant::now();
        let mut src = CbrSource::new(CbrConfig::new(src_addr(), dst_addr(), 3_000_000), t0).unwrap();
        src.start(t0);
        let before = src.rate_bps();
        let _ = src.handle_packet(t0, &raw);
        let got = src.handle_packet(t0, &udp_packet(dst_addr(), src_addr(), &body));
        if got != SourceInput::Fresh {
            prop_assert_eq!(src.rate_bps(), before);
        }
        let mut sink = CbrSink::new(SinkConfig::new(dst_addr()));
        let _ = sink.handle_packet(&raw);
        let mut buf = [0u8; 64];
        let _ = sink.poll_transmit(&mut buf);
    }
}

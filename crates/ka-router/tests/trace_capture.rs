//! `ka-trace` on synthetic captures: a KA flow (handshake with
//! KA-Permitted, stamped data, KA-Rate echoes, an RTT indicator, FIN)
//! written as pcap (raw IP, as `ka-router --pcap`) and as pcapng (Ethernet,
//! nanosecond `if_tsresol`, as tshark) must give the same, exact analysis;
//! truncated and corrupted captures give errors with offsets, never panics.

#![cfg(feature = "cli")]

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ka_codec::options::KaRate;
use ka_codec::wire::build::{Addrs, TcpSegment};
use ka_codec::wire::tcp::{TcpOptions, TcpRepr};
use ka_codec::{Code, Scale};
use ka_router::shell::pcap::PcapSink;
use ka_router::trace::{self, Options, TraceError};
use ka_router::{StampConfig, stamp_ipv4_with};
use proptest::prelude::*;

/// The connection's ends: the sender A (10.0.0.1:4000) and the receiver
/// B (10.0.0.2:5001).
const A: ([u8; 4], u16) = ([10, 0, 0, 1], 4000);
const B: ([u8; 4], u16) = ([10, 0, 0, 2], 5001);

/// A TCP/IPv4 segment with window 1000, TTL 64, DSCP/ECN 0.
#[allow(clippy::too_many_arguments)]
fn packet(
    (src, sport): ([u8; 4], u16),
    (dst, dport): ([u8; 4], u16),
    (seq, ack): (u32, u32),
    flags: u8,
    options: TcpOptions,
    payload: &[u8],
    df: bool,
    ident: u16,
) -> Vec<u8> {
    let tcp = TcpRepr {
        options,
        ..TcpRepr::new(sport, dport, seq, ack, flags, 1000)
    };
    TcpSegment {
        ident,
        dont_frag: df,
        payload,
        ..TcpSegment::new(Addrs::V4(src, dst), tcp)
    }
    .to_vec()
    .unwrap()
}

/// A data segment (or FIN) from A to B, acknowledging 901, without
/// options.
fn a_to_b(seq: u32, flags: u8, payload: &[u8], df: bool, ident: u16) -> Vec<u8> {
    let options = TcpOptions::default();
    packet(A, B, (seq, 901), flags, options, payload, df, ident)
}

const DATA: usize = 1460;
const SEGMENTS: u32 = 20;
const L: usize = 496;

/// (time since start, IP packet) of one KA connection.
fn ka_flow() -> Vec<(Duration, Vec<u8>)> {
    let ka = TcpOptions {
        ka_permitted: true,
        mss: Some(1460),
        ..TcpOptions::default()
    };
    let ms = Duration::from_millis;
    let mut out = vec![
        (ms(0), packet(A, B, (100, 0), 0x02, ka, &[], false, 1)),
        (ms(40), packet(B, A, (900, 101), 0x12, ka, &[], false, 1)),
        (ms(41), a_to_b(101, 0x10, &[], false, 2)),
    ];
    let wanted = Code::from_len(L).unwrap();
    let mut seq = 101u32;
    for i in 0..SEGMENTS {
        let t = ms(50 + 10 * u64::from(i));
        let p = a_to_b(seq, 0x10, &[7; DATA], false, 10 + i as u16);
        let (a, b) = stamp_ipv4_with(&StampConfig::default(), p, wanted).into_pieces();
        out.push((t, a));
        out.push((t + Duration::from_micros(200), b.expect("split")));
        seq += DATA as u32;
        let echo = TcpOptions {
            ka_rate: Some(KaRate {
                code: (L / 8) as u8,
                count: i as u8,
            }),
            ..TcpOptions::default()
        };
        out.push((
            t + ms(40),
            packet(B, A, (901, seq), 0x10, echo, &[], false, 100 + i as u16),
        ));
    }
    // After 700 ms without echoes: an RTT indicator (DF, total length 605
    // → k = 5), then FIN.
    let t = ms(1000);
    out.push((t, a_to_b(seq, 0x10, &[1; 565], true, 60)));
    seq += 565;
    out.push((t + ms(1), a_to_b(seq, 0x11, &[], false, 61)));
    out
}

const T0: Duration = Duration::from_secs(1_700_000_000);

fn pcap_bytes(flow: &[(Duration, Vec<u8>)], dir: &Path) -> Vec<u8> {
    let path = dir.join("in.pcap");
    let mut sink = PcapSink::create(&path).unwrap();
    for (t, p) in flow {
        sink.write_at(T0 + *t, p).unwrap();
    }
    sink.finish().unwrap();
    std::fs::read(path).unwrap()
}

fn pcapng_bytes(flow: &[(Duration, Vec<u8>)]) -> Vec<u8> {
    use pcap_file::DataLink;
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::{
        InterfaceDescriptionBlock, InterfaceDescriptionOption,
    };
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options: vec![InterfaceDescriptionOption::IfTsResol(9)],
    })
    .unwrap();
    for (t, p) in flow {
        let mut frame = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        frame.extend(p);
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            // pcap-file writes the timestamp in nanoseconds (hence tsresol 9).
            timestamp: T0 + *t,
            original_len: frame.len() as u32,
            data: frame.into(),
            options: vec![],
        })
        .unwrap();
    }
    w.into_inner()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ka-trace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn analyse(bytes: &[u8], out: &Path, opts: &Options) -> Result<trace::Report, TraceError> {
    trace::analyse(
        Cursor::new(bytes),
        bytes.len() as u64,
        false,
        Path::new("x"),
        out,
        opts,
    )
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn check_ka_flow(out: &Path) {
    let flows = lines(&out.join("flows.csv"));
    assert_eq!(flows[0], trace::output::FLOWS_HEADER);
    assert_eq!(flows.len(), 2, "{flows:?}");
    let f: Vec<&str> = flows[1].split(',').collect();
    let data_bytes = SEGMENTS as usize * DATA + 565;
    assert_eq!(
        &f[..7],
        [
            "1",
            "ka",
            "21",
            &data_bytes.to_string(),
            "0",
            "1.001",
            "1.001"
        ]
    );
    assert_eq!(f[7], "", "no slowdown without a capacity");
    // KA in the three bins with echoes, TCP in the silent one at 1.0–1.1 s.
    assert_eq!(f[8], "0.75");

    let detail = lines(&out.join("trace_flows.csv"));
    let d: Vec<&str> = detail[1].split(',').collect();
    let h: Vec<&str> = trace::output::TRACE_FLOWS_HEADER.split(',').collect();
    let get = |k: &str| d[h.iter().position(|x| *x == k).unwrap()];
    assert_eq!(
        (get("src"), get("sport"), get("dport")),
        ("10.0.0.1", "4000", "5001")
    );
    assert_eq!(get("handshake_rtt_ms"), "41");
    assert_eq!(
        (get("leading_fragments"), get("echoes"), get("fresh_echoes")),
        ("20", "20", "20")
    );
    assert_eq!(
        (
            get("rtt_indicators"),
            get("df_data_pkts"),
            get("retransmits")
        ),
        ("1", "0", "0")
    );
    let rate = Scale::PAPER.decode(Code::from_len(L).unwrap()) * 8000.0;
    let min: f64 = get("min_rate_bps").parse().unwrap();
    assert!((min - rate).abs() < 1e-3, "{min} vs {rate}");

    let ev = lines(&out.join("events.csv"));
    let signals: Vec<&String> = ev.iter().filter(|l| l.contains(",ka_signal,")).collect();
    assert_eq!(signals.len(), SEGMENTS as usize);
    for (i, l) in signals.iter().enumerate() {
        let c: Vec<&str> = l.split(',').collect();
        assert_eq!(c[4], (10 + i).to_string(), "identification");
        assert_eq!(c[5], L.to_string());
        assert!((c[7].parse::<f64>().unwrap() - rate).abs() < 1e-3);
    }
    let echoes: Vec<&String> = ev.iter().filter(|l| l.contains(",ka_echo,")).collect();
    assert_eq!(echoes.len(), SEGMENTS as usize);
    assert!(
        echoes[3].starts_with("0.12,1,10.0.0.2,ka_echo,,496,3,"),
        "{}",
        echoes[3]
    );
    let ind: Vec<&String> = ev
        .iter()
        .filter(|l| l.contains(",rtt_indicator,"))
        .collect();
    assert_eq!(ind.len(), 1);
    assert!(
        ind[0].ends_with(",605,5,48"),
        "k = 5 → 1.5·32 ms: {}",
        ind[0]
    );

    let series = lines(&out.join("series.csv"));
    assert_eq!(series[0], trace::output::SERIES_HEADER);
    // Bin 0.1–0.2 s: 10 segments of 20 + 1460 + 20 bytes … at 100 ms bins.
    let row = |t: &str, m: &str| {
        series
            .iter()
            .find(|l| l.starts_with(&format!("{t},{m},flow:1,")))
            .map(|l| l.rsplit(',').next().unwrap().parse::<f64>().unwrap())
    };
    let wire_per_segment = (20 + L) + (20 + 20 + DATA - L);
    assert_eq!(
        row("0.2", "wire_bps"),
        Some((10 * wire_per_segment * 8) as f64 / 0.1)
    );
    assert_eq!(
        row("0.2", "throughput_bps"),
        Some((10 * DATA * 8) as f64 / 0.1)
    );
    assert!((row("0.2", "rate_bps").unwrap() - rate).abs() < 1e-3);
    assert!((row("0.2", "echo_rate_bps").unwrap() - rate).abs() < 1e-3);
    assert_eq!(row("0.2", "fresh_echoes"), Some(10.0));
    assert_eq!(row("0.2", "ka_mode"), Some(1.0));
    assert_eq!(row("0.1", "ka_mode"), Some(1.0), "first echo at 90 ms");
    assert_eq!(row("1.1", "ka_mode"), Some(0.0), "silent for 720 ms");
    assert_eq!(
        row("0.5", "ka_mode"),
        None,
        "no row for bins without traffic"
    );
    assert_eq!(row("0.2", "df_frac"), Some(0.0));
    assert!(out.join("flow-1.svg").exists());
    let svg = std::fs::read_to_string(out.join("flow-1.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("flow 1: 10.0.0.1:4000"));
}

#[test]
fn pcap_raw_ip_ka_flow() {
    let dir = scratch("pcap");
    let bytes = pcap_bytes(&ka_flow(), &dir);
    let r = analyse(&bytes, &dir.join("out"), &Options::default()).unwrap();
    assert_eq!(r.totals.records as usize, ka_flow().len());
    check_ka_flow(&dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pcapng_ethernet_gives_the_same_analysis() {
    let dir = scratch("pcapng");
    let bytes = pcapng_bytes(&ka_flow());
    analyse(&bytes, &dir.join("ng"), &Options::default()).unwrap();
    check_ka_flow(&dir.join("ng"));
    let raw = pcap_bytes(&ka_flow(), &dir);
    analyse(&raw, &dir.join("raw"), &Options::default()).unwrap();
    for f in ["flows.csv", "series.csv", "events.csv", "trace_flows.csv"] {
        assert_eq!(
            lines(&dir.join("ng").join(f)),
            lines(&dir.join("raw").join(f)),
            "{f}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn not_a_capture_is_an_error_at_offset_0() {
    let dir = scratch("bad");
    let e = analyse(b"hello, world, this is text", &dir, &Options::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("at byte 0: not a pcap or pcapng file"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_truncation_is_an_error_with_its_offset() {
    let dir = scratch("trunc");
    let bytes = pcap_bytes(&ka_flow()[..6], &dir);
    // Record boundaries: 24-byte header, then 16 + len per record.
    let mut bounds = vec![24usize];
    for (_, p) in &ka_flow()[..6] {
        bounds.push(bounds.last().unwrap() + 16 + p.len());
    }
    for n in 0..bytes.len() {
        let r = analyse(&bytes[..n], &dir.join("o"), &Options::default());
        if bounds.contains(&n) {
            assert!(r.is_ok(), "cut at a record boundary {n}: {:?}", r.err());
            continue;
        }
        let e = r.unwrap_err();
        let TraceError::Capture { source, .. } = &e else {
            panic!("{e}")
        };
        assert!(source.truncated, "{e}");
        let start = bounds.iter().rev().find(|&&b| b <= n).copied().unwrap_or(0);
        assert!(
            source.offset as usize >= start.min(4) && source.offset as usize <= n,
            "{e} (cut at {n})"
        );
        assert!(e.to_string().contains("the file ends inside"), "{e}");
        // --keep-going analyses what came before.
        if n > 24 {
            let keep = Options {
                keep_going: true,
                ..Options::default()
            };
            let r = analyse(&bytes[..n], &dir.join("k"), &keep).unwrap();
            assert!(r.truncated.is_some());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pcapng_truncations_and_bad_lengths() {
    let dir = scratch("ngtrunc");
    let bytes = pcapng_bytes(&ka_flow()[..4]);
    for n in 0..bytes.len() {
        let _ = analyse(&bytes[..n], &dir.join("o"), &Options::default());
    }
    // A block length that is not a multiple of 4, past the header.
    let mut bad = bytes.clone();
    let idb = u32::from_le_bytes(bad[4..8].try_into().unwrap()) as usize; // SHB length
    bad[idb + 4] = 13;
    let e = analyse(&bad, &dir.join("o"), &Options::default()).unwrap_err();
    assert!(e.to_string().contains(&format!("at byte {idb}:")), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Corrupted captures: an error or an analysis, never a panic.
    #[test]
    fn corrupted_captures_never_panic(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ng in any::<bool>(),
    ) {
        let dir = scratch("prop");
        let mut bytes = if ng { pcapng_bytes(&ka_flow()[..8]) } else { pcap_bytes(&ka_flow()[..8], &dir) };
        for (i, b) in flips {
            let n = bytes.len();
            bytes[i % n] = b;
        }
        let _ = analyse(&bytes, &dir.join("o"), &Options { max_svg: 1, ..Options::default() });
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn timestamps_that_run_backwards_never_make_a_flow_end_before_it_starts() {
    let dir = scratch("backwards");
    // The FIN (last record) stamped before the SYN, and a data packet
    // stamped before the capture's first record: a clock stepped back.
    let ms = Duration::from_millis;
    let mut shifted = ka_flow();
    let n = shifted.len();
    shifted[n - 1].0 = ms(2);
    shifted[0].0 = ms(5);
    // The capture starts with a copy of the handshake's ACK at 0 ms, so the
    // SYN (5 ms) and the FIN (2 ms) keep their own times.
    let first = (ms(0), shifted[2].1.clone());
    shifted.insert(0, first);
    let bytes = pcap_bytes(&shifted, &dir);
    let r = analyse(&bytes, &dir.join("out"), &Options::default()).unwrap();
    assert_eq!(r.totals.records as usize, n + 1);
    // ka_flow() itself lists each echo before the next data segment that
    // precedes it in time; count those too.
    let unsorted = shifted
        .windows(2)
        .scan(Duration::ZERO, |latest, w| {
            *latest = (*latest).max(w[0].0);
            Some(w[1].0 < *latest)
        })
        .filter(|b| *b)
        .count();
    assert!(unsorted >= 2);
    assert_eq!(r.totals.time_backwards as usize, unsorted);
    let flows = lines(&dir.join("out").join("flows.csv"));
    let head: Vec<&str> = flows[0].split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for row in &flows[1..] {
        let v: Vec<&str> = row.split(',').collect();
        let start: f64 = v[col("start_s")].parse().unwrap();
        let end: f64 = v[col("end_s")].parse().unwrap();
        assert!(start <= end, "{row}");
        assert!(start > 0.004, "the SYN's own time: {row}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A leading fragment of 24 bytes (the smallest codes) cuts a 32-byte TCP
/// header (timestamps) in two: its trailing piece still completes the
/// segment, so the flow's size counts every byte, the last segment's too.
#[test]
fn a_leading_fragment_inside_the_tcp_header_still_counts_its_segment() {
    let dir = scratch("short-leading");
    let ms = Duration::from_millis;
    let ts = TcpOptions {
        timestamps: Some((1, 2)),
        ..TcpOptions::default()
    };
    let mut flow = vec![
        (
            ms(0),
            packet(A, B, (100, 0), 0x02, TcpOptions::default(), &[], false, 1),
        ),
        (
            ms(40),
            packet(B, A, (900, 101), 0x12, TcpOptions::default(), &[], false, 1),
        ),
    ];
    let wanted = Code::from_len(24).unwrap();
    let sizes = [DATA - 12, DATA - 12, 224];
    let mut seq = 101u32;
    for (i, &n) in sizes.iter().enumerate() {
        let p = packet(
            A,
            B,
            (seq, 901),
            0x10,
            ts,
            &vec![3; n],
            false,
            10 + i as u16,
        );
        let (a, b) = stamp_ipv4_with(&StampConfig::default(), p, wanted).into_pieces();
        assert_eq!(a.len(), 20 + 24, "the leading fragment carries 24 bytes");
        let t = ms(50 + 10 * i as u64);
        flow.push((t, a));
        flow.push((t + Duration::from_micros(100), b.expect("split")));
        seq += n as u32;
    }
    let bytes = pcap_bytes(&flow, &dir);
    analyse(&bytes, &dir.join("out"), &Options::default()).unwrap();
    let flows = lines(&dir.join("out").join("flows.csv"));
    let f: Vec<&str> = flows[1].split(',').collect();
    let total: usize = sizes.iter().sum();
    assert_eq!((f[2], f[3]), ("3", total.to_string().as_str()), "{flows:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

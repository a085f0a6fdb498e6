//! Real-network test of RWM's RST validation (DESIGN §5.2, "RST and FIN
//! count only if the receiver would accept them"): forged RSTs sent into a
//! kernel CUBIC bulk transfer through `ka-router --rate 50mbit --delay 10ms
//! --signal none --rwm` — ten with a bad TCP checksum and an acceptable
//! sequence number, ten with a good checksum and a sequence number 2³¹
//! away — leave the connection modulated: RWM rejects all of them, keeps
//! rewriting the receiver's window, and a ping alongside stays within
//! 25 % of the 20 ms base RTT. (Before the validation one such RST ended
//! the modulation: the ping went from 21 to 203 ms.) Needs root,
//! `/dev/net/tun`, iproute2 and ping; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::net::SocketAddrV4;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ka_codec::wire::checksum::pseudo_v4;
use ka_codec::wire::tcp::TcpRepr;
use ka_router::shell::testbed::{ADDR_A, ADDR_B, Side};
use netns_common::{Proc, Transfer, metric_value, scrape_metrics, testbed_or_skip};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");
/// Two 10 ms delay lines.
const BASE_RTT_MS: f64 = 20.0;
/// Forged RSTs of each kind.
const FORGED: u32 = 10;

#[test]
fn netns_role_helper() {
    if netns_common::harness::role().as_deref() == Some("forge") {
        forge();
        return;
    }
    netns_common::role_main()
}

fn epoch_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Role `forge` (in A): reads B's ACKs of the transfer from port 5001 on
/// a raw socket until one acknowledges more than 1 MB (the transfer is
/// established and modulated), then sends `FORGED` RSTs from A's side of
/// the connection with its acknowledged number as sequence number and a
/// broken TCP checksum, and `FORGED` with a good checksum and that number
/// + 2³¹. Reports the time the forgeries went out.
fn forge() {
    use rustix::net::{AddressFamily, SendFlags, SocketType, ipproto, recv, sendto, socket};
    let sniff = socket(AddressFamily::INET, SocketType::RAW, Some(ipproto::TCP)).expect("raw");
    let mut buf = vec![0u8; 65536];
    let mut first = None;
    let (port, ack) = loop {
        let (n, _) = recv(&sniff, &mut buf[..], rustix::net::RecvFlags::empty()).expect("recv");
        let p = &buf[..n];
        let hl = usize::from(p[0] & 0x0f) * 4;
        if p.len() < hl + 20 || p[12..16] != ADDR_B.octets() {
            continue;
        }
        let t = &p[hl..];
        let (sport, dport) = (
            u16::from_be_bytes([t[0], t[1]]),
            u16::from_be_bytes([t[2], t[3]]),
        );
        let a = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
        if sport != 5001 || t[13] & 0x12 != 0x10 {
            continue;
        }
        let f = *first.get_or_insert(a);
        if a.wrapping_sub(f) > 1_000_000 {
            break (dport, a);
        }
    };
    let raw = socket(AddressFamily::INET, SocketType::RAW, Some(ipproto::RAW)).expect("raw");
    let to = SocketAddrV4::new(ADDR_B, 0);
    let rst = |seq: u32, good: bool| {
        let mut t = [0u8; 20];
        let pseudo = pseudo_v4(ADDR_A.octets(), ADDR_B.octets(), 6, 20);
        TcpRepr::new(port, 5001, seq, 0, 0x04, 0)
            .emit(&mut t, &[], pseudo)
            .expect("emit");
        if !good {
            t[16] ^= 0x5a;
        }
        let mut ip = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        ip.extend_from_slice(&ADDR_A.octets());
        ip.extend_from_slice(&ADDR_B.octets());
        ip.extend_from_slice(&t);
        // IP_HDRINCL: the kernel fills in the IP checksum and identification
        sendto(&raw, &ip, SendFlags::empty(), &to).expect("sendto");
    };
    let at = epoch_s();
    for i in 0..FORGED {
        rst(ack.wrapping_add(i * 1000), false);
        rst(ack.wrapping_add(0x8000_0000 + i * 1000), true);
    }
    netns_common::harness::say(format!("RESULT at={at} port={port} seq={ack}"));
}

#[test]
fn forged_rsts_leave_rwm_modulating() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("forged_rsts_leave_rwm_modulating") else {
        return;
    };
    let metrics = format!("127.0.0.1:{}", netns_common::free_local_port());
    tb.start_router(
        Path::new(ROUTER),
        &[
            "--rate",
            "50mbit",
            "--delay",
            "10ms",
            "--queue",
            "1000",
            "--signal",
            "none",
            "--rwm",
            "--metrics",
            &metrics,
            // as in netns_rwm.rs: with the queue near empty, a forwarding
            // thread waiting for a CPU is an idle link
            "--realtime",
            "10",
        ],
    )
    .expect("router up");
    for side in [Side::A, Side::B] {
        for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
            tb.sysctl(side, key, "4096 131072 62914560").unwrap();
        }
    }
    let mut cmd: Command = tb.command(Side::A, "ping");
    cmd.args(["-D", "-n", "-i", "0.05", &ADDR_B.to_string()]);
    let mut ping = Proc::spawn("ping", cmd);
    for _ in 0..5 {
        ping.stdout_line(Duration::from_secs(10), |l| {
            netns_common::harness::ping_line(l).is_some()
        });
    }
    let mut forger = Proc::role(&tb, Side::A, "forge", &[]);
    let bytes = 40_000_000u64;
    let transfer = Transfer::start(&tb, bytes);
    let forged = forger.result(Duration::from_secs(30));
    let at = forged.num("at");
    let series = "ka_router_rwm_windows_rewritten_total{direction=\"reverse\"}";
    let rejected = "ka_router_rwm_rst_fin_rejected_total";
    // every forgery has passed the router by the time a ping sent after it
    // returns
    let t = Instant::now();
    ping.stdout_line(Duration::from_secs(10), |l| {
        netns_common::harness::ping_line(l).is_some_and(|(ts, _)| ts > at + 0.1)
    });
    let before = scrape_metrics(&metrics);
    eprintln!(
        "forged at {at:.3} ({forged:?}); {:?} later: {}",
        t.elapsed(),
        before
            .lines()
            .filter(|l| l.starts_with("ka_router_rwm"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let got = transfer.intact(Duration::from_secs(60));
    let end = epoch_s();
    let after = scrape_metrics(&metrics);
    let lines = ping.stdout_so_far();
    drop(ping);
    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "router: {}", exit.stderr);
    eprintln!("{}", exit.stdout.trim());
    let parsed: Vec<(f64, f64)> = lines
        .iter()
        .filter_map(|l| netns_common::harness::ping_line(l))
        .collect();
    let pings: Vec<f64> = parsed
        .iter()
        .filter(|(ts, _)| *ts > at + 0.2 && *ts < end - 0.2)
        .map(|&(_, r)| r)
        .collect();
    let mean = pings.iter().sum::<f64>() / pings.len().max(1) as f64;
    let max = pings.iter().copied().fold(0.0, f64::max);
    let value = |text: &str, s: &str| metric_value(text, s).unwrap_or(0.0);
    eprintln!(
        "transfer {:.2} Mbit/s; after the forgeries: {} pings, mean {mean:.2} ms, max {max:.2} ms; \
         RST/FIN rejected {}; windows rewritten {} at the forgeries, {} at the end",
        bytes as f64 * 8.0 / got.num("secs") / 1e6,
        pings.len(),
        value(&after, rejected),
        value(&before, series),
        value(&after, series),
    );
    assert!(
        value(&after, rejected) >= f64::from(2 * FORGED),
        "RWM rejected only {} of {} forged RSTs",
        value(&after, rejected),
        2 * FORGED
    );
    // (the transfer's own FINs close it at the end)
    assert_eq!(
        value(&before, "ka_router_rwm_flows_closed_total"),
        0.0,
        "a forged RST closed the connection's modulation"
    );
    assert!(
        value(&after, series) > value(&before, series) + 100.0,
        "RWM stopped rewriting windows after the forgeries"
    );
    assert!(
        pings.len() >= 20,
        "only {} pings after the forgeries",
        pings.len()
    );
    assert!(
        mean <= 1.25 * BASE_RTT_MS,
        "ping mean {mean:.2} ms after the forged RSTs, more than 25 % above {BASE_RTT_MS} ms"
    );
}

//! Live faults against the real binaries (root, namespaces; skipped loudly
//! otherwise): the router killed mid-transfer and restarted onto the
//! testbed's devices, which by then live in the namespaces.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ka_router::shell::testbed::{Side, wait_for};
use netns_common::{Proc, Transfer, testbed_or_skip};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");

#[test]
fn netns_role_helper() {
    if netns_common::harness::role().as_deref() == Some("inject") {
        inject(
            &netns_common::harness::role_param::<String>("dev"),
            netns_common::harness::role_param("rounds"),
        );
        return;
    }
    netns_common::role_main()
}

/// A crash (SIGKILL) of the router in the middle of a kernel TCP transfer,
/// then a restart with `--in-netns`/`--out-netns`: the transfer completes
/// with every byte exact, and the restarted router signals again (leading
/// fragments) within 2 s of attaching and ends in KA mode. Without the
/// namespace options the restart must fail and say where the devices are,
/// instead of creating fresh devices connected to nothing.
#[test]
fn router_killed_and_restarted_mid_transfer() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("router_killed_and_restarted_mid_transfer") else {
        return;
    };
    let metrics = format!("127.0.0.1:{}", netns_common::free_local_port());
    let common = ["--rate", "20mbit", "--delay", "10ms"];
    let mut first: Vec<&str> = common.to_vec();
    first.extend(["--metrics", &metrics]);
    tb.start_router(Path::new(ROUTER), &first)
        .expect("router up");
    // DF clear, so the router may fragment (signal) the sender's packets.
    tb.sysctl(Side::A, "net.ipv4.ip_no_pmtu_disc", "1").unwrap();

    let bytes = 30_000_000u64;
    let transfer = Transfer::start(&tb, bytes);
    // Under way: 2 MB through the router (about a second at 20 Mbit/s).
    let series = "ka_router_bytes_out_total{direction=\"forward\"}";
    wait_for(Duration::from_secs(30), "2 MB through the router", || {
        let text = netns_common::scrape_metrics(&metrics);
        Ok(netns_common::metric_value(&text, series).unwrap_or(0.0) >= 2e6)
    })
    .unwrap();
    tb.kill_router().unwrap();

    // The devices now live in the namespaces: a plain restart refuses.
    let plain = std::process::Command::new(ROUTER)
        .args(["--in", &tb.dev_a, "--out", &tb.dev_b])
        .args(common)
        .output()
        .unwrap();
    assert!(!plain.status.success());
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(
        err.contains("is not in this network namespace") && err.contains("--in-netns"),
        "{err}"
    );

    let stamps = tb.path("stamps-after.csv");
    let mut again: Vec<&str> = common.to_vec();
    again.extend(["--stamp-log", stamps.to_str().unwrap()]);
    tb.restart_router(Path::new(ROUTER), &again, 1)
        .expect("restarted router attaches");
    let attached = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();

    transfer.intact(Duration::from_secs(90));

    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "{}", exit.stderr);
    let forward = exit
        .stdout
        .lines()
        .find(|l| l.starts_with("forward"))
        .unwrap_or_default()
        .to_string();
    assert!(forward.contains("mode KA"), "{forward}");
    let log = std::fs::read_to_string(&stamps).unwrap();
    let first_stamp_ns: u128 = log
        .lines()
        .nth(1)
        .and_then(|l| l.split(',').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no leading fragment after the restart:\n{forward}"));
    let after = Duration::from_nanos(first_stamp_ns as u64).saturating_sub(attached);
    eprintln!(
        "first signal {:.3} s after the restarted router attached",
        after.as_secs_f64()
    );
    assert!(after <= Duration::from_secs(2), "{after:?}");
}

/// Crafted malformed packets: truncated headers, IHL and length
/// mismatches, bad checksums, tiny, overlapping and far-offset fragments,
/// IPv6 extension chains (long, cut, doubled Fragment headers), garbage
/// TCP/KA/RCP/XCP options, indicator-sized junk, TTL 0/1, non-IP. Between
/// the testbed's two addresses (and some to other ports of B), so every
/// stage that follows flows (RWM, echo, crowd) sees them. Deterministic.
fn crafted() -> Vec<Vec<u8>> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let a = [10, 77, 0, 1];
    let b = [10, 77, 0, 2];
    let v4 = |total: usize, ihl: u8, frag: u16, ttl: u8, proto: u8, body: &[u8]| {
        let hl = usize::from(ihl) * 4;
        let mut p = vec![0u8; hl.max(20) + body.len()];
        p[0] = 0x40 | ihl;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0x4B41u16.to_be_bytes());
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p[8] = ttl;
        p[9] = proto;
        p[12..16].copy_from_slice(&a);
        p[16..20].copy_from_slice(&b);
        // The checksum over the fixed header only: with IHL > 5 it is wrong
        // unless the caller fixes it, which is part of the junk.
        let ck = ka_codec::wire::checksum::checksum(&p[..20]);
        p[10..12].copy_from_slice(&ck.to_be_bytes());
        let at = hl.max(20);
        p[at..].copy_from_slice(body);
        p
    };
    let tcp = |opts: &[u8], flags: u8, dport: u16| {
        let hl = 20 + opts.len().div_ceil(4) * 4;
        let mut t = vec![0u8; hl + 100];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[4..8].copy_from_slice(&1234u32.to_be_bytes());
        t[12] = ((hl / 4) as u8) << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&65535u16.to_be_bytes());
        t[20..20 + opts.len()].copy_from_slice(opts);
        t
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    // Truncated headers and non-IP.
    for n in 1..20 {
        out.push(vec![0x45; n]);
    }
    for v in [0x00, 0x20, 0x70, 0xF0] {
        out.push(vec![v; 60]);
    }
    // IHL / total length mismatches, bad checksum, TTL 0/1.
    let body = tcp(&[], 0x10, 5001);
    let full = 20 + body.len();
    out.push(v4(full, 15, 0, 64, 6, &body));
    out.push(v4(full, 4, 0, 64, 6, &body));
    out.push(v4(1500, 5, 0, 64, 6, &body));
    out.push(v4(10, 5, 0, 64, 6, &body));
    out.push(v4(65535, 5, 0, 64, 6, &body));
    let mut bad = v4(full, 5, 0, 64, 6, &body);
    bad[10] ^= 0xFF;
    out.push(bad);
    out.push(v4(full, 5, 0, 0, 6, &body));
    out.push(v4(full, 5, 0, 1, 6, &body));
    // Fragments: tiny, overlapping, near offset 65535, DF with MF.
    for (frag, len) in [
        (0x2000u16, 8usize),
        (0x2001, 8),
        (0x2000, 16),
        (0x0001, 8),
        (0x1FFF, 8),
        (0x3FFF, 8),
        (0x6000, 40),
    ] {
        out.push(v4(20 + len, 5, frag, 64, 6, &body[..len]));
    }
    // Garbage TCP options, KA/RCP/XCP experiment options, an unterminated
    // options area, to B's transfer port and others, with every flag mix.
    let opts: [&[u8]; 10] = [
        &[2, 0],
        &[2, 1, 0, 0],
        &[8, 255, 1, 2],
        &[253, 4, 0x4B, 0x41],
        &[253, 6, 0x4B, 0x41, 0, 255],
        &[253, 6, 0x4B, 0x41, 255, 0],
        &[253, 2],
        &[253, 8, 0x52, 0x43, 0xFF, 0xFF, 0xFF, 0xFF],
        &[253, 8, 0x58, 0x43, 0x80, 0, 0, 0],
        &[3, 3, 14, 4, 2, 3, 1, 1, 1, 1, 1, 253, 200],
    ];
    for (i, o) in opts.iter().enumerate() {
        for flags in [0x02, 0x10, 0x12, 0x04, 0x14, 0x01, 0x11, 0x3F] {
            let port = if i % 2 == 0 { 5001 } else { 5002 + i as u16 };
            out.push(v4(
                full.max(20 + 20 + o.len().div_ceil(4) * 4 + 100),
                5,
                0,
                64,
                6,
                &tcp(o, flags, port),
            ));
        }
    }
    // IPv4 options: RCP (type 30) and XCP (type 94) with wrong lengths,
    // and an options area whose walk would stall.
    for ip_opts in [
        vec![30, 4, 0, 0],
        vec![30, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0],
        vec![94, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
        vec![94, 3, 0, 0],
        vec![7, 0, 0, 0],
        vec![68, 40, 0, 0],
    ] {
        let ihl = 5 + (ip_opts.len() / 4) as u8;
        let mut p = v4(20 + ip_opts.len() + body.len(), ihl, 0, 64, 6, &body);
        p[20..20 + ip_opts.len()].copy_from_slice(&ip_opts);
        p[10..12].copy_from_slice(&[0, 0]);
        let ck = ka_codec::wire::checksum::checksum(&p[..usize::from(ihl) * 4]);
        p[10..12].copy_from_slice(&ck.to_be_bytes());
        out.push(p);
    }
    // Indicator-sized junk: total length 600–611, DF, random bytes.
    for total in 600..=611usize {
        let junk: Vec<u8> = (0..total - 20).map(|_| rnd() as u8).collect();
        out.push(v4(total, 5, 0x4000, 64, (rnd() % 256) as u8, &junk));
        out.push(v4(total, 5, 0x4000, 64, 6, &junk));
    }
    // IPv6: extension chains that are long, cut inside a header, or carry
    // two Fragment headers; payload length 0 with bytes behind it.
    let v6 = |next: u8, payload_len: u16, rest: &[u8]| {
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&payload_len.to_be_bytes());
        p[6] = next;
        p[7] = 64;
        p[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        p.extend_from_slice(rest);
        p
    };
    let mut chain = Vec::new();
    for i in 0..12 {
        chain.extend_from_slice(&[if i < 11 { 60 } else { 6 }, 0, 1, 4, 0, 0, 0, 0]);
    }
    chain.extend_from_slice(&body);
    out.push(v6(60, chain.len() as u16, &chain));
    let cut = [60, 0, 1, 4, 0, 0, 0, 0, 60, 255, 0, 0, 0, 0, 0, 0];
    out.push(v6(60, cut.len() as u16, &cut));
    let two_frags = [44, 0, 0, 1, 0, 0, 0, 9, 6, 0, 0, 1, 0, 0, 0, 9];
    out.push(v6(
        44,
        (two_frags.len() + body.len()) as u16,
        &[&two_frags[..], &body].concat(),
    ));
    out.push(v6(6, 0, &body));
    out.push(v6(6, 60000, &body));
    // Random bytes with an IPv4 or IPv6 version nibble.
    for i in 0..200 {
        let n = 20 + (rnd() % 1480) as usize;
        let mut p: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
        p[0] = if i % 2 == 0 { 0x45 } else { 0x60 };
        out.push(p);
    }
    out
}

/// Role `inject`: writes every crafted packet `rounds` times into the TUN
/// device `dev` of this namespace through an AF_PACKET socket, which hands
/// the bytes to the device as they are (the kernel's IP stack would fix or
/// refuse them), so the router reads exactly these bytes.
fn inject(dev: &str, rounds: usize) {
    use pnet_datalink::{Channel, Config};
    let iface = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == dev)
        .unwrap_or_else(|| panic!("no interface {dev}"));
    let Ok(Channel::Ethernet(mut tx, _rx)) = pnet_datalink::channel(&iface, Config::default())
    else {
        panic!("AF_PACKET channel on {dev}");
    };
    let packets = crafted();
    let mut sent = 0usize;
    for _ in 0..rounds {
        for p in &packets {
            if let Some(Ok(())) = tx.send_to(p, None) {
                sent += 1;
            }
        }
        // A round is ~450 packets, just under the device's default
        // 500-packet queue: a pause lets the router read it (a load shape,
        // not synchronisation; the assertions allow for losses in front of
        // the router).
        std::thread::sleep(Duration::from_millis(5));
    }
    netns_common::harness::say(format!("RESULT sent={sent}"));
}

/// The crafted set, injected from both sides into a live router in each
/// mode while a kernel TCP transfer runs: the router stays up, its memory
/// stays bounded, the transfer's bytes arrive exact, and the router
/// counted the junk (drops malformed / TTL / non-IP).
#[test]
fn malformed_packets_into_a_live_router_in_every_mode() {
    let _serial = netns_common::serial();
    if !netns_common::harness::available_or_skip(
        "malformed_packets_into_a_live_router_in_every_mode",
    ) {
        return;
    }
    let modes: [&[&str]; 7] = [
        &[],
        &["--controller", "echo"],
        &["--controller", "crowd"],
        &["--rwm"],
        &["--qdisc", "fq-codel"],
        &["--signal", "xcp"],
        &["--signal", "rcp"],
    ];
    let rounds = 20;
    let per_side = crafted().len() * rounds;
    for mode in modes {
        let mut tb = ka_router::shell::testbed::Testbed::new().expect("testbed");
        let mut args = vec!["--rate", "100mbit", "--delay", "5ms"];
        args.extend_from_slice(mode);
        tb.start_router(Path::new(ROUTER), &args)
            .expect("router up");
        tb.sysctl(Side::A, "net.ipv4.ip_no_pmtu_disc", "1").unwrap();
        let bytes = 5_000_000u64;
        let transfer = Transfer::start(&tb, bytes);
        let mut injectors: Vec<Proc> = [(Side::A, tb.dev_a.clone()), (Side::B, tb.dev_b.clone())]
            .into_iter()
            .map(|(side, dev)| {
                Proc::role(
                    &tb,
                    side,
                    "inject",
                    &[("dev", dev), ("rounds", rounds.to_string())],
                )
            })
            .collect();
        for i in &mut injectors {
            let r = i.result(Duration::from_secs(60));
            assert_eq!(r.get("sent"), per_side.to_string(), "{mode:?}: injector");
        }
        eprintln!("{mode:?}: the transfer");
        transfer.intact(Duration::from_secs(60));
        let pid = tb.router_pid().expect("router still running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let hwm_kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        let exit = tb.stop_router().unwrap();
        assert!(exit.status.success(), "{mode:?}: {}", exit.stderr);
        let junk_counted = |line: &str, key: &str| -> u64 {
            line.split(key)
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        let forward = exit
            .stdout
            .lines()
            .find(|l| l.starts_with("forward"))
            .unwrap_or_default();
        eprintln!(
            "{mode:?}: peak RSS {} MB; forward: malformed {}, ttl {}, non-IP {}",
            hwm_kb / 1024,
            junk_counted(forward, "malformed "),
            junk_counted(forward, "ttl "),
            junk_counted(forward, "non-IP dropped ")
        );
        // Most of the junk reached the router and was counted there (the
        // kernel may drop some in front of it when its queue is full).
        let malformed = junk_counted(forward, "malformed ");
        assert!(malformed >= 19 * rounds as u64 / 2, "{forward}");
        assert!(
            junk_counted(forward, "non-IP dropped ") >= 2 * rounds as u64,
            "{forward}"
        );
        assert!(hwm_kb < 64 * 1024, "{mode:?}: peak RSS {hwm_kb} kB");
    }
}

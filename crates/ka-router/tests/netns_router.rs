//! Real-network tests: the `ka-router` binary between two network namespaces
//! (DESIGN §8.2), Linux kernel TCP on both ends. Needs root, `/dev/net/tun`
//! and iproute2; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ka_codec::{Code, Scale};
use ka_router::shell::testbed::{ADDR_A, ADDR_B, Side, Testbed};
use netns_common::{Proc, testbed_or_skip, v4};

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");
const TRACE: &str = env!("CARGO_BIN_EXE_ka-trace");
const PORT: u16 = 5001;

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// Receiver in B, sender in A; returns (receiver, sender) results.
fn transfer(
    tb: &Testbed,
    bytes: u64,
    timeout: Duration,
) -> (netns_common::RoleResult, netns_common::RoleResult) {
    let mut recv = Proc::role(
        tb,
        Side::B,
        "recv",
        &[("listen", format!("{ADDR_B}:{PORT}"))],
    );
    recv.said("LISTENING", Duration::from_secs(20));
    let mut send = Proc::role(
        tb,
        Side::A,
        "send",
        &[
            ("to", format!("{ADDR_B}:{PORT}")),
            ("bytes", bytes.to_string()),
        ],
    );
    let r = recv.result(timeout);
    let s = send.result(Duration::from_secs(20));
    assert_eq!(
        r.get("bytes"),
        bytes.to_string(),
        "receiver got a different byte count"
    );
    assert_eq!(
        r.get("sha256"),
        s.get("sha256"),
        "payload corrupted on the way"
    );
    (r, s)
}

/// Starts `ka-router ARGS… --pcap FILE` with the capture `name` in the
/// testbed's directory; the capture's path.
fn start_router_capturing(tb: &mut Testbed, name: &str, args: &[&str]) -> PathBuf {
    let pcap = tb.path(name);
    let mut args = args.to_vec();
    args.extend(["--pcap", pcap.to_str().unwrap()]);
    tb.start_router(Path::new(ROUTER), &args)
        .expect("router up");
    pcap
}

/// Forward-direction (A → B) packets in the capture.
fn forward_packets(
    caps: &[netns_common::Captured],
) -> Vec<(&netns_common::Captured, netns_common::V4)> {
    caps.iter()
        .filter_map(|c| v4(&c.data).map(|h| (c, h)))
        .filter(|(_, h)| h.src == ADDR_A.octets())
        .collect()
}

/// Kernel TCP with DF clear through `--rate 20mbit --delay 20ms`: exact
/// bytes, 80–100 % goodput, RTT includes the delay, leading fragments carry
/// valid codes no higher than C, and the shaper holds C.
#[test]
fn kernel_tcp_through_ka_router_gets_fragment_signals() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("kernel_tcp_through_ka_router_gets_fragment_signals") else {
        return;
    };
    let rate = 20_000_000f64;
    let stamps = tb.path("stamps.csv");
    let pcap = start_router_capturing(
        &mut tb,
        "ka.pcap",
        &[
            "--stamp-log",
            stamps.to_str().unwrap(),
            "--rate",
            "20mbit",
            "--delay",
            "20ms",
            // Configured for punctual departures: real-time priority and a
            // 200 µs spin before each (the default sleeps only; its
            // lateness is the host's wake-up latency, 100–500 µs at the
            // median on this VM when the hypervisor steals 10–30 %).
            "--realtime",
            "10",
            "--spin",
            "200us",
        ],
    );
    // DF clear on the sender's packets, so the router may fragment them.
    tb.sysctl(Side::A, "net.ipv4.ip_no_pmtu_disc", "1").unwrap();

    let bytes = 20_000_000u64;
    let steal = netns_common::StealMeter::start();
    let (r, _) = transfer(&tb, bytes, Duration::from_secs(45));
    let steal = steal.fraction();
    let goodput = bytes as f64 * 8.0 / r.num("secs");
    let rtt_ms = r.num("rtt_ms");
    eprintln!(
        "goodput {:.2} Mbit/s ({:.1} % of C), RTT {rtt_ms:.1} ms",
        goodput / 1e6,
        goodput / rate * 100.0
    );
    eprintln!(
        "CPU time stolen by the hypervisor during the transfer: {:.2} %",
        steal * 100.0
    );
    assert!(
        goodput >= 0.8 * rate && goodput <= rate,
        "goodput {goodput} bit/s"
    );
    assert!(
        rtt_ms >= 40.0,
        "RTT {rtt_ms} ms does not include 2 × 20 ms delay"
    );

    let exit = tb.stop_router().unwrap();
    assert!(
        exit.status.success(),
        "router exit {:?}: {}",
        exit.status,
        exit.stderr
    );
    assert!(
        exit.stdout.contains("forward ("),
        "final counters missing: {}",
        exit.stdout
    );
    eprintln!("{}", exit.stdout.trim());
    // Nothing was written to a device that was still down (the testbed
    // brings IPv6 up only once both devices are).
    assert!(
        exit.stdout.matches("write errors 0,").count() == 2,
        "write errors: {}\n{}",
        exit.stdout,
        exit.stderr
    );

    let caps = netns_common::read_pcap(&pcap);
    let fwd = forward_packets(&caps);
    let top = Scale::PAPER
        .encode(rate / 8000.0)
        .expect("C is encodable")
        .len();
    let mut leading = 0;
    let mut trailing = 0;
    for (_, h) in &fwd {
        if h.offset == 0 && h.mf {
            let l = h.total_len - h.header_len;
            let code = Code::from_len(l)
                .unwrap_or_else(|| panic!("leading fragment payload {l} is not a code"));
            assert!(
                code.len() <= top,
                "L = {l} signals more than C (top code {top})"
            );
            assert!(!h.df);
            leading += 1;
        } else if h.offset != 0 {
            trailing += 1;
        }
    }
    eprintln!(
        "{} forward packets, {leading} leading fragments, {trailing} trailing",
        fwd.len()
    );
    assert!(leading >= 10, "only {leading} leading fragments");
    assert_eq!(
        leading, trailing,
        "every split makes exactly one leading and one trailing piece"
    );
    trace_matches_stamp_log(&tb, &pcap, &stamps, leading, bytes);

    // Pacing (DESIGN §3.1). The core schedules departures on its own ideal
    // timeline, so a late wake-up of the pacing thread shifts bytes into the
    // next moment but never adds any: no second may carry more than C + 1 %,
    // and while TCP keeps the queue backlogged a second carries C − 1 %.
    let t0 = fwd.first().unwrap().0.ts;
    // The last full-size data packet; after it come only ACKs and the FIN.
    let t_end = fwd
        .iter()
        .rev()
        .find(|(_, h)| h.total_len >= 1000)
        .unwrap()
        .0
        .ts;
    let mut per_second = Vec::new();
    let (mut sec_start, mut sec_bytes) = (t0 + Duration::from_secs(1), 0usize);
    for (c, h) in &fwd {
        if c.ts < sec_start {
            continue;
        }
        if c.ts >= sec_start + Duration::from_secs(1) {
            per_second.push(sec_bytes as f64 * 8.0);
            sec_start += Duration::from_secs(1);
            sec_bytes = 0;
            // Stop half a second before the data ends (the queue drains).
            if sec_start + Duration::from_millis(1500) > t_end {
                break;
            }
        }
        sec_bytes += h.total_len;
    }
    eprintln!(
        "per-second forward rate, Mbit/s: {:?}",
        per_second
            .iter()
            .map(|r| (r / 1e4).round() / 100.0)
            .collect::<Vec<_>>()
    );
    assert!(
        per_second.len() >= 4,
        "transfer too short to check the rate"
    );
    for r in &per_second {
        assert!(
            *r <= rate * 1.01 + 12_000.0,
            "a second carried {r} bit/s > C + 1 %"
        );
    }
    let mut sorted = per_second.clone();
    sorted.sort_by(f64::total_cmp);
    let best = sorted[sorted.len() - 1];
    let median = sorted[sorted.len() / 2];
    // A stalled router catches up (its timeline is ideal), but a stalled
    // sender leaves the queue to drain: time the hypervisor takes from the
    // VM can idle the link, so the lower bounds give back the stolen share
    // (one run in ~15, on a VM losing 10–30 % to steal, peaked at 19.6).
    assert!(
        best >= rate * (0.99 - steal),
        "no second reached C − 1 % (best {best}, {:.1} % steal)",
        steal * 100.0
    );
    assert!(
        median >= rate * (0.97 - steal),
        "median second {median} bit/s: link mostly idle? ({:.1} % steal)",
        steal * 100.0
    );

    // Bursts: bytes released in any 2 ms window ≤ 2 ms of C plus one packet.
    // This is also a property of the host: a pacing thread that gets no CPU
    // for 5 ms releases 5 ms of packets at once. The router runs with
    // --realtime, which removes the guest scheduler from the picture, but a
    // virtual CPU stalled by its hypervisor still shows up, in proportion to
    // the CPU time stolen during the transfer (`StealMeter`: 0.6–0.75× of it
    // on our VM). Allowed: 1 % of packets in over-limit windows plus the
    // stolen fraction plus twice the share of releases the router itself
    // made ≥ 2 ms late (below); not asserted when the guest itself is oversubscribed
    // (load average ≥ CPUs or CPU pressure ≥ 5 %). For scale: pcap I/O on
    // the pacing thread, or no real-time priority, gave 20–30 % on a loaded
    // 2-CPU VM, 1–4 % with this design.
    let window = Duration::from_millis(2);
    let limit = rate / 8.0 * window.as_secs_f64() + 1500.0;
    let (mut lo, mut in_window, mut max_burst, mut over) = (0usize, 0usize, 0usize, 0usize);
    for (c, h) in &fwd {
        in_window += h.total_len;
        while fwd[lo].0.ts + window <= c.ts {
            in_window -= fwd[lo].1.total_len;
            lo += 1;
        }
        max_burst = max_burst.max(in_window);
        if in_window as f64 > limit {
            over += 1;
        }
    }
    let over_frac = over as f64 / fwd.len() as f64;
    eprintln!(
        "largest 2 ms burst {max_burst} B (limit {limit} B); {:.2} % of packets left in an over-limit window",
        over_frac * 100.0
    );
    // A pacing thread that wakes ≥ 2 ms late (the router counts those
    // releases itself) sends the packets due meanwhile in one go: a burst
    // the host made, not the pacer's schedule, and one that leaves about
    // as many on-time packets again in its window. A pacer that releases
    // early or in bursts on its own is not late, so it is still caught.
    // (One CI run: a 34 ms stall, 0 % steal, 1.29 % over the limit.)
    let late_2ms: u64 = exit
        .stdout
        .split(" at least 2 ms late")
        .next()
        .filter(|head| head.len() < exit.stdout.len())
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no count of releases ≥ 2 ms late in {}", exit.stdout));
    let late_frac = late_2ms as f64 / fwd.len() as f64;
    eprintln!(
        "{late_2ms} releases ≥ 2 ms late ({:.2} % of forward packets)",
        late_frac * 100.0
    );
    // Wall-clock burst timing says more about the host than the code when
    // runnable threads are kept waiting for a CPU: then it is reported, not
    // asserted (benches/forwarding measures forwarding on a quiet host).
    if netns_common::host_oversubscribed() {
        eprintln!(
            "!! SKIP burst bound: host is oversubscribed (load average ≥ CPUs or CPU pressure ≥ 5 %)"
        );
    } else {
        assert!(
            over_frac <= 0.01 + steal + 2.0 * late_frac,
            "{:.2} % of packets left in bursts over 2 ms of C ({:.2} % steal, {:.2} % released ≥ 2 ms late)",
            over_frac * 100.0,
            steal * 100.0,
            late_frac * 100.0
        );
    }
    // And the common case is tight: half of all releases leave within 100 µs
    // of their departure time (the router's own lateness histogram).
    let p50: u64 = exit
        .stdout
        .split("lateness p50 < ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no p50 lateness in {}", exit.stdout));
    assert!(p50 <= 100, "median release lateness up to {p50} µs");
}

/// `ka-trace` on the router's capture: for every leading fragment, in
/// order, the identification, L and decoded rate it reports equal the
/// router's own record of what it sent (`--stamp-log`); and it sees one
/// plain-TCP flow of exactly `bytes` from A.
fn trace_matches_stamp_log(tb: &Testbed, pcap: &Path, stamps: &Path, leading: usize, bytes: u64) {
    let out = tb.path("trace");
    let run = std::process::Command::new(TRACE)
        .arg(pcap)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .expect("running ka-trace");
    assert!(
        run.status.success(),
        "ka-trace failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    // time_unix_ns,direction,version,src,dst,ident,len,code,rate_bps
    let log = read(stamps.to_path_buf());
    let stamped: Vec<Vec<&str>> = log
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[1] == "forward")
        .collect();
    // time_s,flow,src,kind,ident,len,count,value
    let events = read(out.join("events.csv"));
    let seen: Vec<Vec<&str>> = events
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[3] == "ka_signal" && c[2] == ADDR_A.to_string())
        .collect();
    assert_eq!(
        stamped.len(),
        leading,
        "stamp log vs leading fragments in the capture"
    );
    assert_eq!(
        seen.len(),
        leading,
        "ka-trace vs leading fragments in the capture"
    );
    for (i, (s, e)) in stamped.iter().zip(&seen).enumerate() {
        assert_eq!((s[5], s[6]), (e[4], e[5]), "fragment {i}: ident and L");
        let (rs, re): (f64, f64) = (s[8].parse().unwrap(), e[7].parse().unwrap());
        assert!(
            (rs - re).abs() <= 0.001,
            "fragment {i}: ka-trace decodes {re} bit/s, the router stamped {rs}"
        );
    }
    let flows = read(out.join("flows.csv"));
    let rows: Vec<&str> = flows.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{flows}");
    let f: Vec<&str> = rows[0].split(',').collect();
    // The sender echoes the receiver's one-byte ping before the payload.
    assert_eq!(
        (f[1], f[3]),
        ("tcp", (bytes + 1).to_string().as_str()),
        "kernel TCP, exactly the bytes sent"
    );
    eprintln!("ka-trace agrees with the stamp log on all {leading} leading fragments");
}

/// With PMTU discovery on (DF set) the router never fragments.
#[test]
fn kernel_tcp_with_df_is_never_fragmented() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("kernel_tcp_with_df_is_never_fragmented") else {
        return;
    };
    let pcap = start_router_capturing(&mut tb, "df.pcap", &["--rate", "50mbit", "--delay", "5ms"]);
    tb.sysctl(Side::A, "net.ipv4.ip_no_pmtu_disc", "0").unwrap();
    tb.sysctl(Side::B, "net.ipv4.ip_no_pmtu_disc", "0").unwrap();
    let (r, _) = transfer(&tb, 3_000_000, Duration::from_secs(30));
    assert!(r.num("rtt_ms") >= 10.0);
    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "{}", exit.stderr);
    let caps = netns_common::read_pcap(&pcap);
    let mut tcp_data = 0;
    for c in &caps {
        if let Some(h) = v4(&c.data) {
            assert!(!h.mf && h.offset == 0, "fragmented a packet: {h:?}");
            if h.protocol == 6 && h.total_len > 1000 {
                assert!(h.df, "kernel data without DF: {h:?}");
                tcp_data += 1;
            }
        }
    }
    assert!(tcp_data > 1000, "only {tcp_data} data packets captured");
}

/// The far interface going down costs write errors, not the router: they
/// are counted (and exported as metrics), and traffic flows again once it
/// is back up.
#[test]
fn survives_far_interface_down_and_exports_metrics() {
    let _serial = netns_common::serial();
    let Some(mut tb) = testbed_or_skip("survives_far_interface_down_and_exports_metrics") else {
        return;
    };
    let metrics = format!("127.0.0.1:{}", netns_common::free_local_port());
    tb.start_router(
        Path::new(ROUTER),
        &["--rate", "100mbit", "--metrics", &metrics],
    )
    .expect("router up");
    tb.run(Side::B, &["ip", "link", "set", &tb.dev_b, "down"])
        .unwrap();
    let mut udp = Proc::role(
        &tb,
        Side::A,
        "udp",
        &[("to", format!("{ADDR_B}:9")), ("count", "50".into())],
    );
    udp.result(Duration::from_secs(20));
    let scrape = || netns_common::scrape_metrics(&metrics);
    let value = |text: &str, series: &str| netns_common::metric_value(text, series).unwrap_or(0.0);
    let series = "ka_router_write_errors_total{direction=\"forward\"}";
    ka_router::shell::testbed::wait_for(Duration::from_secs(20), "write errors in metrics", || {
        Ok(value(&scrape(), series) >= 50.0)
    })
    .unwrap();
    let text = scrape();
    for name in [
        "ka_router_rate_bytes_per_second{direction=\"forward\"}",
        "ka_router_mode{direction=\"reverse\"}",
        "ka_router_queue_packets{direction=\"forward\"}",
        "ka_router_fragments_total{direction=\"forward\"}",
        "ka_router_drops_total{direction=\"reverse\"}",
    ] {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
    assert!(
        value(
            &text,
            "ka_router_rate_bytes_per_second{direction=\"forward\"}"
        ) > 0.0
    );

    tb.run(Side::B, &["ip", "link", "set", &tb.dev_b, "up"])
        .unwrap();
    transfer(&tb, 200_000, Duration::from_secs(20));
    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert!(exit.stdout.contains("write errors"), "{}", exit.stdout);
}

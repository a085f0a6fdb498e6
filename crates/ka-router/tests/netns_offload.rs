//! Real-network test of the gateway at line rate: `ka-router --offload
//! --write-threads` between two namespaces, Linux kernel TCP (CUBIC, DF
//! clear) on both ends. Needs root, `/dev/net/tun` and iproute2; skipped
//! loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

mod netns_common;

use std::path::Path;
use std::time::Duration;

use ka_router::shell::testbed::Side;
use netns_common::testbed_or_skip;

const ROUTER: &str = env!("CARGO_BIN_EXE_ka-router");

#[test]
fn netns_role_helper() {
    netns_common::role_main()
}

/// One direction's numbers from the router's final summary line.
#[derive(Debug)]
struct Summary {
    packets_in: u64,
    reads: u64,
    packets_out: u64,
    leading_out: u64,
}

fn summary(stdout: &str, direction: &str) -> Summary {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(direction))
        .unwrap_or_else(|| panic!("no {direction} summary in:\n{stdout}"));
    let after = |key: &str| -> u64 {
        let i = line
            .find(key)
            .unwrap_or_else(|| panic!("no '{key}' in {line}"))
            + key.len();
        line[i..]
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no number after '{key}' in {line}"))
    };
    let packets_in = after("in ");
    let reads = after(" B in ");
    Summary {
        packets_in,
        reads,
        packets_out: after("out "),
        leading_out: after("leading fragments out "),
    }
}

/// Whether a thread named like the router's writer threads
/// (`ka-write-forward`, truncated by the kernel to 15 bytes) runs on this
/// host.
fn writer_threads_running() -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        std::fs::read_dir(p.path().join("task")).is_ok_and(|tasks| {
            tasks.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("ka-write-"))
            })
        })
    })
}

/// `bytes` of kernel TCP (DF clear) from A to B through `ka-router ARGS`:
/// exact; the router's forward summary and the transfer's seconds.
fn transfer(test: &str, args: &[&str], bytes: u64) -> Option<(Summary, f64)> {
    let _serial = netns_common::serial();
    let mut tb = testbed_or_skip(test)?;
    tb.start_router(Path::new(ROUTER), args).expect("router up");
    tb.sysctl(Side::A, "net.ipv4.ip_no_pmtu_disc", "1").unwrap();
    let r = netns_common::Transfer::start(&tb, bytes).intact(Duration::from_secs(120));
    if args.contains(&"--write-threads") {
        assert!(
            writer_threads_running(),
            "--write-threads given but no ka-write-* thread runs"
        );
    }
    let exit = tb.stop_router().unwrap();
    assert!(exit.status.success(), "{}", exit.stderr);
    let fwd = summary(&exit.stdout, "forward");
    eprintln!("{test}: {fwd:?}");
    assert!(
        fwd.packets_in >= bytes / 1500,
        "only {} packets in for {bytes} bytes",
        fwd.packets_in
    );
    Some((fwd, r.num("secs")))
}

/// 200 MB of kernel TCP through the KA gateway with offloads and writer
/// threads, on an unshaped 100 Gbit/s link: the bytes arrive exact, the
/// kernel handed the router super-packets (several segments per read), and
/// KA leading fragments still went out (a stamped packet leaves as two
/// fragments, which no write coalesces).
#[test]
fn kernel_tcp_through_offloaded_gateway_is_exact_and_signalled() {
    let Some((fwd, _)) = transfer(
        "kernel_tcp_through_offloaded_gateway_is_exact_and_signalled",
        &[
            "--rate",
            "100gbit",
            "--queue",
            "4000",
            "--offload",
            "--write-threads",
        ],
        200_000_000,
    ) else {
        return;
    };
    // TSO in: the kernel coalesced segments before the router read them.
    assert!(
        fwd.packets_in >= 3 * fwd.reads,
        "{} packets in {} reads: the kernel did not hand over super-packets",
        fwd.packets_in,
        fwd.reads
    );
    assert!(fwd.leading_out > 0, "no KA leading fragment went out");
    assert!(fwd.packets_out >= fwd.packets_in, "{fwd:?}");
}

/// Writer threads without offloads at a shaped rate: one read per packet,
/// every packet stamped (each leaves as two fragments), bytes exact.
#[test]
fn kernel_tcp_through_writer_threads_at_a_shaped_rate() {
    let Some((fwd, _)) = transfer(
        "kernel_tcp_through_writer_threads_at_a_shaped_rate",
        &["--rate", "200mbit", "--write-threads"],
        20_000_000,
    ) else {
        return;
    };
    assert_eq!(fwd.reads, fwd.packets_in, "{fwd:?}");
    assert!(fwd.leading_out > fwd.packets_in / 2, "{fwd:?}");
}

/// The line-rate configuration: offloads, writer threads and
/// `--stamp-every rtt`. Kernel TCP announces no RTT, so the interval is the
/// port's d (`--rtt 20ms`): the flow hears the rate about once per 20 ms —
/// at least once per interval it sent in, far fewer than one per packet —
/// and the bytes arrive exact.
#[test]
fn kernel_tcp_signalled_once_per_rtt_at_line_rate() {
    let interval = 0.020;
    let Some((fwd, secs)) = transfer(
        "kernel_tcp_signalled_once_per_rtt_at_line_rate",
        &[
            "--rate",
            "100gbit",
            "--queue",
            "4000",
            "--rtt",
            "20ms",
            "--offload",
            "--write-threads",
            "--stamp-every",
            "rtt",
        ],
        200_000_000,
    ) else {
        return;
    };
    let intervals = secs / interval;
    eprintln!(
        "{secs:.2} s = {intervals:.0} intervals, {} leading fragments",
        fwd.leading_out
    );
    // One per interval of sending (the last may be cut short), plus the
    // SYN's and the first packet's.
    assert!(
        fwd.leading_out as f64 >= intervals.floor() - 1.0,
        "{} leading fragments in {secs:.2} s: fewer than one per {interval} s",
        fwd.leading_out
    );
    assert!(
        fwd.leading_out * 10 <= fwd.packets_in,
        "{fwd:?}: not >= 10x fewer signals than packets"
    );
    assert!(fwd.packets_in >= 3 * fwd.reads, "{fwd:?}");
}

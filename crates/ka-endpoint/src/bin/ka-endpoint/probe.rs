//! `ka-endpoint probe`: runs the sans-IO [`Prober`] (DESIGN §6.7) on a TUN
//! device and prints its findings.

use std::hash::{BuildHasher as _, RandomState};
use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use ka_endpoint::driver::configure_kernel_side;
use ka_endpoint::probe::{Finding, Outcome, ProbeConfig, Prober, Report, Signal, outcome_word};
use ka_io::pacing::wait_readable;
use ka_io::tun::{MAX_PACKET, TunOptions, open_tun};
use rustix::event::{PollFd, PollFlags};
use serde_json::json;

use crate::args::ProbeArgs;

/// `probe --help`: what each finding means.
pub const HELP: &str = "\
HOW IT WORKS:
  The prober opens one TCP connection with KA-Permitted to a `ka-endpoint recv` (which needs
  no special option) and sends one probe segment at a time, each judged by the receiver's
  ACK. A KA receiver's ACKs carry KA-Rate: the payload length L of the last leading fragment
  it received (L/8) and a count of them, so the echo says whether a packet arrived in pieces
  and how long its leading fragment was. The prober fragments its own segments, the way a
  KA router does; no router is needed on the path.

FINDINGS (one line each; with --json one object):
  fragmented packets delivered  Full-size segments split into a leading fragment of L bytes
                                and the rest are acknowledged. NO: something on the path
                                drops IP fragments; KA cannot work there.
  leading-fragment length       preserved: the receiver echoed every sampled L (24, 200, 504,
                                880, 1200 and the largest a path-MTU packet carries) as sent.
                                ERASED: a middlebox reassembles fragments (NAT, firewalls,
                                Linux conntrack), forwarding the packet whole or split at
                                other lengths: KA's signal cannot cross it.
  codes                         Each sampled L: ok, the length that arrived instead, `whole`
                                (reassembled) or `lost`.
  RTT indicators                DF packets of total length 600, 605 and 611 (how KA senders
                                announce their RTT) are acknowledged.
  path MTU                      The largest DF packet acknowledged (tries --mtu, the MTU an
                                ICMP frag-needed names, 576, then bisects to 8 bytes).
  DF respected                  A DF packet larger than the path MTU is dropped, not
                                fragmented (untested when the path MTU is the local MTU).
  verdict                       KA signals cross the path when fragments arrive with their
                                length intact and indicators pass. Elsewhere KA endpoints
                                notice no signal arrives and stay in TCP mode.

EXIT STATUS:
  0 when the probe ran (whatever it found), 1 when no connection could be opened.

EXAMPLE (as root, inside the namespaces of examples/testbed/testbed.sh --name kt):
  ip netns exec ktb sh -c 'sysctl -qw net.ipv4.ip_forward=1 &&
      ka-endpoint recv --tun ke0 --addr 10.77.0.201/30 --listen 5001'
  ip netns exec kta sh -c 'sysctl -qw net.ipv4.ip_forward=1 &&
      ka-endpoint probe --tun ke0 --addr 10.77.0.101/30 --to 10.77.0.201:5001'";

/// Runs the probe and prints the report.
pub fn run(a: ProbeArgs) -> anyhow::Result<()> {
    let IpAddr::V4(ip) = a.device.addr.addr else {
        bail!(
            "--addr {}: the probe is IPv4 only (IPv6 has no DF bit, and its fragments are \
             made only by the sender)",
            a.device.addr
        );
    };
    let SocketAddr::V4(to) = a.to else {
        bail!("--to {}: the probe is IPv4 only", a.to);
    };
    anyhow::ensure!(
        *to.ip() != ip,
        "--to {to} is the prober's own address (--addr {})",
        a.device.addr
    );
    anyhow::ensure!(
        a.mtu >= ka_endpoint::probe::MIN_MTU,
        "--mtu {} is below 576, the datagram size every IPv4 host accepts (RFC 791)",
        a.mtu
    );
    anyhow::ensure!(
        a.timeout >= Duration::from_secs(1),
        "--timeout {:?} is too short to open a connection and probe (at least 1s)",
        a.timeout
    );
    let kernel = a.device.kernel_side()?;
    let dev = open_tun(
        &a.device.tun,
        &TunOptions {
            mtu: a.mtu,
            ..TunOptions::default()
        },
    )
    .map_err(|e| super::open_error(e, &a.device.tun))?;
    if let Some(k) = kernel {
        configure_kernel_side(&a.device.tun, a.device.addr, k)
            .with_context(|| format!("giving {}'s kernel side the address {k}", a.device.tun))?;
    }
    dev.set_nonblocking(true)
        .with_context(|| format!("making {} non-blocking", a.device.tun))?;

    // A random ISN and ephemeral port: a fresh connection at the receiver.
    let r = RandomState::new().hash_one(Instant::now());
    let port = 49_152 + (r % 16_384) as u16;
    let mut cfg = ProbeConfig::new(SocketAddrV4::new(ip, port), to, (r >> 32) as u32);
    cfg.mtu = a.mtu;
    cfg.timeout = a.timeout;
    tracing::info!(dev = %a.device.tun, from = %cfg.local, to = %to, timeout = ?a.timeout, "probing");
    let mut prober = Prober::new(cfg, Instant::now());
    let mut buf = vec![0u8; MAX_PACKET];
    loop {
        while let Some(p) = prober.poll_transmit() {
            dev.send(&p).with_context(|| {
                format!("writing a {}-byte packet to {}", p.len(), a.device.tun)
            })?;
        }
        if prober.is_done() {
            break;
        }
        let mut fds = [PollFd::new(&dev, PollFlags::IN)];
        if wait_readable(&mut fds, prober.poll_timeout(), Duration::ZERO) {
            loop {
                match dev.recv(&mut buf) {
                    Ok(n) => prober.handle_packet(Instant::now(), buf.get(..n).unwrap_or(&[])),
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                        ) =>
                    {
                        break;
                    }
                    Err(e) => return Err(e).with_context(|| format!("reading {}", a.device.tun)),
                }
            }
        }
        prober.handle_timeout(Instant::now());
    }
    let report = prober.report();
    if a.json {
        println!("{}", to_json(report));
    } else {
        for l in report.lines() {
            println!("{l}");
        }
    }
    if !report.connected {
        bail!(
            "no connection to {to} within {:?}: is `ka-endpoint recv --listen {}` running \
             there, and does the far side route {} back to this device?",
            a.timeout,
            to.port(),
            a.device.addr
        );
    }
    Ok(())
}

fn finding(f: Finding) -> serde_json::Value {
    json!(f.as_str())
}

fn untested_reason(f: Finding) -> Option<&'static str> {
    match f {
        Finding::Untested(why) => Some(why),
        _ => None,
    }
}

fn outcome_json(o: Outcome) -> serde_json::Value {
    match o {
        Outcome::Whole => json!({ "outcome": "whole" }),
        Outcome::Lost => json!({ "outcome": "lost" }),
        Outcome::Fragmented(l) => json!({ "outcome": "fragmented", "leading_len": l }),
    }
}

/// The report as one JSON object.
pub fn to_json(r: &Report) -> serde_json::Value {
    let signal = r.signal();
    let codes: Vec<serde_json::Value> = r
        .codes
        .iter()
        .map(|c| {
            let mut v = outcome_json(c.outcome);
            v["sent_len"] = json!(c.len);
            v["arrived"] = json!(outcome_word(c.outcome, Some(c.len)));
            v["preserved"] = json!(c.preserved());
            v
        })
        .collect();
    let sized = |list: &[(u16, Outcome)]| -> Vec<serde_json::Value> {
        list.iter()
            .map(|&(s, o)| {
                let mut v = outcome_json(o);
                v["total_len"] = json!(s);
                v
            })
            .collect()
    };
    json!({
        "local": r.local.to_string(),
        "remote": r.remote.to_string(),
        "connected": r.connected,
        "ka_negotiated": r.ka_negotiated,
        "rtt_ms": r.rtt.map(|d| d.as_secs_f64() * 1e3),
        "fragments_delivered": finding(r.fragments_delivered()),
        "fragments_delivered_untested": untested_reason(r.fragments_delivered()),
        "leading_fragment": signal.as_str(),
        "leading_fragment_untested": match signal { Signal::Untested(w) => Some(w), _ => None },
        "codes": codes,
        "indicators_pass": finding(r.indicators_pass()),
        "indicators": sized(&r.indicators),
        "path_mtu": r.path_mtu(),
        "icmp_mtu": r.icmp_mtu,
        "local_mtu": r.local_mtu,
        "df_respected": finding(r.df_respected()),
        "df_respected_untested": untested_reason(r.df_respected()),
        "df_probes": sized(&r.df_probes),
        "ka_usable": r.ka_usable(),
        "reset": r.reset,
        "timed_out": r.timed_out,
        "closed": r.closed,
        "packets_sent": r.packets_sent,
        "elapsed_s": r.elapsed.as_secs_f64(),
    })
}

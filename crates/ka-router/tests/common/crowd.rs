//! What the flash-crowd port harnesses (`crowd_port.rs`, `echo_port.rs`)
//! share: the link, the senders' packets and the convergence check.

use std::time::{Duration, Instant};

use ka_codec::rcp_option::RcpOption;
use ka_codec::wire::ipv4::Ipv4Packet;
use ka_router::{ControllerKind, Port, PortConfig, Signalling};

/// The bottleneck: 150 Mbit/s.
pub const C_BPS: u64 = 150_000_000;
/// The same in B/ms.
pub const C: f64 = C_BPS as f64 / 8000.0;
/// One millisecond, ns.
pub const MS: u64 = 1_000_000;
/// The RTT, ns.
pub const D: u64 = 100 * MS;
/// The harness's time step, ns.
pub const STEP: u64 = 20_000;
/// When the crowd starts (after an idle port's R has climbed), ns.
pub const START: u64 = 4_000 * MS;
/// Packet size, bytes.
pub const PKT: usize = 1500;

/// Which explicit-rate carrier the senders use.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Carrier {
    Ka,
    Native,
}

/// A TCP header (`opts` a multiple of 4 bytes) and `payload` zero bytes.
pub fn tcp(sport: u16, dport: u16, flags: u8, opts: &[u8], payload: usize) -> Vec<u8> {
    let hl = 20 + opts.len();
    let mut t = vec![0u8; hl + payload];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[12] = ((hl / 4) as u8) << 4;
    t[13] = flags;
    t[20..hl].copy_from_slice(opts);
    t
}

/// Sender `sport`'s SYN or full data packet to port 5001 (native RCP: with
/// the RCP option asking for as much as possible).
pub fn data(carrier: Carrier, sport: u16, syn: bool) -> Vec<u8> {
    let opts = match carrier {
        Carrier::Native => RcpOption {
            rate_bytes_per_sec: u32::MAX,
            rtt_ms: 100,
        }
        .to_bytes()
        .to_vec(),
        Carrier::Ka => Vec::new(),
    };
    let seg = if syn {
        tcp(sport, 5001, 0x02, &[], 0)
    } else {
        tcp(sport, 5001, 0x10, &[], PKT - 20 - opts.len() - 20)
    };
    super::ipv4(&seg, &opts, false, false, 0, sport, 64, 6)
}

/// The port under test: C, the carrier's signalling, `controller`.
pub fn port(carrier: Carrier, controller: ControllerKind, t0: Instant) -> Port {
    let mut cfg = PortConfig::new(C_BPS);
    cfg.signalling = match carrier {
        Carrier::Ka => Signalling::Ka { controller },
        Carrier::Native => Signalling::NativeRcp { controller },
    };
    Port::new(cfg, t0)
}

/// When flow `i` of `n` starts: the starts spread evenly over 10 ms from
/// `START`.
pub fn start(i: usize, n: usize) -> u64 {
    let spread = if n > 1 { 10 * MS / (n as u64 - 1) } else { 0 };
    START + i as u64 * spread
}

/// The harness's clock after `t`: 1 ms steps while the port idles, `STEP`
/// from 10 ms before the crowd on.
pub fn tick(t: u64) -> u64 {
    t + if t < START - 10 * MS { MS } else { STEP }
}

/// Sender `sport`'s data packets due by `t` into `port` at `rate` (B/ms):
/// one every `PKT / rate`, from `*next_send` (then the next one's time),
/// none timed more than a step back.
pub fn pace(
    port: &mut Port,
    t0: Instant,
    t: u64,
    carrier: Carrier,
    sport: u16,
    rate: f64,
    next_send: &mut u64,
) {
    while *next_send <= t {
        let at = t0 + Duration::from_nanos((*next_send).max(t - STEP));
        port.push(at, data(carrier, sport, false));
        *next_send += (PKT as f64 / rate * 1e6) as u64;
    }
}

/// A piece leaving the port that may carry a signal to its sender (not a
/// later fragment), and the sender's port.
pub fn leading_piece(piece: &[u8]) -> Option<(Ipv4Packet<&[u8]>, u16)> {
    let p = Ipv4Packet::new_checked(piece).ok()?;
    if p.frag_offset() != 0 {
        return None;
    }
    let sport = u16::from_be_bytes([*p.payload().first()?, *p.payload().get(1)?]);
    Some((p, sport))
}

/// The control: the paper's RCP in the same 64-flow crowd fills the
/// 1000-packet queue and drops, so a bound a controller keeps is not a
/// property of the harness.
pub fn assert_rcp_overflows(carrier: Carrier, queue_max: usize, drops: u64) {
    assert!(
        drops > 0 && queue_max == 1000,
        "{carrier:?}: RCP's queue {queue_max} drops {drops}"
    );
}

/// From `from` to `end`, every flow (its adopted `(time, rate)`s) paces on
/// average at C/N ± `tol`, and no rate it adopts is more than `step` of
/// C/N away.
pub fn converged(
    adopted: &[Vec<(u64, f64)>],
    n: usize,
    from: u64,
    end: u64,
    step: f64,
    tol: f64,
) -> Result<(), String> {
    let fair = C / n as f64;
    for (i, a) in adopted.iter().enumerate() {
        let Some(first) = a.iter().rev().find(|e| e.0 <= from) else {
            return Err(format!("flow {i}: no rate by 5 RTTs"));
        };
        let mut steps = vec![(from, first.1)];
        steps.extend(a.iter().filter(|e| e.0 > from).copied());
        let mut area = 0.0;
        for (k, &(t, v)) in steps.iter().enumerate() {
            if (v - fair).abs() > step * fair {
                return Err(format!("flow {i}: {v:.1} B/ms vs C/N {fair:.1}"));
            }
            let next = steps.get(k + 1).map_or(end, |e| e.0);
            area += v * (next - t) as f64;
        }
        let mean = area / (end - from) as f64;
        if (mean - fair).abs() > tol * fair {
            return Err(format!("flow {i}: mean {mean:.1} B/ms vs C/N {fair:.1}"));
        }
    }
    Ok(())
}

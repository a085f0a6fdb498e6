//! FQ-CoDel (DESIGN §4.3, RFC 8290 / RFC 8289) in virtual time: sparse
//! flows skip the bulk queues (end to end through a `Port`), DRR shares
//! bytes equally, CoDel's target/interval/√count behaviour per flow,
//! overflow drops from the fattest queue.

mod common;

use std::time::{Duration, Instant};

use ka_router::qdisc::{DropCause, DropTail, FqCodel, FqCodelConfig, Nanos};
use ka_router::{Port, PortConfig, QdiscConfig, QueueDiscipline, Signalling, Verdict};

const MS: Nanos = 1_000_000;
const NOT_ECT: u8 = 0;
const ECT0: u8 = 2;
const SEED: u64 = 0x5EED;

fn pkt(sport: u16, len: usize, ecn: u8, seq: u32) -> Vec<u8> {
    common::udp_v4(sport, 9, len, ecn, seq)
}

/// Source ports whose flows land in distinct queues of a default
/// FQ-CoDel with `SEED` (checked, so a hash change cannot silently merge
/// the flows a test tells apart).
fn distinct_ports(n: usize) -> Vec<u16> {
    let q = FqCodel::new(FqCodelConfig::default(), 1000, SEED);
    let mut ports: Vec<u16> = Vec::new();
    let mut used = Vec::new();
    for p in 1000u16.. {
        let b = q.classify(&pkt(p, 100, 0, 0));
        if !used.contains(&b) {
            used.push(b);
            ports.push(p);
            if ports.len() == n {
                break;
            }
        }
    }
    ports
}

/// Three flows through a 100 Mbit/s port with discipline `qdisc`: two
/// bulk flows of 1500-byte packets at 0.75·C each, and a sparse flow of
/// 200-byte packets every 20 ms, for 3 s. Returns the sparse packets'
/// delays (arrival → end of their own transmission), how many were sent,
/// the bytes sent and the duration.
fn sparse_through_port(qdisc: QdiscConfig, ports: &[u16]) -> (Vec<Nanos>, usize, u64, Nanos) {
    let t0 = Instant::now();
    let at = |t: Nanos| t0 + Duration::from_nanos(t);
    let mut cfg = PortConfig::new(100_000_000);
    cfg.signalling = Signalling::None;
    cfg.queue_limit = 1000;
    cfg.qdisc = qdisc;
    cfg.seed = SEED;
    let mut port = Port::new(cfg, t0);
    let period = [160_000u64, 160_000, 20 * MS];
    let size = [1500usize, 1500, 200];
    let mut next = [0u64, 80_000, 5 * MS];
    let mut seq = [0u32; 3];
    let mut pushed_at = Vec::new();
    let mut delays = Vec::new();
    let mut bytes_out = 0u64;
    let end = 3000 * MS;
    let mut t = 0;
    let mut guard = 0u64;
    while t < end {
        guard += 1;
        assert!(guard < 10_000_000);
        let arrival = *next.iter().min().unwrap();
        let wake = port
            .poll_timeout()
            .map(|i| i.duration_since(t0).as_nanos() as Nanos);
        t = match wake {
            Some(w) if w < arrival => w.max(t),
            _ => arrival,
        };
        for f in 0..3 {
            if next[f] == t {
                if f == 2 {
                    pushed_at.push(t);
                }
                port.push(at(t), pkt(ports[f], size[f], NOT_ECT, seq[f]));
                seq[f] += 1;
                next[f] += period[f];
            }
        }
        while let Some(p) = port.poll_transmit(at(t)) {
            bytes_out += p.len() as u64;
            let (sport, s) = common::udp_v4_id(&p);
            if sport == ports[2] {
                delays.push(t - pushed_at[s as usize]);
            }
        }
    }
    (delays, pushed_at.len(), bytes_out, end)
}

#[test]
fn a_sparse_flow_skips_the_bulk_queues_through_a_port() {
    let ports = distinct_ports(3);
    let (delays, sent, bytes, dur) =
        sparse_through_port(QdiscConfig::FqCodel(FqCodelConfig::default()), &ports);
    // All delivered, but for one possibly still in flight at the end.
    assert!(delays.len() + 1 >= sent, "sparse packets lost");
    // The link is saturated the whole time (1.5·C offered).
    let util = bytes as f64 * 8.0 / (dur as f64 * 1e-9) / 100e6;
    assert!(util > 0.99, "utilisation {util}");
    // Delay = sojourn + own transmission (16 µs) ≤ one bulk packet
    // (120 µs) + own transmission: well under 1 ms.
    let max = *delays.iter().max().unwrap();
    eprintln!(
        "fq-codel: {} sparse packets, max delay {} µs, utilisation {util:.4}",
        delays.len(),
        max / 1000
    );
    assert!(max < MS, "max sparse delay {max} ns");
    assert!(max <= 120_000 + 16_000 + 1000);

    // The same traffic through drop-tail: the sparse flow waits behind a
    // full queue (the test would not show anything if it did not).
    let (dt, _, _, _) = sparse_through_port(QdiscConfig::DropTail, &ports);
    let median = {
        let mut d = dt.clone();
        d.sort_unstable();
        d[d.len() / 2]
    };
    eprintln!("drop-tail: median sparse delay {} µs", median / 1000);
    assert!(median > 50 * MS);
}

/// A link of 10 Mbit/s fed by flow 0 at 2·C and flow 1 at 1·C (1500-byte
/// packets, each gap jittered by up to ±100 µs so that arrivals do not
/// phase-lock with departures) for `secs` seconds; returns the bytes each
/// got dequeued.
fn two_bulk_flows(q: &mut dyn QueueDiscipline, ports: &[u16], secs: u64) -> [u64; 2] {
    let service = 1_200_000; // 1500 B at 10 Mbit/s
    let period = [600_000u64, 1_200_000];
    let mut next = [0u64, 300_000];
    let mut seq = [0u32; 2];
    let mut free_at = 0;
    let mut served = [0u64; 2];
    let end = secs * 1000 * MS;
    let mut lcg = 12345u64;
    let mut jitter = move || {
        lcg = lcg
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (lcg >> 33) % 200_001
    };
    loop {
        let arrival = next[0].min(next[1]);
        let deq = (!q.is_empty()).then_some(free_at);
        let t = match deq {
            Some(d) if d < arrival => d,
            _ => arrival,
        };
        if t >= end {
            break;
        }
        if deq == Some(t) && t < arrival {
            if let Some(d) = q.dequeue(t) {
                let (sport, _) = common::udp_v4_id(&d.packet);
                let f = usize::from(sport == ports[1]);
                served[f] += d.packet.len() as u64;
                free_at = t + service;
            }
            continue;
        }
        for f in 0..2 {
            if next[f] == t {
                q.enqueue(t, pkt(ports[f], 1500, NOT_ECT, seq[f]));
                seq[f] += 1;
                next[f] += period[f] + jitter() - 100_000;
            }
        }
        free_at = free_at.max(t);
    }
    served
}

#[test]
fn bulk_flows_at_2c_and_1c_get_equal_bytes() {
    let ports = distinct_ports(2);
    let mut fq = FqCodel::new(FqCodelConfig::default(), 1000, SEED);
    let [a, b] = two_bulk_flows(&mut fq, &ports, 20);
    let ratio = a as f64 / b as f64;
    let s = fq.stats();
    eprintln!(
        "fq-codel: bytes {a} vs {b}, ratio {ratio:.4}; drops aqm {} overflow {}",
        s.drops_aqm, s.drops_overflow
    );
    assert!((ratio - 1.0).abs() <= 0.05, "ratio {ratio}");
    // The link was kept busy: 20 s at 10 Mbit/s is 25 MB.
    assert!(a + b > 24_900_000);
    // Drop-tail shares in proportion to the offered load (2:1).
    let mut dt = DropTail::new(1000);
    let [a, b] = two_bulk_flows(&mut dt, &ports, 20);
    eprintln!("drop-tail: ratio {:.4}", a as f64 / b as f64);
    assert!(a as f64 / b as f64 > 1.5);
}

#[test]
fn drr_shares_bytes_not_packets() {
    let ports = distinct_ports(2);
    let mut q = FqCodel::new(FqCodelConfig::default(), 10_000, SEED);
    for k in 0..400 {
        q.enqueue(0, pkt(ports[0], 1500, NOT_ECT, k));
        q.enqueue(0, pkt(ports[1], 300, NOT_ECT, k));
    }
    let mut bytes = [0i64; 2];
    for _ in 0..300 {
        let d = q.dequeue(0).unwrap();
        let f = usize::from(common::udp_v4_id(&d.packet).0 == ports[1]);
        bytes[f] += d.packet.len() as i64;
    }
    // Equal within a quantum plus a packet (per-packet round robin would
    // give the big-packet flow five times the bytes).
    assert!((bytes[0] - bytes[1]).abs() <= 1514 + 1500, "{bytes:?}");
}

#[test]
fn a_new_flow_goes_before_the_old_ones() {
    let ports = distinct_ports(2);
    let mut q = FqCodel::new(FqCodelConfig::default(), 1000, SEED);
    for k in 0..100 {
        q.enqueue(0, pkt(ports[0], 500, NOT_ECT, k));
    }
    // Five 500-byte packets: the bulk flow used up its first quantum after
    // four, moved to the old list with 1514 − 486 bytes of deficit and
    // sent a fifth; with deficit left, only the new-flow list puts the
    // sparse packet first.
    for _ in 0..5 {
        q.dequeue(MS).unwrap();
    }
    for round in 0..3u32 {
        let t = MS * u64::from(round + 2);
        q.enqueue(t, pkt(ports[1], 100, NOT_ECT, round));
        assert_eq!(q.active_flows(), Some(2));
        let d = q.dequeue(t).unwrap();
        assert_eq!(common::udp_v4_id(&d.packet), (ports[1], round));
        assert_eq!(q.active_flows(), Some(1));
        // The bulk flow is served while the empty sparse flow leaves the
        // lists (after a pass through the old list, RFC 8290 §4.2), so
        // its next packet is "new" again.
        for _ in 0..6 {
            assert_eq!(common::udp_v4_id(&q.dequeue(t).unwrap().packet).0, ports[0]);
        }
    }
}

/// One flow of 1500-byte packets arriving every 900 µs into FQ-CoDel,
/// dequeued every 1 ms: the sojourn grows by 0.1 ms per packet. Returns
/// (time of the first dequeue whose packet waited ≥ target, times of the
/// dequeues that dropped or marked, packets delivered).
fn growing_queue(ecn: u8, until: Nanos) -> (Nanos, Vec<Nanos>, u64, FqCodel) {
    let mut q = FqCodel::new(FqCodelConfig::default(), 10_000, SEED);
    let (mut next_arrival, mut next_deq, mut seq) = (0u64, MS, 0u32);
    let mut first_above = None;
    let mut events = Vec::new();
    let mut delivered = 0;
    while next_deq <= until {
        if next_arrival <= next_deq {
            assert!(q.enqueue(next_arrival, pkt(7, 1500, ecn, seq)).is_queued());
            seq += 1;
            next_arrival += 900_000;
            continue;
        }
        let t = next_deq;
        next_deq += MS;
        let before = q.stats();
        let d = q.dequeue(t).unwrap();
        delivered += 1;
        if t - d.enqueued_at >= 5 * MS && first_above.is_none() {
            first_above = Some(t);
        }
        let after = q.stats();
        let n = (after.drops_aqm - before.drops_aqm) + (after.marks - before.marks);
        assert!(n <= 1);
        if n == 1 {
            events.push(t);
        }
        if ecn == ECT0 {
            assert_eq!(after.marks > before.marks, d.packet[1] & 3 == 3);
        }
    }
    (first_above.unwrap(), events, delivered, q)
}

#[test]
fn codel_acts_after_an_interval_above_target_and_spaces_by_sqrt_count() {
    for ecn in [NOT_ECT, ECT0] {
        let (above, events, delivered, q) = growing_queue(ecn, 1500 * MS);
        // Nothing until the sojourn has been above target for 100 ms, then
        // the first drop or mark at the first dequeue from then on.
        assert_eq!(events[0], above + 100 * MS, "ecn {ecn}");
        // Then at due_{k+1} = due_k + interval/√k (dequeues every 1 ms).
        let mut due = events[0] as f64;
        for (k, t) in events.iter().enumerate().skip(1) {
            due += 100e6 / (k as f64).sqrt();
            let t = *t as f64;
            assert!(
                t >= due && t < due + 1e6,
                "ecn {ecn}: event {k} at {t}, due {due}"
            );
        }
        assert!(events.len() > 30);
        let s = q.stats();
        if ecn == ECT0 {
            assert_eq!((s.marks, s.drops_aqm), (events.len() as u64, 0));
            assert_eq!(delivered, 1500);
        } else {
            assert_eq!((s.marks, s.drops_aqm), (0, events.len() as u64));
        }
        assert_eq!(s.drops_overflow, 0);
    }
}

/// One flow with a standing sojourn of exactly `sojourn`: one arrival per
/// ms, packet k dequeued at k ms + sojourn. Returns the drop times.
fn standing_queue(sojourn: Nanos, ms: u64) -> Vec<Nanos> {
    let mut q = FqCodel::new(FqCodelConfig::default(), 10_000, SEED);
    let mut drops = Vec::new();
    let mut k_in = 0u64;
    for k in 0..ms {
        let t = k * MS + sojourn;
        while k_in * MS <= t {
            q.enqueue(k_in * MS, pkt(7, 1500, NOT_ECT, k_in as u32));
            k_in += 1;
        }
        let before = q.stats().drops_aqm;
        q.dequeue(t);
        if q.stats().drops_aqm > before {
            drops.push(t);
        }
    }
    drops
}

#[test]
fn codel_does_nothing_below_target() {
    // 4.9 ms standing (5 packets, above one MTU): never a drop in 10 s.
    assert!(standing_queue(4_900_000, 10_000).is_empty());
    // 6 ms: above target from the first dequeue (at 6 ms) on, so the
    // first drop comes exactly an interval later.
    let drops = standing_queue(6 * MS, 1000);
    assert_eq!(drops.first(), Some(&(106 * MS)));
}

#[test]
fn overflow_drops_from_the_head_of_the_fattest_queue() {
    let ports = distinct_ports(3);
    let fill = |q: &mut FqCodel, c_packets: u32| {
        // Flow 0 has the most packets, flow 1 the most bytes.
        for k in 0..60 {
            assert_eq!(q.enqueue(0, pkt(ports[0], 100, 0, k)), Verdict::Queued);
        }
        for k in 0..30 {
            assert_eq!(q.enqueue(0, pkt(ports[1], 1000, 0, k)), Verdict::Queued);
        }
        for k in 0..c_packets {
            assert_eq!(q.enqueue(0, pkt(ports[2], 500, 0, k)), Verdict::Queued);
        }
    };
    let survivors = |q: &mut FqCodel| {
        let mut got: [Vec<u32>; 3] = Default::default();
        while let Some(d) = q.dequeue(0) {
            let (p, s) = common::udp_v4_id(&d.packet);
            got[ports.iter().position(|x| *x == p).unwrap()].push(s);
        }
        got
    };
    // Packet limit: 100 packets held, the 101st overflows.
    let mut q = FqCodel::new(FqCodelConfig::default(), 100, SEED);
    fill(&mut q, 10);
    assert_eq!(q.active_flows(), Some(3));
    assert_eq!(q.enqueue(1, pkt(ports[2], 500, 0, 10)), Verdict::Queued);
    // Half of flow 1's 30 000 bytes: its 15 oldest packets.
    assert_eq!(q.stats().drops_overflow, 15);
    assert_eq!(q.len(), 86);
    assert_eq!(q.bytes(), 6000 + 15_000 + 5500);
    let got = survivors(&mut q);
    assert_eq!(got[0], (0..60).collect::<Vec<_>>());
    assert_eq!(got[1], (15..30).collect::<Vec<_>>());
    assert_eq!(got[2], (0..11).collect::<Vec<_>>());

    // Memory limit: the same, triggered by bytes.
    let cfg = FqCodelConfig {
        memory_limit: 40_000,
        ..FqCodelConfig::default()
    };
    let mut q = FqCodel::new(cfg, 10_000, SEED);
    fill(&mut q, 3); // 6000 + 30 000 + 1500 bytes
    assert_eq!(q.enqueue(1, pkt(ports[2], 3000, 0, 3)), Verdict::Queued);
    assert_eq!(q.stats().drops_overflow, 15);
    let got = survivors(&mut q);
    assert_eq!(got[1], (15..30).collect::<Vec<_>>());
    assert_eq!(got[2], (0..4).collect::<Vec<_>>());

    // When the arrival's own queue is the fattest and holds only it, the
    // arrival is what goes.
    let mut q = FqCodel::new(FqCodelConfig::default(), 0, SEED);
    assert_eq!(
        q.enqueue(0, pkt(ports[0], 100, 0, 0)),
        Verdict::Dropped(DropCause::Overflow)
    );
    assert!(q.is_empty() && q.dequeue(0).is_none());
    assert_eq!(q.active_flows(), Some(0));
}

#[test]
fn occupancy_and_the_oldest_head() {
    let ports = distinct_ports(3);
    let mut q = FqCodel::new(FqCodelConfig::default(), 1000, SEED);
    assert_eq!(q.oldest_enqueued_at(), None);
    q.enqueue(30, pkt(ports[0], 100, 0, 0));
    q.enqueue(10, pkt(ports[1], 200, 0, 0)); // times need not be monotonic across flows here
    q.enqueue(40, pkt(ports[1], 300, 0, 1));
    q.enqueue(20, pkt(ports[2], 400, 0, 0));
    assert_eq!((q.len(), q.bytes(), q.active_flows()), (4, 1000, Some(3)));
    assert_eq!(q.oldest_enqueued_at(), Some(10));
    // New flows are served in arrival order of the flows.
    assert_eq!(
        common::udp_v4_id(&q.dequeue(50).unwrap().packet).0,
        ports[0]
    );
    assert_eq!(q.active_flows(), Some(2));
    let d = q.dequeue(50).unwrap();
    assert_eq!(
        (common::udp_v4_id(&d.packet).0, d.enqueued_at),
        (ports[1], 10)
    );
    assert_eq!(q.oldest_enqueued_at(), Some(20));
    assert_eq!((q.len(), q.bytes()), (2, 700));
}

#[test]
fn fragments_of_one_datagram_share_a_queue_and_keep_their_order() {
    // A KA router upstream split these (IPv4: MF / offset; IPv6: a
    // Fragment header); only the first piece carries the ports.
    let ports = distinct_ports(1);
    let mut q = FqCodel::new(FqCodelConfig::default(), 1000, SEED);
    let mut first_payload = vec![0x11; 64];
    first_payload[..2].copy_from_slice(&4242u16.to_be_bytes());
    let first = common::ipv4(&first_payload, &[], false, true, 0, 77, 64, 6);
    let rest = common::ipv4(&[0x22; 64], &[], false, false, 64, 77, 64, 6);
    assert_eq!(q.classify(&first), q.classify(&rest));
    let frag = |offset, more| common::Ext::Fragment {
        offset,
        more,
        ident: 9,
    };
    let first6 = common::ipv6(&[frag(0, true)], 17, &first_payload, 64);
    let rest6 = common::ipv6(&[frag(64, false)], 17, &[0x33; 64], 64);
    assert_eq!(q.classify(&first6), q.classify(&rest6));
    // Interleaved with another flow, each datagram's pieces leave in order.
    for p in [&first, &first6] {
        q.enqueue(0, p.clone());
    }
    q.enqueue(0, pkt(ports[0], 100, 0, 0));
    for p in [&rest, &rest6] {
        q.enqueue(0, p.clone());
    }
    let out: Vec<Vec<u8>> = std::iter::from_fn(|| q.dequeue(0).map(|d| d.packet)).collect();
    let pos = |p: &Vec<u8>| out.iter().position(|x| x == p).unwrap();
    assert!(pos(&first) < pos(&rest));
    assert!(pos(&first6) < pos(&rest6));
}

#[test]
fn bad_knobs_are_reported_and_clamped() {
    let mut cfg = PortConfig::new(1_000_000);
    let d = FqCodelConfig::default();
    for (bad, name) in [
        (FqCodelConfig { flows: 0, ..d }, "flows"),
        (FqCodelConfig { flows: 70_000, ..d }, "flows"),
        (FqCodelConfig { quantum: 100, ..d }, "quantum"),
        (
            FqCodelConfig {
                interval: Duration::ZERO,
                ..d
            },
            "interval",
        ),
        (
            FqCodelConfig {
                memory_limit: 0,
                ..d
            },
            "memory_limit",
        ),
    ] {
        cfg.qdisc = QdiscConfig::FqCodel(bad);
        assert_eq!(cfg.validate(), Err(ka_router::ConfigError::BadValue(name)));
    }
    // Zero flows still makes one working queue; a tiny quantum is raised
    // to 256 bytes, so a 1500-byte packet does not need 1500 rounds.
    let mut q = FqCodel::new(
        FqCodelConfig {
            flows: 0,
            quantum: 1,
            ..d
        },
        10,
        0,
    );
    assert_eq!(q.classify(&pkt(1, 100, 0, 0)), 0);
    q.enqueue(0, pkt(1, 1500, 0, 0));
    q.enqueue(0, pkt(2, 1500, 0, 0));
    assert!(q.dequeue(0).is_some() && q.dequeue(0).is_some());
}

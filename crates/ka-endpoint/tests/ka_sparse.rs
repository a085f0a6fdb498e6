//! KA senders behind a router that signals each flow once per RTT
//! (`ka_router::StampEvery`, DESIGN §3.9) instead of on every packet: the
//! silence rule must not take them out of KA mode, and must still notice a
//! router that stops signalling (`conn::sparse`, DESIGN §6.3). Virtual
//! time throughout.
mod common;

use common::*;
use ka_endpoint::{ConnHandle, LeftBy, Mode, ModeReason, TcpConfig};
use ka_router::{PortConfig, StampEvery};
use std::time::Duration;

const ONE_WAY: Duration = Duration::from_millis(20);
const RTT: Duration = Duration::from_millis(40);
const C: u64 = 10_000_000;

fn sparse_net(seed: u64, every: StampEvery) -> Net {
    let mut net = Net::default_pair(ONE_WAY, seed);
    let now = net.now;
    let mut pc = PortConfig::new(C);
    pc.initial_rtt = RTT;
    pc.stamp_every = every;
    net.ab.hops.push(Hop::port(pc, now));
    net
}

#[test]
fn once_per_rtt_signals_keep_ka_mode_and_track_r() {
    let mut net = sparse_net(31, StampEvery::Rtt);
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 5), false);
    let mut mismatch = vec![];
    net.run_for_with(Duration::from_secs(6), |n| {
        let t = n.elapsed();
        let r = n
            .port(0)
            .snapshot()
            .signal
            .map(|c| ka_codec::Scale::PAPER.decode(c));
        if let (true, Some(c), Some(r)) = (t >= Duration::from_secs(4), n.a.conn(h), r) {
            let mine = c.stats().ka_rate.unwrap();
            if (mine - r).abs() / r > 0.07 {
                mismatch.push((t, mine, r));
            }
        }
    });
    let changes = net.mode_changes(h);
    assert_eq!(
        changes.len(),
        1,
        "entered KA mode once, never left: {changes:?}"
    );
    assert_eq!(changes[0].1.to, Mode::Ka);
    let c = net.port(0).snapshot().counters;
    let st = net.a.conn(h).unwrap().stats();
    // Far fewer signals than packets: about one per RTT (150 in 6 s) plus
    // one per code change of R.
    assert!(
        c.fragments_made * 10 < c.signals_skipped,
        "{} signals, {} skipped",
        c.fragments_made,
        c.signals_skipped
    );
    assert!(
        c.fragments_made >= 6 * 1000 / 64,
        "at least one per 64 ms: {c:?}"
    );
    assert_eq!(st.retransmits, 0);
    // A code change reaches the flow at its next packet: the rate it paces
    // at follows R as closely as with per-packet signals.
    assert!(
        mismatch.is_empty(),
        "{:?}",
        &mismatch[..mismatch.len().min(5)]
    );
}

#[test]
fn a_router_that_stops_signalling_is_still_noticed_within_three_srtts() {
    let mut net = sparse_net(32, StampEvery::Rtt);
    net.ab.hops.push(Hop::eraser());
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 6), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    match &mut net.ab.hops[1] {
        Hop::Eraser { on, .. } => *on = true,
        _ => panic!("hop 1 is not the eraser"),
    }
    let t_off = net.elapsed();
    let srtt = net.a.conn(h).unwrap().stats().srtt.unwrap();
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.a.conn(h).unwrap().mode()
            == Mode::Tcp)
    );
    let (t_tcp, m) = *net.mode_changes(h).last().unwrap();
    assert_eq!(m.reason, ModeReason::Silence);
    assert_eq!(
        net.a.conn(h).unwrap().stats().left_by,
        Some(LeftBy::Silence)
    );
    // The last signal was at most one interval (≤ srtt) before the eraser
    // came on and needs an RTT to come back; then the sender waits srtt +
    // srtt/16 plus one more gap (≤ srtt here, capped at 2 srtt).
    let waited = t_tcp - t_off;
    assert!(
        waited <= 4 * srtt,
        "TCP mode after {waited:?} (srtt {srtt:?})"
    );
    // ... and longer than with per-packet signals (≤ 2 srtt + srtt/8):
    // the allowance was in force.
    assert!(
        waited > 2 * srtt + srtt / 8,
        "TCP mode after {waited:?} (srtt {srtt:?})"
    );
}

#[test]
fn an_interval_longer_than_the_rtt_settles_in_ka_mode() {
    // 60 ms between signals against a 40 ms RTT: beyond the plain rule
    // (srtt + srtt/16), so the first gaps end KA mode; the returns make
    // the sender see sparse signals and wait one gap longer from then on.
    let mut net = sparse_net(33, StampEvery::Every(Duration::from_millis(60)));
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(12_000_000, 7), false);
    net.run_for(Duration::from_secs(6));
    let changes = net.mode_changes(h);
    let late: Vec<_> = changes
        .iter()
        .filter(|(t, _)| *t >= Duration::from_secs(2))
        .collect();
    assert!(late.is_empty(), "mode changes after 2 s: {late:?}");
    assert_eq!(net.a.conn(h).unwrap().mode(), Mode::Ka);
    assert!(changes.len() <= 5, "settled after a few gaps: {changes:?}");
}

/// Two hosts 0.1 ms apart (RTT indicator 0): the router signals the flow
/// once per 1 ms, ten srtts (DESIGN §3.9), and the sender's allowance,
/// never capped below 2 ms, keeps it in KA mode once the gaps are seen
/// (capped at 2 srtt it left KA mode between every two signals).
#[test]
fn a_sub_millisecond_flow_signalled_once_per_millisecond_stays_in_ka_mode() {
    let (mut net, h) = sub_millisecond_bulk(test_tcp(), 34);
    net.run_for(Duration::from_millis(500));
    let changes = net.mode_changes(h);
    let late: Vec<_> = changes
        .iter()
        .filter(|(t, _)| *t >= Duration::from_millis(100))
        .collect();
    assert!(late.is_empty(), "mode changes after 100 ms: {late:?}");
    let c = net.a.conn(h).unwrap();
    assert_eq!(c.mode(), Mode::Ka);
    let st = c.stats();
    assert!(
        st.srtt.unwrap() < Duration::from_millis(1),
        "srtt {:?}",
        st.srtt
    );
    let pc = net.port(0).snapshot().counters;
    // about one signal per ms plus the code changes, not one per packet
    assert!(
        pc.fragments_made * 5 < pc.signals_skipped,
        "{} signals, {} skipped",
        pc.fragments_made,
        pc.signals_skipped
    );
}

/// One-way delay of [`sub_millisecond_bulk`]'s path.
const SUB_MS_ONE_WAY: Duration = Duration::from_micros(50);

/// A 0.1 ms, 1 Gbit/s pair (both ends `tcp`) through a KA port that
/// signals once per RTT (once per 1 ms for this flow's indicator 0), A
/// sending 60 MB to B.
fn sub_millisecond_bulk(tcp: TcpConfig, seed: u64) -> (Net, ConnHandle) {
    let mut net = Net::new(stack_cfg(1, tcp), stack_cfg(2, tcp), SUB_MS_ONE_WAY, seed);
    let now = net.now;
    let mut pc = PortConfig::new(1_000_000_000);
    pc.initial_rtt = 2 * SUB_MS_ONE_WAY;
    pc.stamp_every = StampEvery::Rtt;
    net.ab.hops.push(Hop::port(pc, now));
    for p in [&mut net.ab, &mut net.ba] {
        p.impair.rate_bps = Some(1_000_000_000);
    }
    let h = net.connect(5001);
    net.send_bulk(Side::A, h, payload(60_000_000, 8), false);
    (net, h)
}

/// A sub-millisecond flow whose ACKs stall for 4 ms (a busy host that
/// does not schedule the receiver) leaves KA mode under the paper's rule
/// alone (about one RTT plus one signal gap of silence), and stays in it
/// with the `ka-endpoint` binary's 10 ms silence floor (DESIGN §6.3).
#[test]
fn a_four_millisecond_stall_is_not_silence_with_a_ten_millisecond_floor() {
    let run = |floor: Duration| {
        let mut tcp = test_tcp();
        tcp.ka.silence_floor = floor;
        let (mut net, h) = sub_millisecond_bulk(tcp, 35);
        net.run_for(Duration::from_millis(200));
        // The stall: ACKs sent in the next 4 ms take 4 ms longer.
        net.ba.impair.delay = Duration::from_millis(4);
        net.run_for(Duration::from_millis(4));
        net.ba.impair.delay = SUB_MS_ONE_WAY;
        net.run_for(Duration::from_millis(100));
        let late: Vec<_> = net
            .mode_changes(h)
            .into_iter()
            .filter(|(t, _)| *t >= Duration::from_millis(150))
            .collect();
        (late, net.a.conn(h).unwrap().mode())
    };
    let (changes, mode) = run(Duration::ZERO);
    assert!(
        changes
            .iter()
            .any(|(_, c)| c.to == Mode::Tcp && c.reason == ModeReason::Silence),
        "without a floor the stall is silence: {changes:?}"
    );
    assert_eq!(mode, Mode::Ka, "and KA mode resumes after it");
    let (changes, mode) = run(Duration::from_millis(10));
    assert!(changes.is_empty(), "with a 10 ms floor: {changes:?}");
    assert_eq!(mode, Mode::Ka);
}

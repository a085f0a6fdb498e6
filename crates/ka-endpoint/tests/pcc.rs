//! A PCC connection end to end: paced whatever `tcp_pacing` says, and its
//! per-packet reports survive loss, reordering and RTOs.
mod common;

use common::*;
use ka_endpoint::{CcAlgorithm, TcpConfig};
use std::time::Duration;

fn tcp(cc: CcAlgorithm) -> TcpConfig {
    let mut t = test_tcp();
    t.ka.enabled = false;
    t.tcp_pacing = false;
    t.cc = cc;
    t
}

/// Back-to-back data segments (same departure instant) of a 300 kB
/// transfer over a 20 Mbit/s, 2×20 ms path, and whether it all arrived.
fn back_to_back(cc: CcAlgorithm) -> (usize, bool) {
    let mut net = Net::new(
        stack_cfg(1, tcp(cc)),
        stack_cfg(2, test_tcp()),
        Duration::from_millis(20),
        51,
    );
    net.ab.impair.rate_bps = Some(20_000_000);
    net.record_a = true;
    let h = net.connect(80);
    let data = payload(300_000, 3);
    net.send_bulk(Side::A, h, data.clone(), false);
    net.run_for(Duration::from_secs(3));
    let hb = net.accepted(80).unwrap();
    let ok = net.received(Side::B, hb) == &data[..];
    let sent: Vec<&Sent> = net.sent_a.iter().filter(|s| s.tcp_payload > 0).collect();
    (sent.windows(2).filter(|w| w[1].at == w[0].at).count(), ok)
}

#[test]
fn pcc_is_paced_with_tcp_pacing_off() {
    let (newreno, ok) = back_to_back(CcAlgorithm::NewReno);
    assert!(ok);
    let (pcc, ok) = back_to_back(CcAlgorithm::Pcc);
    assert!(ok, "the PCC transfer must complete intact");
    assert!(
        newreno > 50,
        "NewReno unpaced: {newreno} back-to-back pairs"
    );
    // the pacer's 1 ms burst credit allows a pair now and then
    assert!(pcc * 10 < newreno, "PCC {pcc} vs NewReno {newreno}");
}

#[test]
fn pcc_transfer_survives_loss_reordering_and_a_blackout() {
    let mut net = Net::new(
        stack_cfg(1, tcp(CcAlgorithm::Pcc)),
        stack_cfg(2, test_tcp()),
        Duration::from_millis(15),
        52,
    );
    net.ab.impair.rate_bps = Some(10_000_000);
    net.ab.impair.loss = 0.02;
    net.ab.impair.reorder = 0.02;
    net.ab.impair.reorder_extra = Duration::from_millis(5);
    // a 1.5 s blackout forces RTOs
    net.ab.impair.blackouts = vec![(Duration::from_millis(800), Duration::from_millis(2300))];
    let h = net.connect(80);
    let data = payload(1_000_000, 4);
    net.send_bulk(Side::A, h, data.clone(), true);
    let done = net.run_until(Duration::from_secs(20), |n| {
        n.accepted(80)
            .is_some_and(|hb| n.received(Side::B, hb).len() == 1_000_000)
    });
    assert!(done, "transfer incomplete after 20 s");
    let hb = net.accepted(80).unwrap();
    assert!(net.received(Side::B, hb) == &data[..]);
    let c = net.a.conn(h).expect("the sender is still there");
    assert_eq!(c.controller().name(), "pcc");
    assert!(c.stats().rtos >= 1, "the blackout should have cost an RTO");
    assert!(c.stats().retransmits > 0);
}

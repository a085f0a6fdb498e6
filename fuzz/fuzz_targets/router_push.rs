#![no_main]
//! Arbitrary bytes into `ka_router::Port::push`, then a full drain through
//! `poll_timeout` / `poll_transmit`: never panics, everything queued comes
//! out or is counted as dropped by the queue discipline, counters add up.
//! Every packet first goes through a receive-window modulator
//! (`ka_router::rwm::Rwm`, a tiny flow table so eviction runs), as in the
//! binary with `--rwm`: it never panics and never changes a length.
//!
//! Input layout: byte 0 picks the signalling kind (KA, native RCP, none,
//! XCP), `ipv6_signal`, the delay and the queue limit; byte 1 picks the queue discipline (drop-tail, RED,
//! FQ-CoDel; the high bits scale their knobs down so a small queue reaches
//! their early drops, marks and overflow paths) and the seed; then records
//! of `[gap: u8][len: u16 BE][len bytes]` (gap in units of 50 µs; an odd
//! gap sends the packet the reverse way through RWM and past the port's
//! reverse hook, `Port::on_reverse`, before it is pushed), the last
//! record taking whatever is left. The input's length modulo 3 picks the
//! rate controller (RCP, crowd, echo).
use std::time::{Duration, Instant};

use ka_router::qdisc::{FqCodelConfig, RedConfig};
use ka_router::rwm::{Rwm, RwmConfig, Side};
use ka_router::{
    ControllerKind, CrowdConfig, DropReason, EchoConfig, Port, PortConfig, PushOutcome,
    QdiscConfig, Signalling,
};
use libfuzzer_sys::fuzz_target;

fn qdisc(sel: u8) -> QdiscConfig {
    let small = sel & 0x04 != 0;
    match sel % 3 {
        0 => QdiscConfig::DropTail,
        1 if small => QdiscConfig::Red(RedConfig {
            min_th: f64::from(sel >> 5),
            max_th: f64::from(sel >> 5) + 2.0,
            w_q: 0.5,
            gentle: sel & 0x08 != 0,
            ecn: sel & 0x10 != 0,
            ..RedConfig::default()
        }),
        1 => QdiscConfig::Red(RedConfig::default()),
        _ if small => QdiscConfig::FqCodel(FqCodelConfig {
            flows: usize::from(sel >> 5) + 1,
            target: Duration::from_micros(100),
            interval: Duration::from_millis(1),
            ecn: sel & 0x10 != 0,
            memory_limit: if sel & 0x08 != 0 { 4000 } else { 32 << 20 },
            ..FqCodelConfig::default()
        }),
        _ => QdiscConfig::FqCodel(FqCodelConfig::default()),
    }
}

fuzz_target!(|data: &[u8]| {
    let [sel, qsel, rest @ ..] = data else {
        return;
    };
    let (sel, qsel, mut rest) = (*sel, *qsel, rest);
    let mut cfg = PortConfig::new(10_000_000);
    // The input's length picks the controller: RCP, crowd or echo (the
    // last two parse TCP headers; echo also reads and lowers the echoes of
    // the packets that go the reverse way).
    let controller = match data.len() % 3 {
        0 => ControllerKind::Rcp,
        1 => ControllerKind::Crowd(CrowdConfig::default()),
        _ => ControllerKind::Echo(EchoConfig::default()),
    };
    cfg.signalling = match sel % 5 {
        0 => Signalling::Ka { controller },
        1 => Signalling::NativeRcp { controller },
        2 => Signalling::None,
        _ => Signalling::XCP,
    };
    cfg.ipv6_signal = sel & 0x04 != 0;
    cfg.queue_limit = usize::from(sel >> 3);
    cfg.delay = Duration::from_micros(u64::from(sel & 0x03) * 700);
    cfg.qdisc = qdisc(qsel);
    cfg.seed = u64::from(qsel);
    let t0 = Instant::now();
    let mut port = Port::new(cfg, t0);
    let mut rwm_cfg = RwmConfig::new(10_000_000);
    rwm_cfg.max_flows = 4;
    rwm_cfg.max_half_open = 4;
    let Ok(mut rwm) = Rwm::new(rwm_cfg, t0) else {
        return;
    };
    let mut t = t0;
    let (mut queued, mut refused, mut out) = (0u64, 0u64, 0u64);
    while let Some((&gap, r)) = rest.split_first() {
        let (len, r) = match r {
            [a, b, r @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), r),
            r => (r.len(), &[][..]),
        };
        let (pkt, r) = r.split_at(len.min(r.len()));
        rest = r;
        t += Duration::from_micros(u64::from(gap) * 50);
        let mut pkt = pkt.to_vec();
        let side = if gap % 2 == 1 { Side::Reverse } else { Side::Forward };
        let len = pkt.len();
        rwm.process(t, side, &mut pkt);
        assert_eq!(pkt.len(), len);
        if side == Side::Reverse {
            // On its way back a packet passes the port's reverse hook.
            port.on_reverse(t, &mut pkt);
            assert_eq!(pkt.len(), len);
        }
        match port.push(t, pkt) {
            PushOutcome::Queued | PushOutcome::Marked => queued += 1,
            PushOutcome::Dropped(DropReason::QueueFull | DropReason::Aqm) => refused += 1,
            PushOutcome::Dropped(_) => {}
        }
        while port.poll_transmit(t).is_some() {
            out += 1;
        }
    }
    while let Some(next) = port.poll_timeout() {
        assert!(next >= t);
        t = next;
        while port.poll_transmit(t).is_some() {
            out += 1;
        }
    }
    let r = rwm.stats();
    assert!(r.flows <= 4 && r.half_open <= 4);
    // ⌈(4 + 4) / 3⌉ buckets of four entries.
    assert!(rwm.allocated_entries() <= rwm.config().max_table_entries());
    assert!(rwm.allocated_entries() <= 12);
    let s = port.snapshot();
    let c = s.counters;
    assert_eq!(s.queue_packets, 0);
    // Drops of packets the discipline had queued (CoDel, FQ-CoDel overflow).
    let dropped_later = c.drops_queue + c.drops_aqm - refused;
    assert_eq!(out + dropped_later, queued + c.fragments_made);
    assert_eq!(c.packets_out, out);
});

//! Tests of the engine: ordering, links, timers, limits.
use super::*;

/// Records arrivals; optionally echoes each packet back out of iface 0.
#[derive(Default)]
struct Probe {
    echo: bool,
    got: Vec<(SimTime, Vec<u8>)>,
    wake: Vec<SimTime>,
    fired: Vec<SimTime>,
}

impl Node for Probe {
    type Shared = Vec<String>;
    fn handle_packet(&mut self, ctx: &mut Ctx<'_, Self::Shared>, _iface: u16, p: Vec<u8>) {
        ctx.shared.push(format!("rx {} {}", ctx.now(), p.len()));
        self.got.push((ctx.now(), p.clone()));
        if self.echo {
            ctx.send(0, p);
        }
    }
    fn handle_timeout(&mut self, ctx: &mut Ctx<'_, Self::Shared>) {
        let now = ctx.now();
        self.fired.push(now);
        if let Some(pos) = self.wake.iter().position(|&t| t <= now) {
            self.wake.remove(pos);
        }
        ctx.shared.push(format!("timer {now}"));
        let mut b = ctx.buffer();
        b.clear();
        b.resize(1500, 7);
        ctx.send(0, b);
    }
    fn poll_timeout(&self) -> Option<SimTime> {
        self.wake.iter().copied().min()
    }
}

fn clock() -> Clock {
    Clock::new(Instant::now())
}

#[test]
fn clock_round_trips_offsets() {
    let c = clock();
    for t in [0, 1, 999, 1_234_567_890_123] {
        assert_eq!(c.sim_time(c.instant(t)), t);
    }
    assert_eq!(secs(1.5), 1_500_000_000);
    assert_eq!(secs(-1.0), 0);
    assert!((to_secs(250_000_000) - 0.25).abs() < 1e-12);
}

#[test]
fn entries_order_by_time_then_seq() {
    let mut q = EventQueue::default();
    q.push(0, 5, Ev::Link(0));
    q.push(0, 3, Ev::Link(1));
    q.push(0, 5, Ev::Link(2));
    q.push(0, 3, Ev::Link(3));
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|e| e.ev).collect();
    assert_eq!(
        order,
        vec![Ev::Link(1), Ev::Link(3), Ev::Link(0), Ev::Link(2)]
    );
}

#[test]
fn same_instant_fifo_merges_with_the_heap_by_seq() {
    let mut q = EventQueue::default();
    // At now = 10: a heap entry for 10 pushed earlier (seq 0), then a
    // same-instant entry (FIFO, seq 1), a future one (seq 2) and one in
    // the past, which runs now (FIFO, seq 3).
    q.push(0, 10, Ev::Link(0));
    q.push(10, 10, Ev::Link(1));
    q.push(10, 11, Ev::Link(2));
    q.push(10, 7, Ev::Link(3));
    assert_eq!(q.len(), 4);
    assert_eq!(q.peek_time(), Some(10));
    let order: Vec<_> = std::iter::from_fn(|| q.pop())
        .map(|e| (e.time, e.ev))
        .collect();
    assert_eq!(
        order,
        vec![
            (10, Ev::Link(0)),
            (10, Ev::Link(1)),
            (10, Ev::Link(3)),
            (11, Ev::Link(2))
        ]
    );
}

#[test]
fn link_serialises_then_delays_in_fifo_order() {
    let mut e: Engine<Probe> = Engine::new(clock(), Vec::new());
    let a = e.add_node(Probe::default());
    let b = e.add_node(Probe::default());
    // 12 Mbit/s: a 1500-byte packet takes 1 ms; 10 ms delay.
    let (l, _) = e.add_link(a, LinkConfig::new(12_000_000, 10_000_000, b, 0));
    e.node_mut(a).wake = vec![0, 0, 0, 500_000];
    e.rearm_node(a);
    e.run_until(secs(1.0));
    let got: Vec<SimTime> = e.node(b).got.iter().map(|g| g.0).collect();
    // Three back-to-back sends at t=0 (one per firing), one at 0.5 ms
    // that waits for the third to finish serialising.
    assert_eq!(got, vec![11_000_000, 12_000_000, 13_000_000, 14_000_000]);
    assert_eq!(e.node(a).fired, vec![0, 0, 0, 500_000]);
    let s = e.link_stats(l);
    assert_eq!((s.packets, s.bytes), (4, 6000));
    // One heap entry per link head, not per packet.
    assert!(e.stats().max_heap <= 2, "{:?}", e.stats());
}

#[test]
fn serialisation_remainders_carry_exactly() {
    let mut e: Engine<Probe> = Engine::new(clock(), Vec::new());
    let a = e.add_node(Probe::default());
    let b = e.add_node(Probe::default());
    // 7 bit/s·1e6: 1500 B = 12000 bits → 1714285.714… ns each.
    e.add_link(a, LinkConfig::new(7_000_000, 0, b, 0));
    e.node_mut(a).wake = vec![0; 7];
    e.rearm_node(a);
    e.run_until(secs(1.0));
    let last = e.node(b).got.last().unwrap().0;
    assert_eq!(last, 12_000_000); // 7 × 12000 bits / 7 Mbit/s exactly
}

#[test]
fn later_deadline_reuses_armed_entry_and_stale_entries_are_skipped() {
    let mut e: Engine<Probe> = Engine::new(clock(), Vec::new());
    let a = e.add_node(Probe::default());
    let b = e.add_node(Probe::default());
    e.add_link(a, LinkConfig::new(0, 0, b, 0));
    e.node_mut(a).wake = vec![100];
    e.rearm_node(a);
    // Move the deadline later: the armed entry at 100 fires, re-arms at 300.
    e.node_mut(a).wake = vec![300];
    e.rearm_node(a);
    // Then earlier: a new entry at 50; the one at 100 becomes stale.
    e.node_mut(a).wake = vec![50, 300];
    e.rearm_node(a);
    e.run_until(1_000);
    assert_eq!(e.node(a).fired, vec![50, 300]);
    assert_eq!(e.node(b).got.len(), 2);
}

#[test]
fn ties_are_fifo_and_runs_are_reproducible() {
    let run = || {
        let mut e: Engine<Probe> = Engine::new(clock(), Vec::new());
        let a = e.add_node(Probe::default());
        let b = e.add_node(Probe {
            echo: true,
            ..Probe::default()
        });
        let c = e.add_node(Probe::default());
        e.add_link(a, LinkConfig::new(0, 1_000, b, 0));
        e.add_link(b, LinkConfig::new(1_000_000_000, 1_000, c, 0));
        e.node_mut(a).wake = vec![0, 0, 10, 10, 10];
        e.rearm_node(a);
        e.run_until(1_000_000);
        assert_eq!(e.node(c).got.len(), 5);
        e.shared
    };
    let first = run();
    assert_eq!(first, run());
    assert_eq!(first[0], "timer 0");
    assert_eq!(first[2], "timer 10");
    assert_eq!(first[5], "rx 1000 1500");
}

#[test]
fn link_limit_drops_and_counts() {
    let mut e: Engine<Probe> = Engine::new(clock(), Vec::new());
    let a = e.add_node(Probe::default());
    let b = e.add_node(Probe::default());
    let mut cfg = LinkConfig::new(1_000, 0, b, 0);
    cfg.limit_packets = 2;
    let (l, _) = e.add_link(a, cfg);
    e.node_mut(a).wake = vec![0; 5];
    e.rearm_node(a);
    e.run_until(1);
    assert_eq!(e.link_stats(l).drops, 3);
    assert_eq!(e.stats().link_drops, 3);
    assert_eq!(e.link_backlog(l), 2);
}

#[test]
fn stuck_timer_is_pushed_back() {
    struct Stuck;
    impl Node for Stuck {
        type Shared = ();
        fn handle_packet(&mut self, _: &mut Ctx<'_, ()>, _: u16, _: Vec<u8>) {}
        fn handle_timeout(&mut self, _: &mut Ctx<'_, ()>) {}
        fn poll_timeout(&self) -> Option<SimTime> {
            Some(0)
        }
    }
    let mut e: Engine<Stuck> = Engine::new(clock(), ());
    e.add_node(Stuck);
    e.run_until(10_000);
    assert!(e.stats().timer_stalls >= 1);
    assert!(e.stats().events < 20_000);
}

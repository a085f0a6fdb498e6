//! Per-event cost of a `Stack` against the number of connections it holds
//! (docs/PERFORMANCE.md, "Many hosts: memory and timers").
//!
//! Two stacks, A and B, with `n` established connections between them.
//! Each step, one connection (in turn) writes 100 bytes; the step moves
//! every packet across, collects events on both sides (B reads), runs due
//! timers (B's delayed ACKs) and asks both stacks for their next timer,
//! as a driver does after every input. Prints the wall time per step.
//!
//! `cargo run --release -p ka-endpoint --example stack_many [n ...]`

use ka_endpoint::{ConnHandle, Event, Stack, StackConfig};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

struct Pair {
    now: Instant,
    a: Stack,
    b: Stack,
    pkt: Vec<u8>,
    read: Vec<u8>,
}

impl Pair {
    fn step(&mut self) {
        for s in [&mut self.a, &mut self.b] {
            if s.poll_timeout().is_some_and(|t| t <= self.now) {
                s.handle_timeout(self.now);
            }
        }
        while let Some(n) = self.a.poll_transmit(self.now, &mut self.pkt) {
            self.b.handle_packet(self.now, &self.pkt[..n]);
        }
        while let Some((h, ev)) = self.b.poll_event() {
            if ev == Event::Readable
                && let Some(c) = self.b.conn_mut(h)
            {
                while c.read(&mut self.read) > 0 {}
            }
        }
        while let Some(n) = self.b.poll_transmit(self.now, &mut self.pkt) {
            self.a.handle_packet(self.now, &self.pkt[..n]);
        }
        while self.a.poll_event().is_some() {}
        // A driver sleeps until the earliest timer after every input.
        let _ = (self.a.poll_timeout(), self.b.poll_timeout());
    }
}

fn run(n: usize) -> Duration {
    let cfg = |s: u8| StackConfig {
        max_connections: n + 16,
        max_half_open: n + 16,
        ..StackConfig::deterministic([s; 16])
    };
    let t0 = Instant::now();
    let mut p = Pair {
        now: t0,
        a: Stack::new(cfg(1), t0),
        b: Stack::new(cfg(2), t0),
        pkt: vec![0; 1500],
        read: vec![0; 4096],
    };
    p.b.listen(5001);
    let local: SocketAddr = "10.0.0.1:0".parse().expect("address");
    let remote: SocketAddr = "10.0.0.2:5001".parse().expect("address");
    let hs: Vec<ConnHandle> = (0..n)
        .map(|_| p.a.connect(p.now, local, remote).expect("connect"))
        .collect();
    for _ in 0..3 {
        p.now += Duration::from_millis(1);
        p.step();
    }
    let steps = 20_000;
    let start = Instant::now();
    for i in 0..steps {
        p.now += Duration::from_micros(100);
        if let Some(c) = p.a.conn_mut(hs[i % n]) {
            c.write(&[1; 100]);
        }
        p.step();
    }
    start.elapsed() / steps as u32
}

fn main() {
    let ns: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ns = if ns.is_empty() {
        vec![1, 10, 100, 1000, 10_000]
    } else {
        ns
    };
    for n in ns {
        println!("{n:>6} connections: {:>9.2?} per step", run(n));
    }
}

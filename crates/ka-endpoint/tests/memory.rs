//! Memory of idle and finished connections (DESIGN §6.8): buffers grow
//! while a flow is busy and give the memory back once it drains, so an
//! idle connection costs at most 16 KiB and a finished one nothing.
//!
//! Its own test binary: a counting global allocator measures the heap, so
//! nothing else may run concurrently in this process.

// A global allocator cannot be written without `unsafe`; it only forwards
// to `System`.
#![allow(unsafe_code)]

use ka_endpoint::{Event, Stack, StackConfig, TcpConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The bound documented on `ka_endpoint::Stack`.
const IDLE_CONN_BYTES: usize = 16 * 1024;

struct Pair {
    now: Instant,
    a: Stack,
    b: Stack,
    pkt: Vec<u8>,
    read: Vec<u8>,
    received: usize,
    peak: usize,
}

impl Pair {
    /// Moves every packet across (1 ms one way), reads everything B
    /// receives, runs due timers; `steps` rounds of 1 ms.
    fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            self.now += Duration::from_millis(1);
            self.a.handle_timeout(self.now);
            self.b.handle_timeout(self.now);
            while let Some(n) = self.a.poll_transmit(self.now, &mut self.pkt) {
                self.b.handle_packet(self.now, &self.pkt[..n]);
            }
            while let Some((h, ev)) = self.b.poll_event() {
                if matches!(ev, Event::Readable | Event::PeerFin) {
                    let c = self.b.conn_mut(h).expect("live connection");
                    loop {
                        let n = c.read(&mut self.read);
                        if n == 0 {
                            break;
                        }
                        self.received += n;
                    }
                    if ev == Event::PeerFin {
                        c.close();
                    }
                }
            }
            while let Some(n) = self.b.poll_transmit(self.now, &mut self.pkt) {
                self.a.handle_packet(self.now, &self.pkt[..n]);
            }
            while self.a.poll_event().is_some() {}
            self.peak = self.peak.max(live());
        }
    }
}

#[test]
fn idle_connections_give_their_buffers_back_and_finished_ones_everything() {
    let tcp = TcpConfig {
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        time_wait: Duration::from_millis(100),
        ..TcpConfig::default()
    };
    let cfg = |s: u8| StackConfig {
        tcp,
        ..StackConfig::deterministic([s; 16])
    };
    let t0 = Instant::now();
    let mut p = Pair {
        now: t0,
        a: Stack::new(cfg(1), t0),
        b: Stack::new(cfg(2), t0),
        pkt: vec![0; 1500],
        read: vec![0; 64 * 1024],
        received: 0,
        peak: 0,
    };
    p.b.listen(5001);
    let local: SocketAddr = "10.0.0.1:0".parse().expect("address");
    let remote: SocketAddr = "10.0.0.2:5001".parse().expect("address");
    let base = live();

    let h = p.a.connect(p.now, local, remote).expect("connect");
    // The whole flow written at once, as the simulator's applications do.
    let data = vec![7u8; 2 << 20];
    let written = p.a.conn_mut(h).expect("connection").write(&data);
    assert_eq!(written, data.len());
    drop(data);
    p.run(3_000);
    assert_eq!(p.received, 2 << 20, "the transfer completed");
    assert_eq!(p.a.conn(h).expect("connection").send_queued(), 0);

    // Both ends established and idle: buffers shrunk back.
    let idle = live().saturating_sub(base);
    eprintln!(
        "peak {} bytes, two idle connections {idle} bytes",
        p.peak.saturating_sub(base)
    );
    assert!(
        p.peak.saturating_sub(base) > 2 << 20,
        "the send buffer did grow to the flow: peak {} bytes",
        p.peak - base
    );
    assert!(
        idle <= 2 * IDLE_CONN_BYTES,
        "two idle connections hold {idle} bytes (bound: {IDLE_CONN_BYTES} each)"
    );

    // Closed on both sides and past TIME-WAIT: the state is freed.
    p.a.conn_mut(h).expect("connection").close();
    p.run(1_000);
    assert_eq!(p.a.connection_count() + p.b.connection_count(), 0);
    let finished = live().saturating_sub(base);
    eprintln!("after both finished: {finished} bytes");
    assert!(
        finished <= 4 * 1024,
        "finished connections still hold {finished} bytes"
    );
}

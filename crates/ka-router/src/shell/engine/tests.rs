//! Tests of the forwarding loop and the shell around it.

use super::*;
use crate::shell::forwarder::PassThrough;
use crate::shell::input::ChannelInput;
use crate::shell::stats::CoreStats;
use std::sync::mpsc::sync_channel;

/// A forwarder that releases each packet `gap` after the previous one,
/// to check the loop honours `poll_timeout` precisely.
struct Spaced {
    gap: Duration,
    next: Option<Instant>,
    queue: std::collections::VecDeque<Vec<u8>>,
}

impl Forwarder for Spaced {
    fn push(&mut self, _: Direction, now: Instant, p: Vec<u8>) {
        self.next.get_or_insert(now + self.gap);
        self.queue.push_back(p);
    }
    fn poll_transmit(&mut self, dir: Direction, now: Instant) -> Option<Vec<u8>> {
        if dir != Direction::Forward {
            return None;
        }
        let due = self.next?;
        if now < due {
            return None;
        }
        let p = self.queue.pop_front()?;
        self.next = if self.queue.is_empty() {
            None
        } else {
            Some(due + self.gap)
        };
        Some(p)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }
    fn handle_timeout(&mut self, _: Instant) {}
    fn stats(&self, _: Direction) -> CoreStats {
        CoreStats::default()
    }
}

fn pipe_writers() -> (tempdir::Dir, [File; 2]) {
    let d = tempdir::Dir::new();
    let a = File::create(d.0.join("fwd")).unwrap();
    let b = File::create(d.0.join("rev")).unwrap();
    (d, [a, b])
}

mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Self {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "ka-engine-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn loop_releases_on_time_and_stops() {
    let (dir, writers) = pipe_writers();
    let stats = SharedStats::default();
    let stats = &stats;
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let (tx, rx) = sync_channel(64);
    let gap = Duration::from_millis(2);
    for i in 0..20u8 {
        tx.send((Direction::Forward, vec![i; 100])).unwrap();
    }
    let rec = PcapRecorder::spawn(PcapSink::create(&dir.0.join("x.pcap")).unwrap(), 64).unwrap();
    let pcap = rec.handle();
    let start = Instant::now();
    let h = std::thread::scope(|s| {
        let h = s.spawn(move || {
            forwarding_loop(
                Spaced {
                    gap,
                    next: None,
                    queue: Default::default(),
                },
                &mut Pair {
                    input: ChannelInput::new(rx),
                    output: writers,
                },
                Recorders {
                    pcap: Some(pcap),
                    stamp_log: None,
                },
                stats,
                Pacer::default(),
                stop,
            )
        });
        // Wait (bounded) until all 20 are written, then stop.
        let deadline = Instant::now() + Duration::from_secs(10);
        while stats.io(Direction::Forward).load().packets_out < 20 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::SeqCst);
        let _keep_open = tx;
        h.join().unwrap()
    });
    let elapsed = start.elapsed();
    drop(h);
    assert_eq!(rec.finish().unwrap(), 0);
    let io = stats.io(Direction::Forward).load();
    assert_eq!(io.packets_out, 20);
    assert_eq!(io.bytes_out, 2000);
    assert_eq!(
        stats.lateness.load().count(),
        20,
        "one lateness sample per release"
    );
    assert_eq!(std::fs::metadata(dir.0.join("fwd")).unwrap().len(), 2000);
    // 20 releases 2 ms apart take ≥ 40 ms; the loop must not release early.
    assert!(elapsed >= gap * 20, "{elapsed:?}");
    let mut r =
        pcap_file::pcap::PcapReader::new(File::open(dir.0.join("x.pcap")).unwrap()).unwrap();
    let mut ts = Vec::new();
    while let Some(p) = r.next_packet() {
        ts.push(p.unwrap().timestamp);
    }
    assert_eq!(ts.len(), 20);
    // Releases are spaced by the gap (wall clock, so allow scheduling noise
    // on the median only).
    let mut gaps: Vec<Duration> = ts.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    gaps.sort();
    let median = gaps[gaps.len() / 2];
    // A thread kept off the CPU releases what fell due in one burst
    // (by design: the core's timeline is ideal), so on an oversubscribed
    // host (other builds, parallel tests) the spacing says more about the
    // host than about the loop; "never early" is asserted above either way.
    if ka_io::host::oversubscribed() {
        eprintln!("host oversubscribed: median release gap {median:?} not asserted");
    } else {
        assert!(
            median > Duration::from_micros(1800) && median < Duration::from_micros(2300),
            "{median:?}"
        );
    }
}

/// A forwarder that records the stamp of every push and asks to be
/// woken at `due`.
struct Stamps {
    due: Instant,
    pushed: Vec<Instant>,
}

impl Forwarder for Stamps {
    fn push(&mut self, _: Direction, now: Instant, _: Vec<u8>) {
        self.pushed.push(now);
    }
    fn poll_transmit(&mut self, _: Direction, _: Instant) -> Option<Vec<u8>> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.due)
    }
    fn handle_timeout(&mut self, _: Instant) {}
    fn stats(&self, _: Direction) -> CoreStats {
        CoreStats::default()
    }
}

/// An input whose first wait overruns its deadline by `overrun` (the
/// thread stopped), after which `n` packets are waiting; then closed.
struct Stalling {
    overrun: Duration,
    n: usize,
    waits: usize,
    ready: Vec<(Direction, Vec<u8>)>,
    /// (deadline, return) of the first wait.
    first_wait: Option<(Instant, Instant)>,
}

impl Input for Stalling {
    fn wait(&mut self, deadline: Instant, _spin: Duration) {
        self.waits += 1;
        if self.waits == 1 {
            std::thread::sleep((deadline + self.overrun).saturating_duration_since(Instant::now()));
            self.ready = vec![(Direction::Forward, vec![0x45; 40]); self.n];
            self.first_wait = Some((deadline, Instant::now()));
        }
    }
    fn next(&mut self, _: &SharedStats) -> Option<(Direction, Vec<u8>)> {
        self.ready.pop()
    }
    fn closed(&self) -> bool {
        self.waits >= 2 && self.ready.is_empty()
    }
}

fn stamps_after_wait(overrun: Duration) -> (Vec<Instant>, Instant, Instant) {
    let (_dir, writers) = pipe_writers();
    let stats = SharedStats::default();
    let stop = AtomicBool::new(false);
    let mut io = Pair {
        input: Stalling {
            overrun,
            n: 4,
            waits: 0,
            ready: Vec::new(),
            first_wait: None,
        },
        output: writers,
    };
    let fwd = forwarding_loop(
        Stamps {
            due: Instant::now() + Duration::from_millis(2),
            pushed: Vec::new(),
        },
        &mut io,
        Recorders::default(),
        &stats,
        Pacer::default(),
        &stop,
    );
    let (deadline, woke) = io.input.first_wait.expect("waited once");
    (fwd.pushed, deadline, woke)
}

#[test]
fn packets_read_after_a_stall_are_spread_over_it() {
    let (stamps, deadline, woke) = stamps_after_wait(Duration::from_millis(6));
    assert_eq!(stamps.len(), 4);
    // The last one is stamped when it was read, after the wake-up …
    let end = stamps[3];
    assert!(end >= woke);
    let step = (end - deadline) / 4;
    assert!(step >= Duration::from_micros(1500), "{step:?}");
    // … and the others evenly spread between the missed deadline and it.
    for (k, t) in stamps.iter().enumerate() {
        let ideal = deadline + (end - deadline) * (k as u32 + 1) / 4;
        let off = if *t > ideal { *t - ideal } else { ideal - *t };
        assert!(
            off <= Duration::from_micros(1),
            "packet {k} stamped {off:?} off the even spread"
        );
    }
}

#[test]
fn packets_read_after_a_punctual_wake_are_stamped_when_read() {
    let (stamps, deadline, woke) = stamps_after_wait(Duration::ZERO);
    assert_eq!(stamps.len(), 4);
    // (Only if this wake really was punctual: the test host may stall.)
    if woke - deadline <= STALL {
        // Stamped when read, back to back: no spreading.
        assert!(stamps.iter().all(|&t| t >= woke));
        let spread = *stamps.last().unwrap() - stamps[0];
        assert!(spread < Duration::from_micros(500), "{spread:?}");
    }
}

#[test]
fn a_failing_capture_file_is_named_and_the_counters_still_come_back() {
    // /dev/full accepts the open and fails every write with ENOSPC,
    // as a filled disk does.
    let (_dir, writers) = pipe_writers();
    let (tx, rx) = sync_channel(64);
    tx.send((Direction::Forward, vec![0x45; 20])).unwrap();
    let mut cfg = ShellConfig::new("a", "b");
    cfg.pcap = Some(std::path::PathBuf::from("/dev/full"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let io = Pair {
        input: ChannelInput::new(rx),
        output: writers,
    };
    let summary = rt
        .block_on(serve(
            cfg,
            io,
            [None, None],
            |_| PassThrough::new(),
            std::future::ready(()),
        ))
        .expect("the run itself succeeds");
    drop(tx);
    assert_eq!(
        summary.recorder_errors.len(),
        1,
        "{:?}",
        summary.recorder_errors
    );
    let e = &summary.recorder_errors[0];
    assert!(e.starts_with("pcap file /dev/full: "), "{e}");
    assert!(e.contains("No space left on device"), "{e}");
}

#[test]
fn passthrough_loop_counts_write_errors_and_survives() {
    let (_dir, _) = pipe_writers();
    // A read-only file: every write fails with EBADF, like EIO on a down TUN.
    let ro = File::open("/dev/null").unwrap();
    let writers = [ro.try_clone().unwrap(), ro];
    let stats = SharedStats::default();
    let stop = AtomicBool::new(false);
    let (tx, rx) = sync_channel(64);
    for _ in 0..5 {
        tx.send((Direction::Reverse, vec![0x45; 20])).unwrap();
    }
    // Closing the channel ends the loop once the input is drained.
    drop(tx);
    let _ = forwarding_loop(
        PassThrough::new(),
        &mut Pair {
            input: ChannelInput::new(rx),
            output: writers,
        },
        Recorders::default(),
        &stats,
        Pacer::default(),
        &stop,
    );
    let io = stats.io(Direction::Reverse).load();
    assert_eq!(io.write_errors, 5);
    assert_eq!(io.packets_out, 0);
}

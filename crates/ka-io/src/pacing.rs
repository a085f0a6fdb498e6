//! Precise waiting for the pacing thread: sleep, then spin.
//!
//! The core tells the shell the exact instant its next packet is due
//! (`poll_timeout`). A blocking wait with a timeout (a futex under
//! `std::sync::mpsc::Receiver::recv_timeout`) wakes 50–100 µs late on Linux
//! with the default 50 µs timer slack, and tokio's timer has 1 ms
//! granularity — 1 ms of lateness is a 2 ms burst at the next release. So
//! the pacing threads set their timer slack to 1 ns
//! ([`tighten_timer_slack`]) and [`Pacer::wait`] blocks on the input channel
//! until `spin` before the deadline, then spins (checking the channel and
//! the clock) until the deadline. The default spin is zero
//! ([`DEFAULT_SPIN`] says why). A packet arriving meanwhile ends the wait at
//! once, so input is never delayed.
//!
//! Lateness does not accumulate: the core schedules departures from its own
//! ideal timeline, so a late wake only releases the due packets together,
//! far below the 2 ms burst bound of DESIGN §3.1 at the usual wake-up
//! lateness.

use std::io;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};

pub use rustix::event::{PollFd, PollFlags};
use rustix::event::{Timespec, poll};
use std::time::{Duration, Instant};

/// Default spin margin: none. The pacing threads sleep with 1 ns timer
/// slack ([`tighten_timer_slack`]), which wakes them within tens of µs of
/// a deadline on our 2-core VM (p50 < 100 µs, p99 < 2 ms through
/// `ka-router --rate 20mbit`); a 200 µs spin was more punctual (p50
/// < 10 µs) but kept the router's forwarding thread ~70 % busy at
/// 20 Mbit/s (`ppoll` in a loop), and on a shared host spinning threads
/// steal the CPU the endpoints need (measured: KA goodput no better,
/// CPU of router + two endpoints 1.15 → 0.7 cores). Set a spin for
/// sub-10 µs precision on a dedicated core.
pub const DEFAULT_SPIN: Duration = Duration::ZERO;

/// Waits this short are spun whatever the spin margin: a sleep would wake
/// about this late anyway, and at high packet rates (an unshaped port
/// releases every few µs) a timed sleep per packet cost ~1.5 µs of system
/// time per packet (`benches/forwarding`).
pub const SHORT_WAIT: Duration = Duration::from_micros(50);

/// How long to sleep before spinning when `remaining` is left until a
/// deadline: nothing for a short wait, else `remaining − spin`.
pub fn sleep_part(remaining: Duration, spin: Duration) -> Option<Duration> {
    (remaining > spin.max(SHORT_WAIT)).then(|| remaining - spin)
}

/// Waits until one of `fds` is readable or `deadline` has come (`None`: no
/// deadline): sleeps in `ppoll(2)` (nanosecond timeout) until `spin` before
/// the deadline — waits of at most [`SHORT_WAIT`] are not slept at all —
/// then polls without sleeping. Never returns `false` before the deadline.
///
/// Returns `true` if a descriptor is readable or reports an error or
/// hang-up (or the wait was interrupted: the caller's non-blocking read
/// finds out), `false` once the deadline has passed. Each `PollFd` should
/// ask for [`PollFlags::IN`]. The pacing threads of the router and of the
/// endpoint driver both wait here.
pub fn wait_readable(fds: &mut [PollFd<'_>], deadline: Option<Instant>, spin: Duration) -> bool {
    let ready = |fds: &mut [PollFd<'_>], timeout: Option<&Timespec>| {
        poll(fds, timeout).map_or(true, |n| n > 0)
    };
    let Some(deadline) = deadline else {
        return ready(fds, None);
    };
    let now = Instant::now();
    if now >= deadline {
        return false;
    }
    if let Some(sleep) = sleep_part(deadline - now, spin) {
        let ts = Timespec::try_from(sleep).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        if ready(fds, Some(&ts)) {
            return true;
        }
    }
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    loop {
        if Instant::now() >= deadline {
            return false;
        }
        if ready(fds, Some(&zero)) {
            return true;
        }
        std::hint::spin_loop();
    }
}

/// Makes the calling thread's timed waits wake on time: sets its timer
/// slack (`prctl(PR_SET_TIMERSLACK)`) to 1 ns instead of Linux's default
/// 50 µs, so a blocking wait with a timeout (`ppoll`, a futex) ends within
/// the host's wake-up latency of the deadline without spinning. Only this
/// thread is affected. A no-op returning `Ok` off Linux.
pub fn tighten_timer_slack() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1))?;
    }
    Ok(())
}

/// A wake-up this much later than its deadline means the thread was not
/// running (descheduled, or its virtual CPU was): see [`stall_stamp`].
pub const STALL: Duration = Duration::from_millis(1);

/// Arrival stamp for the `k`-th (from 0) of `n` packets read after a stall.
///
/// A thread that wakes more than [`STALL`] after the deadline it slept
/// towards was stopped from then on, and the packets it now finds waiting
/// arrived during the stop, not at the instant they are read. Stamping them
/// all "now" would show the core a link that sat idle through the stall and
/// then a burst that queues: link time lost and a phantom queue that makes
/// RCP cut R, both caused by the router's own CPU, not by the traffic. So
/// they are spread evenly over `(start, end]` — `start` the missed deadline
/// (never before the last time already given to the core), `end` when the
/// last was read — as if they had been read while the thread was stopped.
/// Packets that came in a burst are back-dated too; the core then serves
/// them from a moment before they really arrived, which hides at most one
/// stall's worth of queue. Returns `end` when `n` is 0 or `start ≥ end`.
///
/// Measured (a KA sender through `ka-router --rate 20mbit --delay 20ms` on
/// our 2-CPU VM while its hypervisor stole 7–30 % of the CPU, 12 flows
/// each, interleaved): mean queue 8.1 → 6.6 packets, mean lowest R per
/// flow 17.3 → 17.9 Mbit/s; the share of packets in over-limit 2 ms windows
/// stayed at 0.5–0.7× the stolen share (release bursts after a stall were
/// already there: the core keeps its ideal timeline).
pub fn stall_stamp(start: Instant, end: Instant, k: usize, n: usize) -> Instant {
    let span = end.saturating_duration_since(start);
    let (Ok(k1), Ok(n)) = (u32::try_from(k + 1), u32::try_from(n)) else {
        return end;
    };
    if n == 0 || span.is_zero() || k1 >= n {
        return end;
    }
    start + span * k1 / n
}

/// What ended a [`Pacer::wait`].
#[derive(Debug, PartialEq, Eq)]
pub enum Wake<T> {
    /// A message arrived (possibly before the deadline).
    Message(T),
    /// The deadline passed.
    Deadline,
    /// Every sender is gone.
    Disconnected,
}

/// Sleep-then-spin waiting on a channel with a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    /// How long before a deadline to stop sleeping and start spinning.
    pub spin: Duration,
}

impl Default for Pacer {
    fn default() -> Self {
        Self { spin: DEFAULT_SPIN }
    }
}

impl Pacer {
    /// A pacer with the given spin margin (zero = pure blocking waits).
    pub fn new(spin: Duration) -> Self {
        Self { spin }
    }

    /// Wait for a message on `rx` or until `deadline` (never returns
    /// [`Wake::Deadline`] before it). `None` waits for a message only.
    pub fn wait<T>(&self, rx: &Receiver<T>, deadline: Option<Instant>) -> Wake<T> {
        let Some(deadline) = deadline else {
            return match rx.recv() {
                Ok(m) => Wake::Message(m),
                Err(_) => Wake::Disconnected,
            };
        };
        let now = Instant::now();
        if now >= deadline {
            return Wake::Deadline;
        }
        let remaining = deadline.duration_since(now);
        if let Some(sleep) = sleep_part(remaining, self.spin) {
            match rx.recv_timeout(sleep) {
                Ok(m) => return Wake::Message(m),
                Err(RecvTimeoutError::Disconnected) => return Wake::Disconnected,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        loop {
            match rx.try_recv() {
                Ok(m) => return Wake::Message(m),
                Err(TryRecvError::Disconnected) => return Wake::Disconnected,
                Err(TryRecvError::Empty) => {}
            }
            if Instant::now() >= deadline {
                return Wake::Deadline;
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn never_wakes_before_the_deadline_and_rarely_late() {
        let (_tx, rx) = sync_channel::<()>(1);
        // The spin mechanism itself (the default spins not at all).
        let pacer = Pacer::new(Duration::from_micros(200));
        let mut late = Vec::new();
        for i in 0..50u64 {
            let deadline = Instant::now() + Duration::from_micros(300 + 37 * i);
            assert_eq!(pacer.wait(&rx, Some(deadline)), Wake::Deadline);
            let now = Instant::now();
            assert!(now >= deadline, "woke {:?} early", deadline - now);
            late.push(now - deadline);
        }
        late.sort();
        // The median wake is within 100 µs even on a loaded CI machine; a
        // pure 1 ms timer would be ~0.5 ms late on average.
        let median = late[late.len() / 2];
        assert!(
            median < Duration::from_micros(100),
            "median lateness {median:?}"
        );
    }

    #[test]
    fn a_message_ends_the_wait_early() {
        let (tx, rx) = sync_channel::<u32>(1);
        let t = std::thread::spawn(move || tx.send(7));
        let start = Instant::now();
        let far = start + Duration::from_secs(30);
        assert_eq!(Pacer::default().wait(&rx, Some(far)), Wake::Message(7));
        assert!(start.elapsed() < Duration::from_secs(10));
        t.join().unwrap().unwrap();
        assert_eq!(Pacer::default().wait(&rx, None), Wake::Disconnected);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn timer_slack_is_tightened_for_the_calling_thread_only() {
        std::thread::spawn(|| {
            let before = rustix::thread::current_timer_slack().unwrap();
            tighten_timer_slack().unwrap();
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), 1);
            assert_ne!(before, 1, "a fresh thread starts with the default slack");
        })
        .join()
        .unwrap();
        // Another thread keeps its own (default) slack.
        std::thread::spawn(|| assert_ne!(rustix::thread::current_timer_slack().unwrap(), 1))
            .join()
            .unwrap();
    }

    #[test]
    fn short_waits_spin_long_ones_sleep_until_the_spin_margin() {
        let us = Duration::from_micros;
        assert_eq!(sleep_part(us(49), Duration::ZERO), None);
        assert_eq!(sleep_part(us(50), Duration::ZERO), None);
        assert_eq!(sleep_part(us(51), Duration::ZERO), Some(us(51)));
        assert_eq!(sleep_part(us(600), Duration::ZERO), Some(us(600)));
        assert_eq!(sleep_part(us(600), us(200)), Some(us(400)));
        assert_eq!(sleep_part(us(150), us(200)), None);
    }

    #[test]
    fn stall_stamps_spread_evenly_up_to_the_read_time() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let stamps: Vec<Instant> = (0..4).map(|k| stall_stamp(t0, t0 + ms(8), k, 4)).collect();
        assert_eq!(
            stamps,
            [t0 + ms(2), t0 + ms(4), t0 + ms(6), t0 + ms(8)],
            "evenly spaced, the last one when it was read"
        );
        assert_eq!(stall_stamp(t0, t0 + ms(8), 0, 1), t0 + ms(8));
        // Degenerate inputs give the read time, never a time before `start`.
        assert_eq!(stall_stamp(t0 + ms(8), t0, 0, 3), t0);
        assert_eq!(stall_stamp(t0, t0 + ms(8), 5, 3), t0 + ms(8));
        assert_eq!(stall_stamp(t0, t0 + ms(8), 0, 0), t0 + ms(8));
    }

    #[test]
    fn wait_readable_sees_data_and_meets_deadlines() {
        use std::io::Write;
        use std::os::unix::net::UnixStream;
        let (mut a, b) = UnixStream::pair().unwrap();
        let deadline = Instant::now() + Duration::from_millis(5);
        let mut fds = [PollFd::new(&b, PollFlags::IN)];
        assert!(!wait_readable(&mut fds, Some(deadline), Duration::ZERO));
        assert!(Instant::now() >= deadline, "never returns early");
        // Past deadline: at once.
        assert!(!wait_readable(
            &mut fds,
            Some(Instant::now()),
            Duration::ZERO
        ));
        a.write_all(b"x").unwrap();
        let far = Instant::now() + Duration::from_secs(30);
        let t = Instant::now();
        assert!(wait_readable(&mut fds, Some(far), Duration::ZERO));
        assert!(wait_readable(&mut fds, None, Duration::from_micros(200)));
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "readable ends the wait"
        );
    }

    #[test]
    fn past_deadline_returns_immediately() {
        let (_tx, rx) = sync_channel::<()>(1);
        let past = Instant::now();
        assert_eq!(
            Pacer::new(Duration::ZERO).wait(&rx, Some(past)),
            Wake::Deadline
        );
    }
}

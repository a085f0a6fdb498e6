//! The router's I/O loop: one forwarding thread reads both devices, runs
//! both ports and writes their output.
//!
//! ```text
//!  tun in  ──read──▶ ┌──────────────────────────────┐ ──write──▶ tun out
//!                    │ forwarding thread            │
//!  tun out ──read──▶ │ (owns both ports; ppoll+spin)│ ──write──▶ tun in
//!                    └──────────────────────────────┘
//! ```
//!
//! Release times must be met to tens of microseconds (DESIGN §3.1), which
//! tokio's 1 ms timer cannot do, so a dedicated thread owns both
//! [`Forwarder`] directions. It waits for whichever comes first, a readable
//! device or the next departure (`TunInput`: `ppoll(2)` with a nanosecond
//! timeout until `spin` before the departure, then polling without
//! sleeping), reads every packet that is ready (up to 256) and hands them
//! to the core together ([`Forwarder::push_batch`]), each stamped with the
//! time it was read (after a wake-up more than [`STALL`] late, spread over
//! the stall instead: [`stall_stamp`]), then writes everything due.
//! Writes are plain `write(2)` calls (a TUN write never blocks), so a packet
//! leaves at the instant the core releases it. One thread for both
//! directions keeps the core single-threaded and leaves the second core of a
//! small machine to the endpoints and the kernel; there is no hand-over
//! between a reader and the pacer that could bunch packets or cost context
//! switches (see the `input` module for the measurements behind this). The
//! tokio runtime serves signals and the metrics endpoint only.
//!
//! Captures (`--pcap`) go to their own thread ([`PcapRecorder`]): file I/O
//! can stall for milliseconds and must never delay a release.
//!
//! Memory: one 64 KiB read buffer; the kernel's TUN queue (`txqueuelen`,
//! 4096 packets unless `--tun-queue` says otherwise:
//! [`DEFAULT_TX_QUEUE_LEN`](ka_io::tun::DEFAULT_TX_QUEUE_LEN)) holds what the
//! thread has not read yet and drops beyond it (`TX dropped` in
//! `ip -s link`). The capture queue is capped ([`DEFAULT_RECORDER_CAPACITY`],
//! dropped records counted). The cores' own queues are capped by `--queue`.

use std::fs::File;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ka_io::pacing::{Pacer, STALL, stall_stamp};
use ka_io::tun::{KernelDrops, TunOptions, open_tun};
use tokio::net::TcpListener;

use super::forwarder::{Arrivals, Forwarder};
use super::input::{Input, Output, Pair, TunInput, TunOutput, spare_buffers};
use super::metrics::serve_metrics;
use super::pcap::{DEFAULT_RECORDER_CAPACITY, PcapHandle, PcapRecorder, PcapSink, wall_clock};
use super::stamplog::{DEFAULT_STAMP_LOG_CAPACITY, StampLog, StampLogHandle, leading_fragment};
use super::stats::{Direction, DirectionSummary, IoCounters, LatenessStats, SharedStats};
use super::writer::WriterThreads;
use crate::gso::Gso;

/// How often the forwarding thread refreshes the published core state (and
/// the longest it waits before noticing a shutdown).
pub const PUBLISH_EVERY: Duration = Duration::from_millis(100);
/// How often the kernel's drop counters of the devices are read.
const KERNEL_DROPS_EVERY: Duration = Duration::from_secs(1);
/// Most packets read before the due ones are sent.
const INPUT_BATCH: usize = 256;

/// What the router attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Link {
    /// Two layer-3 TUN devices (DESIGN §8.1, §8.2).
    #[default]
    Tun,
    /// Two existing Ethernet interfaces, bridged at layer 2 through
    /// `AF_PACKET` sockets (see [`bridge`](super::bridge)).
    Bridge,
}

/// I/O settings of one router run.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// Device on the `in` side (forward packets are read here): a TUN
    /// device, or with [`Link::Bridge`] the first Ethernet interface.
    pub in_dev: String,
    /// Device on the `out` side (forward packets are written here).
    pub out_dev: String,
    /// Open `in_dev` inside this network namespace
    /// ([`open_tun_in`](ka_io::tun::open_tun_in); `None`: the caller's).
    pub in_netns: Option<String>,
    /// Open `out_dev` inside this network namespace (see `in_netns`).
    pub out_netns: Option<String>,
    /// TUN devices or a layer-2 bridge.
    pub link: Link,
    /// How both TUN devices are opened (unused by [`Link::Bridge`], which
    /// leaves its interfaces' settings alone).
    pub tun: TunOptions,
    /// Serve Prometheus metrics here (`None`: no endpoint).
    pub metrics: Option<SocketAddr>,
    /// Record every written packet here (`None`: no capture).
    pub pcap: Option<PathBuf>,
    /// Log every leading fragment written here (`None`: no log; see
    /// [`stamplog`](super::stamplog)).
    pub stamp_log: Option<PathBuf>,
    /// The forwarding thread's wait strategy (how long it spins before a
    /// departure).
    pub pacer: Pacer,
    /// Run on the forwarding thread before it starts forwarding.
    pub pacing_thread_init: Option<ThreadInit>,
    /// Write each direction on a thread of its own (TUN only; see the
    /// `writer` module): for multi-Gbit/s links. Default false.
    pub write_threads: bool,
}

impl ShellConfig {
    /// Defaults for everything but the device names.
    pub fn new(in_dev: impl Into<String>, out_dev: impl Into<String>) -> Self {
        Self {
            in_dev: in_dev.into(),
            out_dev: out_dev.into(),
            in_netns: None,
            out_netns: None,
            link: Link::Tun,
            tun: TunOptions::default(),
            metrics: None,
            pcap: None,
            stamp_log: None,
            pacer: Pacer::default(),
            pacing_thread_init: None,
            write_threads: false,
        }
    }
}

/// What [`run`] returns after a clean shutdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    /// Final state of the in → out direction.
    pub forward: DirectionSummary,
    /// Final state of the out → in direction.
    pub reverse: DirectionSummary,
    /// How precisely the pacing thread met departure times.
    pub lateness: LatenessStats,
    /// Capture records dropped because the pcap thread fell behind.
    pub pcap_dropped: u64,
    /// Stamp-log lines dropped because its thread fell behind.
    pub stamp_log_dropped: u64,
    /// Receive-window modulation's final counters (`None` without it).
    pub rwm: Option<crate::rwm::RwmStats>,
    /// Failures of the capture or stamp-log file (e.g. the disk filled
    /// up), each naming its file. The router forwarded on regardless; the
    /// binary prints its counters, then exits with these as the error.
    pub recorder_errors: Vec<String>,
}

/// Code the forwarding thread runs first, e.g. to raise its scheduling priority
/// (the `ka-router` binary's `--realtime`). An error is logged, not fatal.
#[derive(Clone)]
pub struct ThreadInit(pub Arc<dyn Fn() -> io::Result<()> + Send + Sync>);

impl std::fmt::Debug for ThreadInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThreadInit(..)")
    }
}

/// Attach to both devices and forward through the forwarder `make` builds
/// until `shutdown` completes; then flush the pcap and return the final
/// counters. Must be called inside a tokio runtime with I/O and time enabled.
///
/// Errors: opening the devices, the pcap file, the stamp log or the metrics
/// socket, or a panic of the forwarding thread. Read and write errors on the
/// devices are counted and logged, never fatal (a far interface may be down).
pub async fn run<F, M, S>(cfg: ShellConfig, make: M, shutdown: S) -> io::Result<RunSummary>
where
    F: Forwarder,
    M: FnOnce(Instant) -> F,
    S: Future<Output = ()>,
{
    match cfg.link {
        Link::Tun => {
            let in_dev = open_device(&cfg.in_dev, cfg.in_netns.as_deref(), &cfg.tun, "--in")?;
            let out_dev = open_device(&cfg.out_dev, cfg.out_netns.as_deref(), &cfg.tun, "--out")?;
            // Forward packets are read from `in`, reverse ones from `out`.
            let kernel_drops = [KernelDrops::watch(&in_dev), KernelDrops::watch(&out_dev)];
            if cfg.tun.offload || cfg.write_threads {
                let (in_dev, out_dev) = (Arc::new(in_dev), Arc::new(out_dev));
                tracing::info!(
                    r#in = %cfg.in_dev,
                    out = %cfg.out_dev,
                    offload = cfg.tun.offload,
                    write_threads = cfg.write_threads,
                    "attached to TUN devices"
                );
                let (spares, returned) = spare_buffers();
                let input = if cfg.tun.offload {
                    TunInput::with_offload(in_dev.clone(), out_dev.clone(), cfg.tun.mtu)?
                } else {
                    TunInput::with_devices(in_dev.clone(), out_dev.clone(), None)?
                }
                .reuse(returned);
                if cfg.write_threads {
                    let output = WriterThreads::spawn(in_dev, out_dev, cfg.tun.offload, &spares)?;
                    let io = Pair { input, output };
                    return serve(cfg, io, kernel_drops, make, shutdown).await;
                }
                let io = Pair {
                    input,
                    output: TunOutput::new(in_dev, out_dev, spares),
                };
                return serve(cfg, io, kernel_drops, make, shutdown).await;
            }
            let write_handle = |d: &tun_rs::SyncDevice| -> io::Result<File> {
                Ok(File::from(d.as_fd().try_clone_to_owned()?))
            };
            // Forward packets leave through `out`, reverse ones through `in`.
            let writers = [write_handle(&out_dev)?, write_handle(&in_dev)?];
            tracing::info!(r#in = %cfg.in_dev, out = %cfg.out_dev, "attached to TUN devices");
            let io = Pair {
                input: TunInput::new(in_dev, out_dev)?,
                output: writers,
            };
            serve(cfg, io, kernel_drops, make, shutdown).await
        }
        Link::Bridge => {
            let io = super::bridge::Bridge::open(&cfg.in_dev, &cfg.out_dev)?;
            tracing::info!(a = %cfg.in_dev, b = %cfg.out_dev, "bridging Ethernet interfaces");
            serve(cfg, io, [None, None], make, shutdown).await
        }
    }
}

/// Opens TUN device `name` in `netns` (or here). Here, a device that does
/// not exist is created — unless a named network namespace has a device of
/// that name: then it was most likely moved there after it was made (the
/// testbed's wiring), a fresh device here would be connected to nothing,
/// and the error says which `--in-netns`/`--out-netns` attaches to it.
fn open_device(
    name: &str,
    netns: Option<&str>,
    options: &TunOptions,
    flag: &str,
) -> io::Result<tun_rs::SyncDevice> {
    if let Some(ns) = netns {
        return ka_io::tun::open_tun_in(name, ns, options);
    }
    if !std::path::Path::new("/sys/class/net").join(name).exists() {
        let elsewhere = ka_io::tun::namespaces_with_device(name);
        if let Some(ns) = elsewhere.first() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "TUN device {name} is not in this network namespace but in {} \
                     (moved there after it was made?); a new {name} here would be connected \
                     to nothing. Attach to it with {flag}-netns {ns}",
                    elsewhere.join(", ")
                ),
            ));
        }
    }
    open_tun(name, options)
}

/// The recorders, the metrics endpoint and the forwarding thread around
/// any pair of devices `io`; see [`run`].
async fn serve<F, M, S, IO>(
    cfg: ShellConfig,
    mut io: IO,
    kernel_drops: [Option<KernelDrops>; 2],
    make: M,
    shutdown: S,
) -> io::Result<RunSummary>
where
    F: Forwarder,
    M: FnOnce(Instant) -> F,
    S: Future<Output = ()>,
    IO: Input + Output + Send + 'static,
{
    let pcap = match &cfg.pcap {
        Some(p) => {
            let sink = PcapSink::create(p)
                .map_err(|e| io::Error::new(e.kind(), format!("pcap file {}: {e}", p.display())))?;
            Some(PcapRecorder::spawn(sink, DEFAULT_RECORDER_CAPACITY)?)
        }
        None => None,
    };
    let stamp_log = match &cfg.stamp_log {
        Some(p) => Some(
            StampLog::create(p, DEFAULT_STAMP_LOG_CAPACITY)
                .map_err(|e| io::Error::new(e.kind(), format!("stamp log {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let stats = Arc::new(SharedStats::default());
    let metrics = match cfg.metrics {
        Some(addr) => {
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("metrics address {addr}: {e}")))?;
            let bound = listener.local_addr()?;
            tracing::info!("metrics on http://{bound}/metrics");
            Some(tokio::spawn(serve_metrics(listener, Arc::clone(&stats))))
        }
        None => None,
    };

    let fwd = make(Instant::now());
    publish(&fwd, &stats);
    let stop = Arc::new(AtomicBool::new(false));
    let pacing = {
        let stats = Arc::clone(&stats);
        let stop = Arc::clone(&stop);
        let pacer = cfg.pacer;
        let init = cfg.pacing_thread_init.clone();
        let recorders = Recorders {
            pcap: pcap.as_ref().map(PcapRecorder::handle),
            stamp_log: stamp_log.as_ref().map(StampLog::handle),
        };
        std::thread::Builder::new()
            .name("ka-forward".into())
            .spawn(move || {
                if let Err(e) = ka_io::pacing::tighten_timer_slack() {
                    tracing::warn!("forwarding thread: timer slack unchanged: {e}");
                }
                if let Some(Err(e)) = init.map(|ThreadInit(f)| f()) {
                    tracing::warn!("forwarding thread set-up failed, continuing: {e}");
                }
                forwarding_loop(fwd, &mut io, recorders, &stats, pacer, &stop)
            })?
    };

    let update_drops = || {
        for (dir, k) in Direction::ALL.into_iter().zip(&kernel_drops) {
            if let Some(n) = k.as_ref().and_then(KernelDrops::since_start) {
                stats.io(dir).input_overflow.store(n, Ordering::Relaxed);
            }
        }
    };
    {
        let mut tick = tokio::time::interval(KERNEL_DROPS_EVERY);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                _ = tick.tick() => update_drops(),
            }
        }
    }
    update_drops();
    tracing::info!("shutting down");
    stop.store(true, Ordering::SeqCst);
    if let Some(m) = &metrics {
        m.abort();
    }
    let joined = tokio::task::spawn_blocking(move || pacing.join())
        .await
        .map_err(io::Error::other)?;
    let fwd = joined.map_err(|_| io::Error::other("forwarding thread panicked"))?;
    // A recorder's failure is reported with the counters, not instead of
    // them: the forwarding went on and the operator wants both.
    let mut recorder_errors = Vec::new();
    let mut finished = |r: Option<io::Result<u64>>, what: &str, path: Option<&PathBuf>| match r {
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            let path = path.map_or_else(String::new, |p| format!(" {}", p.display()));
            recorder_errors.push(format!("{what}{path}: {e}"));
            0
        }
        None => 0,
    };
    let pcap_dropped = finished(
        pcap.map(PcapRecorder::finish),
        "pcap file",
        cfg.pcap.as_ref(),
    );
    let stamp_log_dropped = finished(
        stamp_log.map(StampLog::finish),
        "stamp log",
        cfg.stamp_log.as_ref(),
    );
    let summary = |d: Direction| DirectionSummary {
        io: stats.io(d).load(),
        core: fwd.stats(d),
    };
    Ok(RunSummary {
        forward: summary(Direction::Forward),
        reverse: summary(Direction::Reverse),
        lateness: stats.lateness.load(),
        pcap_dropped,
        stamp_log_dropped,
        rwm: fwd.rwm_stats(),
        recorder_errors,
    })
}

/// Log the 1st, 2nd, 4th, 8th … occurrence only.
fn worth_logging(count: u64) -> bool {
    count.is_power_of_two()
}

/// Where written packets are recorded (each optional).
#[derive(Debug, Default)]
struct Recorders {
    pcap: Option<PcapHandle>,
    stamp_log: Option<StampLogHandle>,
}

/// Writes one TCP super-packet whole ([`Output::write_gso`]) and records
/// it (counted as its segments; captured as the one packet it is); a
/// failure is counted once per segment.
fn emit_gso<O: Output>(
    output: &mut O,
    stats: &SharedStats,
    rec: &Recorders,
    dir: Direction,
    packet: Vec<u8>,
    gso: Gso,
) {
    let io = stats.io(dir);
    let captured = rec.pcap.as_ref().map(|_| packet.clone());
    match output.write_gso(dir, packet, gso) {
        Ok(n) => {
            IoCounters::add(&io.packets_out, u64::from(gso.segments()));
            IoCounters::add(&io.bytes_out, n as u64);
            if let (Some(p), Some(copy)) = (&rec.pcap, captured) {
                p.record_at(wall_clock(), copy);
            }
        }
        Err(e) => write_failed(stats, dir, &e),
    }
}

/// Writes one packet and records it; failures are counted, never fatal.
fn emit<O: Output>(
    output: &mut O,
    stats: &SharedStats,
    rec: &Recorders,
    dir: Direction,
    packet: Vec<u8>,
) {
    let io = stats.io(dir);
    let leading = leading_fragment(&packet);
    // The output may keep the buffer (writer threads): the capture gets a
    // copy, only when there is a capture.
    let captured = rec.pcap.as_ref().map(|_| packet.clone());
    match output.write_owned(dir, packet) {
        Ok(n) => {
            IoCounters::add(&io.packets_out, 1);
            IoCounters::add(&io.bytes_out, n as u64);
            if leading.is_some() {
                IoCounters::add(&io.leading_out, 1);
            }
            if rec.pcap.is_none() && rec.stamp_log.is_none() {
                return;
            }
            // One timestamp for both records of this packet.
            let ts = wall_clock();
            if let (Some(log), Some(l)) = (&rec.stamp_log, leading) {
                log.record(ts, dir, l);
            }
            if let (Some(p), Some(copy)) = (&rec.pcap, captured) {
                p.record_at(ts, copy);
            }
        }
        Err(e) => write_failed(stats, dir, &e),
    }
}

/// Counts (and now and then logs) a failed write.
fn write_failed(stats: &SharedStats, dir: Direction, e: &io::Error) {
    let n = stats.io(dir).write_errors.fetch_add(1, Ordering::Relaxed) + 1;
    if worth_logging(n) {
        tracing::warn!(
            direction = dir.label(),
            errors = n,
            "write failed (far side down?): {e}"
        );
    }
}

fn publish<F: Forwarder>(fwd: &F, stats: &SharedStats) {
    stats.publish(Direction::ALL.map(|d| fwd.stats(d)));
    stats.publish_rwm(fwd.rwm_stats());
}

fn forwarding_loop<F: Forwarder, IO: Input + Output>(
    mut fwd: F,
    io: &mut IO,
    rec: Recorders,
    stats: &SharedStats,
    pacer: Pacer,
    stop: &AtomicBool,
) -> F {
    let mut clock = Instant::now();
    let mut next_publish = clock + PUBLISH_EVERY;
    let mut batch: Arrivals = Vec::with_capacity(INPUT_BATCH);
    // The deadline the last wait overran by more than `STALL`, if it did.
    let mut stalled_since: Option<Instant> = None;
    loop {
        // Input first: every packet that is ready, each stamped when read —
        // or, after a stall, spread over the stall (`stall_stamp`).
        while batch.len() < INPUT_BATCH {
            let Some((dir, p, tso)) = io.next_gso(stats) else {
                break;
            };
            let now = Instant::now();
            let io = stats.io(dir);
            match tso {
                Some(t) => {
                    IoCounters::add(&io.packets_in, u64::from(t.segments));
                    IoCounters::add(&io.bytes_in, t.wire_len(p.len()) as u64);
                }
                None => {
                    IoCounters::add(&io.packets_in, 1);
                    IoCounters::add(&io.bytes_in, p.len() as u64);
                }
            }
            batch.push((dir, p, now, tso.map(|t| t.size)));
        }
        let stall = stalled_since
            .take()
            .zip(batch.last().map(|b| b.2))
            .map(|(since, end)| (since.max(clock), end));
        let n = batch.len();
        for (k, (_, _, read_at, _)) in batch.iter_mut().enumerate() {
            let stamp = stall.map_or(*read_at, |(start, end)| stall_stamp(start, end, k, n));
            clock = clock.max(stamp);
            *read_at = clock;
        }
        // All of them at once (the core may overlap their work: RWM's
        // lookups, `Rwm::process_batch`), each at its stamp; a TCP
        // super-packet whole (the core decides whether it stays whole).
        fwd.push_batch_gso(&mut batch);
        // Then everything due, recording how late each release is.
        loop {
            clock = clock.max(Instant::now());
            let Some(due) = fwd.poll_timeout().filter(|&t| t <= clock) else {
                break;
            };
            let mut sent = false;
            // One piece per direction per round, so `due` stays exact.
            for dir in Direction::ALL {
                if let Some((p, gso)) = fwd.poll_transmit_gso(dir, clock) {
                    let now = Instant::now();
                    stats.lateness.record(now.saturating_duration_since(due));
                    match gso {
                        Some(g) => emit_gso(io, stats, &rec, dir, p, g),
                        None => emit(io, stats, &rec, dir, p),
                    }
                    sent = true;
                }
            }
            if !sent {
                // The due event was internal (a dequeue into the delay line).
                break;
            }
        }
        // An output that batches (TUN offloads) writes this round's
        // releases now, coalesced.
        io.flush(&mut |dir, e| write_failed(stats, dir, &e));
        if clock >= next_publish {
            fwd.handle_timeout(clock);
            publish(&fwd, stats);
            next_publish = clock + PUBLISH_EVERY;
        }
        if stop.load(Ordering::Relaxed) || io.closed() {
            break;
        }
        let deadline = fwd
            .poll_timeout()
            .map_or(next_publish, |t| t.min(next_publish));
        io.wait(deadline, pacer.spin);
        if Instant::now().saturating_duration_since(deadline) > STALL {
            stalled_since = Some(deadline);
        }
    }
    publish(&fwd, stats);
    fwd
}

#[cfg(test)]
mod tests;

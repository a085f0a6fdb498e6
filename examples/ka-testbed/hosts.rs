//! The host processes: `ka-testbed host --role send|recv …`, which the
//! runner starts inside the testbed's namespaces (`ip netns exec`). They
//! read the same scenario file the simulator runs and play its hosts:
//!
//! * **senders** (namespace A): one per scenario sender, each an on-off
//!   loop drawing its off times and flow sizes from the simulator's random
//!   stream for that sender (`ka_sim::engine::rng::stream(seed, i)`, the same draws
//!   in the same order as `ka_sim::model::host`), so a real run and its simulation
//!   offer the same flows. A flow: open a connection, write the
//!   [`Header`] and filler up to the size, close, and
//!   wait until everything is acknowledged (KA endpoints: the driver's
//!   `shutdown`; kernel TCP: the receiver's close), then go off for
//!   Exp(off mean).
//! * **the receiver** (namespace B): accepts every connection, reads the
//!   header, and reports the flow's FCT when its last byte has been read.
//!
//! Which stack: `ka` and `pcc` flows (and any other kind the endpoint
//! implements) run on `ka-endpoint`'s TUN driver (`KaStack`, the code of
//! `ka-endpoint send/recv`), one userspace host per sender, each on its own
//! TUN device with its own /30 (the wiring of docs/usage/endpoint.md); the receiver is one
//! userspace host. `tcp-cubic` and `tcp-newreno` flows are the Linux
//! kernel's TCP (per-socket `TCP_CONGESTION`), to a kernel receiver.
//! The endpoint's TCP parameters are the simulator's (`ka_sim::model::host::
//! tcp_config` plus the scenario's `[tcp]`), so both halves run the same
//! endpoint configuration.
//!
//! Senders stop at `t0 + duration` by exiting (whatever is in flight is
//! cut off, as the simulation's end cuts it off); the receiver runs until
//! the runner stops it.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use ka_endpoint::TcpConfig;
use ka_endpoint::driver::{Cidr, DriverConfig, KaStack, KaStream};
use ka_sim::engine::rng::{self, SizeDist};
use ka_sim::model::host::{payload_per_packet_of, tcp_config};
use ka_sim::scenario::{FlowKind, Scenario, Workload};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::wire::{HEADER_LEN, Header, Record, now_ns};

/// The receivers' port.
pub const PORT: u16 = 5001;
/// The most senders the address plan holds (one /30 each from
/// 10.77.0.100, below the receiver's 10.77.0.200/30).
pub const MAX_SENDERS: usize = 24;
/// Bin width of the receiver's per-flow byte counts (the series' bins).
pub const BIN_NS: u64 = 100_000_000;

/// Whether flows of `kind` run on the Linux kernel's TCP.
pub fn kernel_kind(kind: FlowKind) -> bool {
    matches!(kind, FlowKind::TcpCubic | FlowKind::TcpNewReno)
}

/// The kernel congestion control of a kernel kind.
pub fn kernel_cc(kind: FlowKind) -> &'static str {
    match kind {
        FlowKind::TcpNewReno => "reno",
        _ => "cubic",
    }
}

/// The userspace address (with its /30) of endpoint sender `i`.
pub fn sender_cidr(i: usize) -> String {
    format!("10.77.0.{}/30", 101 + 4 * i)
}

/// The userspace receiver's address (with its /30).
pub const RECEIVER_CIDR: &str = "10.77.0.201/30";

/// Where senders of `kind` connect to: the userspace receiver, or the
/// kernel of namespace B.
pub fn receiver_addr(kind: FlowKind) -> SocketAddr {
    let ip = if kernel_kind(kind) {
        ka_router::shell::testbed::ADDR_B
    } else {
        Ipv4Addr::new(10, 77, 0, 201)
    };
    SocketAddr::from((ip, PORT))
}

/// `send` or `recv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The scenario's senders.
    Send,
    /// The scenario's receiver.
    Recv,
}

/// Arguments of `ka-testbed host` (started by the runner, not by hand).
#[derive(Debug, Args)]
pub struct HostArgs {
    /// Which side.
    #[arg(long, value_enum)]
    pub role: Role,
    /// The scenario (TOML), as the simulator runs it.
    #[arg(long)]
    pub scenario: PathBuf,
    /// The experiment's time zero, ns since the Unix epoch: senders start
    /// their first off period then; the receiver's bins count from it.
    #[arg(long)]
    pub t0_ns: u64,
}

/// What the hosts need from the scenario.
#[derive(Debug, Clone)]
struct Plan {
    kind: FlowKind,
    senders: usize,
    track: usize,
    seed: u64,
    off_mean: f64,
    sizes: SizeDist,
    payload: u64,
    tcp: TcpConfig,
    duration_ns: u64,
}

fn plan(s: &Scenario) -> anyhow::Result<Plan> {
    let [g] = s.groups.as_slice() else {
        bail!("the testbed runs scenarios with exactly one sender group");
    };
    let Workload::OnOff { off_mean_s, sizes } = &g.workload else {
        bail!("the testbed runs on-off workloads only");
    };
    let mut tcp = tcp_config(g.kind, s.packet_bytes)?;
    s.tcp.apply(&mut tcp);
    Ok(Plan {
        kind: g.kind,
        senders: g.count,
        track: g.track,
        seed: s.seed,
        off_mean: *off_mean_s,
        sizes: sizes.build().map_err(|e| anyhow::anyhow!("{e}"))?,
        payload: payload_per_packet_of(g.kind, s.packet_bytes) as u64,
        tcp,
        duration_ns: (s.duration_s * 1e9) as u64,
    })
}

/// Runs a host process (never returns on success: senders exit at the end
/// of the run, the receiver when it is stopped).
pub fn main(a: HostArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.scenario)
        .with_context(|| format!("reading {}", a.scenario.display()))?;
    let s = Scenario::from_toml(&text)?;
    let p = plan(&s)?;
    match (a.role, kernel_kind(p.kind)) {
        (Role::Send, true) => kernel_senders(&p, a.t0_ns),
        (Role::Recv, true) => kernel_receiver(&p, a.t0_ns),
        (Role::Send, false) => runtime()?.block_on(endpoint_senders(&p, a.t0_ns)),
        (Role::Recv, false) => runtime()?.block_on(endpoint_receiver(&p, a.t0_ns)),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

/// The on-off schedule of one sender: the simulator's draws, in its order
/// (first off period; then per flow its size, and after it the next off).
struct OnOff {
    rng: ChaCha8Rng,
    sizes: SizeDist,
    off_mean: f64,
    payload: u64,
}

impl OnOff {
    fn new(p: &Plan, i: usize) -> (OnOff, f64) {
        let mut rng = rng::stream(p.seed, i as u64);
        let first = rng::exponential(&mut rng, p.off_mean);
        let o = OnOff {
            rng,
            sizes: p.sizes.clone(),
            off_mean: p.off_mean,
            payload: p.payload,
        };
        (o, first)
    }

    /// The next flow's size: (packets, bytes, at least the header).
    fn size(&mut self) -> (u64, u64) {
        let pkts = self.sizes.sample_pkts(&mut self.rng);
        (pkts, (pkts * self.payload).max(HEADER_LEN as u64))
    }

    /// The next off period, s.
    fn off(&mut self) -> f64 {
        rng::exponential(&mut self.rng, self.off_mean)
    }
}

/// Sleeps until `at_ns` (epoch), at most until `deadline_ns`; false if the
/// deadline came first.
fn sleep_until(at_ns: u64, deadline_ns: u64) -> bool {
    let target = at_ns.min(deadline_ns);
    let now = now_ns();
    if target > now {
        std::thread::sleep(Duration::from_nanos(target - now));
    }
    at_ns < deadline_ns
}

/// Exits the process at `deadline_ns` (epoch): the end of the run.
fn exit_at(deadline_ns: u64) -> ! {
    sleep_until(deadline_ns, deadline_ns);
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

fn start(i: usize, seq: u32, size_pkts: u64, size_bytes: u64) -> Header {
    let h = Header {
        sender: i as u32,
        seq,
        size: size_bytes,
        start_ns: now_ns(),
    };
    Record::Start {
        sender: h.sender,
        seq,
        size_pkts,
        size_bytes,
        start_ns: h.start_ns,
    }
    .emit();
    h
}

fn done(h: &Header, ka_time_s: Option<f64>, r: anyhow::Result<()>) {
    Record::Done {
        sender: h.sender,
        seq: h.seq,
        stop_ns: now_ns(),
        ka_time_s,
        ok: r.is_ok(),
        error: r.err().map(|e| format!("{e:#}")),
    }
    .emit();
}

/// Filler after the header: zeros, like the simulator's applications.
static FILLER: [u8; 64 * 1024] = [0; 64 * 1024];

fn kernel_senders(p: &Plan, t0: u64) -> anyhow::Result<()> {
    let deadline = t0 + p.duration_ns;
    let to = receiver_addr(p.kind);
    for i in 0..p.senders {
        let p = p.clone();
        std::thread::Builder::new()
            .name(format!("sender-{i}"))
            .spawn(move || {
                let (mut o, first) = OnOff::new(&p, i);
                let mut next = t0 + (first * 1e9) as u64;
                for seq in 0u32.. {
                    if !sleep_until(next, deadline) {
                        return;
                    }
                    let (pkts, bytes) = o.size();
                    let h = start(i, seq, pkts, bytes);
                    let r = kernel_flow(&h, to, kernel_cc(p.kind));
                    done(&h, None, r);
                    next = now_ns() + (o.off() * 1e9) as u64;
                }
            })?;
    }
    exit_at(deadline)
}

fn kernel_flow(h: &Header, to: SocketAddr, cc: &str) -> anyhow::Result<()> {
    let mut c = kernel_connect(to, cc).with_context(|| format!("connecting to {to}"))?;
    c.write_all(&h.encode()).context("sending")?;
    let mut left = h.size - HEADER_LEN as u64;
    while left > 0 {
        let n = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(FILLER.len());
        c.write_all(&FILLER[..n]).context("sending")?;
        left -= n as u64;
    }
    c.shutdown(std::net::Shutdown::Write).context("closing")?;
    // The receiver closes once it has read everything: then all is acked.
    let mut rest = [0u8; 64];
    match c
        .read(&mut rest)
        .context("waiting for the receiver's close")?
    {
        0 => Ok(()),
        _ => bail!("the receiver sent data"),
    }
}

/// A kernel TCP connection to `to` with congestion control `cc`, set
/// before the SYN (a namespace's default can only be one of the host's
/// `tcp_allowed_congestion_control`, which need not include CUBIC; per
/// socket, root may pick any available one).
fn kernel_connect(to: SocketAddr, cc: &str) -> std::io::Result<TcpStream> {
    use rustix::net::{AddressFamily, SocketType, connect, socket, sockopt};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None)?;
    sockopt::set_tcp_congestion(&fd, cc)?;
    connect(&fd, &to)?;
    Ok(TcpStream::from(fd))
}

/// Per-flow reading state of a receiver.
struct Reading {
    t0: u64,
    track: usize,
    tracked: bool,
    header: Vec<u8>,
    flow: Option<Header>,
    bytes: u64,
    bins: Vec<(u64, u64)>,
    ended: bool,
}

impl Reading {
    fn new(t0: u64, track: usize) -> Self {
        Reading {
            t0,
            track,
            tracked: false,
            header: Vec::with_capacity(HEADER_LEN),
            flow: None,
            bytes: 0,
            bins: Vec::new(),
            ended: false,
        }
    }

    /// Accounts the bytes just read; emits `End` when the flow is
    /// complete. Errors on a bad header or bytes beyond the size.
    fn read(&mut self, data: &[u8]) -> Result<(), String> {
        let now = now_ns();
        if self.flow.is_none() {
            let want = HEADER_LEN - self.header.len();
            self.header
                .extend_from_slice(data.get(..want.min(data.len())).unwrap_or(&[]));
            if self.header.len() == HEADER_LEN {
                let h = Header::decode(&self.header)?;
                self.tracked = (h.sender as usize) < self.track;
                self.flow = Some(h);
            }
        }
        let n = data.len() as u64;
        self.bytes += n;
        if self.tracked {
            let bin = now.saturating_sub(self.t0) / BIN_NS;
            match self.bins.last_mut() {
                Some((b, v)) if *b == bin => *v += n,
                _ => self.bins.push((bin, n)),
            }
        }
        let Some(h) = self.flow else {
            return Ok(());
        };
        if self.bytes > h.size {
            return Err(format!(
                "{} bytes beyond the flow's size {}",
                self.bytes - h.size,
                h.size
            ));
        }
        if self.bytes == h.size && !self.ended {
            self.ended = true;
            Record::End {
                sender: h.sender,
                seq: h.seq,
                size_bytes: h.size,
                start_ns: h.start_ns,
                end_ns: now,
                bins: std::mem::take(&mut self.bins),
            }
            .emit();
        }
        Ok(())
    }

    /// Takes the outcome of one read into `buf`: `Break(None)` at EOF,
    /// `Break(Some(error))` on a read error or bad bytes, else `Continue`.
    fn take(&mut self, read: std::io::Result<usize>, buf: &[u8]) -> ControlFlow<Option<String>> {
        match read {
            Ok(0) => ControlFlow::Break(None),
            Ok(n) => match self.read(buf.get(..n).unwrap_or(&[])) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(Some(e)),
            },
            Err(e) => ControlFlow::Break(Some(e.to_string())),
        }
    }

    /// The connection ended (EOF or error): reports it if the flow was not
    /// complete.
    fn finish(&self, error: Option<String>) {
        if self.ended && error.is_none() {
            return;
        }
        Record::Broken {
            flow: self.flow.map(|h| (h.sender, h.seq)),
            bytes: self.bytes,
            error: error.unwrap_or_else(|| "closed before the flow was complete".into()),
        }
        .emit();
    }
}

fn kernel_receiver(p: &Plan, t0: u64) -> anyhow::Result<()> {
    let at = receiver_addr(p.kind);
    let l = TcpListener::bind(at).with_context(|| format!("listening on {at}"))?;
    Record::Listening.emit();
    for c in l.incoming() {
        let Ok(mut c) = c else { continue };
        let track = p.track;
        std::thread::spawn(move || {
            let mut st = Reading::new(t0, track);
            let mut buf = vec![0u8; 256 * 1024];
            let err = loop {
                if let ControlFlow::Break(end) = st.take(c.read(&mut buf), &buf) {
                    break end;
                }
            };
            st.finish(err);
            // Our close tells the sender everything arrived.
        });
    }
    Ok(())
}

fn driver_config(p: &Plan) -> DriverConfig {
    let mut cfg = DriverConfig::default();
    cfg.stack.tcp = p.tcp;
    cfg
}

async fn endpoint_senders(p: &Plan, t0: u64) -> anyhow::Result<()> {
    let deadline = t0 + p.duration_ns;
    let to = receiver_addr(p.kind);
    let mut stacks = Vec::new();
    for i in 0..p.senders {
        let cidr: Cidr = sender_cidr(i).parse()?;
        let dev = format!("kats{i}");
        let stack = KaStack::open(&dev, cidr, driver_config(p))
            .with_context(|| format!("opening TUN device {dev} for sender {i}"))?;
        stacks.push(stack);
    }
    for (i, stack) in stacks.iter().enumerate() {
        let (stack, p) = (stack.clone(), p.clone());
        tokio::spawn(async move {
            let (mut o, first) = OnOff::new(&p, i);
            let mut next = t0 + (first * 1e9) as u64;
            for seq in 0u32.. {
                let now = now_ns();
                if next >= deadline {
                    return;
                }
                tokio::time::sleep(Duration::from_nanos(next.saturating_sub(now))).await;
                let (pkts, bytes) = o.size();
                let h = start(i, seq, pkts, bytes);
                let (ka, r) = match endpoint_flow(&stack, &h, to, p.tcp).await {
                    Ok(ka) => (ka, Ok(())),
                    Err(e) => (None, Err(e)),
                };
                done(&h, ka, r);
                next = now_ns() + (o.off() * 1e9) as u64;
            }
        });
    }
    tokio::time::sleep(Duration::from_nanos(deadline.saturating_sub(now_ns()))).await;
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

/// One flow on a userspace host; its time in KA mode.
async fn endpoint_flow(
    stack: &KaStack,
    h: &Header,
    to: SocketAddr,
    tcp: TcpConfig,
) -> anyhow::Result<Option<f64>> {
    let mut s: KaStream = stack
        .connect_with(to, tcp)
        .await
        .with_context(|| format!("connecting to {to}"))?;
    s.write_all(&h.encode()).await.context("sending")?;
    let mut left = h.size - HEADER_LEN as u64;
    while left > 0 {
        let n = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(FILLER.len());
        s.write_all(&FILLER[..n]).await.context("sending")?;
        left -= n as u64;
    }
    // Sends FIN; completes once everything is acknowledged.
    s.shutdown().await.context("closing")?;
    Ok(s.stats()
        .send_summary()
        .filter(|f| f.ka_enabled)
        .map(|f| f.time_ka.as_secs_f64()))
}

async fn endpoint_receiver(p: &Plan, t0: u64) -> anyhow::Result<()> {
    let cidr: Cidr = RECEIVER_CIDR.parse()?;
    let stack = KaStack::open("katr0", cidr, driver_config(p))
        .context("opening TUN device katr0 for the receiver")?;
    let l = stack.listen(PORT)?;
    Record::Listening.emit();
    let track = p.track;
    loop {
        let (mut s, _) = l.accept().await.context("accepting")?;
        tokio::spawn(async move {
            let mut st = Reading::new(t0, track);
            let mut buf = vec![0u8; 256 * 1024];
            let err = loop {
                if let ControlFlow::Break(end) = st.take(s.read(&mut buf).await, &buf) {
                    break end;
                }
            };
            st.finish(err);
            // Dropping the stream closes our side (FIN).
        });
    }
}

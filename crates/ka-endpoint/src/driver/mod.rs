//! The tokio/TUN driver (feature `cli`, Linux): the sans-IO [`Stack`] on a
//! real network, as [`KaStack`] → [`KaStream`] / [`KaListener`].
//!
//! ```no_run
//! use ka_endpoint::driver::{DriverConfig, KaStack};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // As root: create (or attach to) TUN device `ka0`. The kernel side gets
//!     // 10.0.0.254/24 and routes 10.0.0.0/24 into the device; the userspace
//!     // stack is 10.0.0.1.
//!     let stack = KaStack::open("ka0", "10.0.0.1/24".parse()?, DriverConfig::default())?;
//!     let mut stream = stack.connect("10.0.0.2:5001".parse()?).await?;
//!     stream.write_all(b"hello over Kick-Ass").await?;
//!     // Sends FIN; completes once the peer has acknowledged everything.
//!     stream.shutdown().await?;
//!     // Half-close: the other direction is still open.
//!     let mut reply = Vec::new();
//!     stream.read_to_end(&mut reply).await?;
//!     if let Some(flow) = stream.stats().send_summary() {
//!         println!(
//!             "{} bytes in {:?}, {:.1} % of it in KA mode",
//!             flow.bytes,
//!             flow.fct,
//!             100.0 * flow.ka_time_frac()
//!         );
//!     }
//!     // Let the final ACKs and FINs go out before the process exits.
//!     stack.close(std::time::Duration::from_secs(2)).await;
//!     Ok(())
//! }
//! ```
//!
//! # Structure (quinn's `ConnectionDriver` pattern)
//!
//! * The [`Stack`] lives behind one `Mutex`, shared by the driver and the
//!   handles. A stream's `poll_read`/`poll_write` lock it and call the
//!   connection's `read`/`write` directly — no copy through a channel, and
//!   backpressure is simply "the connection's send buffer is full": the task
//!   parks its waker in the connection's slot and the driver wakes it when
//!   space frees up (level-checked after every iteration, so no wake-up is
//!   lost between the two sides).
//! * A dedicated thread runs the stack's clock: it waits in `ppoll(2)` for
//!   the TUN device to become readable or the stack's `poll_timeout`,
//!   sleeping and then spinning for the last `DriverConfig::spin` (see
//!   `engine.rs` for why not a tokio timer and why not a reader task),
//!   reads every packet that is ready into `handle_packet`, runs
//!   `handle_timeout`, writes everything `poll_transmit` yields to the
//!   device, then handles events and wakes tasks. Handles ring its doorbell
//!   (an `eventfd`) after a `write`, `read` or `close` so new output goes
//!   out at once. Packets it has not read yet wait in the device's transmit
//!   queue (`DriverConfig::tun_queue_len`).
//!
//! The thread stops when the last [`KaStack`], [`KaStream`] and
//! [`KaListener`] are dropped; connections still open then are reset. Call
//! [`KaStack::close`] first to let them finish gracefully.
//!
//! # Addresses
//!
//! The stack owns one address (IPv4 or IPv6). It must not also be configured
//! on the kernel side of the TUN device, or the kernel answers for it (RST).
//! [`KaStack::open`] therefore gives the kernel side another address of the
//! same prefix ([`Cidr::kernel_side`]: `.254` in a /24), so the kernel routes
//! the prefix into the device and forwards to and from it.

mod addr;
mod engine;
mod listener;
mod shared;
mod stats;
mod stream;

pub use addr::{Cidr, CidrError, configure_kernel_side};
pub use listener::KaListener;
pub use stats::{DriverStats, FlowSummary, LATENESS_BUCKETS_US, StreamStats};
pub use stream::KaStream;

use crate::config::{StackConfig, TcpConfig};
use crate::stack::{ConnectError, Stack};
use ka_io::pacing::{DEFAULT_SPIN, Pacer};
use ka_io::tun::{KernelDrops, TunOptions, open_tun};
use shared::{Inner, ListenSlot, Owner, Shared, Slot};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};
use stream::fatal_error;
use tun_rs::SyncDevice;

/// Driver parameters.
#[derive(Debug, Clone, Copy)]
pub struct DriverConfig {
    /// The stack (TCP parameters of every connection, KA on/off, limits).
    /// Its `tcp.mtu` is also the device MTU set by [`KaStack::open`].
    pub stack: StackConfig,
    /// How long before a deadline the driver thread stops sleeping and
    /// spins. Default 0, the router's default: the driver thread sleeps
    /// with 1 ns timer slack, which is punctual enough for pacing and
    /// leaves the CPU to the application and the peers on a shared host
    /// ([`DEFAULT_SPIN`]).
    pub spin: Duration,
    /// Established connections waiting for `accept`, per listener; beyond
    /// it new connections are reset. Default 128.
    pub accept_backlog: usize,
    /// Mode changes remembered per stream for [`StreamStats`]. Default 1024.
    pub mode_log_cap: usize,
    /// Transmit-queue length [`KaStack::open`] gives the device: packets the
    /// kernel has routed to the stack and the driver has not read yet
    /// (beyond it the kernel drops). Default 4096 — Linux's default of 500
    /// overflows at a few hundred Mbit/s once a KA router has split every
    /// packet in two. `0` leaves the device's setting alone.
    pub tun_queue_len: u32,
    /// Open the device with the kernel's segmentation offloads
    /// ([`TunOptions::offload`]; used by [`KaStack::open`]; a device given
    /// to [`KaStack::new`] must have been opened the same way): the kernel
    /// hands the driver TCP super-packets (each given to the stack whole,
    /// [`Stack::handle_coalesced`], DESIGN §6.10), and what the driver
    /// writes in one round goes out as super-packets, consecutive segments
    /// of a connection in one write with their checksums left to the
    /// kernel (see [`ka_io::runs`] and [`StackConfig::checksum_offload`],
    /// which this turns on; both counted in [`DriverStats`]). For
    /// multi-Gbit/s paths. Default false.
    pub offload: bool,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            stack: StackConfig::default(),
            spin: DEFAULT_SPIN,
            accept_backlog: 128,
            mode_log_cap: 1024,
            tun_queue_len: ka_io::tun::DEFAULT_TX_QUEUE_LEN,
            offload: false,
        }
    }
}

/// A userspace TCP/IP host with Kick-Ass on a TUN device; see the
/// [module docs](self). Cheap to clone (all clones drive the same stack).
#[derive(Debug, Clone)]
pub struct KaStack {
    owner: Arc<Owner>,
    local: IpAddr,
    /// What the kernel dropped in front of the driver.
    kernel_drops: Option<KernelDrops>,
}

fn connect_error(e: ConnectError) -> io::Error {
    let kind = match e {
        ConnectError::AddressFamily | ConnectError::InvalidRemote | ConnectError::InvalidLocal => {
            io::ErrorKind::InvalidInput
        }
        ConnectError::InUse => io::ErrorKind::AddrInUse,
        ConnectError::TooManyConnections => io::ErrorKind::OutOfMemory,
    };
    io::Error::new(kind, e)
}

impl KaStack {
    /// Runs a stack with address `local` on an open TUN device (e.g. from
    /// [`ka_io::tun::open_tun`]: layer 3, no packet-information
    /// header, offloads off); starts the driver thread. The streams it
    /// makes are tokio-friendly (`AsyncRead`/`AsyncWrite`) but need no
    /// particular runtime.
    pub fn new(tun: SyncDevice, local: IpAddr, config: DriverConfig) -> io::Result<Self> {
        let device = File::from(tun.as_fd().try_clone_to_owned()?);
        let writer = File::from(tun.as_fd().try_clone_to_owned()?);
        let kernel_drops = KernelDrops::watch(&tun);
        let send_buffer = config.stack.tcp.send_buffer;
        let mut stack_config = config.stack;
        // With offloads every TCP packet is written with NEEDS_CSUM
        // (`ka_io::runs`): the kernel completes the checksums.
        stack_config.checksum_offload |= config.offload;
        let inner = Inner {
            stack: Stack::new(stack_config, Instant::now()),
            slots: HashMap::new(),
            listeners: HashMap::new(),
            idle_wakers: Vec::new(),
            fatal: None,
            stats: DriverStats::default(),
            backlog: config.accept_backlog.max(1),
            mode_log_cap: config.mode_log_cap,
            write_low_water: (send_buffer / 4).clamp(1, 64 * 1024),
        };
        let shared = Arc::new(Shared {
            inner: Mutex::new(inner),
            bell: engine::Doorbell::new()?,
            kick_pending: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
        });
        let thread_shared = shared.clone();
        let pacer = Pacer::new(config.spin);
        let offload = config.offload;
        std::thread::Builder::new()
            .name("ka-endpoint-driver".into())
            .spawn(move || {
                // The device stays attached for as long as the thread runs.
                let io = engine::DeviceIo {
                    tun,
                    device,
                    writer,
                    offload,
                };
                engine::run(thread_shared, io, pacer)
            })?;
        Ok(KaStack {
            owner: Arc::new(Owner { shared }),
            local,
            kernel_drops,
        })
    }

    /// Creates (or attaches to) TUN device `name`, sets its queue length
    /// (`DriverConfig::tun_queue_len`), gives its kernel side the address
    /// [`Cidr::kernel_side`] of `addr`'s prefix, and runs a
    /// stack with address `addr.addr` on it. Needs root (or
    /// `CAP_NET_ADMIN`) and iproute2; see [`KaStack::open_with`].
    pub fn open(name: &str, addr: Cidr, config: DriverConfig) -> io::Result<Self> {
        let kernel = addr.kernel_side().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{addr}: the prefix has no room for a kernel-side address (use at most /30 or /126)"),
            )
        })?;
        Self::open_with(name, addr, Some(kernel), config)
    }

    /// [`KaStack::open`] with an explicit kernel-side address (`None`: leave
    /// the device's addresses and routes alone — the caller has set them up
    /// so that `addr.addr` is routed into the device and not local).
    pub fn open_with(
        name: &str,
        addr: Cidr,
        kernel_addr: Option<IpAddr>,
        config: DriverConfig,
    ) -> io::Result<Self> {
        if kernel_addr == Some(addr.addr) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the kernel side must not have the stack's own address (the kernel would answer for it)",
            ));
        }
        let mtu = u16::try_from(config.stack.tcp.mtu).unwrap_or(u16::MAX);
        let dev = open_tun(
            name,
            &TunOptions {
                mtu,
                up: true,
                tx_queue_len: config.tun_queue_len,
                offload: config.offload,
            },
        )?;
        if let Some(k) = kernel_addr {
            configure_kernel_side(name, addr, k)?;
        }
        Self::new(dev, addr.addr, config)
    }

    fn shared(&self) -> &Shared {
        &self.owner.shared
    }

    /// The stack's own address.
    pub fn local_addr(&self) -> IpAddr {
        self.local
    }

    /// Opens a connection to `remote` with the stack's TCP defaults and
    /// waits for the handshake.
    pub async fn connect(&self, remote: SocketAddr) -> io::Result<KaStream> {
        let tcp = self.shared().lock().stack.config().tcp;
        self.connect_with(remote, tcp).await
    }

    /// [`KaStack::connect`] with per-connection TCP parameters (e.g. KA
    /// off, CUBIC). Fails with `ConnectionRefused` on RST and `TimedOut`
    /// once the SYN retries (`TcpConfig::syn_retries`) run out; dropping
    /// the future abandons the attempt.
    pub async fn connect_with(&self, remote: SocketAddr, tcp: TcpConfig) -> io::Result<KaStream> {
        let (h, local) = {
            let mut inner = self.shared().lock();
            if let Some(why) = &inner.fatal {
                return Err(fatal_error(why));
            }
            let now = Instant::now();
            let local = SocketAddr::new(self.local, 0);
            let h = inner
                .stack
                .connect_with(now, local, remote, tcp)
                .map_err(connect_error)?;
            inner.slots.insert(h, Slot::new(now));
            let local = inner.stack.conn(h).map_or(local, |c| c.local_addr());
            (h, local)
        };
        self.shared().kick();
        let stream = KaStream::new(self.owner.clone(), h, local, remote);
        stream.established().await?;
        Ok(stream)
    }

    /// Accepts connections to `port` (on the stack's address).
    pub fn listen(&self, port: u16) -> io::Result<KaListener> {
        let mut inner = self.shared().lock();
        if inner.listeners.contains_key(&port) {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("port {port} is already listened on"),
            ));
        }
        inner.listeners.insert(port, ListenSlot::default());
        inner.stack.listen(port);
        Ok(KaListener::new(self.owner.clone(), port))
    }

    /// Driver and stack counters.
    pub fn stats(&self) -> DriverStats {
        let input_dropped = self
            .kernel_drops
            .as_ref()
            .and_then(KernelDrops::since_start)
            .unwrap_or(0);
        let inner = self.shared().lock();
        DriverStats {
            stack: inner.stack.stats(),
            input_dropped,
            ..inner.stats
        }
    }

    /// Waits (at most `timeout`) until every connection has finished —
    /// closed, or in TIME-WAIT — so final FINs and ACKs are out before the
    /// process exits. Returns whether they all did. Does not close
    /// anything itself: drop or shut down the streams first.
    pub async fn close(&self, timeout: Duration) -> bool {
        let wait = std::future::poll_fn(|cx| {
            let mut inner = self.shared().lock();
            if inner.all_finished() || inner.fatal.is_some() {
                return Poll::Ready(());
            }
            inner.idle_wakers.push(cx.waker().clone());
            Poll::Pending
        });
        tokio::time::timeout(timeout, wait).await.is_ok() && self.shared().lock().all_finished()
    }
}

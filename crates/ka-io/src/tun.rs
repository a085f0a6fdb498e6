//! Opening TUN devices (Linux, via `tun-rs`).
//!
//! [`open_tun`] attaches to the named layer-3 TUN device, creating it if it
//! does not exist, with no packet-information header (`IFF_NO_PI`), the
//! requested MTU, and the interface brought up. By default without offloads
//! (every read is exactly one IP packet, every write must be one); with
//! [`TunOptions::offload`], see the [`offload`](crate::offload) module. It is shared by the router and
//! the endpoint drivers.
//!
//! A device created here is not persistent: it disappears when the last file
//! descriptor closes. A device made beforehand with `ip tuntap add NAME mode
//! tun` is persistent and is merely attached to (its flags must match: no
//! `pi`, no `multi_queue`).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use tun_rs::{AsyncDevice, DeviceBuilder, SyncDevice};

/// Largest packet a TUN read can return with offloads off: the IPv4/IPv6
/// length fields cap a packet at 65 535 bytes (jumbograms are not supported).
pub const MAX_PACKET: usize = 65_535;

/// Default transmit-queue length [`open_tun`] gives a device, in packets.
///
/// For a TUN device the transmit queue holds what the kernel has routed
/// into the device and its reader has not read yet; beyond it the kernel
/// drops (the device's `TX dropped` in `ip -s link`). Linux's default of
/// 500 is 6 ms at 1 Gbit/s of 1500-byte packets: a router or endpoint
/// thread that is descheduled for longer than that loses packets (measured:
/// 65 drops on the router's input in two 100 MB KA flows at ~780 Mbit/s,
/// enough to keep the flows in TCP mode 91–97 % of the time). 4096 is
/// 49 ms there; it costs at most 4096 socket buffers of kernel memory
/// (~10 MB at MTU 1500), and only while the reader is behind.
pub const DEFAULT_TX_QUEUE_LEN: u32 = 4096;

/// How [`open_tun`] configures the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunOptions {
    /// Interface MTU in bytes (default 1500).
    pub mtu: u16,
    /// Bring the interface up after opening it (default true).
    pub up: bool,
    /// Transmit-queue length in packets ([`DEFAULT_TX_QUEUE_LEN`]); 0 leaves
    /// the device's setting alone.
    pub tx_queue_len: u32,
    /// Open with the kernel's segmentation offloads (`IFF_VNET_HDR`, TSO/USO
    /// in, GSO out; default false). Every read and write then carries a
    /// `virtio_net_hdr`: such a device must be read with
    /// [`SegmentReader`](crate::offload::SegmentReader) and written with
    /// [`CoalescingWriter`](crate::offload::CoalescingWriter), never with
    /// plain `read`/`write`.
    pub offload: bool,
}

impl Default for TunOptions {
    fn default() -> Self {
        Self {
            mtu: 1500,
            up: true,
            tx_queue_len: DEFAULT_TX_QUEUE_LEN,
            offload: false,
        }
    }
}

/// The smallest MTU [`open_tun`] accepts: 576 bytes, the datagram size
/// every IPv4 host must be able to receive (RFC 791). IPv6 needs 1280
/// (RFC 8200 §5); callers that know the family check that.
pub const MIN_MTU: u16 = 576;

/// Longest interface name Linux accepts (`IFNAMSIZ` − 1).
pub const MAX_NAME_LEN: usize = 15;

/// Checks a device name as the kernel would (`dev_valid_name`): 1 to
/// [`MAX_NAME_LEN`] bytes, not `.` or `..`, no `/`, `:` or whitespace.
pub fn check_name(name: &str) -> io::Result<()> {
    let why = if name.is_empty() {
        Some("is empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("is longer than 15 bytes")
    } else if name == "." || name == ".." {
        Some("is not a name")
    } else if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace())
    {
        Some("contains '/', ':' or whitespace")
    } else {
        None
    };
    match why {
        Some(why) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "device name {name:?} {why} (Linux interface names: 1-15 bytes, no '/', ':' or spaces)"
            ),
        )),
        None => Ok(()),
    }
}

/// Attach to (or create) the layer-3 TUN device `name` with `IFF_NO_PI`, set
/// its MTU and bring it up (see [`TunOptions`]).
///
/// Must run in the network namespace where the device lives, as root or with
/// `CAP_NET_ADMIN`. Fails if the name is longer than 15 bytes, if the device
/// exists with other flags (e.g. created with `pi` or `multi_queue`) or if
/// another process already holds it.
///
/// The transmit-queue length ([`TunOptions::tx_queue_len`]) is set through
/// the device (`SIOCSIFTXQLEN`); if that is refused — e.g. a persistent
/// device owned by an unprivileged user — a warning says so and the device
/// keeps its queue.
pub fn open_tun(name: &str, options: &TunOptions) -> io::Result<SyncDevice> {
    check_name(name)?;
    if options.mtu < MIN_MTU {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "TUN device {name}: MTU {} is below {MIN_MTU}, the smallest datagram every IPv4 host must accept (RFC 791)",
                options.mtu
            ),
        ));
    }
    let sys = Path::new("/sys/class/net").join(name);
    if sys.exists() && !sys.join("tun_flags").exists() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name} exists in this network namespace and is not a TUN device"),
        ));
    }
    build(name, options)
}

/// [`open_tun`] inside the network namespace `netns` (a name under
/// `/run/netns`, as `ip netns add` makes, or a path such as
/// `/proc/PID/ns/net`): a device that was moved into another namespace
/// after it was made — the testbed's wiring — can be attached to again,
/// e.g. by a restarted router. The device is opened on a short-lived
/// thread that enters the namespace (`setns(2)`); the descriptor it
/// returns keeps working from any namespace. Needs `CAP_SYS_ADMIN`.
pub fn open_tun_in(name: &str, netns: &str, options: &TunOptions) -> io::Result<SyncDevice> {
    check_name(name)?;
    let path = netns_path(netns);
    let ns = File::open(&path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("network namespace {netns} ({}): {e}", path.display()),
        )
    })?;
    let (name, options) = (name.to_owned(), options.clone());
    std::thread::scope(|s| {
        s.spawn(|| {
            rustix::thread::move_into_link_name_space(
                ns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .map_err(|e| io::Error::other(format!("entering network namespace {netns}: {e}")))?;
            if !present_here(&name) {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no device {name} in network namespace {netns}"),
                ));
            }
            build(&name, &options)
        })
        .join()
        .map_err(|_| io::Error::other("the namespace thread panicked"))?
    })
}

/// `/run/netns/NAME` for a bare name, else the path as given.
fn netns_path(netns: &str) -> std::path::PathBuf {
    if netns.contains('/') {
        Path::new(netns).to_path_buf()
    } else {
        Path::new(NETNS_DIR).join(netns)
    }
}

/// Where `ip netns add` keeps named network namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// Whether a network device `name` exists in the calling thread's network
/// namespace (`SIOCGIFINDEX` on a socket made there; sysfs would show the
/// mount namespace's view instead).
fn present_here(name: &str) -> bool {
    use rustix::net::{AddressFamily, SocketType, socket};
    socket(AddressFamily::INET, SocketType::DGRAM, None)
        .and_then(|s| rustix::net::netdevice::name_to_index(&s, name))
        .is_ok()
}

/// The named network namespaces (under [`NETNS_DIR`]) other than the
/// caller's that have a device called `name`. Empty if there are none or
/// they cannot be entered. Used to explain why a device that was moved away
/// is not here.
pub fn namespaces_with_device(name: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let ns_name = e.file_name().to_string_lossy().into_owned();
        let Ok(ns) = File::open(e.path()) else {
            continue;
        };
        let there = std::thread::scope(|s| {
            s.spawn(|| {
                rustix::thread::move_into_link_name_space(
                    ns.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .is_ok()
                    && present_here(name)
            })
            .join()
            .unwrap_or(false)
        });
        if there {
            found.push(ns_name);
        }
    }
    found.sort();
    found
}

/// The device build shared by [`open_tun`] and [`open_tun_in`].
fn build(name: &str, options: &TunOptions) -> io::Result<SyncDevice> {
    let dev = DeviceBuilder::new()
        .name(name)
        .mtu(options.mtu)
        .packet_information(false)
        .offload(options.offload)
        .multi_queue(false)
        .enable(options.up)
        .build_sync()
        .map_err(|e| io::Error::new(e.kind(), format!("TUN device {name}: {e}")))?;
    if options.tx_queue_len > 0
        && let Err(e) = dev.set_tx_queue_len(options.tx_queue_len)
    {
        tracing::warn!(
            device = name,
            wanted = options.tx_queue_len,
            current = dev.tx_queue_len().ok(),
            "transmit queue length unchanged (packets beyond it are dropped by the kernel when we fall behind): {e}"
        );
    }
    Ok(dev)
}

/// Packets the kernel dropped in front of a TUN device's reader because
/// the device's transmit queue ([`TunOptions::tx_queue_len`]) was full: its
/// `tx_dropped` counter in sysfs, counted from when [`KernelDrops::watch`]
/// was called.
///
/// Readable only while the device is in the caller's network namespace
/// (sysfs shows that namespace's devices); a device moved elsewhere — the
/// testbed moves the router's — or replaced by another of the same name
/// reads as `None`, never as someone else's count.
#[derive(Debug, Clone)]
pub struct KernelDrops {
    name: String,
    ifindex: u32,
    at_start: u64,
}

impl KernelDrops {
    /// Starts counting for `dev`; `None` if its name, index or counter
    /// cannot be read.
    pub fn watch(dev: &SyncDevice) -> Option<Self> {
        let name = dev.name().ok()?;
        let ifindex = dev.if_index().ok()?;
        let at_start = sysfs_u64(&name, "statistics/tx_dropped")?;
        Some(Self {
            name,
            ifindex,
            at_start,
        })
    }

    /// Drops since [`KernelDrops::watch`]; `None` if the device is no
    /// longer visible here.
    pub fn since_start(&self) -> Option<u64> {
        if sysfs_u64(&self.name, "ifindex")? != u64::from(self.ifindex) {
            return None;
        }
        Some(sysfs_u64(&self.name, "statistics/tx_dropped")?.saturating_sub(self.at_start))
    }
}

fn sysfs_u64(dev: &str, file: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/{file}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A TUN device split into an asynchronous reader (registered with the
/// current tokio runtime) and a plain blocking-capable writer.
///
/// Both share one open file description (the writer is a `dup` of the
/// reader's descriptor), so the device stays attached until both are dropped.
/// Writing through the [`File`] is a single `write(2)` per packet, which never
/// blocks on a TUN device; it can be done from any thread, e.g. a pacing thread
/// that must not wait for the tokio reactor.
pub struct TunHandles {
    /// Reads packets (`recv`) on the tokio runtime.
    pub reader: AsyncDevice,
    /// Writes packets (`std::io::Write::write`, one packet per call).
    pub writer: File,
}

impl std::fmt::Debug for TunHandles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::os::fd::AsRawFd;
        f.debug_struct("TunHandles")
            .field("reader_fd", &self.reader.as_raw_fd())
            .field("writer", &self.writer)
            .finish()
    }
}

/// Split an open device into [`TunHandles`]. Must be called inside a tokio
/// runtime (the reader registers with its reactor).
pub fn split_tun(device: SyncDevice) -> io::Result<TunHandles> {
    let writer = File::from(device.as_fd().try_clone_to_owned()?);
    let reader = AsyncDevice::new(device)?;
    Ok(TunHandles { reader, writer })
}

/// Open (see [`open_tun`]) and split (see [`split_tun`]) in one call.
pub fn open_tun_split(name: &str, options: &TunOptions) -> io::Result<TunHandles> {
    split_tun(open_tun(name, options)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_checked_as_the_kernel_does() {
        for ok in ["ka0", "a", "tun-with-15byte"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a:b", "a b", "sixteen-bytes-xx"] {
            let e = check_name(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn refuses_a_device_that_is_not_a_tun_and_a_tiny_mtu() {
        // `lo` exists in every network namespace; the check runs before
        // anything is opened, so no privilege is needed to see it refused.
        let refused = |name: &str, o: &TunOptions| match open_tun(name, o) {
            Ok(_) => panic!("{name:?} opened"),
            Err(e) => e,
        };
        let e = refused("lo", &TunOptions::default());
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("not a TUN device"), "{e}");
        let tiny = TunOptions {
            mtu: 0,
            ..TunOptions::default()
        };
        let e = refused("ka-none0", &tiny);
        assert!(e.to_string().contains("MTU 0 is below 576"), "{e}");
        let e = refused("", &TunOptions::default());
        assert!(e.to_string().contains("is empty"), "{e}");
    }
}

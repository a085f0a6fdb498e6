//! Opening TUN devices (Linux, via `tun-rs`).
//!
//! [`open_tun`] attaches to the named layer-3 TUN device, creating it if it
//! does not exist, with no packet-information header (`IFF_NO_PI`), no
//! offloads (every read is exactly one IP packet, every write must be one), the
//! requested MTU, and the interface brought up. It is shared by the router and
//! the endpoint drivers.
//!
//! A device created here is not persistent: it disappears when the last file
//! descriptor closes. A device made beforehand with `ip tuntap add NAME mode
//! tun` is persistent and is merely attached to (its flags must match: no
//! `pi`, no `multi_queue`).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;

use tun_rs::{AsyncDevice, DeviceBuilder, SyncDevice};

/// Largest packet a TUN read can return with offloads off: the IPv4/IPv6
/// length fields cap a packet at 65 535 bytes (jumbograms are not supported).
pub const MAX_PACKET: usize = 65_535;

/// How [`open_tun`] configures the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunOptions {
    /// Interface MTU in bytes (default 1500).
    pub mtu: u16,
    /// Bring the interface up after opening it (default true).
    pub up: bool,
}

impl Default for TunOptions {
    fn default() -> Self {
        Self {
            mtu: 1500,
            up: true,
        }
    }
}

/// Attach to (or create) the layer-3 TUN device `name` with `IFF_NO_PI`, set
/// its MTU and bring it up (see [`TunOptions`]).
///
/// Must run in the network namespace where the device lives, as root or with
/// `CAP_NET_ADMIN`. Fails if the name is longer than 15 bytes, if the device
/// exists with other flags (e.g. created with `pi` or `multi_queue`) or if
/// another process already holds it.
pub fn open_tun(name: &str, options: &TunOptions) -> io::Result<SyncDevice> {
    DeviceBuilder::new()
        .name(name)
        .mtu(options.mtu)
        .packet_information(false)
        .offload(false)
        .multi_queue(false)
        .enable(options.up)
        .build_sync()
        .map_err(|e| io::Error::new(e.kind(), format!("TUN device {name}: {e}")))
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

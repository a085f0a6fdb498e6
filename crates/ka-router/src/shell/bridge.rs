//! Bridge mode (`ka-router --bridge IF_A IF_B`): the router as a
//! transparent bump in the wire between two existing Ethernet interfaces.
//!
//! ```text
//!  host A ── IF_A ═╗  ka-router --bridge IF_A IF_B   ╔═ IF_B ── host B
//!                  ╚═ AF_PACKET (pnet) ─ ports ─ AF_PACKET ═╝
//! ```
//!
//! Each interface is opened with `pnet_datalink`'s Linux channel (an
//! `AF_PACKET` raw socket, promiscuous). Frames are sorted as they are
//! read:
//!
//! * **IPv4 / IPv6** (EtherType 0x0800 / 0x86DD behind at most
//!   [`MAX_VLAN_TAGS`] 802.1Q/802.1ad tags, with a matching version nibble):
//!   the link-layer header is taken off and the IP packet goes through the
//!   same [`Forwarder`](super::Forwarder) — the same two [`Port`](crate::Port)s,
//!   queue, shaper and KA stamping — as in TUN mode; what a port releases is
//!   written to the other interface behind the link-layer header last seen
//!   for that direction, source and destination address ([`L2Table`]).
//! * **everything else** (ARP, LLDP, STP, …) is written to the other
//!   interface at once, untouched and unshaped, and counted
//!   (`link_passed`).
//!
//! Forward = read on `IF_A` (the `--in` side), shaped at `--rate`, written
//! to `IF_B`; reverse the other way at `--reverse-rate`. Nothing on the box
//! changes: no addresses, no routes, no bridge device, no forwarding sysctl.
//!
//! **Why the link-layer header is learned, not carried.** A port takes and
//! returns bare IP packets and may split one into two, so a frame's header
//! cannot travel with its packet. Between two fixed segments the header of
//! an IP packet is a function of (direction, source, destination) — the
//! sender chose the destination MAC by routing on the destination address —
//! so the shell keeps the latest header per key and puts it on every piece
//! the port releases. The table holds at most [`MAX_L2_ENTRIES`] keys (about
//! 64 bytes each); when a new key would exceed that, it is emptied and
//! relearned from the next packets (a piece whose key was lost is counted as
//! a write error). A host that changes its MAC mid-flow has its queued
//! packets sent with the old header.
//!
//! **What the box must not do** (documented in docs/usage/router.md):
//!
//! * Merge frames: GRO/LRO on the bridge's interfaces hand the socket
//!   frames larger than the MTU, which cannot be written out again
//!   (`EMSGSIZE`, counted as write errors; a warning names the interface
//!   the first time a frame over its MTU arrives). Turn them off
//!   (`ethtool -K IF gro off lro off`). On a veth pair the *peer* must also
//!   compute checksums itself (`ethtool -K PEER tx off`): a veth hands
//!   partially checksummed packets through, and their checksum would never
//!   be completed.
//! * Talk on the interfaces: frames whose source MAC is the interface's own
//!   are the box's own transmissions (an `AF_PACKET` socket also sees those)
//!   and are not bridged. Give the interfaces no addresses (and
//!   `net.ipv6.conf.IF.disable_ipv6=1` for silence).
//!
//! **Cost.** Each read and each write is a `poll(2)` with a zero timeout
//! plus the `recvfrom`/`sendto` (pnet's channel), one more system call per
//! packet than a TUN device; the socket descriptor is also polled by the
//! forwarding thread itself (`ppoll` on both interfaces), exactly like the
//! TUN devices. Measured against TUN mode in `benches/forwarding/bridge.sh`
//! (`docs/PERFORMANCE.md`).

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ka_io::pacing::{PollFd, PollFlags, wait_readable};
use pnet_datalink::{Channel, DataLinkReceiver, DataLinkSender, NetworkInterface};

use super::input::{Input, Output};
use super::stats::{Direction, IoCounters, SharedStats};

/// Most VLAN tags (802.1Q, 802.1ad, 0x9100) looked through to find an IP
/// EtherType; frames with more are bridged untouched.
pub const MAX_VLAN_TAGS: usize = 2;
/// Most (direction, source, destination) keys the link-layer header table
/// holds (≈ 64 B each, so ≤ 4 MiB).
pub const MAX_L2_ENTRIES: usize = 65_536;
/// Longest link-layer header kept: Ethernet plus [`MAX_VLAN_TAGS`] tags.
pub const MAX_L2_HEADER: usize = 14 + 4 * MAX_VLAN_TAGS;
/// Read buffer per interface: the largest IP packet plus a link header.
const READ_BUFFER: usize = 65_535 + MAX_L2_HEADER;
/// Kernel receive buffer asked for each socket (`SO_RCVBUFFORCE` as root,
/// else `SO_RCVBUF`, capped by `net.core.rmem_max`): frames the kernel holds
/// while the forwarding thread is busy or descheduled, beyond which it drops
/// them — the role `--tun-queue` plays for TUN devices. 8 MiB is about 2 700
/// full-size frames (the kernel counts its per-frame overhead too), 30 ms at
/// 1 Gbit/s; kernel memory, used only while the thread is behind.
pub const SOCKET_RECV_BUFFER: usize = 8 << 20;
/// Frames read from one interface before the other gets a turn.
const READ_BURST: usize = 64;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const VLAN_TAGS: [u16; 3] = [0x8100, 0x88A8, 0x9100];

/// How a frame is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// An IP packet starting `header_len` bytes into the frame, between
    /// `src` and `dst`.
    Ip {
        /// Bytes of link-layer header (Ethernet and VLAN tags).
        header_len: usize,
        /// IP source address.
        src: IpAddr,
        /// IP destination address.
        dst: IpAddr,
    },
    /// Anything else: bridged untouched.
    Other,
}

/// Sorts one Ethernet frame (see the module docs). Never panics.
pub fn classify(frame: &[u8]) -> Frame {
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(u16::from_be_bytes)
    };
    let mut at = 12;
    let mut tags = 0;
    let mut ethertype = be16(at);
    while ethertype.is_some_and(|t| VLAN_TAGS.contains(&t)) {
        tags += 1;
        if tags > MAX_VLAN_TAGS {
            return Frame::Other;
        }
        at += 4;
        ethertype = be16(at);
    }
    let header_len = at + 2;
    let Some(ip) = frame.get(header_len..) else {
        return Frame::Other;
    };
    let addrs = match (ethertype, ka_codec::wire::ip_version(ip)) {
        (Some(ETHERTYPE_IPV4), Some(4)) => ip
            .get(12..16)
            .zip(ip.get(16..20))
            .and_then(|(s, d)| Some((<[u8; 4]>::try_from(s).ok()?, <[u8; 4]>::try_from(d).ok()?)))
            .map(|(s, d)| (IpAddr::from(s), IpAddr::from(d))),
        (Some(ETHERTYPE_IPV6), Some(6)) => ip
            .get(8..24)
            .zip(ip.get(24..40))
            .and_then(|(s, d)| Some((<[u8; 16]>::try_from(s).ok()?, <[u8; 16]>::try_from(d).ok()?)))
            .map(|(s, d)| (IpAddr::from(s), IpAddr::from(d))),
        _ => None,
    };
    match addrs {
        Some((src, dst)) => Frame::Ip {
            header_len,
            src,
            dst,
        },
        None => Frame::Other,
    }
}

/// The source and destination address of an IP packet.
fn ip_addrs(p: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match ka_codec::wire::ip_version(p)? {
        4 => Some((
            IpAddr::from(<[u8; 4]>::try_from(p.get(12..16)?).ok()?),
            IpAddr::from(<[u8; 4]>::try_from(p.get(16..20)?).ok()?),
        )),
        6 => Some((
            IpAddr::from(<[u8; 16]>::try_from(p.get(8..24)?).ok()?),
            IpAddr::from(<[u8; 16]>::try_from(p.get(24..40)?).ok()?),
        )),
        _ => None,
    }
}

/// A link-layer header (Ethernet, VLAN tags, EtherType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct L2Header {
    bytes: [u8; MAX_L2_HEADER],
    len: u8,
}

impl L2Header {
    fn new(h: &[u8]) -> Option<Self> {
        let mut bytes = [0u8; MAX_L2_HEADER];
        bytes.get_mut(..h.len())?.copy_from_slice(h);
        Some(Self {
            bytes,
            len: u8::try_from(h.len()).ok()?,
        })
    }

    fn as_slice(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

/// The latest link-layer header per (direction, source, destination); see
/// the module docs.
#[derive(Debug, Default)]
pub struct L2Table {
    map: HashMap<(Direction, IpAddr, IpAddr), L2Header>,
    /// Times the table was emptied because it was full.
    pub resets: u64,
}

impl L2Table {
    /// Remembers `header` for IP packets from `src` to `dst` travelling in
    /// `dir` (ignored if longer than [`MAX_L2_HEADER`]).
    pub fn learn(&mut self, dir: Direction, src: IpAddr, dst: IpAddr, header: &[u8]) {
        let Some(h) = L2Header::new(header) else {
            return;
        };
        let key = (dir, src, dst);
        if let Some(old) = self.map.get_mut(&key) {
            *old = h;
            return;
        }
        if self.map.len() >= MAX_L2_ENTRIES {
            self.map.clear();
            self.resets += 1;
        }
        self.map.insert(key, h);
    }

    /// The header for an IP packet travelling in `dir`.
    pub fn header_for(&self, dir: Direction, packet: &[u8]) -> Option<&[u8]> {
        let (src, dst) = ip_addrs(packet)?;
        self.map.get(&(dir, src, dst)).map(L2Header::as_slice)
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no header is known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// One bridged interface.
struct Interface {
    name: String,
    mac: [u8; 6],
    mtu: usize,
    /// Our handle on the socket, for `ppoll`.
    poll_fd: OwnedFd,
    tx: Box<dyn DataLinkSender>,
    rx: Box<dyn DataLinkReceiver>,
    warned_oversize: bool,
}

impl Interface {
    fn open(name: &str) -> io::Result<Self> {
        let iface: NetworkInterface = pnet_datalink::interfaces()
            .into_iter()
            .find(|i| i.name == name)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no interface {name} in this network namespace (see `ip link`)"),
                )
            })?;
        if iface.is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name} is a loopback interface, not Ethernet"),
            ));
        }
        let mac = iface
            .mac
            .map(|m| m.octets())
            .filter(|m| *m != [0; 6])
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{name} has no Ethernet address (a TUN device? use --in/--out)"),
                )
            })?;
        if !iface.is_up() {
            tracing::warn!(
                interface = name,
                "interface is down: nothing will pass until it is up"
            );
        }
        // Created with protocol 0, the socket receives nothing until pnet
        // binds it to the interface with ETH_P_ALL, so no frame of another
        // interface can be queued in it first.
        let sock = rustix::net::socket(
            rustix::net::AddressFamily::PACKET,
            rustix::net::SocketType::RAW,
            None,
        )
        .map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("AF_PACKET socket for {name}: {e} (needs root or CAP_NET_RAW)"),
            )
        })?;
        if rustix::net::sockopt::set_socket_recv_buffer_size_force(&sock, SOCKET_RECV_BUFFER)
            .or_else(|_| {
                rustix::net::sockopt::set_socket_recv_buffer_size(&sock, SOCKET_RECV_BUFFER)
            })
            .is_err()
        {
            tracing::warn!(interface = name, "socket receive buffer unchanged");
        }
        let for_pnet = sock.try_clone()?;
        let config = pnet_datalink::Config {
            read_buffer_size: READ_BUFFER,
            write_buffer_size: 4096,
            // Both zero: pnet polls without waiting, so a read with nothing
            // ready and a write to a full socket return at once.
            read_timeout: Some(Duration::ZERO),
            write_timeout: Some(Duration::ZERO),
            promiscuous: true,
            socket_fd: Some(for_pnet.into_raw_fd()),
            ..pnet_datalink::Config::default()
        };
        let (tx, rx) = match pnet_datalink::channel(&iface, config) {
            Ok(Channel::Ethernet(tx, rx)) => (tx, rx),
            Ok(_) => {
                return Err(io::Error::other(format!("{name}: not an Ethernet channel")));
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("attaching to {name}: {e}"),
                ));
            }
        };
        let mtu = std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1500);
        Ok(Self {
            name: name.to_owned(),
            mac,
            mtu,
            poll_fd: sock,
            tx,
            rx,
            warned_oversize: false,
        })
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.tx
            .send_to(frame, None)
            .unwrap_or_else(|| Err(io::Error::other("frame does not fit pnet's buffer")))
    }
}

/// Both interfaces of a bridge: the forwarding thread's input and
/// output.
pub struct Bridge {
    /// `[0]` = `IF_A` (`--in` side), `[1]` = `IF_B`.
    sides: [Interface; 2],
    l2: L2Table,
    turn: usize,
    /// A frame being assembled for writing.
    frame: Vec<u8>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("a", &self.sides.first().map(|s| &s.name))
            .field("b", &self.sides.get(1).map(|s| &s.name))
            .field("l2_entries", &self.l2.len())
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// Attaches to `a` (forward packets are read here) and `b`. Needs root
    /// or `CAP_NET_RAW`; fails if either is missing, loopback or has no
    /// Ethernet address, or if they are the same interface.
    pub fn open(a: &str, b: &str) -> io::Result<Self> {
        if a == b {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--bridge needs two different interfaces (got {a} twice)"),
            ));
        }
        Ok(Self {
            sides: [Interface::open(a)?, Interface::open(b)?],
            l2: L2Table::default(),
            turn: 0,
            frame: Vec::with_capacity(READ_BUFFER),
        })
    }
}

fn direction_read_on(i: usize) -> Direction {
    if i == 0 {
        Direction::Forward
    } else {
        Direction::Reverse
    }
}

impl Input for Bridge {
    fn wait(&mut self, deadline: Instant, spin: Duration) {
        let [a, b] = &self.sides;
        let mut fds = [
            PollFd::new(&a.poll_fd, PollFlags::IN),
            PollFd::new(&b.poll_fd, PollFlags::IN),
        ];
        wait_readable(&mut fds, Some(deadline), spin);
    }

    fn next(&mut self, stats: &SharedStats) -> Option<(Direction, Vec<u8>)> {
        for k in 0..2 {
            let i = (self.turn + k) % 2;
            let dir = direction_read_on(i);
            let (this, other) = match &mut self.sides {
                [a, b] if i == 0 => (a, b),
                [a, b] => (b, a),
            };
            for _ in 0..READ_BURST {
                let frame = match this.rx.next() {
                    Ok(f) => f,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::TimedOut
                                | io::ErrorKind::WouldBlock
                                | io::ErrorKind::Interrupted
                        ) =>
                    {
                        break;
                    }
                    Err(e) => {
                        let n = stats.io(dir).read_errors.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_power_of_two() {
                            tracing::warn!(interface = %this.name, errors = n, "read failed: {e}");
                        }
                        break;
                    }
                };
                IoCounters::add(&stats.io(dir).reads, 1);
                // The box's own transmissions on this interface.
                if frame.get(6..12) == Some(&this.mac[..]) {
                    continue;
                }
                match classify(frame) {
                    Frame::Ip {
                        header_len,
                        src,
                        dst,
                    } => {
                        let Some((header, ip)) = frame.split_at_checked(header_len) else {
                            continue;
                        };
                        if ip.len() > this.mtu && !this.warned_oversize {
                            this.warned_oversize = true;
                            tracing::warn!(
                                interface = %this.name,
                                len = ip.len(),
                                mtu = this.mtu,
                                "frame longer than the MTU: the interface merges frames (GRO/LRO, or a veth peer's TSO); \
                                 such packets cannot be sent on. Turn it off: ethtool -K {} gro off lro off (veth peer: tx off)",
                                this.name
                            );
                        }
                        self.l2.learn(dir, src, dst, header);
                        self.turn = (i + 1) % 2;
                        return Some((dir, ip.to_vec()));
                    }
                    Frame::Other => {
                        let io = stats.io(dir);
                        match other.send(frame) {
                            Ok(()) => IoCounters::add(&io.link_passed, 1),
                            Err(e) => {
                                let n = io.write_errors.fetch_add(1, Ordering::Relaxed) + 1;
                                if n.is_power_of_two() {
                                    tracing::warn!(interface = %other.name, errors = n, "write failed: {e}");
                                }
                            }
                        }
                    }
                }
            }
        }
        None
    }

    fn closed(&self) -> bool {
        false
    }
}

impl Output for Bridge {
    fn write(&mut self, dir: Direction, packet: &[u8]) -> io::Result<usize> {
        let header = self.l2.header_for(dir, packet).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no Ethernet header learned for this packet's addresses (table reset?)",
            )
        })?;
        self.frame.clear();
        self.frame.extend_from_slice(header);
        self.frame.extend_from_slice(packet);
        // Forward packets leave through IF_B, reverse ones through IF_A.
        let out = match (dir, &mut self.sides) {
            (Direction::Forward, [_, b]) => b,
            (Direction::Reverse, [a, _]) => a,
        };
        out.send(&self.frame)?;
        Ok(packet.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(tags: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0xaa; 6];
        f.extend([0x02, 0, 0, 0, 0, 1]);
        for t in tags {
            f.extend(t.to_be_bytes());
            f.extend([0x00, 0x07]);
        }
        f.extend(ethertype.to_be_bytes());
        f.extend(payload);
        f
    }

    fn v4() -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p
    }

    #[test]
    fn classifies_ip_behind_vlan_tags() {
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        for tags in [&[][..], &[0x8100], &[0x88a8, 0x8100]] {
            let f = eth(tags, 0x0800, &v4());
            match classify(&f) {
                Frame::Ip {
                    header_len, src, ..
                } => {
                    assert_eq!(header_len, 14 + 4 * tags.len());
                    assert_eq!(src, ip);
                }
                Frame::Other => panic!("{tags:?}"),
            }
        }
        // Three tags, ARP, a wrong version nibble, truncation: bridged as-is.
        assert_eq!(classify(&eth(&[0x8100; 3], 0x0800, &v4())), Frame::Other);
        assert_eq!(classify(&eth(&[], 0x0806, &[0; 28])), Frame::Other);
        assert_eq!(classify(&eth(&[], 0x86dd, &v4())), Frame::Other);
        assert_eq!(classify(&eth(&[], 0x0800, &v4()[..15])), Frame::Other);
        for n in 0..20 {
            assert_eq!(classify(&eth(&[], 0x0800, &v4())[..n]), Frame::Other);
        }
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        v6[23] = 1;
        assert!(matches!(
            classify(&eth(&[], 0x86dd, &v6)),
            Frame::Ip { header_len: 14, .. }
        ));
    }

    #[test]
    fn table_returns_the_latest_header_per_key_and_stays_bounded() {
        let mut t = L2Table::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let h1 = eth(&[], 0x0800, &[]);
        let mut h2 = h1.clone();
        h2[0] = 0xbb;
        t.learn(Direction::Forward, a, b, &h1);
        assert_eq!(t.header_for(Direction::Forward, &v4()), Some(&h1[..]));
        t.learn(Direction::Forward, a, b, &h2);
        assert_eq!(t.header_for(Direction::Forward, &v4()), Some(&h2[..]));
        assert_eq!(
            t.header_for(Direction::Reverse, &v4()),
            None,
            "per direction"
        );
        assert_eq!(t.header_for(Direction::Forward, &[0x45; 10]), None);
        // Too long a header is not learned.
        t.learn(Direction::Reverse, a, b, &[0; MAX_L2_HEADER + 1]);
        assert_eq!(t.header_for(Direction::Reverse, &v4()), None);
        for i in 0..MAX_L2_ENTRIES as u32 + 10 {
            t.learn(Direction::Reverse, IpAddr::from(i.to_be_bytes()), b, &h1);
        }
        assert!(t.len() <= MAX_L2_ENTRIES);
        assert_eq!(t.resets, 1);
    }
}

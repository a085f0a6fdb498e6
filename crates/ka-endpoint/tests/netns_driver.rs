//! The driver's library API (`KaStack`, `KaStream`, `KaListener`) on a real
//! TUN device against the Linux kernel's TCP, inside a private network
//! namespace: the test re-executes itself there (`ip netns exec`). Needs
//! root, `/dev/net/tun` and iproute2; skipped loudly otherwise.

#![cfg(all(feature = "cli", target_os = "linux"))]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ka_endpoint::driver::{DriverConfig, KaStack};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CHILD_ENV: &str = "KA_EP_DRIVER_CHILD";
const DEV: &str = "kaep0";
/// Userspace stack; the kernel side of the device is 10.88.0.254.
const CIDR: &str = "10.88.0.1/24";
const KERNEL: &str = "10.88.0.254";

/// Deletes the namespace on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs `test` (this file's test of that name) inside a fresh namespace,
/// where — in the child — `body` runs on a current-thread runtime with the
/// stack open.
fn in_netns(test: &str, body: impl AsyncFnOnce(KaStack)) {
    if std::env::var_os(CHILD_ENV).is_some() {
        runtime().block_on(async { body(stack()).await });
        return;
    }
    if let Some(why) = ka_router::shell::testbed::unavailable() {
        eprintln!("!! SKIPPING real-network test {test}: {why} (CI runs it as root)");
        return;
    }
    let ns = Netns(format!("kaepd{}{}", std::process::id(), test.len()));
    let ok = Command::new("ip")
        .args(["netns", "add", &ns.0])
        .status()
        .expect("ip");
    assert!(ok.success(), "ip netns add");
    let ok = Command::new("ip")
        .args(["-n", &ns.0, "link", "set", "lo", "up"])
        .status()
        .expect("ip");
    assert!(ok.success());
    let out = Command::new("timeout")
        .arg("60")
        .args(["ip", "netns", "exec", &ns.0])
        .arg(std::env::current_exe().expect("test exe"))
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::null())
        .output()
        .expect("running the test in the namespace");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "{test} failed inside the namespace");
    assert!(text.contains("1 passed"), "the child did not run {test}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn stack() -> KaStack {
    KaStack::open(DEV, CIDR.parse().expect("cidr"), DriverConfig::default())
        .expect("opening the TUN device")
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// connect → write 5 MB (5× the send buffer, so `poll_write` must block
/// and be woken) → `shutdown` (returns once the kernel ACKed our FIN) →
/// the kernel's reply still arrives (half-close) → stats are consistent.
#[test]
fn connect_write_shutdown_then_read_the_reply() {
    in_netns(
        "connect_write_shutdown_then_read_the_reply",
        async |stack| {
            let n = 5_000_000;
            let data = pattern(n);
            let expect = data.clone();
            let l = TcpListener::bind((KERNEL, 7000)).expect("kernel listener");
            let server = std::thread::spawn(move || {
                let (mut c, peer) = l.accept().expect("accept");
                let mut got = Vec::new();
                c.read_to_end(&mut got).expect("read");
                assert!(
                    got == expect,
                    "kernel received different bytes ({} of {})",
                    got.len(),
                    expect.len()
                );
                c.write_all(format!("got {} from {}", got.len(), peer.ip()).as_bytes())
                    .expect("reply");
            });
            let to: SocketAddr = format!("{KERNEL}:7000").parse().unwrap();
            let mut s = stack.connect(to).await.expect("connect");
            assert_eq!(s.peer_addr(), to);
            assert_eq!(s.local_addr().ip().to_string(), "10.88.0.1");
            s.write_all(&data).await.expect("write_all");
            s.shutdown().await.expect("shutdown");
            let st = s.stats();
            let flow = st.send_summary().expect("send_done after shutdown");
            assert_eq!(flow.bytes, n as u64);
            assert!(!flow.ka_enabled, "the kernel does not offer KA");
            assert_eq!(flow.mode_changes, 0);
            assert!(
                s.write(b"late").await.is_err(),
                "writing after shutdown must fail"
            );
            let mut reply = String::new();
            s.read_to_string(&mut reply)
                .await
                .expect("reading after our FIN");
            assert_eq!(reply, format!("got {n} from 10.88.0.1"));
            assert!(s.stats().recv_summary().is_some(), "peer FIN recorded");
            server.join().expect("server thread");
            drop(s);
            assert!(
                stack.close(Duration::from_secs(5)).await,
                "connections finish"
            );
            let d = stack.stats();
            // 5 MB is > 3000 segments out; how many ACKs come back depends on the
            // kernel's ACK pacing (stretch ACKs), so only require that some did.
            assert!(d.packets_in > 100 && d.packets_out > 3000, "{d:?}");
            assert_eq!(d.input_dropped, 0, "{d:?}");
        },
    );
}

/// A kernel client connects to a `KaListener`; we read to EOF, answer,
/// and dropping the stream closes gracefully (the client reads EOF, not a
/// reset).
#[test]
fn listener_accepts_kernel_clients() {
    in_netns("listener_accepts_kernel_clients", async |stack| {
        let listener = stack.listen(7001).expect("listen");
        assert!(stack.listen(7001).is_err(), "a port is listened on once");
        let (tx, rx) = mpsc::channel();
        let client = std::thread::spawn(move || {
            let mut c = TcpStream::connect_timeout(
                &"10.88.0.1:7001".parse().unwrap(),
                Duration::from_secs(5),
            )
            .expect("kernel connect");
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(&pattern(300_000)).expect("write");
            c.shutdown(std::net::Shutdown::Write).expect("shutdown");
            let mut back = Vec::new();
            c.read_to_end(&mut back).expect("read to EOF (no reset)");
            tx.send(back).unwrap();
        });
        let (mut s, peer) = listener.accept().await.expect("accept");
        assert_eq!(peer.ip().to_string(), KERNEL);
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.expect("read");
        assert!(got == pattern(300_000), "received {} bytes", got.len());
        let flow = s.stats().recv_summary().expect("peer FIN recorded");
        assert_eq!(flow.bytes, 300_000);
        s.write_all(b"thanks").await.expect("reply");
        drop(s); // graceful close: FIN after "thanks"
        let back = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(10)))
            .await
            .unwrap()
            .expect("client finished");
        assert_eq!(back, b"thanks");
        client.join().unwrap();
        assert!(stack.close(Duration::from_secs(5)).await);
    });
}

/// A SYN to a closed kernel port is answered with RST: `connect` fails
/// with `ConnectionRefused` (and does not hang).
#[test]
fn connect_to_a_closed_port_is_refused() {
    in_netns("connect_to_a_closed_port_is_refused", async |stack| {
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            stack.connect(format!("{KERNEL}:7999").parse().unwrap()),
        )
        .await
        .expect("refused quickly");
        let e = r.expect_err("nobody listens");
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    });
}

/// A device whose queue overflows: the kernel drops what its reader has not
/// taken, `KernelDrops` counts exactly those drops (the number behind
/// `DriverStats::input_dropped` and the router's `input overflow`), and
/// `TunOptions::tx_queue_len` really sets the queue. The stack's own device
/// is read by its driver and drops nothing.
#[test]
fn kernel_drops_in_front_of_an_unread_device_are_counted() {
    in_netns(
        "kernel_drops_in_front_of_an_unread_device_are_counted",
        async |stack| {
            use ka_io::tun::{KernelDrops, TunOptions, open_tun};
            let opts = TunOptions {
                tx_queue_len: 4,
                ..TunOptions::default()
            };
            // Nobody reads this one.
            let dev = open_tun("kadrop0", &opts).expect("second TUN device");
            let sysfs = |f: &str| {
                std::fs::read_to_string(format!("/sys/class/net/kadrop0/{f}"))
                    .expect("sysfs")
                    .trim()
                    .parse::<u64>()
                    .expect("a number")
            };
            assert_eq!(sysfs("tx_queue_len"), 4);
            ka_endpoint::driver::configure_kernel_side(
                "kadrop0",
                "10.89.0.1/24".parse().unwrap(),
                "10.89.0.254".parse().unwrap(),
            )
            .expect("address");
            let drops = KernelDrops::watch(&dev).expect("counter readable");
            let before = sysfs("statistics/tx_dropped");
            let udp = std::net::UdpSocket::bind("10.89.0.254:0").expect("udp");
            for _ in 0..64 {
                udp.send_to(&[0u8; 100], "10.89.0.1:9").expect("send");
            }
            let n = drops.since_start().expect("device visible");
            assert_eq!(n, sysfs("statistics/tx_dropped") - before);
            assert!(
                (56..=64).contains(&n),
                "{n} of 64 dropped with a 4-packet queue"
            );
            assert_eq!(
                stack.stats().input_dropped,
                0,
                "the driver reads its device"
            );
            drop(dev);
        },
    );
}

/// With offloads (`DriverConfig::offload`): 20 MB from the kernel to the
/// stack (the kernel hands the device TCP super-packets, which the stack
/// takes whole) and 20 MB back (the
/// driver's rounds written coalesced), both exact and without a read or
/// write error.
#[test]
fn offloaded_device_carries_both_directions_exactly() {
    in_netns(
        "offloaded_device_carries_both_directions_exactly",
        async |_| {
            let config = DriverConfig {
                offload: true,
                ..DriverConfig::default()
            };
            // The default stack is already open on DEV: this one gets its own.
            let stack = KaStack::open("kaep1", "10.89.0.1/24".parse().expect("cidr"), config)
                .expect("opening the offloaded TUN device");
            // The device really has the kernel's offloads (a TUN device
            // opened without them has TSO off).
            let features = Command::new("ethtool")
                .args(["-k", "kaep1"])
                .output()
                .expect("ethtool");
            let features = String::from_utf8_lossy(&features.stdout);
            assert!(
                features.contains("tcp-segmentation-offload: on"),
                "offload not enabled on kaep1:\n{features}"
            );
            let n = 20_000_000;
            let data = pattern(n);
            let expect = data.clone();
            let l = TcpListener::bind(("10.89.0.254", 7010)).expect("kernel listener");
            let server = std::thread::spawn(move || {
                let (mut c, _) = l.accept().expect("accept");
                let mut got = vec![0u8; n];
                c.read_exact(&mut got).expect("read");
                assert!(got == expect, "kernel received different bytes");
                c.write_all(&expect).expect("echo");
            });
            let to: SocketAddr = "10.89.0.254:7010".parse().unwrap();
            let mut s = stack.connect(to).await.expect("connect");
            s.write_all(&data).await.expect("write_all");
            let mut back = vec![0u8; n];
            s.read_exact(&mut back).await.expect("read back");
            assert!(back == data, "stack received different bytes");
            server.join().expect("server thread");
            drop(s);
            let d = stack.stats();
            assert!(d.packets_in > (n / 1500) as u64, "{d:?}");
            assert_eq!(d.read_errors + d.write_errors, 0, "{d:?}");
            // The kernel's super-packets reached the stack whole.
            assert!(d.gro_reads > 0, "{d:?}");
            // A bulk send leaves in super-packets: most segments went out
            // coalesced, several per write.
            assert!(d.gso_segments > d.packets_out / 2, "{d:?}");
            assert!(d.gso_segments >= 2 * d.gso_writes, "{d:?}");
        },
    );
}

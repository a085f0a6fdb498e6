//! Command line of `ka-endpoint` (clap derive).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ka_codec::units::{parse_bytes, parse_duration};
use ka_endpoint::driver::{Cidr, DriverConfig};
use ka_endpoint::{CcAlgorithm, EcnMode, StackConfig};

const AFTER: &str = "\
WIRING:
  The endpoint is a userspace TCP/IP stack on its own TUN device. It owns the address given
  by --addr; the kernel side of the device gets another address of the same prefix (by
  default the highest host: 10.0.0.254 for 10.0.0.1/24, 10.77.0.102 for 10.77.0.101/30), so
  the kernel routes the prefix into the device but never answers for the endpoint's address.
  To reach other hosts the kernel forwards (sysctl net.ipv4.ip_forward=1) and they need a
  route to the prefix. Behind examples/testbed/testbed.sh no route is needed: pick a /30
  inside the testbed's 10.77.0.0/24, which the far side already reaches through the router.

UNITS:
  Sizes are bytes: 10M = 10 000 000, 10MiB = 10 485 760, 1500. Durations need a unit: 10s, 250ms.

OUTPUT:
  One line per finished flow; with --json one object per flow with bytes, fct_s, goodput_bps,
  ka_enabled, xcp_enabled, ka_time_frac, time_ka_s, time_tcp_s, mode_changes, retransmits,
  spurious_retransmits, window_undos, rtos, tlp_probes, ecn, ece_reactions, ce_received
  (sender's view when sending: FCT runs from connect to our FIN being acknowledged;
  window_undos: TCP-mode window cuts undone because DSACKs showed them spurious), and the
  stack's packets_in, gro_reads, packets_out, gso_writes,
  gso_segments (with --offload: super-packets read whole, super-packets written and the
  segments they carried).

EXAMPLE (as root, inside the namespaces of examples/testbed/testbed.sh --name kt):
  ip netns exec ktb sh -c 'sysctl -qw net.ipv4.ip_forward=1 &&
      ka-endpoint recv --tun ke0 --addr 10.77.0.201/30 --listen 5001'
  ip netns exec kta sh -c 'sysctl -qw net.ipv4.ip_forward=1 &&
      ka-endpoint send --tun ke0 --addr 10.77.0.101/30 --to 10.77.0.201:5001 --bytes 10M'

Stop with Ctrl-C or SIGTERM. Logging: RUST_LOG=debug (default info, on stderr).";

/// Kick-Ass end host: a userspace TCP (NewReno/CUBIC) with KA rate signalling on a TUN
/// device, as a bulk-transfer sender or receiver, or a prober telling whether KA survives a
/// path. Talks to any TCP peer; KA is used only when the peer offers it too.
#[derive(Debug, Parser)]
#[command(name = "ka-endpoint", version, after_long_help = AFTER, after_help = "Wiring, units and examples: --help")]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Accept connections, read each to EOF and report bytes, goodput and FCT per
    /// connection.
    Recv(RecvArgs),
    /// Connect, send a number of bytes (or a file), close, and report goodput, FCT and the
    /// time spent in each mode.
    Send(SendArgs),
    /// Test whether Kick-Ass survives the path to a `ka-endpoint recv`: fragmented packets,
    /// the leading fragment's length, RTT indicators, path MTU, DF (one line per finding).
    #[command(after_long_help = crate::probe::HELP)]
    Probe(ProbeArgs),
}

/// Options of `probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    /// Device and address (IPv4 only).
    pub device: Device,

    /// The `ka-endpoint recv` to probe.
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: SocketAddr,

    /// Device MTU: the largest packet the probe sends (and the first path-MTU guess).
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    pub mtu: u16,

    /// The whole probe, closing included, ends within this time; what it could not test by
    /// then is reported as untested.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "10s")]
    pub timeout: Duration,

    /// Print one JSON object with every finding on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// The TUN device and the address on it, shared by every subcommand.
#[derive(Debug, Args)]
pub struct Device {
    /// TUN device to attach to, or create if it does not exist.
    #[arg(long, value_name = "DEV", default_value = "ka0")]
    pub tun: String,

    /// This host's own address and prefix, e.g. 10.0.0.1/24.
    #[arg(long, value_name = "ADDR/PREFIX")]
    pub addr: Cidr,

    /// Address of the device's kernel side [default: highest host of the prefix, or the
    /// lowest if that is --addr]. `none`: leave the device's addresses and routes as they are.
    #[arg(long, value_name = "IP|none")]
    pub kernel_addr: Option<KernelAddr>,
}

impl Device {
    /// The kernel-side address to configure (`None`: leave the device alone).
    pub fn kernel_side(&self) -> anyhow::Result<Option<IpAddr>> {
        kernel_side(self.addr, self.kernel_addr)
    }
}

/// Options of both subcommands.
#[derive(Debug, Args)]
pub struct Common {
    #[command(flatten)]
    /// Device and address.
    pub device: Device,

    /// Plain TCP: never offer KA (no KA options are ever sent).
    #[arg(long)]
    pub no_ka: bool,

    /// Congestion control: of a plain TCP connection, and of a KA connection whenever it
    /// falls back to TCP mode. CUBIC by default, as the TCP it shares paths with (Linux,
    /// Windows and macOS run CUBIC); `newreno` is the paper's ns-3 TCP. `xcp` / `xcp-rate`
    /// (router-assisted XCP, window- or rate-based): offered in the SYN instead of KA, needs
    /// a peer that echoes XCP feedback and IPv4; otherwise the connection runs NewReno.
    /// `pcc` (PCC Vivace) is rate-based and always paced; with --no-ka it is the paper's PCC
    /// baseline.
    #[arg(long, value_enum, default_value = "cubic")]
    pub cc: CcAlgorithm,

    /// With `--cc cubic`: end slow start early when the RTT rises or ACKs arrive as a
    /// train (HyStart, as Linux's CUBIC does by default), instead of at the first loss.
    #[arg(long)]
    pub hystart: bool,

    /// No tail loss probes. By default (as Linux) a sender with data in flight that hears
    /// nothing for two RTTs sends one probe segment, so lost last segments are repaired in
    /// about an RTT instead of by the retransmission timeout (RFC 8985 §7).
    #[arg(long)]
    pub no_tlp: bool,

    /// A KA sender leaves KA mode after a silence of about an RTT without a fresh signal,
    /// but never one shorter than this. At sub-millisecond RTTs the router signals once per
    /// millisecond, and a few milliseconds of scheduling delay on a busy host would
    /// otherwise end KA mode and start it again many times a second. `0ms` is the paper's
    /// rule alone.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "10ms")]
    pub ka_silence_floor: Duration,

    /// Leave KA mode by silence at the window in flight, as the paper does, instead of
    /// reducing it as for one loss. By default a silent router is taken as congestion (a KA
    /// router falls silent when legacy traffic has filled half its queue), so the flow
    /// enters TCP mode as a TCP flow that has just seen congestion would.
    #[arg(long)]
    pub ka_silence_keep_window: bool,

    /// ECN (RFC 3168). `--ecn` alone = `on`: ask for ECN when connecting (and accept it when
    /// asked); ECN connections send data ECT(0), and a CE mark then counts as congestion —
    /// the window is cut once per RTT, and a KA sender leaves KA mode as after a loss.
    /// `accept` (the default, like Linux's net.ipv4.tcp_ecn=2): use ECN only if the peer
    /// asks. `off`: never.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, default_value = "accept", default_missing_value = "on")]
    pub ecn: EcnArg,

    /// Print one JSON object per finished flow on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,

    /// Device MTU; the MSS follows from it.
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    pub mtu: u16,

    /// Pacing: how long before a departure the driver thread stops sleeping and spins (it
    /// sleeps with 1 ns timer slack, so 0 is punctual to tens of µs and costs no CPU).
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "0us")]
    pub spin: Duration,

    /// Transmit-queue length (txqueuelen) set on the device: packets the kernel has routed to
    /// the stack and the driver has not read yet; beyond it the kernel drops them (reported at
    /// exit). Linux's 500 is 6 ms at 1 Gbit/s. 0 leaves the device's setting.
    #[arg(long, value_name = "PACKETS", default_value_t = ka_io::tun::DEFAULT_TX_QUEUE_LEN)]
    pub tun_queue: u32,

    /// Open the device with the kernel's segmentation offloads: TCP super-packets in (each
    /// handed to the stack whole, as one segment that counts as its segments), a connection's
    /// consecutive segments written as one super-packet with the TCP checksum left to the
    /// kernel. For multi-Gbit/s paths; nothing changes at shaped rates.
    #[arg(long)]
    pub offload: bool,

    /// Send and receive buffer of each connection (the most it keeps unacknowledged, and the
    /// largest window it advertises). The default 1MiB allows 8 Gbit/s at 1 ms of RTT.
    #[arg(long, value_name = "SIZE", value_parser = bytes)]
    pub buffer: Option<u64>,
}

/// `recv` options.
#[derive(Debug, Args)]
pub struct RecvArgs {
    #[command(flatten)]
    /// Device, address, TCP options.
    pub common: Common,

    /// Port, or address:port, to accept connections on (the address must be --addr's).
    #[arg(long, value_name = "[ADDR:]PORT")]
    pub listen: ListenAddr,

    /// Exit after the first connection has finished.
    #[arg(long)]
    pub once: bool,

    /// Write the received bytes to this file (needs --once).
    #[arg(long, value_name = "FILE", requires = "once")]
    pub out: Option<PathBuf>,
}

/// `send` options.
#[derive(Debug, Args)]
pub struct SendArgs {
    #[command(flatten)]
    /// Device, address, TCP options.
    pub common: Common,

    /// The receiver, address:port.
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: SocketAddr,

    /// How many bytes to send (a pseudo-random pattern), e.g. 10M, 1GiB.
    #[arg(long, value_name = "SIZE", value_parser = bytes, required_unless_present = "file", conflicts_with = "file")]
    pub bytes: Option<u64>,

    /// Send this file's contents instead.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// With --bytes: send the pattern's first 64 KiB over and over instead
    /// of the whole stream, as socket benchmarks (iperf3, a plain `send`
    /// loop) do. The sending application then costs nothing per byte; the
    /// bytes are no longer the stream a receiver can check.
    #[arg(long, conflicts_with = "file")]
    pub static_payload: bool,

    /// Give up if the handshake has not completed by then.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "10s")]
    pub connect_timeout: Duration,

    /// Give up if the whole transfer has not finished by then [default: no limit].
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub timeout: Option<Duration>,
}

/// `--kernel-addr` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelAddr {
    /// This address.
    Addr(IpAddr),
    /// Leave the device alone.
    None,
}

impl FromStr for KernelAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("none") {
            return Ok(KernelAddr::None);
        }
        s.parse()
            .map(KernelAddr::Addr)
            .map_err(|_| format!("{s:?} is neither an IP address nor `none`"))
    }
}

/// `--listen` value: a port, or address and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenAddr {
    /// The address, if given.
    pub ip: Option<IpAddr>,
    /// The port.
    pub port: u16,
}

impl FromStr for ListenAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(port) = s.parse::<u16>() {
            return Ok(ListenAddr { ip: None, port });
        }
        let sa: SocketAddr = s
            .parse()
            .map_err(|_| format!("{s:?} is neither a port nor ADDR:PORT"))?;
        let ip = (!sa.ip().is_unspecified()).then_some(sa.ip());
        Ok(ListenAddr {
            ip,
            port: sa.port(),
        })
    }
}

/// `--ecn` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EcnArg {
    /// Ask on active opens, accept on passive ones.
    On,
    /// Accept when the peer asks; never ask.
    Accept,
    /// Never.
    Off,
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

fn bytes(s: &str) -> Result<u64, String> {
    parse_bytes(s).map_err(|e| e.to_string())
}

impl Common {
    /// The driver configuration these options describe.
    pub fn driver_config(&self) -> DriverConfig {
        let mut stack = StackConfig::default();
        stack.tcp.mtu = usize::from(self.mtu);
        stack.tcp.ka.enabled = !self.no_ka;
        stack.tcp.cc = self.cc;
        stack.tcp.hystart = self.hystart;
        stack.tcp.tlp = !self.no_tlp;
        stack.tcp.ka.silence_floor = self.ka_silence_floor;
        stack.tcp.ka.silence_backoff = !self.ka_silence_keep_window;
        if let Some(b) = self.buffer {
            let b = usize::try_from(b).unwrap_or(usize::MAX);
            stack.tcp.send_buffer = b;
            stack.tcp.recv_buffer = b;
        }
        stack.tcp.ecn = match self.ecn {
            EcnArg::On => EcnMode::On,
            EcnArg::Accept => EcnMode::Accept,
            EcnArg::Off => EcnMode::Off,
        };
        DriverConfig {
            stack,
            spin: self.spin,
            tun_queue_len: self.tun_queue,
            offload: self.offload,
            ..DriverConfig::default()
        }
    }
}

/// The kernel-side address for `--addr addr` and `--kernel-addr kernel_addr`.
fn kernel_side(addr: Cidr, kernel_addr: Option<KernelAddr>) -> anyhow::Result<Option<IpAddr>> {
    match kernel_addr {
        Some(KernelAddr::None) => Ok(None),
        Some(KernelAddr::Addr(a)) => {
            anyhow::ensure!(a != addr.addr, "--kernel-addr must differ from --addr");
            anyhow::ensure!(
                a.is_ipv4() == addr.addr.is_ipv4(),
                "--kernel-addr and --addr must be of the same family"
            );
            Ok(Some(a))
        }
        None => addr.kernel_side().map(Some).ok_or_else(|| {
            anyhow::anyhow!(
                "--addr {addr}: the prefix has no room for a kernel-side address; use at most /30 \
                 (or pass --kernel-addr)"
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The driver configuration of `send --addr 10.0.1.1/24 --to
    /// 10.0.2.1:5001 --bytes 1M` plus `extra`.
    fn send_config(extra: &[&str]) -> DriverConfig {
        let mut argv = vec![
            "ka-endpoint",
            "send",
            "--addr",
            "10.0.1.1/24",
            "--to",
            "10.0.2.1:5001",
            "--bytes",
            "1M",
        ];
        argv.extend_from_slice(extra);
        let Cmd::Send(s) = Cli::try_parse_from(argv).unwrap().cmd else {
            panic!("not send")
        };
        s.common.driver_config()
    }

    /// `ka-endpoint recv --addr 10.0.0.1/24` plus `extra`, parsed.
    fn recv_line(extra: &[&str]) -> Result<Cli, clap::Error> {
        let mut argv = vec!["ka-endpoint", "recv", "--addr", "10.0.0.1/24"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv)
    }

    #[test]
    fn parses_a_send_line() {
        let cli = Cli::try_parse_from([
            "ka-endpoint",
            "send",
            "--tun",
            "ke0",
            "--addr",
            "10.0.1.1/24",
            "--to",
            "10.0.2.1:5001",
            "--bytes",
            "10M",
            "--no-ka",
            "--cc",
            "cubic",
        ])
        .unwrap();
        let Cmd::Send(s) = cli.cmd else {
            panic!("not send")
        };
        assert_eq!(s.bytes, Some(10_000_000));
        let cfg = s.common.driver_config();
        assert!(!cfg.stack.tcp.ka.enabled);
        assert_eq!(cfg.stack.tcp.cc, CcAlgorithm::Cubic);
        assert_eq!(cfg.stack.tcp.ecn, EcnMode::Accept, "accept by default");
        assert!(!cfg.stack.tcp.hystart, "plain slow start by default");
        assert!(cfg.stack.tcp.tlp, "tail loss probes by default");
        assert_eq!(cfg.stack.tcp.ka.silence_floor, Duration::from_millis(10));
        assert!(cfg.stack.tcp.ka.silence_backoff, "silence is congestion");
        assert!(
            !send_config(&["--ka-silence-keep-window"])
                .stack
                .tcp
                .ka
                .silence_backoff
        );
        assert_eq!(cfg.tun_queue_len, 4096, "Linux's 500 overflows at Gbit/s");
        assert_eq!(
            s.common.device.kernel_side().unwrap(),
            Some("10.0.1.254".parse().unwrap())
        );
        assert!(
            Cli::try_parse_from([
                "ka-endpoint",
                "send",
                "--addr",
                "10.0.1.1/24",
                "--to",
                "10.0.2.1:1"
            ])
            .is_err()
        );
        // CUBIC by default: a KA sender in TCP mode competes as the TCP
        // around it does (docs/RESULTS.md, "Legacy traffic": NewReno
        // fallback got 0.43x of CUBIC's share beside four CUBIC flows)
        assert_eq!(send_config(&[]).stack.tcp.cc, CcAlgorithm::Cubic);
        assert!(!send_config(&["--no-tlp"]).stack.tcp.tlp);
        assert_eq!(
            send_config(&["--ka-silence-floor", "0ms"])
                .stack
                .tcp
                .ka
                .silence_floor,
            Duration::ZERO
        );
        assert_eq!(
            send_config(&["--cc", "newreno"]).stack.tcp.cc,
            CcAlgorithm::NewReno
        );
        assert!(
            send_config(&["--cc", "cubic", "--hystart"])
                .stack
                .tcp
                .hystart
        );
    }

    #[test]
    fn parses_ecn_forms() {
        let ecn = |extra: &[&str]| {
            let argv = [extra, &["--listen", "1"]].concat();
            let cli = recv_line(&argv).map_err(|e| e.to_string())?;
            let Cmd::Recv(r) = cli.cmd else {
                panic!("not recv")
            };
            Ok::<_, String>(r.common.driver_config().stack.tcp.ecn)
        };
        assert_eq!(ecn(&[]), Ok(EcnMode::Accept));
        assert_eq!(ecn(&["--ecn"]), Ok(EcnMode::On));
        assert_eq!(ecn(&["--ecn", "off"]), Ok(EcnMode::Off));
        assert_eq!(ecn(&["--ecn=accept"]), Ok(EcnMode::Accept));
        assert!(ecn(&["--ecn", "maybe"]).is_err());
    }

    #[test]
    fn parses_xcp() {
        for (arg, cc) in [
            ("xcp", CcAlgorithm::Xcp),
            ("xcp-rate", CcAlgorithm::XcpRate),
            ("xcp-rate-pure", CcAlgorithm::XcpRatePure),
        ] {
            assert_eq!(send_config(&["--cc", arg]).stack.tcp.cc, cc);
        }
        assert!(recv_line(&["--listen", "1", "--cc", "xcp-window"]).is_err());
    }

    #[test]
    fn cc_pcc_selects_the_rate_based_controller() {
        let cli = recv_line(&["--listen", "5001", "--no-ka", "--cc", "pcc"]).unwrap();
        let Cmd::Recv(r) = cli.cmd else {
            panic!("not recv")
        };
        let cfg = r.common.driver_config();
        assert_eq!(cfg.stack.tcp.cc, CcAlgorithm::Pcc);
        assert!(!cfg.stack.tcp.ka.enabled);
        let cc = cfg.stack.tcp.cc.build(1448, 14_480);
        assert_eq!(cc.name(), "pcc");
        assert!(cc.rate_based());
    }

    #[test]
    fn cc_bbr_selects_the_paced_model_based_controller() {
        let cfg = send_config(&["--cc", "bbr"]);
        assert_eq!(cfg.stack.tcp.cc, CcAlgorithm::Bbr);
        let cc = cfg.stack.tcp.cc.build(1448, 14_480);
        assert_eq!(cc.name(), "bbr");
        assert!(cc.rate_based());
    }

    #[test]
    fn parses_listen_forms() {
        assert_eq!(
            "5001".parse::<ListenAddr>().unwrap(),
            ListenAddr {
                ip: None,
                port: 5001
            }
        );
        assert_eq!(
            "10.0.0.2:80".parse::<ListenAddr>().unwrap(),
            ListenAddr {
                ip: Some("10.0.0.2".parse().unwrap()),
                port: 80
            }
        );
        assert_eq!("0.0.0.0:80".parse::<ListenAddr>().unwrap().ip, None);
        assert!("x".parse::<ListenAddr>().is_err());
        assert_eq!("none".parse::<KernelAddr>().unwrap(), KernelAddr::None);
        let r = recv_line(&["--listen", "1", "--out", "f"]);
        assert!(r.is_err(), "--out needs --once");
    }
}

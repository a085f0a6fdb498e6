//! Command line of `ka-router` (clap derive).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use ka_io::pacing::Pacer;
use ka_io::tun::TunOptions;
use ka_router::shell::{Link, ShellConfig};

use crate::impair_args::ImpairArgs;
use crate::qdisc_args::QdiscArgs;
use crate::realtime;
use crate::rwm_args::RwmArgs;
pub(crate) use crate::values::OnOff;
use crate::values::{bounded_duration, duration, queue_limit, rate};
use ka_router::ControllerKind;

const UNITS: &str = r#"UNITS:
  Rates are bits per second: 100mbit, 1.5gbit, 500kbit, 20Mbit/s, 10mbps (= 10 megabit/s),
  or a bare number of bit/s. Byte rates (MB/s) are refused.
  Durations need a unit: 50ms, 250us, 1.5s (a bare 0 is fine).

EXAMPLES:
  ka-router --in kt0 --out kt1 --rate 20mbit --delay 20ms --pcap ka.pcap --metrics 127.0.0.1:9100
  ka-router --bridge eth1 eth2 --rate 20mbit --stamp-log stamps.csv
  ka-router --in kt0 --out kt1 --rate 50mbit --rwm --rwm-class web=80,443:60%   (KA + RWM gateway)
  ka-router --in kt0 --out kt1 --rate 20mbit --controller crowd:caution=2.5
  ka-router --in kt0 --out kt1 --rate 20mbit --config router.toml
  ka-router --in kt0 --out kt1 --rate 100mbit --delay 10ms --jitter 3ms --loss 1% --duplicate 1%

CONFIG FILE (--config): the knobs as ka-sim scenarios write them, in the same units:
  [router]                       # ka_router::RouterConfig; every key optional
  controller = "echo"            # or { kind = "crowd", caution = 2.5 }
  initial_rtt = "100ms"
  dither = true
  rcp = { alpha = 0.1, beta = 1.0, queue_measure = "persistent", queue_target = "5ms" }
  mode = { threshold_frac = 0.5 }
  stamp_every = "rtt"            # or "packet", "10ms" (DESIGN §3.9)
  stamp_slots = 65536            # its per-flow table (default 4096)
  [qdisc]                        # optional: the discipline of both directions
  kind = "fq-codel"
  target = "5ms"
  [rwm]                          # optional: receive-window modulation
  classes = [{ name = "web", ports = [80, 443], share = 0.6 }]
  [impair]                       # optional: impairments of both directions (or [reverse_impair])
  loss = "1%"
  jitter = "3ms"
Unset keys take the library's defaults (queue measured at the interval's end, no queue target,
no dither), not this command line's.

The router attaches to the two TUN devices (creating them if absent), so it is the only wire
between whatever sits behind them. With --bridge it attaches instead to two existing Ethernet
interfaces and forwards between them as a transparent bump in the wire: IP frames go through
the same ports (queue, shaper, KA stamping), everything else (ARP, LLDP, ...) passes untouched
and unshaped. The interfaces need no addresses and the box no routes; turn GRO/LRO off on them
(ethtool -K IF gro off lro off). Stop it with Ctrl-C or SIGTERM; it flushes the capture and
prints its final counters. Logging: RUST_LOG=debug (default info)."#;

/// Kick-Ass router: shapes two directions between TUN devices and signals the fair-share
/// rate to senders by fragmenting packets (leading-fragment length encodes the rate).
#[derive(Debug, Parser)]
#[command(name = "ka-router", version, after_long_help = UNITS, after_help = "Units and an example: --help")]
pub struct Args {
    /// TUN device on the sender side: packets read here go out through --out at --rate.
    /// Attached to if it exists (made with `ip tuntap add NAME mode tun`), created otherwise.
    #[arg(
        long = "in",
        value_name = "DEV",
        required_unless_present = "bridge",
        requires = "out_dev"
    )]
    pub in_dev: Option<String>,

    /// TUN device on the receiver side: packets read here go back through --in at
    /// --reverse-rate.
    #[arg(long = "out", value_name = "DEV", requires = "in_dev")]
    pub out_dev: Option<String>,

    /// Attach to --in inside this network namespace (a name from `ip netns list`, or a path
    /// such as /proc/PID/ns/net): for a device that was moved there after it was made, e.g.
    /// to restart the router of a running testbed.
    #[arg(long, value_name = "NETNS", requires = "in_dev")]
    pub in_netns: Option<String>,

    /// Attach to --out inside this network namespace (see --in-netns).
    #[arg(long, value_name = "NETNS", requires = "out_dev")]
    pub out_netns: Option<String>,

    /// Bridge two existing Ethernet interfaces instead of TUN devices (AF_PACKET): frames read
    /// on IF_A go out of IF_B at --rate, the other way at --reverse-rate. IPv4/IPv6 frames go
    /// through the ports like in TUN mode; other frames pass untouched and unshaped.
    #[arg(long, num_args = 2, value_names = ["IF_A", "IF_B"], conflicts_with_all = ["in_dev", "out_dev", "tun_queue", "mtu", "offload", "write_threads"])]
    pub bridge: Option<Vec<String>>,

    /// Capacity C of the forward (in → out) direction, bit/s: e.g. 100mbit, 1gbit.
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub rate: u64,

    /// Capacity of the reverse (out → in) direction [default: same as --rate].
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub reverse_rate: Option<u64>,

    /// One-way propagation delay added in each direction after serialisation, e.g. 50ms
    /// (the round trip grows by twice this). At most 10s.
    #[arg(long, value_name = "DURATION", value_parser = bounded_duration, default_value = "0")]
    pub delay: Duration,

    /// Queue limit per direction, in packets (the queue discipline's hard limit), 1 to
    /// 100000. The port stops signalling (TCP mode) while the queue is at or above half of it.
    #[arg(long, value_name = "PACKETS", value_parser = queue_limit, default_value = "1000")]
    pub queue: usize,

    /// Path RTT d the rate controller assumes until the first RTT-indicator packet arrives.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "100ms", conflicts_with = "config")]
    pub rtt: Duration,

    /// RCP α: weight of the spare-capacity term.
    #[arg(long, default_value_t = 0.1, conflicts_with = "config")]
    pub alpha: f64,

    /// RCP β: weight of the queue-drain term.
    #[arg(long, default_value_t = 1.0, conflicts_with = "config")]
    pub beta: f64,

    /// Rate controller of --signal ka|rcp, NAME or NAME:KEY=VALUE,... with the controller's
    /// knobs (e.g. crowd:caution=2.5, echo:target=0.97,floor_budget=8ms). rcp: the paper's
    /// RCP (every packet carries the same rate R, so flows that start within an RTT of each
    /// other each get the whole link and can fill the queue). crowd: RCP's control law (same
    /// --alpha, --beta) plus admission of new connections: it follows TCP connections from
    /// their SYN and starts each at its expected share, so a crowd of new flows does not
    /// overflow the queue; at light load it costs long flows part of their first round trip
    /// (see --crowd-caution). echo: RCP's control law plus connection following, and the rate
    /// is also written into the echo of the ACKs coming back through the router (lowering
    /// KA-Rate / RCP-Echo), so it acts at once instead of one RTT later: no flash-crowd
    /// overflow and no cost to long flows. It needs both directions of each connection
    /// through this router (use crowd otherwise), and gains most when the router is near the
    /// senders. Knobs and designs: docs/controllers.md.
    #[arg(long, value_name = "NAME[:KEY=VALUE,...]", value_parser = controller, default_value = "rcp", conflicts_with = "config")]
    pub controller: ControllerKind,

    /// crowd only (the same as --controller crowd:caution=FACTOR): safety factor on the share
    /// of the link the router learns a new connection fills in its first round trip. Larger:
    /// shorter queue, slower long flows. In the simulator at the paper's light load (150mbit,
    /// 100ms, 30 % load) the queue's 99th percentile is about 300 packets at 1, 40-65 at the
    /// default (4) and about 10 at 9, and flows of 1000+ packets take 1.1, 1.5 and 2.1 times as
    /// long as with rcp.
    #[arg(long, value_name = "FACTOR", conflicts_with = "config")]
    pub crowd_caution: Option<f64>,
    /// XCP α (with --signal xcp): weight of the spare bandwidth in the efficiency controller
    /// φ = α·d·(C − y) − β·Q.
    #[arg(
        long,
        value_name = "ALPHA",
        default_value_t = 0.4,
        conflicts_with = "config"
    )]
    pub xcp_alpha: f64,

    /// XCP β (with --signal xcp): weight of the persistent queue Q in φ.
    #[arg(
        long,
        value_name = "BETA",
        default_value_t = 0.226,
        conflicts_with = "config"
    )]
    pub xcp_beta: f64,

    /// XCP γ (with --signal xcp): share of the traffic the fairness controller reshuffles
    /// every control interval (h = max(0, γ·y·d − |φ|)).
    #[arg(
        long,
        value_name = "GAMMA",
        default_value_t = 0.1,
        conflicts_with = "config"
    )]
    pub xcp_gamma: f64,

    /// Queue q the RCP update uses: persistent = the smallest queue during the last RTT d
    /// (XCP's persistent queue; ignores the bunches a busy host's scheduler makes), now = the
    /// queue when each control interval ends (DESIGN §3.5, the ns-2 reference code).
    #[arg(
        long,
        value_name = "persistent|now",
        value_enum,
        default_value = "persistent",
        conflicts_with = "config"
    )]
    pub queue_measure: QueueMeasureArg,

    /// How a control interval updates R: exponential = R·eˣ (the exact solution of RCP's fluid
    /// model over the interval; never collapses at small RTTs), linear = R·(1 + x) (DESIGN §3.5
    /// and the ns-2 code; the same to first order), x = (T/d)(α(C − y) − βq/d)/C.
    #[arg(
        long,
        value_name = "exponential|linear",
        value_enum,
        default_value = "exponential",
        conflicts_with = "config"
    )]
    pub rcp_update: RcpUpdateArg,

    /// RCP queue target: this much standing queue (as time at --rate) is not drained. Absorbs
    /// the scheduling jitter of real hosts, which would otherwise hold R below the link rate.
    /// 0 = DESIGN §3.5's formula.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "5ms", conflicts_with = "config")]
    pub queue_target: Duration,

    /// Dither the signalled code between encode(R) and the next code up, so senders pace at R
    /// on average instead of R rounded down to a code (codes are 6.45 % apart). off = every
    /// packet carries encode(R) (DESIGN §3.4).
    #[arg(
        long,
        value_name = "on|off",
        value_enum,
        default_value = "on",
        conflicts_with = "config"
    )]
    pub dither: OnOff,

    /// How often to signal each flow (KA and rcp signalling): packet = every packet that can
    /// carry a signal (DESIGN §3.4), rtt = at most once per the flow's RTT (its RTT
    /// indicators, else the average RTT), or a DURATION such as 10ms. SYNs, packets carrying
    /// an upstream signal and rate cuts are always signalled (DESIGN §3.9).
    #[arg(
        long,
        value_name = "packet|rtt|DURATION",
        default_value = "packet",
        conflicts_with = "config"
    )]
    pub stamp_every: ka_router::StampEvery,

    /// Flows the --stamp-every table holds per direction (rounded up to a power of two,
    /// 1..=1048576; 56 bytes each, allocated at start). More active flows than slots only add
    /// signals, never lose one (DESIGN §3.9).
    #[arg(long, value_name = "N", default_value_t = ka_router::signal::STAMP_SLOTS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 20),
          conflicts_with = "config")]
    pub stamp_slots: usize,

    /// Read the router's knobs (controller, RCP, XCP, TCP mode, initial RTT, dither) and
    /// optionally the queue discipline and RWM from this TOML file (see CONFIG FILE in --help)
    /// instead of their flags.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9100). Off by default.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,

    /// Write every packet the router sends to this pcap file (raw IP, wall-clock times).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,

    /// Log every KA leading fragment the router sends to this CSV file (time, direction,
    /// addresses, identification, L, code, rate): the router's own record of the signals it
    /// sent, e.g. to check `ka-trace` against.
    #[arg(long, value_name = "FILE")]
    pub stamp_log: Option<PathBuf>,

    /// Signal rates in IPv6 packets too (by inserting a Fragment header).
    #[arg(long, value_name = "on|off", value_enum, default_value = "on")]
    pub ipv6_signal: OnOff,

    /// How to tell senders the rate: ka (fragment lengths), rcp (native RCP IPv4 option,
    /// baseline), xcp (XCP router: lower the window feedback of the IPv4 XCP option, see
    /// --xcp-alpha), none (no signalling: a plain shaper with the --qdisc queue).
    #[arg(long, visible_alias = "signal", value_enum, default_value = "ka")]
    pub signalling: SignallingArg,

    #[command(flatten)]
    pub qdisc: QdiscArgs,

    #[command(flatten)]
    pub rwm: RwmArgs,

    #[command(flatten)]
    pub impair: ImpairArgs,

    /// MTU set on both TUN devices (bridge mode leaves the interfaces' MTU alone).
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    pub mtu: u16,

    /// Transmit-queue length (txqueuelen) set on both devices: packets the kernel has handed
    /// to the router and it has not read yet; beyond it the kernel drops them (`TX dropped`
    /// in `ip -s link`). Linux's 500 is 6 ms at 1 Gbit/s. 0 leaves the devices' setting.
    #[arg(long, value_name = "PACKETS", default_value_t = ka_io::tun::DEFAULT_TX_QUEUE_LEN)]
    pub tun_queue: u32,

    /// Open both TUN devices with the kernel's segmentation offloads (IFF_VNET_HDR): the kernel
    /// hands the router TCP super-packets of up to 64 KB, which it splits into packets for the
    /// ports, and what leaves together is written coalesced, one write per flow's run of
    /// segments. Needed for multi-Gbit/s rates; every packet still goes through the ports one
    /// by one (queue, signal, pacing), so results at shaped rates do not change.
    #[arg(long)]
    pub offload: bool,

    /// Write each direction on a thread of its own. A TUN write runs the receiving side's
    /// kernel stack in the writer (B's TCP receive for data, A's ACK processing and next
    /// transmissions for ACKs), most of the work at Gbit/s; the forwarding thread keeps
    /// reading, running the ports and pacing. The hand-over adds tens of µs to pacing
    /// lateness: for multi-Gbit/s links, not needed at shaped testbed rates.
    #[arg(long)]
    pub write_threads: bool,

    /// Pacing: how long before a departure the forwarding thread stops sleeping and spins
    /// (it sleeps with 1 ns timer slack, so 0 wakes within the host's wake-up latency, tens
    /// of µs). Larger is more precise at Gbit/s and costs a core; on a shared host spinning
    /// threads starve the senders and receivers.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "0us")]
    pub spin: Duration,

    /// Run the forwarding (pacing) thread with real-time priority PRIO (SCHED_FIFO, 1–99;
    /// needs root or CAP_SYS_NICE). Keeps departures on time on a busy host; with a --spin the
    /// thread spins before each departure, so at Gbit/s rates it then occupies a core.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub realtime: Option<i32>,

    /// Diagnostic and benchmark baseline: forward every packet at once, unshaped and
    /// unmodified, through the same I/O loop (rate, delay, queue and signalling are ignored).
    #[arg(long)]
    pub passthrough: bool,
}

/// `--queue-measure` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueueMeasureArg {
    /// The smallest queue during the last RTT.
    Persistent,
    /// The queue when the control interval ends.
    Now,
}

/// `--rcp-update` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RcpUpdateArg {
    /// R·eˣ.
    Exponential,
    /// R·(1 + x).
    Linear,
}

/// `--signalling` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SignallingArg {
    /// Kick-Ass: stamp the rate into leading-fragment lengths.
    Ka,
    /// Native RCP: lower the rate in the IPv4 RCP option.
    Rcp,
    /// XCP: lower the feedback in the IPv4 XCP option (DESIGN §7.2).
    Xcp,
    /// No signalling: a plain drop-tail shaper.
    None,
}

/// `--controller`: `NAME` or `NAME:KEY=VALUE,...`, read as the table
/// `{ kind = NAME, KEY = VALUE, ... }` of [`ControllerKind`]'s serialised
/// form (a VALUE that is no TOML value, e.g. `8ms`, is a string).
pub(crate) fn controller(s: &str) -> Result<ControllerKind, String> {
    let (name, knobs) = s.split_once(':').unwrap_or((s, ""));
    let mut t = toml::Table::new();
    t.insert("kind".into(), toml::Value::String(name.trim().into()));
    for kv in knobs.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("{kv:?}: expected KEY=VALUE"))?;
        let v = v.trim();
        let value = toml::from_str::<toml::Table>(&format!("v = {v}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(v.into()));
        t.insert(k.trim().into(), value);
    }
    toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| {
            format!("{} (e.g. rcp, crowd:caution=2.5, echo)", e.message())
        })
}

impl Args {
    /// The two ports' configurations (forward, reverse), validated
    /// ([`Setup`](crate::setup::Setup)).
    #[cfg(test)]
    pub fn port_configs(&self) -> anyhow::Result<(ka_router::PortConfig, ka_router::PortConfig)> {
        let s = crate::setup::Setup::try_from(self)?;
        Ok((s.forward, s.reverse))
    }

    /// The two devices: (in, out) TUN devices, or (IF_A, IF_B) in bridge mode.
    pub fn devices(&self) -> (&str, &str) {
        match (&self.bridge, &self.in_dev, &self.out_dev) {
            (Some(b), _, _) => (
                b.first().map_or("", String::as_str),
                b.get(1).map_or("", String::as_str),
            ),
            (None, i, o) => (
                i.as_deref().unwrap_or_default(),
                o.as_deref().unwrap_or_default(),
            ),
        }
    }

    /// The I/O shell's configuration.
    pub fn shell_config(&self) -> ShellConfig {
        let (a, b) = self.devices();
        let mut s = ShellConfig::new(a, b);
        if self.bridge.is_some() {
            s.link = Link::Bridge;
        }
        s.stamp_log = self.stamp_log.clone();
        s.tun = TunOptions {
            mtu: self.mtu,
            up: true,
            tx_queue_len: self.tun_queue,
            offload: self.offload,
        };
        s.metrics = self.metrics;
        s.pcap = self.pcap.clone();
        s.in_netns = self.in_netns.clone();
        s.out_netns = self.out_netns.clone();
        s.pacer = Pacer::new(self.spin);
        s.write_threads = self.write_threads;
        s.pacing_thread_init = self.realtime.map(realtime::init);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use ka_router::{QueueMeasure, RcpUpdate, Signalling, XcpConfig};

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("ka-router").chain(args.iter().copied()))
    }

    /// `--in a --out b --rate <rate>` followed by `extra`.
    /// A TUN router of `rate` with the options `extra` (a command-line
    /// tail, split at white space).
    fn tun_pair(rate: &str, extra: &str) -> Result<Args, clap::Error> {
        let mut args = vec!["--in", "a", "--out", "b", "--rate", rate];
        args.extend(extra.split_whitespace());
        parse(&args)
    }

    #[test]
    fn cli_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn parses_human_units_and_defaults() {
        let a = parse(&[
            "--in", "kt0", "--out", "kt1", "--rate", "100mbit", "--delay", "50ms",
        ])
        .unwrap();
        let (f, r) = a.port_configs().unwrap();
        assert_eq!(f.capacity_bps, 100_000_000);
        assert_eq!(r.capacity_bps, 100_000_000);
        assert_eq!(f.delay, Duration::from_millis(50));
        assert_eq!(f.queue_limit, 1000);
        assert_eq!(f.initial_rtt, Duration::from_millis(100));
        assert_eq!(f.signalling, Signalling::KA);
        assert!(f.ipv6_signal);
        // The binary's jitter-tolerant RCP (RcpConfig::queue_target docs).
        assert_eq!(f.rcp.queue_measure, QueueMeasure::Persistent);
        assert_eq!(f.rcp.queue_target, Duration::from_millis(5));
        assert!(f.dither);
        assert_eq!(f.signalling.controller(), Some(&ControllerKind::Rcp));
        assert!(a.metrics.is_none() && a.pcap.is_none() && !a.passthrough);
        assert!(a.realtime.is_none() && a.stamp_log.is_none());
        let s = a.shell_config();
        assert_eq!(s.link, Link::Tun);
        assert_eq!(
            (s.in_dev.as_str(), s.out_dev.as_str(), s.tun.mtu),
            ("kt0", "kt1", 1500)
        );
        assert_eq!(s.tun.tx_queue_len, 4096, "Linux's 500 overflows at Gbit/s");
        let q = tun_pair("1gbit", "--tun-queue 0").unwrap();
        assert_eq!(q.shell_config().tun.tx_queue_len, 0);
    }

    #[test]
    fn every_option() {
        let a = tun_pair(
            "20mbit",
            "--reverse-rate 1.5gbit --queue 64 --rtt 40ms --alpha 0.3 \
             --beta 0.5 --metrics 127.0.0.1:9100 --pcap x.pcap \
             --ipv6-signal off --signalling rcp --queue-measure now \
             --queue-target 0 --dither off --controller crowd \
             --crowd-caution 2.5 --rcp-update linear --stamp-every rtt",
        )
        .unwrap();
        let (f, r) = a.port_configs().unwrap();
        assert_eq!(
            (f.capacity_bps, r.capacity_bps),
            (20_000_000, 1_500_000_000)
        );
        assert_eq!(f.queue_limit, 64);
        assert_eq!(r.initial_rtt, Duration::from_millis(40));
        assert_eq!((f.rcp.alpha, f.rcp.beta), (0.3, 0.5));
        assert!(!r.ipv6_signal);
        assert_eq!(r.signalling.carrier(), ka_router::Carrier::NativeRcp);
        assert_eq!(r.rcp.queue_measure, QueueMeasure::Now);
        assert_eq!(r.rcp.queue_target, Duration::ZERO);
        assert!(!r.dither);
        let Some(ControllerKind::Crowd(k)) = r.signalling.controller() else {
            panic!("crowd expected: {:?}", r.signalling);
        };
        assert_eq!(k.caution, 2.5);
        assert_eq!(r.rcp.update, RcpUpdate::Linear);
        assert_eq!(
            (f.stamp_every, r.stamp_every),
            (ka_router::StampEvery::Rtt, ka_router::StampEvery::Rtt)
        );
        let e = tun_pair("20mbit", "--stamp-every 10ms").unwrap();
        let (f, _) = e.port_configs().unwrap();
        assert_eq!(
            f.stamp_every,
            ka_router::StampEvery::Every(Duration::from_millis(10))
        );
        assert!(tun_pair("20mbit", "--stamp-every often").is_err());
        assert!(
            tun_pair("20mbit", "--stamp-every 0ms")
                .unwrap()
                .port_configs()
                .is_err(),
            "a zero interval is refused (it would mean packet)"
        );
        assert_eq!(f.stamp_slots, ka_router::signal::STAMP_SLOTS);
        let e = tun_pair("20mbit", "--stamp-every rtt --stamp-slots 65536").unwrap();
        let (f, r) = e.port_configs().unwrap();
        assert_eq!((f.stamp_slots, r.stamp_slots), (65536, 65536));
        for bad in ["0", "2097152", "many"] {
            assert!(
                tun_pair("20mbit", &format!("--stamp-slots {bad}")).is_err(),
                "--stamp-slots {bad}"
            );
        }
        assert_eq!(a.metrics, Some("127.0.0.1:9100".parse().unwrap()));
    }

    #[test]
    fn queue_disciplines() {
        use ka_router::qdisc::QdiscConfig;
        let a = tun_pair("20mbit", "").unwrap();
        let (f, r) = a.port_configs().unwrap();
        assert_eq!(
            (f.qdisc, r.qdisc),
            (QdiscConfig::DropTail, QdiscConfig::DropTail)
        );
        let a = tun_pair(
            "20mbit",
            "--qdisc fq-codel --codel-target 2ms --fq-flows 64 --ecn off \
             --qdisc-seed 7 --signal none",
        )
        .unwrap();
        let (f, r) = a.port_configs().unwrap();
        let QdiscConfig::FqCodel(c) = f.qdisc else {
            panic!("{:?}", f.qdisc)
        };
        assert_eq!(c.target, Duration::from_millis(2));
        assert_eq!(c.interval, Duration::from_millis(100));
        assert_eq!((c.flows, c.quantum, c.ecn), (64, 1514, false));
        assert_eq!(r.qdisc, f.qdisc, "the reverse direction mirrors --qdisc");
        assert_eq!(f.seed, 7);
        assert_ne!(r.seed, f.seed, "each direction its own hash secret");
        assert_eq!(f.signalling, Signalling::None);
        let a = tun_pair(
            "20mbit",
            "--qdisc red --red-min 100 --red-max 300 --red-max-p 0.2 \
             --reverse-qdisc droptail",
        )
        .unwrap();
        let (f, r) = a.port_configs().unwrap();
        let QdiscConfig::Red(c) = f.qdisc else {
            panic!("{:?}", f.qdisc)
        };
        assert_eq!(
            (c.min_th, c.max_th, c.max_p, c.ecn),
            (100.0, 300.0, 0.2, true)
        );
        assert_eq!(r.qdisc, QdiscConfig::DropTail);
        for bad in [
            &["--qdisc", "red", "--red-min", "800"][..],
            &["--qdisc", "red", "--red-max-p", "1.5"],
            &["--qdisc", "fq-codel", "--codel-interval", "0"],
        ] {
            let mut v = vec!["--in", "a", "--out", "b", "--rate", "1mbit"];
            v.extend_from_slice(bad);
            let err = parse(&v).unwrap().port_configs().unwrap_err().to_string();
            assert!(err.contains("--"), "{bad:?}: {err}");
        }
        for bad in [
            &["--qdisc", "fq_codel"][..],
            &["--fq-flows", "0"],
            &["--ecn", "maybe"],
        ] {
            let mut v = vec!["--in", "a", "--out", "b", "--rate", "1mbit"];
            v.extend_from_slice(bad);
            assert!(parse(&v).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn bridge_mode() {
        let a = parse(&[
            "--bridge",
            "eth1",
            "eth2",
            "--rate",
            "20mbit",
            "--stamp-log",
            "s.csv",
        ])
        .unwrap();
        let s = a.shell_config();
        assert_eq!(s.link, Link::Bridge);
        let (f, r) = a.port_configs().unwrap();
        assert!(
            !f.decrement_ttl && !r.decrement_ttl,
            "a bridge keeps the TTL"
        );
        let (f, _) = tun_pair("1mbit", "").unwrap().port_configs().unwrap();
        assert!(f.decrement_ttl, "a router decrements it");
        assert_eq!((s.in_dev.as_str(), s.out_dev.as_str()), ("eth1", "eth2"));
        assert_eq!(s.stamp_log, Some(PathBuf::from("s.csv")));
        // Exactly two interfaces, and not together with TUN devices.
        for bad in [
            &["--bridge", "eth1", "--rate", "1mbit"][..],
            &[
                "--bridge", "a", "b", "--in", "x", "--out", "y", "--rate", "1mbit",
            ],
            &["--bridge", "a", "b", "--tun-queue", "10", "--rate", "1mbit"],
            &["--in", "x", "--rate", "1mbit"],
            &["--rate", "1mbit"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn rejects_bad_units() {
        for bad in [
            &["--in", "a", "--out", "b", "--rate", "100MB/s"][..],
            &["--in", "a", "--out", "b", "--rate", "0"],
            &[
                "--in", "a", "--out", "b", "--rate", "1mbit", "--delay", "50",
            ],
            &["--in", "a", "--out", "b"],
            &[
                "--in",
                "a",
                "--out",
                "b",
                "--rate",
                "1mbit",
                "--ipv6-signal",
                "maybe",
            ],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        let a = tun_pair("1mbit", "--alpha=-1").unwrap();
        assert!(a.port_configs().is_err());
        let c = tun_pair("1mbit", "--controller crowd --crowd-caution=-1").unwrap();
        let e = c.port_configs().unwrap_err().to_string();
        assert!(e.contains("crowd caution"), "{e}");
        assert!(tun_pair("1mbit", "--controller xyz").is_err());
        let a = tun_pair("1mbit", "--xcp-gamma=nan").unwrap();
        assert!(a.port_configs().is_err());
    }

    #[test]
    fn xcp_signalling_and_knobs() {
        let a = tun_pair("100mbit", "--signal xcp").unwrap();
        let (f, r) = a.port_configs().unwrap();
        assert_eq!(
            (f.signalling, r.signalling),
            (Signalling::XCP, Signalling::XCP)
        );
        let Signalling::Xcp(x) = f.signalling else {
            panic!("{:?}", f.signalling);
        };
        assert_eq!(x, XcpConfig::default());
        assert_eq!((x.alpha, x.beta, x.gamma), (0.4, 0.226, 0.1));
        let a = tun_pair(
            "100mbit",
            "--signal xcp --xcp-alpha 0.1 --xcp-beta 1 --xcp-gamma 0.2",
        )
        .unwrap();
        let (f, _) = a.port_configs().unwrap();
        let Signalling::Xcp(x) = f.signalling else {
            panic!("{:?}", f.signalling);
        };
        assert_eq!((x.alpha, x.beta, x.gamma), (0.1, 1.0, 0.2));
    }
}

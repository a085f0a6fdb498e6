//! Port configuration (DESIGN §3): capacity, queue, delay and its
//! impairments, RTT default,
//! signalling (with the rate controller or XCP's knobs) and the knobs of
//! the RCP loop and the TCP-mode detector; [`RouterConfig`], the knobs all
//! ports of a router share.

use std::time::Duration;

use ka_codec::scale::Scale;

use crate::impair::ImpairConfig;
use crate::qdisc::QdiscConfig;

pub use crate::controller::ControllerKind;
pub use crate::controller::rcp::{QueueMeasure, RcpConfig, RcpUpdate};
pub use crate::error::ConfigError;
pub use crate::mode::ModeConfig;

/// Slots of a port's `--stamp-every` table by default
/// ([`PortConfig::stamp_slots`]; DESIGN §3.9): 4096.
pub const STAMP_SLOTS: usize = 4096;

/// Largest `--stamp-every` table a port builds (2²⁰ slots, 56 MiB).
pub const MAX_STAMP_SLOTS: usize = 1 << 20;

/// What carries a port's signal: [`Signalling`] without its knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Carrier {
    /// Kick-Ass fragments ([`Signalling::Ka`]).
    #[default]
    Ka,
    /// The native RCP IPv4 option ([`Signalling::NativeRcp`]).
    #[cfg_attr(feature = "serde", serde(rename = "rcp"))]
    NativeRcp,
    /// The XCP IPv4 option ([`Signalling::Xcp`]).
    Xcp,
    /// Nothing ([`Signalling::None`]).
    #[cfg_attr(feature = "serde", serde(alias = "droptail"))]
    None,
}

/// How a port tells senders its rate, with the knobs of what decides it.
/// Each carrier carries exactly the knobs it uses: the explicit-rate
/// carriers a [`ControllerKind`], XCP its own controller's
/// [`XcpConfig`], a plain port nothing.
///
/// Serialised (feature `serde`) as a table tagged by `kind`:
/// `{ kind = "ka", controller = "echo" }`, `{ kind = "rcp" }`,
/// `{ kind = "xcp", alpha = 0.4 }`, `{ kind = "none" }`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "kind", rename_all = "kebab-case")
)]
pub enum Signalling {
    /// Kick-Ass: fragment on dequeue so the leading fragment's payload
    /// length encodes the rate (DESIGN §3.4), which `controller` decides.
    /// The TCP-mode detector is active.
    Ka {
        /// The rate controller. Default [`ControllerKind::Rcp`].
        #[cfg_attr(feature = "serde", serde(default))]
        controller: ControllerKind,
    },
    /// Native RCP baseline: lower the rate field of the IPv4 RCP option
    /// (type 30, DESIGN §7.1) to the rate `controller` decides; never
    /// fragment. No TCP mode.
    #[cfg_attr(feature = "serde", serde(rename = "rcp"))]
    NativeRcp {
        /// The rate controller. Default [`ControllerKind::Rcp`].
        #[cfg_attr(feature = "serde", serde(default))]
        controller: ControllerKind,
    },
    /// XCP router (DESIGN §7.2): lower `H_feedback` of the IPv4 XCP option
    /// (type 94) to the window change the efficiency and fairness
    /// controllers allocate to the packet ([`crate::signal::XcpSignal`]);
    /// never fragment. No TCP mode.
    Xcp(XcpConfig),
    /// Plain port: shapes, delays and counts, never signals. (It still
    /// runs [`Rcp`](crate::Rcp) with the port's [`RcpConfig`], so its
    /// snapshot shows the rate RCP would signal.)
    None,
}

impl Default for Signalling {
    fn default() -> Self {
        Signalling::KA
    }
}

impl Signalling {
    /// Kick-Ass with the paper's RCP controller (the default).
    pub const KA: Signalling = Signalling::Ka {
        controller: ControllerKind::Rcp,
    };
    /// Native RCP with the paper's RCP controller.
    pub const NATIVE_RCP: Signalling = Signalling::NativeRcp {
        controller: ControllerKind::Rcp,
    };
    /// XCP with the default knobs.
    pub const XCP: Signalling = Signalling::Xcp(XcpConfig::DEFAULT);

    /// `carrier` with `controller` (explicit-rate carriers) or `xcp` (XCP):
    /// each gets what it uses.
    pub fn new(carrier: Carrier, controller: ControllerKind, xcp: XcpConfig) -> Self {
        match carrier {
            Carrier::Ka => Signalling::Ka { controller },
            Carrier::NativeRcp => Signalling::NativeRcp { controller },
            Carrier::Xcp => Signalling::Xcp(xcp),
            Carrier::None => Signalling::None,
        }
    }

    /// The carrier.
    pub fn carrier(&self) -> Carrier {
        match self {
            Signalling::Ka { .. } => Carrier::Ka,
            Signalling::NativeRcp { .. } => Carrier::NativeRcp,
            Signalling::Xcp(_) => Carrier::Xcp,
            Signalling::None => Carrier::None,
        }
    }

    /// The rate controller, for the explicit-rate carriers.
    pub fn controller(&self) -> Option<&ControllerKind> {
        match self {
            Signalling::Ka { controller } | Signalling::NativeRcp { controller } => {
                Some(controller)
            }
            Signalling::Xcp(_) | Signalling::None => None,
        }
    }
}

/// Knobs of the XCP controller (DESIGN §7.2; Katabi, Handley, Rohrs,
/// SIGCOMM 2002, §3.5): see [`crate::signal::xcp`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct XcpConfig {
    /// α, weight of the spare-bandwidth term of the efficiency controller
    /// `φ = α·d·(C − y) − β·Q`. Default 0.4.
    pub alpha: f64,
    /// β, weight of the persistent-queue term. Default 0.226.
    pub beta: f64,
    /// γ, the share of the traffic the fairness controller shuffles every
    /// control interval: `h = max(0, γ·y·d − |φ|)`. Default 0.1.
    pub gamma: f64,
}

impl XcpConfig {
    /// The defaults (the XCP paper's gains).
    pub const DEFAULT: XcpConfig = XcpConfig {
        alpha: 0.4,
        beta: 0.226,
        gamma: 0.1,
    };
}

impl Default for XcpConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How often an explicit-rate port (KA fragments, native RCP option)
/// signals to each flow (DESIGN §3.9, paper §V "Overhead Reduction").
///
/// Serialised (feature `serde`) and parsed ([`std::str::FromStr`], the
/// `ka-router --stamp-every` flag) as `"packet"`, `"rtt"` or a duration
/// with a unit (`"10ms"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StampEvery {
    /// Every packet that can carry a signal carries one (DESIGN §3.4; the
    /// paper's experiments). The default.
    #[default]
    Packet,
    /// A flow's packet is signalled only if the port has not signalled that
    /// flow within the flow's RTT: its own, as its RTT indicators (KA) or
    /// RCP options (native RCP) last announced it, rounded down; the port's
    /// average d until it has announced one. Some packets are always
    /// signalled (DESIGN §3.9).
    Rtt,
    /// As [`StampEvery::Rtt`] with a fixed interval instead of the RTT.
    Every(Duration),
}

impl StampEvery {
    /// Whether every packet is signalled (no per-flow table).
    pub fn is_packet(&self) -> bool {
        matches!(self, StampEvery::Packet)
    }
}

impl std::fmt::Display for StampEvery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StampEvery::Packet => f.write_str("packet"),
            StampEvery::Rtt => f.write_str("rtt"),
            StampEvery::Every(d) => {
                // The units `FromStr` reads back exactly.
                let ns = d.as_nanos();
                match [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
                    .into_iter()
                    .find(|(per, _)| ns != 0 && ns % per == 0)
                {
                    Some((per, unit)) => write!(f, "{}{unit}", ns / per),
                    None => write!(f, "{ns}ns"),
                }
            }
        }
    }
}

impl std::str::FromStr for StampEvery {
    type Err = String;

    /// `packet`, `rtt`, or a duration with a unit (`10ms`, `250us`, `1s`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "packet" => Ok(StampEvery::Packet),
            "rtt" => Ok(StampEvery::Rtt),
            d => ka_codec::units::parse_duration(d)
                .map(StampEvery::Every)
                .map_err(|e| {
                    format!("{s:?}: expected packet, rtt or a duration such as 10ms ({e})")
                }),
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for StampEvery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for StampEvery {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Configuration of one direction of the router.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortConfig {
    /// C in bit/s: the shaper's line rate and the controller's capacity.
    pub capacity_bps: u64,
    /// The queue discipline's hard limit in packets (drop-tail's queue
    /// length; RED's and FQ-CoDel's `limit`). Default 1000.
    pub queue_limit: usize,
    /// The queue discipline (DESIGN §3.1). Default drop-tail.
    pub qdisc: QdiscConfig,
    /// Seed of the queue discipline's randomness (RED's drop decisions,
    /// FQ-CoDel's hash perturbation). Default 0; the `ka-router` binary
    /// draws a random one, the simulator derives one from the scenario
    /// seed so runs repeat exactly.
    pub seed: u64,
    /// One-way propagation delay added after serialisation. Default 0.
    pub delay: Duration,
    /// The impairment stage in the delay line (loss, duplication,
    /// corruption, jitter around `delay`, reordering; DESIGN §3.10).
    /// Default [`ImpairConfig::OFF`]: no stage, no random draws.
    pub impair: ImpairConfig,
    /// d before the first RTT indicator arrives. Default 100 ms.
    pub initial_rtt: Duration,
    /// How the port signals its rate, and what decides it (the rate
    /// controller, or XCP's knobs). Default [`Signalling::KA`].
    pub signalling: Signalling,
    /// Stamp IPv6 packets (Fragment header insertion). Default true.
    pub ipv6_signal: bool,
    /// Dither the signal (KA only): stamp encode(R) or the next code up so
    /// that the rate senders pace at, averaged over packets, is R itself
    /// rather than R rounded down to a code (codes are 6.45 % apart).
    /// Default false (DESIGN §3.4: every packet carries encode(R)); the
    /// `ka-router` binary turns it on.
    ///
    /// **Deviation from DESIGN §3.4 when on.** A single flow otherwise
    /// alternates between the code below C (96 % of the link) and the one
    /// above, and RCP's loop spends most of its time below; dithered, the
    /// simulated single flow of 20 Mbit/s, 45 ms used 99.7 % of the link
    /// instead of 97.2 %. The next code is at most the port's ceiling code
    /// (see [`crate::Rcp`]), receivers echo every leading fragment, and a
    /// downstream KA router still only shrinks fragments, so the path
    /// minimum is unchanged.
    pub dither: bool,
    /// How often the KA and native-RCP carriers signal to each flow
    /// (DESIGN §3.9). Default [`StampEvery::Packet`]; unused by XCP and
    /// plain ports.
    pub stamp_every: StampEvery,
    /// Slots of the per-flow table behind `stamp_every` other than
    /// `packet` (rounded up to a power of two, 1 to
    /// [`MAX_STAMP_SLOTS`]); 56 bytes each,
    /// allocated once per port. Default
    /// [`STAMP_SLOTS`] (4096: 224 KiB). More
    /// active flows than slots only add signals (DESIGN §3.9).
    pub stamp_slots: usize,
    /// RCP's knobs: the loop of every rate controller, and how the port
    /// measures for it (T, d, q). Unused with [`Signalling::Xcp`].
    pub rcp: RcpConfig,
    /// TCP-mode detector knobs.
    pub mode: ModeConfig,
    /// Decrement IPv4 TTL / IPv6 hop limit once per packet, dropping packets
    /// that expire. Default true.
    pub decrement_ttl: bool,
    /// The rate ↔ length scale. Default [`Scale::PAPER`].
    pub scale: Scale,
    /// Whole packets too short to carry the wanted code saturate (carry the
    /// largest code below their payload) only from this payload size on;
    /// smaller ones stay untouched. Default
    /// [`crate::stamp::DEFAULT_SATURATE_MIN_PAYLOAD`] (1400); 0 = always
    /// saturate. See [`crate::stamp`].
    pub saturate_min_payload: usize,
}

impl PortConfig {
    /// All defaults with capacity C = `capacity_bps` bit/s.
    pub fn new(capacity_bps: u64) -> Self {
        Self {
            capacity_bps,
            queue_limit: 1000,
            qdisc: QdiscConfig::DropTail,
            seed: 0,
            delay: Duration::ZERO,
            impair: ImpairConfig::OFF,
            initial_rtt: Duration::from_millis(100),
            signalling: Signalling::KA,
            ipv6_signal: true,
            dither: false,
            stamp_every: StampEvery::Packet,
            stamp_slots: STAMP_SLOTS,
            rcp: RcpConfig::default(),
            mode: ModeConfig::default(),
            decrement_ttl: true,
            scale: Scale::PAPER,
            saturate_min_payload: crate::stamp::DEFAULT_SATURATE_MIN_PAYLOAD,
        }
    }

    /// C in bytes per millisecond (the controller's unit).
    pub fn capacity_bytes_per_ms(&self) -> f64 {
        self.capacity_bps as f64 / 8000.0
    }

    /// Checks the configuration for values that make no sense.
    ///
    /// [`crate::Port::new`] never fails: it clamps what this rejects
    /// (capacity to ≥ 1 bit/s, non-finite or negative knobs to their
    /// defaults, a zero RTT to 1 µs; an invalid scale means the port never
    /// stamps; the queue discipline's knobs as
    /// [`RedConfig::validate`](crate::qdisc::RedConfig::validate) and
    /// [`FqCodelConfig::validate`](crate::qdisc::FqCodelConfig::validate)
    /// describe). Front ends should call this first and report the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.capacity_bps == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        let finite_nonneg = |v: f64| v.is_finite() && v >= 0.0;
        let r = &self.rcp;
        let x = match &self.signalling {
            Signalling::Xcp(x) => *x,
            _ => XcpConfig::default(),
        };
        for (name, v) in [
            ("alpha", r.alpha),
            ("beta", r.beta),
            ("min_rate", r.min_rate),
            ("rtt_gain", r.rtt_gain),
            ("threshold_frac", self.mode.threshold_frac),
            ("foreign_frac", self.mode.foreign_frac),
            ("contend_rtts", self.mode.contend_rtts),
            ("xcp_alpha", x.alpha),
            ("xcp_beta", x.beta),
            ("xcp_gamma", x.gamma),
        ] {
            if !finite_nonneg(v) {
                return Err(ConfigError::BadValue(name));
            }
        }
        if !(r.initial_frac.is_finite() && r.initial_frac > 0.0 && r.initial_frac <= 1.0) {
            return Err(ConfigError::BadValue("initial_frac"));
        }
        if r.rtt_gain > 1.0 {
            return Err(ConfigError::BadValue("rtt_gain"));
        }
        if self.mode.foreign_frac > 1.0 {
            return Err(ConfigError::BadValue("foreign_frac"));
        }
        if r.max_interval.is_zero() {
            return Err(ConfigError::BadValue("max_interval"));
        }
        if self.initial_rtt.is_zero() {
            return Err(ConfigError::BadValue("initial_rtt"));
        }
        if self.stamp_every == StampEvery::Every(Duration::ZERO) {
            return Err(ConfigError::BadValue("stamp_every"));
        }
        if !(1..=MAX_STAMP_SLOTS).contains(&self.stamp_slots) {
            return Err(ConfigError::BadValue("stamp_slots"));
        }
        if self.scale.validate().is_err() {
            return Err(ConfigError::BadScale);
        }
        if let Some(c) = self.signalling.controller() {
            c.validate().map_err(ConfigError::BadValue)?;
        }
        self.impair.validate(self.delay)?;
        self.qdisc.validate()
    }

    /// The configuration with every out-of-range value clamped (see
    /// [`PortConfig::validate`]).
    pub(crate) fn sanitized(mut self) -> Self {
        let def = RcpConfig::default();
        self.capacity_bps = self.capacity_bps.max(1);
        let fix = |v: f64, d: f64| if v.is_finite() && v >= 0.0 { v } else { d };
        self.rcp.alpha = fix(self.rcp.alpha, def.alpha);
        self.rcp.beta = fix(self.rcp.beta, def.beta);
        self.rcp.min_rate = fix(self.rcp.min_rate, def.min_rate);
        self.rcp.rtt_gain = fix(self.rcp.rtt_gain, def.rtt_gain).min(1.0);
        if !(self.rcp.initial_frac.is_finite()
            && self.rcp.initial_frac > 0.0
            && self.rcp.initial_frac <= 1.0)
        {
            self.rcp.initial_frac = def.initial_frac;
        }
        if self.rcp.max_interval.is_zero() {
            self.rcp.max_interval = def.max_interval;
        }
        if let Signalling::Xcp(x) = &mut self.signalling {
            let xd = XcpConfig::default();
            x.alpha = fix(x.alpha, xd.alpha);
            x.beta = fix(x.beta, xd.beta);
            x.gamma = fix(x.gamma, xd.gamma);
        }
        self.mode.threshold_frac = fix(self.mode.threshold_frac, 0.5);
        self.mode.foreign_frac = fix(self.mode.foreign_frac, 0.1).min(1.0);
        self.mode.contend_rtts = fix(self.mode.contend_rtts, 8.0);
        if self.initial_rtt.is_zero() {
            self.initial_rtt = Duration::from_micros(1);
        }
        if self.stamp_every == StampEvery::Every(Duration::ZERO) {
            self.stamp_every = StampEvery::Packet;
        }
        self.stamp_slots = self.stamp_slots.clamp(1, MAX_STAMP_SLOTS);
        self.impair = self.impair.sanitized(self.delay);
        self
    }
}

/// The knobs every port of a router shares: which controller its
/// explicit-rate ports run, the RCP loop's, XCP's and the TCP-mode
/// detector's knobs. A port's link (capacity, queue, delay) and carrier
/// come from where it sits: [`RouterConfig::port`].
///
/// This is the `[router]` table of a ka-sim scenario and the file
/// `ka-router --config` reads (feature `serde`; every key optional):
///
/// ```toml
/// controller = { kind = "crowd", caution = 2.5 }   # or "rcp", "echo"
/// initial_rtt = "100ms"
/// dither = true
/// stamp_every = "rtt"                              # or "packet", "10ms"
/// stamp_slots = 65536                              # per-flow table (default 4096)
/// rcp = { alpha = 0.1, beta = 1.0, queue_measure = "persistent", queue_target = "5ms" }
/// xcp = { alpha = 0.4, beta = 0.226, gamma = 0.1 }
/// mode = { threshold_frac = 0.5, hold = "50ms" }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct RouterConfig {
    /// The rate controller of the KA and native-RCP ports. Default
    /// [`ControllerKind::Rcp`].
    pub controller: ControllerKind,
    /// RCP's knobs ([`PortConfig::rcp`]).
    pub rcp: RcpConfig,
    /// XCP's knobs, for XCP ports.
    pub xcp: XcpConfig,
    /// The TCP-mode detector's knobs ([`PortConfig::mode`]).
    pub mode: ModeConfig,
    /// d before the first RTT indicator ([`PortConfig::initial_rtt`]).
    /// Default 100 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub initial_rtt: Duration,
    /// Dither the KA signal ([`PortConfig::dither`]). Default false.
    pub dither: bool,
    /// How often KA and native-RCP ports signal to each flow
    /// ([`PortConfig::stamp_every`]): `"packet"` (default), `"rtt"` or a
    /// duration (`"10ms"`). Left out of the written form while it is the
    /// default, so scenarios written before it existed read and write back
    /// unchanged.
    #[cfg_attr(
        feature = "serde",
        serde(skip_serializing_if = "StampEvery::is_packet")
    )]
    pub stamp_every: StampEvery,
    /// Slots of the per-flow stamping table ([`PortConfig::stamp_slots`]):
    /// default 4096, at most 2²⁰. Left out of the written form while it is
    /// the default.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "is_default_slots"))]
    pub stamp_slots: usize,
}

#[cfg(feature = "serde")]
fn is_default_slots(n: &usize) -> bool {
    *n == STAMP_SLOTS
}

impl Default for RouterConfig {
    fn default() -> Self {
        let p = PortConfig::new(1);
        Self {
            controller: ControllerKind::Rcp,
            rcp: p.rcp,
            xcp: XcpConfig::default(),
            mode: p.mode,
            initial_rtt: p.initial_rtt,
            dither: p.dither,
            stamp_every: p.stamp_every,
            stamp_slots: p.stamp_slots,
        }
    }
}

impl RouterConfig {
    /// The signalling of a port with `carrier`: the controller for KA and
    /// native RCP, the XCP knobs for XCP.
    pub fn signalling(&self, carrier: Carrier) -> Signalling {
        Signalling::new(carrier, self.controller, self.xcp)
    }

    /// A port with `carrier` on a link of `capacity_bps` bit/s: these knobs,
    /// [`PortConfig::new`]'s defaults for the rest (the link's queue,
    /// delay and discipline are the caller's to set).
    pub fn port(&self, carrier: Carrier, capacity_bps: u64) -> PortConfig {
        let mut c = PortConfig::new(capacity_bps);
        c.signalling = self.signalling(carrier);
        c.rcp = self.rcp;
        c.mode = self.mode;
        c.initial_rtt = self.initial_rtt;
        c.dither = self.dither;
        c.stamp_every = self.stamp_every;
        c.stamp_slots = self.stamp_slots;
        c
    }

    /// Checks the knobs as [`PortConfig::validate`] would for any port.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut c = self.port(Carrier::Ka, 1);
        c.validate()?;
        c.signalling = self.signalling(Carrier::Xcp);
        c.validate()
    }
}

/// A router's configuration file (the `ka-router --config` file): the
/// knobs every port shares, and optionally both directions' queue
/// discipline and receive-window modulation. The testbed writes one from a
/// ka-sim scenario (its `[router]` table, the bottleneck's `queue` and
/// `rwm`), so the real router runs what the simulator ran.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct RouterFile {
    /// The router's knobs.
    pub router: RouterConfig,
    /// Both directions' queue discipline (`None`: the front end's).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub qdisc: Option<QdiscConfig>,
    /// Receive-window modulation (`None`: the front end's).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub rwm: Option<crate::rwm::RwmConfig>,
    /// The impairment stage of both directions, or of the forward one if
    /// `reverse_impair` is set (`None`: the front end's).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub impair: Option<ImpairConfig>,
    /// The reverse direction's impairment stage (`None`: as `impair`).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub reverse_impair: Option<ImpairConfig>,
}

pub use ka_codec::units::percent_or_number;

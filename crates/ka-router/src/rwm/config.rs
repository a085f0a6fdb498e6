//! RWM configuration: capacities, traffic classes, δ and the flow-table
//! bounds.

use std::time::Duration;

/// Which way a packet travels through the router: the two ports of one
/// box. `Forward` is the binary's `--in → --out` port, `Reverse` the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Through the forward port (`--in → --out`).
    Forward,
    /// Through the reverse port (`--out → --in`).
    Reverse,
}

impl Side {
    /// Both sides, `Forward` first (the order of every `[_; 2]` here).
    pub const ALL: [Side; 2] = [Side::Forward, Side::Reverse];

    /// 0 for `Forward`, 1 for `Reverse`.
    pub const fn index(self) -> usize {
        match self {
            Side::Forward => 0,
            Side::Reverse => 1,
        }
    }

    /// The opposite direction.
    pub const fn other(self) -> Side {
        match self {
            Side::Forward => Side::Reverse,
            Side::Reverse => Side::Forward,
        }
    }
}

/// A traffic class: the flows whose responder port (the SYN's
/// destination port) is one of `ports` share `share` of the capacity.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct RwmClass {
    /// Name (for logs and metrics).
    pub name: String,
    /// Responder ports that select the class.
    pub ports: Vec<u16>,
    /// P_j: the class's fraction of the capacity, in (0, 1].
    pub share: f64,
}

/// Most classes (besides the default one) an [`RwmConfig`] may have.
pub const MAX_CLASSES: usize = 64;

/// Default cap on established flows tracked ([`RwmConfig::max_flows`]).
pub const DEFAULT_MAX_FLOWS: usize = 65_536;

/// Default cap on half-open handshakes tracked
/// ([`RwmConfig::max_half_open`]).
pub const DEFAULT_MAX_HALF_OPEN: usize = 4_096;

/// Configuration of an [`Rwm`](super::Rwm) stage.
///
/// Serialised (feature `serde`; every key optional) as e.g.
/// `{ classes = [{ name = "web", ports = [80, 443], share = 0.6 }],
/// delta = -0.1, capacity = "900mbit" }`; an absent capacity (0) and
/// half-open cap (0) are filled in by [`RwmConfig::for_ports`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct RwmConfig {
    /// C per direction of *data*, bit/s, indexed by [`Side::index`]: the
    /// window in a segment travelling one way limits the data travelling
    /// the other way, so a segment on side `s` is capped with
    /// `capacity_bps[s.other()]`. The binary uses `--rwm-capacity`, or each
    /// port's own `--rate`. 0 (the serialised form's default): the port's
    /// rate, see [`RwmConfig::for_ports`]. Serialised as `capacity`, one
    /// rate or a pair.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "capacity", with = "crate::serde_units::rate_pair")
    )]
    pub capacity_bps: [u64; 2],
    /// Traffic classes by port, matched in order (first match wins).
    pub classes: Vec<RwmClass>,
    /// P of the default class (flows no class matches). `None`: what the
    /// classes leave, `1 − Σ P_j`. A share of 0 leaves the class's flows
    /// untouched (tracked, never rewritten).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub default_share: Option<f64>,
    /// δ: every cap is multiplied by `1 + δ` (the seed's ±10 % runs are
    /// δ = ±0.1). In (−1, 10].
    pub delta: f64,
    /// Established flows tracked at most (default [`DEFAULT_MAX_FLOWS`]).
    pub max_flows: usize,
    /// Handshakes in progress tracked at most, in their own table and LRU
    /// so a SYN flood only ever evicts other half-open entries (default
    /// [`DEFAULT_MAX_HALF_OPEN`]; 0 in the serialised form's default:
    /// derived from `max_flows` by [`RwmConfig::for_ports`]).
    pub max_half_open: usize,
    /// A flow counts towards its class's n_j while it has sent a segment
    /// (either way) within this window. Default 1 s.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub active_window: Duration,
    /// A flow with no segment for this long is forgotten (default 300 s;
    /// raised to at least `active_window`).
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub idle_timeout: Duration,
    /// A handshake not completed within this long is forgotten (default
    /// 75 s, the time Linux takes to give up after its SYN retries).
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub handshake_timeout: Duration,
    /// The cap never goes below this many of the receiver's MSS (default
    /// 2), so a tiny BDP (a LAN RTT, many flows) slows a flow down instead
    /// of stalling it on a window smaller than a segment.
    pub min_window_segments: u32,
}

/// The serialised form's defaults: [`RwmConfig::new`] with the capacities
/// and the half-open cap left to [`RwmConfig::for_ports`].
impl Default for RwmConfig {
    fn default() -> Self {
        Self {
            max_half_open: 0,
            ..Self::new(0)
        }
    }
}

impl RwmConfig {
    /// One default class with the whole `capacity_bps` in both
    /// directions, δ = 0, the default bounds.
    pub fn new(capacity_bps: u64) -> Self {
        Self {
            capacity_bps: [capacity_bps; 2],
            classes: Vec::new(),
            default_share: None,
            delta: 0.0,
            max_flows: DEFAULT_MAX_FLOWS,
            max_half_open: DEFAULT_MAX_HALF_OPEN,
            active_window: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(300),
            handshake_timeout: Duration::from_secs(75),
            min_window_segments: 2,
        }
    }

    /// This configuration on a router whose ports run at `forward_bps` and
    /// `reverse_bps`: a capacity of 0 becomes the port's own rate, a
    /// `max_half_open` of 0 a sixteenth of `max_flows` (at least 64; the
    /// default's 4096 for the default 65 536 flows).
    pub fn for_ports(mut self, forward_bps: u64, reverse_bps: u64) -> Self {
        for (c, port) in self.capacity_bps.iter_mut().zip([forward_bps, reverse_bps]) {
            if *c == 0 {
                *c = port;
            }
        }
        if self.max_half_open == 0 {
            self.max_half_open = (self.max_flows / 16).max(64);
        }
        self
    }

    /// The default class's share: [`RwmConfig::default_share`] or
    /// `max(0, 1 − Σ P_j)`.
    pub fn default_class_share(&self) -> f64 {
        self.default_share
            .unwrap_or_else(|| (1.0 - self.classes.iter().map(|c| c.share).sum::<f64>()).max(0.0))
    }

    /// Most positions the flow table ever allocates: ⌈(max_flows +
    /// max_half_open) / 3⌉ buckets of four, so a full table is at most
    /// 3/4 occupied (see [`Rwm::allocated_entries`](super::Rwm::allocated_entries)).
    /// Each position is 64 bytes (16 in the index, 48 of cold state).
    pub fn max_table_entries(&self) -> usize {
        super::table::max_buckets(self.max_flows.saturating_add(self.max_half_open))
            * super::buckets::WAYS
    }

    /// Checks every value; the error names the bad one.
    pub fn validate(&self) -> Result<(), RwmConfigError> {
        if self.capacity_bps.contains(&0) {
            return Err(RwmConfigError::ZeroCapacity);
        }
        if self.classes.len() > MAX_CLASSES {
            return Err(RwmConfigError::TooManyClasses);
        }
        let share_ok = |s: f64| s.is_finite() && s > 0.0 && s <= 1.0;
        for c in &self.classes {
            if !share_ok(c.share) {
                return Err(RwmConfigError::BadShare(c.name.clone()));
            }
            if c.ports.is_empty() {
                return Err(RwmConfigError::NoPorts(c.name.clone()));
            }
        }
        let sum: f64 = self.classes.iter().map(|c| c.share).sum();
        let total = sum + self.default_share.unwrap_or(0.0);
        if total > 1.0 + 1e-9 {
            return Err(RwmConfigError::Oversubscribed(total));
        }
        if let Some(d) = self.default_share
            && !(d.is_finite() && (0.0..=1.0).contains(&d))
        {
            return Err(RwmConfigError::BadShare("default".into()));
        }
        if !(self.delta.is_finite() && self.delta > -1.0 && self.delta <= 10.0) {
            return Err(RwmConfigError::BadDelta(self.delta));
        }
        if self.max_flows == 0 || self.max_half_open == 0 {
            return Err(RwmConfigError::ZeroCap);
        }
        if self.max_flows.saturating_add(self.max_half_open) > u32::MAX as usize / 2 {
            return Err(RwmConfigError::CapTooLarge);
        }
        if self.active_window.is_zero() {
            return Err(RwmConfigError::ZeroActiveWindow);
        }
        Ok(())
    }
}

/// Why an [`RwmConfig`] was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RwmConfigError {
    /// A capacity is zero.
    #[error("RWM capacity must be above 0")]
    ZeroCapacity,
    /// More than [`MAX_CLASSES`] classes.
    #[error("at most {MAX_CLASSES} RWM classes")]
    TooManyClasses,
    /// A share outside (0, 1] (the default class: [0, 1]).
    #[error("RWM class `{0}`: the share must be in (0, 100 %]")]
    BadShare(String),
    /// A class without ports.
    #[error("RWM class `{0}` names no port")]
    NoPorts(String),
    /// The shares add up to more than the capacity.
    #[error("RWM class shares add up to {:.1} % (more than 100 %)", .0 * 100.0)]
    Oversubscribed(f64),
    /// δ outside (−1, 10].
    #[error("RWM delta {0} is outside (-100 %, 1000 %]")]
    BadDelta(f64),
    /// A flow-table cap of zero.
    #[error("RWM flow-table caps must be above 0")]
    ZeroCap,
    /// Caps too large to index.
    #[error("RWM flow-table caps too large")]
    CapTooLarge,
    /// `active_window` is zero.
    #[error("RWM active window must be above 0")]
    ZeroActiveWindow,
}

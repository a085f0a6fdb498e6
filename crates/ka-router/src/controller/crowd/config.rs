//! The knobs and counters of [`Crowd`](super::Crowd).

use std::time::Duration;

/// Knobs of [`Crowd`](super::Crowd).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct CrowdConfig {
    /// Safety factor on the learned occupancy of a newcomer: the weight of
    /// a newcomer of unknown size is `min(1, caution · u)`
    /// (`docs/controllers.md`, Crowd, "Design"). Larger: a shorter queue and
    /// slower first round trips. Default [`DEFAULT_CAUTION`].
    pub caution: f64,
    /// The queue that newcomers which find no room may build, as time at
    /// C (`docs/controllers.md`, Crowd, "Design", *floor*). Default 8 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_units::duration"))]
    pub floor_budget: Duration,
    /// Connections followed at most. Default [`DEFAULT_MAX_FLOWS`].
    pub max_flows: usize,
}

impl Default for CrowdConfig {
    fn default() -> Self {
        Self {
            caution: DEFAULT_CAUTION,
            floor_budget: Duration::from_millis(8),
            max_flows: DEFAULT_MAX_FLOWS,
        }
    }
}

impl CrowdConfig {
    /// Checks the knobs: `caution` finite and ≥ 0, `max_flows` ≥ 1.
    pub fn validate(&self) -> Result<(), &'static str> {
        if !(self.caution.is_finite() && self.caution >= 0.0) {
            return Err("crowd caution");
        }
        if self.max_flows == 0 {
            return Err("crowd max_flows");
        }
        Ok(())
    }
}

/// Default [`CrowdConfig::caution`]: the point of the light-load trade-off
/// that keeps Fig. 3's queue within the `fig3-crowd` bound
/// (`docs/controllers.md`, Crowd, "Light load: the trade-off").
pub const DEFAULT_CAUTION: f64 = 4.0;

/// Default [`CrowdConfig::max_flows`].
pub const DEFAULT_MAX_FLOWS: usize = 4096;

/// Counters of a [`Crowd`](super::Crowd) controller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CrowdStats {
    /// Grants made.
    pub grants: u64,
    /// Grants that were the floor.
    pub floor_grants: u64,
    /// Connections adopted without a SYN.
    pub adopted: u64,
    /// Connections not followed because the table was full.
    pub overflow: u64,
}

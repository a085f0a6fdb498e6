//! Bounds on what a scenario file can make the simulator allocate or run,
//! checked before anything is built: a typo (`count = 1000000000`,
//! `duration_s = 1e15`) is an error that says what it costs, not a process
//! that allocates until the kernel kills it.
//!
//! | bound | value | why |
//! |---|---|---|
//! | [`MAX_DURATION_S`] | 10⁷ s (≈ 116 days) | far beyond any experiment; simulated time is `u64` nanoseconds (≈ 584 years), so larger values would be clamped silently |
//! | [`MAX_HOSTS`] | 10⁶ hosts in all groups | each host is a full endpoint stack |
//! | memory estimate | [`HOST_BYTES`] per host + [`BASE_BYTES`] | refused when above the machine's `MemAvailable` ([`check_memory`]) |
//!
//! The per-host figure is a deliberately high estimate: 2000 on-off KA
//! hosts on a 1 Gbit/s dumbbell peaked at ≈ 197 KB per host lightly loaded
//! and ≈ 650 KB overloaded (`docs/PERFORMANCE.md`); 256 KiB sits between.

use super::{Scenario, ScenarioError};

/// The longest simulated time a scenario may ask for, seconds.
pub const MAX_DURATION_S: f64 = 1e7;
/// The most sender hosts a scenario may have (over all groups).
pub const MAX_HOSTS: usize = 1_000_000;
/// Estimated memory per sender host (its stack, connections, buffers and
/// its receiver's), bytes.
pub const HOST_BYTES: u64 = 256 * 1024;
/// Estimated memory of everything else (engine, routers, series), bytes.
pub const BASE_BYTES: u64 = 64 * 1024 * 1024;

impl Scenario {
    /// Sender hosts over all groups (saturating).
    pub fn hosts(&self) -> usize {
        self.groups
            .iter()
            .fold(0usize, |n, g| n.saturating_add(g.count))
    }

    /// A rough upper estimate of the run's peak memory, bytes
    /// ([`HOST_BYTES`] per host plus [`BASE_BYTES`]).
    pub fn estimated_bytes(&self) -> u64 {
        (self.hosts() as u64)
            .saturating_mul(HOST_BYTES)
            .saturating_add(BASE_BYTES)
    }

    /// The hard bounds of this module (part of [`Scenario::validate`]).
    pub(super) fn check_limits(&self) -> Result<(), ScenarioError> {
        if self.duration_s > MAX_DURATION_S {
            return Err(ScenarioError::Invalid(format!(
                "duration_s = {} is above the maximum of {MAX_DURATION_S} s",
                self.duration_s
            )));
        }
        let hosts = self.hosts();
        if hosts > MAX_HOSTS {
            return Err(ScenarioError::Invalid(format!(
                "{hosts} hosts in all groups is above the maximum of {MAX_HOSTS}"
            )));
        }
        Ok(())
    }
}

/// Refuses a scenario whose [`Scenario::estimated_bytes`] exceeds
/// `available` bytes (`None`: not known, nothing refused).
pub fn check_memory(s: &Scenario, available: Option<u64>) -> Result<(), ScenarioError> {
    let need = s.estimated_bytes();
    match available {
        Some(have) if need > have => Err(ScenarioError::Memory {
            hosts: s.hosts(),
            estimate_mib: need >> 20,
            available_mib: have >> 20,
        }),
        _ => Ok(()),
    }
}

/// `MemAvailable` from `/proc/meminfo`, bytes (`None` where there is no
/// such file or line).
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

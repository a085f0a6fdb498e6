//! The configuration error every stage's `validate` returns (a leaf
//! module: configs of every stage use it, it uses none of them).

/// A configuration value [`PortConfig::validate`](crate::PortConfig::validate) rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `capacity_bps` is zero.
    #[error("capacity must be positive")]
    ZeroCapacity,
    /// The named knob is out of range (negative, non-finite, zero where a
    /// positive value is needed, or a fraction above 1).
    #[error("bad value for `{0}`")]
    BadValue(&'static str),
    /// The rate scale is invalid (a port with it would never signal).
    #[error("invalid rate scale")]
    BadScale,
    /// The named impairment probability is not a finite number in [0, 1].
    #[error("impairment `{0}` must be a probability between 0 and 1")]
    BadProbability(&'static str),
    /// The impairment's jitter exceeds the port's delay (each delay is
    /// drawn from delay ± jitter and cannot be negative).
    #[error("the jitter must not exceed the delay (delays are drawn from delay ± jitter)")]
    JitterAboveDelay,
    /// Reordering asked for on a port without a delay (a reordered packet
    /// skips the delay, so there would be nothing to overtake).
    #[error("reordering needs a delay (a reordered packet skips it)")]
    ReorderWithoutDelay,
}

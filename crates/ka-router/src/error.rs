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
}

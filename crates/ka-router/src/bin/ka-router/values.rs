//! Value parsers and small value types the ka-router flags share (rates,
//! durations, bounded queue and delay, on/off), apart from the argument
//! structs so every `*_args` module can use them.

use std::time::Duration;

use clap::ValueEnum;
use ka_codec::units::{parse_duration, parse_rate};

/// `on` / `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

pub(crate) fn rate(s: &str) -> Result<u64, String> {
    match parse_rate(s) {
        Ok(0) => Err("the rate must be above 0".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(format!("{e} (try e.g. 100mbit, 1.5gbit, 500kbit)")),
    }
}

pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| format!("{e} (try e.g. 50ms, 250us, 1s)"))
}

/// The longest `--delay` and `--jitter`: the delay line holds every packet
/// the link sends in that time (10 s at 10 Gbit/s is 12.5 GB).
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(10);

/// The largest `--queue`, in packets (at 1500 bytes, 150 MB per direction).
pub(crate) const MAX_QUEUE: usize = 100_000;

/// A duration of at most [`MAX_DELAY`] (`--delay`, `--jitter`).
pub(crate) fn bounded_duration(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d > MAX_DELAY {
        return Err(format!("at most {}s", MAX_DELAY.as_secs()));
    }
    Ok(d)
}

/// `--queue`: 1 to [`MAX_QUEUE`] packets.
pub(crate) fn queue_limit(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a number of packets"))?;
    match n {
        0 => Err("the queue must hold at least 1 packet (0 would drop every packet)".into()),
        n if n > MAX_QUEUE => Err(format!("at most {MAX_QUEUE} packets")),
        n => Ok(n),
    }
}

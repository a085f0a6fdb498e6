//! What a host's TCP and UDP senders and receivers share: the receivers'
//! port and the on/off epochs of long-lived senders.

use crate::engine::{SimTime, secs};
use crate::scenario::Workload;

/// The port every receiver listens on.
pub const RECEIVER_PORT: u16 = 5001;

/// The (start, stop) epochs of sender `index` of a long-lived group: the
/// first starts at `start_s + index · stagger_s`, each of `repeat` epochs
/// `period_s` after the last, each lasting `on_s` (`None`: to the end).
/// Empty for any other workload. TCP and UDP senders share it.
pub(crate) fn long_lived_epochs(
    workload: &Workload,
    index: usize,
) -> Vec<(SimTime, Option<SimTime>)> {
    let Workload::LongLived {
        start_s,
        stagger_s,
        on_s,
        period_s,
        repeat,
        size_pkts: _,
    } = *workload
    else {
        return Vec::new();
    };
    let first = start_s + stagger_s * index as f64;
    (0..repeat)
        .map(|r| {
            let st = first + period_s.unwrap_or(0.0) * f64::from(r);
            (secs(st), on_s.map(|on| secs(st + on)))
        })
        .collect()
}

//! What both undos (`conn::ka_undo`, `conn::cc_undo`) check: has every byte
//! retransmitted since a moment been reported back as a duplicate?

use super::Connection;

/// The retransmitted and DSACKed byte counts at one moment (a loss
/// reaction that may later prove spurious).
#[derive(Debug, Clone, Copy)]
pub(super) struct DsackMark {
    /// `stats.bytes_retransmitted` then.
    retransmitted: u64,
    /// `stats.spurious_bytes` (bytes DSACKed) then.
    dsacked: u64,
}

impl Connection {
    /// The counts now.
    pub(super) fn dsack_mark(&self) -> DsackMark {
        DsackMark {
            retransmitted: self.stats.bytes_retransmitted,
            dsacked: self.stats.spurious_bytes,
        }
    }

    /// Whether every segment marked lost since `mark` has turned out
    /// delivered (RFC 3708): none is marked lost now, and the bytes
    /// DSACKed since cover the bytes retransmitted since — bytes, not
    /// segments, since one DSACK block may cover several.
    pub(super) fn all_dsacked_since(&self, mark: DsackMark) -> bool {
        let sent = self
            .stats
            .bytes_retransmitted
            .saturating_sub(mark.retransmitted);
        let dup = self.stats.spurious_bytes.saturating_sub(mark.dsacked);
        dup >= sent && self.sb.next_lost().is_none()
    }
}

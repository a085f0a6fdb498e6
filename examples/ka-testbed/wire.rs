//! What travels between the runner and its host processes: the header at
//! the start of every flow's bytes, and the JSON records the hosts print.
//!
//! Every flow starts with a 32-byte header (`KATB`, sender, sequence
//! number, 4 reserved bytes, size in bytes, start time) followed by filler
//! up to the flow's size, so the receiver knows whose flow it reads, when
//! it will be complete, and when the sender's application opened it: the
//! receiver measures the FCT itself (end − start, both on this host's wall
//! clock, which every namespace shares). The header counts towards the
//! size, which is never below one packet (1448 bytes).

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Length of the flow header.
pub const HEADER_LEN: usize = 32;
/// First bytes of every flow.
pub const MAGIC: [u8; 4] = *b"KATB";

/// The flow header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Sender index (0-based, as in the scenario's group).
    pub sender: u32,
    /// Flow number at that sender.
    pub seq: u32,
    /// Flow size in bytes, header included.
    pub size: u64,
    /// When the sender's application opened the connection, ns since the
    /// Unix epoch.
    pub start_ns: u64,
}

impl Header {
    /// The 32 header bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4..8].copy_from_slice(&self.sender.to_be_bytes());
        b[8..12].copy_from_slice(&self.seq.to_be_bytes());
        b[16..24].copy_from_slice(&self.size.to_be_bytes());
        b[24..32].copy_from_slice(&self.start_ns.to_be_bytes());
        b
    }

    /// Parses the first [`HEADER_LEN`] bytes a receiver read (they come
    /// from the network: anything else is an error, never a panic).
    pub fn decode(b: &[u8]) -> Result<Header, String> {
        let field = |r: std::ops::Range<usize>| -> Result<&[u8], String> {
            b.get(r)
                .ok_or_else(|| format!("short header ({} bytes)", b.len()))
        };
        if field(0..4)? != MAGIC {
            return Err("not a ka-testbed flow (bad magic)".into());
        }
        let u32_at = |r| -> Result<u32, String> {
            Ok(u32::from_be_bytes(
                field(r)?.try_into().map_err(|_| "header field")?,
            ))
        };
        let u64_at = |r| -> Result<u64, String> {
            Ok(u64::from_be_bytes(
                field(r)?.try_into().map_err(|_| "header field")?,
            ))
        };
        let h = Header {
            sender: u32_at(4..8)?,
            seq: u32_at(8..12)?,
            size: u64_at(16..24)?,
            start_ns: u64_at(24..32)?,
        };
        if h.size < HEADER_LEN as u64 {
            return Err(format!("flow size {} below the header's", h.size));
        }
        Ok(h)
    }
}

/// One line a host process prints (JSON, one object per line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "kebab-case")]
pub enum Record {
    /// The receiver accepts connections.
    Listening,
    /// The sender side: a flow starts (the application opens it).
    Start {
        /// Sender index.
        sender: u32,
        /// Flow number at that sender.
        seq: u32,
        /// Size in packets (the scenario's unit).
        size_pkts: u64,
        /// Size in bytes.
        size_bytes: u64,
        /// Start, ns since the epoch.
        start_ns: u64,
    },
    /// The sender side: a flow is over (all data and the FIN acknowledged,
    /// or failed).
    Done {
        /// Sender index.
        sender: u32,
        /// Flow number.
        seq: u32,
        /// When the sender was done, ns since the epoch.
        stop_ns: u64,
        /// Seconds in KA mode (KA endpoints).
        ka_time_s: Option<f64>,
        /// Whether it completed.
        ok: bool,
        /// Why not.
        error: Option<String>,
    },
    /// The receiver side: all of a flow's bytes have been read.
    End {
        /// Sender index.
        sender: u32,
        /// Flow number.
        seq: u32,
        /// Bytes read (= the header's size).
        size_bytes: u64,
        /// Start from the header, ns since the epoch.
        start_ns: u64,
        /// When the last byte was read, ns since the epoch.
        end_ns: u64,
        /// Tracked flows: `(bin index since t0, bytes read)`, bins with data.
        bins: Vec<(u64, u64)>,
    },
    /// The receiver side: a connection ended before its flow was complete.
    Broken {
        /// Sender index and flow number, if the header arrived.
        flow: Option<(u32, u32)>,
        /// Bytes read.
        bytes: u64,
        /// What happened.
        error: String,
    },
}

impl Record {
    /// Prints the record as one line on stdout (locked and flushed, so
    /// records of concurrent flows never interleave).
    pub fn emit(&self) {
        let line = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"ev\":\"?\",\"e\":\"{e}\"}}"));
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// Now, ns since the Unix epoch.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_rejects() {
        let h = Header {
            sender: 7,
            seq: 1234,
            size: 1_000_000,
            start_ns: 1_700_000_000_123_456_789,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b), Ok(h));
        assert!(Header::decode(&b[..31]).is_err());
        let mut bad = b;
        bad[0] = b'X';
        assert!(Header::decode(&bad).unwrap_err().contains("magic"));
        let small = Header { size: 31, ..h }.encode();
        assert!(Header::decode(&small).is_err());
    }

    #[test]
    fn records_are_one_json_object_per_line() {
        let r = Record::End {
            sender: 1,
            seq: 2,
            size_bytes: 1448,
            start_ns: 5,
            end_ns: 9,
            bins: vec![(3, 1448)],
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(!s.contains('\n'));
        assert!(s.starts_with("{\"ev\":\"end\""), "{s}");
        assert_eq!(serde_json::from_str::<Record>(&s).unwrap(), r);
    }
}

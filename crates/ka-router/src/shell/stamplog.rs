//! The router's own record of the KA signals it sent (`--stamp-log FILE`).
//!
//! Every leading fragment the shell writes — IPv4 with offset 0 and MF set,
//! IPv6 with a Fragment header of offset 0 and M set — is one CSV line:
//!
//! ```text
//! time_unix_ns,direction,version,src,dst,ident,len,code,rate_bps
//! 1718000000123456789,forward,4,10.77.0.1,10.77.0.2,48213,496,62,4962.312
//! ```
//!
//! `time_unix_ns` is the wall-clock time of the write (the same instant the
//! pcap record of that packet carries, `--pcap`); `ident` the IPv4
//! identification or IPv6 fragment identification; `len` the leading
//! payload L; `code` = L/8 (the KA-Rate wire value); `rate_bps` = R(L) on
//! the paper's scale (DESIGN §2.1; the binary always uses it), in bit/s,
//! or empty when L is not a code of that scale. The line is about what
//! left the router: a leading fragment that arrived from upstream and was
//! not shrunk is logged too (it is the signal receivers downstream see).
//!
//! Lines go to their own thread through a bounded queue
//! ([`DEFAULT_STAMP_LOG_CAPACITY`] lines); when it is full, lines are
//! dropped and counted ([`StampLog::finish`]), never waited for.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use ka_codec::Scale;
use ka_codec::wire::{Segment, ipv6};

use super::stats::Direction;

/// Header line of the stamp log.
pub const STAMP_LOG_HEADER: &str = "time_unix_ns,direction,version,src,dst,ident,len,code,rate_bps";

/// Default number of lines waiting for the log thread.
pub const DEFAULT_STAMP_LOG_CAPACITY: usize = 16_384;

/// A leading fragment: what identifies it and the signal it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leading {
    /// 4 or 6.
    pub version: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IPv4 identification or IPv6 fragment identification.
    pub ident: u32,
    /// Leading payload L: IPv4 total length − header length; IPv6 the
    /// fragmentable part after the Fragment header (DESIGN §2.1).
    pub len: usize,
}

/// The leading-fragment fields of `packet`, or `None` if it is not a
/// leading fragment (or not a valid IP packet).
pub fn leading_fragment(packet: &[u8]) -> Option<Leading> {
    let seg = Segment::parse(packet).ok()?;
    if !seg.is_leading_fragment() {
        return None;
    }
    let (src, dst, data) = match (seg.ipv4_addrs(), seg.ipv6_addrs()) {
        (Some((s, d)), _) => (IpAddr::from(s), IpAddr::from(d), seg.ip_header_len()),
        (_, Some((s, d))) => (
            IpAddr::from(s),
            IpAddr::from(d),
            seg.fragment_header_at()? + ipv6::FRAG_HEADER_LEN,
        ),
        _ => return None,
    };
    Some(Leading {
        version: seg.version(),
        src,
        dst,
        ident: seg.ident(),
        len: seg.total_len().saturating_sub(data),
    })
}

/// One CSV line (without the newline) for a leading fragment written at
/// `ts` (since the Unix epoch).
pub fn format_line(ts: Duration, dir: Direction, l: &Leading) -> String {
    let rate = Scale::PAPER
        .code_from_len(l.len)
        .map(|c| format!("{:.3}", Scale::PAPER.decode(c) * 8000.0))
        .unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{}",
        ts.as_nanos(),
        dir.label(),
        l.version,
        l.src,
        l.dst,
        l.ident,
        l.len,
        l.len / 8,
        rate
    )
}

/// The stamp log: a file written by its own thread.
#[derive(Debug)]
pub struct StampLog {
    handle: StampLogHandle,
    worker: JoinHandle<io::Result<()>>,
}

/// The sending side of a [`StampLog`] (cheap to clone).
#[derive(Debug, Clone)]
pub struct StampLogHandle {
    tx: SyncSender<(Duration, Direction, Leading)>,
    dropped: Arc<AtomicU64>,
}

impl StampLogHandle {
    /// Log one leading fragment written at `ts`, or count it as dropped if
    /// the log thread is behind.
    pub fn record(&self, ts: Duration, dir: Direction, l: Leading) {
        match self.tx.try_send((ts, dir, l)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl StampLog {
    /// Create (truncate) `path`, write the header and start the thread.
    pub fn create(path: &Path, capacity: usize) -> io::Result<Self> {
        let mut w = BufWriter::with_capacity(1 << 16, File::create(path)?);
        writeln!(w, "{STAMP_LOG_HEADER}")?;
        let (tx, rx) = sync_channel::<(Duration, Direction, Leading)>(capacity.max(1));
        let worker = std::thread::Builder::new()
            .name("ka-stamp-log".into())
            .spawn(move || {
                for (ts, dir, l) in rx {
                    writeln!(w, "{}", format_line(ts, dir, &l))?;
                }
                w.flush()?;
                w.into_inner().map_err(|e| e.into_error())?.sync_all()
            })?;
        Ok(Self {
            handle: StampLogHandle {
                tx,
                dropped: Arc::new(AtomicU64::new(0)),
            },
            worker,
        })
    }

    /// A handle to log through.
    pub fn handle(&self) -> StampLogHandle {
        self.handle.clone()
    }

    /// Write what is queued, close the file; the number of lines dropped.
    /// Every handle must have been dropped first (else this waits for them).
    pub fn finish(self) -> io::Result<u64> {
        let dropped = Arc::clone(&self.handle.dropped);
        drop(self.handle);
        self.worker
            .join()
            .map_err(|_| io::Error::other("stamp-log thread panicked"))??;
        Ok(dropped.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(total: usize, mf: bool, offset: usize) -> Vec<u8> {
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[4..6].copy_from_slice(&4242u16.to_be_bytes());
        let f = (u16::from(mf) << 13) | (offset / 8) as u16;
        b[6..8].copy_from_slice(&f.to_be_bytes());
        b[8] = 64;
        b[9] = 6;
        b[12..16].copy_from_slice(&[10, 77, 0, 1]);
        b[16..20].copy_from_slice(&[10, 77, 0, 2]);
        b
    }

    #[test]
    fn finds_ipv4_leading_fragments_only() {
        let l = leading_fragment(&v4(20 + 496, true, 0)).unwrap();
        assert_eq!((l.version, l.ident, l.len), (4, 4242, 496));
        assert_eq!(l.src.to_string(), "10.77.0.1");
        assert!(
            leading_fragment(&v4(1500, false, 0)).is_none(),
            "whole packet"
        );
        assert!(
            leading_fragment(&v4(500, true, 496)).is_none(),
            "middle piece"
        );
        assert!(
            leading_fragment(&v4(500, false, 496)).is_none(),
            "last piece"
        );
        assert!(leading_fragment(&[0x45, 0, 0]).is_none());
        assert!(leading_fragment(&[]).is_none());
    }

    #[test]
    fn finds_ipv6_leading_fragments() {
        let mut b = crate::trace::packet::tests::v6_leading_fragment(0x4B41_0001, &[]);
        let l = leading_fragment(&b).unwrap();
        assert_eq!((l.version, l.ident, l.len), (6, 0x4B41_0001, 880));
        b[43] = 0; // M = 0: atomic fragment
        assert!(leading_fragment(&b).is_none());
    }

    #[test]
    fn line_carries_code_and_rate() {
        let l = leading_fragment(&v4(20 + 496, true, 0)).unwrap();
        let s = format_line(Duration::new(5, 7), Direction::Forward, &l);
        let f: Vec<&str> = s.split(',').collect();
        assert_eq!(f.len(), STAMP_LOG_HEADER.split(',').count());
        assert_eq!(
            &f[..8],
            [
                "5000000007",
                "forward",
                "4",
                "10.77.0.1",
                "10.77.0.2",
                "4242",
                "496",
                "62"
            ]
        );
        let r: f64 = f[8].parse().unwrap();
        let want = 12.4392 * (496.0f64 / 128.0).exp() * 8000.0;
        assert!((r - want).abs() < 1.0, "{r} vs {want}");
    }

    #[test]
    fn log_file_round_trip() {
        let dir = std::env::temp_dir().join(format!("ka-stamplog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.csv");
        let log = StampLog::create(&path, 4).unwrap();
        let h = log.handle();
        let l = leading_fragment(&v4(20 + 496, true, 0)).unwrap();
        for i in 0..3 {
            h.record(Duration::from_secs(i), Direction::Reverse, l);
        }
        drop(h);
        assert_eq!(log.finish().unwrap(), 0);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], STAMP_LOG_HEADER);
        assert_eq!(lines.len(), 4);
        assert!(lines[3].starts_with("2000000000,reverse,4,"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

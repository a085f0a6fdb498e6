//! A pcap writer for packets the router emits.
//!
//! Link type `LINKTYPE_RAW` (101): each record is a bare IPv4 or IPv6 packet,
//! which tshark/tcpdump/Wireshark decode by the version nibble. Timestamps are
//! wall-clock (`SystemTime`) at nanosecond resolution, taken when the packet is
//! handed to the device.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// Snapshot length written in the header; longer packets are truncated
/// (cannot happen: an IP packet is at most 65 535 bytes).
pub const SNAPLEN: u32 = 65_535;

/// Writes packets to a pcap file through a 64 KiB buffer; call
/// [`PcapSink::finish`] to flush the tail (dropping also flushes, ignoring
/// errors).
#[derive(Debug)]
pub struct PcapSink {
    writer: PcapWriter<BufWriter<File>>,
}

fn to_io(e: pcap_file::PcapError) -> io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

impl PcapSink {
    /// Create (truncate) `path` and write the pcap header.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(file, header).map_err(to_io)?;
        Ok(Self { writer })
    }

    /// Record one packet with the current wall-clock time.
    pub fn write(&mut self, packet: &[u8]) -> io::Result<()> {
        self.write_at(wall_clock(), packet)
    }

    /// Record one packet with an explicit timestamp (since the Unix epoch).
    pub fn write_at(&mut self, ts: Duration, packet: &[u8]) -> io::Result<()> {
        let cap = packet.len().min(SNAPLEN as usize);
        let data = packet.get(..cap).unwrap_or(packet);
        let orig_len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        self.writer
            .write_packet(&PcapPacket::new(ts, orig_len, data))
            .map(|_| ())
            .map_err(to_io)
    }

    /// Flush and close.
    pub fn finish(self) -> io::Result<()> {
        let mut w = self.writer.into_writer();
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    }
}

/// Wall-clock time since the Unix epoch (zero if the clock is before it).
pub fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// Default number of packets waiting for the capture thread.
pub const DEFAULT_RECORDER_CAPACITY: usize = 8192;

/// A [`PcapSink`] on its own thread, so that file I/O (which can block for
/// milliseconds under dirty-page write-back) never delays the pacing thread.
/// Packets are handed over by value with their timestamp; when more than
/// `capacity` wait, further records are dropped and counted, never waited
/// for. Memory cap: `capacity` packets of at most 64 KiB.
#[derive(Debug)]
pub struct PcapRecorder {
    handle: PcapHandle,
    worker: JoinHandle<io::Result<()>>,
}

/// The sending side of a [`PcapRecorder`] (cheap to clone).
#[derive(Debug, Clone)]
pub struct PcapHandle {
    tx: SyncSender<(Duration, Vec<u8>)>,
    dropped: Arc<AtomicU64>,
}

impl PcapHandle {
    /// Record `packet` with the current wall-clock time, or count it as
    /// dropped if the capture thread is behind.
    pub fn record(&self, packet: Vec<u8>) {
        self.record_at(wall_clock(), packet);
    }

    /// Record `packet` with timestamp `ts` (since the Unix epoch), or count
    /// it as dropped if the capture thread is behind.
    pub fn record_at(&self, ts: Duration, packet: Vec<u8>) {
        match self.tx.try_send((ts, packet)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

fn record_loop(mut sink: PcapSink, rx: &Receiver<(Duration, Vec<u8>)>) -> io::Result<()> {
    let mut result = Ok(());
    for (ts, packet) in rx.iter() {
        // After a failure keep draining (senders never block) but stop writing.
        if result.is_err() {
            continue;
        }
        if let Err(e) = sink.write_at(ts, &packet) {
            tracing::error!("pcap write failed, capture stopped (forwarding goes on): {e}");
            result = Err(e);
        }
    }
    result.and(sink.finish())
}

impl PcapRecorder {
    /// Start the capture thread writing to `sink`.
    pub fn spawn(sink: PcapSink, capacity: usize) -> io::Result<Self> {
        let (tx, rx) = sync_channel(capacity.max(1));
        let worker = std::thread::Builder::new()
            .name("ka-pcap".into())
            .spawn(move || record_loop(sink, &rx))?;
        Ok(Self {
            handle: PcapHandle {
                tx,
                dropped: Arc::new(AtomicU64::new(0)),
            },
            worker,
        })
    }

    /// A handle to record packets with.
    pub fn handle(&self) -> PcapHandle {
        self.handle.clone()
    }

    /// Wait until every handed-over packet is written, flush and close.
    /// Returns the number of records dropped. All handles must be dropped
    /// first (the thread runs until the last one is gone).
    pub fn finish(self) -> io::Result<u64> {
        let dropped = self.handle.dropped();
        drop(self.handle);
        self.worker
            .join()
            .map_err(|_| io::Error::other("pcap thread panicked"))??;
        Ok(dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn round_trips_raw_ip_packets() {
        let dir = std::env::temp_dir().join(format!("ka-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let mut sink = PcapSink::create(&path).unwrap();
        let v4 = [
            0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        let v6 = [0x60u8; 40];
        sink.write_at(Duration::new(1_700_000_000, 123_456_789), &v4)
            .unwrap();
        sink.write(&v6).unwrap();
        sink.finish().unwrap();

        let mut r = PcapReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(r.header().datalink, DataLink::RAW);
        assert_eq!(u32::from(r.header().datalink), 101);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp, Duration::new(1_700_000_000, 123_456_789));
        assert_eq!(&p.data[..], &v4[..]);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(&p.data[..], &v6[..]);
        assert!(p.timestamp > Duration::from_secs(1_600_000_000));
        assert!(r.next_packet().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn recorder_writes_everything_in_order() {
        let dir = std::env::temp_dir().join(format!("ka-pcap-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.pcap");
        let rec = PcapRecorder::spawn(PcapSink::create(&path).unwrap(), 16).unwrap();
        let h = rec.handle();
        let mut sent = 0u64;
        for i in 0..200u32 {
            h.record(vec![0x45, (i % 256) as u8]);
            sent += 1;
        }
        let dropped_seen = h.dropped();
        drop(h);
        let dropped = rec.finish().unwrap();
        assert_eq!(dropped, dropped_seen);
        let mut r = PcapReader::new(File::open(&path).unwrap()).unwrap();
        let mut got = Vec::new();
        while let Some(p) = r.next_packet() {
            got.push(p.unwrap().data[1]);
        }
        assert_eq!(got.len() as u64 + dropped, sent);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "out of order: {got:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

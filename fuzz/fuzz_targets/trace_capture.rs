#![no_main]
//! Arbitrary bytes as a capture file through `ka-trace`'s whole path:
//! the pcap/pcapng reader, the per-packet decoder (etherparse for the link
//! layer and IP header, `ka_codec::wire` for IPv6 extension chains, TCP and
//! every option) and the per-flow analysis, then the CSV renderers. Never
//! panics, never reads out of bounds (built with the sanitizer), and the
//! analysis counts every record the reader returned.
use std::io::{self, Cursor};

use ka_router::trace::capture::CaptureReader;
use ka_router::trace::flows::Analysis;
use ka_router::trace::{output, packet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::new(Cursor::new(data)) else {
        return;
    };
    let Ok(mut a) = Analysis::new(0.1, io::sink()) else {
        return;
    };
    let mut records = 0u64;
    while let Ok(Some(rec)) = reader.next_record() {
        records += 1;
        let info = packet::decode(rec.linktype, &rec.data);
        if a.packet(rec.ts, info.as_ref()).is_err() {
            return;
        }
    }
    let Ok((flows, totals, _)) = a.finish() else {
        return;
    };
    assert_eq!(totals.records, records);
    let _ = output::flows_csv(&flows);
    let _ = output::series_csv(&flows, 0.1);
    let _ = output::trace_flows_csv(&flows);
});

#![no_main]
//! Feeds arbitrary bytes to the LCCP-controlled UDP parsers
//! (`ka_endpoint::udp`): the feedback report parser (a parsed report
//! re-encodes to the same bytes), and the source and sink as whole packets
//! (never panic; a packet that is not a fresh report leaves the source's
//! rate alone).
use std::time::Instant;

use ka_endpoint::udp::{
    CbrConfig, CbrSink, CbrSource, DataHeader, Feedback, SinkConfig, SourceInput,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = Feedback::parse(data) {
        assert_eq!(&f.to_bytes()[..], data, "parse/encode round trip");
    }
    let _ = DataHeader::parse(data);
    let t0 = Instant::now();
    let local = "10.0.0.1:4000".parse().unwrap();
    let remote = "10.0.0.2:5001".parse().unwrap();
    let mut src = CbrSource::new(CbrConfig::new(local, remote, 1_000_000), t0).unwrap();
    src.start(t0);
    let before = src.rate_bps();
    if src.handle_packet(t0, data) != SourceInput::Fresh {
        assert_eq!(src.rate_bps(), before);
    }
    let mut sink = CbrSink::new(SinkConfig::new(remote));
    let _ = sink.handle_packet(data);
    let mut buf = [0u8; 64];
    let _ = sink.poll_transmit(&mut buf);
});

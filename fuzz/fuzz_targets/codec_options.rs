#![no_main]
//! Feeds arbitrary bytes to every parser in `ka_codec::{options, rcp_option,
//! xcp_option, units}` (and the code constructors), and checks the
//! round-trip invariants: whatever parses re-emits to the very same bytes,
//! and lowering an option's value never raises it.
use ka_codec::options::{RcpTcpOption, XcpTcpOption};
use ka_codec::rcp_option::{self, RcpOption};
use ka_codec::xcp_option::{self, Lowered, XcpOption};
use ka_codec::{Code, KaOption, KaPermitted, KaRate, RateTable, units};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // KA TCP options: one whole option.
    if let Ok(opt) = KaOption::parse(data) {
        let mut buf = [0u8; 8];
        let n = opt.emit(&mut buf).expect("a parsed option re-emits");
        assert_eq!(&buf[..n], data, "parse/emit round trip");
    }
    let _ = KaRate::parse(data);
    let _ = KaPermitted::parse(data);

    // RCP IPv4 option: one option, then the data as a whole options area.
    if let Ok(o) = RcpOption::parse(data) {
        assert_eq!(&o.to_bytes()[..], data);
    }
    let found = rcp_option::find_in(data);
    let rate = data
        .get(..4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let mut area = data.to_vec();
    let lowered = rcp_option::lower_in_place(&mut area, rate);
    if let (Ok(Some((at, before))), Ok(changed)) = (found, lowered) {
        assert_eq!(changed, rate < before.rate_bytes_per_sec);
        let after = rcp_option::find_in(&area)
            .expect("still valid")
            .expect("still there");
        assert_eq!(after.0, at);
        assert_eq!(
            after.1.rate_bytes_per_sec,
            before.rate_bytes_per_sec.min(rate)
        );
    }

    // Native-RCP and XCP TCP options: one whole option each.
    if let Ok(opt) = RcpTcpOption::parse(data) {
        let mut buf = [0u8; 8];
        let n = opt.emit(&mut buf).expect("a parsed option re-emits");
        assert_eq!(&buf[..n], data);
    }
    if let Ok(opt) = XcpTcpOption::parse(data) {
        let mut buf = [0u8; 8];
        let n = opt.emit(&mut buf).expect("a parsed option re-emits");
        assert_eq!(&buf[..n], data);
    }

    // XCP IPv4 option: one option, the data as an options area, and the
    // data as a whole IPv4 packet (the router's operation).
    if let Ok(o) = XcpOption::parse(data) {
        assert_eq!(&o.to_bytes()[..], data);
    }
    let feedback = data
        .get(..4)
        .map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let found = xcp_option::find_in(data);
    let mut area = data.to_vec();
    let lowered = xcp_option::lower_feedback_in_place(&mut area, feedback);
    if let (Ok(Some((at, before))), Ok(changed)) = (found, lowered) {
        assert_eq!(changed, feedback < before.feedback_bytes);
        let after = xcp_option::find_in(&area)
            .expect("still valid")
            .expect("still there");
        assert_eq!(after.0, at);
        assert_eq!(
            after.1.feedback_bytes,
            before.feedback_bytes.min(feedback)
        );
    }
    let mut pkt = data.to_vec();
    let verified = ka_codec::wire::ipv4::Ipv4Packet::new_checked(data)
        .is_ok_and(|p| p.verify_checksum());
    match xcp_option::lower_feedback_in_packet(&mut pkt, feedback) {
        Ok(Lowered::From(before)) => {
            assert!(feedback < before.feedback_bytes);
            let p = ka_codec::wire::ipv4::Ipv4Packet::new_checked(&pkt[..]).expect("still IPv4");
            assert_eq!(p.verify_checksum(), verified, "checksum kept as it was");
        }
        Ok(Lowered::Unchanged(_)) | Err(_) => assert_eq!(pkt, data),
    }

    // Rate codes from any byte / length.
    for &b in data.iter().take(4) {
        if let Some(code) = Code::from_wire(b) {
            let r = RateTable::paper().decode(code);
            assert_eq!(RateTable::paper().encode(r), Some(code));
        }
    }

    // Human units on any UTF-8 text.
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = units::parse_rate(s);
        let _ = units::parse_bytes(s);
        let _ = units::parse_duration(s);
    }
});

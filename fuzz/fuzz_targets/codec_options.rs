#![no_main]
//! Feeds arbitrary bytes to every parser in `ka_codec::{options, rcp_option,
//! units}` (and the code constructors), and checks the round-trip invariants:
//! whatever parses re-emits to the very same bytes.
use ka_codec::rcp_option::{self, RcpOption};
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

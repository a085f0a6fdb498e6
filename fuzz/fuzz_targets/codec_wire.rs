#![no_main]
//! Feeds arbitrary bytes to every `ka_codec::wire` view and parser.
use ka_codec::wire::{ipv4, ipv6, tcp};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ipv4::Ipv4Packet::new_checked(data) {
        let _ = ipv4::Ipv4Repr::parse(&p);
        let mut out = [0u8; 40];
        let _ = ipv4::copied_options(p.options(), &mut out);
        let _ = p.verify_checksum();
    }
    let _ = ipv6::layout(data);
    let _ = ipv6::FragmentHeader::parse(data);
    if let Ok(t) = tcp::TcpPacket::new_checked(data) {
        if let Ok(r) = tcp::TcpRepr::parse(&t) {
            let mut buf = vec![0u8; r.header_len() + t.payload().len()];
            let _ = r.emit(&mut buf, t.payload(), 0);
        }
    }
});

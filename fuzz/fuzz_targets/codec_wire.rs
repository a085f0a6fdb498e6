#![no_main]
//! Feeds arbitrary bytes to every `ka_codec::wire` view and parser,
//! including the one-parse segment view and the option walker.
use ka_codec::wire::{Layout, OptionIter, Segment, SegmentMut, ipv4, ipv6, tcp};
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
    for o in OptionIter::new(data) {
        let _ = o.map(|o| (o.offset, o.kind, o.body.len()));
    }
    let seg = Segment::parse(data);
    assert_eq!(seg.map(|s| s.layout()), Layout::parse_general(data));
    if let Ok(s) = seg {
        assert!(s.total_len() <= data.len());
        let _ = (s.flow_key(), s.tcp_flags(), s.tcp_seq(), s.tcp_ack(), s.tcp_window());
        let _ = (s.tcp_payload_len(), s.ipv6_layout(), s.ident(), s.l4_bytes().len());
        for o in s.tcp_option_iter().chain(s.ipv4_option_iter()) {
            let _ = o.map(|o| o.body.len());
        }
        let mut b = data.to_vec();
        let mut m = SegmentMut::with_layout(&mut b, s.layout());
        let _ = (m.set_tcp_window(1), m.patch_tcp_options(0, &[1, 1]));
    }
});

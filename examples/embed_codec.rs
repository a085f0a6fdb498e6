//! Embedding ka-codec in another network stack, in a few lines.
//!
//! Give it raw IPv4 packets in hex (one per argument; spaces and colons are
//! ignored) or run it without arguments for built-in samples. For each packet
//! it says whether it is
//!
//! * a KA **leading fragment** (offset 0, MF set, payload length `L` a valid
//!   code): the rate the path granted, and the KA-Rate TCP option a receiver
//!   echoes to the sender;
//! * an **RTT indicator** (total length 600 + k with DF set): the RTT a router
//!   takes from it;
//! * neither.
//!
//! It ends with the router side: which leading-fragment length signals a rate.
//!
//! `cargo run -p ka-examples --example embed_codec [-- 4500038c...]`

use std::error::Error;

use ka_codec::wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_TCP};
use ka_codec::{Code, KaRate, Rate, RateTable, rtt};

/// What one packet means to KA.
fn classify(bytes: &[u8]) -> Result<String, Box<dyn Error>> {
    let ip = Ipv4Packet::new_checked(bytes)?;
    let payload_len = ip.payload().len();

    // Receiver side: a leading fragment whose payload length is a code.
    if ip.more_frags() && ip.frag_offset() == 0 {
        return Ok(match Code::from_len(payload_len) {
            Some(code) => {
                let rate = RateTable::paper().decode(code);
                let count = 1; // the receiver's per-connection counter
                let mut opt = [0; KaRate::LEN];
                KaRate::new(code, count).emit(&mut opt)?;
                format!(
                    "KA leading fragment, L = {payload_len} (code {}): rate {} ({rate:.1} B/ms); \
                     echo TCP option {opt:?}",
                    code.wire(),
                    Rate::from_bytes_per_ms(rate),
                )
            }
            None => format!("leading fragment, but L = {payload_len} is not a KA code"),
        });
    }
    // Router side: an RTT indicator.
    if let Some(k) = rtt::classify(ip.total_len(), ip.dont_frag()) {
        return Ok(format!(
            "RTT indicator k = {k} (total length {}): RTT taken as {:?}",
            ip.total_len(),
            rtt::rtt_for_k(k)
        ));
    }
    Ok(format!(
        "neither (total length {}, DF {}, MF {}, offset {})",
        ip.total_len(),
        ip.dont_frag(),
        ip.more_frags(),
        ip.frag_offset()
    ))
}

/// A TCP/IPv4 packet with the given payload length and flags (payload zeroed).
fn sample(payload_len: usize, dont_frag: bool, more_frags: bool, frag_offset: usize) -> Vec<u8> {
    let repr = Ipv4Repr {
        ident: 0x1234,
        dont_frag,
        more_frags,
        frag_offset,
        ..Ipv4Repr::new([10, 0, 0, 1], [10, 0, 1, 2], PROTO_TCP, payload_len)
    };
    let mut buf = vec![0; Ipv4Repr::HEADER_LEN + payload_len];
    repr.emit(&mut buf).expect("sample header fits");
    buf
}

fn parse_hex(s: &str) -> Result<Vec<u8>, Box<dyn Error>> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b" :\n\t".contains(b)).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|pair| Ok(u8::from_str_radix(std::str::from_utf8(pair)?, 16)?))
        .collect()
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let packets: Vec<(String, Vec<u8>)> = if args.is_empty() {
        vec![
            (
                "1500-byte packet cut by a KA router".into(),
                sample(880, false, true, 0),
            ),
            (
                "indicator for a 48 ms RTT".into(),
                sample(605 - 20, true, false, 0),
            ),
            (
                "plain full-size packet".into(),
                sample(1480, true, false, 0),
            ),
            ("trailing fragment".into(), sample(600, false, false, 880)),
            (
                "fragment too short for a code".into(),
                sample(16, false, true, 0),
            ),
        ]
    } else {
        let mut packets = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            match parse_hex(arg) {
                Ok(bytes) => packets.push((format!("argument {}", i + 1), bytes)),
                Err(e) => println!("argument {}\n  -> not hex: {e}", i + 1),
            }
        }
        packets
    };
    for (what, bytes) in &packets {
        let header: String = bytes.iter().take(20).map(|b| format!("{b:02x}")).collect();
        println!("{what} ({} bytes)\n  header {header}", bytes.len());
        match classify(bytes) {
            Ok(verdict) => println!("  -> {verdict}"),
            Err(e) => println!("  -> not a valid IPv4 packet: {e}"),
        }
    }

    // Router side: the length a 1500-byte packet's leading fragment gets for
    // a few target rates (never more than the rate, at most 1472 in 1480
    // payload bytes).
    println!("\nrouter side, 1500-byte packet:");
    for mbit in [0.1, 1.0, 100.0, 10_000.0] {
        let bytes_per_ms = ka_codec::bps_to_bytes_per_ms(mbit * 1e6);
        match RateTable::paper().encode(bytes_per_ms) {
            Some(code) => {
                let carried = ka_codec::carrier_code(code, 1480).expect("1480 > 24");
                println!(
                    "  {} -> leading fragment of {} payload bytes (signals {})",
                    Rate::from_bps(mbit * 1e6),
                    carried.len(),
                    Rate::from_bytes_per_ms(RateTable::paper().decode(carried))
                );
            }
            None => println!(
                "  {} -> not encodable: forward unfragmented",
                Rate::from_bps(mbit * 1e6)
            ),
        }
    }
    Ok(())
}

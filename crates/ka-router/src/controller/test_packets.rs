//! What the controllers' unit tests feed them: TCP packets of a few
//! connections and control-interval measurements on a 150 Mbit/s link.

use std::time::Duration;

use super::Measurement;
use super::packet::{FlowKey, PacketInfo, TcpInfo};

/// 150 Mbit/s in B/ms.
pub const C: f64 = 18_750.0;
/// One millisecond.
pub const MS: Duration = Duration::from_millis(1);

/// Connection `i` (its sender's port is 40000 + i).
pub fn key(i: u16) -> FlowKey {
    FlowKey {
        sport: 40_000 + i,
        dport: 5001,
        ..FlowKey::default()
    }
}

/// A TCP packet of connection `i`.
pub fn pkt(i: u16, syn: bool, fin: bool, payload: usize) -> PacketInfo {
    PacketInfo {
        len: payload + 40,
        tcp: Some(TcpInfo {
            flow: key(i),
            syn,
            fin,
            payload,
        }),
    }
}

/// Connection `i`'s SYN.
pub fn syn(i: u16) -> PacketInfo {
    pkt(i, true, false, 0)
}

/// A full data segment of connection `i`.
pub fn data(i: u16) -> PacketInfo {
    pkt(i, false, false, 1460)
}

/// Connection `i`'s FIN.
pub fn fin(i: u16) -> PacketInfo {
    pkt(i, false, true, 0)
}

/// A 10 ms interval at 100 ms RTT with arrivals `y` (B/ms), no queue, on a
/// port whose ceiling is `max_rate`.
pub fn interval_at(y: f64, max_rate: f64) -> Measurement {
    Measurement {
        interval: Duration::from_millis(10),
        rtt: Duration::from_millis(100),
        capacity: C,
        max_rate,
        input_rate: y,
        queue_bytes: 0,
    }
}

//! RTT indicators (paper §II-B, DESIGN §2.2).
//!
//! Endpoints tell routers their RTT with packet *length*: about every 100 ms a
//! KA sender emits a packet whose total IP length is `600 + k` (`k ∈ 0..=11`)
//! with Don't-Fragment set. A router that sees one looks the RTT up and
//! forwards the packet unfragmented.
//!
//! | k     | RTT range            | value a router takes |
//! |-------|----------------------|----------------------|
//! | 0     | < 2 ms               | 1 ms                 |
//! | 1…10  | 2^k ≤ RTT < 2^(k+1) ms | 1.5 · 2^k ms (middle) |
//! | 11    | ≥ 2048 ms            | 3072 ms              |
//!
//! **IPv6** has no DF bit (IPv6 routers never fragment), so for IPv6 a total
//! length (40 + payload length) of `600 + k` alone marks an indicator; see
//! [`classify_v6`]. A KA router never fragments IPv6 packets of those lengths.

use core::time::Duration;

/// Total IP length of the `k = 0` indicator.
pub const INDICATOR_BASE: usize = 600;
/// The largest `k`.
pub const MAX_K: u8 = 11;
/// Total IP length of the `k = 11` indicator (611).
pub const INDICATOR_MAX: usize = INDICATOR_BASE + MAX_K as usize;

/// `k` if an IPv4 packet with this total length and DF bit is an RTT
/// indicator (`600 ≤ total_len ≤ 611` and DF set).
#[inline]
pub const fn classify(total_len: usize, dont_frag: bool) -> Option<u8> {
    if dont_frag {
        classify_v6(total_len)
    } else {
        None
    }
}

/// `k` if an IPv6 packet with this total length (40 + payload length) is an
/// RTT indicator. IPv6 has no DF bit: the length alone decides.
#[inline]
pub const fn classify_v6(total_len: usize) -> Option<u8> {
    if total_len >= INDICATOR_BASE && total_len <= INDICATOR_MAX {
        Some((total_len - INDICATOR_BASE) as u8)
    } else {
        None
    }
}

/// The `k` an endpoint with this (smoothed) RTT announces: 0 below 2 ms,
/// `floor(log2(RTT in ms))` for 2 ms … 2047.999 ms, 11 from 2048 ms on.
#[inline]
pub const fn k_for_rtt(rtt: Duration) -> u8 {
    // floor(log2(x)) = floor(log2(floor(x))) for x ≥ 1, as powers of 2 are whole.
    let ms = rtt.as_millis();
    if ms < 2 {
        0
    } else {
        let k = 127 - ms.leading_zeros();
        if k > MAX_K as u32 { MAX_K } else { k as u8 }
    }
}

/// Total IP length of the indicator for this RTT: `600 + k_for_rtt(rtt)`.
#[inline]
pub const fn indicator_len(rtt: Duration) -> usize {
    INDICATOR_BASE + k_for_rtt(rtt) as usize
}

/// The RTT a router takes from indicator `k`: 1 ms for `k = 0`, the middle of
/// the range (`1.5 · 2^k` ms) for `k = 1…10`, 3072 ms for `k = 11`. Values of
/// `k` above 11 (never produced by [`classify`]) are treated as 11.
#[inline]
pub const fn rtt_for_k(k: u8) -> Duration {
    let k = if k > MAX_K { MAX_K } else { k };
    if k == 0 {
        Duration::from_millis(1)
    } else {
        // 1.5 · 2^k = 3 · 2^(k−1), whole for k ≥ 1.
        Duration::from_millis(3 << (k - 1))
    }
}

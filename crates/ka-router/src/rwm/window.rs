//! The window arithmetic of RWM (seed Eq. 1 and Alg. 1), as pure functions.

/// RFC 7323 §2.3: a shift above 14 is used as 14.
pub const MAX_WSCALE: u8 = 14;

/// A flow's class BDP in bytes: `rate · rtt`, where `rate` already
/// carries the class share and `1 + δ` (bytes/s) and `rtt` is in
/// nanoseconds. Computed once, when the handshake completes.
pub fn class_bdp(rate_bytes_per_s: f64, rtt_ns: u64) -> f64 {
    rate_bytes_per_s * (rtt_ns as f64 / 1e9)
}

/// The per-flow cap in bytes: the class BDP shared by `n ≥ 1` active
/// flows, never below `floor_bytes`. Saturates instead of overflowing.
pub fn cap_bytes(class_bdp: f64, n: u32, floor_bytes: u64) -> u64 {
    let bdp = class_bdp / f64::from(n.max(1));
    // `as` saturates (NaN → 0), so any input gives a u64.
    (bdp as u64).max(floor_bytes)
}

/// The per-flow cap in bytes from the class's rate already divided by
/// its `n ≥ 1` active flows (`per_flow`, bytes per ns) and the flow's RTT
/// (ns): `per_flow · rtt`, never below `floor_bytes`. The per-packet form
/// of [`cap_bytes`]`(class_bdp(rate, rtt), n, floor)`.
#[inline]
pub fn flow_cap(per_flow_bytes_per_ns: f64, rtt_ns: f32, floor_bytes: u64) -> u64 {
    // `as` saturates (NaN → 0), so any input gives a u64.
    ((per_flow_bytes_per_ns * f64::from(rtt_ns)) as u64).max(floor_bytes)
}

/// The window field to put in a segment whose sender scales its windows by
/// `wscale` and that advertises `advertised`: `min(advertised,
/// max(cap >> wscale, 1))`. Never above `advertised` (RWM never raises a
/// window, seed §V-A), never 0 unless `advertised` is (a capped window is
/// at least one scaled unit, so no flow is stalled by RWM).
pub fn capped_field(advertised: u16, cap_bytes: u64, wscale: u8) -> u16 {
    let shift = u32::from(wscale.min(MAX_WSCALE));
    let units = (cap_bytes >> shift).max(1);
    let units = u16::try_from(units).unwrap_or(u16::MAX);
    advertised.min(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_math_for_every_scale() {
        // 50 Mbit/s · 20 ms / 4 = 31 250 bytes.
        let cap = cap_bytes(class_bdp(50e6 / 8.0, 20_000_000), 4, 0);
        assert_eq!(cap, 31_250);
        for ws in 0..=14u8 {
            let got = capped_field(u16::MAX, cap, ws);
            let want = (31_250u64 >> ws).clamp(1, 65_535) as u16;
            assert_eq!(got, want, "wscale {ws}");
            // The window the sender sees never exceeds the cap by more
            // than one unit of rounding, and is never above the advertised
            // window.
            let bytes = u64::from(got) << ws;
            assert!(bytes <= cap.max(1 << ws), "wscale {ws}: {bytes}");
            assert!(capped_field(3, cap, ws) <= 3);
        }
        // Shifts above 14 count as 14 (RFC 7323 §2.3).
        assert_eq!(
            capped_field(u16::MAX, cap, 15),
            capped_field(u16::MAX, cap, 14)
        );
    }

    #[test]
    fn windows_near_two_to_the_thirty() {
        // The largest window TCP can advertise: 65 535 << 14 ≈ 2^30.
        let top = 65_535u64 << 14;
        // A cap at 2^30 with wscale 14 leaves the field at its maximum
        // (the cap is above what the field can say: never raised).
        assert_eq!(capped_field(u16::MAX, 1 << 30, 14), u16::MAX);
        assert_eq!(capped_field(u16::MAX, top, 14), u16::MAX);
        // Just below the top: one unit less.
        assert_eq!(capped_field(u16::MAX, top - 1, 14), u16::MAX - 1);
        // A cap past anything a u16 holds, at every scale: no overflow.
        for ws in 0..=14 {
            assert_eq!(capped_field(40_000, u64::MAX, ws), 40_000);
        }
        // 10 Gbit/s · 1 s = 1.25 GB > 2^30: saturates, does not wrap.
        let huge = cap_bytes(class_bdp(10e9 / 8.0, 1_000_000_000), 1, 0);
        assert_eq!(huge, 1_250_000_000);
        assert_eq!(capped_field(u16::MAX, huge, 14), u16::MAX);
        assert_eq!(capped_field(u16::MAX, huge, 0), u16::MAX);
        assert_eq!(
            cap_bytes(class_bdp(f64::INFINITY, u64::MAX), 1, 0),
            u64::MAX
        );
        assert_eq!(cap_bytes(class_bdp(f64::NAN, 1), 1, 7), 7);
    }

    #[test]
    fn never_raises_never_zero() {
        assert_eq!(
            capped_field(1000, 1_000_000, 0),
            1000,
            "below the cap: untouched"
        );
        assert_eq!(capped_field(0, 1_000_000, 0), 0, "a zero window stays zero");
        assert_eq!(capped_field(65_535, 0, 7), 1, "at least one unit");
        // The floor: two 1460-byte segments.
        assert_eq!(cap_bytes(class_bdp(1.0, 1_000), 100, 2920), 2920);
    }

    #[test]
    fn n_flows_split_the_class() {
        let one = cap_bytes(class_bdp(1e8, 100_000_000), 1, 0);
        for n in 1..=64u32 {
            let each = cap_bytes(class_bdp(1e8, 100_000_000), n, 0);
            assert!((each as f64 * f64::from(n) - one as f64).abs() <= f64::from(n));
        }
    }
}

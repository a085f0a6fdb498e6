//! KA stamping: fragment a packet on dequeue so the leading fragment's
//! payload length is the rate code (DESIGN §3.4, paper §II).
//!
//! The functions here are pure (no port state): [`stamp_ipv4`] and
//! [`stamp_ipv6`] apply rules 1, 2, 4 and 5 for a given wanted code; rule 3
//! ("no signal wanted": TCP mode, or R not encodable) is the port's decision
//! not to call them. TTL / hop-limit handling is the port's too (once per
//! packet, before stamping).
//!
//! **Which code a packet carries.** A packet that is already a leading
//! fragment (offset 0, MF = 1) carries an upstream router's signal (or a
//! sender's own fragmentation); it is only ever *shrunk*: split at `wanted`
//! if its payload `P > wanted`, else left alone (rule 4) — anything else
//! would lower an upstream signal that is already below ours.
//!
//! A whole packet (IPv4 MF = 0; IPv6 without a Fragment header, or an atomic
//! one) carries `wanted` if `wanted < P`. If `wanted ≥ P`, DESIGN §2.1 says
//! "saturate" (carry the largest code below P: a 1500-byte IPv4 packet at a
//! wanted 1480 carries 1472) while §3.4 rule 4 says a packet that is "too
//! small" stays untouched. Both hold here through
//! [`StampConfig::saturate_min_payload`]: a whole packet saturates only if
//! `P ≥ saturate_min_payload` (default [`DEFAULT_SATURATE_MIN_PAYLOAD`] =
//! 1400, i.e. MTU-sized packets: 1480 for IPv4, 1460 for IPv6, down to 1440
//! with IPv4 options — the top-of-scale case §3.1 is about); smaller ones
//! are left untouched. A saturated packet under-states the rate by
//! `e^((wanted − carried)/128)`; with `P ≥ 1400` that is at most a factor of
//! 2, and only for rates above R(1400) ≈ 4.8 Gbit/s. Saturating every small
//! packet would instead split pure ACKs (payload 20–40 → code 24/32) and
//! short segments into signals of a few B/ms that a receiver cannot tell
//! from a real one. Set it to 0 for saturation of every whole packet.

mod ipv4;
mod ipv6;

pub use ipv4::{stamp_ipv4, stamp_ipv4_parsed, stamp_ipv4_with};
pub use ipv6::{ipv6_indicator, is_ipv6_indicator, stamp_ipv6, stamp_ipv6_parsed, stamp_ipv6_with};

use ka_codec::{Code, Scale};

/// Why a packet was left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// Rule 1: IPv4 DF set (RTT indicators have DF).
    DontFragment,
    /// IPv6 RTT indicator (total length 600…611, no Fragment header): never
    /// stamped.
    Indicator,
    /// Rule 2: not the leading piece (fragment offset ≠ 0).
    NotLeading,
    /// Rule 4: the leading payload is already at most the code to carry (an
    /// upstream router signalled a lower rate), the packet is too small for
    /// any code, or `wanted` is not a code of the scale.
    NoRoom,
    /// IPv6: the code is too short for the extension headers that follow the
    /// Fragment header plus `min_len` (24) bytes of the upper-layer header.
    /// RFC 7112 requires the first fragment to hold the whole header chain,
    /// and a larger code would over-state the rate.
    HeaderChain,
    /// The IP header, IPv4 options or IPv6 extension-header chain could not
    /// be walked.
    Unparsable,
}

/// The result of stamping one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stamped {
    /// Forwarded as it came (the packet and why).
    Untouched(Vec<u8>, Skip),
    /// Split into the leading fragment (payload = the code's L) and the rest.
    Split(Vec<u8>, Vec<u8>),
}

impl Stamped {
    /// Whether the packet was split.
    pub fn is_split(&self) -> bool {
        matches!(self, Stamped::Split(..))
    }

    /// The packet or fragments, in transmission order.
    pub fn into_pieces(self) -> (Vec<u8>, Option<Vec<u8>>) {
        match self {
            Stamped::Untouched(p, _) => (p, None),
            Stamped::Split(a, b) => (a, Some(b)),
        }
    }
}

/// The default of [`StampConfig::saturate_min_payload`].
pub const DEFAULT_SATURATE_MIN_PAYLOAD: usize = 1400;

/// Parameters of the pure stamping functions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StampConfig {
    /// The rate ↔ length scale (which codes exist). Default
    /// [`Scale::PAPER`].
    pub scale: Scale,
    /// A whole packet whose payload is at most the wanted code carries the
    /// largest code below its payload only if the payload has at least this
    /// many bytes; smaller ones are left untouched (see the module docs).
    /// Default [`DEFAULT_SATURATE_MIN_PAYLOAD`].
    pub saturate_min_payload: usize,
}

impl Default for StampConfig {
    fn default() -> Self {
        Self {
            scale: Scale::PAPER,
            saturate_min_payload: DEFAULT_SATURATE_MIN_PAYLOAD,
        }
    }
}

impl StampConfig {
    /// The payload length the leading fragment gets, or `None` (rule 4).
    ///
    /// `payload` is the current (leading) payload P, `already_leading`
    /// whether the packet is already a leading fragment (MF = 1).
    pub fn target_len(&self, wanted: Code, payload: usize, already_leading: bool) -> Option<usize> {
        let w = self.scale.contains(wanted).then(|| wanted.len())?;
        if w < payload {
            return Some(w);
        }
        if already_leading || payload < self.saturate_min_payload {
            return None;
        }
        let l = self.scale.carrier_code(wanted, payload)?.len();
        (payload > l).then_some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_len_rules() {
        let s = StampConfig::default();
        let lit = StampConfig {
            saturate_min_payload: 0,
            ..s
        };
        let c = |l| Code::from_len(l).unwrap();
        // Whole packets: the wanted code if it fits …
        assert_eq!(s.target_len(c(880), 1480, false), Some(880));
        assert_eq!(s.target_len(c(24), 25, false), Some(24));
        // … else saturate below P, but only MTU-sized ones by default.
        assert_eq!(s.target_len(c(1480), 1480, false), Some(1472));
        assert_eq!(s.target_len(c(1480), 1460, false), Some(1456));
        assert_eq!(s.target_len(c(1480), 1400, false), Some(1392));
        assert_eq!(s.target_len(c(1480), 1399, false), None);
        assert_eq!(s.target_len(c(880), 40, false), None);
        assert_eq!(lit.target_len(c(1480), 1000, false), Some(992));
        assert_eq!(lit.target_len(c(880), 40, false), Some(32));
        assert_eq!(lit.target_len(c(880), 24, false), None);
        // Leading fragments are only shrunk.
        assert_eq!(s.target_len(c(880), 1000, true), Some(880));
        assert_eq!(s.target_len(c(880), 880, true), None);
        assert_eq!(lit.target_len(c(1480), 1480, true), None);
        assert_eq!(s.target_len(c(1000), 880, true), None);
        // A code outside the scale is never stamped.
        let odd = StampConfig {
            scale: Scale::new(128.0, 12.4392, 48, 1488, 16).unwrap(),
            ..s
        };
        assert_eq!(odd.target_len(c(888), 1480, false), None);
        assert_eq!(odd.target_len(c(48), 1480, false), Some(48));
    }
}

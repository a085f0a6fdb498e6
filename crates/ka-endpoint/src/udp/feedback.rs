//! The wire formats of LCCP-controlled UDP: the 8-byte header at the
//! start of every data datagram's payload and the 20-byte feedback report
//! the sink sends back.
//!
//! ```text
//! data (after the UDP header):  seq u32 | ts_us u32 | filler …
//! feedback (the whole UDP payload, 20 bytes, big-endian):
//!   0..4   magic "LCFB"
//!   4      version (1)
//!   5      ka_code: L/8 of the latest leading fragment (0 = none yet)
//!   6..8   count: datagrams that carried a signal (wrapping)
//!   8..12  rcp_rate: RCP option rate of the latest datagram, bytes/s (0 = none)
//!   12..16 echo_ts: ts_us of the latest data datagram (for the RTT)
//!   16..20 received: data datagrams received (wrapping)
//! ```
//!
//! [`Feedback::parse`] never panics: every input that is not exactly a
//! version-1 report is a typed [`FeedbackError`].

/// The first four bytes of every feedback report.
pub const MAGIC: [u8; 4] = *b"LCFB";
/// The only version this code speaks.
pub const VERSION: u8 = 1;

/// What a data datagram carries after its UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataHeader {
    /// Datagram number (wrapping).
    pub seq: u32,
    /// The source's clock when it sent the datagram, µs (wrapping).
    pub ts_us: u32,
}

impl DataHeader {
    /// Encoded length.
    pub const LEN: usize = 8;

    /// Reads the header from the start of a UDP payload (`None` if it is
    /// shorter than [`DataHeader::LEN`]).
    pub fn parse(b: &[u8]) -> Option<DataHeader> {
        let seq = u32::from_be_bytes(b.get(0..4)?.try_into().ok()?);
        let ts_us = u32::from_be_bytes(b.get(4..8)?.try_into().ok()?);
        Some(DataHeader { seq, ts_us })
    }

    /// The encoded header.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        let (a, b) = out.split_at_mut(4);
        a.copy_from_slice(&self.seq.to_be_bytes());
        b.copy_from_slice(&self.ts_us.to_be_bytes());
        out
    }
}

/// One feedback report (sink → source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Feedback {
    /// Wire code (L/8) of the latest KA leading fragment; 0 = none yet.
    pub ka_code: u8,
    /// Signal-carrying datagrams received so far (wrapping). A report
    /// whose count equals the previous one carries no fresh signal.
    pub count: u16,
    /// Rate from the latest datagram's native-RCP option, bytes/s; 0 =
    /// none.
    pub rcp_rate: u32,
    /// `ts_us` of the latest data datagram.
    pub echo_ts: u32,
    /// Data datagrams received so far (wrapping).
    pub received: u32,
}

/// Why bytes are not a feedback report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum FeedbackError {
    /// Not exactly [`Feedback::LEN`] bytes.
    #[error("feedback report of {0} bytes (want 20)")]
    BadLength(usize),
    /// The first four bytes are not "LCFB".
    #[error("not a feedback report (bad magic)")]
    BadMagic,
    /// A version this code does not speak.
    #[error("feedback version {0} (want 1)")]
    BadVersion(u8),
}

impl Feedback {
    /// Encoded length.
    pub const LEN: usize = 20;

    /// Parses a UDP payload.
    pub fn parse(b: &[u8]) -> Result<Feedback, FeedbackError> {
        let b: &[u8; Self::LEN] = b
            .try_into()
            .map_err(|_| FeedbackError::BadLength(b.len()))?;
        let [
            m0,
            m1,
            m2,
            m3,
            version,
            ka_code,
            c0,
            c1,
            r0,
            r1,
            r2,
            r3,
            e0,
            e1,
            e2,
            e3,
            n0,
            n1,
            n2,
            n3,
        ] = *b;
        if [m0, m1, m2, m3] != MAGIC {
            return Err(FeedbackError::BadMagic);
        }
        if version != VERSION {
            return Err(FeedbackError::BadVersion(version));
        }
        Ok(Feedback {
            ka_code,
            count: u16::from_be_bytes([c0, c1]),
            rcp_rate: u32::from_be_bytes([r0, r1, r2, r3]),
            echo_ts: u32::from_be_bytes([e0, e1, e2, e3]),
            received: u32::from_be_bytes([n0, n1, n2, n3]),
        })
    }

    /// The encoded report.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        let parts: [&[u8]; 7] = [
            &MAGIC,
            &[VERSION],
            &[self.ka_code],
            &self.count.to_be_bytes(),
            &self.rcp_rate.to_be_bytes(),
            &self.echo_ts.to_be_bytes(),
            &self.received.to_be_bytes(),
        ];
        let mut at = 0;
        for p in parts {
            for (o, b) in out.iter_mut().skip(at).zip(p) {
                *o = *b;
            }
            at += p.len();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_is_as_documented() {
        let f = Feedback {
            ka_code: 0x51,
            count: 0x0203,
            rcp_rate: 0x0405_0607,
            echo_ts: 0x0809_0A0B,
            received: 0x0C0D_0E0F,
        };
        assert_eq!(
            f.to_bytes(),
            [
                b'L', b'C', b'F', b'B', 1, 0x51, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
            ]
        );
        let d = DataHeader {
            seq: 0x0102_0304,
            ts_us: 0x0506_0708,
        };
        assert_eq!(d.to_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(DataHeader::parse(&[1, 2, 3, 4, 5, 6, 7, 8, 9]), Some(d));
        assert_eq!(DataHeader::parse(&[1, 2, 3, 4, 5, 6, 7]), None);
    }

    #[test]
    fn rejects_with_typed_errors() {
        let good = Feedback::default().to_bytes();
        assert_eq!(Feedback::parse(&good), Ok(Feedback::default()));
        assert_eq!(
            Feedback::parse(&good[..19]),
            Err(FeedbackError::BadLength(19))
        );
        assert_eq!(Feedback::parse(&[]), Err(FeedbackError::BadLength(0)));
        let mut long = good.to_vec();
        long.push(0);
        assert_eq!(Feedback::parse(&long), Err(FeedbackError::BadLength(21)));
        let mut bad = good;
        bad[0] = b'X';
        assert_eq!(Feedback::parse(&bad), Err(FeedbackError::BadMagic));
        let mut bad = good;
        bad[4] = 2;
        assert_eq!(Feedback::parse(&bad), Err(FeedbackError::BadVersion(2)));
    }

    proptest! {
        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Feedback::parse(&b);
            let _ = DataHeader::parse(&b);
        }

        #[test]
        fn round_trip(ka_code: u8, count: u16, rcp_rate: u32, echo_ts: u32, received: u32) {
            let f = Feedback { ka_code, count, rcp_rate, echo_ts, received };
            prop_assert_eq!(Feedback::parse(&f.to_bytes()), Ok(f));
        }

        #[test]
        fn any_valid_prefix_parses(tail in proptest::collection::vec(any::<u8>(), 15)) {
            let mut b = MAGIC.to_vec();
            b.push(VERSION);
            b.extend_from_slice(&tail);
            prop_assert!(Feedback::parse(&b).is_ok());
        }
    }
}

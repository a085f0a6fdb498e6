//! TCP header view, options and representation (RFC 9293, 7323, 2018, and
//! the KA options of DESIGN §2.3, and the native-RCP baseline's options of
//! DESIGN §7.1).

use super::opts::OptionIter;
use super::{WireError, be16, be32, byte, check_len, checksum, put8, put16, put32, sub};
use crate::options::{
    KaOption, KaPermitted, KaRate, RcpEcho, RcpPermitted, RcpTcpOption, XcpEcho, XcpPermitted,
    XcpTcpOption,
};

/// The TCP header length without options.
pub const HEADER_LEN: usize = 20;
/// The largest TCP header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;
/// The most option bytes a header can hold.
pub const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - HEADER_LEN;

/// FIN flag.
pub const FIN: u8 = 0x01;
/// SYN flag.
pub const SYN: u8 = 0x02;
/// RST flag.
pub const RST: u8 = 0x04;
/// PSH flag.
pub const PSH: u8 = 0x08;
/// ACK flag.
pub const ACK: u8 = 0x10;
/// URG flag.
pub const URG: u8 = 0x20;
/// ECE flag.
pub const ECE: u8 = 0x40;
/// CWR flag.
pub const CWR: u8 = 0x80;

const OPT_NOP: u8 = super::opts::KIND_NOP;
const OPT_MSS: u8 = 2;
const OPT_WS: u8 = 3;
const OPT_SACK_PERM: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TS: u8 = 8;
const OPT_EXP: u8 = crate::options::KIND_EXPERIMENTAL;

/// A zero-copy view of a TCP segment (header, options and payload); the
/// buffer is exactly the segment, i.e. the IP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps a buffer without checking it. Accessors still never panic.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps a buffer after checking that the header and its options fit.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = TcpPacket { buffer };
        let len = p.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        check_len(p.header_len(), HEADER_LEN, len, WireError::BadHeaderLen)?;
        Ok(p)
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// Sequence number.
    pub fn seq(&self) -> u32 {
        be32(self.buffer.as_ref(), 4)
    }

    /// Acknowledgement number.
    pub fn ack(&self) -> u32 {
        be32(self.buffer.as_ref(), 8)
    }

    /// Header length in bytes (data offset · 4).
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.buffer.as_ref(), 12) >> 4) * 4
    }

    /// The eight flag bits (CWR … FIN).
    pub fn flags(&self) -> u8 {
        byte(self.buffer.as_ref(), 13)
    }

    /// Window (unscaled, as on the wire).
    pub fn window(&self) -> u16 {
        be16(self.buffer.as_ref(), 14)
    }

    /// Checksum as stored.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 16)
    }

    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        be16(self.buffer.as_ref(), 18)
    }

    /// The options area (`20..header_len`).
    pub fn options(&self) -> &[u8] {
        sub(self.buffer.as_ref(), HEADER_LEN, self.header_len())
    }

    /// The payload (`header_len..`).
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        sub(b, self.header_len(), b.len())
    }

    /// Whether the checksum verifies. `pseudo` is
    /// [`checksum::pseudo_v4`]/[`checksum::pseudo_v6`] with protocol 6 and
    /// the segment length.
    pub fn verify_checksum(&self, pseudo: u32) -> bool {
        checksum::finish(checksum::sum(self.buffer.as_ref(), pseudo)) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Recomputes and stores the checksum over the whole buffer.
    pub fn fill_checksum(&mut self, pseudo: u32) {
        put16(self.buffer.as_mut(), 16, 0);
        let c = checksum::finish(checksum::sum(self.buffer.as_ref(), pseudo));
        put16(self.buffer.as_mut(), 16, c);
    }

    /// Stores `window` in the window field and patches the checksum with
    /// the incremental update of RFC 1624 (no pass over the segment, and
    /// works on the leading fragment of a fragmented segment too, whose
    /// checksum covers bytes this buffer does not hold). Returns the window
    /// the segment had. A checksum that was wrong stays wrong by the same
    /// amount. Does nothing on a buffer shorter than the fixed header.
    pub fn set_window_incremental(&mut self, window: u16) -> u16 {
        let old = self.window();
        if old != window && self.buffer.as_ref().len() >= HEADER_LEN {
            let c = checksum::update(self.checksum(), old, window);
            put16(self.buffer.as_mut(), 14, window);
            put16(self.buffer.as_mut(), 16, c);
        }
        old
    }
}

/// Up to four SACK blocks (RFC 2018), as `(left edge, right edge)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SackBlocks {
    blocks: [(u32, u32); 4],
    len: u8,
}

impl SackBlocks {
    /// No blocks.
    pub const fn new() -> Self {
        SackBlocks {
            blocks: [(0, 0); 4],
            len: 0,
        }
    }

    /// Appends a block; `false` if four are already there.
    pub fn push(&mut self, left: u32, right: u32) -> bool {
        match self.blocks.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = (left, right);
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The blocks in order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.blocks.iter().take(usize::from(self.len)).copied()
    }

    /// Keeps only the first `n` blocks.
    pub fn truncate(&mut self, n: usize) {
        let keep = usize::from(self.len).min(n);
        // Unused slots stay zeroed so that the derived equality only sees
        // the blocks in use.
        for slot in self.blocks.iter_mut().skip(keep) {
            *slot = (0, 0);
        }
        self.len = keep as u8;
    }
}

/// The TCP options ka understands. Unknown options are skipped when parsing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TcpOptions {
    /// Maximum segment size (SYN only).
    pub mss: Option<u16>,
    /// Window scale shift (SYN only).
    pub window_scale: Option<u8>,
    /// SACK-Permitted (SYN only).
    pub sack_permitted: bool,
    /// SACK blocks.
    pub sack: SackBlocks,
    /// Timestamps `(TSval, TSecr)`.
    pub timestamps: Option<(u32, u32)>,
    /// KA-Permitted (SYN and SYN-ACK only).
    pub ka_permitted: bool,
    /// KA-Rate echo.
    pub ka_rate: Option<KaRate>,
    /// RCP-Permitted (SYN and SYN-ACK only; native-RCP baseline).
    pub rcp_permitted: bool,
    /// RCP-Echo (native-RCP baseline).
    pub rcp_echo: Option<RcpEcho>,
    /// XCP-Permitted (SYN and SYN-ACK only; XCP baseline).
    pub xcp_permitted: bool,
    /// XCP-Echo (XCP baseline).
    pub xcp_echo: Option<XcpEcho>,
}

impl TcpOptions {
    /// Parses an options area. Unknown kinds, known kinds with a wrong
    /// length, and experimental options with another ExID are skipped; an
    /// option whose length byte is below 2 or runs past the end is
    /// `BadOption`. A segment is KA, native RCP or XCP: if it carries any
    /// KA option, its RCP and XCP options are ignored, and if it carries an
    /// RCP option, its XCP options are (which also keeps every parsed set
    /// within the 40-byte budget when re-emitted).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let mut o = TcpOptions::default();
        for opt in OptionIter::new(bytes) {
            let opt = opt?;
            let (kind, len) = (opt.kind, opt.bytes.len());
            match (kind, len) {
                (OPT_NOP, _) => {}
                (OPT_MSS, 4) => o.mss = Some(be16(opt.bytes, 2)),
                (OPT_WS, 3) => o.window_scale = Some(byte(opt.bytes, 2)),
                (OPT_SACK_PERM, 2) => o.sack_permitted = true,
                (OPT_TS, 10) => o.timestamps = Some((be32(opt.bytes, 2), be32(opt.bytes, 6))),
                (OPT_SACK, l) if l >= 10 && (l - 2) % 8 == 0 => {
                    let mut blocks = SackBlocks::new();
                    for b in opt.body.chunks_exact(8) {
                        blocks.push(be32(b, 0), be32(b, 4));
                    }
                    o.sack = blocks;
                }
                (OPT_EXP, _) => match KaOption::parse(opt.bytes) {
                    Ok(KaOption::Permitted) => o.ka_permitted = true,
                    Ok(KaOption::Rate(r)) => o.ka_rate = Some(r),
                    Err(_) => match RcpTcpOption::parse(opt.bytes) {
                        Ok(RcpTcpOption::Permitted) => o.rcp_permitted = true,
                        Ok(RcpTcpOption::Echo(e)) => o.rcp_echo = Some(e),
                        Err(_) => match XcpTcpOption::parse(opt.bytes) {
                            Ok(XcpTcpOption::Permitted) => o.xcp_permitted = true,
                            Ok(XcpTcpOption::Echo(e)) => o.xcp_echo = Some(e),
                            Err(_) => {}
                        },
                    },
                },
                _ => {}
            }
        }
        if o.ka_permitted || o.ka_rate.is_some() {
            o.rcp_permitted = false;
            o.rcp_echo = None;
        }
        if o.ka_permitted || o.ka_rate.is_some() || o.rcp_permitted || o.rcp_echo.is_some() {
            o.xcp_permitted = false;
            o.xcp_echo = None;
        }
        Ok(o)
    }

    /// SACK blocks that fit after all the other options (each block 8 bytes,
    /// plus 4 for NOP, NOP, kind, length).
    fn sack_blocks_that_fit(&self) -> usize {
        if self.sack.is_empty() {
            return 0;
        }
        let room = MAX_OPTIONS_LEN.saturating_sub(self.fixed_len());
        room.saturating_sub(4).min(self.sack.len() * 8) / 8
    }

    /// Encoded length of everything but the SACK blocks.
    fn fixed_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.sack_permitted || self.timestamps.is_some() {
            n += if self.timestamps.is_some() { 12 } else { 4 };
        }
        if self.window_scale.is_some() {
            n += 4;
        }
        if self.ka_permitted {
            n += KaPermitted::LEN;
        }
        if self.ka_rate.is_some() {
            n += 2 + KaRate::LEN;
        }
        if self.rcp_permitted {
            n += RcpPermitted::LEN;
        }
        if self.rcp_echo.is_some() {
            n += RcpEcho::LEN;
        }
        if self.xcp_permitted {
            n += XcpPermitted::LEN;
        }
        if self.xcp_echo.is_some() {
            n += XcpEcho::LEN;
        }
        n
    }

    /// The number of bytes [`emit`](Self::emit) writes: a multiple of 4, at
    /// most 40. SACK blocks that do not fit are left out.
    pub fn encoded_len(&self) -> usize {
        let blocks = self.sack_blocks_that_fit();
        self.fixed_len() + if blocks > 0 { 4 + 8 * blocks } else { 0 }
    }

    /// Writes the options, NOP-aligned to 32 bits, into `buf`. Returns the
    /// bytes written ([`encoded_len`](Self::encoded_len)).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let total = self.encoded_len();
        if total > MAX_OPTIONS_LEN {
            return Err(WireError::BadOption);
        }
        let out = buf.get_mut(..total).ok_or(WireError::BufferTooSmall)?;
        let mut n = 0usize;
        if let Some(mss) = self.mss {
            put8(out, n, OPT_MSS);
            put8(out, n + 1, 4);
            put16(out, n + 2, mss);
            n += 4;
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((val, ecr))) => {
                if sp {
                    put8(out, n, OPT_SACK_PERM);
                    put8(out, n + 1, 2);
                } else {
                    put8(out, n, OPT_NOP);
                    put8(out, n + 1, OPT_NOP);
                }
                put8(out, n + 2, OPT_TS);
                put8(out, n + 3, 10);
                put32(out, n + 4, val);
                put32(out, n + 8, ecr);
                n += 12;
            }
            (true, None) => {
                put8(out, n, OPT_NOP);
                put8(out, n + 1, OPT_NOP);
                put8(out, n + 2, OPT_SACK_PERM);
                put8(out, n + 3, 2);
                n += 4;
            }
            (false, None) => {}
        }
        if let Some(ws) = self.window_scale {
            put8(out, n, OPT_NOP);
            put8(out, n + 1, OPT_WS);
            put8(out, n + 2, 3);
            put8(out, n + 3, ws);
            n += 4;
        }
        if self.ka_permitted {
            let dst = out.get_mut(n..).ok_or(WireError::BufferTooSmall)?;
            n += KaPermitted
                .emit(dst)
                .map_err(|_| WireError::BufferTooSmall)?;
        }
        if let Some(rate) = self.ka_rate {
            put8(out, n, OPT_NOP);
            put8(out, n + 1, OPT_NOP);
            let dst = out.get_mut(n + 2..).ok_or(WireError::BufferTooSmall)?;
            n += 2 + rate.emit(dst).map_err(|_| WireError::BadOption)?;
        }
        if self.rcp_permitted {
            let dst = out.get_mut(n..).ok_or(WireError::BufferTooSmall)?;
            n += RcpPermitted
                .emit(dst)
                .map_err(|_| WireError::BufferTooSmall)?;
        }
        if let Some(echo) = self.rcp_echo {
            let dst = out.get_mut(n..).ok_or(WireError::BufferTooSmall)?;
            n += echo.emit(dst).map_err(|_| WireError::BufferTooSmall)?;
        }
        if self.xcp_permitted {
            let dst = out.get_mut(n..).ok_or(WireError::BufferTooSmall)?;
            n += XcpPermitted
                .emit(dst)
                .map_err(|_| WireError::BufferTooSmall)?;
        }
        if let Some(echo) = self.xcp_echo {
            let dst = out.get_mut(n..).ok_or(WireError::BufferTooSmall)?;
            n += echo.emit(dst).map_err(|_| WireError::BufferTooSmall)?;
        }
        let blocks = self.sack_blocks_that_fit();
        if blocks > 0 {
            put8(out, n, OPT_NOP);
            put8(out, n + 1, OPT_NOP);
            put8(out, n + 2, OPT_SACK);
            put8(out, n + 3, (2 + 8 * blocks) as u8);
            n += 4;
            for (l, r) in self.sack.iter().take(blocks) {
                put32(out, n, l);
                put32(out, n + 4, r);
                n += 8;
            }
        }
        debug_assert_eq!(n, total);
        Ok(n)
    }
}

/// A parsed TCP header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number (meaningful when `flags & ACK`).
    pub ack: u32,
    /// Flag bits.
    pub flags: u8,
    /// Window as on the wire (unscaled).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// Options.
    pub options: TcpOptions,
}

impl TcpRepr {
    /// A header from `src_port` to `dst_port` with these sequence and
    /// acknowledgement numbers, flags and (unscaled) window; urgent pointer
    /// 0, no options.
    pub fn new(src_port: u16, dst_port: u16, seq: u32, ack: u32, flags: u8, window: u16) -> Self {
        TcpRepr {
            src_port,
            dst_port,
            seq,
            ack,
            flags,
            window,
            ..TcpRepr::default()
        }
    }

    /// Reads a checked segment's header and options.
    pub fn parse<T: AsRef<[u8]>>(p: &TcpPacket<T>) -> Result<Self, WireError> {
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq(),
            ack: p.ack(),
            flags: p.flags(),
            window: p.window(),
            urgent: p.urgent(),
            options: TcpOptions::parse(p.options())?,
        })
    }

    /// Header length with options.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.encoded_len()
    }

    /// Writes header, options and `payload` into `buf`, then the checksum.
    /// `pseudo` is the pseudo-header sum for protocol 6 and length
    /// `header_len() + payload.len()`. Returns the segment length.
    pub fn emit(&self, buf: &mut [u8], payload: &[u8], pseudo: u32) -> Result<usize, WireError> {
        let hl = self.header_len();
        let total = hl + payload.len();
        let seg = buf.get_mut(..total).ok_or(WireError::BufferTooSmall)?;
        put16(seg, 0, self.src_port);
        put16(seg, 2, self.dst_port);
        put32(seg, 4, self.seq);
        put32(seg, 8, self.ack);
        put8(seg, 12, ((hl / 4) as u8) << 4);
        put8(seg, 13, self.flags);
        put16(seg, 14, self.window);
        put16(seg, 16, 0);
        put16(seg, 18, self.urgent);
        let opts = seg
            .get_mut(HEADER_LEN..hl)
            .ok_or(WireError::BufferTooSmall)?;
        self.options.emit(opts)?;
        seg.get_mut(hl..)
            .ok_or(WireError::BufferTooSmall)?
            .copy_from_slice(payload);
        TcpPacket::new_unchecked(seg).fill_checksum(pseudo);
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::checksum::pseudo_v4;

    const SRC: [u8; 4] = [10, 0, 0, 1];
    const DST: [u8; 4] = [10, 0, 0, 2];

    fn emit(repr: &TcpRepr, payload: &[u8]) -> ([u8; 128], usize) {
        let mut buf = [0u8; 128];
        let len = repr.header_len() + payload.len();
        let n = repr
            .emit(&mut buf, payload, pseudo_v4(SRC, DST, 6, len as u32))
            .unwrap();
        (buf, n)
    }

    #[test]
    fn syn_with_every_option_round_trips() {
        let repr = TcpRepr {
            src_port: 40000,
            dst_port: 5001,
            seq: 0xDEAD_BEEF,
            ack: 0,
            flags: SYN,
            window: 65535,
            urgent: 0,
            options: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((1, 0)),
                ka_permitted: true,
                ..TcpOptions::default()
            },
        };
        let (buf, n) = emit(&repr, &[]);
        assert_eq!(n, 44);
        let p = TcpPacket::new_checked(&buf[..n]).unwrap();
        assert!(p.verify_checksum(pseudo_v4(SRC, DST, 6, n as u32)));
        assert_eq!(TcpRepr::parse(&p).unwrap(), repr);
        // Linux-style layout, then the KA-Permitted option.
        assert_eq!(&buf[20..24], &[2, 4, 0x05, 0xB4]);
        assert_eq!(&buf[24..28], &[4, 2, 8, 10]);
        assert_eq!(&buf[36..40], &[1, 3, 3, 7]);
        assert_eq!(&buf[40..44], &[253, 4, 0x4B, 0x41]);
    }

    #[test]
    fn ack_with_ka_rate_and_sack_fills_40_bytes() {
        let mut sack = SackBlocks::new();
        for i in 0..4 {
            assert!(sack.push(i * 100, i * 100 + 50));
        }
        assert!(!sack.push(1, 2));
        let repr = TcpRepr {
            src_port: 5001,
            dst_port: 40000,
            seq: 1,
            ack: 2,
            flags: ACK,
            window: 100,
            urgent: 0,
            options: TcpOptions {
                timestamps: Some((5, 6)),
                ka_rate: Some(KaRate {
                    code: 125,
                    count: 9,
                }),
                sack,
                ..TcpOptions::default()
            },
        };
        assert_eq!(repr.options.encoded_len(), 40);
        let (buf, n) = emit(&repr, b"hello");
        assert_eq!(n, 65);
        let p = TcpPacket::new_checked(&buf[..n]).unwrap();
        assert_eq!(p.payload(), b"hello");
        let back = TcpRepr::parse(&p).unwrap();
        assert_eq!(
            back.options.ka_rate,
            Some(KaRate {
                code: 125,
                count: 9
            })
        );
        assert_eq!(back.options.sack.len(), 2, "only two blocks fit");
        assert_eq!(&buf[32..40], &[1, 1, 253, 6, 0x4B, 0x41, 125, 9]);
    }

    #[test]
    fn native_rcp_options_round_trip() {
        let syn = TcpRepr {
            src_port: 40000,
            dst_port: 5001,
            seq: 7,
            ack: 0,
            flags: SYN,
            window: 65535,
            urgent: 0,
            options: TcpOptions {
                mss: Some(1452),
                window_scale: Some(5),
                sack_permitted: true,
                timestamps: Some((1, 0)),
                rcp_permitted: true,
                ..TcpOptions::default()
            },
        };
        let (buf, n) = emit(&syn, &[]);
        assert_eq!(n, 44);
        assert_eq!(&buf[40..44], &[253, 4, 0x4B, 0x52]);
        let p = TcpPacket::new_checked(&buf[..n]).unwrap();
        assert_eq!(TcpRepr::parse(&p).unwrap(), syn);

        let mut sack = SackBlocks::new();
        for i in 0..4 {
            sack.push(i * 100, i * 100 + 50);
        }
        let ack = TcpRepr {
            flags: ACK,
            options: TcpOptions {
                timestamps: Some((5, 6)),
                rcp_echo: Some(RcpEcho {
                    rate_bytes_per_sec: 0x0123_4567,
                }),
                sack,
                ..TcpOptions::default()
            },
            ..syn
        };
        // 12 (timestamps) + 8 (echo) + 4 + 2 SACK blocks = 40
        assert_eq!(ack.options.encoded_len(), 40);
        let (buf, n) = emit(&ack, b"x");
        assert_eq!(&buf[32..40], &[253, 8, 0x4B, 0x52, 0x01, 0x23, 0x45, 0x67]);
        let back = TcpRepr::parse(&TcpPacket::new_checked(&buf[..n]).unwrap()).unwrap();
        assert_eq!(back.options.rcp_echo, ack.options.rcp_echo);
        assert_eq!(back.options.sack.len(), 2);
    }

    #[test]
    fn ka_options_take_precedence_over_rcp_options() {
        // KA-Permitted, RCP-Permitted, RCP-Echo, then an unknown experiment.
        let opts = [
            253, 4, 0x4B, 0x41, 253, 4, 0x4B, 0x52, 253, 8, 0x4B, 0x52, 0, 0, 0, 9, 253, 4, 0x12,
            0x34,
        ];
        let o = TcpOptions::parse(&opts).unwrap();
        assert!(o.ka_permitted);
        assert!(!o.rcp_permitted && o.rcp_echo.is_none());
        let o = TcpOptions::parse(&opts[4..]).unwrap();
        assert!(o.rcp_permitted && !o.ka_permitted);
        assert_eq!(o.rcp_echo.map(|e| e.rate_bytes_per_sec), Some(9));
        // A wrong length for the RCP ExID is skipped, not an error.
        let o = TcpOptions::parse(&[253, 6, 0x4B, 0x52, 1, 2]).unwrap();
        assert_eq!(o, TcpOptions::default());
    }

    #[test]
    fn checksum_detects_corruption() {
        let repr = TcpRepr {
            flags: ACK,
            ..TcpRepr::default()
        };
        let (mut buf, n) = emit(&repr, b"abc");
        let pseudo = pseudo_v4(SRC, DST, 6, n as u32);
        assert!(
            TcpPacket::new_checked(&buf[..n])
                .unwrap()
                .verify_checksum(pseudo)
        );
        buf[21] ^= 1;
        assert!(
            !TcpPacket::new_checked(&buf[..n])
                .unwrap()
                .verify_checksum(pseudo)
        );
    }

    #[test]
    fn options_lenient_but_bounded() {
        // Unknown kind 30 (len 3) skipped, MSS with a wrong length skipped,
        // foreign experimental option skipped.
        let o = TcpOptions::parse(&[30, 3, 0, 2, 5, 0, 0, 0, 253, 4, 0x12, 0x34, 1, 0]).unwrap();
        assert_eq!(o, TcpOptions::default());
        assert_eq!(TcpOptions::parse(&[2, 0]), Err(WireError::BadOption));
        assert_eq!(TcpOptions::parse(&[2, 4, 1]), Err(WireError::BadOption));
        assert_eq!(TcpOptions::parse(&[8]), Err(WireError::BadOption));
    }

    #[test]
    fn checked_header_len() {
        let mut b = [0u8; 24];
        b[12] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err(),
            WireError::BadHeaderLen
        );
        b[12] = 0x70;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err(),
            WireError::Truncated
        );
        b[12] = 0x50;
        assert_eq!(TcpPacket::new_checked(&b[..]).unwrap().payload().len(), 4);
    }
}

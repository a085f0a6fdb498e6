//! A streaming reader for pcap and pcapng files that knows where it is.
//!
//! Written here rather than taken from `pcap-file` so that every error
//! names the byte offset it was found at and nothing can panic or allocate
//! without bound on a corrupt file: a record or block is read only after
//! its length has been checked against [`MAX_RECORD`] / [`MAX_BLOCK`].
//!
//! * pcap (`tcpdump -w`, `ka-router --pcap`): both byte orders, microsecond
//!   and nanosecond magic, the link type from the file header.
//! * pcapng (tshark, Wireshark, `tcpdump --pcapng`): sections of either byte
//!   order, Interface Description (link type, `if_tsresol`), Enhanced,
//!   Simple and obsolete Packet blocks; other blocks are skipped.

use std::fmt;
use std::io::{self, BufReader, Read};
use std::time::Duration;

/// Longest captured packet accepted (pcap's usual snaplen cap is 262 144).
pub const MAX_RECORD: usize = 262_144;
/// Longest pcapng block accepted.
pub const MAX_BLOCK: usize = 16 << 20;
/// Most interfaces a pcapng section may describe.
pub const MAX_INTERFACES: usize = 4096;

/// A capture that cannot be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    /// Byte offset in the file where the problem starts.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
    /// The file ended early (the records before `offset` were fine).
    pub truncated: bool,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for CaptureError {}

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Capture time since the Unix epoch (pcapng Simple Packet blocks, which
    /// have none, get the previous record's).
    pub ts: Duration,
    /// The link type of the interface it was captured on (`LINKTYPE_*`).
    pub linktype: u32,
    /// The captured bytes (possibly cut at the snap length).
    pub data: Vec<u8>,
    /// The packet's length on the wire.
    pub orig_len: u32,
}

#[derive(Debug, Clone, Copy)]
enum Format {
    Pcap {
        big: bool,
        nanos: bool,
        linktype: u32,
    },
    PcapNg {
        big: bool,
    },
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: u32,
    /// Timestamp units per second.
    units: u64,
}

/// Reads records one at a time from any `Read`.
pub struct CaptureReader<R: Read> {
    r: BufReader<R>,
    offset: u64,
    format: Format,
    interfaces: Vec<Interface>,
    last_ts: Duration,
}

impl<R: Read> fmt::Debug for CaptureReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("offset", &self.offset)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

fn u16_of(b: &[u8], at: usize, big: bool) -> u16 {
    let mut x = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        x.copy_from_slice(s);
    }
    if big {
        u16::from_be_bytes(x)
    } else {
        u16::from_le_bytes(x)
    }
}

fn u32_of(b: &[u8], at: usize, big: bool) -> u32 {
    let mut x = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        x.copy_from_slice(s);
    }
    if big {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    }
}

const PCAPNG_SHB: u32 = 0x0A0D_0D0A;
const PCAPNG_BOM: u32 = 0x1A2B_3C4D;

impl<R: Read> CaptureReader<R> {
    /// Reads the file header and recognises the format.
    pub fn new(inner: R) -> Result<Self, CaptureError> {
        let mut me = Self {
            r: BufReader::with_capacity(1 << 16, inner),
            offset: 0,
            format: Format::PcapNg { big: false },
            interfaces: Vec::new(),
            last_ts: Duration::ZERO,
        };
        let mut head = [0u8; 4];
        me.fill(&mut head, "the file header")?;
        let le = u32::from_le_bytes(head);
        let be = u32::from_be_bytes(head);
        me.format = match (le, be) {
            (0xA1B2_C3D4, _) | (_, 0xA1B2_C3D4) | (0xA1B2_3C4D, _) | (_, 0xA1B2_3C4D) => {
                let big = be == 0xA1B2_C3D4 || be == 0xA1B2_3C4D;
                let nanos = le == 0xA1B2_3C4D || be == 0xA1B2_3C4D;
                let mut rest = [0u8; 20];
                me.fill(&mut rest, "the pcap file header")?;
                Format::Pcap {
                    big,
                    nanos,
                    linktype: u32_of(&rest, 16, big) & 0xFFFF,
                }
            }
            (PCAPNG_SHB, _) => {
                me.section_header()?;
                me.format
            }
            _ => {
                return Err(CaptureError {
                    offset: 0,
                    what: format!(
                        "not a pcap or pcapng file (magic {:02x}{:02x}{:02x}{:02x})",
                        head[0], head[1], head[2], head[3]
                    ),
                    truncated: false,
                });
            }
        };
        Ok(me)
    }

    /// Bytes consumed so far (the offset of the next record).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn err(&self, at: u64, what: String) -> CaptureError {
        CaptureError {
            offset: at,
            what,
            truncated: false,
        }
    }

    /// Fills `buf` or fails with a truncation error naming `what`.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), CaptureError> {
        let start = self.offset;
        let mut got = 0;
        while got < buf.len() {
            let Some(rest) = buf.get_mut(got..) else {
                break;
            };
            match self.r.read(rest) {
                Ok(0) => {
                    return Err(CaptureError {
                        offset: start,
                        what: format!("the file ends inside {what} ({got} of {} bytes)", buf.len()),
                        truncated: true,
                    });
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(start + got as u64, format!("read error: {e}"))),
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// At a record boundary: `true` if the file ends here.
    fn at_eof(&mut self) -> Result<bool, CaptureError> {
        use std::io::BufRead;
        loop {
            match self.r.fill_buf() {
                Ok(b) => return Ok(b.is_empty()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(self.offset, format!("read error: {e}"))),
            }
        }
    }

    /// Reads the rest of a pcapng Section Header Block whose type field
    /// has just been read.
    fn section_header(&mut self) -> Result<(), CaptureError> {
        let at = self.offset - 4;
        let mut lens = [0u8; 8];
        self.fill(&mut lens, "a pcapng section header")?;
        let bom = &lens[4..8];
        let big = match (u32_of(bom, 0, false), u32_of(bom, 0, true)) {
            (PCAPNG_BOM, _) => false,
            (_, PCAPNG_BOM) => true,
            _ => {
                return Err(self.err(
                    at + 8,
                    "pcapng section header without a valid byte-order magic".into(),
                ));
            }
        };
        let total = u32_of(&lens, 0, big) as usize;
        if !(28..=MAX_BLOCK).contains(&total) || !total.is_multiple_of(4) {
            return Err(self.err(at, format!("pcapng section header of length {total}")));
        }
        let mut rest = vec![0u8; total - 12];
        self.fill(&mut rest, "a pcapng section header")?;
        self.format = Format::PcapNg { big };
        self.interfaces.clear();
        Ok(())
    }

    /// The next packet, `Ok(None)` at a clean end of file.
    pub fn next_record(&mut self) -> Result<Option<Record>, CaptureError> {
        loop {
            if self.at_eof()? {
                return Ok(None);
            }
            match self.format {
                Format::Pcap {
                    big,
                    nanos,
                    linktype,
                } => return self.pcap_record(big, nanos, linktype).map(Some),
                Format::PcapNg { big } => {
                    if let Some(r) = self.pcapng_block(big)? {
                        return Ok(Some(r));
                    }
                }
            }
        }
    }

    fn pcap_record(
        &mut self,
        big: bool,
        nanos: bool,
        linktype: u32,
    ) -> Result<Record, CaptureError> {
        let at = self.offset;
        let mut h = [0u8; 16];
        self.fill(&mut h, "a pcap record header")?;
        let (sec, frac) = (u32_of(&h, 0, big), u32_of(&h, 4, big));
        let incl = u32_of(&h, 8, big) as usize;
        let orig_len = u32_of(&h, 12, big);
        if incl > MAX_RECORD {
            return Err(self.err(
                at,
                format!("pcap record of {incl} bytes (over {MAX_RECORD}: corrupt capture?)"),
            ));
        }
        if (!nanos && frac >= 1_000_000) || (nanos && frac >= 1_000_000_000) {
            return Err(self.err(at, format!("pcap record with a sub-second field of {frac}")));
        }
        let mut data = vec![0u8; incl];
        self.fill(&mut data, "a pcap record's data")?;
        let ts = Duration::new(
            u64::from(sec),
            if nanos {
                frac
            } else {
                frac.saturating_mul(1000)
            },
        );
        self.last_ts = ts;
        Ok(Record {
            ts,
            linktype,
            data,
            orig_len,
        })
    }

    /// One pcapng block: a packet, or `None` for any other block.
    fn pcapng_block(&mut self, big: bool) -> Result<Option<Record>, CaptureError> {
        let at = self.offset;
        let mut t = [0u8; 4];
        self.fill(&mut t, "a pcapng block header")?;
        if u32_of(&t, 0, false) == PCAPNG_SHB {
            // A new section: its own byte order and interfaces.
            self.section_header()?;
            return Ok(None);
        }
        let mut l = [0u8; 4];
        self.fill(&mut l, "a pcapng block header")?;
        let mut h = [0u8; 8];
        h[..4].copy_from_slice(&t);
        h[4..].copy_from_slice(&l);
        let kind = u32_of(&h, 0, big);
        let total = u32_of(&h, 4, big) as usize;
        if !(12..=MAX_BLOCK).contains(&total) || !total.is_multiple_of(4) {
            return Err(self.err(
                at,
                format!("pcapng block of type {kind:#x} with length {total}"),
            ));
        }
        let mut body = vec![0u8; total - 8];
        self.fill(&mut body, "a pcapng block")?;
        let trailer = u32_of(&body, total - 12, big) as usize;
        if trailer != total {
            return Err(self.err(
                at,
                format!(
                    "pcapng block lengths disagree ({total} at the start, {trailer} at the end)"
                ),
            ));
        }
        let body = body.get(..total - 12).unwrap_or(&[]);
        match kind {
            // Interface Description Block.
            1 => {
                if self.interfaces.len() >= MAX_INTERFACES {
                    return Err(self.err(at, format!("more than {MAX_INTERFACES} interfaces")));
                }
                let linktype = u32::from(u16_of(body, 0, big));
                let mut units = 1_000_000u64;
                // Options after linktype(2) reserved(2) snaplen(4).
                let mut o = 8usize;
                while o + 4 <= body.len() {
                    let code = u16_of(body, o, big);
                    let len = usize::from(u16_of(body, o + 2, big));
                    if code == 0 {
                        break;
                    }
                    if code == 9
                        && len == 1
                        && let Some(&r) = body.get(o + 4)
                    {
                        units = if r & 0x80 != 0 {
                            1u64.checked_shl(u32::from(r & 0x7F)).unwrap_or(0)
                        } else {
                            10u64.checked_pow(u32::from(r)).unwrap_or(0)
                        };
                        if units == 0 {
                            return Err(self.err(at, format!("if_tsresol {r:#x} out of range")));
                        }
                    }
                    o += 4 + len.div_ceil(4) * 4;
                }
                self.interfaces.push(Interface { linktype, units });
                Ok(None)
            }
            // Enhanced Packet Block, obsolete Packet Block.
            6 | 2 => {
                let (iface, hi, lo, caplen, orig, data_at) = if kind == 6 {
                    (
                        u32_of(body, 0, big) as usize,
                        u32_of(body, 4, big),
                        u32_of(body, 8, big),
                        u32_of(body, 12, big) as usize,
                        u32_of(body, 16, big),
                        20,
                    )
                } else {
                    (
                        usize::from(u16_of(body, 0, big)),
                        u32_of(body, 4, big),
                        u32_of(body, 8, big),
                        u32_of(body, 12, big) as usize,
                        u32_of(body, 16, big),
                        20,
                    )
                };
                let i = *self.interfaces.get(iface).ok_or_else(|| {
                    self.err(
                        at,
                        format!("packet block for undescribed interface {iface}"),
                    )
                })?;
                let data = body.get(data_at..data_at + caplen).ok_or_else(|| {
                    self.err(
                        at,
                        format!("packet block claims {caplen} captured bytes, holds fewer"),
                    )
                })?;
                let raw = (u64::from(hi) << 32) | u64::from(lo);
                // In 128 bits: a file may declare up to 2⁶³ units per
                // second (if_tsresol), and the remainder times 10⁹ would
                // overflow 64. The quotient is below 10⁹.
                let nanos = u128::from(raw % i.units) * 1_000_000_000 / u128::from(i.units);
                let ts = Duration::new(raw / i.units, nanos as u32);
                self.last_ts = ts;
                Ok(Some(Record {
                    ts,
                    linktype: i.linktype,
                    data: data.to_vec(),
                    orig_len: orig,
                }))
            }
            // Simple Packet Block: interface 0, no timestamp.
            3 => {
                let i = *self.interfaces.first().ok_or_else(|| {
                    self.err(at, "simple packet block before any interface".into())
                })?;
                let orig = u32_of(body, 0, big);
                let n = (orig as usize).min(body.len().saturating_sub(4));
                let data = body.get(4..4 + n).unwrap_or(&[]).to_vec();
                Ok(Some(Record {
                    ts: self.last_ts,
                    linktype: i.linktype,
                    data,
                    orig_len: orig,
                }))
            }
            _ => Ok(None),
        }
    }
}

impl<R: Read> Iterator for CaptureReader<R> {
    type Item = Result<Record, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

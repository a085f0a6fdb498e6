//! The constant-bit-rate UDP source ([`CbrSource`]).

use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use ka_codec::RcpOption;
use ka_codec::scale::Scale;
use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_UDP};

use super::feedback::{DataHeader, Feedback, FeedbackError};
use super::{UDP_HEADER_LEN, parse_udp};

/// How long a controlled source waits for its first fresh report before it
/// halves its rate (RFC 5348 §4.2: the initial no-feedback timer of TFRC).
pub const INITIAL_NOFEEDBACK: Duration = Duration::from_secs(2);

/// RTT samples above this are discarded (a stale or forged echo).
pub const MAX_RTT_SAMPLE: Duration = Duration::from_secs(60);

/// Configuration of a [`CbrSource`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CbrConfig {
    /// Our address and port.
    pub local: SocketAddrV4,
    /// The sink's address and port.
    pub remote: SocketAddrV4,
    /// The application's constant bit rate (IP bytes · 8 per second). The
    /// source never sends faster.
    pub app_rate_bps: u64,
    /// IP total length of every datagram. Default 1500.
    pub packet_bytes: usize,
    /// Obey the rate the sink reports (LCCP). `false` = a plain CBR source
    /// that sends at `app_rate_bps` whatever happens. Default true.
    pub controlled: bool,
    /// Rate before the first fresh report (controlled only; never above
    /// `app_rate_bps`). Default 120 kbit/s, the slowest rate of the paper's
    /// KA scale.
    pub initial_rate_bps: u64,
    /// Floor of the no-feedback halving (controlled only). Default 8 kbit/s.
    pub min_rate_bps: u64,
    /// The scale KA codes in reports are decoded with. Default
    /// [`Scale::PAPER`].
    pub scale: Scale,
    /// Carry the native-RCP IPv4 option (DESIGN §7.1) so an RCP carrier can
    /// signal too. Default true for controlled sources.
    pub rcp_option: bool,
    /// Set Don't-Fragment. A controlled source must not (a KA middlebox
    /// signals by fragmenting); a plain CBR application does (Linux sets DF
    /// on UDP while path-MTU discovery is on). Default `!controlled`.
    pub dont_fragment: bool,
}

impl CbrConfig {
    /// A controlled source from `local` to `remote` at `app_rate_bps`,
    /// everything else at its default.
    pub fn new(local: SocketAddrV4, remote: SocketAddrV4, app_rate_bps: u64) -> Self {
        Self {
            local,
            remote,
            app_rate_bps,
            packet_bytes: 1500,
            controlled: true,
            initial_rate_bps: 120_000,
            min_rate_bps: 8_000,
            scale: Scale::PAPER,
            rcp_option: true,
            dont_fragment: false,
        }
    }

    /// The same source, uncontrolled (plain CBR: no option, DF set).
    pub fn uncontrolled(self) -> Self {
        Self {
            controlled: false,
            rcp_option: false,
            dont_fragment: true,
            ..self
        }
    }

    fn header_len(&self) -> usize {
        20 + if self.rcp_option { RcpOption::LEN } else { 0 }
    }

    /// The smallest `packet_bytes` this configuration allows (IP header, UDP
    /// header, [`DataHeader`]).
    pub fn min_packet_bytes(&self) -> usize {
        self.header_len() + UDP_HEADER_LEN + DataHeader::LEN
    }
}

/// Why a [`CbrConfig`] is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CbrError {
    /// `packet_bytes` is below [`CbrConfig::min_packet_bytes`] or above
    /// 65 535.
    #[error("packet size {0} out of range")]
    PacketSize(usize),
    /// A rate is zero.
    #[error("rates must be > 0")]
    ZeroRate,
}

/// What [`CbrSource::handle_packet`] made of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceInput {
    /// A report with a fresh signal: the rate is now the one it signals.
    Fresh,
    /// A well-formed report without a fresh signal (or to an uncontrolled
    /// source): RTT sample only.
    Stale,
    /// Not for us (other addresses, not UDP, not a valid IPv4 packet).
    NotOurs,
    /// For us, but not a feedback report.
    Malformed(FeedbackError),
}

/// Counters of a [`CbrSource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CbrStats {
    /// Datagrams sent.
    pub datagrams: u64,
    /// IP bytes sent.
    pub bytes: u64,
    /// Reports with a fresh signal.
    pub fresh_reports: u64,
    /// Reports without one.
    pub stale_reports: u64,
    /// Packets for us that were not reports.
    pub malformed: u64,
    /// Times the no-feedback timer halved the rate.
    pub halvings: u64,
    /// `poll_transmit` calls whose buffer was too small (the datagram was
    /// skipped).
    pub buffer_too_small: u64,
}

/// A constant-bit-rate UDP source that paces at `min(app rate, signalled
/// rate)`. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct CbrSource {
    cfg: CbrConfig,
    /// Zero of the µs timestamps.
    epoch: Instant,
    active: bool,
    rate_bps: u64,
    /// The latest signalled rate, if any.
    signalled_bps: Option<u64>,
    next_send: Instant,
    last_send: Option<Instant>,
    /// Sub-nanosecond remainder of the pacing gaps (`< rate_bps`).
    rem: u128,
    seq: u32,
    last_count: Option<u16>,
    srtt: Option<Duration>,
    nofeedback_at: Instant,
    stats: CbrStats,
}

impl CbrSource {
    /// A stopped source (call [`CbrSource::start`]).
    pub fn new(cfg: CbrConfig, now: Instant) -> Result<Self, CbrError> {
        if cfg.packet_bytes < cfg.min_packet_bytes() || cfg.packet_bytes > usize::from(u16::MAX) {
            return Err(CbrError::PacketSize(cfg.packet_bytes));
        }
        if cfg.app_rate_bps == 0 || (cfg.controlled && cfg.initial_rate_bps == 0) {
            return Err(CbrError::ZeroRate);
        }
        let rate_bps = if cfg.controlled {
            cfg.initial_rate_bps.min(cfg.app_rate_bps)
        } else {
            cfg.app_rate_bps
        };
        Ok(Self {
            cfg,
            epoch: now,
            active: false,
            rate_bps,
            signalled_bps: None,
            next_send: now,
            last_send: None,
            rem: 0,
            seq: 0,
            last_count: None,
            srtt: None,
            nofeedback_at: now + INITIAL_NOFEEDBACK,
            stats: CbrStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &CbrConfig {
        &self.cfg
    }

    /// Starts sending at `now` (first datagram at once).
    pub fn start(&mut self, now: Instant) {
        if !self.active {
            self.active = true;
            self.next_send = now;
            self.rem = 0;
            self.nofeedback_at = now + self.nofeedback_interval();
        }
    }

    /// Stops sending.
    pub fn stop(&mut self) {
        self.active = false;
    }

    /// Whether the source is sending.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The rate it paces at now, bit/s (IP bytes).
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The latest rate a fresh report signalled, bit/s.
    pub fn signalled_bps(&self) -> Option<u64> {
        self.signalled_bps
    }

    /// The smoothed RTT from echoed timestamps.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// Counters.
    pub fn stats(&self) -> CbrStats {
        self.stats
    }

    /// When the source next needs [`CbrSource::poll_transmit`] or
    /// [`CbrSource::handle_timeout`]; `None` while stopped.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.active {
            return None;
        }
        Some(if self.cfg.controlled {
            self.next_send.min(self.nofeedback_at)
        } else {
            self.next_send
        })
    }

    /// Runs the no-feedback timer (RFC 5348 §4.4): a controlled source that
    /// heard no fresh signal for `max(4·srtt, 2 packet times)` halves its
    /// rate, down to `min_rate_bps`, and re-arms the timer.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !(self.active && self.cfg.controlled) || now < self.nofeedback_at {
            return;
        }
        let halved = (self.rate_bps / 2).max(self.cfg.min_rate_bps.max(1));
        if halved < self.rate_bps {
            self.stats.halvings += 1;
            self.set_rate(halved);
        }
        self.nofeedback_at = now + self.nofeedback_interval();
    }

    /// The next datagram if one is due at `now`: written to `buf`, returns
    /// its length. Call until `None`. `buf` must hold `packet_bytes`; if it
    /// does not, the datagram is skipped (counted) so pacing goes on.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if !self.active || now < self.next_send {
            return None;
        }
        let len = self.cfg.packet_bytes;
        let gap = self.gap(len);
        // Late by more than one gap (a driver that woke late): restart from
        // `now` rather than catching up in a burst.
        let base = match now.checked_sub(gap) {
            Some(floor) if self.next_send < floor => now,
            _ => self.next_send,
        };
        self.last_send = Some(base);
        self.next_send = base + gap;
        let header = DataHeader {
            seq: self.seq,
            ts_us: self.ts_us(now),
        };
        self.seq = self.seq.wrapping_add(1);
        match self.write_datagram(buf, header) {
            Some(n) => {
                self.stats.datagrams += 1;
                self.stats.bytes += n as u64;
                Some(n)
            }
            None => {
                self.stats.buffer_too_small += 1;
                None
            }
        }
    }

    /// A packet arrived. Reports from the sink (UDP from `remote` to
    /// `local`) update the rate and the RTT; anything else is classified
    /// and ignored. Never panics on any bytes.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) -> SourceInput {
        let Some((src, dst, payload)) = parse_udp(packet) else {
            return SourceInput::NotOurs;
        };
        if src != self.cfg.remote || dst != self.cfg.local {
            return SourceInput::NotOurs;
        }
        let fb = match Feedback::parse(payload) {
            Ok(fb) => fb,
            Err(e) => {
                self.stats.malformed += 1;
                return SourceInput::Malformed(e);
            }
        };
        self.rtt_sample(now, fb.echo_ts);
        let fresh = self.cfg.controlled && self.last_count != Some(fb.count);
        let rate = fresh.then(|| self.decode(&fb)).flatten();
        let Some(signalled) = rate else {
            self.stats.stale_reports += 1;
            return SourceInput::Stale;
        };
        self.last_count = Some(fb.count);
        self.stats.fresh_reports += 1;
        self.signalled_bps = Some(signalled);
        self.set_rate(signalled.min(self.cfg.app_rate_bps).max(1));
        self.nofeedback_at = now + self.nofeedback_interval();
        SourceInput::Fresh
    }

    /// The rate a report signals: the smaller of its KA code (decoded with
    /// our scale) and its RCP rate; `None` if it has neither.
    fn decode(&self, fb: &Feedback) -> Option<u64> {
        let ka = self
            .cfg
            .scale
            .code_from_wire(fb.ka_code)
            .map(|c| (self.cfg.scale.decode(c) * 8000.0) as u64);
        let rcp = (fb.rcp_rate != 0 && fb.rcp_rate != u32::MAX)
            .then(|| u64::from(fb.rcp_rate).saturating_mul(8));
        match (ka, rcp) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .filter(|&r| r > 0)
    }

    fn set_rate(&mut self, bps: u64) {
        if bps == self.rate_bps {
            return;
        }
        self.rate_bps = bps;
        self.rem = 0;
        // The next departure follows the new rate from the last one.
        if let Some(last) = self.last_send {
            self.next_send = last + self.gap(self.cfg.packet_bytes);
        }
    }

    /// The pacing gap of a `len`-byte datagram at the current rate; carries
    /// the sub-nanosecond remainder so the long-run rate is exact.
    fn gap(&mut self, len: usize) -> Duration {
        let rate = u128::from(self.rate_bps.max(1));
        let num = (len as u128) * 8 * 1_000_000_000 + self.rem;
        self.rem = num % rate;
        Duration::from_nanos(u64::try_from(num / rate).unwrap_or(u64::MAX))
    }

    fn nofeedback_interval(&self) -> Duration {
        match self.srtt {
            None => INITIAL_NOFEEDBACK,
            Some(s) => {
                let two_packets = Duration::from_secs_f64(
                    2.0 * self.cfg.packet_bytes as f64 * 8.0 / self.rate_bps.max(1) as f64,
                );
                (4 * s).max(two_packets)
            }
        }
    }

    fn ts_us(&self, now: Instant) -> u32 {
        // Wrapping by design: only differences are used.
        now.saturating_duration_since(self.epoch).as_micros() as u32
    }

    fn rtt_sample(&mut self, now: Instant, echo_ts: u32) {
        let sample = Duration::from_micros(u64::from(self.ts_us(now).wrapping_sub(echo_ts)));
        if sample > MAX_RTT_SAMPLE {
            return;
        }
        // RFC 6298 gain 1/8.
        self.srtt = Some(match self.srtt {
            None => sample,
            Some(s) => s - s / 8 + sample / 8,
        });
    }

    fn write_datagram(&self, buf: &mut [u8], header: DataHeader) -> Option<usize> {
        let len = self.cfg.packet_bytes;
        let hl = self.cfg.header_len();
        let b = buf.get_mut(..len)?;
        b.fill(0);
        let total = u16::try_from(len).ok()?;
        *b.first_mut()? = 0x40 | (hl / 4) as u8;
        {
            let mut p = Ipv4Packet::new_unchecked(&mut *b);
            p.set_total_len(total);
            p.set_ident(header.seq as u16);
            p.set_flags_and_offset(self.cfg.dont_fragment, false, 0);
            p.set_ttl(64);
            p.set_protocol(PROTO_UDP);
            p.set_src_addr(self.cfg.local.ip().octets());
            p.set_dst_addr(self.cfg.remote.ip().octets());
        }
        if self.cfg.rcp_option {
            let rtt_ms = self.srtt.map_or(0, |s| {
                u16::try_from(s.as_millis().max(1)).unwrap_or(u16::MAX)
            });
            let opt = RcpOption {
                rate_bytes_per_sec: u32::MAX,
                rtt_ms,
            };
            opt.emit(b.get_mut(20..hl)?).ok()?;
        }
        let udp_len = u16::try_from(len - hl).ok()?;
        let udp = b.get_mut(hl..)?;
        udp.get_mut(0..2)?
            .copy_from_slice(&self.cfg.local.port().to_be_bytes());
        udp.get_mut(2..4)?
            .copy_from_slice(&self.cfg.remote.port().to_be_bytes());
        udp.get_mut(4..6)?.copy_from_slice(&udp_len.to_be_bytes());
        // Checksum 0: "no checksum" (RFC 768), allowed over IPv4.
        udp.get_mut(UDP_HEADER_LEN..UDP_HEADER_LEN + DataHeader::LEN)?
            .copy_from_slice(&header.to_bytes());
        Ipv4Packet::new_unchecked(&mut *b).fill_checksum();
        Some(len)
    }
}

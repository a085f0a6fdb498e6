//! The receiving end of LCCP-controlled UDP ([`CbrSink`]).

use std::net::SocketAddrV4;

use ka_codec::rcp_option;
use ka_codec::scale::Scale;
use ka_codec::wire::ipv4::{Ipv4Packet, PROTO_UDP};

use super::feedback::{DataHeader, Feedback};
use super::{UDP_HEADER_LEN, be16};

/// Configuration of a [`CbrSink`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SinkConfig {
    /// Our address and port.
    pub local: SocketAddrV4,
    /// Send a report after this many data datagrams (and at once when the
    /// signal changes); 0 = never report (the sink of a plain CBR source).
    /// Default 2, like TCP's delayed ACK.
    pub report_every: u32,
    /// The scale leading-fragment lengths are checked against (lengths
    /// that are not a code of it are no signal). Default [`Scale::PAPER`].
    pub scale: Scale,
}

impl SinkConfig {
    /// A reporting sink on `local`.
    pub fn new(local: SocketAddrV4) -> Self {
        Self {
            local,
            report_every: 2,
            scale: Scale::PAPER,
        }
    }
}

/// Counters of a [`CbrSink`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// IP pieces (datagrams and fragments) accepted from the peer.
    pub pieces: u64,
    /// Application bytes those pieces carried (UDP payload).
    pub app_bytes: u64,
    /// IP bytes those pieces carried.
    pub ip_bytes: u64,
    /// Pieces from another source or to another port (ignored).
    pub foreign: u64,
    /// Pieces that are not valid IPv4/UDP to us (ignored).
    pub malformed: u64,
    /// Reports sent.
    pub reports: u64,
}

/// Reads the LCCP signal off arriving datagrams — the payload length of a
/// KA leading fragment, or the native-RCP option's rate — and reports it
/// to the source. Serves one source: the first that sends a well-formed
/// datagram to `local` (later ones from elsewhere are counted as foreign),
/// so its memory is constant.
#[derive(Debug, Clone)]
pub struct CbrSink {
    cfg: SinkConfig,
    peer: Option<SocketAddrV4>,
    latest: Feedback,
    /// (ka_code, rcp_rate) of the last report sent.
    reported: (u8, u32),
    since_report: u32,
    pending: bool,
    stats: SinkStats,
}

impl CbrSink {
    /// A sink on `cfg.local`.
    pub fn new(cfg: SinkConfig) -> Self {
        Self {
            cfg,
            peer: None,
            latest: Feedback::default(),
            reported: (0, 0),
            since_report: 0,
            pending: false,
            stats: SinkStats::default(),
        }
    }

    /// The source this sink serves, once known.
    pub fn peer(&self) -> Option<SocketAddrV4> {
        self.peer
    }

    /// What the next report would say.
    pub fn latest(&self) -> Feedback {
        self.latest
    }

    /// Counters.
    pub fn stats(&self) -> SinkStats {
        self.stats
    }

    /// An IP packet (a whole datagram or a fragment of one) arrived.
    /// Returns the application bytes it delivered (0 if it was ignored).
    /// Never panics on any bytes.
    pub fn handle_packet(&mut self, packet: &[u8]) -> usize {
        let Ok(p) = Ipv4Packet::new_checked(packet) else {
            self.stats.malformed += 1;
            return 0;
        };
        if p.protocol() != PROTO_UDP || p.dst_addr() != self.cfg.local.ip().octets() {
            self.stats.foreign += 1;
            return 0;
        }
        let payload = p.payload();
        let app = if p.frag_offset() == 0 {
            match self.first_piece(&p, payload) {
                Some(()) => payload.len().saturating_sub(UDP_HEADER_LEN),
                None => return 0,
            }
        } else {
            // A later fragment carries no UDP header: attribute it by the
            // source address.
            if self
                .peer
                .is_none_or(|peer| peer.ip().octets() != p.src_addr())
            {
                self.stats.foreign += 1;
                return 0;
            }
            payload.len()
        };
        self.stats.pieces += 1;
        self.stats.app_bytes += app as u64;
        self.stats.ip_bytes += p.total_len() as u64;
        app
    }

    /// The first piece of a datagram: check ports, read the signal.
    fn first_piece(&mut self, p: &Ipv4Packet<&[u8]>, payload: &[u8]) -> Option<()> {
        let Some((sport, dport)) = be16(payload, 0).zip(be16(payload, 2)) else {
            self.stats.malformed += 1;
            return None;
        };
        let src = SocketAddrV4::new(p.src_addr().into(), sport);
        if dport != self.cfg.local.port() || self.peer.is_some_and(|peer| peer != src) {
            self.stats.foreign += 1;
            return None;
        }
        let Some(header) = payload.get(UDP_HEADER_LEN..).and_then(DataHeader::parse) else {
            self.stats.malformed += 1;
            return None;
        };
        self.peer = Some(src);
        let mut signal = false;
        if p.more_frags()
            && let Some(code) = self.cfg.scale.code_from_len(payload.len())
        {
            self.latest.ka_code = code.wire();
            signal = true;
        }
        if let Ok(Some((_, opt))) = rcp_option::find_in(p.options())
            && opt.rate_bytes_per_sec != u32::MAX
            && opt.rate_bytes_per_sec != 0
        {
            self.latest.rcp_rate = opt.rate_bytes_per_sec;
            signal = true;
        }
        if signal {
            self.latest.count = self.latest.count.wrapping_add(1);
        }
        self.latest.echo_ts = header.ts_us;
        self.latest.received = self.latest.received.wrapping_add(1);
        self.since_report += 1;
        if self.cfg.report_every > 0
            && (self.since_report >= self.cfg.report_every
                || (self.latest.ka_code, self.latest.rcp_rate) != self.reported)
        {
            self.pending = true;
        }
        Some(())
    }

    /// The report due, if any, written to `buf` as a whole IPv4/UDP packet;
    /// returns its length (48 bytes; `None` if `buf` is shorter).
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<usize> {
        if !self.pending {
            return None;
        }
        let peer = self.peer?;
        let len = 20 + UDP_HEADER_LEN + Feedback::LEN;
        let b = buf.get_mut(..len)?;
        b.fill(0);
        *b.first_mut()? = 0x45;
        {
            let mut p = Ipv4Packet::new_unchecked(&mut *b);
            p.set_total_len(len as u16);
            p.set_ident(self.stats.reports as u16);
            p.set_flags_and_offset(true, false, 0);
            p.set_ttl(64);
            p.set_protocol(PROTO_UDP);
            p.set_src_addr(self.cfg.local.ip().octets());
            p.set_dst_addr(peer.ip().octets());
            p.fill_checksum();
        }
        let udp = b.get_mut(20..)?;
        udp.get_mut(0..2)?
            .copy_from_slice(&self.cfg.local.port().to_be_bytes());
        udp.get_mut(2..4)?
            .copy_from_slice(&peer.port().to_be_bytes());
        udp.get_mut(4..6)?
            .copy_from_slice(&((UDP_HEADER_LEN + Feedback::LEN) as u16).to_be_bytes());
        udp.get_mut(UDP_HEADER_LEN..)?
            .copy_from_slice(&self.latest.to_bytes());
        self.pending = false;
        self.since_report = 0;
        self.reported = (self.latest.ka_code, self.latest.rcp_rate);
        self.stats.reports += 1;
        Some(len)
    }
}

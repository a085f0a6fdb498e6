//! The send path of the [`Stack`]: IP headers around outgoing segments
//! and their checksums.

use super::*;

pub(super) fn pseudo(src: IpAddr, dst: IpAddr, len: usize) -> u32 {
    match (src, dst) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            checksum::pseudo_v4(a.octets(), b.octets(), 6, len as u32)
        }
        (a, b) => checksum::pseudo_v6(v6(a), v6(b), 6, len as u32),
    }
}

pub(super) fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
    }
}

/// Writes an IPv4 header with `options` (none, the 8-byte RCP option or
/// the 16-byte padded XCP option: a multiple of 4 bytes) or an IPv6 header
/// (40 bytes; `options` ignored) for a TCP segment of `tcp_len` bytes at
/// the start of `buf` (the segment must already sit right behind where the
/// header ends); returns the packet length.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_ip_header(
    buf: &mut [u8],
    src: IpAddr,
    dst: IpAddr,
    tcp_len: usize,
    dont_frag: bool,
    ident: u16,
    ttl: u8,
    options: &[u8],
) -> Option<usize> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let opt_len = options.len();
            let repr = ipv4::Ipv4Repr {
                src: s.octets(),
                dst: d.octets(),
                protocol: ipv4::PROTO_TCP,
                ttl,
                ident,
                dont_frag,
                more_frags: false,
                frag_offset: 0,
                dscp_ecn: 0,
                payload_len: opt_len + tcp_len,
            };
            repr.emit(buf).ok()?;
            if opt_len > 0 {
                // The options follow the fixed header (IHL 7 or 9).
                *buf.first_mut()? = 0x40 | ((ipv4::MIN_HEADER_LEN + opt_len) / 4) as u8;
                buf.get_mut(ipv4::MIN_HEADER_LEN..ipv4::MIN_HEADER_LEN + opt_len)?
                    .copy_from_slice(options);
                ipv4::Ipv4Packet::new_unchecked(buf.get_mut(..ipv4::MIN_HEADER_LEN + opt_len)?)
                    .fill_checksum();
            }
            Some(ipv4::MIN_HEADER_LEN + opt_len + tcp_len)
        }
        (s, d) => {
            let h = buf.get_mut(..ipv6::HEADER_LEN)?;
            let mut p = ipv6::Ipv6Packet::new_unchecked(h);
            p.set_version_class_flow(0, 0);
            p.set_payload_len(u16::try_from(tcp_len).ok()?);
            p.set_next_header(6);
            p.set_hop_limit(ttl);
            p.set_src_addr(v6(s));
            p.set_dst_addr(v6(d));
            Some(ipv6::HEADER_LEN + tcp_len)
        }
    }
}

/// What [`Out::emit`] made of one connection.
pub(super) enum Emitted {
    /// A packet of this many bytes is in the buffer.
    Packet(usize),
    /// The connection had nothing to send.
    Nothing,
    /// The buffer is too small: give up (as `poll_transmit` does).
    Abort,
}

/// The parts of a [`Stack`] that writing a connection's packet touches,
/// borrowed apart from the connection table.
pub(super) struct Out<'a> {
    pub(super) ip_ident: &'a mut u16,
    pub(super) rr_cursor: &'a mut u64,
    pub(super) packets_out: &'a mut u64,
    pub(super) ttl: u8,
}

impl Out<'_> {
    /// Writes connection `id`'s next packet, if it has one, into `buf`.
    pub(super) fn emit(
        &mut self,
        id: u64,
        conn: &mut Connection,
        now: Instant,
        buf: &mut [u8],
    ) -> Emitted {
        let (local, remote) = (conn.local_addr(), conn.remote_addr());
        let base = if remote.is_ipv4() {
            ipv4::MIN_HEADER_LEN
        } else {
            ipv6::HEADER_LEN
        };
        // Room for the native-RCP or XCP IPv4 option, if the connection
        // may send one; a segment with less (or none) moves up.
        let room = conn.ip_options_room();
        let Some(seg_buf) = buf.get_mut(base + room..) else {
            return Emitted::Abort;
        };
        let Some(t) = conn.poll_transmit(now, seg_buf) else {
            return Emitted::Nothing;
        };
        *self.rr_cursor = id;
        *self.ip_ident = self.ip_ident.wrapping_add(1);
        let ident = *self.ip_ident;
        let mut opt_buf = [0u8; XcpOption::PADDED_LEN];
        let opt_len = match (t.rcp_option, t.xcp_option) {
            (Some(o), _) if room >= RcpOption::LEN => o.emit(&mut opt_buf).ok(),
            (_, Some(o)) if room >= XcpOption::PADDED_LEN => o.emit_padded(&mut opt_buf).ok(),
            _ => Some(0),
        };
        let Some(opt_len) = opt_len else {
            return Emitted::Abort;
        };
        if opt_len != room {
            buf.copy_within(base + room..base + room + t.len, base + opt_len);
        }
        let Some(opts) = opt_buf.get(..opt_len) else {
            return Emitted::Abort;
        };
        let Some(n) = write_ip_header(
            buf,
            local.ip(),
            remote.ip(),
            t.len,
            t.dont_frag,
            ident,
            self.ttl,
            opts,
        ) else {
            return Emitted::Abort;
        };
        if t.ecn != Ecn::NotEct {
            // cannot fail: a well-formed header was just written
            if let Some(b) = buf.get_mut(..n) {
                let _ = set_ecn(b, t.ecn);
            } else {
                return Emitted::Abort;
            }
        }
        *self.packets_out += 1;
        Emitted::Packet(n)
    }
}

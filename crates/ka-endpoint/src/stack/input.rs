//! The receive path of the [`Stack`]: IPv4/IPv6 parsing, fragment
//! reassembly, demultiplexing to connections and listeners, and RSTs
//! for strays.

use super::*;

impl Stack {
    /// Processes one received IP packet (IPv4 or IPv6, no link header).
    /// Never panics on any input.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) {
        self.stats.packets_in += 1;
        match ka_codec::wire::ip_version(packet) {
            Some(4) => self.handle_v4(now, packet, None),
            Some(6) => self.handle_v6(now, packet, None),
            _ => self.stats.malformed += 1,
        }
    }

    /// Processes one received IP packet that the device's offloads
    /// coalesced from `segments` consecutive TCP segments of one flow
    /// (GRO/TSO: one IP and TCP header, the segments' payloads back to
    /// back, IP length fields right; `ka_io::offload::Tso`), as one segment
    /// that counts as `segments` (DESIGN §6.10). Its TCP checksum is not
    /// verified: the kernel hands such a packet with the partial checksum
    /// of a packet that never crossed a wire, or one it verified before
    /// coalescing. Anything not TCP, or a fragment, is handled as by
    /// [`Stack::handle_packet`]. Never panics on any input.
    pub fn handle_coalesced(&mut self, now: Instant, packet: &[u8], segments: u16) {
        let segments = segments.max(1);
        self.stats.packets_in += u64::from(segments);
        match ka_codec::wire::ip_version(packet) {
            Some(4) => self.handle_v4(now, packet, Some(segments)),
            Some(6) => self.handle_v6(now, packet, Some(segments)),
            _ => self.stats.malformed += 1,
        }
    }

    pub(super) fn handle_v4(&mut self, now: Instant, packet: &[u8], coalesced: Option<u16>) {
        let Ok(ip) = ipv4::Ipv4Packet::new_checked(packet) else {
            self.stats.malformed += 1;
            return;
        };
        if !ip.verify_checksum() {
            self.stats.malformed += 1;
            return;
        }
        if ip.protocol() != ipv4::PROTO_TCP {
            self.stats.not_tcp += 1;
            return;
        }
        let src = IpAddr::from(ip.src_addr());
        let dst = IpAddr::from(ip.dst_addr());
        let ecn = Ecn::from_bits(ip.dscp_ecn());
        // The native-RCP and XCP carriers: IPv4 options (not copied into
        // later fragments, so only unfragmented packets and leading
        // fragments have them). Malformed options are ignored.
        let with_options = ip.header_len() > ipv4::MIN_HEADER_LEN && ip.frag_offset() == 0;
        let rcp = if with_options {
            rcp_option::find_in(ip.options())
                .ok()
                .flatten()
                .map(|(_, o)| o)
        } else {
            None
        };
        let xcp = if with_options {
            xcp_option::find_in(ip.options())
                .ok()
                .flatten()
                .map(|(_, o)| o)
        } else {
            None
        };
        if !ip.is_fragment() {
            let info = IpInfo {
                rcp,
                xcp,
                ecn,
                coalesced,
            };
            self.handle_tcp_with(now, src, dst, ip.payload(), info);
            return;
        }
        self.stats.fragments_in += 1;
        let payload = ip.payload();
        if ip.frag_offset() == 0
            && ip.more_frags()
            && let Some(conn) = self.leading_fragment(now, src, dst, payload)
        {
            if let Some(opt) = rcp {
                conn.on_rcp_option(now, opt);
            }
            if let Some(opt) = xcp {
                conn.on_xcp_option(now, opt);
            }
        }
        let key = FragKey {
            src,
            dst,
            proto: ip.protocol(),
            ident: u32::from(ip.ident()),
        };
        let frag = Fragment {
            offset: ip.frag_offset(),
            more: ip.more_frags(),
            data: payload,
            proto: (ip.frag_offset() == 0).then_some(ip.protocol()),
            ecn,
        };
        if let Some(done) = self.reasm.insert_ecn(now, key, frag) {
            self.handle_tcp(now, src, dst, &done.payload, done.ecn);
        }
    }

    pub(super) fn handle_v6(&mut self, now: Instant, packet: &[u8], coalesced: Option<u16>) {
        let Ok(ip) = ipv6::Ipv6Packet::new_checked(packet) else {
            self.stats.malformed += 1;
            return;
        };
        let Ok(layout) = ipv6::layout(packet) else {
            self.stats.malformed += 1;
            return;
        };
        let src = IpAddr::from(ip.src_addr());
        let dst = IpAddr::from(ip.dst_addr());
        let ecn = Ecn::from_bits(ip.traffic_class());
        let end = ip.total_len();
        match layout.fragment {
            None => match layout.upper {
                Some((6, off)) => {
                    let seg = packet.get(off..end).unwrap_or(&[]);
                    let info = IpInfo {
                        rcp: None,
                        xcp: None,
                        ecn,
                        coalesced,
                    };
                    self.handle_tcp_with(now, src, dst, seg, info);
                }
                _ => self.stats.not_tcp += 1,
            },
            Some((fh_off, fh)) => {
                self.stats.fragments_in += 1;
                let start = fh_off + ipv6::FRAG_HEADER_LEN;
                let payload = packet.get(start..end).unwrap_or(&[]);
                if fh.offset == 0 && fh.more_frags && fh.next_header == 6 {
                    self.leading_fragment(now, src, dst, payload);
                }
                let key = FragKey {
                    src,
                    dst,
                    proto: 0,
                    ident: fh.ident,
                };
                let frag = Fragment {
                    offset: fh.offset,
                    more: fh.more_frags,
                    data: payload,
                    proto: (fh.offset == 0).then_some(fh.next_header),
                    ecn,
                };
                if let Some(done) = self.reasm.insert_ecn(now, key, frag) {
                    if done.proto == 6 {
                        self.handle_tcp(now, src, dst, &done.payload, done.ecn);
                    } else {
                        self.stats.not_tcp += 1;
                    }
                }
            }
        }
    }

    /// The id of the connection a segment (or the leading fragment of one)
    /// from `src` to `dst` belongs to, by the ports at the start of `seg`.
    fn segment_conn_id(&self, src: IpAddr, dst: IpAddr, seg: &[u8]) -> Option<u64> {
        let (Some(&[a, b]), Some(&[c, d])) = (seg.get(0..2), seg.get(2..4)) else {
            return None;
        };
        let sport = u16::from_be_bytes([a, b]);
        let dport = u16::from_be_bytes([c, d]);
        let tuple = (SocketAddr::new(dst, dport), SocketAddr::new(src, sport));
        self.by_tuple.get(&tuple).copied()
    }

    /// Records a leading fragment's payload length with its connection
    /// (before reassembly, DESIGN §6.2); returns the connection, for the
    /// options of the fragment's IP header (one 4-tuple lookup for both).
    pub(super) fn leading_fragment(
        &mut self,
        now: Instant,
        src: IpAddr,
        dst: IpAddr,
        payload: &[u8],
    ) -> Option<&mut Connection> {
        let id = self.segment_conn_id(src, dst, payload)?;
        self.conn_touch(id)?.on_leading_fragment(now, payload.len());
        self.stats.leading_fragments += 1;
        self.conns.get_mut(&id).map(|c| &mut **c)
    }

    pub(super) fn handle_tcp(
        &mut self,
        now: Instant,
        src: IpAddr,
        dst: IpAddr,
        seg: &[u8],
        ecn: Ecn,
    ) {
        let info = IpInfo {
            rcp: None,
            xcp: None,
            ecn,
            coalesced: None,
        };
        self.handle_tcp_with(now, src, dst, seg, info);
    }

    /// A TCP segment, with the IPv4 RCP and XCP options its packet carried
    /// (handed to the connection before the segment; for a SYN that opens a
    /// connection, right after the connection is created) and the ECN
    /// codepoint of its IP header.
    pub(super) fn handle_tcp_with(
        &mut self,
        now: Instant,
        src: IpAddr,
        dst: IpAddr,
        seg: &[u8],
        info: IpInfo,
    ) {
        let IpInfo {
            rcp,
            xcp,
            ecn,
            coalesced,
        } = info;
        let Ok(pkt) = TcpPacket::new_checked(seg) else {
            self.stats.malformed += 1;
            return;
        };
        if coalesced.is_none() && !pkt.verify_checksum(pseudo(src, dst, seg.len())) {
            self.stats.bad_checksum += 1;
            return;
        }
        let Ok(repr) = TcpRepr::parse(&pkt) else {
            self.stats.malformed += 1;
            return;
        };
        let payload = pkt.payload();
        let local = SocketAddr::new(dst, repr.dst_port);
        let remote = SocketAddr::new(src, repr.src_port);
        if let Some(&id) = self.by_tuple.get(&(local, remote)) {
            if let Some(conn) = self.conn_touch(id) {
                if let Some(opt) = rcp {
                    conn.on_rcp_option(now, opt);
                }
                if let Some(opt) = xcp {
                    conn.on_xcp_option(now, opt);
                }
                match coalesced {
                    Some(n) => conn.handle_segments_ecn(now, &repr, payload, ecn, n),
                    None => conn.handle_segment_ecn(now, &repr, payload, ecn),
                }
            }
            return;
        }
        self.stats.no_connection += 1;
        let flags = repr.flags;
        if flags & RST != 0 {
            return;
        }
        let listener = self.listeners.get(&repr.dst_port).map(|t| **t);
        if let (true, Some(tcp)) = (flags & SYN != 0 && flags & ACK == 0, listener) {
            if repr.src_port == 0 || src.is_unspecified() || src.is_multicast() {
                return;
            }
            let half_open = self.half_open();
            if half_open >= self.cfg.max_half_open || self.conns.len() >= self.cfg.max_connections {
                self.stats.syns_dropped += 1;
                return;
            }
            let init = ConnInit {
                local,
                remote,
                iss: self.isn.isn(now, local, remote),
                ts_offset: self.isn.ts_offset(local, remote),
            };
            let mut conn = Connection::accept(now, tcp, init, &repr);
            if let Some(opt) = rcp {
                conn.on_rcp_option(now, opt);
            }
            if let Some(opt) = xcp {
                conn.on_xcp_option(now, opt);
            }
            self.insert(conn);
            self.stats.accepted += 1;
            return;
        }
        // RFC 9293 §3.10.7.1: reset for a segment to a closed port
        let seg_len =
            payload.len() as u32 + u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0);
        let (seq, ack) = if flags & ACK != 0 {
            (repr.ack, None)
        } else {
            (0, Some(repr.seq.wrapping_add(seg_len)))
        };
        self.queue_rst(now, local, remote, seq, ack);
    }

    pub(super) fn queue_rst(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        seq: u32,
        ack: Option<u32>,
    ) {
        if now.saturating_duration_since(self.rst_refill) >= Duration::from_secs(1) {
            self.rst_refill = now;
            self.rst_tokens = self.cfg.rst_per_sec;
        }
        if self.rst_tokens == 0 || self.rst_queue.len() >= self.cfg.max_queued_rsts {
            self.stats.rsts_suppressed += 1;
            return;
        }
        self.rst_tokens -= 1;
        let repr = TcpRepr {
            src_port: local.port(),
            dst_port: remote.port(),
            seq,
            ack: ack.unwrap_or(0),
            flags: RST | if ack.is_some() { ACK } else { 0 },
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
        };
        let hl = if remote.is_ipv4() { 20 } else { 40 };
        let mut pkt = vec![0u8; hl + 20];
        let Some(seg) = pkt.get_mut(hl..) else {
            return;
        };
        if repr
            .emit(seg, &[], pseudo(local.ip(), remote.ip(), 20))
            .is_err()
        {
            return;
        }
        let ident = self.next_ident();
        if write_ip_header(
            &mut pkt,
            local.ip(),
            remote.ip(),
            20,
            true,
            ident,
            self.cfg.ttl,
            &[],
        )
        .is_none()
        {
            return;
        }
        self.rst_queue.push_back(pkt);
        self.stats.rsts_sent += 1;
    }
}

//! The handshake's negotiation: what the peer's SYN / SYN-ACK options
//! switch on (KA, native RCP, XCP, ECN, window scaling, timestamps, MSS)
//! and the congestion controller built from the result.

use std::time::Instant;

use super::Connection;
use super::recv::RecvBuffer;
use crate::cc::{Controller, rfc6928_initial_window};
use crate::config::TcpConfig;

impl Connection {
    /// Negotiates options from the peer's SYN (or SYN-ACK).
    pub(super) fn on_peer_syn(&mut self, syn: &ka_codec::wire::tcp::TcpRepr) {
        let o = &syn.options;
        // KA or native RCP first: the RCP option changes our IP header
        // length, hence the MSS a passive side announces.
        let ipv6 = self.remote.is_ipv6();
        // XCP (DESIGN §7.2) excludes KA and native RCP (see `conn::xcp`).
        let xcp = self.negotiate_xcp(o, ipv6);
        let rcp = !xcp
            && if self.passive {
                self.cfg.ka.enabled && !ipv6 && o.rcp_permitted
            } else {
                offers_native_rcp(&self.cfg, ipv6) && o.rcp_permitted
            };
        self.ka.rcp = rcp;
        self.ka.enabled = rcp
            || (!xcp
                && self.cfg.ka.enabled
                && o.ka_permitted
                && (self.passive || (offers_ka(&self.cfg) && !offers_native_rcp(&self.cfg, ipv6))));
        if !ipv6 {
            let room = if rcp {
                ka_codec::RcpOption::LEN
            } else {
                self.xcp_room()
            };
            self.ip_header_len = 20 + room;
            if self.passive {
                self.our_mss = self
                    .cfg
                    .mtu
                    .saturating_sub(self.ip_header_len + 20)
                    .clamp(64, 65_495);
            }
        }
        self.ecn_on_peer_syn(syn.flags);
        self.irs = syn.seq;
        self.rcv_nxt = 1;
        self.last_ack_sent = 1;
        let peer_mss =
            o.mss
                .map(usize::from)
                .unwrap_or(if self.remote.is_ipv6() { 1220 } else { 536 });
        self.snd_mss = self.our_mss.min(peer_mss).max(64);
        self.peer_ws = o.window_scale;
        match (self.cfg.window_scale, o.window_scale) {
            (true, Some(ws)) => self.snd_shift = ws.min(14),
            _ => {
                self.snd_shift = 0;
                self.rcv_shift = 0;
                // without scaling the window field caps the buffer
                let cap = self.rcvbuf.cap().min(65_535);
                if cap < self.rcvbuf.cap() {
                    self.rcvbuf = RecvBuffer::new(cap, self.cfg.max_ooo_ranges);
                }
            }
        }
        self.sack_ok = self.cfg.sack && o.sack_permitted;
        match (self.cfg.timestamps, o.timestamps) {
            (true, Some((val, _))) => {
                self.ts_ok = true;
                self.ts_recent = val;
            }
            _ => self.ts_ok = false,
        }
        // The controller counts in full segments' payload: SMSS excludes
        // the options every data segment carries (RFC 5681 §2, RFC 6691),
        // i.e. 1448 bytes with timestamps on a 1500-byte path, as Linux's
        // mss_cache and ns-3's SegmentSize count.
        let seed = cc_seed(self.iss, self.ts_offset);
        self.cc = build_controller(&self.cfg, self.smss(), self.last_now, self.xcp.sender, seed);
        self.snd_wnd = u64::from(syn.window);
        self.max_snd_wnd = self.snd_wnd;
        self.last_wire_window = syn.window;
        self.rcv_adv = self.rcv_nxt + self.rcvbuf.free().min(65_535) as u64;
    }
}

/// A fresh TCP-mode controller: the configured algorithm with the initial
/// window (RFC 6928 when configured as 10 segments, else that many MSS)
/// its randomness seeded with `seed` and, if configured, the initial
/// slow-start threshold. An XCP algorithm becomes NewReno unless `xcp` (XCP
/// was negotiated).
pub(super) fn build_controller(
    cfg: &TcpConfig,
    mss: usize,
    now: Instant,
    xcp: bool,
    seed: u64,
) -> Box<dyn Controller> {
    let iw = if cfg.initial_window_segments == 10 {
        rfc6928_initial_window(mss)
    } else {
        cfg.initial_window_segments.max(1) * mss
    };
    let alg = match cfg.cc.xcp_variant() {
        Some(_) if !xcp => crate::cc::CcAlgorithm::NewReno,
        _ => cfg.cc,
    };
    let mut cc = alg.build_with(mss, iw, cfg.byte_counting, cfg.hystart);
    cc.set_seed(seed);
    if let Some(ssthresh) = cfg.initial_ssthresh {
        cc.set_window(now, iw, ssthresh);
    }
    cc
}

/// Whether an active open with `cfg` offers the native-RCP carrier (IPv4
/// only: the carrier is an IPv4 option).
pub(super) fn offers_native_rcp(cfg: &TcpConfig, ipv6: bool) -> bool {
    offers_ka(cfg) && cfg.ka.native_rcp && !ipv6
}

/// Whether an active open with `cfg` offers KA (or native RCP): KA is
/// enabled and the controller is not XCP (an XCP connection does no KA).
pub(super) fn offers_ka(cfg: &TcpConfig) -> bool {
    cfg.ka.enabled && cfg.cc.xcp_variant().is_none()
}

/// Smallest shift that makes `buf` fit in the 16-bit window field (max 14).
pub(super) fn window_shift(buf: usize) -> u8 {
    let mut s = 0u8;
    while s < 14 && (buf >> s) > 65_535 {
        s += 1;
    }
    s
}

/// The controller's seed: the ISN and the timestamp offset, both keyed
/// hashes of the 4-tuple under the stack's secret (RFC 6528 / RFC 7323
/// §5.4), so connections differ and runs repeat.
pub(super) fn cc_seed(iss: u32, ts_offset: u32) -> u64 {
    (u64::from(ts_offset) << 32) | u64::from(iss)
}

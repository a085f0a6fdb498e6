//! The XCP parts of a connection (DESIGN §7.2; seed `xcp-vs-rcp.txt` §2.2;
//! Falk, Pryadkin, Katabi, draft-falk-xcp-spec-03, July 2007). The sender's
//! window arithmetic is the [`Xcp`](crate::Xcp) controller; this is the
//! carrier around it.
//!
//! * **Negotiation**: an active open whose controller is XCP
//!   ([`CcAlgorithm::Xcp`](crate::CcAlgorithm::Xcp),
//!   [`CcAlgorithm::XcpRate`](crate::CcAlgorithm::XcpRate)) over IPv4 puts
//!   XCP-Permitted (`253, 4, 0x58, 0x43`) in its SYN, and neither
//!   KA-Permitted nor RCP-Permitted: an XCP connection does no KA. A passive
//!   side with [`XcpConfig::accept`](crate::XcpConfig::accept) answers it in
//!   the SYN-ACK. XCP is on only if both carry it; otherwise the XCP
//!   controller is replaced by NewReno and the connection is plain TCP
//!   (the IPv4 option is an IPv4 thing, so over IPv6 XCP is never offered).
//! * **Sender**: while XCP is on and its own controller is XCP, every data
//!   segment (new or retransmitted) carries the 16-byte IPv4 XCP option:
//!   `H_cwnd` = the controller's window, `H_rtt` = srtt in µs (0 before the
//!   first sample), `H_feedback` = the controller's request (see
//!   [`Xcp`](crate::Xcp)). Its MSS leaves room for the 16 bytes. The
//!   SYN, pure ACKs and FIN-only segments carry no option: they take no
//!   window. An XCP-Echo on an acceptable ACK goes to the controller
//!   ([`Controller::on_feedback`](crate::Controller::on_feedback)).
//! * **Receiver**: adds the `H_feedback` of every XCP option that arrives on
//!   the connection (in any order, duplicates included: each packet's
//!   feedback was allocated by the routers it crossed) and puts the sum
//!   into an XCP-Echo (`253, 8, 0x58, 0x43, i32`) on its next segment,
//!   once; then starts again from zero. The draft echoes the feedback on
//!   each ACK; with one ACK per data packet this is the same, and with
//!   delayed ACKs (one ACK for two packets) summing gives the sender the
//!   same total window change in half as many echoes, instead of losing
//!   every other packet's share (the routers allocated each packet's
//!   feedback expecting it to be applied). Sums beyond the `i32` range
//!   saturate. The normal ACK policy applies (no immediate ACK for
//!   feedback).
//! * **DF**: XCP needs no fragmentation, so XCP connections follow the
//!   plain-TCP DF policy.

use super::Connection;
use crate::cc::Feedback;
use crate::config::TcpConfig;
use ka_codec::XcpOption;
use ka_codec::options::XcpEcho;
use ka_codec::wire::tcp::TcpOptions;
use std::time::Instant;

/// Whether an active open with `cfg` offers XCP: its controller is XCP and
/// the path is IPv4 (the carrier is an IPv4 option).
pub(super) fn offers_xcp(cfg: &TcpConfig, ipv6: bool) -> bool {
    cfg.cc.xcp_variant().is_some() && !ipv6
}

/// Per-connection XCP state.
#[derive(Debug, Default)]
pub(super) struct XcpState {
    /// Negotiated (both SYN and SYN-ACK carried XCP-Permitted).
    pub enabled: bool,
    /// Negotiated and our controller is XCP: our data carries the option.
    pub sender: bool,
    /// Receiver: the sum of `H_feedback` not yet echoed.
    pub rx_pending: Option<i64>,
}

impl Connection {
    /// Whether XCP was negotiated (both SYN and SYN-ACK carried
    /// XCP-Permitted): this side echoes the feedback of arriving XCP
    /// options, and, if its controller is XCP, sends them on its data.
    pub fn xcp_enabled(&self) -> bool {
        self.xcp.enabled
    }

    /// XCP's part of the negotiation, from the peer's SYN (passive) or
    /// SYN-ACK (active) options `o`; returns whether XCP is on.
    pub(super) fn negotiate_xcp(&mut self, o: &TcpOptions, ipv6: bool) -> bool {
        let on = o.xcp_permitted
            && if self.passive {
                self.cfg.xcp.accept && !ipv6
            } else {
                offers_xcp(&self.cfg, ipv6)
            };
        self.xcp.enabled = on;
        self.xcp.sender = on && self.cfg.cc.xcp_variant().is_some();
        on
    }

    /// IPv4 option bytes our segments need for XCP (16 while we send the
    /// option, else 0).
    pub(super) fn xcp_room(&self) -> usize {
        if self.xcp.sender {
            XcpOption::PADDED_LEN
        } else {
            0
        }
    }

    /// Records the IPv4 XCP option of a packet that belonged to this
    /// connection (called by the stack before the segment itself). Ignored
    /// unless XCP was negotiated.
    pub fn on_xcp_option(&mut self, now: Instant, opt: XcpOption) {
        self.touch(now);
        if !self.xcp.enabled {
            return;
        }
        let sum = self.xcp.rx_pending.unwrap_or(0);
        self.xcp.rx_pending = Some(sum.saturating_add(i64::from(opt.feedback_bytes)));
        self.stats.xcp_options_seen += 1;
    }

    /// The XCP-Echo for our next segment, if feedback arrived that no
    /// segment has echoed yet.
    pub(super) fn xcp_echo(&self) -> Option<XcpEcho> {
        let sum = self.xcp.rx_pending?;
        let feedback_bytes = sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
        Some(XcpEcho { feedback_bytes })
    }

    /// An XCP-Echo left in a segment: start summing afresh.
    pub(super) fn xcp_echo_sent(&mut self) {
        self.xcp.rx_pending = None;
    }

    /// An XCP-Echo arrived on an acceptable ACK (sender side).
    pub(super) fn on_xcp_echo(&mut self, now: Instant, echo: XcpEcho) {
        if !self.xcp.sender {
            return;
        }
        self.stats.xcp_echoes += 1;
        let sent = self.ka.last_acked_sent.unwrap_or(now);
        self.cc.on_feedback(Feedback {
            now,
            sent,
            bytes: i64::from(echo.feedback_bytes),
            rtt: &self.rtt,
        });
    }

    /// The IPv4 XCP option for a data segment of ours sent now.
    pub(super) fn xcp_ip_option(&self) -> Option<XcpOption> {
        let desired = self.xcp_desired_window();
        let req = self.cc.feedback_request(&self.rtt, desired)?;
        let rtt_us = self.rtt.srtt().map_or(0, |d| {
            u32::try_from(d.as_micros().max(1)).unwrap_or(u32::MAX)
        });
        Some(XcpOption {
            cwnd_bytes: req.cwnd,
            rtt_us,
            feedback_bytes: req.feedback,
        })
    }

    /// The largest window the sender could use: the largest window the peer
    /// has offered, capped by our send buffer and, if configured, by the
    /// desired rate times srtt.
    fn xcp_desired_window(&self) -> usize {
        let peer = usize::try_from(self.max_snd_wnd).unwrap_or(usize::MAX);
        let mut w = peer.min(self.cfg.send_buffer);
        if let (Some(rate), Some(srtt)) = (self.cfg.xcp.desired_rate, self.rtt.srtt()) {
            let by_rate = (rate * srtt.as_secs_f64()).clamp(0.0, usize::MAX as f64) as usize;
            w = w.min(by_rate);
        }
        w
    }
}

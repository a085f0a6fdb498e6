//! The native-RCP parts of a connection (DESIGN §7.1): the IPv4 RCP option
//! a sender puts on its SYN and data, the rate a receiver reads from it,
//! and the RCP-Echo that brings the rate back to the sender, whose mode
//! machine then follows it like a KA signal (DESIGN §6.3, `conn::ka`).

use super::Connection;
use ka_codec::RcpOption;
use ka_codec::options::RcpEcho;
use std::time::Instant;

impl Connection {
    /// Records the IPv4 RCP option of a packet that belonged to this
    /// connection (called by the stack before the segment itself, and for
    /// a SYN right after the connection was created). Native RCP only; a
    /// rate still at `u32::MAX` crossed no RCP router and is no signal.
    pub fn on_rcp_option(&mut self, now: Instant, opt: RcpOption) {
        self.touch(now);
        if !(self.ka.enabled && self.ka.rcp) || opt.rate_bytes_per_sec == u32::MAX {
            return;
        }
        self.ka.rcp_rx = Some(opt.rate_bytes_per_sec);
        self.ka.rcp_fresh = true;
        self.stats.rcp_options_seen += 1;
    }

    /// The IPv4 RCP option for a SYN or data segment of ours: rate "as much
    /// as possible", our srtt in ms (0 before a sample).
    pub(super) fn rcp_ip_option(&self) -> RcpOption {
        let rtt_ms = self.rtt.srtt().map_or(0, |d| {
            u16::try_from(d.as_millis().max(1)).unwrap_or(u16::MAX)
        });
        RcpOption {
            rate_bytes_per_sec: u32::MAX,
            rtt_ms,
        }
    }

    /// An RCP-Echo option arrived on an acceptable ACK (native RCP). Every
    /// echo is fresh (the receiver echoes each rate once).
    pub(super) fn on_rcp_echo(&mut self, now: Instant, echo: RcpEcho) {
        if !(self.ka.enabled && self.ka.rcp) || echo.rate_bytes_per_sec == 0 {
            return;
        }
        let rate = f64::from(echo.rate_bytes_per_sec) / 1000.0;
        self.on_fresh_rate(now, rate);
    }
}

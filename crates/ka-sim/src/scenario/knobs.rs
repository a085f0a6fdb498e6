//! TCP knobs of a scenario (`[tcp]`). The `[router]` table is
//! `ka_router::RouterConfig` itself.

use serde::{Deserialize, Serialize};

use super::TcpProfile;

/// TCP knobs of all endpoints of a scenario; unset = the `profile`'s
/// value, and without a profile `ka-endpoint`'s defaults (RFC 6928 initial
/// window, no initial ssthresh, 40 ms delayed ACKs, min RTO 1 s, SACK on).
/// The paper's scenarios set the TCP of the paper's ns-3 runs (see
/// `scenarios/*.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpKnobs {
    /// A named bundle of these knobs ([`TcpProfile`], DESIGN §9.2):
    /// `"modern"` (the default: nothing changed), `"ns3-18"` or `"ns2"`.
    /// Knobs set here override the profile's; a group's `tcp_profile`
    /// replaces this one for that group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<TcpProfile>,
    /// Initial congestion window, segments (a group's `initial_window`
    /// overrides it for that group's senders).
    pub initial_window: Option<usize>,
    /// Initial slow-start threshold, bytes.
    pub initial_ssthresh_bytes: Option<usize>,
    /// Delayed-ACK timer, ms (0 = acknowledge every segment).
    pub delayed_ack_ms: Option<f64>,
    /// Minimum RTO, ms.
    pub min_rto_ms: Option<f64>,
    /// RTO before the first RTT sample (the SYN's), ms (RFC 6298: 1 s).
    pub initial_rto_ms: Option<f64>,
    /// Offer SACK.
    pub sack: Option<bool>,
    /// Offer timestamps (RFC 7323). Without them a full packet carries 12
    /// more payload bytes, and flow sizes in packets count those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<bool>,
    /// Offer window scaling (RFC 7323); without it the receive window is
    /// at most 65 535 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_scale: Option<bool>,
    /// Receive buffer (hence the largest advertised window) of every
    /// endpoint, bytes, overriding `buffer_bytes` for the receive side
    /// (ns-2's `window_`). 536 B … 1 GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_window_bytes: Option<usize>,
    /// Maximum segment size of every endpoint, bytes (TCP payload plus
    /// options of a full segment; ns-3's `SegmentSize`, 536 by default in
    /// every release). Default: `packet_bytes − 40`. Smaller, a flow keeps
    /// its size (counted in full packets of `packet_bytes`) and is sent as
    /// more, smaller segments. 88 … `packet_bytes − 40`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss_bytes: Option<usize>,
    /// Clock granularity `G` of the RTO (RFC 6298), ms (ns-2's `tcpTick_`).
    /// Default 1 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_granularity_ms: Option<f64>,
    /// NewReno byte counting (RFC 3465/5681); false = per-ACK counting.
    pub byte_counting: Option<bool>,
    /// CUBIC's HyStart (`ka_endpoint::CubicConfig::hystart`): end slow
    /// start on a delay increase or an ACK train, as Linux does. Default
    /// false.
    pub hystart: Option<bool>,
    /// Tail loss probes (RFC 8985 §7, `ka_endpoint::TcpConfig::tlp`):
    /// with SACK, one probe two srtts after the sender goes quiet with data
    /// in flight. Default false (the paper's ns-3 TCP has none; the
    /// `ka-endpoint` binary turns them on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlp: Option<bool>,
    /// A loss in KA mode ends KA mode (`ka_endpoint::KaConfig::loss_leaves_ka`;
    /// default true, except for the site hosts of a `dcc` topology with
    /// `local = "lccp"`, whose middlebox owns the middle segment).
    pub ka_leave_on_loss: Option<bool>,
    /// Window-update ACKs when the application's read opens the window.
    pub window_update_on_read: Option<bool>,
    /// ECN (RFC 3168): `true` = every endpoint asks for ECN on its active
    /// opens and accepts it on passive ones (`EcnMode::On`), `false` =
    /// never (`EcnMode::Off`). Unset = the endpoint's default
    /// (`EcnMode::Accept`: accept, never ask, so no connection uses ECN).
    /// Data packets of ECN connections are ECT(0); a CE mark makes the
    /// sender reduce its window once per RTT (in KA mode: leave it).
    pub ecn: Option<bool>,
    /// Acknowledge the first data segment after the handshake at once
    /// (ns-3's `TcpSocketBase`; see `ka_endpoint::TcpConfig`).
    pub quick_ack_first_data: Option<bool>,
    /// Send and receive buffer of every endpoint, bytes (the seed of RWM
    /// sets 60 MB so the endpoints' own windows never limit). Default
    /// 4 MiB; 64 KiB … 1 GiB.
    pub buffer_bytes: Option<usize>,
    /// What `ka` flows run in TCP mode: `"newreno"` (the default, the
    /// paper's ns-3 TCP) or `"cubic"` (the `ka-endpoint` binary's
    /// default, DESIGN §6.4). Other kinds are not affected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ka_cc: Option<KaCc>,
    /// Leaving KA mode by silence reduces the window as one loss would
    /// (`ka_endpoint::KaConfig::silence_backoff`, DESIGN §6.3.1). Default
    /// false (the paper's rule); the `ka-endpoint` binary sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ka_silence_backoff: Option<bool>,
}

/// The TCP-mode congestion control of `ka` flows (`[tcp] ka_cc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KaCc {
    /// NewReno (RFC 6582), the paper's fallback.
    Newreno,
    /// CUBIC (RFC 9438), as the `ka-endpoint` binary by default.
    Cubic,
}

impl TcpKnobs {
    /// The knobs with the profile (`group`'s if set, else this table's)
    /// filled in under the explicitly set ones.
    pub fn resolve(&self, group: Option<TcpProfile>) -> TcpKnobs {
        let Some(p) = group.or(self.profile) else {
            return *self;
        };
        let b = p.knobs();
        TcpKnobs {
            profile: Some(p),
            initial_window: self.initial_window.or(b.initial_window),
            initial_ssthresh_bytes: self.initial_ssthresh_bytes.or(b.initial_ssthresh_bytes),
            delayed_ack_ms: self.delayed_ack_ms.or(b.delayed_ack_ms),
            min_rto_ms: self.min_rto_ms.or(b.min_rto_ms),
            initial_rto_ms: self.initial_rto_ms.or(b.initial_rto_ms),
            sack: self.sack.or(b.sack),
            timestamps: self.timestamps.or(b.timestamps),
            window_scale: self.window_scale.or(b.window_scale),
            receive_window_bytes: self.receive_window_bytes.or(b.receive_window_bytes),
            mss_bytes: self.mss_bytes.or(b.mss_bytes),
            clock_granularity_ms: self.clock_granularity_ms.or(b.clock_granularity_ms),
            byte_counting: self.byte_counting.or(b.byte_counting),
            hystart: self.hystart.or(b.hystart),
            tlp: self.tlp.or(b.tlp),
            ka_leave_on_loss: self.ka_leave_on_loss.or(b.ka_leave_on_loss),
            window_update_on_read: self.window_update_on_read.or(b.window_update_on_read),
            ecn: self.ecn.or(b.ecn),
            quick_ack_first_data: self.quick_ack_first_data.or(b.quick_ack_first_data),
            buffer_bytes: self.buffer_bytes.or(b.buffer_bytes),
            ka_cc: self.ka_cc.or(b.ka_cc),
            ka_silence_backoff: self.ka_silence_backoff.or(b.ka_silence_backoff),
        }
    }

    /// Applies the set knobs to `t` (a profile must have been
    /// [`resolve`](Self::resolve)d first: `apply` reads the knobs only).
    pub fn apply(&self, t: &mut ka_endpoint::TcpConfig) {
        let ms = |v: f64| std::time::Duration::from_secs_f64(v.max(0.0) / 1e3);
        if let Some(v) = self.initial_window {
            t.initial_window_segments = v.max(1);
        }
        if let Some(v) = self.initial_ssthresh_bytes {
            t.initial_ssthresh = Some(v);
        }
        if let Some(v) = self.delayed_ack_ms {
            t.delayed_ack = (v > 0.0).then(|| ms(v));
        }
        if let Some(v) = self.min_rto_ms {
            t.min_rto = ms(v);
        }
        if let Some(v) = self.initial_rto_ms {
            t.initial_rto = ms(v);
        }
        if let Some(v) = self.sack {
            t.sack = v;
        }
        if let Some(v) = self.byte_counting {
            t.byte_counting = v;
        }
        if let Some(v) = self.hystart {
            t.hystart = v;
        }
        if let Some(v) = self.tlp {
            t.tlp = v;
        }
        if let Some(v) = self.ka_leave_on_loss {
            t.ka.loss_leaves_ka = v;
        }
        if let Some(v) = self.window_update_on_read {
            t.window_update_on_read = v;
        }
        if let Some(v) = self.ecn {
            t.ecn = if v {
                ka_endpoint::EcnMode::On
            } else {
                ka_endpoint::EcnMode::Off
            };
        }
        if let Some(v) = self.quick_ack_first_data {
            t.quick_ack_first_data = v;
        }
        if let Some(v) = self.buffer_bytes {
            t.send_buffer = v;
            t.recv_buffer = v;
        }
        if let Some(v) = self.timestamps {
            t.timestamps = v;
        }
        if let Some(v) = self.window_scale {
            t.window_scale = v;
        }
        if let Some(v) = self.receive_window_bytes {
            t.recv_buffer = v;
        }
        if let Some(v) = self.mss_bytes {
            // IPv4 and TCP headers: the endpoint derives its MSS as
            // `mtu − 40`.
            t.mtu = v + 40;
        }
        if let Some(v) = self.clock_granularity_ms {
            t.clock_granularity = ms(v);
        }
        if let Some(v) = self.ka_silence_backoff {
            t.ka.silence_backoff = v;
        }
        if let Some(v) = self.ka_cc {
            // only KA senders (not the native-RCP carrier)
            if t.ka.enabled && !t.ka.native_rcp {
                t.cc = match v {
                    KaCc::Newreno => ka_endpoint::CcAlgorithm::NewReno,
                    KaCc::Cubic => ka_endpoint::CcAlgorithm::Cubic,
                };
            }
        }
    }
}

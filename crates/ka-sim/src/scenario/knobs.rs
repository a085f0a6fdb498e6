//! Router and TCP knobs of a scenario (`[router]`, `[tcp]`).

use serde::{Deserialize, Serialize};

/// Router port knobs (DESIGN §4.3/4.4, §8.4); unset = the router's
/// defaults. `alpha`/`beta` are RCP's (KA and native-RCP ports),
/// `xcp_*` XCP's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterKnobs {
    /// RCP α.
    pub alpha: Option<f64>,
    /// RCP β.
    pub beta: Option<f64>,
    /// R₀ as a fraction of C.
    pub initial_frac: Option<f64>,
    /// d before the first RTT indicator, ms.
    pub initial_rtt_ms: Option<f64>,
    /// TCP-mode threshold as a fraction of the queue.
    pub threshold_frac: Option<f64>,
    /// TCP-mode hold, ms (default one average RTT).
    pub hold_ms: Option<f64>,
    /// The queue RCP sees: `"now"` (at the end of each control interval,
    /// DESIGN §4.3; the default) or `"persistent"` (the smallest during the
    /// last RTT, as the `ka-router` binary does).
    pub queue_measure: Option<QueueMeasureKnob>,
    /// RCP queue target, ms (default 0; the `ka-router` binary uses 5).
    pub queue_target_ms: Option<f64>,
    /// Dither the KA signal between adjacent codes (default false; the
    /// `ka-router` binary turns it on).
    pub dither: Option<bool>,
    /// The rate controller of every explicit-rate port: `"rcp"` (the
    /// paper's, the default), `"crowd"` (RCP's law plus admission of new
    /// connections, no flash-crowd overflow: `ka_router::Crowd`) or
    /// `"echo"` (RCP's law, with rates also written into the returning
    /// ACKs' echoes at the router: `ka_router::Echo`).
    pub controller: Option<ControllerKnob>,
    /// `crowd` only: its caution (`ka_router::CrowdConfig::caution`).
    pub crowd_caution: Option<f64>,
    /// XCP α of `xcp` ports (default 0.4).
    pub xcp_alpha: Option<f64>,
    /// XCP β of `xcp` ports (default 0.226).
    pub xcp_beta: Option<f64>,
    /// XCP γ of `xcp` ports (default 0.1).
    pub xcp_gamma: Option<f64>,
    /// How a control interval updates R: `"exponential"` (R·eˣ, the
    /// default) or `"linear"` (R·(1 + x), DESIGN §4.3's formula; see
    /// `ka_router::RcpUpdate`).
    pub rcp_update: Option<RcpUpdateKnob>,
}

/// `controller` values of [`RouterKnobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControllerKnob {
    /// `ka_router::Rcp`.
    Rcp,
    /// `ka_router::Crowd`.
    Crowd,
    /// `ka_router::Echo`.
    Echo,
}

/// `rcp_update` values of [`RouterKnobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RcpUpdateKnob {
    /// R·eˣ.
    Exponential,
    /// R·(1 + x).
    Linear,
}

/// `queue_measure` values of [`RouterKnobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueMeasureKnob {
    /// The smallest queue during the last RTT.
    Persistent,
    /// The queue when the interval ends.
    Now,
}

/// TCP knobs of all endpoints of a scenario; unset = `ka-endpoint`'s
/// defaults (RFC 6928 initial window, no initial ssthresh, 40 ms delayed
/// ACKs, min RTO 1 s, SACK on). The paper's scenarios set the TCP of the
/// paper's ns-3 runs (see `scenarios/*.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpKnobs {
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
    /// NewReno byte counting (RFC 3465/5681); false = per-ACK counting.
    pub byte_counting: Option<bool>,
    /// CUBIC's HyStart (`ka_endpoint::CubicConfig::hystart`): end slow
    /// start on a delay increase or an ACK train, as Linux does. Default
    /// false.
    pub hystart: Option<bool>,
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
}

impl TcpKnobs {
    /// Applies the set knobs to `t`.
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
    }
}

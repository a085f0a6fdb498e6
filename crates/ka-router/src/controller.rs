//! Rate controllers (DESIGN §3.5, paper §III-A).
//!
//! The paper insists the KA mechanism is independent of how a router picks
//! its rate ("the router can use whatever scheme"), so the [`crate::Port`]
//! talks to a [`RateController`] trait object, built from a
//! [`ControllerKind`] (the factory). One file per controller:
//!
//! | controller | file | what it is |
//! |---|---|---|
//! | [`Rcp`] (the default) | `rcp.rs` | the Rate Control Protocol update as in the reference ns-2 code ([`RcpLoop`] on R) |
//! | [`Crowd`] | `crowd.rs` | RCP's loop on a multiplier of the fair share, admitting new connections at their expected share |
//! | [`Echo`] | `echo.rs` | the same, with the rate also written into the echoes of returning ACKs |
//!
//! All three run the one RCP loop, [`RcpLoop`]; `Crowd` and `Echo` share the
//! connection table and the control-interval skeleton (`follow.rs`,
//! `table.rs`). Their designs and measurements: `docs/controllers.md`.
//!
//! **A new controller** is one file here with its knobs' type implementing
//! [`ControllerConfig`], plus one line in the `controllers!` list below
//! (and its `mod`): the port, `PortConfig::validate`, the serde form used by
//! ka-sim scenarios and the testbed, and the `ka-router --controller` flag
//! all go through [`ControllerKind`].
//!
//! Units: rates in bytes per millisecond (B/ms), times in milliseconds as
//! `f64` inside the formula, queue in bytes.

use std::time::Duration;

use rcp::RcpConfig;

pub mod crowd;
pub mod echo;
mod follow;
pub mod packet;
pub mod rcp;
mod table;
#[cfg(test)]
mod test_packets;

pub use crowd::{Crowd, CrowdConfig};
pub use echo::{Echo, EchoConfig, EchoStats};
pub use packet::{FlowKey, PacketInfo, TcpInfo};
pub use rcp::{LawInput, Rcp, RcpLoop};

/// What the port measured over one control interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// T: the length of the interval that just ended.
    pub interval: Duration,
    /// d: the port's current average RTT (EWMA of RTT indicators).
    pub rtt: Duration,
    /// C: the port's capacity in B/ms.
    pub capacity: f64,
    /// The largest R the controller may advertise, in B/ms: C rounded *up*
    /// to the next rate of the port's code scale (C itself if C is off the
    /// scale). See [`Rcp`] for why this is not C.
    pub max_rate: f64,
    /// y: bytes that arrived at the port during the interval, divided by T,
    /// in B/ms (see the crate docs for what counts as an arrival).
    pub input_rate: f64,
    /// q, in bytes: the persistent queue (smallest over the last d) or the
    /// queue at the end of the interval, per [`RcpConfig::queue_measure`].
    pub queue_bytes: usize,
}

/// Upper bound on the iterations the default [`RateController::on_intervals`]
/// runs for one batch (controllers with a closed form override it).
pub const MAX_BATCH_ITERATIONS: u64 = 65_536;

/// A router rate controller: called once per control interval, returns the
/// rate the port advertises.
///
/// The port calls nothing while it is in TCP mode (the rate is frozen there),
/// so an implementation never has to know about modes.
pub trait RateController: Send {
    /// One control interval ended with measurement `m`; returns the new rate
    /// R in B/ms.
    fn on_interval(&mut self, m: &Measurement) -> f64;

    /// `n` consecutive control intervals with the *same* measurement ended
    /// (the port batches intervals in which nothing arrived and the queue did
    /// not change, e.g. after an idle gap). Returns the new rate.
    ///
    /// The default runs [`on_interval`](Self::on_interval) `min(n,
    /// MAX_BATCH_ITERATIONS)` times, so catching up after any idle gap costs
    /// bounded work; implementations with a closed form should override it.
    fn on_intervals(&mut self, m: &Measurement, n: u64) -> f64 {
        for _ in 0..n.min(MAX_BATCH_ITERATIONS) {
            self.on_interval(m);
        }
        self.rate()
    }

    /// The current rate R in B/ms.
    fn rate(&self) -> f64;

    /// Puts R back to `rate` (B/ms), within the controller's bounds. The
    /// port calls it when it enters TCP mode, with the R it had while its
    /// queue was last short (see the crate's `mode` docs). The default
    /// ignores it (R stays as it is).
    fn restore(&mut self, rate: f64) {
        let _ = rate;
    }

    /// Whether the controller wants [`on_packet`](Self::on_packet) calls.
    /// The port only reads TCP headers for controllers that do. Default
    /// false.
    fn wants_packets(&self) -> bool {
        false
    }

    /// A packet arrived at the port at `now` (port time: since the port
    /// was created), before the queue's verdict — called for every packet
    /// [`Measurement::input_rate`] counts, and also while the port is in
    /// TCP mode. Only called if [`wants_packets`](Self::wants_packets).
    /// Default: nothing.
    fn on_packet(&mut self, now: Duration, packet: &PacketInfo) {
        let _ = (now, packet);
    }

    /// The rate to signal in `packet`, which leaves the port at `now`.
    /// Only called if [`wants_packets`](Self::wants_packets). Default:
    /// [`rate`](Self::rate).
    fn rate_for(&mut self, now: Duration, packet: &PacketInfo) -> f64 {
        let _ = (now, packet);
        self.rate()
    }

    /// Whether the controller wants [`on_reverse`](Self::on_reverse)
    /// calls. Default false.
    fn wants_reverse(&self) -> bool {
        false
    }

    /// A TCP segment of the opposite direction passes the router at `now`
    /// (see [`Port::on_reverse`](crate::Port::on_reverse)): `flow` is the
    /// direction of this port it acknowledges (its source is this port's
    /// destination), `echo` the rate (B/ms) its echo carries if it carries
    /// one the port can lower. Returns the rate to lower that echo to (the
    /// port never raises it). Only called if
    /// [`wants_reverse`](Self::wants_reverse). Default: none.
    fn on_reverse(&mut self, now: Duration, flow: &FlowKey, echo: Option<f64>) -> Option<f64> {
        let _ = (now, flow, echo);
        None
    }
}

/// The knobs of a controller that [`ControllerKind`] can build.
pub trait ControllerConfig: Copy + PartialEq + std::fmt::Debug + Default {
    /// The controller for a link of `capacity` B/ms, with RCP's knobs
    /// `rcp` (α, β, R_min, the update) for its loop.
    fn build(&self, rcp: RcpConfig, capacity: f64) -> Box<dyn RateController>;

    /// Checks the knobs; the error names the bad one. Default: all fine.
    fn validate(&self) -> Result<(), &'static str> {
        Ok(())
    }
}

/// Declares [`ControllerKind`] from the list of controllers besides
/// [`Rcp`]: `Variant(Config)` with its docs, one a line.
macro_rules! controllers {
    ($($(#[$doc:meta])* $name:ident($config:ty),)*) => {
        /// Which [`RateController`] an explicit-rate port runs, with its
        /// knobs (`crate::Signalling::Ka` / `NativeRcp` carry one; XCP and
        /// plain ports have none).
        ///
        /// Serialised (feature `serde`) as a table tagged by `kind`, e.g.
        /// `{ kind = "crowd", caution = 2.5 }`; a bare name (`"echo"`)
        /// stands for the controller with its default knobs.
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(remote = "Self", tag = "kind", rename_all = "kebab-case")
        )]
        pub enum ControllerKind {
            /// [`Rcp`], the paper's controller (DESIGN §3.5); its knobs are
            /// the port's [`RcpConfig`]. The default.
            #[default]
            Rcp,
            $($(#[$doc])* $name($config),)*
        }

        impl ControllerKind {
            /// The controller for a link of `capacity` B/ms with RCP's
            /// knobs `rcp`.
            pub fn build(&self, rcp: RcpConfig, capacity: f64) -> Box<dyn RateController> {
                match self {
                    ControllerKind::Rcp => Box::new(Rcp::new(rcp, capacity)),
                    $(ControllerKind::$name(c) => c.build(rcp, capacity),)*
                }
            }

            /// Checks the controller's knobs; the error names the bad one.
            pub fn validate(&self) -> Result<(), &'static str> {
                match self {
                    ControllerKind::Rcp => Ok(()),
                    $(ControllerKind::$name(c) => c.validate(),)*
                }
            }
        }
    };
}

controllers! {
    /// [`Crowd`]: RCP's control law plus admission of newly arriving
    /// flows, without RCP's flash-crowd overflow. For a router that sees
    /// one direction of its connections.
    Crowd(CrowdConfig),
    /// [`Echo`]: RCP's control law plus connection following, with the
    /// rate also written into the echo of the ACKs that come back through
    /// the router ([`crate::Port::on_reverse`]). Needs both directions of a
    /// connection through the router.
    Echo(EchoConfig),
}

#[cfg(feature = "serde")]
impl serde::Serialize for ControllerKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ControllerKind::serialize(self, s)
    }
}

/// A bare name (`"crowd"`) or a table tagged by `kind`.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ControllerKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ControllerKind;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a controller name or a table with `kind`")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ControllerKind, E> {
                use serde::de::IntoDeserializer as _;
                let map = std::iter::once(("kind", name));
                ControllerKind::deserialize(serde::de::value::MapDeserializer::new(
                    map.map(|(k, v)| (k.into_deserializer(), v.into_deserializer())),
                ))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ControllerKind, A::Error> {
                ControllerKind::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_any(Visitor)
    }
}

//! Queue disciplines: the swappable queue stage of a [`Port`](crate::Port)
//! (DESIGN §3.1).
//!
//! A port's pipeline is
//!
//! ```text
//! ingress (classify, TTL) → queue discipline → shaper at C
//!                         → signalling on dequeue (KA | native RCP | none) → delay line
//! ```
//!
//! and the queue discipline is one [`QueueDiscipline`] trait object, in the
//! spirit of Linux's `net/sched/` ops tables: enqueue with a verdict,
//! dequeue when the link is free, occupancy in packets and bytes, and the
//! time the head has waited. Any discipline combines with any signalling:
//! the KA TCP-mode detector and RCP's q read the discipline's occupancy,
//! whatever it is. One file per discipline:
//!
//! | kind | file | what |
//! |---|---|---|
//! | [`DropTail`] | `droptail.rs` | FIFO, tail drop at the limit (DESIGN §3.1; the default) |
//! | [`Red`] | `red.rs` | RED with gentle mode, count-based spacing, idle-time correction and ECN (DESIGN §4.2) |
//! | [`FqCodel`] | `fq_codel.rs` | FQ-CoDel: hashed flow queues, DRR with new/old lists, overflow from the fattest queue (DESIGN §4.3, RFC 8290) |
//! |  | `codel.rs` | the CoDel state machine of each FQ-CoDel flow queue (RFC 8289) |
//! |  | `flow_hash.rs` | FQ-CoDel's flow key and keyed hash (RFC 8290 §4.1.1) |
//! |  | `rng.rs` | SplitMix64, the disciplines' seeded randomness |
//!
//! Times are nanoseconds on the port's clock ([`Nanos`]). A discipline may
//! drop packets inside `dequeue` (CoDel) or drop an already queued packet to
//! make room (FQ-CoDel): it frees them itself and counts them in
//! [`QdiscStats`], which the port folds into its [`Counters`](crate::Counters).
//! ECN marking (RFC 3168) goes through [`ka_codec::wire::ecn::mark_ce`].
//!
//! Memory: every discipline holds at most its packet limit (the port's
//! `queue_limit`) of packets, each at most
//! [`MAX_PACKET_LEN`](crate::MAX_PACKET_LEN); per-discipline state beyond
//! that is fixed-size and documented on each.

mod codel;
mod droptail;
mod flow_hash;
mod fq_codel;
mod red;
pub(crate) mod rng;

pub use droptail::DropTail;
pub use flow_hash::RAW_KEY_BYTES;
pub use fq_codel::{CODEL_MTU, FqCodel, FqCodelConfig, MAX_FLOWS, MIN_QUANTUM};
pub use red::{Red, RedConfig};

use std::fmt;

use ka_codec::wire::Layout;

use crate::gso::Gso;

/// Time on a port's clock: nanoseconds since the port was created.
pub type Nanos = u64;

/// What a discipline did with an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Queued as it was.
    Queued,
    /// Queued with its ECN field set to CE (RFC 3168) instead of dropped.
    Marked,
    /// Not queued (freed).
    Dropped(DropCause),
}

impl Verdict {
    /// Whether the packet is in the queue now.
    pub fn is_queued(self) -> bool {
        !matches!(self, Verdict::Dropped(_))
    }
}

/// Why a discipline dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The hard limit (packets or memory) was reached.
    Overflow,
    /// An early drop by the active queue management (RED's probability,
    /// CoDel's control law) of a packet that could not be ECN-marked.
    Aqm,
}

/// A packet leaving the discipline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dequeued {
    /// The packet.
    pub packet: Vec<u8>,
    /// When it was enqueued (its sojourn is `now − enqueued_at`).
    pub enqueued_at: Nanos,
}

/// Monotonic counters a discipline keeps (never reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QdiscStats {
    /// Packets dropped because a hard limit was reached: arrivals refused
    /// *and* queued packets dropped to make room (FQ-CoDel's fattest-flow
    /// drop).
    pub drops_overflow: u64,
    /// Packets dropped early by the AQM (at enqueue or dequeue).
    pub drops_aqm: u64,
    /// Packets marked CE instead of dropped.
    pub marks: u64,
}

/// A queue discipline (see the module docs). Implementations never panic on
/// any packet bytes and never read a clock.
pub trait QueueDiscipline: Send + fmt::Debug {
    /// A short name for logs and metrics ("droptail", "red", "fq-codel").
    fn name(&self) -> &'static str;

    /// A packet arrives at `now`. The port has already validated the IP
    /// header (or found the packet not to be IP at all).
    fn enqueue(&mut self, now: Nanos, packet: Vec<u8>) -> Verdict;

    /// The link is free at `now`: the next packet to send, if any. May drop
    /// packets on the way (counted in [`QueueDiscipline::stats`]).
    fn dequeue(&mut self, now: Nanos) -> Option<Dequeued>;

    /// [`QueueDiscipline::enqueue`] with the packet's one parse (the port
    /// classifier's [`Layout`]; `None` for non-IP), which the discipline
    /// keeps with the packet and hands back from
    /// [`QueueDiscipline::dequeue_parsed`], so the stages on dequeue read
    /// the headers without parsing again. ECN marking does not move a
    /// header, so the layout stays valid. The default forgets it (the port
    /// then parses the packet once on dequeue).
    fn enqueue_parsed(&mut self, now: Nanos, packet: Vec<u8>, layout: Option<Layout>) -> Verdict {
        let _ = layout;
        self.enqueue(now, packet)
    }

    /// [`QueueDiscipline::dequeue`] with the layout the packet was enqueued
    /// with (always `None` by default).
    fn dequeue_parsed(&mut self, now: Nanos) -> Option<(Dequeued, Option<Layout>)> {
        self.dequeue(now).map(|d| (d, None))
    }

    /// Whether the discipline takes TCP super-packets whole
    /// ([`QueueDiscipline::enqueue_gso`], [`crate::gso`]): only one that
    /// makes no per-packet decision beyond its limit may (a discipline
    /// whose drop or mark decisions are per packet — RED, CoDel — gets the
    /// segments one by one). Default false.
    fn takes_gso(&self) -> bool {
        false
    }

    /// A super-packet of `gso.segments()` segments arrives (only if
    /// [`QueueDiscipline::takes_gso`]): the discipline counts it as its
    /// segments in [`QueueDiscipline::len`] and their wire bytes in
    /// [`QueueDiscipline::bytes`], and hands it back whole with its view
    /// from [`QueueDiscipline::dequeue_gso`]. The default queues it as a
    /// plain packet (for a discipline that does not take them).
    fn enqueue_gso(&mut self, now: Nanos, packet: Vec<u8>, layout: Layout, gso: Gso) -> Verdict {
        let _ = gso;
        self.enqueue_parsed(now, packet, Some(layout))
    }

    /// [`QueueDiscipline::dequeue_parsed`] with the super-packet view of
    /// what leaves, if it entered by [`QueueDiscipline::enqueue_gso`]
    /// (always `None` by default).
    fn dequeue_gso(&mut self, now: Nanos) -> Option<(Dequeued, Option<Layout>, Option<Gso>)> {
        self.dequeue_parsed(now).map(|(d, l)| (d, l, None))
    }

    /// Packets queued.
    fn len(&self) -> usize;

    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes queued.
    fn bytes(&self) -> usize;

    /// When the oldest queued packet was enqueued (`None` if empty). For a
    /// FIFO that is the head; for a multi-queue discipline, the oldest head.
    fn oldest_enqueued_at(&self) -> Option<Nanos>;

    /// The discipline's counters.
    fn stats(&self) -> QdiscStats;

    /// Flow queues holding packets right now, for disciplines that have
    /// them (FQ-CoDel); `None` for single-queue disciplines.
    fn active_flows(&self) -> Option<usize> {
        None
    }
}

/// Which discipline a port uses, with its knobs (the packet limit is the
/// port's [`queue_limit`](crate::PortConfig::queue_limit)).
///
/// Serialised (feature `serde`) as a table tagged by `kind`:
/// `{ kind = "droptail" }`, `{ kind = "red", max_p = 0.2 }`,
/// `{ kind = "fq-codel", target = "2ms" }` (unset knobs: the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "kind", rename_all = "kebab-case")
)]
pub enum QdiscConfig {
    /// FIFO with tail drop (DESIGN §3.1). The default.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "droptail"))]
    DropTail,
    /// Random Early Detection (DESIGN §4.2).
    Red(RedConfig),
    /// FQ-CoDel (DESIGN §4.3, RFC 8290).
    FqCodel(FqCodelConfig),
}

impl QdiscConfig {
    /// The discipline's name, as in [`QueueDiscipline::name`].
    pub fn name(&self) -> &'static str {
        match self {
            QdiscConfig::DropTail => "droptail",
            QdiscConfig::Red(_) => "red",
            QdiscConfig::FqCodel(_) => "fq-codel",
        }
    }

    /// Checks the knobs ([`RedConfig::validate`],
    /// [`FqCodelConfig::validate`]).
    pub fn validate(&self) -> Result<(), crate::error::ConfigError> {
        match self {
            QdiscConfig::DropTail => Ok(()),
            QdiscConfig::Red(c) => c.validate(),
            QdiscConfig::FqCodel(c) => c.validate(),
        }
    }

    /// Builds the discipline for a port with packet limit `limit` and
    /// capacity `capacity_bps`; `seed` feeds its randomness (drop
    /// decisions, hash perturbation) so runs are reproducible.
    pub fn build(&self, limit: usize, capacity_bps: u64, seed: u64) -> Box<dyn QueueDiscipline> {
        match self {
            QdiscConfig::DropTail => Box::new(DropTail::new(limit)),
            QdiscConfig::Red(c) => Box::new(Red::new(*c, limit, capacity_bps, seed)),
            QdiscConfig::FqCodel(c) => Box::new(FqCodel::new(*c, limit, seed)),
        }
    }
}

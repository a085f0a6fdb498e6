//! State shared by all nodes of a run: the flow table.
//!
//! Senders register a flow when they open its connection; receivers find it
//! by the connection's 4-tuple and add the bytes their application reads.
//! The sampler reads and resets the per-bin byte counters of tracked flows.

use std::collections::HashMap;

use crate::engine::{NodeId, SimTime};
use crate::scenario::FlowKind;

/// Index into [`World::flows`].
pub type FlowId = u32;

/// A connection's addresses as the receiver sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Sender address.
    pub src: [u8; 4],
    /// Sender port.
    pub sport: u16,
    /// Receiver address.
    pub dst: [u8; 4],
    /// Receiver port.
    pub dport: u16,
}

/// What is known about a path, for `FCT_PS`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathInfo {
    /// Round-trip propagation delay (no queueing or serialisation).
    pub base_rtt: SimTime,
    /// Smallest forward capacity on the path, bit/s.
    pub bottleneck_bps: u64,
    /// Index of the first forward hop (for per-hop load).
    pub first_hop: usize,
}

/// One flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRecord {
    /// Flow id (= index).
    pub id: FlowId,
    /// Endpoint kind.
    pub kind: FlowKind,
    /// Group index in the scenario.
    pub group: usize,
    /// Sending host.
    pub sender: NodeId,
    /// Whether `series.csv` tracks it.
    pub tracked: bool,
    /// Size in packets (None = unbounded).
    pub size_pkts: Option<u64>,
    /// Size in bytes of application data (None = unbounded).
    pub size_bytes: Option<u64>,
    /// When the sender's application opened the connection.
    pub start: SimTime,
    /// When the receiver's application had read all `size_bytes`.
    pub end: Option<SimTime>,
    /// When the sender stopped (long-lived flows) or saw the flow complete.
    pub stop: Option<SimTime>,
    /// Bytes the receiver's application has read.
    pub received: u64,
    /// Bytes read in the current series bin (tracked flows only).
    pub bin_bytes: u64,
    /// IP bytes that arrived at the receiver host in the current series bin
    /// (tracked flows only; see `Metric::WireBps`).
    pub bin_wire_bytes: u64,
    /// Whether the sender is in KA mode now.
    pub ka_mode: bool,
    /// Time spent in KA mode (as the endpoint reports it).
    pub ka_time: SimTime,
    /// When the sender first entered KA mode (None: never).
    pub ka_first: Option<SimTime>,
    /// Retransmission timeouts the sender took (as the endpoint counts
    /// them; read when the flow finishes and at the end of the run).
    pub rtos: u64,
    /// Path properties.
    pub path: PathInfo,
}

impl FlowRecord {
    /// Flow completion time, if complete.
    pub fn fct(&self) -> Option<SimTime> {
        self.end.map(|e| e.saturating_sub(self.start))
    }
}

/// The shared state.
#[derive(Debug, Default)]
pub struct World {
    /// All flows, by id.
    pub flows: Vec<FlowRecord>,
    /// Ids of the tracked flows, in start order.
    pub tracked: Vec<FlowId>,
    by_key: HashMap<FlowKey, FlowId>,
}

/// What a sender says about a new flow.
#[derive(Debug, Clone, Copy)]
pub struct NewFlow {
    /// Endpoint kind.
    pub kind: FlowKind,
    /// Group index.
    pub group: usize,
    /// Sending host.
    pub sender: NodeId,
    /// Tracked in series.
    pub tracked: bool,
    /// Size in packets and bytes (None = unbounded).
    pub size: Option<(u64, u64)>,
    /// Start time.
    pub start: SimTime,
    /// Path.
    pub path: PathInfo,
}

impl World {
    /// Registers a flow under its connection key; returns its id.
    pub fn open(&mut self, key: FlowKey, f: NewFlow) -> FlowId {
        let id = self.flows.len() as FlowId;
        self.flows.push(FlowRecord {
            id,
            kind: f.kind,
            group: f.group,
            sender: f.sender,
            tracked: f.tracked,
            size_pkts: f.size.map(|s| s.0),
            size_bytes: f.size.map(|s| s.1),
            start: f.start,
            end: None,
            stop: None,
            received: 0,
            bin_bytes: 0,
            bin_wire_bytes: 0,
            ka_mode: false,
            ka_time: 0,
            ka_first: None,
            rtos: 0,
            path: f.path,
        });
        self.by_key.insert(key, id);
        if f.tracked {
            self.tracked.push(id);
        }
        id
    }

    /// The flow of a connection key.
    pub fn lookup(&self, key: &FlowKey) -> Option<FlowId> {
        self.by_key.get(key).copied()
    }

    /// Mutable access to a flow.
    pub fn flow_mut(&mut self, id: FlowId) -> Option<&mut FlowRecord> {
        self.flows.get_mut(id as usize)
    }

    /// The receiver's application read `n` bytes of flow `id` at `now`;
    /// marks the flow complete when it has all its bytes. Returns true if
    /// this read completed it.
    pub fn received(&mut self, id: FlowId, n: u64, now: SimTime) -> bool {
        let Some(f) = self.flows.get_mut(id as usize) else {
            return false;
        };
        f.received += n;
        if f.tracked {
            f.bin_bytes += n;
        }
        if f.end.is_none() && f.size_bytes.is_some_and(|s| f.received >= s) {
            f.end = Some(now);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_lookup_complete() {
        let mut w = World::default();
        let key = FlowKey {
            src: [10, 0, 0, 1],
            sport: 40000,
            dst: [10, 0, 0, 2],
            dport: 5001,
        };
        let path = PathInfo {
            base_rtt: 100_000_000,
            bottleneck_bps: 150_000_000,
            first_hop: 0,
        };
        let id = w.open(
            key,
            NewFlow {
                kind: FlowKind::Ka,
                group: 0,
                sender: NodeId(3),
                tracked: true,
                size: Some((2, 2896)),
                start: 1_000,
                path,
            },
        );
        assert_eq!(w.lookup(&key), Some(id));
        assert!(!w.received(id, 1448, 5_000));
        assert!(w.received(id, 1448, 9_000));
        assert!(!w.received(id, 10, 9_500));
        let f = &w.flows[id as usize];
        assert_eq!(f.fct(), Some(8_000));
        assert_eq!(f.bin_bytes, 2906);
    }
}

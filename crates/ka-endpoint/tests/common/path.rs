//! The path between the two stacks: its hops (KA router ports, a
//! fixed-code fragmenter, a signal eraser) and the impairment link after
//! them (rate, delay, seeded loss, reordering, duplication, blackouts).

use super::*;

/// xorshift64* — deterministic, seeded.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.f64() < p
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

/// Returns true to drop the packet.
pub type FilterFn = dyn FnMut(Instant, &[u8]) -> bool;

/// Changes a packet in place (e.g. a router stub rewriting a header).
pub type RewriteFn = dyn FnMut(Instant, &mut Vec<u8>);

/// A packet on the wire: delivery time, tie-break, destination, bytes.
pub(super) type InFlight = Reverse<(Instant, u64, Side, Vec<u8>)>;

/// A stage on the path.
pub enum Hop {
    /// A real KA router port (sans-IO core of ka-router).
    Port(Box<ka_router::Port>),
    /// Fragments every non-DF IPv4 packet at a fixed leading length (what
    /// a KA router with a constant R would do), instantly.
    Stamp(Code),
    /// The same for IPv6 (inserts a Fragment header; counter = ident).
    Stamp6(Code, u32),
    /// When `on`, re-joins two-piece KA splits into whole packets (like a
    /// reassembling middlebox: erases the KA signal).
    Eraser {
        on: bool,
        held: HashMap<u16, Vec<u8>>,
    },
    /// Drops the packets for which the predicate says so (one-shot faults).
    Filter(Box<FilterFn>),
    /// Marks CE on the packets for which the predicate says so, if they are
    /// ECN-capable (`ka_codec::wire::ecn::mark_ce`, what an AQM router does
    /// instead of dropping).
    Mark(Box<FilterFn>),
    /// Rewrites every packet in place, instantly.
    Rewrite(Box<RewriteFn>),
}

impl Hop {
    pub fn port(cfg: ka_router::PortConfig, now: Instant) -> Hop {
        Hop::Port(Box::new(ka_router::Port::new(cfg, now)))
    }
    pub fn eraser() -> Hop {
        Hop::Eraser {
            on: false,
            held: HashMap::new(),
        }
    }

    pub(super) fn push(&mut self, now: Instant, pkt: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        match self {
            Hop::Port(p) => {
                p.push(now, pkt);
                while let Some(x) = p.poll_transmit(now) {
                    out.push(x);
                }
            }
            Hop::Stamp(code) => {
                let (a, b) = ka_router::stamp_ipv4(pkt, *code).into_pieces();
                out.push(a);
                out.extend(b);
            }
            Hop::Stamp6(code, ident) => {
                *ident = ident.wrapping_add(1);
                let (a, b) = ka_router::stamp_ipv6(pkt, *code, *ident).into_pieces();
                out.push(a);
                out.extend(b);
            }
            Hop::Eraser { on, held } => {
                if !*on {
                    // switched off: pieces held back while it was on go
                    // out now (in order), so turning it off loses nothing
                    let mut rest: Vec<(u16, Vec<u8>)> = held.drain().collect();
                    rest.sort_by_key(|(id, _)| *id);
                    out.extend(rest.into_iter().map(|(_, p)| p));
                    out.push(pkt);
                    return;
                }
                let Ok(ip) = Ipv4Packet::new_checked(&pkt[..]) else {
                    out.push(pkt);
                    return;
                };
                if !ip.is_fragment() {
                    out.push(pkt);
                    return;
                }
                let id = ip.ident();
                if ip.frag_offset() == 0 && ip.more_frags() {
                    held.insert(id, pkt);
                    return;
                }
                let Some(lead) = held.remove(&id) else {
                    out.push(pkt);
                    return;
                };
                let l = Ipv4Packet::new_checked(&lead[..]).unwrap();
                if ip.frag_offset() != l.payload().len() || ip.more_frags() {
                    out.push(lead);
                    out.push(pkt);
                    return;
                }
                out.push(join_fragments(&l, &ip));
            }
            Hop::Filter(f) => {
                if !f(now, &pkt) {
                    out.push(pkt);
                }
            }
            Hop::Mark(f) => {
                let mut pkt = pkt;
                if f(now, &pkt) {
                    ka_codec::wire::ecn::mark_ce(&mut pkt);
                }
                out.push(pkt);
            }
            Hop::Rewrite(f) => {
                let mut pkt = pkt;
                f(now, &mut pkt);
                out.push(pkt);
            }
        }
    }

    pub(super) fn poll(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        if let Hop::Port(p) = self {
            p.handle_timeout(now);
            while let Some(x) = p.poll_transmit(now) {
                out.push(x);
            }
        }
    }

    pub(super) fn next_time(&self) -> Option<Instant> {
        match self {
            Hop::Port(p) => p.poll_timeout(),
            _ => None,
        }
    }
}

/// Link impairments, applied after the hops.
#[derive(Debug, Clone, Default)]
pub struct Impair {
    /// Serialisation rate (None = infinitely fast).
    pub rate_bps: Option<u64>,
    pub delay: Duration,
    pub loss: f64,
    pub dup: f64,
    /// Probability that a packet gets `reorder_extra` more delay.
    pub reorder: f64,
    pub reorder_extra: Duration,
    /// A reordered packet skips `delay` instead (leaves at once, ahead of
    /// everything in the delay line, as ka-router's impairment stage does).
    pub reorder_early: bool,
    /// `(k, extra)`: the k-th packet (from 0) longer than 1000 bytes that
    /// enters this link gets `extra` more delay (one reordering on demand).
    pub late_data: Vec<(u64, Duration)>,
    /// Drop everything sent in these windows (offsets from the start).
    pub blackouts: Vec<(Duration, Duration)>,
}

pub struct Path {
    pub hops: Vec<Hop>,
    pub impair: Impair,
    pub(super) next_free: Option<Instant>,
    /// Packets longer than 1000 bytes that entered the link so far.
    pub data_entered: u64,
    /// Packets the link delayed by `reorder_extra` or `late_data`.
    pub reordered: u64,
}

impl Path {
    pub fn new(delay: Duration) -> Path {
        Path {
            hops: vec![],
            impair: Impair {
                delay,
                ..Impair::default()
            },
            next_free: None,
            data_entered: 0,
            reordered: 0,
        }
    }
}

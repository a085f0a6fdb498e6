//! Properties of the stamping-interval table (`ka_router::StampTable`,
//! DESIGN §3.9) against an exact per-flow model, with tables small enough
//! that flows collide all the time:
//!
//! * a packet is held back only if its flow had a signal within its
//!   interval (the RTT it announced last, else d): collisions only ever
//!   add signals, so no flow waits longer than one interval (plus the gap
//!   to its next packet) for a signal;
//! * the memory is fixed at construction.

use std::collections::HashMap;
use std::time::Duration;

use ka_codec::wire::FlowKey;
use ka_router::signal::every::STAMP_SLOTS;
use ka_router::{StampEvery, StampTable};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// A packet of flow `.0` after `.1` µs.
    Packet(u8, u32),
    /// Flow `.0` announces an RTT of `.1` ms.
    Rtt(u8, u16),
    /// Flow `.0` opens a new connection (SYN).
    Syn(u8),
    /// The port's average RTT d becomes `.0` ms.
    D(u16),
}

fn op(flows: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..flows, 0u32..20_000).prop_map(|(f, dt)| Op::Packet(f, dt)),
        2 => (0..flows, 0u16..200).prop_map(|(f, r)| Op::Rtt(f, r)),
        1 => (0..flows).prop_map(Op::Syn),
        1 => (1u16..200).prop_map(Op::D),
    ]
}

fn key(f: u8) -> FlowKey {
    FlowKey::v4([10, 0, 0, f], [10, 1, 0, 1], 40_000 + u16::from(f), 443, 6)
}

const MS: u64 = 1_000_000;

/// Runs `ops` against a table of `slots` slots and the exact model;
/// returns (packets, signals).
fn check(every: StampEvery, slots: usize, ops: &[Op]) -> Result<(u64, u64), TestCaseError> {
    let mut table = StampTable::new(every, slots, 99);
    let memory = table.memory_bytes();
    let mut t: u64 = 0;
    let mut d: u64 = 100 * MS;
    // The model: each flow's last signal and announced RTT.
    let mut last: HashMap<u8, u64> = HashMap::new();
    let mut own: HashMap<u8, u64> = HashMap::new();
    let (mut packets, mut signals) = (0, 0);
    for op in ops {
        match *op {
            Op::Packet(f, dt) => {
                t += u64::from(dt) * 1_000;
                packets += 1;
                let ideal = match every {
                    StampEvery::Every(iv) => iv.as_nanos() as u64,
                    _ => own.get(&f).copied().unwrap_or(d),
                };
                if table.due(t, &key(f), d) {
                    table.signalled(t, &key(f), 100.0);
                    last.insert(f, t);
                    signals += 1;
                } else {
                    // Held back: only by the flow's own signal, within
                    // the interval the flow is owed.
                    let l = last.get(&f).copied();
                    prop_assert!(
                        l.is_some_and(|l| t - l < ideal),
                        "flow {f} held at {t} (last {l:?}, interval {ideal})"
                    );
                    // ... and the table's own interval is never longer.
                    prop_assert!(table.interval(&key(f), d) <= ideal);
                }
            }
            Op::Rtt(f, ms) => {
                table.note_rtt(&key(f), u64::from(ms) * MS);
                if every == StampEvery::Rtt {
                    own.insert(f, u64::from(ms) * MS);
                }
            }
            Op::Syn(f) => {
                table.forget(&key(f));
                own.remove(&f);
                last.remove(&f);
                prop_assert!(table.due(t, &key(f), d), "a SYN makes the flow due");
            }
            Op::D(ms) => d = u64::from(ms) * MS,
        }
    }
    prop_assert_eq!(table.memory_bytes(), memory, "memory fixed");
    prop_assert_eq!(table.slots(), slots.next_power_of_two().max(1));
    Ok((packets, signals))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rtt_collisions_only_add_signals(
        slots in prop::sample::select(vec![1usize, 2, 4, 64]),
        ops in prop::collection::vec(op(12), 1..400),
    ) {
        check(StampEvery::Rtt, slots, &ops)?;
    }

    #[test]
    fn fixed_interval_collisions_only_add_signals(
        slots in prop::sample::select(vec![1usize, 4, 64]),
        ms in 1u64..50,
        ops in prop::collection::vec(op(8), 1..400),
    ) {
        check(StampEvery::Every(Duration::from_millis(ms)), slots, &ops)?;
    }
}

/// With enough slots and flows that announce their RTT, the table holds
/// back most packets: the saving the paper's §V is after (and the model
/// check above still holds).
#[test]
fn few_flows_in_a_large_table_are_signalled_once_per_rtt() {
    let mut ops = Vec::new();
    for f in 0..20 {
        ops.push(Op::Rtt(f, 50));
    }
    // 20 flows, one packet each every 2 ms (100 µs apart), for 1 s.
    for _ in 0..500 {
        for f in 0..20 {
            ops.push(Op::Packet(f, 100));
        }
    }
    let (packets, signals) = check(StampEvery::Rtt, STAMP_SLOTS, &ops).unwrap();
    assert_eq!(packets, 10_000);
    // One per 50 ms per flow, plus the first: 20 × 21 (a collision among
    // 20 flows in 4096 slots would add some).
    assert!((20 * 20..=20 * 21 + 40).contains(&signals), "{signals}");
}

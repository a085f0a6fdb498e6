//! Property tests of RWM: arbitrary bytes, batches against one-by-one,
//! random conversations and the table's invariants.

use super::*;

/// Step `kind` (0-5) of connection `c`'s conversation: SYN, SYN-ACK, the
/// handshake's ACK, a data segment back, FIN, RST; `None` for any other
/// kind, which each property test fills with its own odd packet.
fn conversation_step(c: &Conn, kind: u8, window: u16) -> Option<(Vec<u8>, Side)> {
    let (a1, b1) = (c.isn_a + 1, c.isn_b.wrapping_add(1));
    Some(match kind {
        0 => (c.seg(true, SYN, c.isn_a, 0, window, 0), Side::Forward),
        1 => (
            c.seg(false, SYN | ACK, c.isn_b, a1, window, 0),
            Side::Reverse,
        ),
        2 => (c.seg(true, ACK, a1, b1, window, 0), Side::Forward),
        3 => (c.seg(false, ACK, b1, a1, window, 100), Side::Reverse),
        4 => (c.seg(true, FIN | ACK, a1, b1, window, 0), Side::Forward),
        5 => (c.seg(false, RST, b1, 0, window, 0), Side::Reverse),
        _ => return None,
    })
}

fn arb_conn() -> impl Strategy<Value = Conn> {
    (
        0u16..4,
        any::<bool>(),
        proptest::option::of(0u8..20),
        proptest::option::of(0u8..20),
        any::<bool>(),
    )
        .prop_map(|(i, v6, ws_a, ws_b, ip_opts)| {
            let mut c = Conn::new(i);
            c.ws_a = ws_a;
            c.ws_b = ws_b;
            c.ip_opts = ip_opts;
            if v6 { c.v6() } else { c }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Arbitrary bytes (and IP-looking bytes) never panic and are never
    /// changed in length; anything rewritten keeps a valid checksum
    /// (checked in `process`).
    #[test]
    fn arbitrary_bytes_never_panic(
        pkts in proptest::collection::vec(
            (any::<bool>(), prop_oneof![Just(0x45u8), Just(0x46), Just(0x60), any::<u8>()],
             proptest::collection::vec(any::<u8>(), 0..120)),
            1..30),
    ) {
        let (mut r, t0) = rwm(10_000_000);
        let mut t = t0;
        for (fwd, first, rest) in pkts {
            let mut p = vec![first];
            p.extend(rest);
            let side = if fwd { Side::Forward } else { Side::Reverse };
            t += Duration::from_millis(1);
            let before = p.clone();
            let o = r.process(t, side, &mut p);
            prop_assert_eq!(p.len(), before.len());
            if !matches!(o, RwmOutcome::Rewritten { .. }) {
                prop_assert_eq!(&p, &before);
            }
            r.table.check();
        }
    }

    /// `process_batch` in batches of any length does exactly what
    /// `process` on each packet does: the same packets out, the same
    /// counters, the same table.
    #[test]
    fn a_batch_is_the_same_as_one_by_one(
        conns in proptest::collection::vec(arb_conn(), 1..5),
        steps in proptest::collection::vec(
            (0usize..5, 0u8..7, any::<u16>(), 0u64..300), 1..120),
        batch in 1usize..40,
    ) {
        let t0 = Instant::now();
        let mut cfg = RwmConfig::new(20_000_000);
        cfg.max_flows = 3;
        cfg.max_half_open = 2;
        let mut one = Rwm::new(cfg.clone(), t0).unwrap();
        let mut many = Rwm::new(cfg, t0).unwrap();
        let mut t = t0;
        let mut pkts = Vec::new();
        for (ci, kind, window, gap_ms) in steps {
            let c = conns[ci % conns.len()];
            t += Duration::from_millis(gap_ms);
            let (pkt, side) = conversation_step(&c, kind, window)
                .unwrap_or_else(|| (vec![0x45, 0, 0, 20], Side::Forward));
            pkts.push((t, side, pkt));
        }
        let mut expected = pkts.clone();
        for (t, side, p) in &mut expected {
            one.process(*t, *side, p);
        }
        for chunk in pkts.chunks_mut(batch) {
            many.process_batch(chunk.iter_mut().map(|(t, s, p)| (*t, *s, p.as_mut_slice())));
            many.table.check();
        }
        prop_assert_eq!(&pkts, &expected);
        prop_assert_eq!(one.stats(), many.stats());
    }

    /// Random interleavings of handshake and data segments of a few
    /// connections (random flags, windows, scales, IPv4/IPv6): the table's
    /// invariants hold, windows only ever go down, and a rewritten window
    /// never exceeds `max(cap, 2 MSS)` scaled, rounded to one unit.
    #[test]
    fn random_conversations_keep_the_invariants(
        conns in proptest::collection::vec(arb_conn(), 1..4),
        steps in proptest::collection::vec(
            (0usize..4, 0u8..7, any::<u16>(), 0u64..50), 1..80),
    ) {
        let t0 = Instant::now();
        let mut cfg = RwmConfig::new(20_000_000);
        cfg.max_flows = 2;
        cfg.max_half_open = 2;
        let mut r = Rwm::new(cfg, t0).unwrap();
        let mut t = t0;
        for (ci, kind, window, gap_ms) in steps {
            let c = conns[ci % conns.len()];
            t += Duration::from_millis(gap_ms);
            let (pkt, side) = conversation_step(&c, kind, window)
                .unwrap_or_else(|| (c.seg(true, ACK, 5, 5, window, 1400), Side::Forward));
            let (o, _) = process(&mut r, t, side, pkt);
            if let RwmOutcome::Rewritten { advertised, written } = o {
                prop_assert!(written < advertised && written >= 1);
            }
        }
    }
}

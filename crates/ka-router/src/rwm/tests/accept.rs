//! RST and FIN change RWM's state only when the receiver would accept them
//! (the `accept` module), and a connection that goes on sending after one
//! RWM accepted is modulated again — in virtual time.

use super::*;

/// `p` with its TCP checksum broken (the receiver would drop it).
fn corrupt(mut p: Vec<u8>) -> Vec<u8> {
    let at = segment::parse(&p).unwrap().tcp_at;
    p[at + 16] ^= 0x5A;
    p
}

/// A RST from `b` with sequence number `seq` (travels `Side::Reverse`).
fn rst_from_b(c: &Conn, seq: u32) -> Vec<u8> {
    c.seg(false, RST, seq, 0, 0, 0)
}

/// `b`'s next sequence number after the handshake.
fn b1(c: &Conn) -> u32 {
    c.isn_b.wrapping_add(1)
}

/// `p` through `r` without [`process`]'s checksum check (for corrupted
/// packets); the table's invariants still checked.
fn raw(r: &mut Rwm, t: Instant, side: Side, mut p: Vec<u8>) -> RwmOutcome {
    let o = r.process(t, side, &mut p);
    r.table.check();
    o
}

fn modulated(r: &mut Rwm, c: &Conn, t: Instant) -> bool {
    matches!(c.ack_from_b(r, t, u16::MAX).0, RwmOutcome::Rewritten { .. })
}

#[test]
fn a_rst_with_a_bad_checksum_leaves_the_flow_modulated() {
    for v6 in [false, true] {
        let (mut r, t0) = rwm(50_000_000);
        let c = if v6 { Conn::new(1).v6() } else { Conn::new(1) };
        let t = c.handshake(&mut r, t0, MS, MS);
        let o = raw(&mut r, t, Side::Reverse, corrupt(rst_from_b(&c, b1(&c))));
        assert_eq!(o, RwmOutcome::Unchanged);
        let s = r.stats();
        assert_eq!((s.flows, s.active_flows, s.closed), (1, 1, 0), "v6 {v6}");
        assert_eq!(s.rst_fin_rejected, 1);
        assert!(modulated(&mut r, &c, t), "v6 {v6}");
    }
}

#[test]
fn an_out_of_window_rst_with_a_good_checksum_leaves_the_flow_modulated() {
    for v6 in [false, true] {
        let (mut r, t0) = rwm(50_000_000);
        let c = if v6 { Conn::new(1).v6() } else { Conn::new(1) };
        let t = c.handshake(&mut r, t0, MS, MS);
        // Far ahead, far behind, half the space away.
        for off in [5_000_000u32, 0u32.wrapping_sub(200_000), 1 << 31] {
            let p = rst_from_b(&c, b1(&c).wrapping_add(off));
            assert!(tcp_checksum_ok(&p));
            process(&mut r, t, Side::Reverse, p);
        }
        let s = r.stats();
        assert_eq!(
            (s.flows, s.closed, s.rst_fin_rejected),
            (1, 0, 3),
            "v6 {v6}"
        );
        assert!(modulated(&mut r, &c, t));
    }
}

#[test]
fn an_in_window_rst_takes_the_flow_out_of_modulation() {
    for v6 in [false, true] {
        let (mut r, t0) = rwm(50_000_000);
        let c = if v6 { Conn::new(1).v6() } else { Conn::new(1) };
        let other = Conn::new(2);
        let t = c.handshake(&mut r, t0, MS, MS);
        let t = other.handshake(&mut r, t, MS, MS);
        assert_eq!(r.active_in_class(0), 2);
        process(&mut r, t, Side::Reverse, rst_from_b(&c, b1(&c)));
        let s = r.stats();
        assert_eq!((s.flows, s.closed, s.closed_kept), (1, 1, 1), "v6 {v6}");
        assert_eq!((s.rst_fin_rejected, s.half_open), (0, 0));
        assert_eq!(r.active_in_class(0), 1, "no longer shares the class");
        // Its pure ACKs are left alone.
        assert_eq!(c.ack_from_b(&mut r, t, u16::MAX).0, RwmOutcome::Untracked);
    }
}

#[test]
fn data_after_an_accepted_rst_readmits_the_flow() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, MS, MS);
    process(&mut r, t, Side::Reverse, rst_from_b(&c, b1(&c)));
    assert_eq!(r.stats().flows, 0);
    // The receiver did not in fact reset: a keeps sending data.
    let t = t + 10 * Duration::from_millis(1);
    let data = c.seg(true, ACK, c.isn_a + 1, b1(&c), 60_000, 1000);
    let (o, _) = process(&mut r, t, Side::Forward, data);
    assert!(matches!(o, RwmOutcome::Rewritten { .. }), "{o:?}");
    let s = r.stats();
    assert_eq!(
        (s.flows, s.active_flows, s.readmitted, s.closed_kept),
        (1, 1, 1, 0)
    );
    assert!(modulated(&mut r, &c, t));
    // Its marks came from the data: a RST from b at its number still
    // counts, one from a at its old number does not.
    let stale = c.seg(true, RST, c.isn_a.wrapping_sub(1_000_000), 0, 0, 0);
    process(&mut r, t, Side::Forward, stale);
    assert_eq!((r.stats().flows, r.stats().rst_fin_rejected), (1, 1));
    process(&mut r, t, Side::Reverse, rst_from_b(&c, b1(&c)));
    assert_eq!((r.stats().flows, r.stats().closed), (0, 2));
    // A new SYN on the four-tuple starts a new handshake.
    let c2 = Conn {
        isn_a: 77,
        isn_b: 99,
        ..c
    };
    c2.handshake(&mut r, t + Duration::from_secs(1), MS, MS);
    assert_eq!((r.stats().flows, r.stats().closed_kept), (1, 0));
    assert_eq!(r.stats().handshakes, 2);
}

#[test]
fn fins_count_only_when_valid_and_in_window_and_data_readmits() {
    for v6 in [false, true] {
        let (mut r, t0) = rwm(50_000_000);
        let c = if v6 { Conn::new(1).v6() } else { Conn::new(1) };
        let t = c.handshake(&mut r, t0, MS, MS);
        let fin_a = |seq: u32| c.seg(true, FIN | ACK, seq, b1(&c), 60_000, 0);
        let fin_b = |seq: u32| c.seg(false, FIN | ACK, seq, c.isn_a + 2, 60_000, 0);
        // Bad checksum, then out of window, from both sides: nothing
        // changes, and the segments' windows are still capped.
        raw(&mut r, t, Side::Forward, corrupt(fin_a(c.isn_a + 1)));
        process(
            &mut r,
            t,
            Side::Forward,
            fin_a(c.isn_a.wrapping_add(1 << 31)),
        );
        raw(&mut r, t, Side::Reverse, corrupt(fin_b(b1(&c))));
        process(
            &mut r,
            t,
            Side::Reverse,
            fin_b(b1(&c).wrapping_add(9_000_000)),
        );
        let s = r.stats();
        assert_eq!(
            (s.flows, s.closed, s.rst_fin_rejected),
            (1, 0, 4),
            "v6 {v6}"
        );
        assert!(modulated(&mut r, &c, t));
        // Valid FINs from both: out of modulation.
        process(&mut r, t, Side::Forward, fin_a(c.isn_a + 1));
        assert_eq!(r.stats().flows, 1, "half-closed");
        process(&mut r, t, Side::Reverse, fin_b(b1(&c)));
        let s = r.stats();
        assert_eq!((s.flows, s.closed, s.closed_kept), (0, 1, 1));
        // Data again: modulated again, and the FINs are forgotten (one
        // more FIN does not close it).
        let data = c.seg(false, ACK, b1(&c) + 1, c.isn_a + 2, 60_000, 500);
        process(&mut r, t, Side::Reverse, data);
        assert_eq!((r.stats().flows, r.stats().readmitted), (1, 1));
        process(&mut r, t, Side::Forward, fin_a(c.isn_a + 2));
        assert_eq!(r.stats().flows, 1);
        assert!(modulated(&mut r, &c, t));
    }
}

#[test]
fn a_handshake_rst_counts_only_at_the_handshakes_numbers() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let syn = c.seg(true, SYN, c.isn_a, 0, 65_535, 0);
    process(&mut r, t0, Side::Forward, syn);
    // A RST from the responder must acknowledge the SYN.
    let wrong = c.seg(false, RST | ACK, 0, c.isn_a + 2, 0, 0);
    process(&mut r, t0, Side::Reverse, wrong);
    assert_eq!((r.stats().half_open, r.stats().rst_fin_rejected), (1, 1));
    let right = c.seg(false, RST | ACK, 0, c.isn_a + 1, 0, 0);
    process(&mut r, t0, Side::Reverse, right);
    assert_eq!((r.stats().half_open, r.stats().closed), (0, 0));
}

#[test]
fn the_window_follows_a_connection_far_past_its_handshake() {
    // b sends at 40 Mbit/s for 10 s (50 MB): RWM sees a segment every
    // 10 ms, as if the bytes between went by on the fast path.
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let mut t = c.handshake(&mut r, t0, MS, MS);
    let mut seq = b1(&c);
    for _ in 0..1000 {
        t += Duration::from_millis(10);
        seq = seq.wrapping_add(50_000);
        let p = c.seg(false, ACK, seq, c.isn_a + 1, 60_000, 1000);
        process(&mut r, t, Side::Reverse, p);
        seq = seq.wrapping_add(1000);
    }
    // A RST at the handshake's number (50 MB back) does not count; one at
    // the current number does.
    process(&mut r, t, Side::Reverse, rst_from_b(&c, b1(&c)));
    assert_eq!((r.stats().flows, r.stats().rst_fin_rejected), (1, 1));
    process(&mut r, t, Side::Reverse, rst_from_b(&c, seq));
    assert_eq!((r.stats().flows, r.stats().closed), (0, 1));
}

/// `p` (IPv4) marked as the leading fragment of a larger datagram (MF
/// set, offset 0), as a KA router's signal cuts it.
fn leading_fragment(mut p: Vec<u8>) -> Vec<u8> {
    p[6] = 0x20;
    p[7] = 0;
    Ipv4Packet::new_checked(&mut p[..]).unwrap().fill_checksum();
    p
}

#[test]
fn a_leading_fragment_is_judged_by_its_sequence_number() {
    let (mut r, t0) = rwm(50_000_000);
    let c = Conn::new(1);
    let t = c.handshake(&mut r, t0, MS, MS);
    // Its checksum cannot be verified (the rest of the segment is in
    // other pieces): out of window it changes nothing...
    let far = leading_fragment(corrupt(rst_from_b(&c, b1(&c).wrapping_add(1 << 30))));
    raw(&mut r, t, Side::Reverse, far);
    assert_eq!((r.stats().flows, r.stats().rst_fin_rejected), (1, 1));
    // ... in window, a cut FIN carrying the last data counts.
    let fin_a = c.seg(true, FIN | ACK, c.isn_a + 1, b1(&c), 50, 1000);
    raw(&mut r, t, Side::Forward, leading_fragment(corrupt(fin_a)));
    let fin_b = c.seg(false, FIN | ACK, b1(&c), c.isn_a + 1002, 50, 0);
    process(&mut r, t, Side::Reverse, fin_b);
    assert_eq!((r.stats().flows, r.stats().closed), (0, 1));
}

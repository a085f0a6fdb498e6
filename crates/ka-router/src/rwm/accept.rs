//! Which RST and FIN segments change RWM's state: only those the receiver
//! would accept (RFC 5961), so that a forged or corrupted one cannot take a
//! connection out of modulation while the connection goes on.
//!
//! ## The rule
//!
//! A RST or FIN of a tracked connection counts only if
//!
//! 1. **its TCP checksum verifies** (IPv4 or IPv6 pseudo-header, RFC 9293
//!    §3.1, RFC 8200 §8.1): the receiver drops a segment with a bad
//!    checksum, so RWM must too. A *leading fragment* cannot be verified
//!    here (the rest of the segment is in other packets) and is judged by
//!    its sequence number alone: fragmenting is how a KA router signals
//!    (DESIGN §2.1), so the segment carrying a connection's last data and
//!    its FIN often arrives cut, and refusing every such FIN would keep
//!    closed connections counted until they idle out. An IPv6 packet
//!    whose routing header changes the destination the checksum covers
//!    fails the check (it errs towards keeping modulation).
//! 2. **its sequence number is one the receiver may accept.**
//!    * *Handshake* (only SYN, or SYN and SYN-ACK seen): the sequence
//!      spaces are known exactly. A RST from the responder before its
//!      SYN-ACK counts only if it acknowledges the SYN (ACK set,
//!      `ack = ISN + 1`: RFC 9293 §3.10.7.3, SYN-SENT); any other RST counts if its
//!      sequence number is within 65 535 (the largest unscaled window,
//!      the only kind a handshake offers) of its sender's ISN + 1.
//!    * *Established*: RFC 5961 §3.2 resets only on `SEG.SEQ = RCV.NXT`
//!      (any other in-window RST draws a challenge ACK) and §5 takes FIN
//!      in the window. RWM does not know RCV.NXT: the fast path writes
//!      nothing per segment (module docs, "Per-packet cost"). It keeps a
//!      **mark** per sequence space instead, taken from every segment
//!      that takes the slow path — the sender's `seq + payload (+1 for a
//!      FIN)`, and the other space's `ack` — and a segment takes the slow
//!      path at least once per *granule* (a quarter of the active window)
//!      while its connection sends. From that mark `M` of the RST's or
//!      FIN's sender e (receiver r, data crossing side s) it accepts
//!
//!      ```text
//!      SEG.SEQ ∈ [M − W,  M + 2·W + G)      (mod 2³²)
//!      W = the most r can have offered: max(RWM's cap for r's window at
//!          n_j = 1, 2¹⁶ − 1, one scaled unit); 65 535 << wscale_r if the
//!          class has no share (RWM never lowers its windows)
//!      G = C_s · (1 + max(δ, 0)) · granule   (bytes at the link's rate)
//!      ```
//!
//!      Why this contains every RST and FIN the receiver takes: e's
//!      flight is at most W (r's window, which RWM capped), so at the
//!      mark's segment RCV.NXT and e's SND.NXT were within W of `M` (a
//!      sender's `seq` may be a retransmission, up to W behind SND.NXT;
//!      an `ack` is RCV.NXT itself), and never below `M − W`. Every later
//!      segment of e went by on the fast path within the same granule,
//!      else it would have moved the mark; in that time e can have sent
//!      at most its flight (W) plus what r acknowledged, which the link
//!      bounds by G. So RCV.NXT and e's SND.NXT stay below `M + 2W + G`:
//!      a RST at RCV.NXT and a FIN at e's own sequence number fall inside
//!      (a FIN forged deeper in r's window may not: that errs towards
//!      keeping modulation). The range is `3W + G` wide, about 2 MB at
//!      50 Mbit/s and 20 ms: a blind attacker hits it with probability
//!      ~5·10⁻⁴ per forged segment, where the receiver's exact RST check
//!      gives 2⁻³² — and if one does, the connection is re-admitted at its
//!      next data segment (below).
//!      The mark itself moves only to values inside that window, so a
//!      forged segment with a far-off number cannot drag it. G assumes
//!      that r receives through this router at no more than the
//!      configured capacity (`--rwm-capacity` at most the real rate); if
//!      that is set too low, a genuine RST after a long burst may be
//!      refused, and the connection then only idles out — the same error
//!      direction as every other case here.
//!
//! A rejected RST or FIN changes nothing and is counted in
//! [`RwmStats::rst_fin_rejected`](super::RwmStats::rst_fin_rejected): the
//! RST is left alone, the FIN's window is capped like any segment's (it
//! does not count as a FIN, and does not move the marks).
//!
//! Cost: only RST and FIN segments (already off the fast path) are
//! checksummed; the marks move on segments that take the slow path
//! anyway, so a segment of a busy flow still reads one bucket and writes
//! nothing.
//!
//! ## Re-admission
//!
//! A connection that leaves modulation on an accepted RST or second FIN
//! is not forgotten: it moves, with its handshake's RTT, MSS and scales,
//! to the half-open list as *closed* (bounded by the same cap, evicted
//! first by a SYN flood, forgotten after the handshake timeout). A
//! segment of it that carries data — a connection the receiver did not in
//! fact reset — makes it an active, modulated flow again (counted in
//! [`RwmStats::readmitted`](super::RwmStats::readmitted)); a new SYN on the
//! same four-tuple starts a new handshake; anything else is left alone.

use ka_codec::wire::Segment;
use ka_codec::wire::checksum::{pseudo_v4, pseudo_v6};
use ka_codec::wire::ipv4::PROTO_TCP;
use ka_codec::wire::tcp::{ACK, FIN, RST, SYN};

use super::buckets::{Hot, Stage};
use super::config::Side;
use super::segment::TcpSeg;
use super::table::Cold;
use super::{DEFAULT_MSS_V4, Rwm, window};

/// The largest unscaled window.
const MAX_UNSCALED: u64 = 65_535;

/// Whether the TCP checksum of `packet` verifies (see the module docs).
/// `true` for a leading fragment, which cannot be verified here.
pub(super) fn checksum_ok(packet: &Segment<'_>) -> bool {
    if packet.is_leading_fragment() {
        return true;
    }
    if packet.is_fragment() {
        return false;
    }
    let Some(tcp) = packet.tcp() else {
        return false;
    };
    let Ok(len) = u32::try_from(packet.l4_bytes().len()) else {
        return false;
    };
    let pseudo = match (packet.ipv4_addrs(), packet.ipv6_addrs()) {
        (Some((s, d)), _) => pseudo_v4(s, d, PROTO_TCP, len),
        (None, Some((s, d))) => pseudo_v6(s, d, PROTO_TCP, len),
        (None, None) => return false,
    };
    tcp.verify_checksum(pseudo)
}

/// The TCP payload length of `packet` (0 if it cannot be told).
pub(super) fn payload_len(packet: &Segment<'_>) -> u32 {
    packet
        .tcp()
        .map_or(0, |t| u32::try_from(t.payload().len()).unwrap_or(0))
}

/// `x` within `[mark − below, mark + above)` modulo 2³² (everything if the
/// range covers the whole space).
fn within(x: u32, mark: u32, below: u64, above: u64) -> bool {
    let span = below.saturating_add(above);
    if span >= 1 << 32 {
        return true;
    }
    let off = x.wrapping_sub(mark).wrapping_add(below as u32);
    u64::from(off) < span
}

impl Rwm {
    /// `[below, above]` around the mark of `sender`'s sequence space, whose
    /// data crosses the router on `data` (see the module docs).
    fn span(&self, hot: &Hot, sender: usize, data: Side) -> (u64, u64) {
        let receiver = 1 - sender.min(1);
        let ws = hot.wscale(receiver);
        let (rate, _) = self.table.class_rate(hot.class, data.index());
        let wnd = if rate > 0.0 {
            let mss = hot.mss.get(receiver).copied().unwrap_or(DEFAULT_MSS_V4);
            let floor = u64::from(self.config.min_window_segments) * u64::from(mss);
            window::flow_cap(rate, hot.rtt_ns, floor)
                .max(MAX_UNSCALED)
                .max(1 << ws)
        } else {
            MAX_UNSCALED << ws
        };
        let c = self
            .config
            .capacity_bps
            .get(data.index())
            .copied()
            .unwrap_or(0) as f64;
        let reach =
            c / 8.0 * (1.0 + self.config.delta.max(0.0)) * self.table.granule_ns() as f64 / 1e9;
        // A float beyond u64 saturates; `within` then accepts everything.
        let reach = reach.ceil() as u64;
        (wnd, wnd.saturating_mul(2).saturating_add(reach))
    }

    /// Whether `x` is acceptable in `sender`'s sequence space of the
    /// established connection `hot`/`cold`.
    fn in_window(&self, hot: &Hot, cold: &Cold, sender: usize, data: Side, x: u32) -> bool {
        let (below, above) = self.span(hot, sender, data);
        let mark = cold.seq.get(sender).copied().unwrap_or(0);
        within(x, mark, below, above)
    }

    /// Whether a RST or FIN `seg` (travelling on `side`) of the connection
    /// at `pos` is one its receiver would accept: checksum and sequence
    /// number (see the module docs).
    pub(super) fn acceptable(
        &self,
        packet: &Segment<'_>,
        seg: &TcpSeg,
        side: Side,
        pos: u32,
    ) -> bool {
        let Some((hot, cold)) = self.table.entry(pos) else {
            return false;
        };
        if !checksum_ok(packet) {
            return false;
        }
        let e = seg.from.min(1);
        let isn_next = |who: usize| cold.seq.get(who).map_or(0, |s| s.wrapping_add(1));
        match hot.stage() {
            Stage::Established => self.in_window(&hot, &cold, e, side, seg.seq),
            Stage::SynSent if e != usize::from(cold.initiator) => {
                seg.flags & ACK != 0 && seg.ack == isn_next(usize::from(cold.initiator))
            }
            Stage::SynSent | Stage::SynAckSeen => within(seg.seq, isn_next(e), 0, MAX_UNSCALED),
            Stage::Closed => false,
        }
    }

    /// Moves the marks of the established connection at `pos` with a
    /// segment RWM let through on the slow path (not a RST; a FIN only if
    /// accepted): the sender's next sequence number and, with ACK, the
    /// other side's. A mark moves only within its window.
    pub(super) fn update_marks(
        &mut self,
        packet: &Segment<'_>,
        seg: &TcpSeg,
        side: Side,
        pos: u32,
    ) {
        let Some((hot, mut cold)) = self.table.entry(pos) else {
            return;
        };
        if hot.stage() != Stage::Established {
            return;
        }
        let e = seg.from.min(1);
        let len = payload_len(packet).wrapping_add(u32::from(seg.flags & (FIN | SYN) != 0));
        let next = seg.seq.wrapping_add(len);
        let mut moved = false;
        if self.in_window(&hot, &cold, e, side, next)
            && let Some(m) = cold.seq.get_mut(e)
        {
            *m = next;
            moved = true;
        }
        if seg.flags & ACK != 0
            && self.in_window(&hot, &cold, 1 - e, side.other(), seg.ack)
            && let Some(m) = cold.seq.get_mut(1 - e)
        {
            *m = seg.ack;
            moved = true;
        }
        if moved {
            self.table.set_entry(pos, hot, cold);
        }
    }

    /// A segment of a closed connection (see the module docs): data
    /// re-admits it, a SYN starts a new handshake, the rest is untracked.
    /// `Some(true)` when it is an established flow again (the segment goes
    /// on to be capped), `Some(false)` for a new handshake, `None` to
    /// leave the packet alone.
    pub(super) fn on_closed(
        &mut self,
        packet: &Segment<'_>,
        seg: &TcpSeg,
        pos: u32,
        t: u64,
    ) -> Option<bool> {
        let flags = seg.flags;
        if flags & (SYN | ACK | RST) == SYN {
            self.table.reopen_half_open(pos, t);
            let (mut hot, mut cold) = self.table.entry(pos)?;
            cold.initiator = u8::from(seg.from != 0);
            hot.clear_fins();
            Self::fill_syn(&mut hot, &mut cold, packet, seg, t);
            hot.class = self.class_of(seg.dst_port);
            self.table.set_entry(pos, hot, cold);
            return Some(false);
        }
        if flags & (SYN | RST) != 0 || payload_len(packet) == 0 {
            return None;
        }
        let (mut hot, mut cold) = self.table.entry(pos)?;
        hot.clear_fins();
        // The marks afresh from this segment: nothing went by since the
        // connection closed (it would have re-admitted it).
        let e = seg.from.min(1);
        if let Some(m) = cold.seq.get_mut(e) {
            *m = seg.seq.wrapping_add(payload_len(packet));
        }
        if flags & ACK != 0
            && let Some(m) = cold.seq.get_mut(1 - e)
        {
            *m = seg.ack;
        }
        self.table.set_entry(pos, hot, cold);
        if !self.table.promote(pos, t) {
            return None;
        }
        self.stats.readmitted += 1;
        Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn within_wraps_and_saturates() {
        assert!(within(100, 100, 0, 1));
        assert!(!within(101, 100, 0, 1));
        assert!(within(90, 100, 10, 1));
        assert!(!within(89, 100, 10, 1));
        assert!(within(5, u32::MAX - 5, 0, 20), "across the wrap");
        assert!(!within(15, u32::MAX - 5, 0, 20));
        assert!(within(12345, 0, 1 << 31, 1 << 31), "the whole space");
    }
}

//! Per-flow analysis: what each TCP connection in a capture signalled,
//! echoed and did, binned in time.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::net::IpAddr;

use ka_codec::{Scale, units};

use super::packet::PacketInfo;

/// Most TCP connections tracked; packets of further ones are counted in
/// [`Totals::flows_over_cap`] only.
pub const MAX_FLOWS: usize = 100_000;
/// Most (flow, time bin) cells kept for `series.csv` (≈ 200 B each); past
/// it further bins are dropped and counted ([`Totals::bins_over_cap`]) — use
/// a larger `--bin` for long captures.
pub const MAX_BINS: usize = 1_000_000;
/// Most fragment identifications remembered to attribute trailing
/// fragments to their flow; the map is emptied when full.
pub const MAX_FRAGMENT_IDS: usize = 65_536;

/// A TCP endpoint.
pub type Endpoint = (IpAddr, u16);

/// One endpoint of a flow: `A` sent the first packet seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The endpoint whose packet was seen first.
    A,
    /// The other one.
    B,
}

impl Side {
    /// `B` if `b`, else `A`.
    pub fn of(b: bool) -> Side {
        if b { Side::B } else { Side::A }
    }

    /// The other endpoint.
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// A value per [`Side`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Two<T>(pub [T; 2]);

impl<T> std::ops::Index<Side> for Two<T> {
    type Output = T;
    fn index(&self, s: Side) -> &T {
        let [a, b] = &self.0;
        match s {
            Side::A => a,
            Side::B => b,
        }
    }
}

impl<T> std::ops::IndexMut<Side> for Two<T> {
    fn index_mut(&mut self, s: Side) -> &mut T {
        let [a, b] = &mut self.0;
        match s {
            Side::A => a,
            Side::B => b,
        }
    }
}

impl Two<bool> {
    /// Both sides.
    pub fn both(&self) -> bool {
        self.0 == [true, true]
    }
}

/// Rate in bit/s that leading-fragment payload `len` signals (paper scale),
/// `None` if `len` is not a code.
pub fn rate_of_len(len: usize) -> Option<f64> {
    Scale::PAPER
        .code_from_len(len)
        .map(|c| Scale::PAPER.decode(c) * 8000.0)
}

/// Counters of one direction of a flow (packets sent by one endpoint).
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// IP packets (fragments count one each).
    pub pkts: u64,
    /// IP bytes.
    pub wire_bytes: u64,
    /// TCP segments with payload (a fragmented segment counts once).
    pub data_pkts: u64,
    /// Of those, with DF set and not RTT indicators.
    pub df_data_pkts: u64,
    /// First sequence number seen (the SYN's when seen).
    pub seq_first: Option<u32>,
    /// Highest sequence end seen.
    pub seq_end: Option<u32>,
    /// Segments starting below the highest end already seen.
    pub retransmits: u64,
    /// KA leading fragments.
    pub leading: u64,
    /// Lowest and highest rate they signalled, bit/s.
    pub rate_range: Option<(f64, f64)>,
    /// RTT indicators.
    pub indicators: u64,
    /// Segments carrying KA-Rate.
    pub echoes: u64,
    /// Of those, with a count different from the previous echo's.
    pub fresh_echoes: u64,
    /// Native-RCP IPv4 options.
    pub rcp_options: u64,
    /// XCP IPv4 options.
    pub xcp_options: u64,
    /// RCP-Echo TCP options.
    pub rcp_echoes: u64,
    /// XCP feedback echoes.
    pub xcp_echoes: u64,
    /// FIN time.
    pub fin: Option<f64>,
    /// Last KA-Rate count seen.
    last_count: Option<u8>,
}

/// One time bin of one flow; index 0/1 = packets sent by endpoint a/b.
#[derive(Debug, Clone, Default)]
pub struct Bin {
    /// IP bytes sent.
    pub wire: Two<u64>,
    /// Sequence-space advance (new bytes).
    pub advance: Two<u64>,
    /// Lowest signalled rate on leading fragments sent, bit/s.
    pub signal_min: Two<Option<f64>>,
    /// Last KA-Rate echo carried, bit/s.
    pub echo: Two<Option<f64>>,
    /// Fresh KA-Rate echoes carried.
    pub fresh: Two<u32>,
    /// Time of the last fresh echo in the bin.
    pub fresh_last: Two<Option<f64>>,
    /// Time of the last retransmission in the bin.
    pub retx_last: Two<Option<f64>>,
    /// Last RTT indicator, ms.
    pub indicator_ms: Two<Option<f64>>,
    /// Data segments and those with DF.
    pub data: Two<u32>,
    /// Data segments with DF (not indicators).
    pub df_data: Two<u32>,
    /// Lowest native-RCP rate, bit/s.
    pub rcp: Two<Option<f64>>,
    /// Last XCP feedback, bytes.
    pub xcp_feedback: Two<Option<i64>>,
}

/// A TCP connection.
#[derive(Debug, Clone)]
pub struct Flow {
    /// 1-based, in order of first packet.
    pub id: usize,
    /// The endpoint whose packet was seen first.
    pub a: Endpoint,
    /// The other one.
    pub b: Endpoint,
    /// First and last packet time, s since the capture's first packet.
    pub first: f64,
    /// See `first`.
    pub last: f64,
    /// Time of the SYN (no ACK) from each side.
    pub syn: Two<Option<f64>>,
    /// Time of the SYN-ACK from each side.
    pub synack: Two<Option<f64>>,
    /// The handshake RTT seen at the capture point (SYN → ACK of the
    /// SYN-ACK, the full round trip wherever the capture sits).
    pub handshake_rtt: Option<f64>,
    /// KA-Permitted on each side's SYN / SYN-ACK.
    pub ka_permitted: Two<bool>,
    /// RCP-Permitted.
    pub rcp_permitted: Two<bool>,
    /// XCP-Permitted.
    pub xcp_permitted: Two<bool>,
    /// Per sending side.
    pub dir: Two<DirStats>,
    /// EWMA of RTT-indicator values (ms), gain 0.1.
    pub indicator_rtt_ms: Option<f64>,
    /// Time bins (index = floor(t / bin_s)).
    pub bins: BTreeMap<u64, Bin>,
    /// Width of a bin, s.
    pub bin_s: f64,
}

impl Flow {
    /// The data sender: the side that sent the SYN (no ACK), else the one
    /// that sent more sequence space.
    pub fn sender(&self) -> Side {
        match self.syn.0 {
            [Some(_), None] => Side::A,
            [None, Some(_)] => Side::B,
            _ => {
                let adv = |d: &DirStats| match (d.seq_first, d.seq_end) {
                    (Some(a), Some(b)) => b.wrapping_sub(a),
                    _ => 0,
                };
                Side::of(adv(&self.dir[Side::B]) > adv(&self.dir[Side::A]))
            }
        }
    }

    /// Whether KA was negotiated (both SYNs), or, without a handshake in the
    /// capture, whether KA-Rate echoes were seen.
    pub fn is_ka(&self) -> bool {
        self.ka_permitted.both()
            || (self.syn.0 == [None, None] && self.dir.0.iter().any(|d| d.echoes > 0))
    }

    /// The data sender's endpoint, then the receiver's.
    pub fn ends(&self) -> (Endpoint, Endpoint) {
        if self.sender() == Side::A {
            (self.a, self.b)
        } else {
            (self.b, self.a)
        }
    }

    /// `ka`, `rcp`, `xcp` or `tcp`.
    pub fn kind(&self) -> &'static str {
        let s = self.sender();
        if self.is_ka() {
            "ka"
        } else if self.dir[s].xcp_options > 0 || self.xcp_permitted.both() {
            "xcp"
        } else if self.dir[s].rcp_options > 0 || self.rcp_permitted.both() {
            "rcp"
        } else {
            "tcp"
        }
    }

    /// The RTT the mode inference uses: indicators, else the handshake,
    /// else 100 ms; seconds.
    pub fn rtt_estimate(&self) -> f64 {
        self.indicator_rtt_ms
            .map(|ms| ms / 1e3)
            .or(self.handshake_rtt)
            .unwrap_or(0.1)
    }

    /// The sender's inferred mode at the end of each bin with traffic:
    /// `true` = KA. Rule (paper §II-C as DESIGN §6.3 implements
    /// it, seen from the wire): KA while a fresh KA-Rate echo (changed
    /// count) has reached the capture point within the last 1.5 RTT and the
    /// sender has not retransmitted within the last RTT. Only for KA flows.
    pub fn inferred_mode(&self) -> Vec<(u64, bool)> {
        if !self.is_ka() {
            return Vec::new();
        }
        let s = self.sender();
        let r = s.other();
        let rtt = self.rtt_estimate().max(0.01);
        let bin_s = self.bin_s;
        let (mut fresh, mut retx) = (None::<f64>, None::<f64>);
        let mut out = Vec::with_capacity(self.bins.len());
        // Bins with traffic only: a corrupt timestamp can put two packets
        // years apart.
        for (&k, b) in &self.bins {
            fresh = b.fresh_last[r].or(fresh);
            retx = b.retx_last[s].or(retx);
            let end = (k + 1) as f64 * bin_s;
            let ka =
                fresh.is_some_and(|t| end - t <= 1.5 * rtt) && retx.is_none_or(|t| end - t > rtt);
            out.push((k, ka));
        }
        out
    }
}

/// Counts over the whole capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Records read.
    pub records: u64,
    /// Records that were IP packets.
    pub ip: u64,
    /// IP packets of TCP connections.
    pub tcp: u64,
    /// Packets of connections beyond [`MAX_FLOWS`].
    pub flows_over_cap: u64,
    /// Bins beyond [`MAX_BINS`].
    pub bins_over_cap: u64,
    /// Trailing fragments whose leading fragment was not seen.
    pub orphan_fragments: u64,
    /// Records of a link type `ka-trace` cannot read.
    pub unsupported_linktype: u64,
    /// Records stamped earlier than a record before them (a clock stepped
    /// back during the capture, or captures concatenated unsorted). A
    /// flow's first and last times are its earliest and latest, and its end
    /// is never before its start.
    pub time_backwards: u64,
}

/// The analysis state.
pub struct Analysis<W: Write> {
    bin_s: f64,
    t0: Option<std::time::Duration>,
    index: HashMap<(Endpoint, Endpoint), usize>,
    /// The flows, in order of first packet.
    pub flows: Vec<Flow>,
    /// (flow, side, TCP sequence number, TCP header length) of a leading
    /// fragment, by (source, destination, identification).
    frag_owner: HashMap<FragKey, (usize, Side, u32, usize)>,
    bins: usize,
    /// The latest record time so far, s since the first record.
    t_latest: f64,
    /// Counts over the capture.
    pub totals: Totals,
    events: W,
}

/// A fragmented datagram: (source, destination, identification).
type FragKey = (IpAddr, IpAddr, u32);

/// Header of `events.csv`.
pub const EVENTS_HEADER: &str = "time_s,flow,src,kind,ident,len,count,value";

impl<W: Write> Analysis<W> {
    /// A new analysis with bins of `bin_s` seconds, writing per-packet
    /// events to `events`.
    pub fn new(bin_s: f64, mut events: W) -> io::Result<Self> {
        writeln!(events, "{EVENTS_HEADER}")?;
        Ok(Self {
            bin_s,
            t0: None,
            index: HashMap::new(),
            flows: Vec::new(),
            frag_owner: HashMap::new(),
            bins: 0,
            t_latest: 0.0,
            totals: Totals::default(),
            events,
        })
    }

    /// The capture's first timestamp (since the epoch).
    pub fn t0(&self) -> Option<std::time::Duration> {
        self.t0
    }

    /// The bin width, s.
    pub fn bin_s(&self) -> f64 {
        self.bin_s
    }

    /// The events writer back (flushed).
    pub fn finish(mut self) -> io::Result<(Vec<Flow>, Totals, W)> {
        self.events.flush()?;
        Ok((self.flows, self.totals, self.events))
    }

    /// One record: a packet captured at `ts` (since the epoch), decoded
    /// as `p` (`None`: not IP). Times before the first record count as 0;
    /// records stamped before an earlier one are counted
    /// ([`Totals::time_backwards`]) and analysed at their own time.
    pub fn packet(&mut self, ts: std::time::Duration, p: Option<&PacketInfo>) -> io::Result<()> {
        self.totals.records += 1;
        let t0 = *self.t0.get_or_insert(ts);
        // Relative to the first record in integer nanoseconds first, so the
        // f64 keeps nanosecond precision.
        let t = ts.saturating_sub(t0).as_secs_f64();
        if ts < t0 || t < self.t_latest {
            self.totals.time_backwards += 1;
        }
        self.t_latest = self.t_latest.max(t);
        let Some(p) = p else {
            return Ok(());
        };
        self.totals.ip += 1;
        // Which flow and side: from the TCP header, else (a trailing
        // fragment) from the fragment's leading piece.
        // The sequence end a last trailing fragment completes.
        let mut trailing_end = None;
        let (fi, side) = match (&p.tcp, p.frag_offset) {
            (Some(tcp), _) => {
                let me = (p.src, tcp.sport);
                let peer = (p.dst, tcp.dport);
                let key = if me <= peer { (me, peer) } else { (peer, me) };
                let fi = match self.index.get(&key) {
                    Some(&i) => i,
                    None => {
                        if self.flows.len() >= MAX_FLOWS {
                            self.totals.flows_over_cap += 1;
                            return Ok(());
                        }
                        let i = self.flows.len();
                        self.flows.push(Flow {
                            id: i + 1,
                            a: me,
                            b: peer,
                            first: t,
                            last: t,
                            syn: Two::default(),
                            synack: Two::default(),
                            handshake_rtt: None,
                            ka_permitted: Two::default(),
                            rcp_permitted: Two::default(),
                            xcp_permitted: Two::default(),
                            dir: Default::default(),
                            indicator_rtt_ms: None,
                            bins: BTreeMap::new(),
                            bin_s: self.bin_s,
                        });
                        self.index.insert(key, i);
                        i
                    }
                };
                let side = Side::of(self.flows.get(fi).is_some_and(|f| f.a != me));
                if p.frag_offset == Some(0) {
                    if self.frag_owner.len() >= MAX_FRAGMENT_IDS {
                        self.frag_owner.clear();
                    }
                    self.frag_owner
                        .insert((p.src, p.dst, p.ident), (fi, side, tcp.seq, tcp.header_len));
                }
                (fi, side)
            }
            (None, Some(off)) if off > 0 => match self.frag_owner.get(&(p.src, p.dst, p.ident)) {
                Some(&(fi, side, seq, hl)) => {
                    if !p.more_frags && hl > 0 {
                        let seg = (off + p.ip_payload_len).saturating_sub(hl);
                        trailing_end = Some(seq.wrapping_add(seg as u32));
                    }
                    (fi, side)
                }
                None => {
                    self.totals.orphan_fragments += 1;
                    return Ok(());
                }
            },
            _ => return Ok(()),
        };
        self.totals.tcp += 1;
        let k = (t / self.bin_s).floor().max(0.0) as u64;
        let have_bin = self.ensure_bin(fi, k);
        let Some(f) = self.flows.get_mut(fi) else {
            return Ok(());
        };
        let mut scratch = Bin::default();
        let Flow {
            first,
            last,
            syn: f_syn,
            synack,
            handshake_rtt,
            ka_permitted,
            rcp_permitted,
            xcp_permitted,
            dir,
            indicator_rtt_ms,
            bins,
            ..
        } = f;
        let b = if have_bin {
            bins.entry(k).or_default()
        } else {
            &mut scratch
        };
        *first = first.min(t);
        *last = last.max(t);
        let mut ev = Vec::new();
        let mut event = |kind: &str, ident: &str, len: &str, count: &str, value: &str| {
            // Writing to a Vec cannot fail.
            let _ = writeln!(
                ev,
                "{},{},{},{kind},{ident},{len},{count},{value}",
                fmt_secs(t),
                fi + 1,
                p.src
            );
        };
        let d = &mut dir[side];
        d.pkts += 1;
        d.wire_bytes += p.total_len as u64;
        b.wire[side] += p.total_len as u64;
        if let Some(end) = trailing_end {
            extend(d, b, side, end);
        }

        if let Some(l) = p.leading_len {
            d.leading += 1;
            let rate = rate_of_len(l);
            if let Some(r) = rate {
                d.rate_range = Some(
                    d.rate_range
                        .map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))),
                );
                b.signal_min[side] = Some(b.signal_min[side].map_or(r, |m| m.min(r)));
            }
            event(
                "ka_signal",
                &p.ident.to_string(),
                &l.to_string(),
                "",
                &rate.map(fmt_val).unwrap_or_default(),
            );
        }
        if let Some(kk) = p.indicator {
            d.indicators += 1;
            let ms = ka_codec::rtt::rtt_for_k(kk).as_secs_f64() * 1e3;
            *indicator_rtt_ms = Some(indicator_rtt_ms.map_or(ms, |e| e + 0.1 * (ms - e)));
            b.indicator_ms[side] = Some(ms);
            event(
                "rtt_indicator",
                "",
                &p.total_len.to_string(),
                &kk.to_string(),
                &fmt_val(ms),
            );
        }
        if let Some(o) = p.rcp {
            d.rcp_options += 1;
            let bps = f64::from(o.rate_bytes_per_sec) * 8.0;
            b.rcp[side] = Some(b.rcp[side].map_or(bps, |m| m.min(bps)));
            event("rcp_option", "", "", &o.rtt_ms.to_string(), &fmt_val(bps));
        }
        if let Some(o) = p.xcp {
            d.xcp_options += 1;
            b.xcp_feedback[side] = Some(i64::from(o.feedback));
            event(
                "xcp_option",
                "",
                &o.cwnd.to_string(),
                &o.rtt_us.to_string(),
                &o.feedback.to_string(),
            );
        }
        if let Some(tcp) = &p.tcp {
            let syn = tcp.flags & 0x02 != 0;
            let ack = tcp.flags & 0x10 != 0;
            if syn && !ack {
                f_syn[side].get_or_insert(t);
                d.seq_first = Some(tcp.seq);
            }
            if syn && ack {
                synack[side].get_or_insert(t);
            }
            if syn {
                ka_permitted[side] |= tcp.ka_permitted;
                rcp_permitted[side] |= tcp.rcp_permitted;
                xcp_permitted[side] |= tcp.xcp_permitted;
            }
            // Handshake RTT: the first plain ACK from the SYN's sender
            // after the peer's SYN-ACK.
            if !syn
                && ack
                && handshake_rtt.is_none()
                && synack[side.other()].is_some()
                && let Some(s0) = f_syn[side]
            {
                *handshake_rtt = Some(t - s0);
            }
            if tcp.flags & 0x01 != 0 {
                d.fin.get_or_insert(t);
            }
            // Sequence space this segment covers (a leading fragment: the
            // part it carries, nothing when it ends inside the header; its
            // last trailing piece completes it).
            let seg_len = tcp
                .payload_len
                .or_else(|| p.leading_len.map(|l| l.saturating_sub(tcp.header_len)))
                .unwrap_or(0);
            let is_data = seg_len > 0 || p.leading_len.is_some();
            if is_data && (tcp.full_header || tcp.header_len > 0) {
                d.data_pkts += 1;
                let df = p.df && p.indicator.is_none();
                d.df_data_pkts += u64::from(df);
                b.data[side] += 1;
                b.df_data[side] += u32::from(df);
                let start = tcp.seq;
                let end = start.wrapping_add(seg_len as u32);
                d.seq_first.get_or_insert(start);
                if d.seq_end
                    .is_some_and(|e| (start.wrapping_sub(e) as i32) < 0)
                {
                    d.retransmits += 1;
                    b.retx_last[side] = Some(t);
                }
                extend(d, b, side, end);
            }
            if let Some((code, count)) = tcp.ka_rate {
                d.echoes += 1;
                let fresh = d.last_count != Some(count);
                d.last_count = Some(count);
                let len = usize::from(code) * 8;
                let rate = rate_of_len(len);
                if rate.is_some() {
                    b.echo[side] = rate;
                }
                if fresh {
                    d.fresh_echoes += 1;
                    b.fresh[side] += 1;
                    b.fresh_last[side] = Some(t);
                }
                event(
                    "ka_echo",
                    "",
                    &len.to_string(),
                    &count.to_string(),
                    &rate.map(fmt_val).unwrap_or_default(),
                );
            }
            if let Some(r) = tcp.rcp_echo {
                d.rcp_echoes += 1;
                event("rcp_echo", "", "", "", &fmt_val(f64::from(r) * 8.0));
            }
            if let Some(x) = tcp.xcp_echo {
                d.xcp_echoes += 1;
                event("xcp_echo", "", "", "", &x.to_string());
            }
        }
        self.events.write_all(&ev)
    }

    /// Makes sure bin `k` of flow `fi` exists, within [`MAX_BINS`]; `false`
    /// (and counted) when over the cap.
    fn ensure_bin(&mut self, fi: usize, k: u64) -> bool {
        let Some(f) = self.flows.get_mut(fi) else {
            return false;
        };
        if f.bins.contains_key(&k) {
            return true;
        }
        if self.bins >= MAX_BINS {
            self.totals.bins_over_cap += 1;
            return false;
        }
        self.bins += 1;
        f.bins.insert(k, Bin::default());
        true
    }
}

/// Moves the sender's highest sequence end to `end` if that is further,
/// counting the advance in the bin.
fn extend(d: &mut DirStats, b: &mut Bin, side: Side, end: u32) {
    match d.seq_end {
        None => d.seq_end = Some(end),
        Some(e) => {
            let adv = end.wrapping_sub(e) as i32;
            if adv > 0 {
                d.seq_end = Some(end);
                b.advance[side] += adv as u64;
            }
        }
    }
}

/// Seconds as ka-sim writes them: exact nanoseconds, trailing zeros cut
/// ([`units::Seconds`]).
pub fn fmt_secs(t: f64) -> String {
    let ns = (t * 1e9).round().max(0.0) as u64;
    units::Seconds(ns).to_string()
}

/// A value as ka-sim writes it: integers bare, else at most 6 decimals
/// ([`units::Trimmed`]).
pub fn fmt_val(v: f64) -> String {
    units::Trimmed(v).to_string()
}

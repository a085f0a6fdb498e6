//! Test-only traffic generator: a constant-rate source of real IPv4/TCP
//! packets (built with `ka_codec::wire`) and a byte-counting sink. It is
//! *not* a TCP — there are no ACKs and no congestion control — and exists
//! only to test the engine, routing, router ports and outputs. It sits in
//! the run layer because its tests drive whole runs ([`super::run`]).

use ka_codec::wire::checksum::pseudo_v4;
use ka_codec::wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_TCP};
use ka_codec::wire::tcp::{ACK, TcpRepr};

use crate::engine::{Ctx, Node, SimTime, secs};
use crate::model::Host;
use crate::model::net::{HostRole, HostSpec};
use crate::model::world::{FlowId, FlowKey, NewFlow, World};
use crate::scenario::Workload;

/// Constant-rate sender or counting sink.
pub struct CbrHost {
    addr: [u8; 4],
    peer: [u8; 4],
    sender: Option<crate::model::net::SenderSpec>,
    node: crate::engine::NodeId,
    rate_bps: u64,
    packet_bytes: usize,
    next: Option<SimTime>,
    stop: SimTime,
    flow: Option<FlowId>,
    seq: u32,
    /// (time, bytes, leading-fragment?) of every packet received.
    pub rx: Vec<(SimTime, usize, bool)>,
}

impl CbrHost {
    pub fn new(spec: &HostSpec, rate_bps: u64) -> Self {
        let (peer, sender, next, stop) = match &spec.role {
            HostRole::Sender(s) => {
                let (start, stop) = match s.workload {
                    Workload::LongLived {
                        start_s,
                        stagger_s,
                        on_s,
                        ..
                    } => {
                        let st = secs(start_s + stagger_s * s.index_in_group as f64);
                        (st, on_s.map_or(SimTime::MAX, |o| st + secs(o)))
                    }
                    _ => (0, SimTime::MAX),
                };
                (s.peer, Some(s.clone()), Some(start), stop)
            }
            HostRole::Receiver { .. } => ([0; 4], None, None, 0),
        };
        Self {
            addr: spec.addr,
            peer,
            sender,
            node: spec.node,
            rate_bps,
            packet_bytes: spec.packet_bytes,
            next,
            stop,
            flow: None,
            seq: 0,
            rx: Vec::new(),
        }
    }

    fn key(&self) -> FlowKey {
        FlowKey {
            src: self.addr,
            sport: 1000,
            dst: self.peer,
            dport: 5001,
        }
    }

    fn packet(&mut self, buf: &mut Vec<u8>) {
        let payload_len = self.packet_bytes - 40;
        buf.clear();
        buf.resize(self.packet_bytes, 0);
        let ip = Ipv4Repr {
            src: self.addr,
            dst: self.peer,
            protocol: PROTO_TCP,
            ttl: 64,
            ident: self.seq as u16,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            dscp_ecn: 0,
            payload_len: payload_len + 20,
        };
        ip.emit(&mut buf[..20]).unwrap();
        let tcp = TcpRepr {
            src_port: 1000,
            dst_port: 5001,
            seq: self.seq.wrapping_mul(payload_len as u32),
            ack: 0,
            flags: ACK,
            window: 65535,
            ..TcpRepr::default()
        };
        let payload = vec![0xAB; payload_len];
        let pseudo = pseudo_v4(self.addr, self.peer, PROTO_TCP, (20 + payload_len) as u32);
        tcp.emit(&mut buf[20..], &payload, pseudo).unwrap();
        self.seq = self.seq.wrapping_add(1);
    }
}

impl Node for CbrHost {
    type Shared = World;

    fn handle_packet(&mut self, ctx: &mut Ctx<'_, World>, _iface: u16, packet: Vec<u8>) {
        let p = Ipv4Packet::new_checked(&packet[..]).unwrap();
        let leading = p.more_frags() && p.frag_offset() == 0;
        let n = p.payload().len();
        self.rx.push((ctx.now(), packet.len(), leading));
        let key = FlowKey {
            src: p.src_addr(),
            sport: 1000,
            dst: p.dst_addr(),
            dport: 5001,
        };
        if let Some(id) = ctx.shared.lookup(&key) {
            ctx.shared.received(id, n as u64, ctx.now());
        }
        ctx.recycle(packet);
    }

    fn handle_timeout(&mut self, ctx: &mut Ctx<'_, World>) {
        let now = ctx.now();
        let Some(s) = self.sender.clone() else {
            return;
        };
        if self.flow.is_none() {
            let id = ctx.shared.open(
                self.key(),
                NewFlow {
                    kind: s.kind,
                    group: s.group,
                    sender: self.node,
                    tracked: s.tracked,
                    size: None,
                    start: now,
                    path: s.path,
                },
            );
            self.flow = Some(id);
        }
        if now >= self.stop {
            if let Some(f) = self.flow.and_then(|id| ctx.shared.flow_mut(id)) {
                f.stop = Some(now);
            }
            self.next = None;
            return;
        }
        let mut b = ctx.buffer();
        self.packet(&mut b);
        ctx.send(0, b);
        let gap = (self.packet_bytes as u64 * 8 * 1_000_000_000).div_ceil(self.rate_bps);
        self.next = Some(now + gap);
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.next
    }
}

impl Host for CbrHost {
    fn finish(&mut self, _now: SimTime, _world: &mut World) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::RunResult;
    use crate::results::metrics::Metric;
    use crate::results::output;
    use crate::run::run;
    use crate::scenario::Scenario;

    fn scenario(topology: &str, groups: &str, duration: f64) -> Scenario {
        let text =
            format!("name = \"t\"\nduration_s = {duration}\n[topology]\n{topology}\n{groups}");
        Scenario::from_toml(&text).unwrap()
    }

    fn long_group(name: &str, count: usize, extra: &str) -> String {
        format!(
            "[[group]]\nname = \"{name}\"\nkind = \"tcp\"\ncount = {count}\ntrack = {count}\n{extra}\n\
             [group.workload]\ntype = \"long-lived\"\n"
        )
    }

    type RxLog = Vec<(SimTime, usize, bool)>;

    fn run_cbr(s: &Scenario, rate_bps: u64) -> (RunResult, Vec<RxLog>) {
        // `run` consumes the network, so the receivers' packet logs come
        // from a second, identical (deterministic) run driven by hand.
        let r = run(s, |spec| Ok(CbrHost::new(spec, rate_bps)), None).unwrap();
        let mut net = crate::model::net::build(
            s,
            crate::engine::Clock::new(std::time::Instant::now()),
            |spec| Ok(CbrHost::new(spec, rate_bps)),
        )
        .unwrap();
        crate::model::middlebox::install(&mut net, s).unwrap();
        net.engine.run_until(secs(s.duration_s));
        let logs = net
            .hosts
            .iter()
            .map(|&h| net.host(h).unwrap().rx.clone())
            .collect();
        (r, logs)
    }

    #[test]
    fn droptail_bottleneck_saturates_and_drops() {
        let s = scenario(
            "kind = \"dumbbell\"\nport = \"droptail\"",
            &long_group("cbr", 1, ""),
            2.0,
        );
        let (r, _) = run_cbr(&s, 200_000_000);
        assert_eq!(r.unroutable, 0);
        let util = r.series.points(Metric::Utilization, "link:bottleneck");
        assert_eq!(util.len(), 20);
        for &(t, u) in &util[2..] {
            assert!((u - 1.0).abs() < 0.01, "t={t} u={u}");
        }
        let q = r.series.points(Metric::QueuePkts, "port:bottleneck");
        assert_eq!(q.last().unwrap().1, 1000.0);
        assert!(r.hops[0].forward.drops_queue > 0);
        // Goodput counts IP payload: 1480 of every 1500 bytes.
        let thr = r.series.points(Metric::ThroughputBps, "flow:0");
        let late = thr[15].1;
        assert!(
            (late - 150e6 * 1480.0 / 1500.0).abs() < 0.01 * 150e6,
            "{late}"
        );
        let text = output::flows_csv(&r);
        assert!(text.starts_with(output::FLOWS_HEADER));
        assert_eq!(text.lines().nth(1).unwrap(), "0,tcp-newreno,,,0,,,,0");
    }

    #[test]
    fn first_packet_arrives_after_serialisations_and_delay() {
        let s = scenario(
            "kind = \"dumbbell\"\nport = \"droptail\"",
            &long_group("cbr", 1, ""),
            0.2,
        );
        let (_, logs) = run_cbr(&s, 10_000_000);
        // access 1 Gbit/s (12 µs) + port 150 Mbit/s (80 µs) + 50 ms + 12 µs.
        assert_eq!(logs[1][0].0, 12_000 + 80_000 + 50_000_000 + 12_000);
        assert_eq!(logs[1][0].1, 1500);
        // One packet per 1.2 ms at 10 Mbit/s.
        assert_eq!(logs[1][1].0 - logs[1][0].0, 1_200_000);
    }

    #[test]
    fn ka_port_stamps_the_fair_rate_into_leading_fragments() {
        let s = scenario("kind = \"dumbbell\"", &long_group("cbr", 1, ""), 8.0);
        let (r, logs) = run_cbr(&s, 50_000_000);
        let rx = &logs[1];
        let leading: Vec<_> = rx.iter().filter(|p| p.2).collect();
        assert!(
            leading.len() > rx.len() / 3,
            "{} of {}",
            leading.len(),
            rx.len()
        );
        // Input 50 < C = 150 Mbit/s: RCP climbs to its ceiling, the first
        // code rate at or above C = 18750 B/ms: L = 944 (R(944) ≈ 19 848 B/ms,
        // R(936) ≈ 18 645 < C), so the signal can dither around C.
        let last = leading.last().unwrap();
        assert_eq!(last.1, 20 + 944);
        assert!(r.hops[0].forward.fragments_made > 0);
        let rate = r.series.points(Metric::RateBps, "port:bottleneck");
        let ceiling = ka_codec::RateTable::PAPER.decode(ka_codec::Code::from_len(944).unwrap());
        assert!((rate.last().unwrap().1 - ceiling * 8000.0).abs() < 1.0);
        assert!(
            r.series
                .points(Metric::KaMode, "port:bottleneck")
                .iter()
                .all(|p| p.1 == 1.0)
        );
    }

    #[test]
    fn runs_are_byte_identical() {
        let s = scenario(
            "kind = \"dumbbell\"",
            &long_group("a", 3, "rtt_ms = [100.0, 140.0]"),
            1.0,
        );
        let (a, _) = run_cbr(&s, 70_000_000);
        let (b, _) = run_cbr(&s, 70_000_000);
        assert_eq!(output::flows_csv(&a), output::flows_csv(&b));
        assert_eq!(output::series_csv(&a), output::series_csv(&b));
        assert!(
            output::series_csv(&a)
                .starts_with("time_s,metric,entity,value\n0.1,utilization,link:bottleneck,")
        );
        assert_eq!(a.engine, b.engine);
    }

    #[test]
    fn per_flow_rtt_goes_into_the_access_links() {
        let s = scenario(
            "kind = \"dumbbell\"\nport = \"droptail\"",
            &long_group("a", 2, "rtt_ms = [100.0, 200.0]"),
            0.5,
        );
        let (r, logs) = run_cbr(&s, 10_000_000);
        assert_eq!(r.flows[0].path.base_rtt, 100_000_000);
        assert_eq!(r.flows[1].path.base_rtt, 200_000_000);
        // One-way: +50 ms on the sender's access link.
        assert_eq!(logs[3][0].0 - logs[1][0].0, 50_000_000);
    }

    #[test]
    fn ka_legacy_routes_cross_traffic_around_the_ka_hop() {
        let groups = format!(
            "{}{}",
            long_group("ka", 1, ""),
            long_group("cross", 1, "from = 1")
        );
        let s = scenario("kind = \"ka-legacy\"", &groups, 1.0);
        let (r, logs) = run_cbr(&s, 40_000_000);
        assert_eq!(r.unroutable, 0);
        // 3334 packets per sender; the KA hop splits the KA flow's packets
        // into two pieces each, so the legacy hop sees 2·3334 + 3334 pieces.
        let (ka, legacy) = (r.hops[0].forward.packets_in, r.hops[1].forward.packets_in);
        assert_eq!(ka, 3334);
        assert_eq!(r.hops[0].forward.fragments_made, 3334);
        assert_eq!(legacy, 3 * 3334);
        assert!(!logs[1].is_empty() && !logs[3].is_empty());
        // The cross flow's path skips the (zero-delay) KA hop.
        assert_eq!(r.flows[1].path.first_hop, 1);
    }

    #[test]
    fn parking_lot_paths() {
        let groups = format!(
            "{}{}",
            long_group("long", 1, ""),
            long_group("cross", 1, "from = 1\nto = 2")
        );
        let s = scenario(
            "kind = \"parking-lot\"\nbottlenecks = 3\nport = \"droptail\"",
            &groups,
            0.5,
        );
        let (r, logs) = run_cbr(&s, 20_000_000);
        let p: Vec<u64> = r.hops.iter().map(|h| h.forward.packets_in).collect();
        // Drop-tail hops: no fragments, so packets can be counted per hop.
        // Hop 2 gets what left hop 1 plus all cross packets; hop 3 only
        // long-flow packets.
        let out0 = r.hops[0].forward.packets_out;
        assert_eq!(p[0], 834);
        assert_eq!(p[1], out0 + 834);
        assert!(p[2] < out0, "{p:?}");
        assert!(!logs[1].is_empty() && logs[3].len() > logs[1].len());
        // Hop delays are rounded to whole nanoseconds.
        assert!(r.flows[0].path.base_rtt.abs_diff(100_000_000) < 10);
        assert!((r.flows[1].path.base_rtt as f64 - 100e6 / 3.0).abs() < 10.0);
    }

    #[test]
    fn write_run_writes_all_files() {
        let s = scenario("kind = \"dumbbell\"", &long_group("a", 1, ""), 0.3);
        let (r, _) = run_cbr(&s, 10_000_000);
        let dir = std::env::temp_dir().join(format!("ka-sim-out-{}", std::process::id()));
        let sum = output::write_run(&dir, &r, serde_json::json!({"x": 1})).unwrap();
        assert_eq!(sum.flows, 1);
        for f in ["flows.csv", "series.csv", "summary.json", "scenario.toml"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(json["headline"]["x"], 1);
        assert_eq!(json["seed"], 1);
        assert!(json["events"].as_u64().unwrap() > 0);
        let back =
            Scenario::from_toml(&std::fs::read_to_string(dir.join("scenario.toml")).unwrap())
                .unwrap();
        assert_eq!(back, s);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! UDP hosts: the application around `ka_endpoint::udp`'s sans-IO
//! constant-bit-rate source and sink (flow kinds `udp-lccp` and
//! `udp-cbr`).
//!
//! A UDP sender runs one source per long-lived epoch of its workload (start
//! at `start_s + i·stagger_s`, stop after `on_s` or at the end), registered
//! in the flow table as an unbounded flow from port [`UDP_SOURCE_PORT`];
//! its receiver runs a sink on [`crate::model::epochs::RECEIVER_PORT`] that credits
//! the application bytes it receives to that flow. `udp-lccp` sources obey
//! the sink's reports (decoded with the run's KA scale); `udp-cbr` sources
//! are plain CBR and their sinks send no reports.

use std::net::SocketAddrV4;

use ka_endpoint::udp::{CbrConfig, CbrSink, CbrSource, SinkConfig};

use crate::engine::{Clock, Ctx, SimTime};
use crate::model::epochs::RECEIVER_PORT;
use crate::model::net::{HostRole, HostSpec};
use crate::model::world::{FlowId, FlowKey, NewFlow, World};
use crate::scenario::FlowKind;

/// The port UDP sources send from.
pub const UDP_SOURCE_PORT: u16 = 4000;

/// The UDP side of a host.
#[derive(Debug)]
pub enum UdpApp {
    /// A sender.
    Source(Box<SourceApp>),
    /// A receiver.
    Sink(Box<SinkApp>),
}

/// A sender: the source and its schedule.
#[derive(Debug)]
pub struct SourceApp {
    clock: Clock,
    spec: crate::model::net::SenderSpec,
    cfg: CbrConfig,
    src: Option<CbrSource>,
    /// (start, stop) of each epoch not yet begun, in order.
    epochs: Vec<(SimTime, Option<SimTime>)>,
    next_epoch: usize,
    stop_at: Option<SimTime>,
    flow: Option<FlowId>,
    node: crate::engine::NodeId,
}

/// A receiver: the sink and the flow it credits.
#[derive(Debug)]
pub struct SinkApp {
    sink: CbrSink,
    flow: Option<FlowId>,
}

impl UdpApp {
    /// The UDP application of `spec`, if its kind is a UDP kind.
    pub fn new(spec: &HostSpec) -> Option<UdpApp> {
        let local = |port| SocketAddrV4::new(spec.addr.into(), port);
        match &spec.role {
            HostRole::Sender(s) if s.kind.is_udp() => {
                let mut cfg = CbrConfig::new(
                    local(UDP_SOURCE_PORT),
                    SocketAddrV4::new(s.peer.into(), RECEIVER_PORT),
                    s.cbr_bps.unwrap_or(1),
                );
                cfg.packet_bytes = spec.packet_bytes;
                cfg.scale = spec.ka_scale;
                if s.kind == FlowKind::UdpCbr {
                    cfg = cfg.uncontrolled();
                }
                // `size_pkts` is refused for UDP by `check_group`.
                let epochs = crate::model::epochs::long_lived_epochs(&s.workload, s.index_in_group);
                Some(UdpApp::Source(Box::new(SourceApp {
                    clock: spec.clock,
                    spec: s.clone(),
                    cfg,
                    src: None,
                    epochs,
                    next_epoch: 0,
                    stop_at: None,
                    flow: None,
                    node: spec.node,
                })))
            }
            HostRole::Receiver { kind, .. } if kind.is_udp() => {
                let mut cfg = SinkConfig::new(local(RECEIVER_PORT));
                cfg.scale = spec.ka_scale;
                if *kind == FlowKind::UdpCbr {
                    cfg.report_every = 0;
                }
                Some(UdpApp::Sink(Box::new(SinkApp {
                    sink: CbrSink::new(cfg),
                    flow: None,
                })))
            }
            _ => None,
        }
    }

    /// A packet arrived.
    pub fn handle_packet(&mut self, ctx: &mut Ctx<'_, World>, packet: &[u8]) {
        match self {
            UdpApp::Source(a) => {
                if let Some(src) = a.src.as_mut() {
                    src.handle_packet(ctx.instant(), packet);
                }
            }
            UdpApp::Sink(a) => {
                let n = a.sink.handle_packet(packet);
                if n == 0 {
                    return;
                }
                // Looked up per piece: a repeated epoch opens a new flow
                // under the same addresses.
                let local = packet.get(16..20).and_then(|b| <[u8; 4]>::try_from(b).ok());
                a.flow = a.sink.peer().zip(local).and_then(|(peer, dst)| {
                    ctx.shared.lookup(&FlowKey {
                        src: peer.ip().octets(),
                        sport: peer.port(),
                        dst,
                        dport: RECEIVER_PORT,
                    })
                });
                if let Some(id) = a.flow {
                    let now = ctx.now();
                    ctx.shared.received(id, n as u64, now);
                    if let Some(f) = ctx.shared.flow_mut(id)
                        && f.tracked
                    {
                        f.bin_wire_bytes += packet.len() as u64;
                    }
                }
            }
        }
    }

    /// Timers and the schedule.
    pub fn handle_timeout(&mut self, ctx: &mut Ctx<'_, World>) {
        let UdpApp::Source(a) = self else {
            return;
        };
        let now = ctx.now();
        if a.stop_at.is_some_and(|t| t <= now) {
            a.stop(ctx);
        }
        while let Some(&(start, stop)) = a.epochs.get(a.next_epoch) {
            if start > now {
                break;
            }
            a.next_epoch += 1;
            a.begin(ctx, stop);
        }
        if let Some(src) = a.src.as_mut() {
            src.handle_timeout(ctx.instant());
        }
    }

    /// Sends what is due.
    pub fn transmit(&mut self, ctx: &mut Ctx<'_, World>, buf: &mut Vec<u8>) {
        let now = ctx.instant();
        if buf.len() < 2048 {
            buf.resize(2048, 0);
        }
        loop {
            let n = match self {
                UdpApp::Source(a) => match a.src.as_mut() {
                    Some(src) => {
                        if buf.len() < a.cfg.packet_bytes {
                            buf.resize(a.cfg.packet_bytes, 0);
                        }
                        src.poll_transmit(now, buf)
                    }
                    None => None,
                },
                UdpApp::Sink(a) => a.sink.poll_transmit(buf),
            };
            let Some(n) = n else {
                return;
            };
            let mut pkt = ctx.buffer();
            pkt.clear();
            pkt.extend_from_slice(buf.get(..n).unwrap_or(&[]));
            ctx.send(0, pkt);
        }
    }

    /// When the application next needs [`UdpApp::handle_timeout`].
    pub fn poll_timeout(&self, end: SimTime) -> Option<SimTime> {
        let UdpApp::Source(a) = self else {
            return None;
        };
        let src = a
            .src
            .as_ref()
            .and_then(|s| s.poll_timeout())
            .map(|i| a.clock.sim_time(i));
        let epoch = a.epochs.get(a.next_epoch).map(|e| e.0).filter(|&t| t < end);
        [src, epoch, a.stop_at].into_iter().flatten().min()
    }
}

impl SourceApp {
    fn begin(&mut self, ctx: &mut Ctx<'_, World>, stop: Option<SimTime>) {
        self.stop(ctx);
        let now = ctx.instant();
        let Ok(mut src) = CbrSource::new(self.cfg, now) else {
            return;
        };
        src.start(now);
        self.src = Some(src);
        self.stop_at = stop;
        self.flow = Some(ctx.shared.open(
            FlowKey {
                src: self.cfg.local.ip().octets(),
                sport: self.cfg.local.port(),
                dst: self.cfg.remote.ip().octets(),
                dport: self.cfg.remote.port(),
            },
            NewFlow {
                kind: self.spec.kind,
                group: self.spec.group,
                sender: self.node,
                tracked: self.spec.tracked,
                size: None,
                start: ctx.now(),
                path: self.spec.path,
            },
        ));
    }

    fn stop(&mut self, ctx: &mut Ctx<'_, World>) {
        if let Some(src) = self.src.as_mut() {
            src.stop();
        }
        self.src = None;
        self.stop_at = None;
        let now = ctx.now();
        if let Some(f) = self.flow.take().and_then(|id| ctx.shared.flow_mut(id)) {
            f.stop = Some(now);
        }
    }
}

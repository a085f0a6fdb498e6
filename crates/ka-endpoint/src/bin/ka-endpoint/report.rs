//! Per-flow reports: one human line, or one JSON object with `--json`.

use ka_codec::units::{ByteSize, Rate};
use ka_endpoint::driver::{DriverStats, FlowSummary};
use std::net::SocketAddr;

/// Which direction a flow went.
#[derive(Debug, Clone, Copy)]
pub enum Role {
    /// We sent.
    Send,
    /// We received.
    Recv,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Send => "send",
            Role::Recv => "recv",
        }
    }
}

/// A finished flow as one JSON object (the `--json` schema), with the
/// driver's I/O counters `io` (the whole stack's, as of the flow's end).
pub fn json(
    role: Role,
    local: SocketAddr,
    peer: SocketAddr,
    f: &FlowSummary,
    io: &DriverStats,
) -> serde_json::Value {
    serde_json::json!({
        "role": role.as_str(),
        "local": local.to_string(),
        "peer": peer.to_string(),
        "bytes": f.bytes,
        "fct_s": f.fct.as_secs_f64(),
        "goodput_bps": f.goodput_bps(),
        "ka_enabled": f.ka_enabled,
        "xcp_enabled": f.xcp_enabled,
        "ka_time_frac": f.ka_time_frac(),
        "time_ka_s": f.time_ka.as_secs_f64(),
        "time_tcp_s": f.time_tcp.as_secs_f64(),
        "mode_changes": f.mode_changes,
        "retransmits": f.retransmits,
        "spurious_retransmits": f.spurious_retransmits,
        "window_undos": f.window_undos,
        "rtos": f.rtos,
        "tlp_probes": f.tlp_probes,
        "ecn": f.ecn,
        "ece_reactions": f.ece_reactions,
        "ce_received": f.ce_received,
        "packets_in": io.packets_in,
        "gro_reads": io.gro_reads,
        "packets_out": io.packets_out,
        "gso_writes": io.gso_writes,
        "gso_segments": io.gso_segments,
    })
}

/// A finished flow as one human-readable line.
pub fn human(role: Role, local: SocketAddr, peer: SocketAddr, f: &FlowSummary) -> String {
    let (verb, arrow) = match role {
        Role::Send => ("sent", "->"),
        Role::Recv => ("received", "<-"),
    };
    let mut s = format!(
        "{local} {arrow} {peer}: {verb} {} in {:.3} s, goodput {}",
        ByteSize(f.bytes),
        f.fct.as_secs_f64(),
        Rate::from_bps(f.goodput_bps()),
    );
    if let Role::Send = role {
        s.push_str(&format!(
            "; KA mode {:.3} s ({:.1} %), TCP mode {:.3} s; {} mode change{}, {} retransmit{}",
            f.time_ka.as_secs_f64(),
            100.0 * f.ka_time_frac(),
            f.time_tcp.as_secs_f64(),
            f.mode_changes,
            if f.mode_changes == 1 { "" } else { "s" },
            f.retransmits,
            if f.retransmits == 1 { "" } else { "s" },
        ));
    }
    s.push_str(if f.ka_enabled {
        " [KA negotiated]"
    } else if f.xcp_enabled {
        " [XCP negotiated]"
    } else {
        " [plain TCP]"
    });
    if f.ecn {
        // the sender counts the echoes it reacted to (at most one per RTT)
        let (n, one, many) = match role {
            Role::Send => (f.ece_reactions, "reaction", "reactions"),
            Role::Recv => (f.ce_received, "CE mark", "CE marks"),
        };
        s.push_str(&format!(" [ECN: {n} {}]", if n == 1 { one } else { many }));
    }
    s
}

/// Prints a finished flow in the chosen format (the driver's I/O counters
/// `io` in the JSON object only).
pub fn print(
    json_out: bool,
    role: Role,
    local: SocketAddr,
    peer: SocketAddr,
    f: &FlowSummary,
    io: &DriverStats,
) {
    if json_out {
        println!("{}", json(role, local, peer, f, io));
    } else {
        println!("{}", human(role, local, peer, f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ka_endpoint::Mode;
    use std::time::Duration;

    fn flow() -> FlowSummary {
        FlowSummary {
            bytes: 10_000_000,
            fct: Duration::from_secs(4),
            time_ka: Duration::from_secs(3),
            time_tcp: Duration::from_secs(1),
            mode_changes: 1,
            retransmits: 0,
            spurious_retransmits: 0,
            window_undos: 2,
            rtos: 1,
            tlp_probes: 0,
            ka_enabled: true,
            xcp_enabled: false,
            final_mode: Mode::Ka,
            ecn: false,
            ece_reactions: 0,
            ce_received: 0,
        }
    }

    fn io() -> DriverStats {
        DriverStats {
            packets_in: 300,
            packets_out: 7000,
            gso_writes: 120,
            gso_segments: 6500,
            ..DriverStats::default()
        }
    }

    #[test]
    fn json_has_the_documented_fields() {
        let a: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:5001".parse().unwrap();
        let v = json(Role::Send, a, b, &flow(), &io());
        assert_eq!(v["bytes"], 10_000_000);
        assert_eq!(v["fct_s"], 4.0);
        assert_eq!(v["goodput_bps"], 20e6);
        assert_eq!(v["ka_time_frac"], 0.75);
        assert_eq!(v["mode_changes"], 1);
        assert_eq!(v["retransmits"], 0);
        assert_eq!(v["spurious_retransmits"], 0);
        assert_eq!(v["window_undos"], 2);
        assert_eq!(v["rtos"], 1);
        assert_eq!(v["tlp_probes"], 0);
        assert_eq!(v["role"], "send");
        assert_eq!(v["ecn"], false);
        assert_eq!(v["xcp_enabled"], false);
        assert_eq!(v["packets_out"], 7000);
        assert_eq!(v["gso_writes"], 120);
        assert_eq!(v["gso_segments"], 6500);
        let h = human(Role::Send, a, b, &flow());
        assert!(
            h.contains("10.00 MB") && h.contains("20.00 Mbit/s") && h.contains("75.0 %"),
            "{h}"
        );
        assert!(!h.contains("ECN"), "{h}");
        let ecn = FlowSummary {
            ecn: true,
            ece_reactions: 2,
            ce_received: 1,
            ..flow()
        };
        assert_eq!(json(Role::Send, a, b, &ecn, &io())["ece_reactions"], 2);
        assert!(human(Role::Send, a, b, &ecn).ends_with(" [ECN: 2 reactions]"));
        assert!(human(Role::Recv, b, a, &ecn).ends_with(" [ECN: 1 CE mark]"));
        assert!(h.ends_with("[KA negotiated]"), "{h}");
        let xcp = FlowSummary {
            ka_enabled: false,
            xcp_enabled: true,
            ..flow()
        };
        assert!(human(Role::Send, a, b, &xcp).ends_with("[XCP negotiated]"));
        assert_eq!(json(Role::Send, a, b, &xcp, &io())["xcp_enabled"], true);
    }
}

//! The one place where the command line becomes the router's
//! configuration: every flag lands in a field of ka-router's config types
//! ([`RouterConfig`], [`PortConfig`], [`QdiscConfig`], [`RwmConfig`]) here,
//! and `--config` reads the same types from a file (the form ka-sim
//! scenarios use).

use std::path::Path;

use anyhow::{Context as _, bail};
use ka_router::qdisc::{FqCodelConfig, QdiscConfig, RedConfig};
use ka_router::rwm::RwmConfig;
use ka_router::{
    Carrier, ControllerKind, ImpairConfig, PortConfig, QueueMeasure, RcpConfig, RcpUpdate,
    RouterConfig, RouterFile, XcpConfig,
};

use crate::args::{Args, OnOff, QueueMeasureArg, RcpUpdateArg, SignallingArg};
use crate::qdisc_args::{QdiscArg, QdiscArgs};
use crate::rwm_args::RwmArgs;

/// What the router runs: both ports and RWM, validated.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The forward (in → out) port.
    pub forward: PortConfig,
    /// The reverse (out → in) port.
    pub reverse: PortConfig,
    /// Receive-window modulation, if on.
    pub rwm: Option<RwmConfig>,
}

/// Reads the `--config` file.
fn read_file(path: &Path) -> anyhow::Result<RouterFile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading --config {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("--config {}", path.display()))
}

impl TryFrom<&Args> for Setup {
    type Error = anyhow::Error;

    fn try_from(a: &Args) -> anyhow::Result<Setup> {
        let file = match &a.config {
            Some(p) => Some(read_file(p)?),
            None => None,
        };
        let router = match &file {
            Some(f) => f.router,
            None => router(a)?,
        };
        router
            .validate()
            .map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
        let carrier = match a.signalling {
            SignallingArg::Ka => Carrier::Ka,
            SignallingArg::Rcp => Carrier::NativeRcp,
            SignallingArg::Xcp => Carrier::Xcp,
            SignallingArg::None => Carrier::None,
        };
        if file.is_none() {
            let rate_carrier = matches!(carrier, Carrier::Ka | Carrier::NativeRcp);
            if router.controller != ControllerKind::Rcp && !rate_carrier {
                bail!("--controller applies to --signal ka or rcp only");
            }
            if !router.stamp_every.is_packet() && !rate_carrier {
                bail!("--stamp-every applies to --signal ka or rcp only");
            }
            if router.xcp != XcpConfig::default() && carrier != Carrier::Xcp {
                bail!("--xcp-alpha, --xcp-beta and --xcp-gamma apply to --signal xcp only");
            }
        }
        let fwd_qdisc = match file.as_ref().and_then(|f| f.qdisc) {
            Some(q) => q,
            None => qdisc(&a.qdisc, a.qdisc.qdisc)?,
        };
        let rev_qdisc = match a.qdisc.reverse_qdisc {
            Some(which) => qdisc(&a.qdisc, which)?,
            None => fwd_qdisc,
        };
        let seed = a.qdisc.seed();
        let file_impair = file.as_ref().and_then(|f| f.impair);
        let file_reverse_impair = file.as_ref().and_then(|f| f.reverse_impair);
        if (file_impair.is_some() || file_reverse_impair.is_some()) && a.impair.any() {
            bail!("impairments are set both in --config and by their flags");
        }
        a.impair.check(a.delay)?;
        let fwd_impair = file_impair.unwrap_or_else(|| a.impair.config(false));
        let rev_impair = match (file_reverse_impair, file_impair) {
            (Some(r), _) => r,
            // The forward table for both: the reverse direction still
            // draws its own stream.
            (None, Some(f)) => ImpairConfig {
                seed: f.seed.map(crate::impair_args::reverse_seed),
                ..f
            },
            (None, None) => a.impair.config(true),
        };
        let port = |capacity: u64,
                    qdisc: QdiscConfig,
                    seed: u64,
                    impair: ImpairConfig|
         -> anyhow::Result<PortConfig> {
            let mut c = router.port(carrier, capacity);
            c.qdisc = qdisc;
            c.seed = seed;
            c.queue_limit = a.queue;
            c.delay = a.delay;
            c.impair = impair;
            // A bridge is invisible at layer 3: no TTL / hop-limit decrement
            // (IPv6 neighbour discovery also needs hop limit 255 to survive).
            c.decrement_ttl = a.bridge.is_none();
            c.ipv6_signal = a.ipv6_signal == OnOff::On;
            c.validate()
                .map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
            Ok(c)
        };
        let forward = port(a.rate, fwd_qdisc, seed, fwd_impair)?;
        let reverse = port(
            a.reverse_rate.unwrap_or(a.rate),
            rev_qdisc,
            seed ^ 0x5245_5645_5253_4521,
            rev_impair,
        )?;
        let rwm = match file.and_then(|f| f.rwm) {
            Some(_) if a.rwm.rwm => bail!("RWM is set both in --config and by --rwm"),
            Some(r) => Some(r),
            None => rwm(&a.rwm),
        };
        let rwm = match rwm {
            Some(r) => {
                let r = r.for_ports(forward.capacity_bps, reverse.capacity_bps);
                r.validate()
                    .map_err(|e| anyhow::anyhow!("invalid --rwm options: {e}"))?;
                Some(r)
            }
            None => None,
        };
        Ok(Setup {
            forward,
            reverse,
            rwm,
        })
    }
}

/// The router's knobs from their flags.
fn router(a: &Args) -> anyhow::Result<RouterConfig> {
    let mut controller = a.controller;
    if let Some(caution) = a.crowd_caution {
        match &mut controller {
            ControllerKind::Crowd(c) => c.caution = caution,
            _ => bail!("--crowd-caution applies to --controller crowd only"),
        }
    }
    Ok(RouterConfig {
        controller,
        rcp: RcpConfig {
            alpha: a.alpha,
            beta: a.beta,
            queue_measure: match a.queue_measure {
                QueueMeasureArg::Persistent => QueueMeasure::Persistent,
                QueueMeasureArg::Now => QueueMeasure::Now,
            },
            queue_target: a.queue_target,
            update: match a.rcp_update {
                RcpUpdateArg::Exponential => RcpUpdate::Exponential,
                RcpUpdateArg::Linear => RcpUpdate::Linear,
            },
            ..RcpConfig::default()
        },
        xcp: XcpConfig {
            alpha: a.xcp_alpha,
            beta: a.xcp_beta,
            gamma: a.xcp_gamma,
        },
        initial_rtt: a.rtt,
        dither: a.dither == OnOff::On,
        stamp_every: a.stamp_every,
        stamp_slots: a.stamp_slots,
        ..RouterConfig::default()
    })
}

/// The discipline `which` with the shared knob flags, or an error naming
/// the bad flag.
fn qdisc(q: &QdiscArgs, which: QdiscArg) -> anyhow::Result<QdiscConfig> {
    let ecn = q.ecn == OnOff::On;
    Ok(match which {
        QdiscArg::Droptail => QdiscConfig::DropTail,
        QdiscArg::Red => {
            let ok = |v: f64| v.is_finite() && v > 0.0;
            if !(ok(q.red_min) && ok(q.red_max) && q.red_min < q.red_max) {
                bail!(
                    "--red-min and --red-max must be > 0 with --red-min < --red-max (got {} and {})",
                    q.red_min,
                    q.red_max
                );
            }
            if !(ok(q.red_max_p) && q.red_max_p <= 1.0) {
                bail!("--red-max-p must be in (0, 1] (got {})", q.red_max_p);
            }
            if !(ok(q.red_weight) && q.red_weight <= 1.0) {
                bail!("--red-weight must be in (0, 1] (got {})", q.red_weight);
            }
            QdiscConfig::Red(RedConfig {
                min_th: q.red_min,
                max_th: q.red_max,
                max_p: q.red_max_p,
                w_q: q.red_weight,
                ecn,
                ..RedConfig::default()
            })
        }
        QdiscArg::FqCodel => {
            if q.codel_target.is_zero() || q.codel_interval.is_zero() {
                bail!("--codel-target and --codel-interval must be above 0");
            }
            QdiscConfig::FqCodel(FqCodelConfig {
                target: q.codel_target,
                interval: q.codel_interval,
                flows: q.fq_flows as usize,
                quantum: q.fq_quantum as usize,
                ecn,
                ..FqCodelConfig::default()
            })
        }
    })
}

/// RWM from its flags (`None` without `--rwm`); capacities 0 (the ports'
/// rates) unless `--rwm-capacity`.
fn rwm(r: &RwmArgs) -> Option<RwmConfig> {
    if !r.rwm {
        return None;
    }
    let cap = r.rwm_capacity.unwrap_or(0);
    Some(RwmConfig {
        capacity_bps: [cap, cap],
        classes: r.classes.clone(),
        default_share: r.rwm_default_share,
        delta: r.rwm_delta,
        max_flows: r.rwm_max_flows as usize,
        ..RwmConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn setup(extra: &[&str]) -> anyhow::Result<Setup> {
        let mut v = vec!["ka-router", "--in", "a", "--out", "b", "--rate", "20mbit"];
        v.extend_from_slice(extra);
        Setup::try_from(&Args::try_parse_from(v)?)
    }

    #[test]
    fn controller_specs() {
        use crate::args::controller;
        assert_eq!(controller("rcp"), Ok(ControllerKind::Rcp));
        let ControllerKind::Crowd(c) = controller("crowd:caution=2.5").unwrap() else {
            panic!("crowd");
        };
        assert_eq!(c.caution, 2.5);
        let ControllerKind::Echo(e) = controller("echo:target=0.9, floor_budget=4ms").unwrap()
        else {
            panic!("echo");
        };
        assert_eq!(
            (e.target, e.floor_budget),
            (0.9, std::time::Duration::from_millis(4))
        );
        for bad in ["xyz", "crowd:cation=1", "crowd:caution", "echo:target=fast"] {
            assert!(controller(bad).is_err(), "{bad} accepted");
        }
        let e = controller("xyz").unwrap_err();
        assert!(e.contains("crowd") && e.contains("echo"), "{e}");
    }

    #[test]
    fn ignored_combinations_are_refused() {
        assert!(setup(&["--signal", "xcp", "--controller", "echo"]).is_err());
        assert!(setup(&["--signal", "none", "--controller", "crowd"]).is_err());
        assert!(setup(&["--signal", "ka", "--xcp-alpha", "0.2"]).is_err());
        assert!(setup(&["--controller", "echo", "--crowd-caution", "2"]).is_err());
        assert!(setup(&["--signal", "rcp", "--controller", "echo"]).is_ok());
    }

    #[test]
    fn config_file_sets_the_same_types() {
        let dir = std::env::temp_dir().join(format!("ka-router-setup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("router.toml");
        std::fs::write(
            &p,
            r#"
[router]
controller = { kind = "crowd", caution = 3.0 }
initial_rtt = "40ms"
rcp = { alpha = 0.2, queue_target = "2ms", update = "linear" }
mode = { hold = "50ms" }
stamp_every = "rtt"
stamp_slots = 1000

[qdisc]
kind = "fq-codel"
target = "2ms"
"#,
        )
        .unwrap();
        let path = p.to_str().unwrap();
        let s = setup(&["--config", path, "--reverse-qdisc", "droptail"]).unwrap();
        let f = s.forward;
        let Some(ControllerKind::Crowd(c)) = f.signalling.controller() else {
            panic!("{:?}", f.signalling);
        };
        assert_eq!(c.caution, 3.0);
        assert_eq!(f.initial_rtt, std::time::Duration::from_millis(40));
        assert_eq!((f.rcp.alpha, f.rcp.beta), (0.2, 1.0));
        assert_eq!(f.rcp.update, RcpUpdate::Linear);
        // Unset keys: the library's defaults, not the flags'.
        assert_eq!(f.rcp.queue_measure, QueueMeasure::Now);
        assert!(!f.dither);
        assert_eq!(f.mode.hold, Some(std::time::Duration::from_millis(50)));
        assert_eq!(f.stamp_every, ka_router::StampEvery::Rtt);
        assert_eq!(
            f.stamp_slots, 1000,
            "rounded up to 1024 when the table is built"
        );
        assert!(matches!(f.qdisc, QdiscConfig::FqCodel(q) if q.target.as_millis() == 2));
        assert_eq!(s.reverse.qdisc, QdiscConfig::DropTail);
        assert!(s.rwm.is_none());
        // The knob flags are the file's: not both.
        assert!(setup(&["--config", path, "--alpha", "0.3"]).is_err());
        std::fs::write(&p, "[router]\nalpha = 0.1\n").unwrap();
        let e = setup(&["--config", path]).unwrap_err();
        assert!(format!("{e:#}").contains("alpha"), "{e:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

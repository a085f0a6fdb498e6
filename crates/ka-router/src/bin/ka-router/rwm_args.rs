//! `--rwm` and its knobs: receive-window modulation (DESIGN §5.2,
//! `ka_router::rwm`); they map onto `RwmConfig` in `setup.rs`.

use clap::Args as ClapArgs;
use ka_router::rwm::RwmClass;

/// Receive-window modulation options.
#[derive(Debug, Clone, ClapArgs)]
#[command(next_help_heading = "Receive-window modulation (RWM)")]
pub struct RwmArgs {
    /// Cap every TCP receive window at the flow's share of the bandwidth-delay product
    /// (C_class · handshake RTT / flows in the class), so loss-based senders stop filling
    /// the queue. Needs both directions of every connection through this router; put it on
    /// the edge router of the receivers' site. Works with any --signal and --qdisc.
    #[arg(long)]
    pub rwm: bool,

    /// A traffic class: flows whose server (responder) port is one of PORTS share SHARE of
    /// the capacity, e.g. web=80,443:60%. Repeatable; first match wins. Flows no class
    /// matches form the default class (--rwm-default-share).
    #[arg(long = "rwm-class", value_name = "NAME=PORTS:SHARE", value_parser = class, requires = "rwm")]
    pub classes: Vec<RwmClass>,

    /// Share of the default class [default: what the --rwm-class shares leave, 100 % without
    /// classes]. 0 leaves its flows alone.
    #[arg(long, value_name = "SHARE", value_parser = share, requires = "rwm")]
    pub rwm_default_share: Option<f64>,

    /// Capacity C the windows are computed from, both directions [default: each port's own
    /// rate: --rate for data going in → out, --reverse-rate for out → in].
    #[arg(long, value_name = "RATE", value_parser = crate::values::rate, requires = "rwm")]
    pub rwm_capacity: Option<u64>,

    /// δ: scale every cap by 1 + δ, e.g. 10% or -10% (the seed's over/under-estimation runs).
    #[arg(long, value_name = "PERCENT", value_parser = delta, default_value = "0%", allow_hyphen_values = true, requires = "rwm")]
    pub rwm_delta: f64,

    /// Established connections tracked at most (plus 1/16 as many handshakes in their own
    /// table, at least 64). When full, a new connection evicts the least recently seen idle
    /// one, or is left alone if all are active. About 150 bytes each.
    #[arg(long, value_name = "N", default_value_t = ka_router::rwm::DEFAULT_MAX_FLOWS as u32, value_parser = clap::value_parser!(u32).range(1..=(1 << 24)), requires = "rwm")]
    pub rwm_max_flows: u32,
}

/// A fraction: `60%`, `0.6`.
fn fraction(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (v, _) = ka_router::config::percent_or_number(s)
        .ok_or_else(|| format!("{s:?} is not a share (try 60% or 0.6)"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{s:?} is not finite"))
    }
}

fn share(s: &str) -> Result<f64, String> {
    let v = fraction(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s}: a share must be between 0 and 100 %"))
    }
}

fn delta(s: &str) -> Result<f64, String> {
    let v = fraction(s)?;
    if v > -1.0 && v <= 10.0 {
        Ok(v)
    } else {
        Err(format!("{s}: δ must be above -100 % and at most 1000 %"))
    }
}

/// `NAME=PORTS:SHARE`, PORTS a comma-separated list of ports or `LO-HI`
/// ranges.
fn class(s: &str) -> Result<RwmClass, String> {
    let hint = "expected NAME=PORTS:SHARE, e.g. web=80,443:60%";
    let (name, rest) = s.split_once('=').ok_or(hint)?;
    let (ports, pct) = rest.rsplit_once(':').ok_or(hint)?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{s:?}: the class needs a name ({hint})"));
    }
    let mut list = Vec::new();
    for p in ports.split(',').map(str::trim) {
        let bad = || format!("{s:?}: {p:?} is not a port or LO-HI range");
        match p.split_once('-') {
            Some((lo, hi)) => {
                let lo: u16 = lo.trim().parse().map_err(|_| bad())?;
                let hi: u16 = hi.trim().parse().map_err(|_| bad())?;
                if lo > hi || usize::from(hi - lo) >= 4096 {
                    return Err(format!("{s:?}: range {p} is empty or wider than 4096"));
                }
                list.extend(lo..=hi);
            }
            None => list.push(p.parse().map_err(|_| bad())?),
        }
    }
    let share = share(pct)?;
    if share == 0.0 {
        return Err(format!("{s:?}: a class's share must be above 0"));
    }
    Ok(RwmClass {
        name: name.to_owned(),
        ports: list,
        share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Args;
    use crate::setup::Setup;
    use clap::Parser as _;
    use ka_router::rwm::RwmConfig;

    fn rwm_config(extra: &[&str]) -> anyhow::Result<Option<RwmConfig>> {
        let mut v = vec![
            "ka-router",
            "--in",
            "a",
            "--out",
            "b",
            "--rate",
            "50mbit",
            "--reverse-rate",
            "10mbit",
        ];
        v.extend_from_slice(extra);
        let a = Args::try_parse_from(v)?;
        Ok(Setup::try_from(&a)?.rwm)
    }

    #[test]
    fn rwm_flags() {
        assert_eq!(rwm_config(&[]).unwrap(), None);
        let c = rwm_config(&["--rwm"]).unwrap().unwrap();
        assert_eq!(c.capacity_bps, [50_000_000, 10_000_000], "each port's rate");
        assert_eq!((c.delta, c.default_class_share()), (0.0, 1.0));
        assert_eq!((c.max_flows, c.max_half_open), (65_536, 4_096));
        let c = rwm_config(&[
            "--rwm",
            "--rwm-class",
            "web=80,443:60%",
            "--rwm-class",
            "ssh=22:10%",
            "--rwm-capacity",
            "40mbit",
            "--rwm-delta",
            "-10%",
            "--signal",
            "ka",
            "--qdisc",
            "fq-codel",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.capacity_bps, [40_000_000; 2]);
        assert_eq!(c.classes.len(), 2);
        assert!((c.default_class_share() - 0.3).abs() < 1e-12);
        assert_eq!(c.delta, -0.1);
        // Knobs without --rwm, and oversubscribed classes, are refused.
        assert!(rwm_config(&["--rwm-delta", "10%"]).is_err());
        let err =
            rwm_config(&["--rwm", "--rwm-class", "a=1:70%", "--rwm-class", "b=2:70%"]).unwrap_err();
        assert!(err.to_string().contains("140.0 %"), "{err}");
    }

    #[test]
    fn classes_shares_and_deltas() {
        let c = class("web=80,443:60%").unwrap();
        assert_eq!(
            (c.name.as_str(), c.ports.as_slice(), c.share),
            ("web", &[80, 443][..], 0.6)
        );
        let c = class("ssh = 22 , 8000-8002 : 0.25").unwrap();
        assert_eq!(c.ports, vec![22, 8000, 8001, 8002]);
        assert_eq!(c.share, 0.25);
        for bad in [
            "web",
            "=80:10%",
            "web=80",
            "web=http:10%",
            "web=80:150%",
            "web=80:0%",
            "web=9-3:10%",
            "web=1-65535:1%",
            "web=80:x",
        ] {
            assert!(class(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(delta("-10%").unwrap(), -0.1);
        assert_eq!(delta("10%").unwrap(), 0.1);
        assert!(delta("-100%").is_err());
        assert!(share("101%").is_err());
        assert!(fraction("NaN").is_err());
    }
}

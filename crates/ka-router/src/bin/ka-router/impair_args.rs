//! `--loss`, `--jitter` and the other impairments of the delay line
//! (DESIGN §3.10; netem's knobs, which this kernel lacks); they map onto
//! `ka_router::ImpairConfig` in `setup.rs`. Both directions get the same
//! knobs, as both get the same `--delay`.

use std::time::Duration;

use clap::Args as ClapArgs;
use ka_router::ImpairConfig;
use ka_router::impair::parse_probability;

/// Impairment options (both directions).
#[derive(Debug, Clone, ClapArgs)]
#[command(next_help_heading = "Impairments (netem's, in the delay line, both directions)")]
pub struct ImpairArgs {
    /// Each packet's one-way delay is drawn uniformly from --delay ± JITTER (netem's
    /// `delay D J`), independently per packet, so packets overtake each other. At most --delay.
    #[arg(long, value_name = "DURATION", value_parser = crate::values::bounded_duration, default_value = "0")]
    pub jitter: Duration,

    /// Correlation of successive --jitter draws (netem's `delay D J CORR`): each is
    /// (1 − CORR)·uniform + CORR·previous, so delays wander instead of jumping (and, as
    /// with netem, spread less). A percentage or a fraction below 1.
    #[arg(long, value_name = "P", value_parser = parse_probability, default_value = "0", requires = "jitter")]
    pub jitter_correlation: f64,

    /// Probability that a packet is lost on the wire after its serialisation (netem `loss`):
    /// a percentage (1%) or a fraction below 1 (0.01).
    #[arg(long, value_name = "P", value_parser = parse_probability, default_value = "0")]
    pub loss: f64,

    /// Probability that a packet is sent twice (netem `duplicate`); the copy takes no link
    /// time and is not duplicated again.
    #[arg(long, value_name = "P", value_parser = parse_probability, default_value = "0")]
    pub duplicate: f64,

    /// Probability that one random bit of a packet is flipped (netem `corrupt`); checksums
    /// are left alone, so the receiver discards it.
    #[arg(long, value_name = "P", value_parser = parse_probability, default_value = "0")]
    pub corrupt: f64,

    /// Probability that a packet skips --delay and --jitter and leaves as soon as it is
    /// serialised (netem `reorder P` with its default gap), overtaking those in flight. Needs
    /// a --delay.
    #[arg(long, value_name = "P", value_parser = parse_probability, default_value = "0")]
    pub reorder: f64,

    /// Seed of the impairments' random draws (the reverse direction uses a seed derived from
    /// it) [default: derived from --qdisc-seed, random unless that is set].
    #[arg(long, value_name = "N")]
    pub impair_seed: Option<u64>,
}

/// The reverse direction's seed from the forward one's, so the two
/// directions draw different streams.
pub fn reverse_seed(forward: u64) -> u64 {
    forward ^ 0x5245_5645_5253_4521
}

impl ImpairArgs {
    /// Whether any impairment flag is set.
    pub fn any(&self) -> bool {
        !self.config(false).is_off() || self.impair_seed.is_some()
    }

    /// The forward (`reverse` false) or reverse direction's knobs.
    pub fn config(&self, reverse: bool) -> ImpairConfig {
        ImpairConfig {
            loss: self.loss,
            duplicate: self.duplicate,
            corrupt: self.corrupt,
            reorder: self.reorder,
            jitter: self.jitter,
            jitter_correlation: self.jitter_correlation,
            seed: self
                .impair_seed
                .map(|s| if reverse { reverse_seed(s) } else { s }),
        }
    }

    /// Checks the knobs against `--delay`, naming the flags.
    pub fn check(&self, delay: Duration) -> anyhow::Result<()> {
        if self.jitter > delay {
            anyhow::bail!(
                "--jitter ({:?}) must not exceed --delay ({delay:?}): each packet's delay is \
                 drawn from --delay ± --jitter",
                self.jitter
            );
        }
        if self.reorder > 0.0 && delay.is_zero() {
            anyhow::bail!("--reorder needs a --delay (a reordered packet skips it)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser as _;
    use ka_router::ImpairConfig;

    use crate::args::Args;

    fn args(extra: &str) -> Result<Args, clap::Error> {
        let mut v = vec!["ka-router", "--in", "a", "--out", "b", "--rate", "100mbit"];
        v.extend(extra.split_whitespace());
        Args::try_parse_from(v)
    }

    /// The error `extra` gets, from parsing or from building the ports.
    fn error(extra: &str) -> String {
        match args(extra) {
            Err(e) => e.to_string(),
            Ok(a) => a.port_configs().map(|_| ()).unwrap_err().to_string(),
        }
    }

    #[test]
    fn off_by_default() {
        let (f, r) = args("--delay 10ms").unwrap().port_configs().unwrap();
        assert_eq!((f.impair, r.impair), (ImpairConfig::OFF, ImpairConfig::OFF));
    }

    #[test]
    fn flags_set_both_directions() {
        let a = args(
            "--delay 10ms --jitter 3ms --loss 1% --duplicate 0.01 --corrupt 0.1% \
             --reorder 25% --impair-seed 7 --jitter-correlation 50%",
        )
        .unwrap();
        let (f, r) = a.port_configs().unwrap();
        let want = ImpairConfig {
            loss: 0.01,
            duplicate: 0.01,
            corrupt: 0.001,
            reorder: 0.25,
            jitter: Duration::from_millis(3),
            jitter_correlation: 0.5,
            seed: Some(7),
        };
        assert_eq!(f.impair, want);
        assert_eq!(f.delay, Duration::from_millis(10));
        assert_eq!(
            r.impair,
            ImpairConfig {
                seed: r.impair.seed,
                ..want
            }
        );
        assert_ne!(r.impair.seed, Some(7), "each direction its own stream");
        assert!(r.impair.seed.is_some());
        // Without --impair-seed the streams derive from each port's seed.
        let (f, _) = args("--delay 1ms --loss 1%")
            .unwrap()
            .port_configs()
            .unwrap();
        assert_eq!(f.impair.seed, None);
    }

    #[test]
    fn bad_values_name_the_flag_and_the_limit() {
        for (extra, want) in [
            ("--queue 0", "--queue"),
            ("--queue 0", "at least 1"),
            ("--queue 100001", "100000"),
            ("--delay 11s", "--delay"),
            ("--delay 11s", "10s"),
            ("--delay 10ms --jitter 11s", "--jitter"),
            ("--delay 2ms --jitter 3ms", "--jitter"),
            ("--delay 2ms --jitter 3ms", "--delay"),
            ("--reorder 10%", "--reorder"),
            ("--loss 1", "ambiguous"),
            ("--loss 101%", "--loss"),
            ("--duplicate=-1%", "--duplicate"),
            ("--corrupt nan", "--corrupt"),
        ] {
            let e = error(extra);
            assert!(e.contains(want), "{extra}: {e:?} lacks {want:?}");
        }
        // The limits themselves are accepted.
        let (f, _) = args("--queue 100000 --delay 10s --jitter 10s")
            .unwrap()
            .port_configs()
            .unwrap();
        assert_eq!(
            (f.queue_limit, f.delay, f.impair.jitter),
            (100_000, Duration::from_secs(10), Duration::from_secs(10))
        );
        assert_eq!(args("--queue 1").unwrap().queue, 1);
    }

    #[test]
    fn config_file_sets_impairments() {
        let dir = std::env::temp_dir().join(format!("ka-router-impair-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("router.toml");
        std::fs::write(
            &p,
            "[impair]\nloss = \"1%\"\njitter = \"2ms\"\nseed = 5\n[reverse_impair]\nduplicate = 0.5\n",
        )
        .unwrap();
        let path = p.to_str().unwrap();
        let (f, r) = args(&format!("--delay 5ms --config {path}"))
            .unwrap()
            .port_configs()
            .unwrap();
        assert_eq!(
            (f.impair.loss, f.impair.jitter),
            (0.01, Duration::from_millis(2))
        );
        assert_eq!((r.impair.loss, r.impair.duplicate), (0.0, 0.5));
        assert_eq!(f.impair.seed, Some(5));
        // [impair] alone: both directions, each its own stream.
        std::fs::write(&p, "[impair]\nloss = \"1%\"\nseed = 5\n").unwrap();
        let (f, r) = args(&format!("--config {path}"))
            .unwrap()
            .port_configs()
            .unwrap();
        assert_eq!((f.impair.loss, r.impair.loss), (0.01, 0.01));
        assert!(r.impair.seed.is_some() && r.impair.seed != f.impair.seed);
        std::fs::write(
            &p,
            "[impair]\nloss = \"1%\"\njitter = \"2ms\"\n[reverse_impair]\nduplicate = 0.5\n",
        )
        .unwrap();
        // Not both the file and the flags.
        assert!(error(&format!("--delay 5ms --config {path} --loss 1%")).contains("--config"));
        // The file's values are validated against --delay.
        assert!(error(&format!("--delay 1ms --config {path}")).contains("jitter"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

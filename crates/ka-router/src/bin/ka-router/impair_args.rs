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
    #[arg(long, value_name = "DURATION", value_parser = crate::args::bounded_duration, default_value = "0")]
    pub jitter: Duration,

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

/// Mixed into `--impair-seed` for the reverse direction, so the two
/// directions draw different streams.
const REVERSE_SEED: u64 = 0x5245_5645_5253_4521;

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
            seed: self
                .impair_seed
                .map(|s| if reverse { s ^ REVERSE_SEED } else { s }),
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

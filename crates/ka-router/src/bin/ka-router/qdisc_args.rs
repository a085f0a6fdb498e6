//! `--qdisc` and the queue disciplines' knobs (DESIGN §3.1, §4.2, §4.3); they map
//! onto `ka_router::qdisc::QdiscConfig` in `setup.rs`.

use std::time::Duration;

use clap::{Args as ClapArgs, ValueEnum};

use crate::values::OnOff;

/// `--qdisc` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QdiscArg {
    /// FIFO, drop the arrival when --queue packets are queued.
    Droptail,
    /// Random Early Detection (Floyd & Jacobson 1993), gentle, ECN marking.
    Red,
    /// FQ-CoDel (RFC 8290): hashed flow queues, DRR, CoDel per queue, ECN marking.
    FqCodel,
}

/// Queue-discipline options (both directions share the knobs).
#[derive(Debug, Clone, ClapArgs)]
#[command(next_help_heading = "Queue discipline")]
pub struct QdiscArgs {
    /// Queue discipline of the forward direction. Its hard limit is --queue packets (Linux's
    /// fq_codel defaults to 10240; here the one --queue sets every discipline's limit).
    #[arg(long, value_enum, default_value = "droptail")]
    pub qdisc: QdiscArg,

    /// Queue discipline of the reverse direction [default: same as --qdisc].
    #[arg(long, value_enum)]
    pub reverse_qdisc: Option<QdiscArg>,

    /// RED: min_th, average queue in packets below which nothing is dropped or marked.
    #[arg(long, value_name = "PACKETS", default_value_t = 250.0)]
    pub red_min: f64,

    /// RED: max_th, average queue in packets where the probability reaches --red-max-p
    /// (gentle RED: it then rises to 1 at twice this).
    #[arg(long, value_name = "PACKETS", default_value_t = 750.0)]
    pub red_max: f64,

    /// RED: drop/mark probability at max_th.
    #[arg(long, value_name = "P", default_value_t = 0.1)]
    pub red_max_p: f64,

    /// RED: EWMA weight w_q of the average queue.
    #[arg(long, value_name = "W", default_value_t = 0.002)]
    pub red_weight: f64,

    /// FQ-CoDel: CoDel's target sojourn time.
    #[arg(long, value_name = "DURATION", value_parser = crate::values::duration, default_value = "5ms")]
    pub codel_target: Duration,

    /// FQ-CoDel: CoDel's interval (about a worst-case RTT).
    #[arg(long, value_name = "DURATION", value_parser = crate::values::duration, default_value = "100ms")]
    pub codel_interval: Duration,

    /// FQ-CoDel: number of flow queues (hash buckets).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub fq_flows: u32,

    /// FQ-CoDel: DRR quantum in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1514, value_parser = clap::value_parser!(u32).range(64..))]
    pub fq_quantum: u32,

    /// RED and FQ-CoDel mark ECN-capable packets CE (RFC 3168) instead of dropping them
    /// (non-ECT packets are still dropped).
    #[arg(long, value_name = "on|off", value_enum, default_value = "on")]
    pub ecn: OnOff,

    /// Seed of the disciplines' randomness (RED's drop decisions, FQ-CoDel's hash secret)
    /// [default: random]. Set it to repeat a run's decisions.
    #[arg(long, value_name = "N")]
    pub qdisc_seed: Option<u64>,
}

impl QdiscArgs {
    /// The seed: --qdisc-seed, or a random one from the standard library's
    /// per-process hash keys (so two routers never share a hash secret).
    pub fn seed(&self) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        self.qdisc_seed.unwrap_or_else(|| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(std::process::id().into());
            h.finish()
        })
    }
}

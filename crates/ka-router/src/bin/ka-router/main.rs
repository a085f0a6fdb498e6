//! `ka-router`: a Kick-Ass router between two TUN devices, or between two
//! Ethernet interfaces (`--bridge`).
//!
//! Packets read from `--in` are shaped at `--rate` and written to `--out`;
//! packets read from `--out` are shaped at `--reverse-rate` and written to
//! `--in`. See `ka-router --help` and DESIGN §8.1.

mod args;
mod impair_args;
mod qdisc_args;
mod realtime;
mod rwm_args;
mod setup;
mod values;

use std::time::Instant;

use anyhow::Context as _;
use clap::Parser as _;
use ka_io::cli::{self, init_tracing};
use ka_router::rwm::Rwm;
use ka_router::shell::{self, KaPorts, PassThrough};

use args::Args;
use setup::Setup;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_tracing();
    let Setup {
        forward,
        reverse,
        rwm,
    } = Setup::try_from(&args)?;
    let shell_cfg = args.shell_config();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    if args.passthrough {
        tracing::warn!("--passthrough: forwarding unshaped and unmodified (no KA core)");
    } else {
        tracing::info!(
            rate_bps = forward.capacity_bps,
            reverse_rate_bps = reverse.capacity_bps,
            delay = ?forward.delay,
            impair = ?forward.impair,
            queue = forward.queue_limit,
            signalling = ?forward.signalling,
            qdisc = forward.qdisc.name(),
            reverse_qdisc = reverse.qdisc.name(),
            "starting"
        );
        if let Some(r) = &rwm {
            tracing::info!(
                capacity_bps = ?r.capacity_bps,
                classes = r.classes.len(),
                default_share = r.default_class_share(),
                delta = r.delta,
                max_flows = r.max_flows,
                "receive-window modulation on"
            );
        }
    }
    let summary = rt.block_on(async {
        if args.passthrough {
            shell::run(shell_cfg, |_| PassThrough::new(), shutdown_signal()).await
        } else {
            let make = |now: Instant| {
                let ports = KaPorts::new(forward, reverse, now);
                match rwm.map(|c| Rwm::new(c, now)) {
                    Some(Ok(r)) => ports.with_rwm(r),
                    // Validated above; an error here cannot happen.
                    Some(Err(e)) => {
                        tracing::error!("RWM off: {e}");
                        ports
                    }
                    None => ports,
                }
            };
            shell::run(shell_cfg, make, shutdown_signal()).await
        }
    })?;
    let (a, b) = args.devices();
    println!("forward ({a} -> {b}): {}", summary.forward);
    println!("reverse ({b} -> {a}): {}", summary.reverse);
    if let Some(r) = &summary.rwm {
        println!("rwm: {}", shell::stats::RwmSummary(*r));
    }
    println!("pacing: {}", summary.lateness);
    if summary.stamp_log_dropped > 0 {
        println!(
            "stamp log: {} lines dropped (log thread fell behind)",
            summary.stamp_log_dropped
        );
    }
    if summary.pcap_dropped > 0 {
        println!(
            "pcap: {} records dropped (capture thread fell behind)",
            summary.pcap_dropped
        );
    }
    if !summary.recorder_errors.is_empty() {
        anyhow::bail!("{}", summary.recorder_errors.join("; "));
    }
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    cli::shutdown_signal(|e| tracing::warn!("cannot watch SIGTERM ({e}); stop with Ctrl-C")).await;
}

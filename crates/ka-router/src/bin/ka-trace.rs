//! `ka-trace`: per-flow KA signals, echoes, RTT indicators, DF use, RCP/XCP
//! options and the inferred sender mode from a pcap/pcapng capture. See
//! `ka-trace --help` and the `ka_router::trace` docs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ka_codec::units::parse_duration;
use ka_router::trace::{self, Options};

const AFTER: &str = "\
OUTPUT (in --out):
  flows.csv        one row per TCP flow, ka-sim's columns (kind, size, start/end, FCT, KA share)
  series.csv       ka-sim's long format time_s,metric,entity,value per --bin: wire_bps,
                   throughput_bps, rate_bps (signalled), ka_mode (inferred), echo_rate_bps,
                   fresh_echoes, rtt_indicator_ms, df_frac, rcp_rate_bps, xcp_feedback_bytes
  trace_flows.csv  per flow: endpoints, handshake RTT, DF use, retransmits, signal range,
                   echoes, RCP/XCP options, the sender's mode (ka / tcp / mixed)
  events.csv       every leading fragment, KA-Rate echo, RTT indicator, RCP/XCP option
  flow-<id>.svg    a timeline per flow (the --max-svg flows with most data)

EXAMPLE:
  ka-router --in kt0 --out kt1 --rate 20mbit --pcap ka.pcap   # ... traffic, then Ctrl-C
  ka-trace ka.pcap --out ka-trace/

Reads pcap and pcapng (ka-router --pcap, tcpdump -w, tshark -w) with raw-IP, Ethernet,
Linux-cooked (SLL/SLL2) or loopback link types. A corrupt or truncated capture is an error
naming the byte offset; --keep-going analyses what comes before a truncated tail.";

/// Analyse a packet capture for Kick-Ass signals, per TCP flow.
#[derive(Debug, Parser)]
#[command(name = "ka-trace", version, after_long_help = AFTER, after_help = "Outputs and an example: --help")]
struct Args {
    /// The capture (pcap or pcapng).
    capture: PathBuf,

    /// Directory for the outputs (created if needed).
    #[arg(long, short, value_name = "DIR", default_value = "ka-trace")]
    out: PathBuf,

    /// Width of a series.csv time bin, e.g. 100ms, 1s.
    #[arg(long, value_name = "DURATION", value_parser = bin, default_value = "100ms")]
    bin: Duration,

    /// Draw SVG timelines for at most this many flows (0: none).
    #[arg(long, value_name = "N", default_value_t = 20)]
    max_svg: usize,

    /// No progress line on stderr.
    #[arg(long, short)]
    quiet: bool,

    /// Analyse the packets before a truncated tail instead of failing.
    #[arg(long)]
    keep_going: bool,
}

fn bin(s: &str) -> Result<Duration, String> {
    match parse_duration(s) {
        Ok(d) if d >= Duration::from_micros(100) => Ok(d),
        Ok(_) => Err("the bin must be at least 100us".into()),
        Err(e) => Err(format!("{e} (try e.g. 100ms, 1s)")),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = Options {
        bin: args.bin,
        max_svg: args.max_svg,
        progress: !args.quiet,
        keep_going: args.keep_going,
    };
    match trace::run(&args.capture, &args.out, &opts) {
        Ok(r) => {
            if let Some(t) = &r.truncated {
                eprintln!(
                    "ka-trace: warning: {}: {t} (analysed what came before)",
                    args.capture.display()
                );
            }
            let t = &r.totals;
            if t.time_backwards > 0 {
                eprintln!(
                    "ka-trace: warning: {} records were stamped earlier than a record before them (clock stepped back, or unsorted captures?)",
                    t.time_backwards
                );
            }
            println!(
                "{} records, {} IP, {} in {} TCP flows{}{}",
                t.records,
                t.ip,
                t.tcp,
                r.flows.len(),
                if t.unsupported_linktype > 0 {
                    format!(", {} of an unsupported link type", t.unsupported_linktype)
                } else {
                    String::new()
                },
                if t.flows_over_cap + t.bins_over_cap > 0 {
                    format!(
                        ", over caps: {} packets of extra flows, {} bins (use a larger --bin)",
                        t.flows_over_cap, t.bins_over_cap
                    )
                } else {
                    String::new()
                }
            );
            for f in &r.flows {
                let s = f.sender();
                let (src, dst) = f.ends();
                let d = &f.dir[s];
                let rates = d.rate_range.map_or(String::new(), |(lo, hi)| {
                    format!(", signalled {:.3}–{:.3} Mbit/s", lo / 1e6, hi / 1e6)
                });
                println!(
                    "flow {}: {}:{} -> {}:{} {} {} data pkts ({} DF), {} leading fragments{}, {} echoes ({} fresh), {} RTT indicators, sender {}",
                    f.id,
                    src.0,
                    src.1,
                    dst.0,
                    dst.1,
                    f.kind(),
                    d.data_pkts,
                    d.df_data_pkts,
                    d.leading,
                    rates,
                    f.dir[s.other()].echoes,
                    f.dir[s.other()].fresh_echoes,
                    d.indicators,
                    trace::output::sender_mode(f),
                );
            }
            println!("written to {}", args.out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ka-trace: {e}");
            ExitCode::FAILURE
        }
    }
}

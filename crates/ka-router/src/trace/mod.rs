//! `ka-trace`: what a packet capture says about Kick-Ass (feature `cli`).
//!
//! Reads any pcap or pcapng file — `ka-router --pcap`, `tcpdump -w`,
//! tshark/Wireshark — with link types raw IP, Ethernet (with VLAN tags),
//! Linux cooked (SLL, SLL2) and BSD loopback, parses every packet with
//! `etherparse`, and writes per TCP connection ("flow"):
//!
//! * `flows.csv` and `series.csv` in ka-sim's columns (the same plots
//!   work; `series.csv` is long format `time_s,metric,entity,value` with
//!   entity `flow:<id>`, time = end of a `--bin`-wide bin since the first
//!   packet). Metrics: `wire_bps` (the sender's IP bytes), `throughput_bps`
//!   (sequence space newly covered), `rate_bps` (the lowest rate leading
//!   fragments signalled in the bin, DESIGN §2.1 decode on the paper's
//!   scale), `ka_mode` (inferred, below), `echo_rate_bps` and
//!   `fresh_echoes` (KA-Rate on the receiver's ACKs: the rate and how many
//!   carried a new count), `rtt_indicator_ms` (DESIGN §2.2), `df_frac`
//!   (data segments with DF), `rcp_rate_bps` and `xcp_feedback_bytes`
//!   (native-RCP / XCP IPv4 options, DESIGN §7.1, §7.2).
//! * `trace_flows.csv`: one row per flow with what ka-sim has no column
//!   for (endpoints, handshake RTT, DF use, retransmissions, signal range,
//!   echo counts, RCP/XCP options and echoes, the sender's mode).
//! * `events.csv` (`time_s,flow,src,kind,ident,len,count,value`): every
//!   signal as it passed — `ka_signal` (ident = IP/fragment
//!   identification, len = L, value = rate in bit/s), `ka_echo` (len =
//!   code·8, count, value = rate), `rtt_indicator` (len = total length,
//!   count = k, value = ms), `rcp_option` (count = RTT ms, value = bit/s),
//!   `xcp_option` (len = H_cwnd, count = H_rtt µs, value = H_feedback),
//!   `rcp_echo`, `xcp_echo`.
//! * `flow-<id>.svg`: a timeline per flow ([`svg`]).
//!
//! **Which side sends.** The one that sent the SYN; without a handshake
//! in the capture, the one that covered more sequence space.
//!
//! **Inferred sender mode** (`ka_mode`, `ka_time_frac`, `sender_mode`):
//! for flows that negotiated KA, the sender is taken to be in KA mode at a
//! bin's end if a fresh KA-Rate echo passed the capture point within the
//! last 1.5 RTT and the sender has not retransmitted within the last RTT —
//! DESIGN §6.3's exits (silence for an RTT, loss) seen from the wire. The
//! RTT is the RTT indicators' (EWMA), else the handshake's, else 100 ms. It
//! is an inference: a sender's internal state is not on the wire.
//!
//! **Errors.** A file that is not a capture, or is corrupt or truncated,
//! is an error naming the byte offset ([`capture::CaptureError`]); with
//! `keep_going`, a truncated tail only warns and the packets before it are
//! analysed. Nothing panics on any input (property-tested).
//!
//! **Memory.** Per flow: counters, and one ≈ 200-byte cell per time bin
//! with traffic; at most [`flows::MAX_FLOWS`] flows and
//! [`flows::MAX_BINS`] cells (then counted and dropped: use a larger
//! `--bin`), [`flows::MAX_FRAGMENT_IDS`] fragment identifications. Packets
//! are streamed, never held.

pub mod capture;
pub mod flows;
pub mod output;
pub mod packet;
pub mod svg;

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capture::{CaptureError, CaptureReader};
use flows::{Analysis, Flow, Totals};

/// How `ka-trace` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Width of a `series.csv` bin.
    pub bin: Duration,
    /// Write `flow-<id>.svg` for at most this many flows (those with the
    /// most data first); 0 = none.
    pub max_svg: usize,
    /// Print a progress line on stderr for files larger than
    /// [`PROGRESS_MIN_BYTES`].
    pub progress: bool,
    /// A truncated tail is a warning, not an error.
    pub keep_going: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            bin: Duration::from_millis(100),
            max_svg: 20,
            progress: true,
            keep_going: false,
        }
    }
}

/// Files at least this large get a progress line.
pub const PROGRESS_MIN_BYTES: u64 = 16 << 20;

/// Why `ka-trace` failed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The capture could not be opened.
    #[error("{path}: {source}")]
    Open {
        /// The capture.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The capture is not a capture, or is corrupt or truncated.
    #[error("{path}: {source}")]
    Capture {
        /// The capture.
        path: PathBuf,
        /// What and where.
        source: CaptureError,
    },
    /// An output file could not be written.
    #[error("writing {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// What a run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The flows.
    pub flows: Vec<Flow>,
    /// Capture-wide counts.
    pub totals: Totals,
    /// The truncation that `keep_going` let pass.
    pub truncated: Option<CaptureError>,
    /// Files written.
    pub written: Vec<PathBuf>,
}

/// Analyses the capture at `input`, writing the outputs into `out_dir`
/// (created if needed).
pub fn run(input: &Path, out_dir: &Path, opts: &Options) -> Result<Report, TraceError> {
    let file = File::open(input).map_err(|source| TraceError::Open {
        path: input.into(),
        source,
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let progress = opts.progress && size >= PROGRESS_MIN_BYTES;
    analyse(file, size, progress, input, out_dir, opts)
}

fn out_err(path: &Path) -> impl Fn(io::Error) -> TraceError + '_ {
    move |source| TraceError::Output {
        path: path.into(),
        source,
    }
}

/// [`run`] on any reader (`size` only feeds the progress line).
pub fn analyse<R: Read>(
    input: R,
    size: u64,
    progress: bool,
    name: &Path,
    out_dir: &Path,
    opts: &Options,
) -> Result<Report, TraceError> {
    let cap_err = |source| TraceError::Capture {
        path: name.into(),
        source,
    };
    let mut reader = CaptureReader::new(input).map_err(cap_err)?;
    std::fs::create_dir_all(out_dir).map_err(out_err(out_dir))?;
    let events_path = out_dir.join("events.csv");
    let events = BufWriter::with_capacity(
        1 << 16,
        File::create(&events_path).map_err(out_err(&events_path))?,
    );
    let bin_s = opts.bin.as_secs_f64().max(1e-6);
    let mut a = Analysis::new(bin_s, events).map_err(out_err(&events_path))?;
    let tty = io::stderr().is_terminal();
    let started = Instant::now();
    let mut next_progress = started + Duration::from_millis(500);
    let mut truncated = None;
    loop {
        let rec = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) if e.truncated && opts.keep_going => {
                truncated = Some(e);
                break;
            }
            Err(e) => return Err(cap_err(e)),
        };
        if !packet::supported_linktype(rec.linktype) {
            a.totals.unsupported_linktype += 1;
        }
        let info = packet::decode(rec.linktype, &rec.data);
        a.packet(rec.ts, info.as_ref())
            .map_err(out_err(&events_path))?;
        if progress && Instant::now() >= next_progress {
            next_progress = Instant::now() + Duration::from_millis(500);
            let done = reader.offset();
            let line = format!(
                "ka-trace: {:.1} of {:.1} MB ({:.0} %), {} packets, {} flows",
                done as f64 / 1e6,
                size as f64 / 1e6,
                done as f64 / size.max(1) as f64 * 100.0,
                a.totals.records,
                a.flows.len()
            );
            if tty {
                eprint!("\r{line}   ");
            } else {
                eprintln!("{line}");
            }
        }
    }
    if progress && tty {
        eprintln!();
    }
    let (flows, totals, events) = a.finish().map_err(out_err(&events_path))?;
    drop(events);
    let mut written = vec![events_path];
    let write = |name: &str, text: String, written: &mut Vec<PathBuf>| {
        let p = out_dir.join(name);
        std::fs::write(&p, text).map_err(out_err(&p))?;
        written.push(p);
        Ok::<(), TraceError>(())
    };
    write("flows.csv", output::flows_csv(&flows), &mut written)?;
    write(
        "series.csv",
        output::series_csv(&flows, bin_s),
        &mut written,
    )?;
    write(
        "trace_flows.csv",
        output::trace_flows_csv(&flows),
        &mut written,
    )?;
    let mut by_data: Vec<&Flow> = flows
        .iter()
        .filter(|f| f.dir[f.sender()].data_pkts > 0)
        .collect();
    by_data.sort_by_key(|f| std::cmp::Reverse(f.dir[f.sender()].wire_bytes));
    for f in by_data.into_iter().take(opts.max_svg) {
        let p = out_dir.join(format!("flow-{}.svg", f.id));
        svg::write_flow_svg(&p, f, bin_s).map_err(out_err(&p))?;
        written.push(p);
    }
    let _ = io::stderr().flush();
    Ok(Report {
        flows,
        totals,
        truncated,
        written,
    })
}

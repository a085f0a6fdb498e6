//! `ka-endpoint`: a Kick-Ass end host on a TUN device — bulk sender or
//! receiver over the userspace TCP/KA stack (DESIGN §8.3), or a path
//! prober (DESIGN §6.7). See `ka-endpoint --help`.

mod args;
mod probe;
mod report;

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser as _;
use ka_endpoint::driver::{KaStack, KaStream};
use ka_io::cli::{self, Payload, init_tracing};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use args::{Cli, Cmd, Common, RecvArgs, SendArgs};
use report::Role;

/// How long to let final FINs/ACKs go out before exiting.
const LINGER: Duration = Duration::from_secs(3);

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing();
    // The probe is a small synchronous loop of its own.
    let cmd = match cli.cmd {
        Cmd::Probe(a) => return probe::run(a),
        cmd => cmd,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async {
        match cmd {
            Cmd::Recv(a) => recv(a).await,
            Cmd::Send(a) => send(a).await,
            Cmd::Probe(a) => probe::run(a),
        }
    })
}

/// Logs the driver's counters (debug; a warning if packets were dropped).
fn log_driver_stats(stack: &KaStack) {
    let d = stack.stats();
    tracing::debug!(stats = ?d, lateness = %d.lateness_summary(), "driver counters");
    if d.input_dropped > 0 {
        tracing::warn!(
            dropped = d.input_dropped,
            "packets the kernel dropped because the TUN device's queue was full (the driver fell behind)"
        );
    }
}

/// A failure to open TUN device `tun`, with the privilege hint only when
/// the kernel said permission denied.
fn open_error(e: std::io::Error, tun: &str) -> anyhow::Error {
    let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
        " (needs root / CAP_NET_ADMIN)"
    } else {
        ""
    };
    anyhow::Error::new(e).context(format!("opening TUN device {tun}{hint}"))
}

fn open(common: &Common) -> anyhow::Result<KaStack> {
    anyhow::ensure!(
        common.device.addr.addr.is_ipv4() || common.mtu >= 1280,
        "--mtu {} is below 1280, the IPv6 minimum link MTU (RFC 8200 §5)",
        common.mtu
    );
    let kernel = common.device.kernel_side()?;
    let stack = KaStack::open_with(
        &common.device.tun,
        common.device.addr,
        kernel,
        common.driver_config(),
    )
    .map_err(|e| open_error(e, &common.device.tun))?;
    tracing::info!(
        dev = %common.device.tun,
        addr = %common.device.addr,
        kernel_side = ?kernel,
        ka = !common.no_ka,
        cc = ?common.cc,
        "stack up"
    );
    Ok(stack)
}

async fn recv(a: RecvArgs) -> anyhow::Result<()> {
    if let Some(ip) = a.listen.ip {
        anyhow::ensure!(
            ip == a.common.device.addr.addr,
            "--listen {ip} is not this endpoint's address (--addr {})",
            a.common.device.addr
        );
    }
    let stack = open(&a.common)?;
    let listener = stack.listen(a.listen.port)?;
    tracing::info!("listening on {}:{}", stack.local_addr(), a.listen.port);
    let json = a.common.json;
    let mut out = match &a.out {
        Some(p) => {
            Some(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?)
        }
        None => None,
    };
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut signal => {
                tracing::info!("interrupted; stopping");
                log_driver_stats(&stack);
                return Ok(());
            }
            accepted = listener.accept() => {
                let (stream, peer) = accepted.context("accepting a connection")?;
                tracing::info!(%peer, "accepted");
                if a.once {
                    tokio::select! {
                        r = serve(&stack, stream, json, out.as_mut()) => r?,
                        _ = &mut signal => {
                            tracing::info!("interrupted; stopping");
                            return Ok(());
                        }
                    }
                    if !stack.close(LINGER).await {
                        tracing::warn!("connection did not finish its close within {LINGER:?}");
                    }
                    log_driver_stats(&stack);
                    return Ok(());
                }
                let stack = stack.clone();
                tasks.spawn(async move {
                    if let Err(e) = serve(&stack, stream, json, None).await {
                        tracing::warn!(%peer, "flow failed: {e:#}");
                    }
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

/// Reads one connection to EOF (into `out` if given), then reports it.
async fn serve(
    stack: &KaStack,
    mut stream: KaStream,
    json: bool,
    mut out: Option<&mut std::fs::File>,
) -> anyhow::Result<()> {
    let (local, peer) = (stream.local_addr(), stream.peer_addr());
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = stream
            .read(&mut buf)
            .await
            .with_context(|| format!("reading from {peer} after {total} bytes"))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if let Some(f) = out.as_deref_mut() {
            f.write_all(buf.get(..n).unwrap_or(&[]))
                .context("writing --out")?;
        }
    }
    if let Some(f) = out {
        f.flush().context("writing --out")?;
    }
    let stats = stream.stats();
    let Some(flow) = stats.recv_summary() else {
        bail!("EOF from {peer} without a FIN record");
    };
    if flow.bytes != total {
        tracing::warn!(read = total, counted = flow.bytes, "byte counts differ");
    }
    report::print(json, Role::Recv, local, peer, &flow, &stack.stats());
    // closing our direction happens on drop (FIN)
    Ok(())
}

async fn send(a: SendArgs) -> anyhow::Result<()> {
    // A file that cannot be read fails before the device is touched or a
    // connection opened.
    let file = match &a.file {
        Some(path) => {
            Some(std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?)
        }
        None => None,
    };
    let stack = open(&a.common)?;
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let transfer = async {
        let tcp = a.common.driver_config().stack.tcp;
        let mut stream = tokio::time::timeout(a.connect_timeout, stack.connect_with(a.to, tcp))
            .await
            .map_err(|_| {
                anyhow::anyhow!("no connection to {} within {:?}", a.to, a.connect_timeout)
            })?
            .with_context(|| format!("connecting to {}", a.to))?;
        tracing::info!(local = %stream.local_addr(), peer = %a.to, ka = stream.ka_enabled(), xcp = stream.xcp_enabled(), "connected");
        let work = async {
            write_payload(&mut stream, &a, file).await?;
            // FIN; completes once everything is acknowledged
            stream.shutdown().await.context("closing the connection")?;
            anyhow::Ok(())
        };
        match a.timeout {
            Some(t) => tokio::time::timeout(t, work)
                .await
                .map_err(|_| anyhow::anyhow!("transfer did not finish within {t:?}"))??,
            None => work.await?,
        }
        anyhow::Ok(stream)
    };
    let stream = tokio::select! {
        r = transfer => r?,
        _ = &mut signal => bail!("interrupted before the transfer finished"),
    };
    let (local, peer): (SocketAddr, SocketAddr) = (stream.local_addr(), stream.peer_addr());
    let stats = stream.stats();
    let flow = stats
        .send_summary()
        .context("the transfer ended without our FIN being acknowledged")?;
    report::print(
        a.common.json,
        Role::Send,
        local,
        peer,
        &flow,
        &stack.stats(),
    );
    tracing::debug!(conn = ?stats.conn, "final counters");
    for mc in &stats.mode_changes {
        tracing::debug!(at = ?mc.at.saturating_duration_since(stats.opened), from = ?mc.from, to = ?mc.to,
            reason = ?mc.reason, "mode change");
    }
    drop(stream);
    tokio::select! {
        done = stack.close(LINGER) => if !done {
            tracing::debug!("peer did not close within {LINGER:?}");
        },
        _ = &mut signal => {}
    }
    log_driver_stats(&stack);
    Ok(())
}

async fn write_payload(
    stream: &mut KaStream,
    a: &SendArgs,
    file: Option<std::fs::File>,
) -> anyhow::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    if let (Some(mut f), Some(path)) = (file, &a.file) {
        loop {
            let n = f
                .read(&mut buf)
                .with_context(|| format!("reading {}", path.display()))?;
            if n == 0 {
                return Ok(());
            }
            stream
                .write_all(buf.get(..n).unwrap_or(&[]))
                .await
                .context("sending")?;
        }
    }
    let mut left = a.bytes.unwrap_or(0);
    let mut pattern = Payload::new();
    if a.static_payload {
        pattern.fill(&mut buf);
    }
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let chunk = buf.get_mut(..n).unwrap_or(&mut []);
        if !a.static_payload {
            pattern.fill(chunk);
        }
        stream.write_all(chunk).await.context("sending")?;
        left -= n as u64;
    }
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    cli::shutdown_signal(|e| tracing::warn!("cannot watch SIGTERM ({e}); stop with Ctrl-C")).await;
}

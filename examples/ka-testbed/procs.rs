//! Child processes and Ctrl-C.
//!
//! SIGINT and SIGTERM never kill the runner: a watcher thread turns them
//! into [`stopped`], which every wait loop checks, so the run unwinds
//! through the `Drop`s that stop the router, kill the host processes and
//! delete the namespaces and devices (`ka_router::shell::testbed::Testbed`).
//! A second Ctrl-C only repeats that cleanup is under way.

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

static STOP: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C (SIGINT) or SIGTERM has arrived.
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Fails with "interrupted" once [`stopped`].
pub fn check_stop() -> anyhow::Result<()> {
    if stopped() {
        bail!("interrupted (Ctrl-C or SIGTERM): stopping and cleaning up");
    }
    Ok(())
}

/// Installs the SIGINT/SIGTERM watcher (before anything is created).
pub fn watch_signals() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal watcher")?;
    let (ready_tx, ready_rx) = channel();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(async {
                use tokio::signal::unix::{SignalKind, signal};
                let (Ok(mut int), Ok(mut term)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                ) else {
                    let _ = ready_tx.send(false);
                    return;
                };
                let _ = ready_tx.send(true);
                loop {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                    if STOP.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "\nka-testbed: still cleaning up (namespaces, devices, processes)…"
                        );
                    } else {
                        eprintln!(
                            "\nka-testbed: interrupted; stopping everything and cleaning up…"
                        );
                    }
                }
            });
        })?;
    match ready_rx.recv_timeout(Duration::from_secs(5)) {
        Ok(true) => Ok(()),
        _ => bail!("cannot watch SIGINT/SIGTERM"),
    }
}

/// A child process whose stdout lines are collected on a thread and whose
/// stderr goes to a log file; killed on drop.
pub struct Child {
    name: String,
    child: std::process::Child,
    lines: Receiver<String>,
    /// Every stdout line seen so far.
    pub seen: Vec<String>,
    log: std::path::PathBuf,
}

impl Child {
    /// Starts `cmd` (stdin closed, stdout piped, stderr to `log`).
    pub fn spawn(name: &str, mut cmd: Command, log: &Path) -> anyhow::Result<Child> {
        let err = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {name}: {cmd:?}"))?;
        let out = child.stdout.take().context("child stdout")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Ok(Child {
            name: name.to_owned(),
            child,
            lines: rx,
            seen: Vec::new(),
            log: log.to_owned(),
        })
    }

    /// Collects the lines printed so far; `Some(status)` if the process has
    /// exited and its output is exhausted.
    pub fn drain(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        loop {
            match self.lines.try_recv() {
                Ok(l) => self.seen.push(l),
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => {
                    return Ok(Some(self.child.wait()?));
                }
            }
        }
    }

    /// Waits (at most `timeout`, and not past Ctrl-C) for a line containing
    /// `needle`.
    pub fn wait_line(&mut self, needle: &str, timeout: Duration) -> anyhow::Result<()> {
        let end = Instant::now() + timeout;
        let mut checked = 0;
        loop {
            let exited = self.drain()?;
            if self.seen.iter().skip(checked).any(|l| l.contains(needle)) {
                return Ok(());
            }
            checked = self.seen.len();
            if let Some(st) = exited {
                bail!(
                    "{} exited ({st}) before printing {needle:?}: {}",
                    self.name,
                    self.log_tail()
                );
            }
            check_stop()?;
            if Instant::now() >= end {
                bail!(
                    "{} did not print {needle:?} within {timeout:?}: {}",
                    self.name,
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The end of its stderr log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        format!("(log {}):\n{tail}", self.log.display())
    }

    /// Waits up to `grace` for it to exit by itself, then SIGTERM, then
    /// SIGKILL; collects the remaining output.
    pub fn finish(&mut self, grace: Duration) -> anyhow::Result<ExitStatus> {
        let end = Instant::now() + grace;
        while Instant::now() < end {
            if let Some(st) = self.child.try_wait()? {
                self.collect_rest();
                return Ok(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end {
            if let Some(st) = self.child.try_wait()? {
                self.collect_rest();
                return Ok(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        let st = self.child.wait()?;
        self.collect_rest();
        Ok(st)
    }

    fn collect_rest(&mut self) {
        // The reader thread ends at EOF, shortly after the exit.
        let end = Instant::now() + Duration::from_secs(2);
        while Instant::now() < end {
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(l) => self.seen.push(l),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! `ka-blast`: the UDP traffic source and sink of the forwarding benchmark
//! (`benches/forwarding/run.sh`). Not a test; std only.
//!
//! ```text
//! ka-blast send --to ADDR:PORT [--size BYTES] [--secs S] [--pps N]
//!     send datagrams of BYTES payload for S seconds, as fast as possible
//!     or at N datagrams per second
//! ka-blast recv --listen ADDR:PORT [--secs S] [--warmup S]
//!     after the first datagram, skip --warmup seconds, then count datagrams
//!     for --secs seconds; prints `pps=… mbps=… packets=… secs=…`
//! ka-blast recv --listen ADDR:PORT --until-idle
//!     count every datagram until none arrives for 0.5 s; prints `packets=…`
//! ```

use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: Option<T>) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .ok_or(format!("{name} needs a value"))?
            .parse()
            .map_err(|_| format!("bad value for {name}")),
        None => default.ok_or(format!("{name} is required")),
    }
}

fn send(args: &[String]) -> Result<(), String> {
    let to: SocketAddr = arg(args, "--to", None)?;
    let size: usize = arg(args, "--size", Some(64))?;
    let secs: f64 = arg(args, "--secs", Some(5.0))?;
    let pps: f64 = arg(args, "--pps", Some(0.0))?;
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    sock.connect(to).map_err(|e| e.to_string())?;
    let payload = vec![0x55u8; size];
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let (mut sent, mut failed) = (0u64, 0u64);
    let batch = if pps > 0.0 { 8 } else { 64 };
    while Instant::now() < end {
        if pps > 0.0 && (sent + failed) as f64 >= start.elapsed().as_secs_f64() * pps {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        for _ in 0..batch {
            // ENOBUFS when the device queue is full: the datagram is lost,
            // which is what an overloaded forwarder looks like.
            match sock.send(&payload) {
                Ok(_) => sent += 1,
                Err(_) => failed += 1,
            }
        }
    }
    println!("sent={sent} failed={failed} secs={secs}");
    Ok(())
}

fn recv(args: &[String]) -> Result<(), String> {
    let listen: SocketAddr = arg(args, "--listen", None)?;
    if args.iter().any(|a| a == "--until-idle") {
        return count_until_idle(listen);
    }
    let secs: f64 = arg(args, "--secs", Some(5.0))?;
    let warmup: f64 = arg(args, "--warmup", Some(0.5))?;
    let (sock, mut buf) = first_packet(listen)?;
    let start = Instant::now() + Duration::from_secs_f64(warmup);
    let end = start + Duration::from_secs_f64(secs);
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| e.to_string())?;
    let (mut packets, mut bytes) = (0u64, 0u64);
    loop {
        let r = sock.recv(&mut buf);
        let now = Instant::now();
        if now >= end {
            break;
        }
        match r {
            Ok(n) if now >= start => {
                packets += 1;
                bytes += n as u64;
            }
            _ => {}
        }
    }
    println!(
        "pps={:.0} mbps={:.1} packets={packets} secs={secs}",
        packets as f64 / secs,
        bytes as f64 * 8.0 / secs / 1e6
    );
    Ok(())
}

/// Binds `listen` and waits up to 10 s for the first packet; the socket
/// and a receive buffer.
fn first_packet(listen: SocketAddr) -> Result<(UdpSocket, Vec<u8>), String> {
    let sock = UdpSocket::bind(listen).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 65_536];
    sock.recv(&mut buf)
        .map_err(|e| format!("no traffic: {e}"))?;
    Ok((sock, buf))
}

fn count_until_idle(listen: SocketAddr) -> Result<(), String> {
    let (sock, mut buf) = first_packet(listen)?;
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(|e| e.to_string())?;
    let mut packets = 1u64;
    while sock.recv(&mut buf).is_ok() {
        packets += 1;
    }
    println!("packets={packets}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("send") => send(&args),
        Some("recv") => recv(&args),
        _ => Err(
            "usage: ka-blast send --to ADDR:PORT [--size B] [--secs S] [--pps N] | \
                  recv --listen ADDR:PORT [--secs S] [--warmup S] [--until-idle]"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ka-blast: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `ka-endpoint` refuses bad command lines before it touches a device or
//! the network, with a message that names the problem. Every case here
//! fails before a TUN device is opened, so none needs root or creates
//! anything; the device names are unique to this test.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ka-endpoint");

/// Runs `ka-endpoint ARGS`; returns (exit code, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("run ka-endpoint");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_fails_with(args: &[&str], needle: &str) {
    let (code, err) = run(args);
    assert!(
        code.is_some_and(|c| c != 0),
        "{args:?} should fail, exit {code:?}"
    );
    assert!(err.contains(needle), "{args:?}: {needle:?} not in:\n{err}");
    assert!(
        !err.contains("needs root"),
        "{args:?}: not a privilege problem:\n{err}"
    );
}

#[test]
fn a_prefix_that_would_take_the_default_route_is_refused() {
    assert_fails_with(
        &[
            "recv",
            "--tun",
            "kacli0",
            "--addr",
            "10.9.0.1/0",
            "--listen",
            "5001",
        ],
        "prefix /0 is too wide",
    );
}

#[test]
fn a_missing_file_fails_before_the_device_or_a_connection() {
    let dev = "kacli1";
    assert_fails_with(
        &[
            "send",
            "--tun",
            dev,
            "--addr",
            "10.9.0.1/30",
            "--to",
            "10.9.0.2:5001",
            "--file",
            "/nonexistent/ka-endpoint-test",
        ],
        "opening /nonexistent/ka-endpoint-test",
    );
    assert!(
        !Path::new("/sys/class/net").join(dev).exists(),
        "the device was created"
    );
}

#[test]
fn devices_and_mtus_that_cannot_work_are_named() {
    let common = ["--addr", "10.9.0.1/30", "--listen", "5001"];
    let with = |extra: &[&'static str]| {
        let mut a = vec!["recv"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&common);
        a
    };
    assert_fails_with(
        &with(&["--tun", "lo"]),
        "lo exists in this network namespace and is not a TUN device",
    );
    assert_fails_with(&with(&["--tun", ""]), "is empty");
    assert_fails_with(
        &with(&["--tun", "a-name-of-16-byt"]),
        "longer than 15 bytes",
    );
    assert_fails_with(
        &with(&["--tun", "kacli2", "--mtu", "0"]),
        "MTU 0 is below 576",
    );
    assert_fails_with(
        &[
            "recv",
            "--tun",
            "kacli3",
            "--addr",
            "fd00::1/64",
            "--mtu",
            "1000",
            "--listen",
            "5001",
        ],
        "below 1280",
    );
}

#[test]
fn probe_refuses_what_it_cannot_probe() {
    let base = ["probe", "--tun", "kacli9", "--to", "10.9.0.2:5001"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(extra).copied().collect()
    };
    assert_fails_with(
        &[
            "probe",
            "--tun",
            "kacli9",
            "--addr",
            "fd00::1/64",
            "--to",
            "[fd00::2]:5001",
        ],
        "the probe is IPv4 only",
    );
    assert_fails_with(
        &[
            "probe",
            "--tun",
            "kacli9",
            "--addr",
            "10.9.0.2/24",
            "--to",
            "10.9.0.2:5001",
        ],
        "is the prober's own address",
    );
    assert_fails_with(
        &with(&["--addr", "10.9.0.1/24", "--timeout", "100ms"]),
        "too short",
    );
    assert_fails_with(
        &with(&["--addr", "10.9.0.1/24", "--mtu", "500"]),
        "below 576",
    );
    assert!(!Path::new("/sys/class/net/kacli9").exists());
}

#[test]
fn probe_help_explains_every_finding() {
    let out = Command::new(BIN)
        .args(["probe", "--help"])
        .output()
        .expect("run ka-endpoint");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for finding in [
        "fragmented packets delivered",
        "leading-fragment length",
        "RTT indicators",
        "path MTU",
        "DF respected",
        "verdict",
        "EXIT STATUS",
    ] {
        assert!(help.contains(finding), "{finding:?} not in --help:\n{help}");
    }
}

#[test]
fn a_static_payload_is_not_a_file() {
    assert_fails_with(
        &[
            "send",
            "--tun",
            "kacli9",
            "--addr",
            "10.9.0.1/30",
            "--to",
            "10.9.0.2:5001",
            "--file",
            "/dev/null",
            "--static-payload",
        ],
        "cannot be used with",
    );
}

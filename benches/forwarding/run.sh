#!/usr/bin/env bash
# Forwarding benchmark: ka-router (unshaped, --rate 100gbit, full KA core)
# against a raw pass-through run through the same I/O loop
# (ka-router --passthrough: the same forwarding thread reads both devices and
# writes; the forwarder just hands packets back). Both run in one invocation,
# interleaved round by round, over the examples/testbed wiring: a UDP blaster
# (ka-blast) in namespace A, a sink in namespace B.
#
#   benches/forwarding/run.sh [--secs 4] [--size 64] [--rounds 3] [--pps 20000]
#
# Two measurements per mode and round:
#   capacity  the blaster sends as fast as it can for --secs; packets/s that
#             reach B. Wall-clock and host-dependent: on a shared 2-CPU box the
#             sender, the router and the receiving kernel compete for CPUs.
#   cost      the blaster offers a fixed --pps for --secs; the router's CPU
#             time (all threads, from /proc/PID/task/*/schedstat, kernel time
#             of its read/write calls included) per forwarded packet. Robust
#             to other load; 1e9 / cost is the single-core capacity.
# Prints medians over the rounds and the ratios ka-router / passthrough
# (capacity ratio, and cost_pt / cost_ka). Needs root. Not a test.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
source "$(dirname "$0")/measure.sh"
SECS=4 SIZE=64 ROUNDS=3 PPS=20000
parse_options "secs size rounds pps" "$@"

release_build -p ka-router --bin ka-router -p ka-benches --bin ka-blast
ROUTER="$TARGET/release/ka-router" BLAST="$TARGET/release/ka-blast"
SEND_SECS=$(awk -v s="$SECS" 'BEGIN { print s + 1.5 }')
OUT="$(mktemp -t ka-fwd-bench.XXXXXX)"
trap 'rm -f "$OUT"' EXIT
export BLAST SECS SIZE SEND_SECS PPS OUT

wired() { # $1 = pt (passthrough) | ka, $2 = script
    local extra=()
    [[ "$1" == pt ]] && extra=(--router-arg=--passthrough)
    "$ROOT/examples/testbed/testbed.sh" --router "$ROUTER" --rate 100gbit --queue 1000 \
        --name "kfb$$" "${extra[@]}" -- "$2" 2>/dev/null
}

compare pt passthrough ka ka-router

#!/usr/bin/env bash
# Forwarding benchmark: ka-router in bridge mode (--bridge, two veth pairs
# through AF_PACKET sockets) against ka-router in TUN mode (the
# examples/testbed wiring), both with the full KA core unshaped
# (--rate 100gbit), interleaved round by round in one invocation. A UDP
# blaster (ka-blast) in namespace A, a sink in namespace B.
#
#   benches/forwarding/bridge.sh [--secs 4] [--size 64] [--rounds 3] [--pps 20000]
#
# Two measurements per mode and round (as benches/forwarding/run.sh):
#   capacity  the blaster sends flat out for --secs; packets/s reaching B.
#   cost      the blaster offers a fixed --pps; the router's CPU time (all
#             threads, /proc/PID/task/*/schedstat) per forwarded packet.
# Prints medians and the ratios bridge / TUN (capacity, and cost_tun /
# cost_bridge). Needs root, iproute2 and ethtool. Not a test.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
source "$ROOT/scripts/lib/netns.sh"
source "$(dirname "$0")/measure.sh"
SECS=4 SIZE=64 ROUNDS=3 PPS=20000
parse_options "secs size rounds pps" "$@"
command -v ethtool >/dev/null || { echo "bridge.sh: needs ethtool" >&2; exit 1; }

release_build -p ka-router --bin ka-router -p ka-benches --bin ka-blast
ROUTER="$TARGET/release/ka-router" BLAST="$TARGET/release/ka-blast"
SEND_SECS=$(awk -v s="$SECS" 'BEGIN { print s + 1.5 }')
OUT="$(mktemp -t ka-bridge-bench.XXXXXX)"
N="kbb$$"
export BLAST SECS SIZE SEND_SECS PPS OUT

bridge_down() {
    if [[ -n "${BR_PID:-}" ]]; then stop_pid "$BR_PID"; fi
    BR_PID=""
    netns_del "${N}a" "${N}m" "${N}b"
}
trap 'bridge_down; rm -f "$OUT"' EXIT

# The bridge wiring: A (10.79.0.1 on ${N}a0) - ${N}a1 [M: ka-router --bridge] ${N}b1 - B (10.79.0.2 on ${N}b0).
bridge_up() {
    netns_add "${N}a" "${N}m" "${N}b"
    ip link add "${N}a0" netns "${N}a" type veth peer name "${N}a1" netns "${N}m"
    ip link add "${N}b0" netns "${N}b" type veth peer name "${N}b1" netns "${N}m"
    ip -n "${N}a" addr add 10.79.0.1/24 dev "${N}a0"
    ip -n "${N}b" addr add 10.79.0.2/24 dev "${N}b0"
    ip netns exec "${N}m" sysctl -qw "net.ipv6.conf.${N}a1.disable_ipv6=1" "net.ipv6.conf.${N}b1.disable_ipv6=1"
    ip -n "${N}a" link set "${N}a0" up; ip -n "${N}b" link set "${N}b0" up
    ip -n "${N}m" link set "${N}a1" up; ip -n "${N}m" link set "${N}b1" up
    ip netns exec "${N}a" ethtool -K "${N}a0" tx off >/dev/null
    ip netns exec "${N}b" ethtool -K "${N}b0" tx off >/dev/null
    ip netns exec "${N}m" "$ROUTER" --bridge "${N}a1" "${N}b1" --rate 100gbit --queue 1000 \
        >/dev/null 2>"$OUT.err" &
    BR_PID=$!
    for _ in $(seq 200); do grep -q "bridging Ethernet" "$OUT.err" 2>/dev/null && break; sleep 0.05; done
    # Resolve neighbours before measuring (ARP passes the bridge unshaped).
    ip netns exec "${N}a" ping -c 1 -W 2 10.79.0.2 >/dev/null
}

# $1 = tun|bridge, $2 = script run with A, B, ADDR_B, KA_ROUTER_PID set.
wired() {
    if [[ "$1" == tun ]]; then
        "$ROOT/examples/testbed/testbed.sh" --router "$ROUTER" --rate 100gbit --queue 1000 \
            --name "kbt$$" -- "$2" 2>/dev/null
    else
        bridge_up
        A="ip netns exec ${N}a" B="ip netns exec ${N}b" ADDR_B=10.79.0.2 KA_ROUTER_PID="$BR_PID" \
            bash -c "$2"
        bridge_down
    fi
}

compare tun TUN bridge bridge

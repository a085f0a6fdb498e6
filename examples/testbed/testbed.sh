#!/usr/bin/env bash
# A two-namespace testbed joined only by ka-router (DESIGN §8.2, mahimahi-style).
#
#   examples/testbed/testbed.sh [options] [-- COMMAND...]
#
# Creates namespaces $NS_A and $NS_B, two TUN devices, starts ka-router attached
# to both (A's device is --in, B's is --out), moves each device into its
# namespace and addresses it: A = 10.77.0.1/24, B = 10.77.0.2/24. The router is
# then the only wire between A and B.
#
# With a COMMAND, runs it (with bash -c, in the root namespace) and tears
# everything down when it exits; its exit status is the script's. Inside it,
# $A and $B are prefixes that run a command in a namespace ($NS_A, $NS_B,
# $ADDR_A, $ADDR_B and the router's $KA_ROUTER_PID are set too):
#
#   testbed.sh --rate 20mbit --delay 20ms -- '$B nc -l 5001 >/dev/null & sleep 1; $A ping -c 3 $ADDR_B'
#
# Without a COMMAND, prints how to use the namespaces and waits for Ctrl-C.
# Everything (router, namespaces, devices, the router's log unless
# KA_TESTBED_KEEP is set) is removed on exit, error or Ctrl-C.
#
# Options (rates in bit/s: 20mbit, 1gbit; durations with a unit: 20ms):
#   --rate RATE          forward (A -> B) capacity          [default 100mbit]
#   --reverse-rate RATE  reverse (B -> A) capacity          [default: --rate]
#   --delay DUR          one-way delay in each direction    [default 0]
#   --queue N            queue limit, packets               [default 1000]
#   --pcap FILE          capture everything the router writes
#   --metrics ADDR       Prometheus endpoint, e.g. 127.0.0.1:9100
#   --name NAME          name prefix (max 10 chars)         [default kt<pid>]
#   --router PATH        ka-router binary    [default: target/release/ka-router, built if missing]
#   --router-arg ARG     extra argument for the router (repeatable), e.g. --router-arg=--passthrough
#   -h, --help           this text
#
# Needs root, /dev/net/tun and iproute2.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
source "$ROOT/scripts/lib/netns.sh"

RATE=100mbit REVERSE_RATE="" DELAY=0 QUEUE=1000 PCAP="" METRICS="" NAME="kt$$" ROUTER=""
ROUTER_ARGS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rate) RATE="$2"; shift 2 ;;
        --reverse-rate) REVERSE_RATE="$2"; shift 2 ;;
        --delay) DELAY="$2"; shift 2 ;;
        --queue) QUEUE="$2"; shift 2 ;;
        --pcap) PCAP="$2"; shift 2 ;;
        --metrics) METRICS="$2"; shift 2 ;;
        --name) NAME="$2"; shift 2 ;;
        --router) ROUTER="$2"; shift 2 ;;
        --router-arg) ROUTER_ARGS+=("$2"); shift 2 ;;
        --router-arg=*) ROUTER_ARGS+=("${1#--router-arg=}"); shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        *) echo "testbed.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
CMD=("$@")

[[ $(id -u) -eq 0 ]] || { echo "testbed.sh: must run as root" >&2; exit 1; }
[[ -e /dev/net/tun ]] || { echo "testbed.sh: /dev/net/tun is missing" >&2; exit 1; }
[[ ${#NAME} -le 10 ]] || { echo "testbed.sh: --name must be at most 10 characters" >&2; exit 2; }

if [[ -z "$ROUTER" ]]; then
    ROUTER="$TARGET/release/ka-router"
    if [[ ! -x "$ROUTER" ]]; then
        echo "testbed.sh: building ka-router (release)…" >&2
        release_build -p ka-router --bin ka-router
    fi
fi

export NS_A="${NAME}a" NS_B="${NAME}b" DEV_A="${NAME}a" DEV_B="${NAME}b"
export ADDR_A=10.77.0.1 ADDR_B=10.77.0.2
export A="ip netns exec $NS_A" B="ip netns exec $NS_B"
ROUTER_PID="" LOG="$(mktemp -t ka-testbed-router.XXXXXX.log)"

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n "$ROUTER_PID" ]] && kill -0 "$ROUTER_PID" 2>/dev/null; then
        stop_pid "$ROUTER_PID"
        echo "--- router output ---" >&2
        grep -E '^(forward|reverse|pacing|pcap)' "$LOG" >&2 || tail -n 5 "$LOG" >&2
    fi
    if [[ -n "${KA_TESTBED_KEEP:-}" ]]; then echo "router log kept: $LOG" >&2; else rm -f "$LOG"; fi
    for ns_dev in "$NS_A:$DEV_A" "$NS_B:$DEV_B"; do
        ip -n "${ns_dev%%:*}" link del "${ns_dev##*:}" 2>/dev/null || true
        ip link del "${ns_dev##*:}" 2>/dev/null || true
    done
    netns_del "$NS_A" "$NS_B"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

netns_add "$NS_A" "$NS_B"
# No IPv6 from the root namespace's kernel while the router holds the
# devices here: moving one into its namespace takes it down, and a packet
# being written to it then fails. (No such file without IPv6: ignored.)
for dev in "$DEV_A" "$DEV_B"; do
    ip tuntap add dev "$dev" mode tun
    sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" 2>/dev/null || true
done

args=(--in "$DEV_A" --out "$DEV_B" --rate "$RATE" --delay "$DELAY" --queue "$QUEUE")
[[ -n "$REVERSE_RATE" ]] && args+=(--reverse-rate "$REVERSE_RATE")
[[ -n "$PCAP" ]] && args+=(--pcap "$PCAP")
[[ -n "$METRICS" ]] && args+=(--metrics "$METRICS")
"$ROUTER" "${args[@]}" "${ROUTER_ARGS[@]}" >"$LOG" 2>&1 &
ROUTER_PID=$!
export KA_ROUTER_PID=$ROUTER_PID

# The router has attached once both devices report carrier.
for _ in $(seq 400); do
    kill -0 "$ROUTER_PID" 2>/dev/null || { echo "testbed.sh: router exited:" >&2; cat "$LOG" >&2; exit 1; }
    [[ "$(cat /sys/class/net/$DEV_A/carrier 2>/dev/null)" == 1 && \
       "$(cat /sys/class/net/$DEV_B/carrier 2>/dev/null)" == 1 ]] && break
    sleep 0.05
done
[[ "$(cat /sys/class/net/$DEV_A/carrier 2>/dev/null)" == 1 ]] || { echo "testbed.sh: router did not attach" >&2; exit 1; }

ip link set "$DEV_A" netns "$NS_A"
ip link set "$DEV_B" netns "$NS_B"
ip -n "$NS_A" addr add "$ADDR_A/24" dev "$DEV_A"
ip -n "$NS_B" addr add "$ADDR_B/24" dev "$DEV_B"
# A device's kernel sends IPv6 (MLD, neighbour discovery) the moment it goes
# up; the router would write that to the other device while it is still down
# and count a write error. IPv6 stays off until both are up.
v6() { ip netns exec "$NS_A" sysctl -qw "net.ipv6.conf.$DEV_A.disable_ipv6=$1"
       ip netns exec "$NS_B" sysctl -qw "net.ipv6.conf.$DEV_B.disable_ipv6=$1"; }
v6 1
ip -n "$NS_A" link set "$DEV_A" mtu 1500 up
ip -n "$NS_B" link set "$DEV_B" mtu 1500 up
v6 0

echo "testbed up: $NS_A ($ADDR_A) <-> ka-router (rate $RATE, delay $DELAY, queue $QUEUE) <-> $NS_B ($ADDR_B)" >&2
if [[ ${#CMD[@]} -gt 0 ]]; then
    bash -c "${CMD[*]}"
else
    cat >&2 <<EOF
  run commands with:  ip netns exec $NS_A …   /   ip netns exec $NS_B …
  e.g. KA signals need DF clear:  ip netns exec $NS_A sysctl -w net.ipv4.ip_no_pmtu_disc=1
  router log: $LOG
  Ctrl-C tears everything down.
EOF
    while kill -0 "$ROUTER_PID" 2>/dev/null; do sleep 1; done
    echo "testbed.sh: router exited" >&2
    exit 1
fi

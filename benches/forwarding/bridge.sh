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
SECS=4 SIZE=64 ROUNDS=3 PPS=20000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --secs) SECS="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --pps) PPS="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bridge.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
command -v ethtool >/dev/null || { echo "bridge.sh: needs ethtool" >&2; exit 1; }

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release -p ka-router --bin ka-router -p ka-benches --bin ka-blast >&2)
ROUTER="$TARGET/release/ka-router" BLAST="$TARGET/release/ka-blast"
SEND_SECS=$(awk -v s="$SECS" 'BEGIN { print s + 1.5 }')
OUT="$(mktemp -t ka-bridge-bench.XXXXXX)"
N="kbb$$"
export BLAST SECS SIZE SEND_SECS PPS OUT

bridge_down() {
    [[ -n "${BR_PID:-}" ]] && kill "$BR_PID" 2>/dev/null && wait "$BR_PID" 2>/dev/null || true
    BR_PID=""
    for x in a m b; do ip netns del "$N$x" 2>/dev/null || true; done
}
trap 'bridge_down; rm -f "$OUT"' EXIT

# The bridge wiring: A (10.79.0.1 on ${N}a0) - ${N}a1 [M: ka-router --bridge] ${N}b1 - B (10.79.0.2 on ${N}b0).
bridge_up() {
    for x in a m b; do ip netns add "$N$x"; ip -n "$N$x" link set lo up; done
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

capacity() {
    wired "$1" '
        $B "$BLAST" recv --listen $ADDR_B:9000 --secs $SECS --warmup 0.5 > "$OUT" &
        sleep 0.3
        $A "$BLAST" send --to $ADDR_B:9000 --size $SIZE --secs $SEND_SECS > /dev/null
        wait; cat "$OUT"' | sed -n 's/^pps=\([0-9]*\).*/\1/p'
}

cost() {
    wired "$1" '
        cpu() { cat /proc/$KA_ROUTER_PID/task/*/schedstat | awk "{ s += \$1 } END { print s }"; }
        $B "$BLAST" recv --listen $ADDR_B:9000 --until-idle > "$OUT" &
        sleep 0.3
        c0=$(cpu)
        $A "$BLAST" send --to $ADDR_B:9000 --size $SIZE --secs $SECS --pps $PPS > /dev/null
        wait
        c1=$(cpu)
        n=$(sed -n "s/^packets=//p" "$OUT")
        awk -v c="$((c1 - c0))" -v n="$n" "BEGIN { if (n > 0) printf \"%.0f\\n\", c / n }"'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

TUN_CAP=() BR_CAP=() TUN_COST=() BR_COST=()
for r in $(seq "$ROUNDS"); do
    TUN_CAP+=("$(capacity tun)"); BR_CAP+=("$(capacity bridge)")
    TUN_COST+=("$(cost tun)"); BR_COST+=("$(cost bridge)")
    echo "round $r: capacity tun ${TUN_CAP[-1]:-?} / bridge ${BR_CAP[-1]:-?} pkt/s;" \
         "cost tun ${TUN_COST[-1]:-?} / bridge ${BR_COST[-1]:-?} ns/pkt" >&2
done
tc=$(printf '%s\n' "${TUN_CAP[@]}" | median); bc=$(printf '%s\n' "${BR_CAP[@]}" | median)
tk=$(printf '%s\n' "${TUN_COST[@]}" | median); bk=$(printf '%s\n' "${BR_COST[@]}" | median)
echo "payload ${SIZE} B, ${SECS} s per run, ${ROUNDS} rounds, medians (load avg: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "capacity   TUN ${tc} pkt/s   bridge ${bc} pkt/s"
echo "cost @${PPS} pkt/s   TUN ${tk} ns/pkt   bridge ${bk} ns/pkt"
awk -v a="$bc" -v b="$tc" 'BEGIN { if (b > 0) printf "capacity ratio bridge / TUN: %.3f\n", a / b }'
awk -v a="$bk" -v b="$tk" 'BEGIN { if (a > 0) printf "cost ratio TUN / bridge:     %.3f\n", b / a }'

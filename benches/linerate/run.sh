#!/usr/bin/env bash
# Line rate: Linux kernel CUBIC (DF clear) through the ka gateway against the
# kernel's own forwarding between namespaces, in interleaved rounds.
#
#   benches/linerate/run.sh [--rounds N] [--secs S] [--router PATH]
#                           [--df clear|set] [MODE ...]
#
# Each round runs every MODE once (a fresh topology each time, one iperf3
# flow of S seconds, `-C cubic`, DF cleared on the sender unless --df set:
# Linux's default, path MTU discovery) and records the
# receiver's goodput and, for ka-router, the router's CPU time per Gbit
# (all its threads, /proc/PID/task/*/schedstat). At the end: the median of
# each mode and its ratio to `kernel` measured in the same run.
#
# MODE (default: all but ka-packet):
#   kernel            veth → namespace with ip_forward → veth, offloads on
#                     (the machine's limit)
#   kernel-nooffload  the same with TSO/GSO/GRO off (1500-byte packets)
#   passthrough       ka-router --passthrough --offload --write-threads
#   none              ka-router --signal none --offload --write-threads
#   ka-rtt            ka-router (KA) --stamp-every rtt --offload --write-threads
#   ka-packet         ka-router (KA) --stamp-every packet --offload --write-threads
#   plain             ka-router (KA, every packet stamped), no offload, one thread
#                     (the gateway before line-rate work)
# The gateway runs at --rate 100gbit (never the limit) with a 4000-packet
# queue, through examples/testbed/testbed.sh.
#
# Needs root, iproute2, ethtool, iperf3 and a release ka-router (built if
# missing). Absolute rates depend on the host's load: compare the ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=3 SECS=8 ROUTER=target/release/ka-router DF=clear
usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --secs) SECS=$2; shift 2 ;;
        --router) ROUTER=$2; shift 2 ;;
        --df) DF=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) break ;;
    esac
done
MODES=("$@")
case "$DF" in
    clear) NO_PMTU=1 ;;
    set) NO_PMTU=0 ;;
    *) echo "run.sh: --df takes clear or set, not $DF" >&2; exit 2 ;;
esac
[[ ${#MODES[@]} -gt 0 ]] || MODES=(kernel kernel-nooffload passthrough none ka-rtt)
[[ $(id -u) -eq 0 ]] || { echo "run.sh: must run as root" >&2; exit 1; }
for t in iperf3 ethtool ip; do
    command -v $t >/dev/null || { echo "run.sh: needs $t" >&2; exit 1; }
done
[[ -x $ROUTER ]] || cargo build --release -q -p ka-router --features cli
RES=$(mktemp -t linerate.XXXXXX)
trap 'rm -f "$RES" "$RES.err"' EXIT

# iperf3 in namespace A towards ADDR in namespace B; prints Gbit/s.
iperf() { # NS_A NS_B ADDR
    ip netns exec "$2" iperf3 -s -1 -D -p 5201 >/dev/null 2>&1
    sleep 0.5
    ip netns exec "$1" iperf3 -c "$3" -p 5201 -C cubic -t "$SECS" -J 2>/dev/null |
        python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))'
}

kernel() { # OFFLOAD(on|off)
    local n="lr$$" a b m
    a="${n}a" b="${n}b" m="${n}m"
    # (this runs in a subshell: its trap cleans the namespaces only)
    # shellcheck disable=SC2064
    trap "ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; ip netns del $m 2>/dev/null" EXIT
    ip netns add "$a"; ip netns add "$b"; ip netns add "$m"
    ip link add "${n}a0" netns "$a" type veth peer name "${n}a1" netns "$m"
    ip link add "${n}b0" netns "$b" type veth peer name "${n}b1" netns "$m"
    ip -n "$a" addr add 10.79.1.1/24 dev "${n}a0"; ip -n "$m" addr add 10.79.1.2/24 dev "${n}a1"
    ip -n "$b" addr add 10.79.2.1/24 dev "${n}b0"; ip -n "$m" addr add 10.79.2.2/24 dev "${n}b1"
    for x in "$a:${n}a0" "$m:${n}a1" "$m:${n}b1" "$b:${n}b0"; do
        ip -n "${x%%:*}" link set "${x#*:}" up
        if [[ $1 == off ]]; then
            ip netns exec "${x%%:*}" ethtool -K "${x#*:}" tso off gso off gro off >/dev/null 2>&1 || true
        fi
    done
    ip -n "$a" route add default via 10.79.1.2; ip -n "$b" route add default via 10.79.2.2
    ip netns exec "$m" sysctl -qw net.ipv4.ip_forward=1
    ip netns exec "$a" sysctl -qw net.ipv4.ip_no_pmtu_disc=$NO_PMTU
    local g
    g=$(iperf "$a" "$b" 10.79.2.1)
    ip netns del "$a"; ip netns del "$b"; ip netns del "$m"
    trap - EXIT
    echo "$g -"
}

router() { # ROUTER_ARG...
    local args=()
    for x in "$@"; do args+=(--router-arg="$x"); done
    SECS=$SECS NO_PMTU=$NO_PMTU examples/testbed/testbed.sh --router "$ROUTER" --rate 100gbit --queue 4000 "${args[@]}" -- '
        cpu() { cat /proc/$KA_ROUTER_PID/task/*/schedstat | awk "{ s += \$1 } END { printf \"%.0f\\n\", s }"; }
        $A sysctl -qw net.ipv4.ip_no_pmtu_disc=$NO_PMTU
        $B iperf3 -s -1 -D -p 5201 >/dev/null 2>&1; sleep 0.5
        c0=$(cpu)
        g=$($A iperf3 -c $ADDR_B -p 5201 -C cubic -t $SECS -J 2>/dev/null |
            python3 -c "import json,sys; print(\"%.3f\" % (json.load(sys.stdin)[\"end\"][\"sum_received\"][\"bits_per_second\"]/1e9))")
        c1=$(cpu)
        # CPU seconds per Gbit moved: router CPU ns / (Gbit/s · s).
        awk -v g="$g" -v c="$((c1 - c0))" -v s="$SECS" "BEGIN { printf \"%s %.3f\\n\", g, (g > 0 ? c / 1e9 / (g * s) : 0) }"
    ' 2>"$RES.err" | tail -n 1
}

measure() {
    case "$1" in
        kernel) kernel on ;;
        kernel-nooffload) kernel off ;;
        passthrough) router --passthrough --offload --write-threads ;;
        none) router --signal none --offload --write-threads ;;
        ka-rtt) router --stamp-every rtt --offload --write-threads ;;
        ka-packet) router --stamp-every packet --offload --write-threads ;;
        plain) router ;;
        *) echo "run.sh: unknown mode $1" >&2; exit 2 ;;
    esac
}

for r in $(seq "$ROUNDS"); do
    for m in "${MODES[@]}"; do
        out=$(measure "$m") || { echo "run.sh: $m failed in round $r (counted as 0)" >&2; out="0 -"; }
        [[ -n $out ]] || out="0 -"
        echo "$m $out" >> "$RES"
        echo "round $r/$ROUNDS $m: ${out% *} Gbit/s, router CPU ${out#* } s/Gbit" >&2
    done
done

echo "line rate: ${ROUNDS} rounds of ${SECS} s, DF $DF, medians (load avg: $(cut -d' ' -f1-3 /proc/loadavg))"
python3 - "$RES" <<'EOF'
import sys, statistics
rows = {}
order = []
for line in open(sys.argv[1]):
    m, g, c = line.split()
    if m not in rows:
        order.append(m)
    rows.setdefault(m, []).append((float(g), None if c == "-" else float(c)))
base = statistics.median(g for g, _ in rows["kernel"]) if "kernel" in rows else None
print(f"{'mode':<18} {'Gbit/s':>8} {'x kernel':>9} {'CPU s/Gbit':>11}")
for m in order:
    g = statistics.median(x for x, _ in rows[m])
    cs = [c for _, c in rows[m] if c is not None]
    c = f"{statistics.median(cs):11.3f}" if cs else f"{'-':>11}"
    r = f"{g / base:9.3f}" if base else f"{'-':>9}"
    print(f"{m:<18} {g:8.2f} {r} {c}")
EOF

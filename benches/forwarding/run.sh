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
SECS=4 SIZE=64 ROUNDS=3 PPS=20000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --secs) SECS="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --pps) PPS="$2"; shift 2 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release -p ka-router --bin ka-router -p ka-benches --bin ka-blast >&2)
ROUTER="$TARGET/release/ka-router" BLAST="$TARGET/release/ka-blast"
SEND_SECS=$(awk -v s="$SECS" 'BEGIN { print s + 1.5 }')
OUT="$(mktemp -t ka-fwd-bench.XXXXXX)"
trap 'rm -f "$OUT"' EXIT
export BLAST SECS SIZE SEND_SECS PPS OUT

testbed() { # $1 = passthrough|ka, $2 = command
    local extra=()
    [[ "$1" == passthrough ]] && extra=(--router-arg=--passthrough)
    "$ROOT/examples/testbed/testbed.sh" --router "$ROUTER" --rate 100gbit --queue 1000 \
        --name "kfb$$" "${extra[@]}" -- "$2" 2>/dev/null
}

capacity() { # prints packets/s reaching B
    testbed "$1" '
        $B "$BLAST" recv --listen $ADDR_B:9000 --secs $SECS --warmup 0.5 > "$OUT" &
        sleep 0.3
        $A "$BLAST" send --to $ADDR_B:9000 --size $SIZE --secs $SEND_SECS > /dev/null
        wait; cat "$OUT"' | sed -n 's/^pps=\([0-9]*\).*/\1/p'
}

cost() { # prints router CPU ns per forwarded packet
    testbed "$1" '
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

PT_CAP=() KA_CAP=() PT_COST=() KA_COST=()
for r in $(seq "$ROUNDS"); do
    PT_CAP+=("$(capacity passthrough)"); KA_CAP+=("$(capacity ka)")
    PT_COST+=("$(cost passthrough)"); KA_COST+=("$(cost ka)")
    echo "round $r: capacity pt ${PT_CAP[-1]:-?} / ka ${KA_CAP[-1]:-?} pkt/s;" \
         "cost pt ${PT_COST[-1]:-?} / ka ${KA_COST[-1]:-?} ns/pkt" >&2
done
pc=$(printf '%s\n' "${PT_CAP[@]}" | median); kc=$(printf '%s\n' "${KA_CAP[@]}" | median)
pk=$(printf '%s\n' "${PT_COST[@]}" | median); kk=$(printf '%s\n' "${KA_COST[@]}" | median)
echo "payload ${SIZE} B, ${SECS} s per run, ${ROUNDS} rounds, medians (load avg: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "capacity   passthrough ${pc} pkt/s   ka-router ${kc} pkt/s"
echo "cost @${PPS} pkt/s   passthrough ${pk} ns/pkt   ka-router ${kk} ns/pkt"
awk -v a="$kc" -v b="$pc" 'BEGIN { if (b > 0) printf "capacity ratio ka-router / passthrough: %.3f\n", a / b }'
awk -v a="$kk" -v b="$pk" 'BEGIN { if (a > 0) printf "cost ratio passthrough / ka-router:     %.3f\n", b / a }'

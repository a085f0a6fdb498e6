# The measurements both forwarding benchmarks (run.sh, bridge.sh) take, and
# their report. Sourced after the script has defined
#   wired MODE SCRIPT   runs SCRIPT (bash) with the router set up in MODE,
#                       A, B, ADDR_B and KA_ROUTER_PID set
# and exported BLAST, SECS, SIZE, SEND_SECS, PPS and OUT.

# capacity MODE: packets/s reaching B while the blaster sends flat out.
capacity() {
    wired "$1" '
        $B "$BLAST" recv --listen $ADDR_B:9000 --secs $SECS --warmup 0.5 > "$OUT" &
        sleep 0.3
        $A "$BLAST" send --to $ADDR_B:9000 --size $SIZE --secs $SEND_SECS > /dev/null
        wait; cat "$OUT"' | sed -n 's/^pps=\([0-9]*\).*/\1/p'
}

# cost MODE: the router's CPU ns per forwarded packet at a fixed --pps.
cost() {
    wired "$1" '
        cpu() { cat /proc/$KA_ROUTER_PID/task/*/schedstat | awk "{ s += \$1 } END { printf \"%.0f\\n\", s }"; }
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

# compare BASE BASE_NAME NEW NEW_NAME: ROUNDS rounds of both measurements
# in modes BASE and NEW (interleaved, progress on stderr), then the
# medians and the ratios NEW / BASE (capacity) and BASE / NEW (cost), the
# modes called BASE_NAME and NEW_NAME.
compare() {
    local base=$1 base_name=$2 new=$3 new_name=$4 r bc nc bk nk
    local base_cap=() new_cap=() base_cost=() new_cost=()
    for r in $(seq "$ROUNDS"); do
        base_cap+=("$(capacity "$base")"); new_cap+=("$(capacity "$new")")
        base_cost+=("$(cost "$base")"); new_cost+=("$(cost "$new")")
        echo "round $r: capacity $base ${base_cap[-1]:-?} / $new ${new_cap[-1]:-?} pkt/s;" \
             "cost $base ${base_cost[-1]:-?} / $new ${new_cost[-1]:-?} ns/pkt" >&2
    done
    bc=$(printf '%s\n' "${base_cap[@]}" | median); nc=$(printf '%s\n' "${new_cap[@]}" | median)
    bk=$(printf '%s\n' "${base_cost[@]}" | median); nk=$(printf '%s\n' "${new_cost[@]}" | median)
    echo "payload ${SIZE} B, ${SECS} s per run, ${ROUNDS} rounds, medians (load avg: $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "capacity   $base_name ${bc} pkt/s   $new_name ${nc} pkt/s"
    echo "cost @${PPS} pkt/s   $base_name ${bk} ns/pkt   $new_name ${nk} ns/pkt"
    awk -v a="$nc" -v b="$bc" -v n="$new_name / $base_name" \
        'BEGIN { if (b > 0) printf "capacity ratio %s: %.3f\n", n, a / b }'
    awk -v a="$nk" -v b="$bk" -v n="$base_name / $new_name" \
        'BEGIN { if (a > 0) printf "cost ratio %s:     %.3f\n", n, b / a }'
}

#!/usr/bin/env bash
# The RWM seed's experiment (Table I, Fig. 3) in ka-sim at the seed's
# 1 Gbit/s: the same grid as examples/rwm/run.sh, on the real router and
# endpoint cores in virtual time.
#
#   examples/rwm/sim.sh [--rate-mbps 1000] [--pkts 690608] [--rtts "20 60 100 140"]
#                       [--flows "1 4"] [--out results.txt] [--jobs 2]
#
# Per RTT, flow count and variant (none / minus / exact / plus, as in
# run.sh): a dumbbell at RATE with a drop-tail queue of 50 ms (4167 packets
# at 1 Gbit/s), 10 Gbit/s access links (the seed's server site), 64 MiB
# endpoint buffers, N kernel-like CUBIC transfers of PKTS full packets
# (690 608 · 1448 B = 1 GB, the seed's file) starting together, and on
# the receivers' router RWM (`rwm = { delta = … }`) or nothing. The RTT
# "ping" of Table I is the base RTT plus the bottleneck's mean queueing
# delay in each 10 ms bin while all flows run (the simulator has no ICMP).
# Writes the same result lines as run.sh and prints examples/rwm/report.py.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
RATE_MBPS=1000 PKTS=690608 RTTS="20 60 100 140" FLOWS="1 4" OUT="" JOBS=2
parse_options "rate-mbps pkts rtts flows out jobs" "$@"
DIR="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$(mktemp -t ka-rwm-sim.XXXXXX.txt)}"
WORK="$(mktemp -d -t ka-rwm-sim.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
release_build -p ka-sim --bin ka-sim
QUEUE=$(( RATE_MBPS * 1000000 / 8 / 20 / 1500 ))
export SIM="$TARGET/release/ka-sim" WORK RATE_MBPS PKTS QUEUE

one() { # rtt flows variant
    local rtt=$1 flows=$2 variant=$3 rwm=""
    case $variant in
        exact) rwm="rwm = { delta = 0.0 }" ;;
        minus) rwm="rwm = { delta = -0.1 }" ;;
        plus) rwm="rwm = { delta = 0.1 }" ;;
    esac
    local d="$WORK/$rtt-$flows-$variant"
    mkdir -p "$d"
    # Long enough for the slowest case; flows end on their own.
    local dur=$(( 20 + PKTS * 1500 * 8 * flows * 3 / (RATE_MBPS * 1000000) ))
    cat > "$d/scenario.toml" <<EOF
name = "rwm-$rtt-$flows-$variant"
variant = "$variant"
duration_s = $dur.0
bin_s = 0.01

[tcp]
buffer_bytes = 67108864

[topology]
kind = "dumbbell"
capacity_mbps = $RATE_MBPS.0
rtt_ms = $rtt.0
queue_pkts = $QUEUE
port = "droptail"
access = { rate_mbps = 10000.0 }
$rwm

[[group]]
name = "cubic"
kind = "tcp-cubic"
count = $flows
[group.workload]
type = "long-lived"
size_pkts = $PKTS
EOF
    "$SIM" run "$d/scenario.toml" --out "$d" > "$d/stdout" 2>&1
    python3 - "$d" "$rtt" "$flows" "$variant" > "$d/result.txt" <<'PY'
import csv, sys
d, rtt, flows, variant = sys.argv[1:]
rows = list(csv.DictReader(open(f"{d}/flows.csv")))
fcts = [float(r["fct_s"]) if r["fct_s"] else float("nan") for r in rows]
starts = [float(r["start_s"]) for r in rows]
ends = [float(r["end_s"]) if r["end_s"] else float("inf") for r in rows]
for i, (f, r) in enumerate(zip(fcts, rows)):
    print(f"flow {rtt} {flows} {variant} 1 {i} {f:.4f} {r['size_bytes']}")
lo, hi = max(starts) + 0.2, min(ends)
samples = []
for r in csv.DictReader(open(f"{d}/series.csv")):
    if r["metric"] == "sojourn_ms" and r["entity"] == "port:bottleneck":
        t = float(r["time_s"])
        if lo < t <= hi:
            samples.append(float(rtt) + float(r["value"]))
print(f"ping {rtt} {flows} {variant} 1 {float(rtt):.3f} " + " ".join(f"{x:.3f}" for x in samples))
PY
    echo "$rtt ms, $flows flow(s), $variant: $(grep -c . "$d/flows.csv") rows" >&2
}
export -f one
for rtt in $RTTS; do
    for flows in $FLOWS; do
        for variant in none exact minus plus; do
            echo "$rtt $flows $variant"
        done
    done
done | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
cat "$WORK"/*/result.txt > "$OUT"
python3 "$DIR/report.py" "$OUT"

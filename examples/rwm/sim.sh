#!/usr/bin/env bash
# The RWM seed's experiment (§IV, Table I, Figs 3 and 5) in ka-sim: the
# same grid as examples/rwm/run.sh, on the real router and endpoint cores
# in virtual time, one run per seed.
#
#   examples/rwm/sim.sh [--rate-mbps 200] [--pkts RATE·8s] [--seeds 50] [--first-seed 1]
#                       [--rtts "20 60 100 140"] [--flows "1 4"]
#                       [--variants "none exact minus plus"]
#                       [--jitter 3ms] [--jitter-on data|acks|both]
#                       [--queue-ms 50] [--out results.txt] [--svg DIR] [--jobs 2]
#
# Per RTT, flow count, variant (none / minus / exact / plus, as in run.sh)
# and seed FIRST_SEED..FIRST_SEED+SEEDS-1 (so a run can add seeds to an
# earlier one): a dumbbell at RATE with a drop-tail queue of
# QUEUE_MS (833 packets at 200 Mbit/s, as run.sh), 10 Gbit/s access links (the
# seed's server site), 60 MB endpoint buffers, N CUBIC transfers with
# Linux's HyStart and 200 ms minimum RTO (the seed's senders run Linux's
# CUBIC; ka-sim's defaults are RFC 6298's 1 s and no HyStart) of PKTS
# full packets starting together (default 8 s of RATE:
# the seed's 1 GB at its 1 Gbit/s; 138 122 · 1448 B = 200 MB at the
# default rate), the bottleneck's data-direction delay line drawing each
# packet's delay from its one-way delay ± JITTER (`impair = { jitter }`,
# DESIGN §3.10, the same stage as ka-router --jitter; the seed draws
# differ per seed), and on the receivers' router RWM
# (`rwm = { delta = … }`) or nothing. The RTT "ping" of Table I is the
# base RTT plus the bottleneck's mean queueing delay in each 10 ms bin
# while all flows run (the simulator has no ICMP; the jitter, zero-mean,
# is not in it). Writes the same result lines as run.sh (the seed in the
# round field), appending each run's lines to the results file as it
# ends (as run.sh does: a cut-short run keeps what it measured, and a run
# with --first-seed adds to an earlier file), and prints
# examples/rwm/report.py.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
RATE_MBPS=200 PKTS="" SEEDS=50 FIRST_SEED=1 RTTS="20 60 100 140" FLOWS="1 4" OUT="" SVG="" JOBS=2
VARIANTS="none exact minus plus" JITTER=3ms JITTER_ON=data QUEUE_MS=50
parse_options "rate-mbps pkts seeds first-seed rtts flows variants jitter jitter-on queue-ms out svg jobs" "$@"
DIR="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$(mktemp -t ka-rwm-sim.XXXXXX.txt)}"
WORK="$(mktemp -d -t ka-rwm-sim.XXXXXX)"
# Stopped early (Ctrl-C, kill): stop the workers too, not only the script.
kill_tree() { # pid: its descendants, deepest first
    local child
    for child in $(pgrep -P "$1" || true); do
        kill_tree "$child"
        kill "$child" 2>/dev/null || true
    done
}
trap 'kill_tree $$; rm -rf "$WORK"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
release_build -p ka-sim --bin ka-sim
# 8 s of the link in 1448-byte payloads (run.sh: RATE bytes).
PKTS="${PKTS:-$(( RATE_MBPS * 1000000 / 1448 ))}"
QUEUE=$(( RATE_MBPS * 1000000 / 8 * QUEUE_MS / 1000 / 1500 ))
case $JITTER_ON in
    data) IMPAIR="impair = { jitter = \"$JITTER\" }" ;;
    acks) IMPAIR="reverse_impair = { jitter = \"$JITTER\" }" ;;
    both) IMPAIR="impair = { jitter = \"$JITTER\" }
reverse_impair = { jitter = \"$JITTER\" }" ;;
    *) echo "sim.sh: --jitter-on data|acks|both" >&2; exit 2 ;;
esac
mkdir -p "$(dirname "$OUT")" && touch "$OUT"
export SIM="$TARGET/release/ka-sim" WORK RATE_MBPS PKTS QUEUE IMPAIR OUT

one() { # rtt flows variant seed
    local rtt=$1 flows=$2 variant=$3 seed=$4 rwm=""
    case $variant in
        none) ;;
        exact) rwm="rwm = { delta = 0.0 }" ;;
        minus) rwm="rwm = { delta = -0.1 }" ;;
        plus) rwm="rwm = { delta = 0.1 }" ;;
        *) echo "sim.sh: unknown variant $variant" >&2; exit 2 ;;
    esac
    local d="$WORK/$rtt-$flows-$variant-$seed"
    mkdir -p "$d"
    # Long enough for the slowest case; flows end on their own.
    local dur=$(( 20 + PKTS * 1500 * 8 * flows * 3 / (RATE_MBPS * 1000000) ))
    cat > "$d/scenario.toml" <<TOML
name = "rwm-$rtt-$flows-$variant"
variant = "$variant"
duration_s = $dur.0
bin_s = 0.01

[tcp]
buffer_bytes = 62914560
hystart = true
min_rto_ms = 200.0

[topology]
kind = "dumbbell"
capacity_mbps = $RATE_MBPS.0
rtt_ms = $rtt.0
queue_pkts = $QUEUE
port = "droptail"
access = { rate_mbps = 10000.0 }
$IMPAIR
$rwm

[[group]]
name = "cubic"
kind = "tcp-cubic"
count = $flows
[group.workload]
type = "long-lived"
size_pkts = $PKTS
TOML
    "$SIM" run "$d/scenario.toml" --out "$d" --seed "$seed" > "$d/stdout" 2>&1
    python3 - "$d" "$rtt" "$flows" "$variant" "$seed" > "$d/result.txt" <<'PY'
import csv, sys
d, rtt, flows, variant, seed = sys.argv[1:]
rows = list(csv.DictReader(open(f"{d}/flows.csv")))
fcts = [float(r["fct_s"]) if r["fct_s"] else float("nan") for r in rows]
starts = [float(r["start_s"]) for r in rows]
ends = [float(r["end_s"]) if r["end_s"] else float("inf") for r in rows]
for i, (f, r) in enumerate(zip(fcts, rows)):
    print(f"flow {rtt} {flows} {variant} {seed} {i} {f:.4f} {r['size_bytes']}")
lo, hi = max(starts) + 0.2, min(ends)
samples = []
for r in csv.DictReader(open(f"{d}/series.csv")):
    if r["metric"] == "sojourn_ms" and r["entity"] == "port:bottleneck":
        t = float(r["time_s"])
        if lo < t <= hi:
            samples.append(float(rtt) + float(r["value"]))
print(f"ping {rtt} {flows} {variant} {seed} {float(rtt):.3f} " + " ".join(f"{x:.3f}" for x in samples))
PY
    # Into the results file at once, one run at a time (the workers run
    # in parallel; the lock keeps a run's lines together).
    flock "$OUT" sh -c 'cat "$1" >> "$2"' _ "$d/result.txt" "$OUT"
    # Only the result lines are kept (thousands of runs).
    find "$d" -mindepth 1 ! -name result.txt -delete
    echo "$rtt ms, $flows flow(s), $variant, seed $seed" >&2
}
export -f one
for seed in $(seq "$FIRST_SEED" $(( FIRST_SEED + SEEDS - 1 ))); do
    for rtt in $RTTS; do
        for flows in $FLOWS; do
            for variant in $VARIANTS; do
                echo "$rtt $flows $variant $seed"
            done
        done
    done
done > "$WORK/runs"
# In the background with a wait, so that a signal reaches the traps at once.
xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _ < "$WORK/runs" &
wait $!
python3 "$DIR/report.py" "$OUT" ${SVG:+--svg "$SVG"}

#!/usr/bin/env bash
# "Never worse than TCP" in ka-sim, in the order of the real-network test
# (crates/ka-endpoint/tests/netns_legacy.rs): a legacy flow runs alone,
# then the subject joins with BYTES and leaves when they are delivered —
# a KA flow, and in a second run a CUBIC flow in its place. Goodputs over
# the subject's lifetime: the subject's BYTES / FCT, the competitor's mean
# throughput while the subject ran.
#
#   examples/legacy/sim.sh [--rate-mbps 20] [--rtt-ms 40] [--queues "100 1000"]
#                          [--competitors "tcp-cubic tcp-bbr tcp-newreno"]
#                          [--joins "2.0 2.2 … 6.0"] [--bytes 12000000]
#                          [--df-hint true] [--ka-cc cubic]
#                          [--ka-silence-backoff true] [--out results.txt]
#                          [--jobs 2]
#
# ka-sim runs are deterministic, so one join time is one sample of where
# in the competitor's sawtooth the subject arrives; the joins (default
# 2.0–6.0 s in steps of 0.2 s, 21 of them) spread that phase the way run
# to run variation does on the testbed. Per queue and competitor it prints
# the medians (and ranges) over the joins of KA / CUBIC (the subject's
# goodput against CUBIC's in its place; the criterion asks ≥ 0.8) and of
# competitor(KA) / competitor(CUBIC) (≥ 0.9), and how many joins meet each.
# --df-hint false judges the legacy flows by behaviour alone (the testbed's
# DF-clear case). --ka-cc is what the KA flow runs in TCP mode: cubic,
# as the ka-endpoint binary the testbed runs (DESIGN §6.4), or newreno,
# the paper's (ka-sim's default for `ka` flows); --ka-silence-backoff true
# reduces the KA flow's window as for one loss when it leaves KA mode by
# silence, as the binary does (DESIGN §6.3.1; false is the paper's rule
# and ka-sim's default). Each run's line is appended to --out as it ends:
#   join QUEUE COMPETITOR SUBJECT JOIN_S SUBJECT_MBPS COMPETITOR_MBPS
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
RATE_MBPS=20 RTT_MS=40 QUEUES="100 1000" COMPETITORS="tcp-cubic tcp-bbr tcp-newreno"
JOINS="$(seq -f %.1f 2.0 0.2 6.0 | tr '\n' ' ')" BYTES=12000000 DF_HINT=true KA_CC=cubic KA_SILENCE_BACKOFF=true OUT="" JOBS=2
parse_options "rate-mbps rtt-ms queues competitors joins bytes df-hint ka-cc ka-silence-backoff out jobs" "$@"
OUT="${OUT:-$(mktemp -t ka-legacy-sim.XXXXXX.txt)}"
WORK="$(mktemp -d -t ka-legacy-sim.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
release_build -p ka-sim --bin ka-sim
mkdir -p "$(dirname "$OUT")" && touch "$OUT"
export SIM="$TARGET/release/ka-sim" WORK OUT RATE_MBPS RTT_MS DF_HINT KA_CC KA_SILENCE_BACKOFF
export PKTS=$(( (BYTES + 1447) / 1448 ))

one() { # queue competitor subject join
    local q=$1 comp=$2 subj=$3 join=$4
    local d="$WORK/$q-$comp-$subj-$join"
    mkdir -p "$d"
    cat > "$d/scenario.toml" <<TOML
name = "legacy-$subj-joins-$comp"
seed = 1
duration_s = 120.0

[tcp]
hystart = true
ka_cc = "$KA_CC"
ka_silence_backoff = $KA_SILENCE_BACKOFF

[router]
mode.df_hint = $DF_HINT

[topology]
kind = "dumbbell"
capacity_mbps = $RATE_MBPS.0
rtt_ms = $RTT_MS.0
queue_pkts = $q
port = "ka"

[[group]]
name = "competitor"
kind = "$comp"
count = 1
track = 1
[group.workload]
type = "long-lived"

[[group]]
name = "subject"
kind = "$subj"
count = 1
track = 1
[group.workload]
type = "long-lived"
start_s = $join
size_pkts = $PKTS
TOML
    "$SIM" run "$d/scenario.toml" --out "$d" > "$d/stdout" 2>&1
    python3 - "$d" "$q" "$comp" "$subj" "$join" > "$d/result.txt" <<'PY'
import csv, sys
d, q, comp, subj, join = sys.argv[1:]
rows = list(csv.DictReader(open(f"{d}/flows.csv")))
sub = rows[1]
if not sub["fct_s"]:
    sys.exit(f"{d}: the subject did not finish in 120 s")
fct, j = float(sub["fct_s"]), float(join)
got = [float(r["value"]) for r in csv.DictReader(open(f"{d}/series.csv"))
       if r["metric"] == "throughput_bps" and r["entity"] == "flow:0"
       and j < float(r["time_s"]) <= j + fct]
print(f"join {q} {comp} {subj} {join} {float(sub['size_bytes']) * 8 / fct / 1e6:.3f} "
      f"{sum(got) / len(got) / 1e6:.3f}")
PY
    flock "$OUT" sh -c 'cat "$1" >> "$2"' _ "$d/result.txt" "$OUT"
    rm -rf "$d"
}
export -f one
for q in $QUEUES; do
    for comp in $COMPETITORS; do
        for join in $JOINS; do
            for subj in ka tcp-cubic; do
                echo "$q $comp $subj $join"
            done
        done
    done
done | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
echo "results: $OUT" >&2
python3 - "$OUT" <<'PY'
import collections, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "join":
        runs[(int(f[1]), f[2], f[3], f[4])] = (float(f[5]), float(f[6]))
print("| queue | competitor | joins | KA / CUBIC, median [range] | ≥ 0.8 | "
      "competitor, KA / CUBIC beside it | ≥ 0.9 |")
print("|---:|---|---:|---|---:|---|---:|")
cases = sorted({(q, c) for q, c, _, _ in runs})
for q, c in cases:
    ks, cs = [], []
    for (q2, c2, s, j), (sub, comp) in runs.items():
        if (q2, c2, s) == (q, c, "ka") and (q, c, "tcp-cubic", j) in runs:
            ref = runs[(q, c, "tcp-cubic", j)]
            ks.append(sub / ref[0])
            cs.append(comp / ref[1])
    if not ks:
        continue
    print(f"| {q} | {c} | {len(ks)} | {statistics.median(ks):.2f} [{min(ks):.2f}, {max(ks):.2f}] "
          f"| {sum(x >= 0.8 for x in ks)} | {statistics.median(cs):.2f} [{min(cs):.2f}, "
          f"{max(cs):.2f}] | {sum(x >= 0.9 for x in cs)} |")
PY

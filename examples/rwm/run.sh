#!/usr/bin/env bash
# The RWM seed's experiment (§IV, Table I, Figs 3 and 5) on the netns
# testbed: kernel CUBIC downloads through ka-router, with and without --rwm.
#
#   examples/rwm/run.sh [--rate 200mbit] [--bytes RATE·8s] [--rounds 3] [--first-round 1]
#                       [--rtts "20 60 100 140"] [--flows "1 4"]
#                       [--variants "none exact minus plus"]
#                       [--jitter 3ms] [--jitter-on data|acks|both]
#                       [--queue-ms 50] [--out results.txt] [--svg DIR]
#
# For every round, RTT, flow count and variant (none = plain ka-router,
# exact = --rwm, minus = --rwm --rwm-delta -10%, plus = --rwm-delta 10%),
# one examples/testbed/testbed.sh run: ka-router --rate RATE --delay RTT/2
# --queue Q --signal none (Q = QUEUE_MS of RATE, default 50 ms: the
# seed's uncontrolled runs peak at about 50 ms of queueing, Table I), the
# delay line of the data direction (B → A, the router's reverse port)
# drawing each packet's delay uniformly from RTT/2 ± JITTER (netem's
# `delay D J`, which the seed's client router adds; packets overtake each
# other, DESIGN §3.10), and examples/rwm/transfer.py inside it (N
# simultaneous downloads of BYTES from B to A with kernel CUBIC, 60 MB
# socket buffers as in the seed, a 20 Hz ping alongside). BYTES defaults
# to 8 s of RATE: the seed's 1 GB file at its 1 Gbit/s. --jitter-on acks
# jitters the ACK direction instead, both both directions, --jitter 0ms
# none. The results also keep, per run, the router's mean queueing delay,
# drops and reorderings in the data direction. Variants are interleaved
# within a round so slow drifts of the host hit all alike.
# Rounds are numbered from --first-round (default 1): report.py keeps
# every (file, round) a separate set, so runs that add rounds to an
# earlier results file start after its last one. Then
# examples/rwm/report.py prints Table I and the FCT quartiles (and writes
# the box plots to --svg DIR if given).
# Needs root, python3, ping. A round of the full grid takes about 15 min.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
RATE=200mbit BYTES="" ROUNDS=3 FIRST_ROUND=1 RTTS="20 60 100 140" FLOWS="1 4" OUT="" SVG=""
VARIANTS="none exact minus plus" JITTER=3ms JITTER_ON=data QUEUE_MS=50
parse_options "rate bytes rounds first-round rtts flows variants jitter jitter-on queue-ms out svg" "$@"
DIR="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$(mktemp -t ka-rwm.XXXXXX.txt)}"
for tool in python3 ping; do
    command -v "$tool" >/dev/null || { echo "run.sh: needs $tool (Debian: apt install python3 iputils-ping)" >&2; exit 2; }
done
release_build -p ka-router --bin ka-router
BPS=$(python3 -c "
import re,sys
m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1].lower())
print(int(float(m[1]) * 1000 ** ' kmg'.index(m[2] or ' ')))" "$RATE")
BYTES="${BYTES:-$BPS}" # BPS/8 bytes per second, for 8 s
# Queue: QUEUE_MS at RATE, in 1500-byte packets.
QUEUE=$(( BPS / 8 * QUEUE_MS / 1000 / 1500 ))
# The jitter as a router config file: [impair] is the forward port (A → B,
# the ACKs), [reverse_impair] the reverse one (B → A, the data).
CONF="$(mktemp -t ka-rwm-impair.XXXXXX.toml)"
trap 'rm -f "$CONF"' EXIT
case $JITTER_ON in
    data) printf '[impair]\n\n[reverse_impair]\njitter = "%s"\n' "$JITTER" ;;
    acks) printf '[impair]\njitter = "%s"\n\n[reverse_impair]\n' "$JITTER" ;;
    both) printf '[impair]\njitter = "%s"\n\n[reverse_impair]\njitter = "%s"\n' "$JITTER" "$JITTER" ;;
    *) echo "run.sh: --jitter-on data|acks|both" >&2; exit 2 ;;
esac > "$CONF"
echo "results: $OUT (queue $QUEUE packets, $BYTES bytes per transfer, jitter ±$JITTER on $JITTER_ON)" >&2

for round in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
    for rtt in $RTTS; do
        for flows in $FLOWS; do
            for variant in $VARIANTS; do
                rwm=()
                case $variant in
                    none) ;;
                    exact) rwm=(--router-arg=--rwm) ;;
                    minus) rwm=(--router-arg=--rwm --router-arg=--rwm-delta=-10%) ;;
                    plus) rwm=(--router-arg=--rwm --router-arg=--rwm-delta=10%) ;;
                    *) echo "run.sh: unknown variant $variant" >&2; exit 2 ;;
                esac
                log=$("$ROOT/examples/testbed/testbed.sh" --router "$TARGET/release/ka-router" \
                    --rate "$RATE" --delay "$((rtt / 2))ms" --queue "$QUEUE" --name "rwm$$" \
                    --router-arg=--signal --router-arg=none --router-arg=--config \
                    --router-arg="$CONF" --router-arg=--realtime --router-arg=10 "${rwm[@]}" \
                    -- "python3 '$DIR/transfer.py' --flows $flows --bytes $BYTES \
                        --label '$rtt $flows $variant $round' --out '$OUT'" 2>&1) || true
                grep -E '^(rwm|[0-9]+ [0-9]+ )' <<<"$log" >&2 || true
                # The router's data direction at exit: mean queueing delay,
                # drops, packets the jitter reordered.
                rev=$(grep -E '^reverse ' <<<"$log" || true)
                soj=$(grep -oP 'sojourn mean \K[0-9.]+' <<<"$rev" || true)
                drops=$(grep -oP 'drops \K[0-9]+' <<<"$rev" | head -n 1 || true)
                reord=$(grep -oP 'reordered \K[0-9]+' <<<"$rev" || true)
                echo "router $rtt $flows $variant $round ${soj:-nan} ${drops:-nan} ${reord:-nan}" >> "$OUT"
            done
        done
    done
done
python3 "$DIR/report.py" "$OUT" ${SVG:+--svg "$SVG"}

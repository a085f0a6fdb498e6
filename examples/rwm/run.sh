#!/usr/bin/env bash
# The RWM seed's experiment (Table I, Fig. 3) on the netns testbed: kernel
# CUBIC downloads through ka-router, with and without --rwm.
#
#   examples/rwm/run.sh [--rate 100mbit] [--bytes 100000000] [--rounds 3]
#                       [--rtts "20 60 100 140"] [--flows "1 4"] [--out results.txt]
#
# For every round, RTT, flow count and variant (none = plain ka-router,
# exact = --rwm, minus = --rwm --rwm-delta -10%, plus = --rwm-delta 10%),
# one examples/testbed/testbed.sh run: ka-router --rate RATE --delay RTT/2
# --queue Q --signal none (Q = 50 ms of RATE: the seed's uncontrolled
# runs peak at about 50 ms of queueing, Table I), and examples/rwm/transfer.py
# inside it (N simultaneous downloads of BYTES from B to A with kernel CUBIC,
# 60 MB socket buffers as in the seed, a 20 Hz ping alongside). Variants are
# interleaved within a round so slow drifts of the host hit all alike.
# Then examples/rwm/report.py prints Table I and the FCT quartiles.
# Needs root, python3, ping. Takes about 15 min per round with the defaults.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
RATE=100mbit BYTES=100000000 ROUNDS=3 RTTS="20 60 100 140" FLOWS="1 4" OUT=""
parse_options "rate bytes rounds rtts flows out" "$@"
DIR="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$(mktemp -t ka-rwm.XXXXXX.txt)}"
release_build -p ka-router --bin ka-router
# Queue: 50 ms at RATE, in 1500-byte packets.
BPS=$(python3 -c "
import re,sys
m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1].lower())
print(int(float(m[1]) * 1000 ** ' kmg'.index(m[2] or ' ')))" "$RATE")
QUEUE=$(( BPS / 8 / 20 / 1500 ))
echo "results: $OUT (queue $QUEUE packets)" >&2

for round in $(seq "$ROUNDS"); do
    for rtt in $RTTS; do
        for flows in $FLOWS; do
            for variant in none exact minus plus; do
                rwm=()
                case $variant in
                    exact) rwm=(--router-arg=--rwm) ;;
                    minus) rwm=(--router-arg=--rwm --router-arg=--rwm-delta=-10%) ;;
                    plus) rwm=(--router-arg=--rwm --router-arg=--rwm-delta=10%) ;;
                esac
                "$ROOT/examples/testbed/testbed.sh" --router "$TARGET/release/ka-router" \
                    --rate "$RATE" --delay "$((rtt / 2))ms" --queue "$QUEUE" --name "rwm$$" \
                    --router-arg=--signal --router-arg=none \
                    --router-arg=--realtime --router-arg=10 "${rwm[@]}" \
                    -- "python3 '$DIR/transfer.py' --flows $flows --bytes $BYTES \
                        --label '$rtt $flows $variant $round' --out '$OUT'" 2>&1 \
                    | grep -E '^(rwm|[0-9]+ [0-9]+ )' >&2 || true
            done
        done
    done
done
python3 "$DIR/report.py" "$OUT"

#!/usr/bin/env bash
# Checks that two ka-sim binaries write byte-identical outputs: runs both
# on `ka-sim paper fig2` and the scenarios fig3-ka, other-dc-heavy-ka
# (0.3 s) and fig4-mixed, then compares the output directories with
# `diff -r`. summary.json is compared without its wall-clock fields
# (wall_seconds, speedup, events_per_second), which differ run to run.
#
#   benches/simspeed/same-output.sh [--dir DIR] BASE_BIN NEW_BIN
#
# Exit 0 if every output is identical, 1 otherwise. Release binaries take
# a few minutes for the set on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=target/simspeed/same
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "same-output.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 2 ] || { usage >&2; exit 2; }
base=$1 new=$2
sc=crates/ka-sim/scenarios
rm -rf "$dir"
mkdir -p "$dir"

# name, then the ka-sim arguments before --out
jobs=(
    "fig2|paper fig2"
    "fig3-ka|run $sc/fig3-ka.toml"
    "dc-heavy-ka|run $sc/other-dc-heavy-ka.toml --duration 0.3"
    "fig4-mixed|run $sc/fig4-mixed.toml"
)
status=0
for j in "${jobs[@]}"; do
    name=${j%%|*} args=${j#*|}
    for side in base new; do
        bin=$base
        [ $side = new ] && bin=$new
        # shellcheck disable=SC2086
        "$bin" $args --out "$dir/$side/$name" >/dev/null 2>"$dir/$side-$name.log"
        # The wall-clock fields, wherever a summary.json has them.
        find "$dir/$side/$name" -name summary.json -print0 |
            xargs -0 sed -i -E '/"(wall_seconds|speedup|events_per_second)":/d'
    done
    if diff -r "$dir/base/$name" "$dir/new/$name" >"$dir/$name.diff"; then
        echo "same   $name"
    else
        echo "DIFFER $name (see $dir/$name.diff)"
        status=1
    fi
done
exit $status

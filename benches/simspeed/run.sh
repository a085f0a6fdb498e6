#!/usr/bin/env bash
# Simulator speed A/B: ka-sim at a base revision against the working
# tree, both release builds, run in interleaved rounds in one session so
# the ratio new/base is measured under the same machine load.
#
#   benches/simspeed/run.sh [--rounds N] [--dc-duration S] [--no-build] BASE_REV
#
# Scenarios: crates/ka-sim/scenarios/fig3-ka.toml (60 s simulated) and
# other-dc-heavy-ka.toml (10 Gbit/s, 64 long-lived KA flows; its 2 s, or
# S with --dc-duration). Per scenario and side it prints the median over
# the rounds of packet transmissions per wall second and per user-CPU
# second (from the run's summary.json and /usr/bin/time), the real-time
# factor (simulated s / wall s, and / user-CPU s), and new/base of each
# (above 1 = faster). User CPU time is the less noisy of the two on a
# shared machine. The base revision is checked out into
# target/simspeed/base-src (a git worktree) and built into
# target/simspeed/base-target; the working tree builds into target/.
# --no-build reuses both binaries. Exit 0 whatever the ratios say.
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=3
dc_duration=
build=1
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --dc-duration) dc_duration=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { usage >&2; exit 2; }
base_rev=$1

root=$PWD
work=$root/target/simspeed
mkdir -p "$work"
base_src=$work/base-src
base_bin=$work/base-target/release/ka-sim
new_bin=$root/target/release/ka-sim
if [ $build = 1 ]; then
    base_sha=$(git rev-parse --verify "$base_rev^{commit}")
    if [ -d "$base_src" ]; then
        git -C "$base_src" checkout -q --detach "$base_sha"
    else
        git worktree add -q --detach "$base_src" "$base_sha"
    fi
    echo "== building base ($base_rev = ${base_sha:0:10}) and new (working tree)" >&2
    (cd "$base_src" && CARGO_TARGET_DIR=$work/base-target cargo build --quiet --release -p ka-sim)
    cargo build --quiet --release -p ka-sim
fi

sc=crates/ka-sim/scenarios
scenarios=(fig3-ka other-dc-heavy-ka)
raw=$work/raw.txt
: > "$raw"
for r in $(seq 1 "$rounds"); do
    for s in "${scenarios[@]}"; do
        args=()
        if [ "$s" = other-dc-heavy-ka ] && [ -n "$dc_duration" ]; then
            args=(--duration "$dc_duration")
        fi
        for side in base new; do
            bin=$base_bin
            [ $side = new ] && bin=$new_bin
            out=$work/out-$side-$s
            rm -rf "$out"
            echo "== round $r/$rounds $s $side" >&2
            /usr/bin/time -f '%U' -o "$work/time.txt" \
                "$bin" run "$sc/$s.toml" "${args[@]}" --out "$out" >/dev/null 2>&1
            python3 - "$out/summary.json" "$work/time.txt" "$side" "$s" >> "$raw" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
user = float(open(sys.argv[2]).read().split()[-1])
print(sys.argv[3], sys.argv[4], j["packet_transmissions"], j["simulated_seconds"],
      j["wall_seconds"], user)
PY
        done
    done
done

echo
printf 'median of %s rounds; load average now: %s\n' "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
m = lambda xs: st.median(xs) if xs else float("nan")
print(f"{'scenario':20} {'side':5} {'tx/wall s':>11} {'tx/user s':>11} "
      f"{'sim/wall':>9} {'sim/user':>9} {'wall s':>7} {'user s':>7}")
for s in dict.fromkeys(r[1] for r in rows):
    res = {}
    for side in ("base", "new"):
        rs = [r for r in rows if r[0] == side and r[1] == s]
        tx = [int(r[2]) / float(r[4]) for r in rs]
        txu = [int(r[2]) / float(r[5]) for r in rs]
        rt = [float(r[3]) / float(r[4]) for r in rs]
        rtu = [float(r[3]) / float(r[5]) for r in rs]
        res[side] = (m(tx), m(txu), m(rt), m(rtu),
                     m([float(r[4]) for r in rs]), m([float(r[5]) for r in rs]))
        v = res[side]
        print(f"{s:20} {side:5} {v[0]/1e6:10.2f}M {v[1]/1e6:10.2f}M {v[2]:9.3f} {v[3]:9.3f} "
              f"{v[4]:7.2f} {v[5]:7.2f}")
    b, n = res["base"], res["new"]
    print(f"{s:20} {'new/base':9} {n[0]/b[0]:7.3f}x {n[1]/b[1]:10.3f}x")
PY

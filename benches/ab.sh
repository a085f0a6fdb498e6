#!/usr/bin/env bash
# A/B of the criterion benchmarks: the code at a base revision against the
# working tree, built side by side and run in interleaved rounds in one
# session, so the ratio new/base is measured under the same machine load.
#
#   benches/ab.sh [--rounds N] [--measure SECS] BASE_REV [BENCH ...]
#
# BENCH defaults to "stamp qdisc rwm" (the router core's per-packet paths;
# `codec` works too). For every benchmark id present in both builds it
# prints the median over the rounds of criterion's point estimate for base
# and new, and new/base (below 1 = faster). Needs git and cargo; the base
# revision is checked out into target/ab/base-src (a git worktree) and
# built into target/ab/base-target. Exit 0 whatever the ratios say: this
# measures, it does not judge.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
measure=2
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --measure) measure=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) echo "ab.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
base_rev=$1; shift
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(stamp qdisc rwm)

root=$PWD
work=$root/target/ab
mkdir -p "$work"
base_src=$work/base-src
base_sha=$(git rev-parse --verify "$base_rev^{commit}")
if [ -d "$base_src" ]; then
    git -C "$base_src" checkout -q --detach "$base_sha"
else
    git worktree add -q --detach "$base_src" "$base_sha"
fi

# Builds the bench executables of one tree; prints "name path" lines.
build() {
    local src=$1 target=$2
    local args=()
    for b in "${benches[@]}"; do args+=(--bench "$b"); done
    (cd "$src" && CARGO_TARGET_DIR=$target cargo bench -p ka-benches "${args[@]}" \
        --no-run --message-format=json 2>/dev/null) |
        python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    t = m.get("target") or {}
    if m.get("reason") == "compiler-artifact" and "bench" in t.get("kind", []) and m.get("executable"):
        print(t["name"], m["executable"])
'
}
echo "== building base ($base_rev = ${base_sha:0:10}) and new (working tree)" >&2
mapfile -t base_exes < <(build "$base_src" "$work/base-target")
mapfile -t new_exes < <(build "$root" "$root/target")
exe_of() { # list name
    local -n list=$1
    for l in "${list[@]}"; do
        if [ "${l%% *}" = "$2" ]; then echo "${l#* }"; fi
    done
}

# Criterion prints "<id>\n  time: [lo mid hi]" (or on one line for short
# ids); emit "id mid_ns" pairs.
parse() {
    awk '
      function ns(v, u) { return u=="ps" ? v/1000 : u=="ns" ? v : u=="µs"||u=="us" ? v*1000 : u=="ms" ? v*1e6 : v*1e9 }
      /time:/ {
        line=$0; sub(/^ +/, "", line)
        if (line ~ /^time:/) id=prev; else { id=line; sub(/ +time:.*/, "", id) }
        match($0, /\[[^]]*\]/); f=substr($0, RSTART+1, RLENGTH-2); split(f, a, " ")
        print id, ns(a[3], a[4]); next
      }
      { t=$0; sub(/^ +/, "", t); sub(/ +$/, "", t); if (t != "") prev=t }'
}

raw=$work/raw.txt
: > "$raw"
for r in $(seq 1 "$rounds"); do
    for b in "${benches[@]}"; do
        for side in base new; do
            if [ $side = base ]; then exe=$(exe_of base_exes "$b"); else exe=$(exe_of new_exes "$b"); fi
            [ -n "$exe" ] || { echo "ab.sh: no $side build of bench $b" >&2; continue; }
            echo "== round $r/$rounds $b $side" >&2
            "$exe" --bench --noplot --warm-up-time 1 --measurement-time "$measure" 2>/dev/null |
                parse | sed "s/^/$side /" >> "$raw"
        done
    done
done

echo
printf '%-52s %12s %12s %9s\n' "benchmark (median of $rounds rounds)" "base ns" "new ns" "new/base"
awk '
  { side=$1; v=$NF; $1=""; $NF=""; id=$0; gsub(/^ +| +$/, "", id)
    n[side SUBSEP id]++; vals[side SUBSEP id SUBSEP n[side SUBSEP id]]=v; ids[id]=1 }
  function med(s, id,   k, m, i, j, t, a) {
    m=n[s SUBSEP id]; if (!m) return -1
    for (i=1;i<=m;i++) a[i]=vals[s SUBSEP id SUBSEP i]
    for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
    return m%2 ? a[(m+1)/2] : (a[m/2]+a[m/2+1])/2 }
  END { for (id in ids) { b=med("base", id); x=med("new", id)
          if (b>0 && x>0) printf "%-52s %12.1f %12.1f %9.3f\n", id, b, x, x/b
          else printf "%-52s %12s %12s %9s\n", id, (b>0?b:"-"), (x>0?x:"-"), "only one" } }' "$raw" | sort

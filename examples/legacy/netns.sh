#!/usr/bin/env bash
# "Never worse than TCP" on the real network: runs the measurements of
# crates/ka-endpoint/tests/netns_legacy.rs (release binaries, namespaces,
# `ka-router --rate 20mbit --delay 20ms`, the kernel's TCP as competitor
# and as the reference) RUNS times per case and appends one line per run
# to --out in the format of examples/legacy/data/README.md:
#   TIME LABEL CASE SUBJECT_BYTES KA_MBPS COMPETITOR_BESIDE_KA CUBIC_MBPS
#   COMPETITOR_BESIDE_CUBIC KA_RATIO COMPETITOR_RATIO LOAD1
# then prints, per case, the medians of the two ratios (the criterion:
# KA / CUBIC in its place ≥ 0.8, competitor beside KA / beside CUBIC
# ≥ 0.9) and how many runs meet both.
#
#   examples/legacy/netns.sh [--runs 3] [--bytes 12000000] [--label LABEL]
#                            [--cases "bbr cubic cubic-df-clear reno 4x-bbr
#                                      4x-cubic 4x-cubic-df-clear 4x-reno"]
#                            [--out results.txt]
#
# Root only (namespaces, TUN). One case run is 30–65 s (1 + 1) or 1.5–2.2 min
# (4 + 4): the defaults take about 32 minutes. Run it on a quiet host:
# the flows share two cores with the router and the endpoints. --bytes is
# each subject flow's size (12 MB: the competitor is alone for 3 s, the
# subject joins and the goodputs are taken over its lifetime).
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
RUNS=3 BYTES=12000000 LABEL="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo tree)"
CASES="bbr cubic cubic-df-clear reno 4x-bbr 4x-cubic 4x-cubic-df-clear 4x-reno" OUT=""
parse_options "runs bytes label cases out" "$@"
OUT="${OUT:-$(mktemp -t ka-legacy-netns.XXXXXX.txt)}"
if [[ $(id -u) -ne 0 ]]; then
    echo "$(basename "$0"): needs root (network namespaces, TUN devices)" >&2
    exit 2
fi
release_build -p ka-router --features cli --bin ka-router
TEST_BIN="$(cd "$ROOT" && cargo test --release -p ka-endpoint --test netns_legacy --no-run \
    --message-format=json 2>/dev/null | sed -n 's/.*"executable":"\([^"]*netns_legacy[^"]*\)".*/\1/p' | tail -1)"
[[ -x "$TEST_BIN" ]] || { echo "$(basename "$0"): no netns_legacy test binary" >&2; exit 1; }
export KA_ROUTER_BIN="$TARGET/release/ka-router" KA_LEGACY_BYTES="$BYTES"
mkdir -p "$(dirname "$OUT")" && touch "$OUT"
LOG="$(mktemp -t ka-legacy-netns-log.XXXXXX)"
trap 'rm -f "$LOG"' EXIT

# A case's test and KA_LEGACY_KIND (which only the 4 + 4 test reads).
test_of() {
    case "$1" in
        bbr) echo "ka_beside_kernel_bbr_leaves_bbr_its_share bbr" ;;
        cubic) echo "ka_beside_kernel_cubic_df_set cubic" ;;
        cubic-df-clear) echo "ka_beside_kernel_cubic_df_clear_gets_cubics_share cubic-df-clear" ;;
        reno) echo "ka_beside_kernel_reno reno" ;;
        4x-*) echo "four_ka_beside_four_kernel_flows ${1#4x-}" ;;
        *) echo "$(basename "$0"): unknown case $1" >&2; exit 2 ;;
    esac
}

for case in $CASES; do
    read -r name kind < <(test_of "$case")
    for _ in $(seq "$RUNS"); do
        # A test asserts its own bounds; a run that misses them is still a
        # measurement, so its exit status is not this script's.
        (cd "$ROOT/crates/ka-endpoint" && KA_LEGACY_KIND="$kind" \
            "$TEST_BIN" --include-ignored --exact "$name" --nocapture) >"$LOG" 2>&1 || true
        # The test's summary line, one per run: "load average L1 …; queue …;
        # N× Competitor { cc: "X", df: B }: KA a Mbit/s, competitor b |
        # CUBIC in its place c, competitor d | ratios KA/CUBIC e, competitor f"
        perl -ne 'print "$1 $2 $3 $4 $5 $6 $7 $8 $9 $10\n" if m{^load average ([0-9.]+) .*; ([0-9]+)× Competitor \{ cc: "([a-z]+)", df: (true|false) \}: KA ([0-9.]+) Mbit/s, competitor ([0-9.]+) \| CUBIC in its place ([0-9.]+), competitor ([0-9.]+) \| ratios KA/CUBIC ([0-9.]+), competitor ([0-9.]+)}' "$LOG" |
        while read -r load n cc df ka kc cu cc2 r1 r2; do
            [[ "$df" == true ]] && d=set || d=clear
            echo "$(date -u +%FT%TZ) $LABEL ${n}x$cc-df$d $((BYTES / 1000000))MB $ka $kc $cu $cc2 $r1 $r2 $load" | tee -a "$OUT"
        done
        if ! grep -q '^load average' "$LOG"; then
            echo "$(basename "$0"): $case: no measurement; the test said:" >&2
            tail -20 "$LOG" >&2
        fi
    done
done

echo "# medians per case (KA / CUBIC ≥ 0.8, competitor ≥ 0.9), runs labelled $LABEL in $OUT"
awk -v label="$LABEL" '$2 == label { k = $3 " " $4; n[k]++; a[k, n[k]] = $9; b[k, n[k]] = $10;
        ok[k] += ($9 >= 0.8 && $10 >= 0.9) }
    function median(arr, k, m,   i, j, t, v) {
        for (i = 1; i <= m; i++) v[i] = arr[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
    END { for (k in n) printf "%-24s runs %d  KA/CUBIC %.2f  competitor %.2f  both met in %d\n",
        k, n[k], median(a, k, n[k]), median(b, k, n[k]), ok[k] }' "$OUT" | sort

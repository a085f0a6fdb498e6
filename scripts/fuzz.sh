#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets/) for a given time each,
# with its corpus in fuzz/corpus/<target>/, and prints one line per target:
# executions, corpus size, and whether it crashed.
#
#   scripts/fuzz.sh [--seconds N] [--minimise] [--jobs J] [TARGET...]
#
#   --seconds N   time per target (default 60)
#   --minimise    afterwards shrink each corpus to the inputs that add
#                 coverage (cargo fuzz cmin), as kept in the repository
#   --jobs J      libFuzzer worker processes per target (default 1)
#   TARGET...     only these targets (default: all)
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# A crash leaves its input in fuzz/artifacts/<target>/ and makes the script
# exit 1 after the remaining targets have run; reproduce it with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
minimise=0
jobs=1
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --minimise) minimise=1; shift ;;
        --jobs) jobs="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
    echo "fuzz.sh: --seconds needs a whole number >= 1, got '$seconds'" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: needs a nightly toolchain and cargo-fuzz (cargo install cargo-fuzz)" >&2
    exit 2
fi
all=$(cargo +nightly fuzz list)
if [ "${#targets[@]}" -eq 0 ]; then
    mapfile -t targets <<<"$all"
fi
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all" || { echo "fuzz.sh: no fuzz target '$t' (have: $(echo $all))" >&2; exit 2; }
done

echo "== building ${#targets[@]} targets (release, debug assertions, ASan)"
# `cargo fuzz build` takes at most one target.
for t in "${targets[@]}"; do
    cargo +nightly fuzz build -O "$t" 2>&1 | tail -1
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0
total=0
printf '%-20s %14s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="$logs/$t.log"
    set +e
    cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -print_final_stats=1 -jobs="$jobs" -workers="$jobs" \
        >"$log" 2>&1
    rc=$?
    set -e
    # With -jobs > 1 libFuzzer writes one fuzz-<n>.log per worker.
    if [ "$jobs" -gt 1 ]; then cat fuzz-*.log >>"$log" 2>/dev/null || true; rm -f fuzz-*.log; fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
    total=$((total + execs))
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        result="CRASH (exit $rc; see fuzz/artifacts/$t/)"
        failed=1
        grep -m1 -E 'panicked|ERROR: AddressSanitizer|ERROR: libFuzzer' "$log" | sed 's/^/    /' || true
    fi
    printf '%-20s %14s %10s %8s  %s\n' "$t" "$execs" "$((execs / seconds))" "$corpus" "$result"
    if [ "$minimise" -eq 1 ] && [ "$rc" -eq 0 ]; then
        cargo +nightly fuzz cmin -O "$t" "fuzz/corpus/$t" >"$log" 2>&1
        echo "    minimised: $(find "fuzz/corpus/$t" -type f | wc -l) inputs"
    fi
done
echo "total executions: $total"
exit "$failed"

#!/usr/bin/env bash
# The whole ka test suite, as CI runs it. Run from anywhere in the repo:
#   ./scripts/test.sh
# The real-network tests (TUN devices, network namespaces, the Linux kernel's
# TCP as the legacy peer) need root; without root they print a loud SKIP.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test --workspace"
cargo test --workspace --locked

echo "== ka-codec builds without std"
./scripts/check-no-std.sh

echo "== fuzz targets: build, then a short smoke of each"
# Without cargo-fuzz's instrumentation libFuzzer mutates blindly, so this is
# a smoke (every target starts, runs its seed corpus and random inputs for a
# few seconds, and finds nothing), not a campaign: scripts/fuzz.sh is that.
cargo build --locked --manifest-path fuzz/Cargo.toml --bins
smoke=$(mktemp -d)
trap 'rm -rf "$smoke"' EXIT
for bin in fuzz/fuzz_targets/*.rs; do
    t=$(basename "$bin" .rs)
    # libFuzzer writes new inputs into the first directory: a scratch one,
    # so the seeds in git stay as they are.
    mkdir -p "$smoke/$t"
    corpus=("$smoke/$t")
    [ -d "fuzz/seeds/$t" ] && corpus+=("fuzz/seeds/$t")
    "fuzz/target/debug/$t" -max_total_time=3 -print_final_stats=1 "${corpus[@]}" 2>&1 \
        | grep -E 'stat::number_of_executed_units|ERROR|panicked' | sed "s/^/$t: /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "fuzz smoke: $t failed" >&2; exit 1; }
done

echo "== the documentation's commands (README.md, docs/)"
./scripts/doc-commands.sh

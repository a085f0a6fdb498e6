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

echo "== fuzz targets compile"
cargo check --locked --manifest-path fuzz/Cargo.toml --bins

echo "== the documentation's commands (README.md, docs/)"
./scripts/doc-commands.sh

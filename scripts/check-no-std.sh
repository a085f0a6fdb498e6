#!/usr/bin/env bash
# Proves that ka-codec is really `no_std` (and allocation-free): nothing in it
# needs `std` or `alloc`, with default features off.
#
#   scripts/check-no-std.sh
#
# Works offline. Three checks:
#  1. `cargo build -p ka-codec --no-default-features` succeeds.
#  2. The crate is compiled by plain rustc against a *fake sysroot that holds
#     only `core` and `compiler_builtins`* (no std, no alloc on disk at all).
#     Any `extern crate std`/`alloc`, `std::` path or std-only method would fail
#     with "can't find crate". A negative control then builds the same way with
#     the `std` feature on and must FAIL, showing the check can see std.
#  3. If a bare-metal target (e.g. thumbv7em-none-eabihf, which has no std at
#     all) is installed, the crate is also built for it. It is not installed
#     by this script (no downloads); the check is skipped if absent.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== 1. cargo build -p ka-codec --no-default-features"
cargo build --quiet -p ka-codec --no-default-features

echo "== 2. rustc against a core-only sysroot"
host="$(rustc -vV | sed -n 's/^host: //p')"
real="$(rustc --print sysroot)/lib/rustlib/$host/lib"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fake="$work/sysroot/lib/rustlib/$host/lib"
mkdir -p "$fake"
shopt -s nullglob
# Recent toolchains ship each library as an .rlib plus an .rmeta.
libs=("$real"/libcore-*.r* "$real"/libcompiler_builtins-*.r*)
if [ "${#libs[@]}" -lt 2 ]; then
    echo "cannot find libcore/libcompiler_builtins in $real" >&2
    exit 1
fi
ln -s "${libs[@]}" "$fake/"
if ls "$fake" | grep -Eq '^lib(std|alloc)-'; then
    echo "fake sysroot unexpectedly contains std/alloc" >&2
    exit 1
fi
edition="$(sed -n 's/^edition *= *"\(.*\)"/\1/p' Cargo.toml | head -n1)"
compile() {
    rustc --sysroot "$work/sysroot" --edition "${edition:-2024}" \
        --crate-type rlib --crate-name ka_codec --emit=metadata \
        --out-dir "$work/out" "$@" crates/ka-codec/src/lib.rs
}
if ! compile 2>"$work/build.log"; then
    cat "$work/build.log" >&2
    echo "ka-codec does not build without std/alloc (see above)" >&2
    exit 1
fi
echo "   ok: ka-codec compiles with only core in the sysroot ($(ls "$fake" | tr '\n' ' '))"
if compile --cfg 'feature="std"' 2>"$work/control.log"; then
    echo "negative control failed: the std feature built without std present" >&2
    exit 1
fi
grep -q "can't find crate for \`std\`" "$work/control.log" || {
    echo "negative control failed for an unexpected reason:" >&2
    cat "$work/control.log" >&2
    exit 1
}
echo "   ok: control (feature std) fails with \"can't find crate for std\""

echo "== 3. bare-metal target build (if one is installed)"
target="$(rustup target list --installed 2>/dev/null | grep -E -- '-none(-|$)' | head -n1 || true)"
if [ -n "$target" ]; then
    cargo build --quiet -p ka-codec --no-default-features --target "$target"
    echo "   ok: built for $target"
else
    echo "   skipped: no *-none* target installed (checks 1-2 suffice)"
fi
echo "ka-codec is no_std: all checks passed"

#!/usr/bin/env bash
# Runs the shell commands the documentation shows, as a reader would.
#
#   scripts/doc-commands.sh            # run them (scripts/test.sh does)
#   scripts/doc-commands.sh --list     # say what would run, run nothing
#   DOC_COMMANDS_FULL=1 scripts/doc-commands.sh   # long commands in full too
#
# Every tracked Markdown file is read, README.md first, then docs/USAGE.md
# (whose first block builds the binaries and puts them on PATH), then the
# rest in path order. Each fenced block whose info string is `sh` is run, in
# order, by one bash with `set -euo pipefail`, so a block sees what earlier
# blocks set up (PATH), as a reader following the pages would. The first
# failing command stops the run and names the document and line.
#
# Blocks that do not run:
#   ```sh root          needs root (TUN devices, namespaces); the real-network
#                       tests cover those paths. Not run.
#   <!-- doc-commands: skip: REASON -->      on the line before a block:
#                       not run, REASON is printed.
#   <!-- doc-commands: instead: COMMAND -->  on the line before a block: a
#                       long block (minutes); COMMAND, a small version of
#                       it, runs instead unless DOC_COMMANDS_FULL=1.
# Blocks in other languages (```text, ```toml, ```rust …) are not commands.
#
# The commands run in a scratch directory that holds a symbolic link to
# every top-level entry of the repository (except .git and output
# directories such as results/ and out/), so relative paths resolve as in
# the repository root while everything a command writes (results/…) lands
# in the scratch directory, which is removed afterwards. `cargo` is wrapped
# to pass --manifest-path, so it builds in the repository's target/.
set -euo pipefail
# The real checkout, also when run through the scratch directory's links.
cd "$(dirname "$(readlink -f "$0")")/.."
REPO="$PWD"

list=0
case "${1:-}" in
--list) list=1 ;;
"") ;;
*)
    echo "usage: $0 [--list]" >&2
    exit 2
    ;;
esac

# README.md, docs/USAGE.md, then every other tracked Markdown file.
docs=()
for f in README.md docs/USAGE.md; do [ -f "$f" ] && docs+=("$f"); done
while IFS= read -r f; do
    case "$f" in README.md | docs/USAGE.md) continue ;; esac
    docs+=("$f")
done < <(git ls-files -- '*.md' | LC_ALL=C sort)

# One bash script from all blocks: __doc_block / __doc_skip mark each block.
extract() {
    awk -v file="$1" '
    function q(s) { gsub(/\047/, "\047\\\047\047", s); return "\047" s "\047" }
    BEGIN { inb = 0; mark = ""; arg = "" }
    !inb && /^<!-- doc-commands: (skip|instead):/ {
        line = $0
        sub(/^<!-- doc-commands: /, "", line); sub(/ *-->[ \t]*$/, "", line)
        mark = line; sub(/:.*/, "", mark)
        arg = line; sub(/^[a-z]+: */, "", arg)
        next
    }
    !inb && /^[ \t]*```/ {
        info = $0; sub(/^[ \t]*```[ \t]*/, "", info)
        if (info ~ /^sh([ \t]|$)/) {
            inb = 1; at = file ":" NR
            if (info ~ /(^|[ \t])root([ \t]|$)/) { kind = "root" } else if (mark != "") { kind = mark } else { kind = "run" }
            if (kind == "root") print "__doc_skip " q(at) " " q("needs root")
            else if (kind == "skip") print "__doc_skip " q(at) " " q(arg)
            else if (kind == "instead") {
                print "if [ -z \"${DOC_COMMANDS_FULL:-}\" ]; then"
                print "__doc_block " q(at) " " q("small version: " arg)
                print arg
                print "__doc_done"
                print "else"
                print "__doc_block " q(at) " \"\""
            } else print "__doc_block " q(at) " \"\""
        } else { inb = 2 }
        mark = ""
        next
    }
    inb && /^[ \t]*```[ \t]*$/ {
        if (inb == 1 && (kind == "run" || kind == "instead")) print "__doc_done"
        if (inb == 1 && kind == "instead") print "fi"
        inb = 0; next
    }
    inb == 1 && (kind == "run" || kind == "instead") { print }
    !inb && !/^[ \t]*$/ { mark = "" }
    ' "$1"
}

if [ "$list" = 1 ]; then
    for d in "${docs[@]}"; do extract "$d"; done |
        sed -n -e "s/^__doc_skip '\([^']*\)' '\(.*\)'$/skip  \1  (\2)/p" \
            -e "s/^__doc_block '\([^']*\)' \"\"$/run   \1/p" \
            -e "s/^__doc_block '\([^']*\)' '\(.*\)'$/run   \1  (\2)/p" |
        awk '!seen[$2]++' | sed "s/'\\\\''/'/g"
    exit 0
fi

work="$(mktemp -d -t ka-doc-commands.XXXXXX)"
trap 'rm -rf "$work"' EXIT
for e in "$REPO"/* "$REPO"/.[!.]*; do
    name="$(basename "$e")"
    case "$name" in .git | results | out | target-* | '.[!.]*') continue ;; esac
    ln -s "$e" "$work/$name"
done
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    rm -f "$work/target"
    ln -s "$CARGO_TARGET_DIR" "$work/target"
fi

script="$work/.doc-commands.bash"
{
    cat <<'EOF'
set -eEuo pipefail
__doc_at="(start)"
__doc_t0=$SECONDS
__doc_total=0
trap 'echo "doc-commands: FAILED at $__doc_at: $BASH_COMMAND" >&3' ERR
# cargo as the reader runs it in the repository root.
cargo() {
    local pre=()
    if [ "${1:-}" != "${1#+}" ]; then pre=("$1"); shift; fi
    local sub="${1:-}"
    [ $# -gt 0 ] && shift
    case "$sub" in
    build | check | clippy | doc | run | test | bench | fmt | metadata | tree)
        command cargo "${pre[@]}" "$sub" --manifest-path "$KA_DOC_REPO/Cargo.toml" "$@" ;;
    *) command cargo "${pre[@]}" "$sub" "$@" ;;
    esac
}
export -f cargo
__doc_block() {
    cd "$KA_DOC_WORK"
    __doc_at="$1"
    __doc_t0=$SECONDS
    echo "== $1${2:+ ($2)}" >&3
}
__doc_done() {
    local dt=$((SECONDS - __doc_t0))
    __doc_total=$((__doc_total + 1))
    echo "   ok, ${dt} s" >&3
}
__doc_skip() { echo "-- $1: skipped ($2)" >&3; }
EOF
    for d in "${docs[@]}"; do extract "$d"; done
    echo 'echo "doc-commands: $__doc_total blocks ran in $SECONDS s" >&3'
} >"$script"

# The commands' own output goes to a log, shown when one of them fails;
# progress (the block markers above) goes to stderr.
log="$work/.doc-commands.log"
if ! KA_DOC_REPO="$REPO" KA_DOC_WORK="$work" bash "$script" 3>&2 >"$log" 2>&1; then
    echo "doc-commands: the last 40 lines of output:" >&2
    tail -n 40 "$log" >&2
    exit 1
fi

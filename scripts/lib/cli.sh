# What the example and bench scripts share: where the repository and its
# binaries are, their --help, and their `--name VALUE` options. Sourced
# (after `set -euo pipefail`) by benches/*/*.sh, examples/rwm/*.sh and
# examples/testbed/testbed.sh.

# The repository root and cargo's target directory.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

# Prints the running script's header comment: its lines from the second to
# the one before `set -euo pipefail`, without the leading "# ".
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

# release_build CARGO-ARGS...: builds the named packages and binaries in
# release mode (cargo's output on stderr).
release_build() { (cd "$ROOT" && cargo build --release "$@" >&2); }

# parse_options "NAME..." "$@": for each `--NAME VALUE` in the arguments,
# NAME one of the space-separated names given first, sets the variable of
# that name upper-cased with '-' as '_' (--rate-mbps 10 sets RATE_MBPS=10),
# which the script has set to its default. -h/--help prints usage and exits
# 0; any other argument is an error (exit 2).
parse_options() {
    local names=" $1 " name
    shift
    while [[ $# -gt 0 ]]; do
        name="${1#--}"
        if [[ "$1" == -h || "$1" == --help ]]; then
            usage
            exit 0
        elif [[ "$1" == --* && "$names" == *" $name "* ]]; then
            name="${name//-/_}"
            printf -v "${name^^}" '%s' "$2"
            shift 2
        else
            echo "$(basename "$0"): unknown option $1" >&2
            exit 2
        fi
    done
}

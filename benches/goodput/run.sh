#!/usr/bin/env bash
# Bulk goodput benchmark of the userspace endpoint: ka-endpoint → ka-endpoint
# with KA, the same with plain TCP (--no-ka), and Linux kernel TCP, all through
# one *unshaped* ka-router (--rate 100gbit, full KA core: it still fragments
# every KA packet) over the examples/testbed wiring, in one run, interleaved
# round by round.
#
#   benches/goodput/run.sh [--bytes 100M] [--rounds 3] [--cc newreno|cubic]
#                          [--router-args "ARGS"] [--endpoint-args "ARGS"]
#                          [--sender-args "ARGS"] [--base-endpoint BIN]
#
# --router-args and --endpoint-args add options (space-separated) to the
# router and to both endpoints, --sender-args to the sending endpoint; at
# line rate:
#   --router-args "--offload --write-threads --stamp-every rtt" --endpoint-args --offload
# The kernel's sender writes one zeroed buffer over and over; --sender-args
# --static-payload makes the endpoint's sender do the same (one 64 KiB
# block of its pattern), so neither application costs anything per byte.
# --base-endpoint BIN adds a KA flow between two BIN endpoints (an older
# ka-endpoint binary, e.g. built in a git worktree) to every round, right
# before this tree's: a before/after in the same run.
#
# Wiring (as in docs/usage/endpoint.md): the testbed gives A
# 10.77.0.1/24 and B 10.77.0.2/24 on the router's devices; an endpoint owns
# 10.77.0.101 (A) / 10.77.0.201 (B) on its own TUN device (--addr …/30, kernel
# side .102 / .202), both namespaces forward. Kernel TCP runs 10.77.0.1 →
# 10.77.0.2 with a python3 sender/receiver.
#
# Reports goodput = bytes / FCT as the endpoint's sender sees it (connect →
# FIN acknowledged) and, for the kernel, bytes / (connect → receiver EOF);
# medians over the rounds. Beside it, the whole machine's CPU over each flow
# (from /proc/stat, all processes and the kernel): CPU-seconds per gigabit
# moved, split into user space and kernel (system + irq + softirq), the
# share of CPU time left idle, and the ceiling that the kernel's work plus
# the router's user space leave on the host's CPUs (the path's speed were
# the endpoints' own user space free). Wall-clock and host-dependent: on a
# shared 2-CPU box the two endpoints, the router and the kernels compete
# for CPUs.
# Needs root and python3. Not a test.
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/cli.sh"
BYTES=100M ROUNDS=3 CC=newreno ROUTER_ARGS="" ENDPOINT_ARGS="" SENDER_ARGS="" BASE_ENDPOINT=""
parse_options "bytes rounds cc router-args endpoint-args sender-args base-endpoint" "$@"
if [[ -n "$BASE_ENDPOINT" && ! -x "$BASE_ENDPOINT" ]]; then
    echo "run.sh: --base-endpoint $BASE_ENDPOINT is not an executable" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "run.sh: needs python3 for the kernel-TCP baseline" >&2; exit 1; }

release_build -p ka-router --bin ka-router -p ka-endpoint --bin ka-endpoint
# Linux calls NewReno "reno"
KCC=$CC; [[ "$CC" == newreno ]] && KCC=reno
export EP="$TARGET/release/ka-endpoint" BYTES ROUNDS CC KCC ENDPOINT_ARGS SENDER_ARGS BASE_ENDPOINT
RARGS=()
for a in $ROUTER_ARGS; do RARGS+=("--router-arg=$a"); done
export RESULTS="$(mktemp -t ka-goodput.XXXXXX)"
trap 'rm -f "$RESULTS"' EXIT

"$ROOT/examples/testbed/testbed.sh" --router "$TARGET/release/ka-router" --rate 100gbit \
    --name "kgp$$" ${RARGS[@]+"${RARGS[@]}"} -- '
set -euo pipefail
$A sysctl -qw net.ipv4.ip_forward=1
$B sysctl -qw net.ipv4.ip_forward=1
N=$(python3 -c "
import re,sys
m=re.fullmatch(r\"(\d+)([kKmMgG]?)(i?)B?\", sys.argv[1])
print(int(m[1]) * (1024 if m[3] else 1000) ** \" kmg\".index(m[2].lower() or \" \"))" "$BYTES")

# Machine-wide CPU jiffies: user+nice, system+irq+softirq, idle+iowait,
# then the user time of the router process.
cpu() {
    awk "/^cpu /{printf \"%d %d %d \", \$2+\$3, \$4+\$7+\$8, \$5+\$6}" /proc/stat
    awk "{print \$14}" "/proc/$KA_ROUTER_PID/stat"
}
# CPU used between two cpu() snapshots, in seconds: "user kernel idle router-user".
cpu_delta() { # $1 = before, $2 = after
    python3 -c "import os,sys; hz=os.sysconf(\"SC_CLK_TCK\"); a=sys.argv[1].split(); b=sys.argv[2].split(); print(*[(int(y)-int(x))/hz for x,y in zip(a,b)])" "$1" "$2"
}

endpoints() { # $1 = label, rest = extra ka-endpoint options; $EP the binary
    local label=$1; shift
    # shellcheck disable=SC2086
    set -- "$@" $ENDPOINT_ARGS
    $B "$EP" recv --tun kaep0 --addr 10.77.0.201/30 --listen 5001 --once --cc "$CC" "$@" 2>/dev/null >/dev/null &
    local rpid=$!
    sleep 0.5
    local j c0
    c0=$(cpu)
    # shellcheck disable=SC2086
    j=$($A "$EP" send --tun kaep0 --addr 10.77.0.101/30 --to 10.77.0.201:5001 --bytes "$N" \
        --cc "$CC" --json "$@" $SENDER_ARGS 2>/dev/null)
    local c1
    c1=$(cpu)
    wait $rpid || true
    echo "$label $(python3 -c "import json,sys; j=json.loads(sys.argv[1]); print(j[\"goodput_bps\"], j[\"ka_time_frac\"], j[\"retransmits\"])" "$j") $N $(cpu_delta "$c0" "$c1")" >> "$RESULTS"
}

kernel() {
    $B python3 -c "
import socket,time,sys
l=socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((\"10.77.0.2\", 5002)); l.listen(1)
c,_=l.accept(); n=0; b=bytearray(1<<20)
while True:
    k=c.recv_into(b)
    if not k: break
    n+=k
print(n, time.time(), flush=True)" > "$RESULTS.k" &
    local rpid=$!
    sleep 0.5
    local t0 c0 c1
    c0=$(cpu)
    t0=$($A python3 -c "
import socket,time,sys
n=int(sys.argv[1]); t0=time.time()
s=socket.create_connection((\"10.77.0.2\", 5002))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[2].encode())
buf=bytes(1<<20); left=n
while left > 0:
    k=s.send(memoryview(buf)[:min(left, len(buf))]); left-=k
s.shutdown(socket.SHUT_WR); s.recv(1)
print(t0)" "$N" "$KCC")
    wait $rpid
    c1=$(cpu)
    read -r n t1 < "$RESULTS.k"
    echo "kernel-tcp $(python3 -c "import sys; n,t0,t1=map(float,sys.argv[1:]); print(n*8/(t1-t0), 0, 0)" "$n" "$t0" "$t1") $n $(cpu_delta "$c0" "$c1")" >> "$RESULTS"
    rm -f "$RESULTS.k"
}

for r in $(seq "$ROUNDS"); do
    if [[ -n "$BASE_ENDPOINT" ]]; then
        EP="$BASE_ENDPOINT" endpoints ka-endpoint-base-ka
    fi
    endpoints ka-endpoint-ka
    endpoints ka-endpoint-tcp --no-ka
    kernel
    echo "round $r done" >&2
done
'

echo
echo "goodput through an unshaped ka-router (--rate 100gbit${ROUTER_ARGS:+ $ROUTER_ARGS}; endpoints${ENDPOINT_ARGS:+ $ENDPOINT_ARGS}${SENDER_ARGS:+; sender $SENDER_ARGS}), $BYTES per flow, cc $CC, medians of $ROUNDS rounds:"
python3 - "$RESULTS" <<'EOF'
import os, sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, g, frac, rtx, n, user, kern, idle, ruser = line.split()
    gbit = float(n) * 8 / 1e9
    cpus = os.cpu_count()
    # the path's cost were its endpoints' user space free: the kernel's
    # work plus the router's user space; cpus / that = a ceiling in Gbit/s
    floor = (float(kern) + float(ruser)) / gbit
    ticks = float(user) + float(kern) + float(idle)
    # a flow shorter than a clock tick may read no CPU time at all
    cpu = (float(user) / gbit, float(kern) / gbit, float(idle) / ticks if ticks else 0.0,
           floor, cpus / floor if floor else float("inf"))
    rows[label].append((float(g), float(frac), int(float(rtx)), cpu))
names = {
    "ka-endpoint-base-ka": "base ka-endpoint -> base, KA",
    "ka-endpoint-ka": "ka-endpoint -> ka-endpoint, KA",
    "ka-endpoint-tcp": "ka-endpoint -> ka-endpoint, --no-ka",
    "kernel-tcp": "Linux TCP -> Linux TCP",
}
for key in ["ka-endpoint-base-ka", "ka-endpoint-ka", "ka-endpoint-tcp", "kernel-tcp"]:
    v = rows.get(key)
    if not v and key == "ka-endpoint-base-ka":
        continue
    if not v:
        print(f"  {names[key]:38} (no result)")
        continue
    g = statistics.median(x[0] for x in v)
    per = ", ".join(f"{x[0] / 1e6:.0f}" for x in v)
    extra = ""
    if key != "kernel-tcp":
        extra = f"  KA time {statistics.median(x[1] for x in v) * 100:.0f} %, retransmits {statistics.median(x[2] for x in v):.0f}"
    print(f"  {names[key]:38} {g / 1e6:8.1f} Mbit/s  (rounds: {per}){extra}")
    u, k, i, f, c = (statistics.median(x[3][j] for x in v) for j in range(5))
    print(f"  {'':38} CPU per Gbit: {u:.3f} s user + {k:.3f} s kernel = {u + k:.3f} s; idle {i * 100:.0f} %")
    print(f"  {'':38} kernel + router user space: {f:.3f} s per Gbit, at most {c:.1f} Gbit/s on {os.cpu_count()} CPUs")
med = {k: statistics.median(x[0] for x in v) for k, v in rows.items() if v}
if "ka-endpoint-ka" in med and "kernel-tcp" in med:
    line = f"  KA / Linux {med['ka-endpoint-ka'] / med['kernel-tcp']:.2f}"
    if "ka-endpoint-base-ka" in med:
        line += f", base KA / Linux {med['ka-endpoint-base-ka'] / med['kernel-tcp']:.2f}"
        line += f", KA / base KA {med['ka-endpoint-ka'] / med['ka-endpoint-base-ka']:.2f}"
    print(line + " (medians)")
EOF

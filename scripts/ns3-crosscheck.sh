#!/usr/bin/env bash
# Cross-check of the paper's TCP (crates/ka-sim/scenarios/fig3-tcp.toml)
# against ns-3.44's TcpNewReno. See --help.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NS3_WHEEL="ns3==3.44.post0"
DIR="$ROOT/target/ns3-crosscheck"
DURATION=600
SEED=1
LONE=0
RECOVERY=prr
LONE_SIZES="1 2 3 4 5 10 20 50 100 200 500 1000 2000"

usage() {
    cat <<EOF
usage: scripts/ns3-crosscheck.sh [--duration SECONDS] [--seed N] [--lone]
                                 [--recovery prr|classic] [--dir DIR]

Runs the paper's Fig. 3 TCP-only scenario (32 on-off senders, off time
Exp(0.5 s), bounded-Pareto sizes of 1-2000 packets with mean 100 and
shape 1.8, on a 150 Mbit/s, 100 ms RTT dumbbell with a 1000-packet
drop-tail queue) twice: in ka-sim (crates/ka-sim/scenarios/fig3-tcp.toml,
the paper TCP profile on the real endpoint core) and in ns-3.44 with
TcpNewReno set up the same way (scripts/ns3/fig3-tcp.cc). Prints the mean
flow completion time per size bucket of both and their ratio, and the
largest deviation, then the speed ratio: the wall time of the ns-3 run
over that of the ka-sim run (whole processes, measured alike). The two
runs draw their workloads from different random generators, so they
agree in distribution only: the default 600 s gives about 13 000 flows a
run (100 in the 1001-2000 bucket).

  --duration S    simulated seconds per run (default 600)
  --seed N        workload seed of both runs (default 1)
  --lone          instead: one flow at a time, alone on the dumbbell, of
                  each of $LONE_SIZES packets; prints
                  both FCTs per size (deterministic, no sampling noise)
  --recovery R    ns-3's loss recovery: prr (its default) or classic
                  (no loss occurs in this scenario; it does not matter)
  --dir DIR       work directory (default target/ns3-crosscheck)

Needs python3 (venv, pip), g++ and cargo. On first use it creates a
virtualenv in DIR and installs the ns-3.44 wheel from PyPI without its
Python-binding dependencies ($NS3_WHEEL, about 300 MB; the wheel
ships ns-3's headers and shared libraries), then compiles
scripts/ns3/fig3-tcp.cc against it (about 15 s). Both steps are skipped
when already done. Time on a 2-core machine at the default 600 s: ns-3
1-3 minutes, ka-sim 5-15 s (plus its release build if stale); --lone
takes seconds.
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --lone) LONE=1; shift ;;
    --recovery) RECOVERY="$2"; shift 2 ;;
    --dir) DIR="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$RECOVERY" in prr | classic) ;; *) echo "--recovery: prr or classic" >&2; exit 2 ;; esac

for tool in python3 g++ cargo; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool not found." >&2
        [ "$tool" = g++ ] && echo "  install it with: apt-get install -y g++" >&2
        exit 1
    fi
done

mkdir -p "$DIR"
VENV="$DIR/venv"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
    echo "creating $VENV" >&2
    python3 -m venv "$VENV"
fi
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
NS3="$SITE/ns3"
if [ ! -f "$NS3/include/ns3/tcp-socket-base.h" ]; then
    echo "installing $NS3_WHEEL into $VENV" >&2
    "$VENV/bin/pip" install --quiet --no-deps "$NS3_WHEEL"
fi

BIN="$DIR/fig3-tcp"
SRC="$ROOT/scripts/ns3/fig3-tcp.cc"
if [ ! -x "$BIN" ] || [ "$SRC" -nt "$BIN" ]; then
    echo "compiling $SRC" >&2
    # The wheel's libraries are a release build with logging and asserts
    # compiled in (lib64/cmake/ns3/ns3Targets.cmake): same defines here.
    g++ -std=c++20 -O2 -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
        -I"$NS3/include" "$SRC" -o "$BIN" \
        -L"$NS3/lib64" -Wl,-rpath,"$NS3/lib64" \
        -lns3.44-core -lns3.44-network -lns3.44-internet -lns3.44-point-to-point \
        -lns3.44-traffic-control
fi

echo "building ka-sim (release)" >&2
cargo build --quiet --release -p ka-sim --manifest-path "$ROOT/Cargo.toml"
KASIM="$ROOT/target/release/ka-sim"
SCENARIO="$ROOT/crates/ka-sim/scenarios/fig3-tcp.toml"

if [ "$LONE" = 1 ]; then
    KA_CSV="$DIR/lone-ka-sim.csv"
    : >"$KA_CSV"
    for n in $LONE_SIZES; do
        # One sender, every flow exactly n packets (sizes in [n, n + 0.4]).
        sed -e 's/^count = .*/count = 1/' \
            -e "s/^sizes = .*/sizes = { min_pkts = $n.0, max_pkts = $n.4, shape = 1.8, mean_pkts = $n.1 }/" \
            "$SCENARIO" >"$DIR/lone-$n.toml"
        "$KASIM" run "$DIR/lone-$n.toml" --duration 12 --seed "$SEED" --out "$DIR/lone-$n" 2>/dev/null
        if [ ! -s "$KA_CSV" ]; then head -n 1 "$DIR/lone-$n/flows.csv" >"$KA_CSV"; fi
        tail -n +2 "$DIR/lone-$n/flows.csv" >>"$KA_CSV"
    done
    sizes="$(echo $LONE_SIZES | tr ' ' ',')"
    "$BIN" --lone="$sizes" --duration=100 --seed="$SEED" --recovery="$RECOVERY" \
        --out="$DIR/lone-ns3.csv"
    python3 "$ROOT/scripts/ns3/buckets.py" --by-size "$KA_CSV" "$DIR/lone-ns3.csv"
    exit 0
fi

# Wall time of a whole process (start-up and output included), seconds;
# user CPU time too where /usr/bin/time exists (less noisy on a shared
# machine).
now_s() { date +%s.%N; }
timed() { # file command...
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%U' -o "$1" "${@:2}"
    else
        echo nan >"$1"
        "${@:2}"
    fi
}
echo "ka-sim: $SCENARIO, $DURATION s" >&2
rm -rf "$DIR/ka-sim"
t0=$(now_s)
timed "$DIR/ka-sim.user" "$KASIM" run "$SCENARIO" --duration "$DURATION" --seed "$SEED" \
    --out "$DIR/ka-sim"
t1=$(now_s)
echo "ns-3.44: $DURATION s (minutes at the default 600 s)" >&2
timed "$DIR/ns3.user" "$BIN" --duration="$DURATION" --seed="$SEED" --recovery="$RECOVERY" \
    --out="$DIR/ns3-flows.csv"
t2=$(now_s)
echo
echo "Fig. 3 TCP only, mean FCT of completed flows per size bucket (packets):"
python3 "$ROOT/scripts/ns3/buckets.py" "$DIR/ka-sim/flows.csv" "$DIR/ns3-flows.csv"
# Speed: both runs' process wall times, measured the same way, and ka-sim's
# own event-loop wall time from its summary.json.
python3 - "$t0" "$t1" "$t2" "$DIR/ka-sim/summary.json" "$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)" \
    "$(tail -n 1 "$DIR/ka-sim.user")" "$(tail -n 1 "$DIR/ns3.user")" <<'PY'
import json, sys
t0, t1, t2 = map(float, sys.argv[1:4])
ka, ns3 = t1 - t0, t2 - t1
loop = json.load(open(sys.argv[4])).get("wall_seconds")
ka_user, ns3_user = float(sys.argv[6]), float(sys.argv[7])
print()
print(f"Speed (wall, whole process): ns-3 {ns3:.2f} s, ka-sim {ka:.2f} s "
      f"(event loop {loop:.2f} s): ns-3 / ka-sim = {ns3 / ka:.1f}x "
      f"(load average {sys.argv[5] or '?'})")
if ka_user == ka_user and ka_user > 0:  # not NaN
    print(f"Speed (user CPU): ns-3 {ns3_user:.2f} s, ka-sim {ka_user:.2f} s: "
          f"ns-3 / ka-sim = {ns3_user / ka_user:.1f}x")
PY

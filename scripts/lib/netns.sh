# Network-namespace helpers of the testbed and bench scripts (root and
# iproute2). Sourced by examples/testbed/testbed.sh and
# benches/forwarding/bridge.sh.

# netns_add NS...: creates each namespace, its loopback up.
netns_add() {
    local ns
    for ns in "$@"; do
        ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
}

# netns_del NS...: deletes each namespace (and the devices in it) that
# exists.
netns_del() {
    local ns
    for ns in "$@"; do ip netns del "$ns" 2>/dev/null || true; done
}

# stop_pid PID: asks a child process to end (SIGTERM), gives it 5 s, then
# kills it, and reaps it. Succeeds whether or not it was still running.
stop_pid() {
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

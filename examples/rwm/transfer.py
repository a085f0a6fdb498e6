#!/usr/bin/env python3
"""One measurement of examples/rwm/run.sh, run inside examples/testbed/testbed.sh
(root namespace; $A / $B run commands in the namespaces).

N servers in B each send BYTES to their client in A (the seed's downloads:
the client opens the connection, the server sends with kernel CUBIC); all
clients start together. A `ping -D -i 0.05` from A to B runs alongside.
Appends one line per flow and one ping line to --out:

  flow  RTT_MS FLOWS VARIANT ROUND I FCT_S BYTES
  ping  RTT_MS FLOWS VARIANT ROUND IDLE_MEAN_MS RTT_MS…   (every reply, ms)

Ping statistics cover the replies received while every flow was running
(from the last client's connect to the first client's EOF).
"""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

SERVER = r"""
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
l.bind(("10.77.0.2", port)); l.listen(1)
print("up", flush=True)
c, _ = l.accept()
buf = bytes(1 << 20); left = n
while left > 0:
    left -= c.send(memoryview(buf)[:min(left, len(buf))])
c.shutdown(socket.SHUT_WR); c.recv(1); c.close()
"""

CLIENT = r"""
import socket, sys, time
port = int(sys.argv[1])
t0 = time.time()
s = socket.create_connection(("10.77.0.2", port))
t1 = time.time()
b = bytearray(1 << 20); n = 0
while True:
    k = s.recv_into(b)
    if not k:
        break
    n += k
t2 = time.time()
s.close()
print(t0, t1, t2, n, flush=True)
"""


def ns(prefix_var):
    return shlex.split(os.environ[prefix_var])


def ping_stats(lines, start, end):
    idle, busy = [], []
    for line in lines:
        if not line.startswith("[") or "time=" not in line:
            continue
        ts = float(line[1:line.index("]")])
        rtt = float(line.split("time=")[1].split()[0])
        if ts < start:
            idle.append(rtt)
        elif ts <= end:
            busy.append(rtt)
    return idle, busy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flows", type=int, required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--label", required=True, help="RTT_MS FLOWS VARIANT ROUND")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    A, B = ns("A"), ns("B")
    for pre in (A, B):
        for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
            subprocess.run(pre + ["sysctl", "-qw", f"{key}=4096 131072 62914560"], check=True)
    servers = []
    for i in range(a.flows):
        p = subprocess.Popen(B + ["python3", "-c", SERVER, str(6000 + i), str(a.bytes)],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "up"
        servers.append(p)
    if shutil.which("ping") is None:
        sys.exit("transfer.py: needs ping (Debian: apt install iputils-ping)")
    ping = subprocess.Popen(A + ["ping", "-D", "-n", "-i", "0.05", "10.77.0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(1.0)  # idle-path pings first
    clients = [subprocess.Popen(A + ["python3", "-c", CLIENT, str(6000 + i)],
                                stdout=subprocess.PIPE, text=True)
               for i in range(a.flows)]
    rows = []
    for c in clients:
        out, _ = c.communicate(timeout=900)
        t0, t1, t2, n = out.split()
        rows.append((float(t0), float(t1), float(t2), int(n)))
    for s in servers:
        s.wait(timeout=60)
    ping.terminate()
    lines, _ = ping.communicate(timeout=10)
    start = max(r[1] for r in rows) + 0.2
    end = min(r[2] for r in rows)
    first = min(r[0] for r in rows)
    idle, _ = ping_stats(lines.splitlines(), first, first)
    _, busy = ping_stats(lines.splitlines(), start, end)
    with open(a.out, "a") as f:
        for i, (t0, t1, t2, n) in enumerate(rows):
            if n != a.bytes:
                print(f"flow {i}: got {n} of {a.bytes} bytes", file=sys.stderr)
            f.write(f"flow {a.label} {i} {t2 - t0:.4f} {n}\n")
        idle_mean = statistics.mean(idle) if idle else float("nan")
        f.write(f"ping {a.label} {idle_mean:.3f} " + " ".join(f"{x:g}" for x in busy) + "\n")
    fcts = ", ".join(f"{r[2] - r[0]:.2f}" for r in rows)
    print(f"{a.label}: FCT {fcts} s; ping during {len(busy)} replies, mean "
          f"{statistics.mean(busy) if busy else float('nan'):.2f} ms", file=sys.stderr)


if __name__ == "__main__":
    main()

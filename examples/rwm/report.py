#!/usr/bin/env python3
"""Tables from the results of examples/rwm/run.sh (netns testbed) or
examples/rwm/sim.sh (ka-sim): the RWM seed's Table I and the Fig. 3 FCT
comparison, with the seed's numbers beside ours.

  examples/rwm/report.py RESULTS [--markdown]
"""
import collections
import statistics
import sys

VARIANTS = ["none", "minus", "exact", "plus"]
NAMES = {"none": "no RWM", "minus": "RWM BDP−10 %", "exact": "RWM exact BDP",
         "plus": "RWM BDP+10 %"}
# Seed Table I (20 ms RTT, 1 Gbit/s, ms).
SEED_TABLE = {("none", 1): (12.8, 53.2, 42.8, 56.0, 64.4, 71.2),
              ("none", 4): (15.9, 52.8, 41.9, 58.5, 65.1, 71.0),
              ("exact", 1): (0.2, 21.0, 21.0, 21.0, 21.0, 21.3),
              ("exact", 4): (0.2, 20.4, 20.3, 20.4, 20.6, 25.5)}


def quartiles(v):
    v = sorted(v)
    if len(v) == 1:
        return v[0], v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[1], q[2]


def main():
    path = sys.argv[1]
    flows = collections.defaultdict(list)  # (rtt, n, variant) -> [fct]
    maxes = collections.defaultdict(list)  # (rtt, n, variant) -> [max fct of a run]
    runs = collections.defaultdict(list)
    pings = collections.defaultdict(list)  # (rtt, n, variant) -> [rtt samples]
    idle = collections.defaultdict(list)
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "flow":
            rtt, n, var, rnd, _i, fct, _b = f[1:8]
            key = (int(rtt), int(n), var)
            flows[key].append(float(fct))
            runs[key + (rnd,)].append(float(fct))
        elif f[0] == "ping":
            rtt, n, var, _rnd, idle_mean = f[1:6]
            key = (int(rtt), int(n), var)
            idle[key].append(float(idle_mean))
            pings[key].extend(float(x) for x in f[6:])
    for (rtt, n, var, _), v in runs.items():
        maxes[(rtt, n, var)].append(max(v))

    print("Table I — ping RTT during the transfers, 20 ms RTT (ms): ours | seed")
    print()
    print("| control | flows | std | mean | 25th | 50th | 75th | max | replies | seed std | seed mean | seed 25th | seed 50th | seed 75th | seed max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for var in ["none", "exact"]:
        for n in (1, 4):
            v = pings.get((20, n, var))
            if not v:
                continue
            q1, q2, q3 = quartiles(v)
            seed = SEED_TABLE[(var, n)]
            name = "none" if var == "none" else "RWM"
            print(f"| {name} | {n} | {statistics.pstdev(v):.1f} | {statistics.mean(v):.1f} | "
                  f"{q1:.1f} | {q2:.1f} | {q3:.1f} | {max(v):.1f} | {len(v)} | "
                  + " | ".join(f"{x:.1f}" for x in seed) + " |")
    print()
    print("Fig. 3 — flow completion time (s): 25th / 50th / 75th percentile over all transfers")
    rtts = sorted({k[0] for k in flows})
    ns = sorted({k[1] for k in flows})
    for n in ns:
        print()
        print(f"{n} concurrent transfer{'s' if n > 1 else ''}:")
        print()
        print("| RTT | " + " | ".join(NAMES[v] for v in VARIANTS) + " | median gain of exact BDP | transfers |")
        print("|---:|" + "---:|" * (len(VARIANTS) + 2))
        for rtt in rtts:
            cells, count = [], 0
            for var in VARIANTS:
                v = flows.get((rtt, n, var))
                if not v:
                    cells.append("–")
                    continue
                count = max(count, len(v))
                q1, q2, q3 = quartiles(v)
                cells.append(f"{q1:.2f} / **{q2:.2f}** / {q3:.2f}")
            none, exact = flows.get((rtt, n, "none")), flows.get((rtt, n, "exact"))
            gain = "–"
            if none and exact:
                gain = f"{(1 - statistics.median(exact) / statistics.median(none)) * 100:+.0f} %"
            print(f"| {rtt} ms | " + " | ".join(cells) + f" | {gain} | {count} |")
        if n > 1:
            print()
            print(f"Slowest of each set of {n} (Fig. 5), median (s):")
            print()
            print("| RTT | " + " | ".join(NAMES[v] for v in VARIANTS) + " |")
            print("|---:|" + "---:|" * len(VARIANTS))
            for rtt in rtts:
                cells = []
                for var in VARIANTS:
                    v = maxes.get((rtt, n, var))
                    cells.append(f"{statistics.median(v):.2f}" if v else "–")
                print(f"| {rtt} ms | " + " | ".join(cells) + " |")
    print()
    print("Ping RTT mean during the transfers (ms), all RTTs:")
    print()
    print("| RTT | flows | idle | " + " | ".join(NAMES[v] for v in VARIANTS) + " |")
    print("|---:|---:|---:|" + "---:|" * len(VARIANTS))
    for rtt in rtts:
        for n in ns:
            cells = []
            for var in VARIANTS:
                v = pings.get((rtt, n, var))
                cells.append(f"{statistics.mean(v):.1f}" if v else "–")
            i = [x for var in VARIANTS for x in idle.get((rtt, n, var), []) if x == x]
            print(f"| {rtt} ms | {n} | {statistics.mean(i):.1f} | " if i else f"| {rtt} ms | {n} | – | ",
                  end="")
            print(" | ".join(cells) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Mean flow completion time of two flows.csv files (ka-sim's and the ns-3
program's, scripts/ns3/fig3-tcp.cc) side by side with their ratio, per
flow-size bucket or (--by-size) per exact size. Only completed flows count.

usage: buckets.py [--by-size] KA_SIM_FLOWS.csv NS3_FLOWS.csv
"""
import csv
import math
import sys

BUCKETS = [(1, 10), (11, 50), (51, 100), (101, 500), (501, 1000), (1001, 2000)]


def read(path):
    """(size in packets, FCT in s) of every completed flow."""
    with open(path, newline="") as f:
        return [
            (int(row["size_pkts"]), float(row["fct_s"]))
            for row in csv.DictReader(f)
            if row.get("fct_s")
        ]


def mean_in(flows, lo, hi):
    v = [fct for size, fct in flows if lo <= size <= hi]
    return (sum(v) / len(v) if v else math.nan), len(v)


def main():
    args = sys.argv[1:]
    by_size = "--by-size" in args
    args = [a for a in args if a != "--by-size"]
    if len(args) != 2:
        sys.exit(__doc__)
    ka, ns = read(args[0]), read(args[1])
    if by_size:
        rows = [(s, s) for s in sorted({s for s, _ in ka} | {s for s, _ in ns})]
        prec = 6
    else:
        rows = BUCKETS
        prec = 3
    print(f"{'packets':>10} | {'ka-sim (s)':>10} {'n':>6} | {'ns-3 (s)':>10} {'n':>6} | ka/ns-3")
    print("-" * 61)
    worst = 0.0
    for lo, hi in rows:
        (k, kn), (m, mn) = mean_in(ka, lo, hi), mean_in(ns, lo, hi)
        ratio = k / m if kn and mn else math.nan
        if kn and mn:
            worst = max(worst, abs(ratio - 1.0))
        label = f"{lo}" if lo == hi else f"{lo}-{hi}"
        print(f"{label:>10} | {k:>10.{prec}f} {kn:>6} | {m:>10.{prec}f} {mn:>6} | {ratio:7.4f}")
    print(f"largest deviation: {100 * worst:.2f} %")


if __name__ == "__main__":
    main()

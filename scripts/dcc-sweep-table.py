#!/usr/bin/env python3
"""Table of the DCC sweep (crates/ka-sim/scenarios/dcc-sweep-{lccp,tcp}.toml).

Usage: python3 scripts/dcc-sweep-table.py OUT [--csv FILE] [--feedback direct,ack]

OUT holds the two sweeps' output directories, OUT/lccp and OUT/tcp (run by
`ka-sim sweep ... --out OUT/lccp` and `--out OUT/tcp`). For every grid
point (all axes but the seed) it pairs LCCP's and TCP's runs by seed (the
same arrival times) and prints one Markdown row per LCCP feedback channel: the mean FCTs, the mean
per-seed gain g = (T - L)/T with its 95 % confidence interval (Student's
t), TCP's retransmission timeouts per run and the middle link's idle time
while flows wait (both schemes), and whether the seed's "30% to 40%
faster" holds there: `30-40` if the interval lies within [25 %, 45 %] and
its mean within [30 %, 40 %], `>40` / `<30` otherwise when the interval
excludes the band, `~` when the interval straddles a band edge.
"""

import csv
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def mean_ci(v):
    n = len(v)
    m = sum(v) / n
    if n < 2:
        return m, 0.0
    s = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1))
    t = T975[n - 2] if n - 2 < len(T975) else 1.96
    return m, t * s / math.sqrt(n)


def load(d):
    """{(params without seed): {seed: record}}"""
    out = defaultdict(dict)
    for p in sorted(Path(d).glob("p*/point.csv")):
        with open(p) as f:
            row = next(csv.DictReader(f))
        summ = json.loads((p.parent / "summary.json").read_text())
        h = summ.get("headline") or {}
        key = (int(row["packet_bytes"]), row["tcp.profile"],
               2 * float(row["topology.middle_delay_ms"]) + 4,
               int(row["topology.middle_queue_pkts"]),
               row.get("topology.feedback", "direct"))
        out[key][int(row["seed"])] = {
            "fct": float(row["mean_fct_s"]) if row["mean_fct_s"] else math.nan,
            "done": int(row["completed"]) == int(row["flows"]),
            "rtos": h.get("rtos", math.nan),
            "idle": h.get("middle_idle_while_busy_s", math.nan),
        }
    return out


def verdict(m, h):
    lo, hi = m - h, m + h
    if lo >= 0.25 and hi <= 0.45 and 0.30 <= m <= 0.40:
        return "30-40"
    if lo > 0.40:
        return ">40"
    if hi < 0.30:
        return "<30"
    return "~"


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    out = Path(args[0])
    csv_path = args[args.index("--csv") + 1] if "--csv" in args else None
    feedbacks = (args[args.index("--feedback") + 1].split(",") if "--feedback" in args
                 else ["direct", "ack"])
    lccp, tcp = load(out / "lccp"), load(out / "tcp")
    rows = []
    tcp = {k[:4]: v for k, v in tcp.items()}
    for key in sorted(k for k in lccp if k[:4] in tcp):
        pkt, prof, rtt, buf, feedback = key
        if feedback not in feedbacks:
            continue
        seeds = sorted(set(lccp[key]) & set(tcp[key[:4]]))
        L = [lccp[key][s] for s in seeds]
        T = [tcp[key[:4]][s] for s in seeds]
        g = [(t["fct"] - l["fct"]) / t["fct"] for l, t in zip(L, T)]
        m, h = mean_ci(g)
        bdp = rtt * 1e-3 * 1e6 / 8 / pkt
        avg = lambda xs, k: sum(x[k] for x in xs) / len(xs)
        rows.append({
            "feedback": feedback, "pkt": pkt, "profile": prof, "rtt_ms": rtt, "buf_pkts": buf,
            "buf_bdp": buf / bdp, "seeds": len(seeds),
            "tcp_fct": avg(T, "fct"), "lccp_fct": avg(L, "fct"),
            "gain": m, "gain_ci": h, "tcp_rtos": avg(T, "rtos"),
            "tcp_idle": avg(T, "idle"), "lccp_idle": avg(L, "idle"),
            "lccp_rtos": avg(L, "rtos"),
            "all_done": all(x["done"] for x in L + T),
            "verdict": verdict(m, h),
        })
    print("| LCCP feedback | pkt | TCP | RTT ms | buffer pkts (BDP) | seeds | TCP FCT s | LCCP FCT s "
          "| gain % [95 % CI] | TCP RTOs/run | idle s TCP / LCCP | 30-40 %? |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['feedback']} | {r['pkt']} | {r['profile']} | {r['rtt_ms']:.0f} | {r['buf_pkts']} "
              f"({r['buf_bdp']:.1f}) | {r['seeds']}{'' if r['all_done'] else '*'} "
              f"| {r['tcp_fct']:.2f} | {r['lccp_fct']:.2f} "
              f"| {100 * r['gain']:.1f} [{100 * (r['gain'] - r['gain_ci']):.1f}, "
              f"{100 * (r['gain'] + r['gain_ci']):.1f}] | {r['tcp_rtos']:.1f} "
              f"| {r['tcp_idle']:.1f} / {r['lccp_idle']:.1f} | {r['verdict']} |")
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()

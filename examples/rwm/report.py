#!/usr/bin/env python3
"""Tables and box plots from the results of examples/rwm/run.sh (netns
testbed) or examples/rwm/sim.sh (ka-sim): the RWM seed's Table I, Fig. 3
(FCT of every transfer per RTT, four boxes per RTT) and Fig. 5 (the slowest
of each set of four), with the seed's numbers beside ours.

  examples/rwm/report.py RESULTS... [--svg DIR] [--compare OTHER]

Several RESULTS files are pooled (the rounds of each stay separate sets).

--svg DIR writes DIR/fig3a.svg (one transfer), DIR/fig3b.svg (four) and
DIR/fig5.svg in the seed's style: boxes from the 25th to the 75th
percentile, the median as a line, whiskers to the farthest point within
1.5 IQR, points beyond as dots. Plain SVG, no plotting library.
--compare OTHER (e.g. RESULTS from run.sh, OTHER from sim.sh) adds, per
combination both hold, the median FCT and mean ping RTT of each and
RESULTS' median over OTHER's.
"""
import argparse
import collections
import os
import random
import statistics

VARIANTS = ["minus", "exact", "plus", "none"]  # the seed's box order
NAMES = {"none": "no RWM", "minus": "RWM BDP−10 %", "exact": "RWM exact BDP",
         "plus": "RWM BDP+10 %"}
COLOURS = {"minus": "#4c72b0", "exact": "#55a868", "plus": "#dd8452", "none": "#c44e52"}
# Seed Table I (20 ms RTT, 1 Gbit/s, ms): std, mean, 25th, 50th, 75th, max.
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


def load(paths):
    flows = collections.defaultdict(list)  # (rtt, n, variant) -> [fct]
    runs = collections.defaultdict(list)   # (rtt, n, variant, round) -> [fct]
    pings = collections.defaultdict(list)  # (rtt, n, variant) -> [rtt samples]
    idle = collections.defaultdict(list)
    router = collections.defaultdict(list)  # (rtt, n, variant) -> [(sojourn ms, drops)]
    for file, path in enumerate(paths):
        for line in open(path):
            f = line.split()
            if not f:
                continue
            if f[0] == "flow":
                rtt, n, var, rnd, _i, fct, _b = f[1:8]
                key = (int(rtt), int(n), var)
                flows[key].append(float(fct))
                runs[key + ((file, rnd),)].append(float(fct))
            elif f[0] == "ping":
                rtt, n, var, _rnd, idle_mean = f[1:6]
                key = (int(rtt), int(n), var)
                idle[key].append(float(idle_mean))
                pings[key].extend(float(x) for x in f[6:])
            elif f[0] == "router":
                rtt, n, var, _rnd, soj, drops = f[1:7]
                router[(int(rtt), int(n), var)].append((float(soj), float(drops)))
    maxes = collections.defaultdict(list)  # (rtt, n, variant) -> [max fct of a run]
    for (rtt, n, var, _), v in sorted(runs.items()):
        maxes[(rtt, n, var)].append(max(v))
    return flows, maxes, pings, idle, router


def gain(data, rtt, n, var):
    """The seed's improvement: distance between the 50th percentiles of
    no RWM and VAR, as a share of no RWM's."""
    none, ctl = data.get((rtt, n, "none")), data.get((rtt, n, var))
    if not none or not ctl:
        return None
    return 1 - statistics.median(ctl) / statistics.median(none)


def gain_ci(data, rtt, n, var, draws=2000):
    """95 % bootstrap interval of gain() (transfers resampled with
    replacement within each box, a fixed random seed)."""
    none, ctl = data.get((rtt, n, "none")), data.get((rtt, n, var))
    if not none or not ctl or len(none) < 5 or len(ctl) < 5:
        return None
    # Sorted first: the interval depends on the values, not on the order
    # the runs were written in (sim.sh's workers append as they finish).
    none, ctl = sorted(none), sorted(ctl)
    rng = random.Random(1)
    g = sorted(1 - statistics.median(rng.choices(ctl, k=len(ctl)))
               / statistics.median(rng.choices(none, k=len(none))) for _ in range(draws))
    return g[int(0.025 * draws)], g[int(0.975 * draws) - 1]


def fct_table(title, data, rtts, n):
    print()
    print(title)
    print()
    print("| RTT | " + " | ".join(NAMES[v] for v in VARIANTS)
          + " | gain of exact (50th) | best gain (50th) | per box |")
    print("|---:|" + "---:|" * (len(VARIANTS) + 3))
    for rtt in rtts:
        cells, count = [], set()
        for var in VARIANTS:
            v = data.get((rtt, n, var))
            if not v:
                cells.append("–")
                continue
            count.add(len(v))
            q1, q2, q3 = quartiles(v)
            cells.append(f"{q1:.2f} / **{q2:.2f}** / {q3:.2f}")
        g = gain(data, rtt, n, "exact")
        ci = gain_ci(data, rtt, n, "exact")
        ci = f" [{ci[0] * 100:+.0f}, {ci[1] * 100:+.0f}]" if ci else ""
        gains = [x for x in (gain(data, rtt, n, v) for v in ("minus", "exact", "plus"))
                 if x is not None]
        best = f"{max(gains) * 100:+.0f} %" if gains else "–"
        print(f"| {rtt} ms | " + " | ".join(cells)
              + f" | {'–' if g is None else f'{g * 100:+.0f} %{ci}'} | {best} | "
              + "/".join(str(c) for c in sorted(count)) + " |")


def box_svg(path, title, data, rtts, n, ylabel):
    """Categorical box plot, one category per RTT, one box per variant."""
    keys = [(rtt, var) for rtt in rtts for var in VARIANTS if data.get((rtt, n, var))]
    if not keys:
        return
    vals = [x for rtt, var in keys for x in data[(rtt, n, var)]]
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * 0.08 or 1.0
    lo, hi = max(0.0, lo - pad), hi + pad
    w, h, ml, mr, mt, mb = 760, 420, 64, 16, 40, 70
    pw, ph = w - ml - mr, h - mt - mb
    cat_w = pw / len(rtts)
    box_w = cat_w / (len(VARIANTS) + 1)

    def y(v):
        return mt + ph * (1 - (v - lo) / (hi - lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    # Y grid and labels.
    step = 10 ** len(str(int((hi - lo) / 5))) / 10 if hi - lo >= 5 else 1.0
    while (hi - lo) / step > 10:
        step *= 2
    t = (int(lo / step) + 1) * step
    while t < hi:
        out.append(f'<line x1="{ml}" x2="{w - mr}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{ml - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        t += step
    out.append(f'<text x="16" y="{mt + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {mt + ph / 2})">{ylabel}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    for ci, rtt in enumerate(rtts):
        cx0 = ml + ci * cat_w
        out.append(f'<text x="{cx0 + cat_w / 2:.1f}" y="{mt + ph + 18}" '
                   f'text-anchor="middle">{rtt} ms</text>')
        for vi, var in enumerate(VARIANTS):
            v = data.get((rtt, n, var))
            if not v:
                continue
            q1, q2, q3 = quartiles(v)
            iqr = q3 - q1
            inside = [x for x in v if q1 - 1.5 * iqr <= x <= q3 + 1.5 * iqr]
            wl, wh = min(inside), max(inside)
            x0 = cx0 + box_w * (vi + 0.5)
            xm = x0 + box_w / 2
            c = COLOURS[var]
            out.append(f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{y(wl):.1f}" y2="{y(q1):.1f}" stroke="#333"/>')
            out.append(f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{y(q3):.1f}" y2="{y(wh):.1f}" stroke="#333"/>')
            for wv in (wl, wh):
                out.append(f'<line x1="{x0 + box_w * 0.25:.1f}" x2="{x0 + box_w * 0.75:.1f}" '
                           f'y1="{y(wv):.1f}" y2="{y(wv):.1f}" stroke="#333"/>')
            out.append(f'<rect x="{x0:.1f}" y="{y(q3):.1f}" width="{box_w:.1f}" '
                       f'height="{max(y(q1) - y(q3), 0.5):.1f}" fill="{c}" stroke="#333"/>')
            out.append(f'<line x1="{x0:.1f}" x2="{x0 + box_w:.1f}" y1="{y(q2):.1f}" '
                       f'y2="{y(q2):.1f}" stroke="#111" stroke-width="2"/>')
            for x in v:
                if x < wl or x > wh:
                    out.append(f'<circle cx="{xm:.1f}" cy="{y(x):.1f}" r="2" fill="none" stroke="#333"/>')
    lx = ml
    for var in VARIANTS:
        out.append(f'<rect x="{lx}" y="{h - 26}" width="12" height="12" fill="{COLOURS[var]}" stroke="#333"/>')
        out.append(f'<text x="{lx + 16}" y="{h - 16}">{NAMES[var]}</text>')
        lx += 150
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def compare(name, flows, pings, other):
    oflows, _, opings, _, _ = load([other])
    print()
    print(f"{name} against {other}: median FCT (s), ratio, and mean ping RTT (ms) "
          "per combination")
    print()
    print("| RTT | flows | variant | median FCT | other | ratio | ping mean | other |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for key in sorted(set(flows) & set(oflows),
                      key=lambda k: (k[1], k[0], VARIANTS.index(k[2]))):
        rtt, n, var = key
        m, o = statistics.median(flows[key]), statistics.median(oflows[key])
        p, op = pings.get(key), opings.get(key)
        print(f"| {rtt} ms | {n} | {NAMES[var]} | {m:.2f} | {o:.2f} | {m / o:.2f} | "
              f"{statistics.mean(p) if p else float('nan'):.1f} | "
              f"{statistics.mean(op) if op else float('nan'):.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--svg", metavar="DIR", help="write fig3a.svg, fig3b.svg, fig5.svg here")
    ap.add_argument("--compare", metavar="OTHER", help="results of the other setup")
    a = ap.parse_args()
    flows, maxes, pings, idle, router = load(a.results)
    rtts = sorted({k[0] for k in flows})
    ns = sorted({k[1] for k in flows})

    print("Table I — ping RTT during the transfers, 20 ms RTT (ms): ours | seed")
    print()
    print("| control | flows | std | mean | 25th | 50th | 75th | max | samples | seed std | seed mean | seed 25th | seed 50th | seed 75th | seed max |")
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
    print("Table I at every RTT — ping RTT during the transfers, mean ± std (ms); "
          "idle = before the transfers:")
    print()
    print("| RTT | flows | idle | " + " | ".join(NAMES[v] for v in VARIANTS)
          + " | exact − nominal |")
    print("|---:|---:|---:|" + "---:|" * (len(VARIANTS) + 1))
    for rtt in rtts:
        for n in ns:
            cells = []
            for var in VARIANTS:
                v = pings.get((rtt, n, var))
                cells.append(f"{statistics.mean(v):.1f} ± {statistics.pstdev(v):.1f}"
                             if v else "–")
            i = [x for var in VARIANTS for x in idle.get((rtt, n, var), []) if x == x]
            e = pings.get((rtt, n, "exact"))
            d = f"{statistics.mean(e) - rtt:+.2f}" if e else "–"
            print(f"| {rtt} ms | {n} | {statistics.mean(i):.1f} | " if i
                  else f"| {rtt} ms | {n} | – | ", end="")
            print(" | ".join(cells) + f" | {d} |")

    print()
    print("Fig. 3 — flow completion time (s): 25th / 50th / 75th percentile over all "
          "transfers; gain = 1 − 50th(RWM) / 50th(no RWM), the seed's \"distance "
          "between the 50th percentiles\" (seed: up to 46 % with one transfer, 70 % with four), "
          "[95 % bootstrap interval]")
    for n in ns:
        fct_table(f"{n} concurrent transfer{'s' if n > 1 else ''}:", flows, rtts, n)
    for n in ns:
        if n > 1:
            fct_table(f"Fig. 5 — the slowest of each set of {n} (s):", maxes, rtts, n)
    if router:
        print()
        print("The router's data direction (run.sh): mean queueing delay (ms) / drops, "
              "mean per run")
        print()
        print("| RTT | flows | " + " | ".join(NAMES[v] for v in VARIANTS) + " |")
        print("|---:|---:|" + "---:|" * len(VARIANTS))
        for n in ns:
            for rtt in rtts:
                cells = []
                for var in VARIANTS:
                    v = router.get((rtt, n, var))
                    cells.append(f"{statistics.mean(x[0] for x in v):.1f} / "
                                 f"{statistics.mean(x[1] for x in v):.0f}" if v else "–")
                print(f"| {rtt} ms | {n} | " + " | ".join(cells) + " |")
    if a.compare:
        compare(" + ".join(a.results), flows, pings, a.compare)
    if a.svg:
        os.makedirs(a.svg, exist_ok=True)
        written = []
        for n, name in ((1, "fig3a"), (4, "fig3b")):
            if n in ns:
                written.append(os.path.join(a.svg, f"{name}.svg"))
                box_svg(written[-1],
                        f"FCT, {n} transfer{'s' if n > 1 else ''} starting together",
                        flows, rtts, n, "flow completion time (s)")
        if 4 in ns:
            written.append(os.path.join(a.svg, "fig5.svg"))
            box_svg(written[-1], "Slowest of each set of four",
                    maxes, rtts, 4, "max flow completion time (s)")
        print()
        print("box plots: " + ", ".join(written))

if __name__ == "__main__":
    main()

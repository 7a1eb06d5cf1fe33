#!/usr/bin/env python3
"""Plot the transfer benchmark's CSV (rnotify-bench --transfer --csv).

Usage: scripts/plot-transfers.py CSV PNG [--tcp GB_S] [--title TEXT]

Two panels against block size (log2 axis): latency per transfer (p50,
with the p99 as a thin line) and bandwidth (GB/s), one line per kind
(READ, WRITE) and notification (with, without). --tcp draws the plain TCP
stream between two processes, the sim's ceiling, across the bandwidth
panel. The CSV's columns: op,block,notify,iterations,avg_us,p50_us,
p99_us,gb_s. Needs matplotlib (Debian python3-matplotlib,
scripts/setup.sh installs it).
"""
import argparse
import csv
import sys


def load(path):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["op"], r["notify"] == "1")
            rows.setdefault(key, []).append(
                (int(r["block"]), float(r["p50_us"]), float(r["p99_us"]),
                 float(r["gb_s"])))
    for v in rows.values():
        v.sort()
    return rows


def label_size(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return str(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--tcp", type=float, help="TCP stream ceiling, GB/s")
    ap.add_argument("--title", default="rnotify transfers (sim device)")
    a = ap.parse_args()
    rows = load(a.csv)
    if not rows:
        sys.exit(f"plot-transfers: {a.csv} has no rows")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot-transfers: matplotlib is missing (apt-get install "
                 "python3-matplotlib, or scripts/setup.sh)")

    fig, (lat, bw) = plt.subplots(1, 2, figsize=(13, 5))
    style = {"READ": "tab:blue", "WRITE": "tab:orange"}
    sizes = sorted({s for v in rows.values() for s, *_ in v})
    for (op, notify), v in sorted(rows.items()):
        x = [r[0] for r in v]
        name = f"{op}{' + notify' if notify else ''}"
        ls = "-" if notify else "--"
        lat.plot(x, [r[1] for r in v], ls, marker="o", ms=3,
                 color=style.get(op), label=f"{name} p50")
        lat.plot(x, [r[2] for r in v], ls, lw=0.7, alpha=0.5,
                 color=style.get(op), label=f"{name} p99")
        bw.plot(x, [r[3] for r in v], ls, marker="o", ms=3,
                color=style.get(op), label=name)
    if a.tcp:
        bw.axhline(a.tcp, color="gray", lw=1.2,
                   label=f"TCP stream, two processes ({a.tcp:.2f} GB/s)")
    for ax, ylabel in ((lat, "latency per transfer (us)"),
                       (bw, "bandwidth (GB/s)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes[::2])
        ax.set_xticklabels([label_size(s) for s in sizes[::2]],
                           rotation=45)
        ax.set_xlabel("block size")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    lat.set_yscale("log")
    fig.suptitle(a.title)
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    print(f"plot-transfers: wrote {a.png}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# plot_speed.py — the speed-ups of compressed allreduce over schedc's f32 sum against message size,
# from the committed outputs of speed.sh (shm) and cluster.sh (the 1 Gbit/s test cluster), as
# bench/compress/speed_shm.svg and speed_cluster.svg (docs/performance.md, "Compression").
# Usage: bench/compress/plot_speed.py   (reads and writes bench/compress/; nothing is run)
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from svgplot import svg  # noqa: E402


def rows(name):
    with open(os.path.join(HERE, name)) as f:
        return [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]


def size_label(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return "%.3g %s" % (b / k, unit)
    return "%d B" % b


def curves(points):
    """points: {config: [(bytes, speed-up)]} -> svg curves, f32 (1.0 by definition) first."""
    order = ["f32", "exact", "q16", "q8", "top1", "gloo_f32", "fp16", "powersgd"]
    names = sorted(points, key=lambda c: order.index(c) if c in order else len(order))
    return [(c, sorted(points[c])) for c in names]


def main():
    shm = {}
    for r in rows("speed_shm.tsv"):  # ranks elements config bytes_per_elem f32_p50_us ratio ...: ratio = time / f32's
        if r[0] == "2":
            shm.setdefault(r[2], []).append((4 * int(r[1]), 1.0 / float(r[5])))
    svg("shm, 2 ranks: speed-up over f32 (median of rounds)", curves(shm), os.path.join(HERE, "speed_shm.svg"),
        xlabel="f32 message size per rank", ylabel="f32's time / this time (log)", xlog=True, xfmt=size_label)
    cl = {}
    for r in rows("speed_cluster.tsv"):  # size config mean_us p50_us p99_us max_us speedup ...
        cl.setdefault(r[1], []).append((int(r[0]), float(r[6])))
    svg("test cluster, 2 hosts x 2 ranks, 1 Gbit/s: speed-up over f32", curves(cl),
        os.path.join(HERE, "speed_cluster.svg"), xlabel="f32 message size per rank",
        ylabel="f32's mean / this mean (log)", xlog=True, xfmt=size_label)


if __name__ == "__main__":
    main()

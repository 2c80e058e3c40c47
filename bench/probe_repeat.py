#!/usr/bin/env python3
"""Two probed system files of one kind of GPU, table by table: how far the second machine's compute laws
(measured.compute.<class>, point by point at the same rows and bytes) and launch.graph_node_us lie from
the first's. usage: bench/probe_repeat.py FIRST.yaml SECOND.yaml (prints one line per class)."""
import re
import statistics
import sys


def tables(path):
    """measured.compute.<class>.{rows,bytes,us} and launch.graph_node_us, read from the layout calibrate
    writes (flow lists, two-space indents), so that no YAML package is needed on the GPU machine."""
    compute, gap, cls, section = {}, None, None, None
    with open(path) as f:
        for line in f:
            line = line.split("  #")[0].rstrip()
            if re.match(r"^\S", line):
                section = line.rstrip(":")
            m = re.match(r"^  graph_node_us: ([0-9.eE+-]+)$", line)
            if m and section == "launch":
                gap = float(m.group(1))
            m = re.match(r"^    (\w+):$", line)
            if m and section == "measured":
                cls = m.group(1)
            m = re.match(r"^      (rows|bytes|us): \[(.*)\]$", line)
            if m and cls:
                compute.setdefault(cls, {})[m.group(1)] = [float(v) for v in m.group(2).split(",")]
    return {c: t for c, t in compute.items() if {"rows", "bytes", "us"} <= set(t)}, gap


def main():
    (a, ga), (b, gb) = tables(sys.argv[1]), tables(sys.argv[2])
    print(f"{'class':15s} {'points':>6s} {'median':>8s} {'worst':>8s}  (second / first - 1, points at equal rows and bytes)")
    for cls in sorted(set(a) & set(b)):
        pa = {(r, by): u for r, by, u in zip(a[cls]["rows"], a[cls]["bytes"], a[cls]["us"])}
        d = [u / pa[(r, by)] - 1 for r, by, u in zip(b[cls]["rows"], b[cls]["bytes"], b[cls]["us"])
             if (r, by) in pa and pa[(r, by)] > 0]
        if d:
            worst = max(d, key=abs)
            print(f"{cls:15s} {len(d):6d} {100 * statistics.median(d):+7.1f}% {100 * worst:+7.1f}%")
    if ga and gb:
        print(f"launch.graph_node_us: {ga} -> {gb} ({100 * (gb / ga - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

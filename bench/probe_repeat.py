#!/usr/bin/env python3
"""Two probed system files of one kind of GPU, table by table: how far the second machine's compute laws
(measured.compute.<class>, point by point at the same rows and bytes) and launch.graph_node_us lie from
the first's. usage: bench/probe_repeat.py FIRST.yaml SECOND.yaml (prints one line per class)."""
import statistics
import sys

import yaml


def tables(path):
    with open(path) as f:
        d = yaml.safe_load(f)
    return d.get("measured", {}).get("compute", {}), d.get("launch", {}).get("graph_node_us")


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

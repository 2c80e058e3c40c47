#!/usr/bin/env python3
"""A stand-in system file for a prediction, never a measurement (issue #26 item 3, written before the GPU call).

The new probe grid measures the grouped GEMMs at 128, 256 and all of the target's experts (rows 1, 2, 4 per
expert), which the committed probed file has not. To state before the measurement what that should do to
the held-out table, this writes a copy of a probed file whose grouped tables gain those points with the
time the mechanism says they have: past 64 experts the launch holds enough blocks to stream its weights
at the rate the same GPU's largest dense GEMM of the class's orientation reaches (gemm_narrow for
grouped_narrow, gemm_wide for grouped_wide, at the same rows: its largest point's us / bytes). Every value
it adds is that rate times the point's bytes: no held-out figure enters. The sources say "PREDICTION".

usage: bench/law_predict.py PROBED.yaml OUT.yaml [--experts 384]
The new points' bytes are the probe plan's (sim/plan/plan_probe.c, plan_op_finalize): Kimi-K2.5 INT4 at TP 8,
w13 512 x 7168 and w2 7168 x 256 per expert at 0.5625 B a weight, rows x experts activations in and out.
"""
import argparse
import re

SHAPES = {"grouped_narrow": (144, 512, 7168), "grouped_wide": (2016, 7168, 256)}  # (bf16 stand-in n, n, k)
DENSE = {"grouped_narrow": "gemm_narrow", "grouped_wide": "gemm_wide"}


def read(path):
    text = open(path).read()
    tables = {}
    for m in re.finditer(r"^    (\w+):\n      rows: \[(.*)\]\n      bytes: \[(.*)\]\n      us: \[(.*)\]\n", text, re.M):
        tables[m.group(1)] = [list(map(float, m.group(i).split(","))) for i in (2, 3, 4)]
    return text, tables


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probed")
    ap.add_argument("out")
    ap.add_argument("--experts", type=int, default=384)
    a = ap.parse_args()
    text, tables = read(a.probed)
    for cls, (n_eff, n, k) in SHAPES.items():
        rows, byts, us = tables[cls]
        drows, dbytes, dus = tables[DENSE[cls]]
        pts = list(zip(rows, byts, us))
        for r in (1, 2, 4):
            # the dense class's largest point at these rows: its average rate
            i = max((j for j in range(len(drows)) if drows[j] == r), key=lambda j: dbytes[j])
            rate = dus[i] / dbytes[i]
            for e in (128, 256, a.experts):
                b = 2.0 * n_eff * k * e + 2.0 * r * e * k + 2.0 * r * e * n
                pts.append((float(r), b, round(b * rate, 3)))
        pts.sort()
        new = (f"      rows: [{', '.join(f'{p[0]:.0f}' for p in pts)}]\n"
               f"      bytes: [{', '.join(f'{p[1]:.0f}' for p in pts)}]\n"
               f"      us: [{', '.join(f'{p[2]:.4g}' for p in pts)}]\n")
        text = re.sub(rf"(^    {cls}:\n)      rows: \[.*\]\n      bytes: \[.*\]\n      us: \[.*\]\n",
                      lambda m: m.group(1) + new, text, count=1, flags=re.M)
    text = text.replace('source: "measured:', 'source: "PREDICTION stand-in (bench/law_predict.py) over measured:')
    open(a.out, "w").write(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plans that ask why a class alone takes a different time in a plan of its own than with the other
classes' ops skipped in the whole plan's graph (`vpsim run --class-cost`).

On one H200 the "other" class alone read 0.963 ms in a plan of its own and 0.869 ms with the GEMM and
attention ops of the plan skipped (2026-12-02, session 19, calls 2-3): the same kernels, launched the
same way. What the whole plan adds is memory (its weights and KV caches, laid out in one arena before
the shared activations: sim/exec/dev_cuda.c) and work that ran before (the whole cycle's GEMMs). Each
of the classes attention (A) and other (O) is kept alone, and a pad is put in front of it, of one of
two kinds:
- mem-P: one embedding op of one row (a ~1 us kernel) whose table is P GiB: memory, no work;
- work-P: one GEMM of one row over P GiB of weights, the cycle's first op: P / ~4 TB/s of streaming
  before the class's ops in every cycle.
`pad-only-*` holds the pad alone, so that its own time is taken out. Nothing is fitted: every figure
is the median of a replay's timed cycles.

usage: bench/layout_plans.py make PLAN_JSON OUTDIR    (PLAN_JSON: vpsim plan CONFIG --format json)
       replay each: vpsim run CONFIG --plan P --out P.result.json
       bench/layout_plans.py read OUTDIR
"""
import copy
import json
import os

import plans_cli

CLASS = {"gemm": "G", "grouped_gemm": "G", "attention": "A", "norm": "O", "elementwise": "O", "embedding": "O"}
NAMES = {"A": "attention", "O": "other"}
PADS = (("mem", 0), ("mem", 2), ("mem", 16), ("work", 0.5), ("work", 2), ("work", 8))


def pad_op(kind, gib, n):
    """The pad: an embedding table of `gib` GiB read one row at a time, or a one-row GEMM over `gib` GiB."""
    cols = max(1, int(gib * 2**30 / (2 * n)))
    if kind == "mem":
        return {"kind": "embedding", "name": "layout_pad", "layer": -1, "stream": "main", "adtype": "bf16", "m": 1,
                "n": n, "k": cols, "batch": 1, "wdtype": "bf16", "wgroup": 0, "flops": 0, "weight_bytes": 2 * n,
                "bytes_read": 2 * n, "bytes_written": 2 * n}
    w = 2 * n * cols
    return {"kind": "gemm", "name": "layout_pad", "layer": -1, "stream": "main", "adtype": "bf16", "m": 1, "n": cols,
            "k": n, "batch": 1, "wdtype": "bf16", "wgroup": 0, "flops": w, "weight_bytes": w, "bytes_read": w + 2 * n,
            "bytes_written": 2 * cols}


def tags():
    for c in ("A", "O", None):
        for kind, g in PADS:
            yield c, (kind, g), f"{NAMES[c] if c else 'pad-only'}-{kind}-{g:g}"


def make(plan_path, out):
    plan = json.load(open(plan_path))
    os.makedirs(out, exist_ok=True)
    n = next(o["n"] for ph in plan["phases"] for o in ph["ops"] if o["kind"] == "embedding")
    for c, (kind, g), t in tags():
        p = copy.deepcopy(plan)
        for ph in p["phases"]:
            ph["ops"] = [o for o in ph["ops"] if o["kind"] not in CLASS or CLASS[o["kind"]] == c]
            ph.pop("summary", None)
        if g > 0:
            p["phases"][0]["ops"].insert(0, pad_op(kind, g, n))
        with open(os.path.join(out, f"{t}.json"), "w") as f:
            json.dump(p, f, indent=1)
        print(t)


def read(out):
    t = {}
    for c, g, tag in tags():
        with open(os.path.join(out, f"{tag}.result.json")) as f:
            t[(c, g)] = json.load(f)["measured"]["cycle_median_ms"]
    print("| pad | GiB | attention alone ms | other alone ms | the pad alone ms |")
    print("|---|---|---|---|---|")
    for kind, g in PADS:
        pad = t[(None, (kind, g))]
        print(f"| {kind} | {g:g} | {t[('A', (kind, g))] - pad:.3f} | {t[('O', (kind, g))] - pad:.3f} | {pad:.4f} |")
    for c in "AO":
        for k in ("mem", "work"):
            v = [t[(c, p)] - t[(None, p)] for p in PADS if p[0] == k]
            print(f"{NAMES[c]} beside {k} pads: {min(v):.3f}-{max(v):.3f} ms ({(max(v) / min(v) - 1) * 100:.1f} %)")


if __name__ == "__main__":
    plans_cli.run(make, read, __doc__)

#!/usr/bin/env python3
"""Plans that ask whether a class's time depends on where its buffers land: one class of a scenario's plan
alone, beside memory that no op of the class touches.

vpsim's CUDA device lays every op's private memory (weights, KV caches) out in one arena in plan order,
then allocates the shared activations (x, y), the attention workspace and the norm weight after it
(sim/exec/dev_cuda.c). On one H200 the "other" class alone read 0.897 ms in a plan that also held the
(skipped) attention ops and 0.975 ms in a plan of its own (2026-12-02, session 19, call 2): the same
kernels, launched the same way, with 575 MB more of arena before their buffers. Here each of the
classes attention (A) and other (O) is kept alone, and a pad is put in front of it: one embedding op of
one row (a ~1 us kernel) whose table is PAD GiB. `pad-only-P` holds the pad alone, so that its own time
is taken out. If the class's time moves with P and not monotonically, the buffers' placement (their L2
and DRAM partitions), not the class's work, is what moved it. Nothing is fitted: every figure is the
median of a replay's timed cycles.

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
PADS_GIB = (0, 0.25, 0.5, 1, 2, 4, 8, 16)


def pad_op(gib, n):
    rows = max(1, int(gib * 2**30 / (2 * n)))
    return {"kind": "embedding", "name": "layout_pad", "layer": -1, "stream": "main", "adtype": "bf16", "m": 1,
            "n": n, "k": rows, "batch": 1, "wdtype": "bf16", "wgroup": 0, "flops": 0, "weight_bytes": 2 * n,
            "bytes_read": 2 * n, "bytes_written": 2 * n}


def tags():
    for c in ("A", "O", None):
        for g in PADS_GIB:
            yield c, g, f"{NAMES[c] if c else 'pad-only'}-{g:g}"


def make(plan_path, out):
    plan = json.load(open(plan_path))
    os.makedirs(out, exist_ok=True)
    n = next(o["n"] for ph in plan["phases"] for o in ph["ops"] if o["kind"] == "embedding")
    for c, g, t in tags():
        p = copy.deepcopy(plan)
        for ph in p["phases"]:
            ph["ops"] = [o for o in ph["ops"] if o["kind"] not in CLASS or CLASS[o["kind"]] == c]
            ph.pop("summary", None)
        if g > 0:
            p["phases"][0]["ops"].insert(0, pad_op(g, n))
        with open(os.path.join(out, f"{t}.json"), "w") as f:
            json.dump(p, f, indent=1)
        print(t)


def read(out):
    t = {}
    for c, g, tag in tags():
        with open(os.path.join(out, f"{tag}.result.json")) as f:
            t[(c, g)] = json.load(f)["measured"]["cycle_median_ms"]
    print("| pad GiB | attention alone ms | other alone ms | the pad alone ms |")
    print("|---|---|---|---|")
    for g in PADS_GIB:
        pad = t[(None, g)]
        print(f"| {g:g} | {t[('A', g)] - pad:.3f} | {t[('O', g)] - pad:.3f} | {pad:.4f} |")
    for c in "AO":
        v = [t[(c, g)] - t[(None, g)] for g in PADS_GIB]
        print(f"{NAMES[c]}: {min(v):.3f}-{max(v):.3f} ms over the pads ({(max(v) / min(v) - 1) * 100:.1f} %)")


if __name__ == "__main__":
    plans_cli.run(make, read, __doc__)

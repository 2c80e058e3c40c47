#!/usr/bin/env python3
"""Plans that split a replayed cycle's time among its classes both ways, for the held-out set's per-class check.

`vpsim run --class-cost` gives each compute class's marginal cost: the cycle less the cycle without that
class. At the default on one H200 the three add up to 0.27 ms more than the 6.66 ms cycle (2026-12-02,
session 18), while the model's classes are an additive split of its cycle, so each class would read low
against its marginal cost even if every op were priced right. The plans below take the default plan
with every subset of the classes gemm (G), attention (A) and other (O) left out (collectives stay; the
one-GPU replay skips them), and `read` prints, per class, its marginal cost (T_full - T_without), its
standalone time (T_only - T_none: the class's ops back to back, no other class between them) and the
pairwise interactions T_full - T_-X - T_-Y + T_-XY (what X and Y cost together beyond their parts, a
positive number when leaving either out saves the shared part). Nothing is fitted: every T is the
median of a replay's timed cycles.

usage: bench/class_plans.py make PLAN_JSON OUTDIR    (PLAN_JSON: vpsim plan configs/default.yaml --format json)
       replay each: vpsim run configs/default.yaml --plan P --out P.result.json
       bench/class_plans.py read OUTDIR
"""
import copy
import itertools
import json
import os

import plans_cli

CLASS = {"gemm": "G", "grouped_gemm": "G", "attention": "A", "norm": "O", "elementwise": "O", "embedding": "O"}
NAMES = {"G": "gemm", "A": "attention", "O": "other"}


def tag(left_out):
    return "full" if not left_out else "no-" + "".join(left_out)


def make(plan_path, out):
    plan = json.load(open(plan_path))
    os.makedirs(out, exist_ok=True)
    for r in range(4):
        for left in itertools.combinations("GAO", r):
            p = copy.deepcopy(plan)
            for ph in p["phases"]:
                ph["ops"] = [o for o in ph["ops"] if CLASS.get(o["kind"]) not in left]
                ph.pop("summary", None)
            with open(os.path.join(out, f"{tag(left)}.json"), "w") as f:
                json.dump(p, f, indent=1)
            print(tag(left))


def read(out):
    t = {}
    for r in range(4):
        for left in itertools.combinations("GAO", r):
            with open(os.path.join(out, f"{tag(left)}.result.json")) as f:
                m = json.load(f)["measured"]
            t[frozenset(left)] = (m["cycle_median_ms"], m["cycle_p10_ms"], m["cycle_p90_ms"])
    full, none = t[frozenset()][0], t[frozenset("GAO")][0]
    print(f"cycle {full:.3f} ms; with every class left out {none:.3f} ms (launch, timers, skipped collectives)")
    print("| class | marginal: T_full - T_without | standalone: T_only - T_none |")
    print("|---|---|---|")
    marg = 0.0
    for c in "GAO":
        rest = frozenset("GAO") - {c}
        m = full - t[frozenset(c)][0]
        s = t[rest][0] - none
        marg += m
        print(f"| {NAMES[c]} | {m:.3f} | {s:.3f} |")
    print(f"sum of the marginal costs {marg:.3f} ms against a cycle of {full:.3f} (excess {marg - full:+.3f})")
    print("| pair | interaction: T_full - T_-X - T_-Y + T_-XY |")
    print("|---|---|")
    for x, y in itertools.combinations("GAO", 2):
        i = full - t[frozenset(x)][0] - t[frozenset(y)][0] + t[frozenset((x, y))][0]
        print(f"| {NAMES[x]} + {NAMES[y]} | {i:+.3f} |")
    spread = max(v[2] - v[1] for v in t.values())
    print(f"largest p10-p90 spread of the eight replays: {spread:.3f} ms")
    skipped(out)


def skipped(out):
    """The same classes alone as `vpsim run --class-cost` measures them in each plan (replayed with
    EXTRA=--class-cost): its ops skipped in one plan's graph, not left out of the plan."""
    rows = []
    for r in range(4):
        for left in itertools.combinations("GAO", r):
            with open(os.path.join(out, f"{tag(left)}.result.json")) as f:
                m = json.load(f)["measured"]
            if m.get("class_alone_ms"):
                a = m["class_alone_ms"]
                rows.append(f"| {tag(left)} | " + " | ".join(f"{a[NAMES[c]]:.3f}" for c in "GAO") + f" | {a['none']:.4f} |")
    if rows:
        print("| plan | gemm alone (ops skipped) | attention | other | none |")
        print("|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    plans_cli.run(make, read, __doc__)

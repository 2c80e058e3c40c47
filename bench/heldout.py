#!/usr/bin/env python3
"""Model against replay on held-out scenarios.

For every `run-<case>.json` in FOLDER (a `vpsim run --backend none` of configs/default.yaml on one GPU,
with its --set options), price the same scenario with `vpsim model --system SYSTEM --backend none`
(the binary of this checkout) and compare per op class (gemm, attention, other: each summed over the
cycle's phases, gaps included as both sides count them; the replay's side from its --class-cost
measurement when it has one: each class alone, else its marginal cost; else from its per-op times) and
the cycle (model: phases without the host overhead; replay: the timed cycle median). error = (model -
measured) / measured. The interaction column is the replay's cycle less its classes alone and the
cycle with none: what interleaving the classes adds, which no class alone holds.

With --plans DIR, the measured classes come instead from bench/class_plans.py's plans of each case,
replayed by `ONLY="no-AO no-GO no-GA no-GAO" bash bench/plans_h200.sh class_plans CASE...` (DIR/<case>/plans/):
each class alone in a plan of its own, less the plan with none. `--class-cost` skips the other classes'
ops in the whole plan's graph instead; the two isolations agree for attention and differ by ~10 % for
"other" (bench/NOTES.md, 2026-12-02, session 19). A case without those four replays keeps its run's own.
The interaction column is then the cycle less those classes alone and the plan with none.

usage: bench/heldout.py FOLDER SYSTEM [--vpsim build/vpsim] [--json OUT.json] [--plans DIR]
Prints a markdown table; exit 0 (the table says which cases are outside 10 % per class / 5 % cycle).
--json writes the same as a `vpsim.heldout/1` document (written to a temp file, then renamed), which
`make report` (analysis/make_report.py) draws as its held-out page.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from class_plans import tag

CLASSES = ("gemm", "attention", "other")


def sets_of(run):
    args, out, i = run.get("command_line", []), [], 0
    while i < len(args):
        if args[i] == "--set" and i + 1 < len(args):
            out += ["--set", args[i + 1]]
            i += 2
        else:
            i += 1
    return out


def class_sums(doc):
    b = doc["backends"][0]
    return {c: sum(p.get(c + "_ms", 0.0) for p in b["phases"]) for c in CLASSES}


def measured_classes(run):
    """The run's time per class, the quantity the model's classes are: an additive split of the cycle.
    From `vpsim run --class-cost`, each class alone (the cycle with only its ops less the cycle with none)
    when the run has it; else its marginal cost (the cycle less the cycle without it), which also holds
    the interaction of the class with its neighbours that both classes of a border count; else the sum of
    its per-op times (a constant taken off every op). Nothing is attributed in the first two."""
    m = run.get("measured", {})
    if m.get("class_alone_ms"):
        return {c: m["class_alone_ms"][c] for c in CLASSES}, "class alone (--class-cost)"
    if m.get("class_cost_ms"):
        return {c: m["class_cost_ms"][c] for c in CLASSES}, "class cost (--class-cost)"
    return class_sums(run), "per-op times"


# bench/class_plans.py's plan of each class alone: every other class left out.
PLAN_ONLY = {"gemm": tag("AO"), "attention": tag("GO"), "other": tag("GA")}


def plan_classes(plans, case):
    """Each class alone in a plan of its own (bench/class_plans.py's T_only - T_none) and T_none (ms), or
    None."""
    d = os.path.join(plans, case, "plans")
    t = {}
    none = tag("GAO")
    for name in list(PLAN_ONLY.values()) + [none]:
        path = os.path.join(d, f"{name}.result.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            t[name] = json.load(f)["measured"]["cycle_median_ms"]
    return {c: t[PLAN_ONLY[c]] - t[none] for c in CLASSES}, t[none]


def interaction(run, own=None):
    """The cycle less its classes alone and the cycle with none (ms), or None: what interleaving the
    classes adds, which the model's additive cycle lacks (bench/class_plans.py). `own`: the classes alone
    in plans of their own and their none (plan_classes), else the run's --class-cost ones."""
    m = run.get("measured", {})
    if own:
        alone, none = own
    elif m.get("class_alone_ms"):
        alone, none = m["class_alone_ms"], m["class_alone_ms"]["none"]
    else:
        return None
    return m["cycle_median_ms"] - sum(alone[c] for c in CLASSES) - none


def model_of(vpsim, system, sets):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.json")
        cmd = [vpsim, "model", "configs/default.yaml", "--system", system, "--backend", "none", "--format", "json",
               "--out", out] + sets
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("system")
    ap.add_argument("--vpsim", default="build/vpsim")
    ap.add_argument("--json")
    ap.add_argument("--plans", help="folder of bench/class_plans.py replays per case (DIR/<case>/plans/)")
    a = ap.parse_args()
    rows = []
    for name in sorted(os.listdir(a.folder)):
        if not (name.startswith("run-") and name.endswith(".json")):
            continue
        with open(os.path.join(a.folder, name)) as f:
            run = json.load(f)
        sets = sets_of(run)
        model = model_of(a.vpsim, a.system, sets)
        (meas, method), mod = measured_classes(run), class_sums(model)
        own = plan_classes(a.plans, name[4:-5]) if a.plans else None
        if own:
            meas, method = own[0], "class alone in a plan of its own (bench/class_plans.py)"
        if method.startswith("class"):
            # Leaving a class's ops out of the replayed graph leaves its launch in place; the model books
            # its graph launches (launch.graph_launch_us per phase) under "other": compare without them.
            mod = class_sums(model_of(a.vpsim, a.system, sets + ["--set", "system.launch.graph_launch_us=0"]))
        mb = model["backends"][0]
        row = {"case": name[4:-5], "run": name, "method": method, "sets": " ".join(s for s in sets if s != "--set"),
               "gpu": run.get("environment", {}).get("gpu", "")}
        for c in CLASSES:
            row[c] = (meas[c], mod[c], 100.0 * (mod[c] - meas[c]) / meas[c] if meas[c] else float("nan"))
        cyc_meas = run["measured"]["cycle_median_ms"]
        cyc_mod = mb["cycle_ms"] - mb["host_ms"]
        row["cycle"] = (cyc_meas, cyc_mod, 100.0 * (cyc_mod - cyc_meas) / cyc_meas)
        row["ok"] = all(abs(row[c][2]) <= 10 for c in CLASSES) and abs(row["cycle"][2]) <= 5
        row["interaction"] = interaction(run, own)
        row["marginal"] = run["measured"].get("class_cost_ms")
        rows.append(row)
    print("| case | --set | gemm ms meas / model (err) | attention | other | cycle | interaction ms | "
          "within 10 % / 5 % |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [f"{r[c][0]:.3f} / {r[c][1]:.3f} ({r[c][2]:+.1f}%)" for c in CLASSES + ("cycle",)]
        inter = "-" if r["interaction"] is None else f"{r['interaction']:+.3f}"
        print(f"| {r['case']} | {r['sets'] or '-'} | " + " | ".join(cells) + f" | {inter} | "
              f"{'yes' if r['ok'] else 'no'} |")
    if a.json:
        doc = {"schema": "vpsim.heldout/1", "system": a.system, "scenario": "configs/default.yaml",
               "what": "model (vpsim model --backend none, CUDA graph) against replay (vpsim run --backend none, one "
                       "rank) per op class (the replay's by " + " / ".join(sorted({r["method"] for r in rows})) +
                       "; the model's summed over the cycle's phases) and the cycle (model without host overhead "
                       "vs the timed median); error = (model - measured) / measured" +
                       ("; a case's interaction_ms is the replay's cycle less its classes alone and the cycle with "
                        "no compute op: what interleaving the classes adds, which the model's additive cycle lacks"
                        if any(r["interaction"] is not None for r in rows) else ""),
               "bounds": {"class_pct": 10.0, "cycle_pct": 5.0},
               "cases": [{"case": r["case"], "run": r["run"], "sets": r["sets"], "gpu": r["gpu"],
                          "measured_classes_by": r["method"],
                          "within_bounds": r["ok"],
                          **({"interaction_ms": r["interaction"]} if r["interaction"] is not None else {}),
                          **({"marginal_ms": {c: r["marginal"][c] for c in CLASSES}} if r["marginal"] else {}),
                          **{c: {"measured_ms": r[c][0], "modelled_ms": r[c][1], "error_pct": r[c][2]}
                             for c in CLASSES + ("cycle",)}} for r in rows]}
        with open(a.json + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

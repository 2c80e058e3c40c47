#!/usr/bin/env python3
"""Per op name, the held-out replays' per-op times against the model's (issue #26 item 3, the analysis).

For every `run-<case>.json` of FOLDER (the replays bench/heldout.py reads), the verify (or decode) phase's
main-stream compute ops grouped by (kind, name): how many, the replay's median per-op time and the
model's (`vpsim model --ops`, plus launch.graph_node_us, which the replay's per-op time holds), and each
group's shape. The replay's per-op times carry the constant it takes off every op for its timers
(`timer_overhead_us` of each run): read them for what changes between cases and ops of one kind (a
grouped GEMM's error against its experts), not for a class's total, which --class-cost measures.

usage: bench/heldout_ops.py FOLDER SYSTEM [--cases a,b] [--vpsim build/vpsim]
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def sets_of(run):
    a = run.get("command_line", [])
    return [x for i, x in enumerate(a) for x in (("--set", a[i + 1]) if x == "--set" else ())]


def graph_node_us(system):
    with open(system) as f:
        for line in f:
            m = re.match(r"^  graph_node_us: ([0-9.eE+-]+)", line)
            if m:
                return float(m.group(1))
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("system")
    ap.add_argument("--cases")
    ap.add_argument("--vpsim", default="build/vpsim")
    a = ap.parse_args()
    gap = graph_node_us(a.system)
    want = set(a.cases.split(",")) if a.cases else None
    for name in sorted(os.listdir(a.folder)):
        if not (name.startswith("run-") and name.endswith(".json")) or (want and name[4:-5] not in want):
            continue
        with open(os.path.join(a.folder, name)) as f:
            run = json.load(f)
        sets = sets_of(run)
        with tempfile.TemporaryDirectory() as d:
            pj, mj = os.path.join(d, "p.json"), os.path.join(d, "m.json")
            subprocess.run([a.vpsim, "plan", "configs/default.yaml", "--format", "json", "--out", pj] + sets,
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run([a.vpsim, "model", "configs/default.yaml", "--system", a.system, "--backend", "none",
                            "--format", "json", "--ops", "--out", mj] + sets, check=True, stdout=subprocess.DEVNULL)
            with open(pj) as f:
                plan = json.load(f)
            with open(mj) as f:
                model = json.load(f)["backends"][0]["ops"]
        ops = [o for ph in plan["phases"] for o in ph["ops"]]
        replay = run["backends"][0]["ops"]
        if not len(ops) == len(model) == len(replay):
            print(f"{name}: plan, model and replay differ in ops", file=sys.stderr)
            return 2
        groups = collections.OrderedDict()
        for po, mo, ro in zip(ops, model, replay):
            if mo["phase"] not in ("verify", "decode") or po.get("stream") != "main" or po["kind"] in ("allreduce",
                                                                                                        "allgather"):
                continue
            g = groups.setdefault((po["kind"], po["name"]), {"meas": [], "mod": [], "op": po})
            g["meas"].append(ro["us"])
            g["mod"].append(mo["us"] + gap)
        print(f"== {name[4:-5]} (active experts {plan.get('active_experts')}, graph gap {gap} us added to the model)")
        for (kind, op), g in groups.items():
            po, mm, md = g["op"], statistics.median(g["meas"]), statistics.median(g["mod"])
            shape = " ".join(f"{k}={po[k]}" for k in ("m", "n", "k", "batch", "q_len", "heads", "kv_len", "wdtype")
                             if k in po)
            err = f"{100 * (md / mm - 1):+6.1f}%" if mm > 0 else "    - "
            print(f"  {kind:12s} {op:26s} x{len(g['meas']):3d}  replay {mm:8.2f}  model {md:8.2f}  {err}  "
                  f"{(po['bytes_read'] + po['bytes_written']) / 1e6:8.2f} MB  {shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

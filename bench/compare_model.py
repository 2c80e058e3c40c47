#!/usr/bin/env python3
"""The model against a folder of 2-GPU (or N-GPU) measurements, as bench/NOTES.md reports it.

  bench/compare_model.py FOLDER [--system FILE] [--vpsim build/vpsim]

FOLDER holds what bench/measure_multi_gpu.sh writes (or the samples in traces/samples): bench-allreduce
JSON and `vpsim run --out` JSON, found by their schema, whatever their names. Every model figure comes
from the vpsim binary given (`bench-allreduce --from` for the allreduce rows, `vpsim model` for the
cycles), so running this at another commit shows what that commit's model says about the same
measurements. A measurement made with NCCL_P2P_DISABLE=1 is compared with topology.p2p=off.

Prints, per bench file and backend, the median |error| and median error over the rows from 4 KiB to
1 MiB; per run, the timed cycle against the model's cycle without its host overhead."""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def p2p_off(env):
    return "NCCL_P2P_DISABLE=1" in (env or {}).get("nccl_env", "")


def vpsim(args, binary):
    r = subprocess.run([binary] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compare_model: {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def benches(paths, system, binary, tmp):
    print("allreduce: median |error| (median error) over 4 KiB..1 MiB, error = (model - measured) / measured")
    for path in paths:
        doc = json.load(open(path))
        off = any(p2p_off(b.get("environment")) for b in doc["backends"])
        out = os.path.join(tmp, "cmp.json")
        vpsim(["bench-allreduce", "--from", path, "--system", system, "--format", "json", "--out", out]
              + (["--set", "system.topology.p2p=off"] if off else []), binary)
        cmp = json.load(open(out))
        mode = "graph" if doc["graph_requested"] else "eager"
        for b in cmp["backends"]:
            errs = [r["model_error_pct"] for r in b["rows"]
                    if 4096 <= r["bytes"] <= 1 << 20 and r["model_error_pct"] is not None]
            if errs:
                print(f"  {os.path.basename(path):34s} {mode} {'p2p-off ' if off else ''}{b['name']:10s} "
                      f"{statistics.median(abs(e) for e in errs):5.1f}% ({statistics.median(errs):+5.1f}%)")


def runs(paths, system, binary, tmp):
    print("cycle: timed median against the model (host overhead left out)")
    cache = {}
    for path in paths:
        doc = json.load(open(path))
        m, be = doc["measured"], doc["backends"][0]
        off = p2p_off(doc.get("environment"))
        key = (m["ranks"], m["graph"], off)
        if key not in cache:
            out = os.path.join(tmp, f"model-{len(cache)}.json")
            vpsim(["model", doc.get("scenario_path") or "configs/default.yaml", "--system", system,
                   "--set", f"parallel.tp={m['ranks']}", "--set", f"run.graph={'true' if m['graph'] else 'false'}",
                   "--format", "json", "--out", out] + (["--set", "system.topology.p2p=off"] if off else []), binary)
            cache[key] = {b["backend"]: b for b in json.load(open(out))["backends"]}
        mb = cache[key].get(be["backend"])
        if not mb or not mb["available"]:
            continue
        mod = mb["cycle_ms"] - mb["host_ms"]
        meas = m["cycle_median_ms"]
        print(f"  {os.path.basename(path):36s} {'graph' if m['graph'] else 'eager'} {be['backend']:10s} measured "
              f"{meas:7.3f} model {mod:7.3f} ms ({100 * (mod - meas) / meas:+6.1f}%)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--system", default="configs/systems/h200-2x-nvlink.yaml")
    ap.add_argument("--vpsim", default="build/vpsim")
    a = ap.parse_args(argv)
    found = {"vpsim.bench_allreduce/1": [], "vpsim.results/1": []}
    for path in sorted(glob.glob(os.path.join(a.folder, "*.json"))):
        try:
            doc = json.load(open(path))
        except (ValueError, OSError):
            continue
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if schema == "vpsim.bench_allreduce/1" and doc["ranks"] > 1 and not doc["virtual_ranks"] \
                and any(len(b.get("rows", [])) > 3 for b in doc["backends"]):
            found[schema].append(path)
        elif schema == "vpsim.results/1" and doc.get("mode") == "run" and doc["measured"]["ranks"] > 1:
            found[schema].append(path)
    with tempfile.TemporaryDirectory() as tmp:
        benches(found["vpsim.bench_allreduce/1"], a.system, a.vpsim, tmp)
        runs(found["vpsim.results/1"], a.system, a.vpsim, tmp)


if __name__ == "__main__":
    main()

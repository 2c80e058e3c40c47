"""Where each number came from: one line per input file, for the figures' footnotes and the report.

Part of it is read from the file itself (a run records its GPU, cycles and command line; a model its
system), the rest (the machine, the date, the exact command of a model or sweep) from the results
folder's README.md, whose per-file entries look like:

    ### `h200-none-graph.results.json`
    - what: one rank's compute of the default scenario, no collectives
    - command: `vpsim run configs/default.yaml --backend none --iters 30 --warmup 5`
    - machine: device nvidia-h200 (one NVIDIA H200)
    - date: 2026-11-29

A file the README does not describe is still used; its provenance then says so.
"""

import os
import re

from vpsim_extract import gpu_name, stem

_ENTRY = re.compile(r"^#{2,4}\s+`([^`]+)`\s*$")
_FIELD = re.compile(r"^[-*]\s+(\w[\w ]*?):\s*(.+?)\s*$")


def read_readme(folder):
    """{file name: {field: text}} from folder/README.md ({} when there is none)."""
    path = os.path.join(folder, "README.md")
    if not os.path.exists(path):
        return {}
    out, cur = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = _ENTRY.match(line)
            if m:
                cur = out.setdefault(m.group(1), {})
                continue
            if line.startswith("#"):
                cur = None
                continue
            m = _FIELD.match(line)
            if m and cur is not None:
                cur[m.group(1).strip().lower()] = m.group(2).strip().strip("`")
    return out


def _when_where(entry):
    bits = [entry[k] for k in ("machine", "date") if entry.get(k)]
    return "; ".join(bits)


def describe(kind, path, doc, readme):
    """One line: measured (where, when, how many runs) or modelled (on which system file, how)."""
    entry = readme.get(os.path.basename(path), {})
    ww = _when_where(entry)
    name = os.path.basename(path)
    if kind == "results" and doc["mode"] == "run":
        m = doc["measured"]
        inst = "graph" if m.get("instrumented_as_graph") else "eager"
        text = (f"{name}: MEASURED on {gpu_name(doc)} ({m['ranks']} rank, median of {m['iters']} timed "
                f"{'CUDA-graph' if m['graph'] else 'eager'} cycles, p10-p90 {m['cycle_p10_ms']:.2f}-"
                f"{m['cycle_p90_ms']:.2f} ms; per-op times from {inst}-instrumented passes)")
        comm = (doc.get("environment") or {}).get("comm")
        if comm and comm.startswith("model"):
            text += "; collectives are GPU delays of their MODELLED duration"
    elif kind == "results":
        how = doc.get("provenance") or "vpsim model"
        how = how[len("modelled"):].lstrip(": ") if how.lower().startswith("modelled") else how
        text = f"{name}: MODELLED ({how}) on system {doc.get('system')}"
    elif kind == "bench":
        gpu = doc["environment"].get("gpu", doc["device"])
        text = (f"{name}: MEASURED by vpsim bench-allreduce on {gpu.split(' (')[0]}, {doc['ranks']} "
                f"rank{'s' if doc['ranks'] != 1 else ''}, {doc.get('iters')} calls per size"
                f"{', CUDA graphs' if doc['graph'] else ''}")
        if doc["virtual_ranks"]:
            text += " - VIRTUAL RANKS on one GPU: protocol check only, timings say nothing about an interconnect"
        elif doc["ranks"] == 1:
            text += " - ONE rank: launch and kernel floor of each backend, no interconnect crossed"
    elif kind == "sweep":
        text = f"{name}: MODELLED (vpsim sweep, analytic model)"
    elif kind == "plan":
        text = f"{name}: schedule (vpsim plan), payloads per rank"
    elif kind == "heldout":
        gpus = sorted({c.get("gpu") or "?" for c in doc["cases"]})
        text = (f"{name}: MODELLED on system {doc['system']} against {len(doc['cases'])} replays MEASURED on "
                f"{', '.join(g.split(' (')[0] for g in gpus)} (held-out scenarios of {doc['scenario']})")
    elif kind == "ranking":
        text = f"{name}: MODELLED (vpsim compare, analytic model) on system {doc.get('system')}"
    else:
        text = name
    if ww:
        text += f"; {ww}"
    elif not entry:
        text += "; not described in the folder's README.md"
    return text


def describe_many(pairs, readme):
    """One or two lines for a figure of many measured runs ([(path, results doc)]): what they have in
    common (GPU, ranks, cycles per run, launch modes, machines, dates) and their names; the per-file
    lines stay in the report's provenance section. Falls back to describe() per file for modelled runs."""
    runs = [(p, d) for p, d in pairs if d["mode"] == "run"]
    lines = [describe("results", p, d, readme) for p, d in pairs if d["mode"] != "run"]
    if not runs:
        return lines
    def span(vals):
        vals = sorted(set(vals))
        return str(vals[0]) if len(vals) == 1 else f"{vals[0]}-{vals[-1]}"
    gpus = sorted({gpu_name(d) for _, d in runs})
    ranks = span(d["measured"]["ranks"] for _, d in runs)
    iters = span(d["measured"]["iters"] for _, d in runs)
    modes = sorted({"CUDA-graph" if d["measured"]["graph"] else "eager" for _, d in runs})
    entries = [readme.get(os.path.basename(p), {}) for p, _ in runs]
    machines = sorted({e["machine"] for e in entries if e.get("machine")})
    dates = sorted({e["date"] for e in entries if e.get("date")})
    modelled = sum(1 for _, d in runs if ((d.get("environment") or {}).get("comm") or "").startswith("model"))
    text = (f"{len(runs)} runs MEASURED on {', '.join(gpus)} ({ranks} ranks, median of {iters} timed "
            f"{' or '.join(modes)} cycles each)" + (f"; {modelled} with collectives as GPU delays of their MODELLED "
                                                   f"duration" if modelled else "")
            + (f"; {'; '.join(machines)}" if machines else "") + (f"; {', '.join(dates)}" if dates else "")
            + (f"; {sum(1 for e in entries if not e)} not described in the folder's README.md"
               if any(not e for e in entries) else ""))
    names = "files: " + ", ".join(stem(p) for p, _ in runs) + " (each described in the report's provenance section)"
    return lines + [text, names]


def command_of(path, readme):
    return readme.get(os.path.basename(path), {}).get("command")


__all__ = ["read_readme", "describe", "describe_many", "command_of", "stem"]

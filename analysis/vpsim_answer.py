"""The numbers behind the report's first screen (the answer): the ranked changes, what each sign rests
on, and the model's checks, from validated vpsim outputs (vpsim_inputs). Split from vpsim_extract, which
re-exports these names."""

import os
import re

from vpsim_extract import allreduce_series, compare_backend_cycles, gpu_name, heldout_cases, model_errors, stem
from vpsim_inputs import InputError, is_number

# ---------------------------------------------------------------- the answer (the report's first screen)

# vpsim compare's sign_rests_on text (sim/sweep/compare_run.c): "+152.5% flips to -76.2% with KEY=VALUE: the
# sign rests on it; decided by READING". Parsed into its parts; a text in another shape is kept whole.
_RESTS_ON = re.compile(r"^(?P<gain>[+-]?[\d.]+%) flips to (?P<flipped>[+-]?[\d.]+%) with (?P<input>\S+?): "
                       r"the sign rests on it; decided by (?P<reading>.+?)\.?$")


def rests_on(row):
    """What a compare row's sign rests on: None when it holds across the inputs tried (sign_rests_on null),
    else {input, flipped, reading, text}: the unmeasured input at whose other value the gain changes
    sign, the gain it then has, and the reading (a probe key, a log line) that would settle it."""
    text = row.get("sign_rests_on")
    if text is None:
        return None
    m = _RESTS_ON.match(text.strip())
    if not m:
        return {"input": None, "flipped": None, "reading": None, "text": text}
    return {"input": m.group("input"), "flipped": m.group("flipped"), "reading": m.group("reading"), "text": text}


def inputs_tried(doc):
    """The unmeasured inputs vpsim compare tried each row at (sign_inputs_tried, a comma-separated list)."""
    text = doc.get("sign_inputs_tried") or ""
    return [t.strip() for t in text.split(",") if t.strip()]


def figure_kind(row):
    """'modelled' or 'measured' or 'mixed' for a compare row, from its source (e.g. "formula",
    "mixed: allreduce measured, ops formula", "measured ...")."""
    src = (row.get("source") or "").lower()
    if src.startswith("mixed"):
        return "mixed"
    if "measured" in src or "probed" in src:
        return "measured" if "formula" not in src else "mixed"
    return "modelled"


def ranked_changes(doc):
    """The changes a compare document ranks against its baseline: available rows, not the baseline, not
    ranked apart (their figure is a formula where a measurement does not apply), with a gain, best gain
    first (ties in the file's order)."""
    rows = [r for r in doc["rows"] if r["available"] and not r["baseline"] and not r.get("ranked_apart")
            and is_number(r.get("gain_pct"))]
    return sorted(rows, key=lambda r: -r["gain_pct"])


def ranking_bars(doc):
    """The rows the ranking figure draws a bar for, top to bottom: those with a figure (available), in the
    file's order (best first, the rows ranked apart after). A row without a figure gets no bar."""
    return [r for r in doc["rows"] if r["available"]]


def not_ranked(doc):
    """Rows without a figure (does not fit, refused): [(variant, backend, reason)], in file order."""
    return [(r["variant"], r["backend"], r.get("reason") or "not modelled") for r in doc["rows"] if not r["available"]]


def backend_swaps(doc):
    """Rows that change only the allreduce backend (set == ["run.backend=X"]): [(backend, row)] in file order.
    Forcing a backend alone is what the seed box tried (one-shot), so the answer says what each does."""
    out = []
    for r in doc["rows"]:
        s = r.get("set") or []
        if r["available"] and not r["baseline"] and len(s) == 1 and s[0].startswith("run.backend="):
            out.append((s[0].split("=", 1)[1], r))
    return out


def answer(doc, top=5):
    """The numbers of the report's first screen, from one validated vpsim.compare/1 document:
    {system, scenario, model, baseline (row), changes [row + rests_on, kind], inputs_tried, not_ranked,
    swaps [(backend, row)], best (row or None)}. Nothing here is typed in: every figure is the file's."""
    base = next((r for r in doc["rows"] if r["baseline"] and r["available"]), None)
    if base is None:
        raise InputError(doc.get("_path", "(compare)"), "no available baseline row: nothing to rank against")
    changes = []
    for r in ranked_changes(doc)[:top]:
        changes.append(dict(r, rests_on=rests_on(r), kind=figure_kind(r)))
    best = changes[0] if changes and changes[0]["gain_pct"] > 0 else None
    # The best change an engine runs without a patch (its engine verdict "yes" for sglang or vllm).
    as_is = next((r for r in ranked_changes(doc) if r["gain_pct"] > 0
                  and "yes" in ((r.get("engine") or {}).get("sglang"), (r.get("engine") or {}).get("vllm"))), None)
    if as_is is not None:
        as_is = next((c for c in changes if c["variant"] == as_is["variant"]),
                     dict(as_is, rests_on=rests_on(as_is), kind=figure_kind(as_is)))
    return {"best_as_is": as_is, "system": doc.get("system"), "scenario": doc.get("scenario"), "model": doc.get("model"),
            "baseline": dict(base, kind=figure_kind(base)), "changes": changes, "best": best,
            "inputs_tried": inputs_tried(doc), "not_ranked": not_ranked(doc), "swaps": backend_swaps(doc)}


def model_checks(found):
    """Where the model has been checked against a measurement, from the folder's documents:
    [{what, system, measured_on, n, within, lo, hi, bound, kind}] with the error range in % (modelled -
    measured) / measured. kind: 'heldout' (compute of held-out scenarios, per op class and cycle),
    'cycle' (whole timed cycles with collectives, model_comparison.backend_cycle), 'allreduce' (bench
    rows with the model beside them, median error per backend over 4 KiB - 1 MiB)."""
    out = []
    for path, doc in found.get("heldout", []):
        cases = heldout_cases(doc)
        cyc = [r[3] for c in cases for r in c["rows"] if r[0] == "cycle"]
        cls = [r[3] for c in cases for r in c["rows"] if r[0] != "cycle"]
        gpus = sorted({(c["gpu"] or "?").split(" (")[0] for c in cases})
        out.append({"kind": "heldout", "path": path, "system": stem(doc["system"]).replace(".yaml", ""),
                    "measured_on": ", ".join(gpus), "n": len(cases), "within": sum(c["within"] for c in cases),
                    "lo": min(cyc), "hi": max(cyc), "class_lo": min(cls), "class_hi": max(cls),
                    "bound": doc["bounds"]})
    runs = [(p, d) for p, d in found.get("results", []) if d["mode"] == "run" and d.get("model_comparison")]
    by_system = {}
    for r in compare_backend_cycles(runs):
        by_system.setdefault(r["system"], []).append(r)
    for system, rows in by_system.items():
        doc = next(d for p, d in runs if p == rows[0]["path"])
        errs = [r["error_pct"] for r in rows]
        out.append({"kind": "cycle", "system": system, "measured_on": f"{rows[0]['ranks']}x {gpu_name(doc)}",
                    "n": len(rows), "lo": min(errs), "hi": max(errs),
                    "backends": sorted({r["backend"] for r in rows})})
    # Benchmarks of every backend with the model beside each row (a file that benches one NCCL transport
    # at a time is evidence of that transport, shown in its own figure), merged per system and machine.
    merged = {}
    for _, doc in found.get("bench", []):
        if not doc.get("model") or doc["virtual_ranks"]:
            continue
        errs = [e[1] for e in (model_errors(s) for s in allreduce_series([doc])["series"]) if e]
        if len(errs) < 2:
            continue
        gpu = doc["environment"].get("gpu", doc["device"]).split(" (")[0]
        m = merged.setdefault((doc["model"]["system"], f"{doc['ranks']}x {gpu}"), {"files": [], "errs": []})
        m["files"].append(os.path.basename(doc["path"]))
        m["errs"] += errs
    for (system, where), m in merged.items():
        out.append({"kind": "allreduce", "system": system, "measured_on": where, "files": m["files"],
                    "n": len(m["errs"]), "lo": min(m["errs"]), "hi": max(m["errs"])})
    return out

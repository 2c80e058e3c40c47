"""The numbers behind each figure, taken from validated vpsim outputs (vpsim_inputs).

Kept apart from the drawing so the tests can check every bar, point and label against the input
files without looking at pixels, and so the report's tables show exactly what the figures show.
"""

import os
import statistics

from vpsim_inputs import CSV_COLUMNS, CSV_TEXT, HELDOUT_ROWS, InputError, is_number

# Stacked-bar segments, bottom to top: the cycle as the issue asks for it. The draft model's phases stay
# one segment (its own collectives included) because its share is small and the question the picture
# answers is how the verify pass splits.
SEGMENTS = ("draft", "verify GEMM", "verify attention", "verify other compute", "verify communication", "host")
SEGMENT_KEYS = {"draft": "draft_ms", "verify GEMM": "verify_gemm_ms", "verify attention": "verify_attention_ms",
                "verify other compute": "verify_other_ms", "verify communication": "verify_comm_ms"}
COMPARE_CLASSES = ("gemm", "attention", "other", "total")
COMM_KINDS = ("allreduce", "allgather")
# Error columns are recomputed and compared with the file's; they may differ by float rounding only.
ERROR_TOLERANCE_PCT = 0.05


def stem(path):
    base = os.path.basename(path)
    for suffix in (".results.json", ".json", ".csv"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def _cmd_option(cmd, name, default=None):
    """Value of --name in a recorded command line (list of argv strings), or default."""
    if not isinstance(cmd, list):
        return default
    for i, a in enumerate(cmd):
        if a == name and i + 1 < len(cmd):
            return cmd[i + 1]
        if isinstance(a, str) and a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


def gpu_name(doc):
    """Short name of the measured GPU ("NVIDIA H200") from a run's environment."""
    gpu = (doc.get("environment") or {}).get("gpu", "")
    return gpu.split(" (")[0] if gpu else "unknown GPU"


def _model_target(doc):
    """(modelled backend, target system) of a run with backend `model` (only its command line has them)."""
    cmd = doc.get("command_line")
    target = _cmd_option(cmd, "--target-system")
    return _cmd_option(cmd, "--model-backend", "nccl"), stem(target).replace(".yaml", "") if target else "?"


def bar_label(doc, backend):
    """What a row is: the backend (for a run with backend `model`, the backend whose collectives it replayed)
    and, for a measurement, whether the cycle was timed as a CUDA graph or eager."""
    if doc["mode"] != "run":
        return backend
    name = _model_target(doc)[0] if backend == "model" else backend
    return f"{name}, {'graph' if doc['measured']['graph'] else 'eager'} cycle"


def group_label(doc, backend):
    if doc["mode"] == "model":
        return f"modelled: {doc.get('system') or '?'}"
    if doc["mode"] == "import-trace":
        files = ", ".join(os.path.basename(f) for f in doc["import"]["files"])
        return f"imported server trace: {files}"
    ranks = doc["measured"]["ranks"]
    where = f"measured on {gpu_name(doc)}, {ranks} rank{'s' if ranks != 1 else ''}"
    if backend == "none":
        return where + ", no collectives"
    if backend == "model":
        return where + f", collectives = modelled delays of {_model_target(doc)[1]}"
    return where + f", {backend} collectives"


# ---------------------------------------------------------------- stacked bars

def breakdown_bars(docs):
    """docs: [(path, results doc)] -> bars [{label, group, path, segments{name: ms}, cycle_ms, measured,
    ops_sum_ms, tok_per_s, graph}] in file order, one per available backend.

    Modelled rows add up exactly: segments sum to cycle_ms. A measured row's segments are per-op times from
    the instrumented pass (a timer pair around every op), which run longer than the timed cycle; the bar then
    shows those sums as they are, host = 0, and `cycle_ms` (the timed median) is drawn as a marker instead
    of being forced into the stack."""
    bars = []
    for path, doc in docs:
        for b in doc["backends"]:
            if not b["available"]:
                continue
            seg = {name: float(b[key]) for name, key in SEGMENT_KEYS.items()}
            ops_sum = sum(seg.values())
            measured = doc["mode"] == "run"
            seg["host"] = max(0.0, b["cycle_ms"] - ops_sum) if measured else float(b["host_ms"])
            bars.append({"label": bar_label(doc, b["backend"]), "group": group_label(doc, b["backend"]),
                         "path": path, "doc": doc,
                         "segments": {name: seg[name] for name in SEGMENTS}, "cycle_ms": float(b["cycle_ms"]),
                         "measured": measured, "ops_sum_ms": ops_sum, "tok_per_s": float(b["tok_per_s"]),
                         "graph": bool(doc.get("graph"))})
    # One group's bars side by side, groups in the order they first appear (files in command-line order).
    order = {}
    for bar in bars:
        order.setdefault(bar["group"], len(order))
    bars.sort(key=lambda b: order[b["group"]])
    # Bars that read the same (one backend from two files): first say how their ops were timed (older runs
    # timed them eager, newer ones inside the graph), then, if still alike, name the file.
    # Identical rows from two files (a model written with and without --ops) are drawn once.
    unique, by_value = [], {}
    for bar in bars:
        key = (bar["group"], bar["label"], bar["cycle_ms"], tuple(bar["segments"].values()))
        if key in by_value:
            by_value[key]["also_in"].append(bar["path"])
            continue
        bar["also_in"] = []
        by_value[key] = bar
        unique.append(bar)
    bars = unique
    for extra in (lambda b: "ops timed " + ("in graph" if b["doc"]["measured"].get("instrumented_as_graph")
                                             else "eager") if b["measured"] else "",
                  lambda b: f"[{stem(b['path'])}]"):
        seen = {}
        for bar in bars:
            seen.setdefault((bar["group"], bar["label"]), []).append(bar)
        for same in seen.values():
            if len(same) > 1:
                for bar in same:
                    e = extra(bar)
                    bar["label"] += (", " + e) if e else ""
    for bar in bars:
        del bar["doc"]
    if not bars:
        raise InputError(", ".join(p for p, _ in docs) or "(no files)", "no available backend to draw")
    return bars


# ---------------------------------------------------------------- allreduce latency

def allreduce_series(benches, plans=()):
    """benches: normalised bench docs -> {series: [{label, bytes, time_us, busbw, verify_bytes}],
    unsupported: [(label, reason)], verify_bytes: sorted payloads of the verify pass}.

    The verify payloads come from the rows the benchmark marked (verify_pass) and from any plan given;
    the plan's are per rank in bytes, the benchmark's depend on its element type (bf16 on cuda)."""
    series, unsupported, verify, caveats = [], [], set(), []
    many = len(benches) > 1
    for doc in benches:
        gpu = doc["environment"].get("gpu", doc["device"]).split(" (")[0]
        if doc["virtual_ranks"]:
            caveats.append(f"{doc['ranks']} virtual ranks on one {gpu}: protocol only, no interconnect timing")
        elif doc["ranks"] == 1:
            caveats.append(f"1 rank on {gpu}: each backend's launch and kernel floor, no interconnect")
        suffix = f" ({doc['ranks']} rank{'s' if doc['ranks'] != 1 else ''}, {doc['device']})" if many else ""
        for b in doc["backends"]:
            label = b["name"] + suffix
            if not b["supported"]:
                unsupported.append((label, b["reason"] or "unsupported"))
                continue
            rows = sorted(b["rows"], key=lambda r: r["bytes"])
            vb = [r["bytes"] for r in rows if r["verify_pass"]]
            verify.update(vb)
            series.append({"label": label, "bytes": [r["bytes"] for r in rows],
                           "time_us": [r["time_us"] for r in rows], "busbw": [r["busbw_gbps"] for r in rows],
                           "model_us": [r.get("model_us") for r in rows], "model_method": b.get("model_method"),
                           "verify_bytes": vb, "path": doc["path"]})
    for plan in plans:
        verify.update(verify_payloads(plan))
    if not series:
        raise InputError(", ".join(d["path"] for d in benches) or "(no files)", "no backend with rows to draw")
    return {"series": series, "unsupported": unsupported, "verify_bytes": sorted(verify), "caveats": caveats}


def model_errors(series, lo=4096, hi=1 << 20):
    """The model against one bench series: (median |error| %, median error %, n) over the rows with
    lo <= bytes <= hi that carry model_us, error = (model - measured) / measured; None when no row has it."""
    errs = [100.0 * (m - t) / t for b, t, m in zip(series["bytes"], series["time_us"], series.get("model_us", []))
            if m is not None and lo <= b <= hi]
    if not errs:
        return None
    return statistics.median(abs(e) for e in errs), statistics.median(errs), len(errs)


def model_at(series, nbytes):
    """(measured, modelled) at exactly nbytes, or None."""
    for b, t, m in zip(series["bytes"], series["time_us"], series.get("model_us", [])):
        if b == nbytes and m is not None:
            return t, m
    return None


def compare_backend_cycles(runs):
    """Rows from each run's model_comparison.backend_cycle (the whole timed cycle, collectives included,
    against the model of the same backend and launch mode): dicts sorted by (system, mode, backend)."""
    rows = []
    for path, doc in runs:
        cmp = doc.get("model_comparison") or {}
        bc = cmp.get("backend_cycle")
        if not bc:
            continue
        for key in ("backend", "measured_ms", "modelled_ms", "error_pct", "allreduce_measured_us",
                    "allreduce_modelled_us"):
            if key not in bc:
                raise InputError(path, f"model_comparison.backend_cycle: missing key '{key}'")
        err = 100.0 * (bc["modelled_ms"] - bc["measured_ms"]) / bc["measured_ms"]
        if abs(err - bc["error_pct"]) > 0.05:
            raise InputError(path, f"model_comparison.backend_cycle.error_pct {bc['error_pct']:.2f} disagrees with "
                                   f"its own numbers ({err:.2f})")
        rows.append({"path": path, "system": cmp.get("system", "?"), "backend": bc["backend"],
                     "mode": "graph" if bc.get("graph") else "eager", "ranks": doc.get("measured", {}).get("ranks"),
                     "measured_ms": bc["measured_ms"], "modelled_ms": bc["modelled_ms"], "error_pct": err,
                     "ar_measured_us": bc["allreduce_measured_us"], "ar_modelled_us": bc["allreduce_modelled_us"],
                     "ar_method": bc.get("allreduce_method", "")})
    rows.sort(key=lambda r: (r["system"], r["mode"], r["backend"], r["path"]))
    return rows


def verify_payloads(plan):
    """Distinct allreduce payloads (bytes per rank) of the target pass (verify, or decode without speculation)."""
    out = set()
    for ph in plan["phases"]:
        if ph["kind"] in ("verify", "decode"):
            out.update(int(v) for v in ph["summary"]["allreduce_bytes"])
    return sorted(out)


def time_at(series, nbytes):
    """Latency of one series at exactly nbytes, or None when the benchmark did not run that size."""
    for b, t in zip(series["bytes"], series["time_us"]):
        if b == nbytes:
            return t
    return None


# ---------------------------------------------------------------- sweeps

def _num(s):
    try:
        return float(s)
    except ValueError:
        return None


def sweep_series(sweep, x_key=None, y="tok_per_s"):
    """Lines of `y` against one varied key, one per backend (and per value of any other key that varies
    independently). Keys that only change together with x (steps with num_draft_tokens at topk=1) are
    'paired' and named in the axis label instead of splitting the lines."""
    rows = [r for r in sweep["rows"] if r["available"]]
    path = sweep["path"]
    if not sweep["varied"]:
        raise InputError(path, "no varied columns before 'backend': not a sweep")
    if not rows:
        raise InputError(path, "no available rows: every combination was rejected")
    numeric_cols = [c for c in CSV_COLUMNS if c not in CSV_TEXT]
    if y not in numeric_cols:
        raise InputError(path, f"'{y}' is not a numeric column (these are: {', '.join(numeric_cols)})")
    changing = [k for k in sweep["varied"] if len({r["params"][k] for r in rows}) > 1]
    if x_key is None:
        x_key = changing[-1] if changing else sweep["varied"][-1]
    elif x_key not in sweep["varied"]:
        raise InputError(path, f"--x {x_key}: not a varied column (these are: {', '.join(sweep['varied'])})")
    paired, split = [], []
    for k in changing:
        if k == x_key:
            continue
        by_x = {}
        for r in rows:
            by_x.setdefault(r["params"][x_key], set()).add(r["params"][k])
        (paired if all(len(v) == 1 for v in by_x.values()) else split).append(k)
    xs_text = []
    for r in rows:
        if r["params"][x_key] not in xs_text:
            xs_text.append(r["params"][x_key])
    numeric = all(_num(v) is not None for v in xs_text)
    order = sorted(xs_text, key=_num) if numeric else xs_text
    lines = {}
    for r in rows:
        extra = ", ".join(f"{k}={r['params'][k]}" for k in split)
        label = r["backend"] + (f" ({extra})" if extra else "")
        line = lines.setdefault(label, {"label": label, "backend": r["backend"], "points": {}})
        xv = r["params"][x_key]
        if xv in line["points"]:
            raise InputError(path, f"line {r['line']}: a second row for {label} at {x_key}={xv}")
        line["points"][xv] = (r[y], r["allreduce_method"], r["params"])
    series = []
    for line in lines.values():
        xv = [v for v in order if v in line["points"]]
        series.append({"label": line["label"], "backend": line["backend"],
                       "x": [_num(v) if numeric else v for v in xv], "x_text": xv,
                       "y": [line["points"][v][0] for v in xv],
                       "methods": [line["points"][v][1] for v in xv]})
    rejected = {}
    for r in sweep["rows"]:
        if not r["available"]:
            key = ", ".join(f"{k}={v}" for k, v in r["params"].items())
            rejected.setdefault(key, r["reason"])
    return {"x_key": x_key, "y": y, "numeric": numeric, "x_order": order, "paired": paired, "split": split,
            "series": series, "rejected": rejected, "path": path}


def best_per_x(sw):
    """For each x value: (x_text, (best y, label), (worst y, label), bound y or None): the table under a
    sweep plot. Backend `none` (no collectives) is the bound, not a contender."""
    out = []
    for xv in sw["x_order"]:
        cands = [(s["y"][s["x_text"].index(xv)], s["label"]) for s in sw["series"]
                 if xv in s["x_text"] and s["backend"] != "none"]
        bound = [s["y"][s["x_text"].index(xv)] for s in sw["series"] if xv in s["x_text"] and s["backend"] == "none"]
        if cands:
            out.append((xv, max(cands), min(cands), bound[0] if bound else None))
    return out


def method_changes(sw):
    """Lines whose allreduce cost source changes along x (e.g. NCCL: a measured table point at TP=8 and NCCL's
    formula elsewhere): {label: [(x_text, method)]}. A jump in such a line is the source changing, and the
    plot's footnote says so."""
    out = {}
    for s in sw["series"]:
        kinds = [m.split(":")[0].split(" (")[0] for m in s["methods"]]
        if len({k for k in kinds if k}) > 1:
            out[s["label"]] = list(zip(s["x_text"], s["methods"]))
    return out


# ---------------------------------------------------------------- model against measured

def compare_classes(doc, scope="verify"):
    """Rows (class, measured_ms, modelled_ms, error_pct) from a run's model_comparison.

    The error is recomputed from the two times and must agree with the file's: a file whose columns
    disagree is rejected rather than drawn."""
    path = doc.get("_path", "(results)")
    cmp = doc.get("model_comparison")
    if not cmp:
        raise InputError(path, "no model_comparison in this run (it is null or absent)")
    rows = []
    for cls in COMPARE_CLASSES:
        if cls not in cmp[scope]:
            raise InputError(path, f"model_comparison.{scope}: missing class '{cls}'")
        r = cmp[scope][cls]
        meas, mod = float(r["measured_ms"]), float(r["modelled_ms"])
        err = 100.0 * (mod - meas) / meas if meas > 0 else 0.0
        if abs(err - r["error_pct"]) > ERROR_TOLERANCE_PCT:
            raise InputError(path, f"model_comparison.{scope}.{cls}: error_pct {r['error_pct']:.3f} does not match "
                                   f"(modelled - measured) / measured = {err:.3f}")
        rows.append((cls, meas, mod, err))
    return rows


def compare_op_kinds(measured, modelled, plan=None, phase="verify"):
    """Per op kind, the summed durations of one phase in a run (op_us measured) and a model (--ops), matched
    op by op: rows (kind, n_ops, measured_ms, modelled_ms, error_pct). Collectives are left out (the run's
    are measured on another fabric or skipped). With a plan, side-stream ops are left out too, as the
    run's own class sums do (the main stream is the critical path)."""
    mp, dp = measured.get("_path", "(measured)"), modelled.get("_path", "(modelled)")
    m_ops = _ops_of(measured, mp)
    d_ops = _ops_of(modelled, dp)
    streams = {}
    if plan is not None:
        for ph in plan["phases"]:
            for i, op in enumerate(ph.get("ops", [])):
                streams[(ph["name"], i)] = op["stream"]
    d_index = {(o["phase"], o["index"]): o for o in d_ops}
    sums = {}
    for o in m_ops:
        if o["phase"] != phase or o["kind"] in COMM_KINDS:
            continue
        if streams and streams.get((o["phase"], o["index"]), "main") != "main":
            continue
        d = d_index.get((o["phase"], o["index"]))
        if d is None or d["name"] != o["name"] or d["kind"] != o["kind"]:
            raise InputError(dp, f"op {o['phase']}[{o['index']}] is {o['name']} in {mp} but "
                                 f"{d['name'] if d else 'absent'} here: not the same plan")
        acc = sums.setdefault(o["kind"], [0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += o["us"] / 1e3
        acc[2] += d["us"] / 1e3
    if not sums:
        raise InputError(mp, f"no compute ops in phase '{phase}'")
    rows = []
    for kind, (n, meas, mod) in sorted(sums.items(), key=lambda kv: -kv[1][1]):
        rows.append((kind, n, meas, mod, 100.0 * (mod - meas) / meas if meas > 0 else 0.0))
    return rows


def _ops_of(doc, path):
    avail = [b for b in doc["backends"] if b["available"] and b.get("ops")]
    if len(avail) != 1:
        raise InputError(path, "needs exactly one available backend with per-op durations ('ops'; "
                               "`vpsim model --ops` or `vpsim run --out`)")
    for o in avail[0]["ops"]:
        if not is_number(o["us"]):
            raise InputError(path, f"op {o['phase']}[{o['index']}]: 'us' is not a number")
    return avail[0]["ops"]


def same_card(doc):
    """Whether a run's model_comparison system plausibly describes the measured GPU (heuristic: the GPU's
    model number, e.g. "h200", appears in the system file's name). A model of another card is no test
    of the model, and the report says so."""
    return _gpu_token(doc) in doc["model_comparison"]["system"].lower()


def _gpu_token(doc):
    return gpu_name(doc).split()[-1].lower()


def instrumentation_overshoot(doc):
    """(sum of per-op times, timed cycle, overshoot per op in us or None) of a run."""
    b = next(b for b in doc["backends"] if b["available"])
    ops_sum = b["verify_ms"] + b["draft_ms"]
    cycle = doc["measured"]["cycle_median_ms"]
    n_ops = len(b.get("ops") or [])
    return ops_sum, cycle, (1e3 * (ops_sum - cycle) / n_ops if n_ops else None)


def instrumentation_note(doc):
    """For a run: how far the per-op times (instrumented pass) overshoot the timed cycle, as a sentence;
    that overshoot is timer overhead inside every measured op, so it inflates the measured side of a
    model comparison."""
    b = next(b for b in doc["backends"] if b["available"])
    ops_sum = b["verify_ms"] + b["draft_ms"]
    cycle = doc["measured"]["cycle_median_ms"]
    n_ops = len(b.get("ops") or [])
    per_op = f", {1e3 * (ops_sum - cycle) / n_ops:.1f} us per op over {n_ops} ops" if n_ops else ""
    return (f"Measured per-op times sum to {ops_sum:.2f} ms against a timed cycle of {cycle:.2f} ms "
            f"({ops_sum - cycle:+.2f} ms{per_op}): the timers around each op inflate the measured side.")


# Conditions that must agree before a run and a model result are compared op by op: a 32K-context run
# against an 8K-context model differs by the attention it reads, not by the model's error.
CONDITION_KEYS = ("tp", "batch", "context", "graph", "model")


def condition_mismatch(run, model):
    """The conditions on which a run and a model result differ, as "context 32768 (run) vs 8192 (model)"
    strings; empty when they compare like for like. The run's own TP is the scenario's parallel.tp (a
    run on fewer GPUs replays that TP's per-rank shapes)."""
    out = []
    for k in CONDITION_KEYS:
        a, b = run.get(k), model.get(k)
        if a is not None and b is not None and a != b:
            out.append(f"{k} {a} (run) vs {b} (model)")
    return out


# ---------------------------------------------------------------- held-out scenarios

def heldout_cases(doc):
    """One dict per case of a validated vpsim.heldout/1 document, in the file's order: case, sets ("" for
    the scenario as it is), gpu, within (the file's verdict, which the loader checked against the bounds)
    and rows [(row, measured_ms, modelled_ms, error_pct, bound_pct)] for gemm, attention, other, cycle."""
    b = doc["bounds"]
    out = []
    for c in doc["cases"]:
        rows = [(r, c[r]["measured_ms"], c[r]["modelled_ms"], c[r]["error_pct"],
                 b["cycle_pct"] if r == "cycle" else b["class_pct"]) for r in HELDOUT_ROWS]
        out.append({"case": c["case"], "sets": c["sets"], "gpu": c.get("gpu", ""), "within": c["within_bounds"],
                    "rows": rows})
    return out


# The answer (the report's first screen) is extracted in vpsim_answer.py; its names stay reachable here.
from vpsim_answer import (answer, backend_swaps, figure_kind, inputs_tried, model_checks, not_ranked,  # noqa: E402,F401
                          ranked_changes, ranking_bars, rests_on)

#!/usr/bin/python3
"""One-page report (Markdown + HTML, with PNG/SVG figures) from a folder of vpsim outputs.

Reads every vpsim output in the folder (results JSON from `vpsim model` / `vpsim run`, sweep CSVs,
bench-allreduce JSON, plan JSON, compare JSON, held-out JSON from bench/heldout.py), draws the figures and writes REPORT/report.md and REPORT/report.html.
Where each number came from is taken from the files and from the folder's README.md (see
vpsim_provenance.py); every figure and table names its sources.

The page leads with the answer (section_answer, from the compare file: the box, the baseline, the best
changes with their gain and what their sign rests on, the model's measured error where it was checked, a
conclusion in words), then the evidence, detail tables folded in <details>.

A vpsim output that is malformed stops the report with a message naming the file (exit 2); files
that are not vpsim outputs (README.md, Chrome traces, partial sweeps) are listed as skipped.

`make report` runs this on traces/samples (the committed samples) into build/report/.
"""

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import report_render  # noqa: E402
import vpsim_draw as draw  # noqa: E402
import vpsim_extract as ex  # noqa: E402
from vpsim_inputs import (InputError, load_bench, load_heldout, load_json, load_plan, load_ranking,  # noqa: E402
                          load_results, load_sweep, read_text)
from vpsim_provenance import command_of, describe, describe_many, read_readme  # noqa: E402
# The first screen (the answer) and its words: report_answer.py; names kept here for the tests and callers.
from report_answer import (check_lines, conclusion, kind_text, pct, rests_text, section_answer,  # noqa: E402,F401
                           short, sign_words, system_description)

SWEEP_TITLES = {
    "speculative.num_draft_tokens": "Throughput against draft tokens per verify pass (modelled)",
    "speculative.steps": "Throughput against draft steps (modelled)",
    "parallel.tp": "Throughput against GPU count (tensor parallel ranks, modelled)",
    "workload.context": "Throughput against context length in tokens (modelled)",
    "workload.batch": "Throughput against batch (modelled)",
}
SCHEMA_LOADERS = {"vpsim.results/1": ("results", load_results), "vpsim.bench_allreduce/1": ("bench", load_bench),
                  "vpsim.plan/1": ("plan", load_plan), "vpsim.compare/1": ("ranking", load_ranking),
                  "vpsim.heldout/1": ("heldout", load_heldout)}


def discover(folder):
    """{kind: [(path, doc)]} and a list of skipped files with why. Malformed vpsim outputs raise."""
    if not os.path.isdir(folder):
        raise InputError(folder, "no such folder")
    found = {"results": [], "bench": [], "plan": [], "sweep": [], "ranking": [], "heldout": []}
    skipped = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or name.startswith("."):
            continue
        if name.endswith(".json"):
            schema = load_json(path).get("schema")
            if schema not in SCHEMA_LOADERS:
                skipped.append((name, f"JSON without a vpsim schema (schema: {schema!r})"))
                continue
            kind, loader = SCHEMA_LOADERS[schema]
            doc = loader(path)
            if kind == "results":
                doc["_path"] = path
            found[kind].append((path, doc))
        elif name.endswith(".csv"):
            header = read_text(path).splitlines()[0].split(",")
            if "backend" in header and "tok_per_s" in header:
                found["sweep"].append((path, load_sweep(path)))
            else:
                skipped.append((name, "CSV that is not a vpsim sweep (no backend / tok_per_s columns)"))
    if not any(found.values()):
        raise InputError(folder, "no vpsim outputs (results/bench/plan/compare/held-out JSON or sweep CSV) in this folder")
    return found, skipped


def f2(v):
    return f"{v:.2f}"


def fig_block(out, paths, alt, sources):
    """A figure with a caption naming its input files (their provenance is in the last section and in the
    figure's own footnote) and the SVG beside the PNG."""
    png = os.path.relpath(paths[0], out)
    names = ", ".join(f"`{os.path.basename(p)}`" for p in sources)
    return ("img", png, alt, f"Inputs: {names} (provenance below and in the figure's footnote); "
                             f"vector version `{os.path.relpath(paths[1], out)}`.")


def section_scenario(found, blocks):
    docs = [d for _, d in found["results"]]
    first = docs[0] if docs else None
    blocks.append(("h2", "Scenario"))
    if first:
        blocks.append(("p", f"Scenario **{first['scenario']}** (`{first.get('scenario_path')}`): target model "
                            f"{first.get('model')}, TP={first['tp']}, batch {first['batch']}, context "
                            f"{first['context']} tokens. Expected tokens per cycle {first.get('expected_tokens')}: "
                            f"{first.get('tokens_formula')}. {first.get('tok_per_s_formula', '')}."))
    for path, plan in found["plan"]:
        rows = []
        for ph in plan["phases"]:
            s = ph["summary"]
            rows.append((ph["name"], ph.get("tokens", ""), s.get("allreduce_count", ""),
                         ", ".join(f"{b:,}" for b in sorted(set(s["allreduce_bytes"]))), s.get("allgather_count", ""),
                         f"{s.get('allgather_bytes', 0):,}", f"{s.get('flops', 0) / 1e9:.1f}",
                         f"{s.get('weight_bytes', 0) / 2**30:.2f}"))
        blocks.append(("p", f"Schedule from `{os.path.basename(path)}` ({plan['ranks']} ranks; per rank):"))
        blocks.append(("table", ["phase", "tokens", "allreduces", "allreduce bytes", "all-gathers",
                                 "all-gather bytes", "GFLOP", "weights GiB"], rows))
    envs = [(p, d) for p, d in found["results"] if d["mode"] == "run"]
    if envs:
        env_blocks = []
        keys = ("gpu", "cuda_driver", "cuda_runtime", "cublas", "device_memory_per_rank", "quantised_gemm_stand_in")
        envs_d = [(os.path.basename(p), d.get("environment") or {}) for p, d in envs]
        same = [k for k in keys if len({e.get(k) for _, e in envs_d}) == 1 and envs_d[0][1].get(k)]
        if same:
            env_blocks.append(("table", ["key", "value (every run)"], [(k, envs_d[0][1][k]) for k in same]))
        per_run = [k for k in keys if k not in same] + ["gpu_state_before", "gpu_state_after", "comm"]
        env_blocks.append(("table", ["run"] + per_run, [[name] + [e.get(k, "-") for k in per_run]
                                                        for name, e in envs_d]))
        blocks.append(("h2", "Environment of the measurements"))
        gpus = sorted({e.get("gpu", "?") for _, e in envs_d})
        blocks.append(("details", f"{len(envs_d)} runs on {', '.join(gpus)}: driver, runtime, memory, GPU state "
                                  "before and after, collectives", env_blocks))


def section_cycle(found, out, blocks, readme):
    # The scenario's own system (the one modelled with every backend) first, then the smaller ones.
    modelled = sorted([(p, d) for p, d in found["results"] if d["mode"] == "model"],
                      key=lambda pd: -len(pd[1]["backends"]))
    measured = [(p, d) for p, d in found["results"] if d["mode"] == "run"]
    if not (modelled or measured):
        return
    blocks.append(("h2", "Where the cycle goes, per backend"))
    for title, docs, name in (("Modelled cycle per backend", modelled, "cycle-modelled"),
                              ("Measured cycle per backend", measured, "cycle-measured")):
        if not docs:
            continue
        bars = ex.breakdown_bars(docs)
        foot = ([describe("results", p, d, readme) for p, d in docs] if len(docs) <= 4 else
                describe_many(docs, readme))
        paths = draw.draw_breakdown(bars, os.path.join(out, "figures", name), foot, title)
        blocks.append(("h3", title))
        blocks.append(fig_block(out, paths, title, [p for p, _ in docs]))
        rows = []
        for b in bars:
            s = b["segments"]
            files = ", ".join(os.path.basename(p) for p in [b["path"]] + b["also_in"])
            rows.append((b["label"], b["group"], f2(s["draft"]), f2(s["verify GEMM"]), f2(s["verify attention"]),
                         f2(s["verify other compute"]), f2(s["verify communication"]), f2(s["host"]),
                         f2(b["ops_sum_ms"] + s["host"]), f2(b["cycle_ms"]), f"{b['tok_per_s']:.1f}", files))
        blocks.append(("details", f"{title}: the bars as a table ({len(rows)} rows, ms per cycle)",
                       [("table", ["backend", "source", "draft ms", "GEMM ms", "attention ms", "other ms", "comm ms",
                                   "host ms", "sum ms", "cycle ms", "tok/s", "file"], rows)]))
        unavailable = [(d["system"], b["backend"], b["reason"]) for _, d in docs for b in d["backends"]
                       if not b["available"]]
        if unavailable:
            blocks.append(("ul", [f"{be} not available on {sysname}: {why}" for sysname, be, why in unavailable]))
        # vpsim's own like-for-like warnings (results warnings[]), once per text, with the files they hit.
        warned = {}
        for p, d in docs:
            for b in d["backends"]:
                for w in b.get("warnings") or []:
                    warned.setdefault(f"`{w['code']}`: {w['text']}", set()).add(os.path.basename(p))
        if warned:
            blocks.append(("p", "**Warnings** (figures that are not like for like, as vpsim flagged them):"))
            blocks.append(("ul", [f"{text} ({', '.join(sorted(files))})" for text, files in sorted(warned.items())]))
        if docs is measured:
            over = [ex.instrumentation_overshoot(d)[2] for _, d in docs]
            over = [o for o in over if o is not None]
            blocks.append(("p", "Measured segments are per-op times from the instrumented pass (a timer pair "
                                "around every op); the cycle and tok/s are the timed median (CUDA graph or eager). "
                                "The per-op sums differ from the cycle by "
                                f"{min(over):+.1f} to {max(over):+.1f} us per op: timer overhead, not work."
                                if over else "Measured segments are per-op times from the instrumented pass."))


def section_allreduce(found, out, blocks, readme):
    if not found["bench"]:
        return
    benches = [d for _, d in found["bench"]]
    plans = [d for _, d in found["plan"]]
    blocks.append(("h2", "Allreduce latency against size"))
    # Several benchmark files would overlay unrelated setups (1 rank, virtual ranks); one figure each. Shown:
    # per rank count, the benchmark of the most backends (CUDA graphs first); the others folded below.
    shown = {}
    for doc in benches:
        key = doc["ranks"]
        score = (sum(b["supported"] for b in doc["backends"]), doc["graph"])
        if key not in shown or score > shown[key][0]:
            shown[key] = (score, doc["path"])
    shown_paths = {p for _, p in shown.values()}
    main, folded = blocks, []
    for doc in benches:
        blocks = main if doc["path"] in shown_paths else folded
        data = ex.allreduce_series([doc], plans)
        name = "allreduce-" + ex.stem(doc["path"])
        foot = [describe("bench", doc["path"], doc, readme)]
        foot += [describe("plan", p, None, readme) for p, _ in found["plan"]]
        paths = draw.draw_allreduce(data, os.path.join(out, "figures", name), foot)
        blocks.append(("h3", os.path.basename(doc["path"])))
        blocks.append(fig_block(out, paths, "allreduce latency",
                                [doc["path"]] + [p for p, _ in found["plan"]]))
        if data["caveats"]:
            blocks.append(("p", "**Caveat:** " + "; ".join(data["caveats"]) + "."))
        rows = []
        for s in data["series"]:
            for vb in data["verify_bytes"]:
                t = ex.time_at(s, vb)
                rows.append((s["label"], f"{vb:,}", f"{t:.2f}" if t is not None else "not run at this size"))
        rows += [(label, "-", f"unsupported: {why}") for label, why in data["unsupported"]]
        tables = [("table", ["backend", "verify payload (B)", "time per call (us)"], rows)]
        if doc.get("model"):
            tables.append(("p", f"Model (dashed) on system `{doc['model']['system']}` ({doc['model'].get('note', '')}): "
                                "per-call time of back-to-back calls as `vpsim bench-allreduce --model` prices them; "
                                "error = (model - measured) / measured, over the rows from 4 KiB to 1 MiB."))
            mrows = []
            for sr in data["series"]:
                e = ex.model_errors(sr)
                if e is None:
                    continue
                at = [ex.model_at(sr, vb) for vb in data["verify_bytes"]]
                at = next((a for a in at if a), None)
                mrows.append((sr["label"], f"{e[0]:.1f}%", f"{e[1]:+.1f}%", str(e[2]),
                              f"{at[0]:.2f} / {at[1]:.2f}" if at else "-", sr.get("model_method") or ""))
            if mrows:
                tables.append(("table", ["backend", "median |error|", "median error", "rows",
                                         "verify payload: measured / model (us)", "how the model priced it"], mrows))
        blocks.append(("details", f"`{os.path.basename(doc['path'])}` at the verify payload"
                                  + (", and the model's error" if doc.get("model") else ""), tables))
    blocks = main
    if folded:
        blocks.append(("details", f"{sum(1 for b in folded if b[0] == 'img')} more allreduce benchmarks "
                                  f"(other launch modes, one NCCL transport at a time)", folded))


def section_sweeps(found, out, blocks, readme):
    if not found["sweep"]:
        return
    blocks.append(("h2", "Sweeps (modelled)"))
    for path, sweep in found["sweep"]:
        sw = ex.sweep_series(sweep)
        name = ex.stem(path) if ex.stem(path).startswith("sweep") else "sweep-" + ex.stem(path)
        title = SWEEP_TITLES.get(sw["x_key"])
        foot = [describe("sweep", path, sweep, readme)]
        blocks.append(("h3", title or os.path.basename(path)))
        cmd = command_of(path, readme)
        if len(sw["x_order"]) >= 2:
            paths = draw.draw_sweep(sw, os.path.join(out, "figures", name), foot, title)
            blocks.append(fig_block(out, paths, title or name, [path]))
        else:
            # One x value with points: a line plot would be a dot per backend; the table says it all.
            blocks.append(("p", f"`{os.path.basename(path)}`: only {sw['x_key']}={sw['x_order'][0]} has points "
                                f"({len(sw['rejected'])} other combinations rejected, e.g. "
                                f"{next(iter(sw['rejected'].items()))[0]}: "
                                f"{short(next(iter(sw['rejected'].values())), 70)}); no figure."
                                if sw["rejected"] else f"`{os.path.basename(path)}`: one point per backend; no figure."))
        rows = []
        for xv, (by, bl), (wy, wl), bound in ex.best_per_x(sw):
            tie = abs(by - wy) < 1e-9
            rows.append((xv, "all equal" if tie else bl, f"{by:.1f}", "" if tie else wl, "" if tie else f"{wy:.1f}",
                         f"{bound:.1f}" if bound is not None else "-"))
        table = ("table", [sw["x_key"], "best backend", "tok/s", "worst backend", "tok/s",
                           "bound: no collectives (tok/s)"], rows)
        extra = [("p", f"Command: `{cmd}`")] if cmd else []
        if len(sw["x_order"]) >= 2:
            blocks.append(("details", f"best and worst backend per {sw['x_key']}, and the command", [table] + extra))
        else:
            blocks += [table] + extra


def section_ranking(found, out, blocks, readme):
    """`vpsim compare` outputs: the variants best first, as bars and as a table."""
    if not found["ranking"]:
        return
    blocks.append(("h2", "Ranking of the variants (modelled)"))
    for path, doc in found["ranking"]:
        name = "ranking-" + ex.stem(path)
        foot = [describe("ranking", path, doc, readme)]
        if doc.get("auto_nospec"):
            foot.append(doc["auto_nospec"])
        title = f"Variants of {doc.get('scenario')} on {doc.get('system')}, best first"
        paths = draw.draw_ranking(doc, os.path.join(out, "figures", name), foot, title)
        blocks.append(("h3", title))
        blocks.append(fig_block(out, paths, title, [path]))
        cmd = command_of(path, readme)
        missing = ex.not_ranked(doc)
        if missing:
            blocks.append(("p", "**Not ranked** (no figure, so no bar): " + "; ".join(
                f"{v} ({b}): {why}" for v, b, why in missing) + "."))
        rows = []
        for r in doc["rows"]:
            ok = r["available"]
            fits = "-" if r.get("fits") is None else (
                f"yes {r['memory_gib']:.1f} GiB" if r["fits"] else
                f"no: needs {r['memory_gib']:.1f} of {r['memory_capacity_gib']:.1f} GiB")
            gain = "base" if r["baseline"] and ok else (f"{r['gain_pct']:+.1f}%" if r.get("gain_pct") is not None else "-")
            rows.append((str(r["rank"]), ("~ " if r.get("ranked_apart") else "") + r["variant"], r["backend"], f2(r["cycle_ms"]) if ok else "-",
                         f"{r['tok_per_s']:.1f}" if ok else "-", gain, fits,
                         r.get("source") or r.get("reason") or "-", (r.get("engine") or {}).get("needs") or "-"))
        blocks.append(("details", f"The ranking as a table ({len(rows)} rows: cycle, tok/s, gain, memory fit, "
                                  "where each figure comes from, what an engine would need)",
                       [("table", ["#", "variant", "backend", "cycle ms", "tok/s", "gain", "fits", "source",
                                   "engine would need"], rows)] + ([("p", f"Command: `{cmd}`")] if cmd else [])))
        apart = [r for r in doc["rows"] if r.get("ranked_apart")]
        if apart:
            blocks.append(("p", "**Ranked apart** (after the others, however fast): "
                                + ", ".join(r["variant"] + ("" if f"({r['backend']})" in r["variant"] else
                                                            f" ({r['backend']})") for r in apart)
                                + ". Their allreduce figure is the formula because the system file's measurement "
                                  "for that backend does not apply under the variant's conditions, while the "
                                  "baseline uses the measurement: measure them before trusting the gain."))


def section_compare(found, out, blocks, readme):
    runs = [(p, d) for p, d in found["results"] if d["mode"] == "run" and d.get("model_comparison")]
    if not runs:
        return
    blocks.append(("h2", "Model against measurement"))
    rows = []
    for p, d in runs:
        cells = [os.path.basename(p), d["model_comparison"]["system"]]
        for cls, meas, mod, err in ex.compare_classes(d):
            cells.append(f"{f2(meas)} / {f2(mod)} ({err:+.0f}%)")
        rows.append(cells)
    def models_for(d):
        """Model results with per-op figures for the run's system, like-for-like conditions first."""
        system = d["model_comparison"]["system"]
        ms = [(mp, m) for mp, m in found["results"] if m["mode"] == "model" and m.get("system") == system
              and any(b.get("ops") for b in m["backends"])]
        return sorted(ms, key=lambda pm: len(ex.condition_mismatch(d, pm[1])))

    def rank(pd):
        d = pd[1]
        ms = models_for(d)
        return (bool(ms) and bool(ex.condition_mismatch(d, ms[0][1])), d["backends"][0]["backend"] != "none",
                not d.get("measured", {}).get("graph", False))

    # One figure per model system: its compute-only run (backend none), timed as a graph, with a model
    # result of the same conditions (context, TP, batch, launch mode) when there is one.
    drawn = set()
    for p, d in sorted(runs, key=rank):
        system = d["model_comparison"]["system"]
        if system in drawn:
            continue
        drawn.add(system)
        kinds, foot = None, [describe("results", p, d, readme)]
        models = models_for(d)
        plan = found["plan"][0][1] if found["plan"] else None
        stale = None
        mismatch = ex.condition_mismatch(d, models[0][1]) if models else []
        if models:
            kinds = ex.compare_op_kinds(d, models[0][1], plan)
            foot.append(describe("results", models[0][0], models[0][1], readme))
            embedded = d["model_comparison"]["verify"]["total"]["modelled_ms"]
            now = sum(k[3] for k in kinds)
            if abs(now - embedded) > 0.01 * max(now, embedded):
                stale = (os.path.basename(models[0][0]), now, embedded)
        foot.append(ex.instrumentation_note(d))
        name = f"compare-{system}"
        title = f"Model ({system}) against measurement on {ex.gpu_name(d)}"
        if mismatch:
            foot.insert(0, "NOT LIKE FOR LIKE (per-kind panel): " + "; ".join(mismatch))
        paths = draw.draw_compare(ex.compare_classes(d), kinds, os.path.join(out, "figures", name), foot,
                                  title + " - label: (modelled - measured) / measured", system,
                                  mismatch=mismatch)
        # Folded: the compute of one run per system against the model; the answer's checks are the held-out
        # replays and the whole cycles below. Warnings about the pairing stay open.
        total = [r for r in ex.compare_classes(d) if r[0] == "total"][0]
        sub = [fig_block(out, paths, title, [p] + [mp for mp, _ in models[:1]])]
        blocks.append(("details", f"{title}: verify compute per op class and kind, total {total[3]:+.0f}% "
                                  f"(`{os.path.basename(p)}`)", sub))
        if stale:
            sub.append(("p", f"**Two model versions:** the per-kind bars use `{stale[0]}` ({stale[1]:.2f} ms of "
                                f"verify compute); the per-class bars are the run's own comparison, made by the model "
                                f"of its day ({stale[2]:.2f} ms). The model changed since the run; the measured "
                                f"side is the same."))
        if mismatch:
            blocks.append(("p", f"**Not like for like:** the per-kind bars pair this run with "
                                f"`{os.path.basename(models[0][0])}`, which was modelled under other conditions: "
                                f"{'; '.join(mismatch)}. Their error mixes the model's error with that difference; "
                                f"no model result with the run's conditions was found."))
        if not ex.same_card(d):
            blocks.append(("p", f"**Different cards:** the model describes `{system}`, the measurement ran on "
                                f"{ex.gpu_name(d)}; the error here mixes the model's error with the card difference."))
    cyc = ex.compare_backend_cycles(runs)
    if cyc:
        blocks.append(("h3", "Whole cycle per backend, collectives included"))
        blocks.append(("p", "Each run's timed cycle (median) against the model of the same backend and launch mode "
                            "on the run's system file, the model's host overhead left out (a replay has no serving "
                            "stack); allreduce: the mean verify allreduce inside the cycle (per-op timers) against "
                            "the model's."))
        lo, hi = min(r["error_pct"] for r in cyc), max(r["error_pct"] for r in cyc)
        blocks.append(("p", f"{len(cyc)} runs: cycle error {lo:+.1f}% to {hi:+.1f}%."))
        blocks.append(("details", f"The {len(cyc)} runs, cycle and mean verify allreduce, measured / modelled",
                       [("table", ["run", "system", "ranks", "mode", "backend", "cycle measured / modelled (ms)",
                                 "error", "allreduce measured / modelled (us)", "model method"],
                       [(os.path.basename(r["path"]), r["system"], r["ranks"], r["mode"], r["backend"],
                         f"{r['measured_ms']:.3f} / {r['modelled_ms']:.3f}", f"{r['error_pct']:+.1f}%",
                         f"{r['ar_measured_us']:.2f} / {r['ar_modelled_us']:.2f}", r["ar_method"]) for r in cyc])]))
    blocks.append(("details", f"Per op class, each run's own comparison ({len(rows)} runs, the model of the run's day)",
                   [("p", "Verify pass, compute only (collectives excluded on both sides), main stream; from each "
                          "run's own `model_comparison` (the model system is the run's scenario system: a "
                          "comparison against a system other than the measured GPU compares different cards)."),
                    ("table", ["run", "model system"] + [f"{c}: measured / modelled ms (error)"
                                                         for c in ex.COMPARE_CLASSES], rows)]))


def section_import(found, out, blocks, readme):
    """`vpsim import-trace --breakdown` documents (a server's profile read back) beside the model of the
    system file the import wrote: the model's results are the sample named model-<the import's file>."""
    imports = [(p, d) for p, d in found["results"] if d["mode"] == "import-trace"]
    if not imports:
        return
    blocks.append(("h2", "A server trace, imported, beside the model of it"))
    by_name = {os.path.basename(p): (p, d) for p, d in found["results"] if d["mode"] == "model"}
    for path, doc in imports:
        pair = by_name.get("model-" + os.path.basename(path))
        docs = [(path, doc)] + ([pair] if pair else [])
        bars = ex.breakdown_bars(docs)
        imp = doc["import"]
        name = ex.stem(path) if ex.stem(path).startswith("import") else "import-" + ex.stem(path)
        title = f"Imported cycle ({', '.join(os.path.basename(f) for f in imp['files'])}) and its model"
        foot = [f"{os.path.basename(path)}: MEASURED by the server's own profiler ({imp['source']}), "
                f"{imp['cycles']} cycles on {imp['ranks']} rank{'s' if imp['ranks'] != 1 else ''}, "
                f"{100 * imp['named_fraction']:.1f}% of kernel time named"]
        if pair:
            foot.append(describe("results", pair[0], pair[1], readme) + " (the system file the import wrote)")
        paths = draw.draw_breakdown(bars, os.path.join(out, "figures", name), foot, title)
        blocks.append(("h3", os.path.basename(path)))
        check = imp.get("model_check") or {}
        blocks.append(("p", f"The trace's cycle is {imp['cycle_ms']:.3f} ms"
                            + (f"; `vpsim model` on the system file the import wrote gives "
                               f"{check['model_cycle_ms']:.3f} ms ({check['error_pct']:+.1f}%)" if check else "")
                            + f". {100 * imp['named_fraction']:.1f}% of the kernel time is named by the kernel "
                              "table; what is not named is listed by the import."))
        blocks.append(fig_block(out, paths, title, [p for p, _ in docs]))
        if pair and len(bars) == 2:
            rows = [(seg, f2(bars[0]["segments"][seg]), f2(bars[1]["segments"][seg]),
                     f"{100 * (bars[1]['segments'][seg] / bars[0]['segments'][seg] - 1):+.1f}%"
                     if bars[0]["segments"][seg] > 0 else "-") for seg in bars[0]["segments"]]
            blocks.append(("details", "Per segment: imported / modelled ms",
                           [("table", ["segment", "imported ms", "modelled ms", "model - import"], rows)]))


def section_heldout(found, out, blocks, readme):
    """bench/heldout.py's documents: the model on a probed system file against replays of scenarios the
    probe did not use, per op class and for the cycle, as a table and one figure of the errors."""
    if not found["heldout"]:
        return
    blocks.append(("h2", "Held-out scenarios: model against replay"))
    for path, doc in found["heldout"]:
        cases = ex.heldout_cases(doc)
        name = ex.stem(path) if ex.stem(path).startswith("heldout") else "heldout-" + ex.stem(path)
        b = doc["bounds"]
        inside = sum(c["within"] for c in cases)
        foot = [describe("heldout", path, doc, readme)]
        cmd = command_of(path, readme)
        if cmd:
            foot.append(f"command: {cmd}")
        title = f"Held-out scenarios of {doc['scenario']}: model ({doc['system']}) against replay"
        paths = draw.draw_heldout(cases, b, os.path.join(out, "figures", name), foot,
                                  title)
        blocks.append(("h3", os.path.basename(path)))
        blocks.append(("p", f"Each case is `{doc['scenario']}` with its `--set` options, modelled on "
                            f"`{doc['system']}` and replayed on the GPU; {doc['what']}. "
                            f"The bounds: every op class (gemm, attention, other) within ±{b['class_pct']:g}% "
                            f"of the replay and the cycle within ±{b['cycle_pct']:g}%; **{inside} of "
                            f"{len(cases)} cases** are within them."))
        blocks.append(fig_block(out, paths, title, [path]))
        rows = [[c["case"], c["sets"] or "-"]
                + [f"{meas:.3f} / {mod:.3f} ({err:+.1f}%)" for _, meas, mod, err, _ in c["rows"]]
                + ["yes" if c["within"] else "no"] for c in cases]
        blocks.append(("details", f"The {len(cases)} cases as a table, the command and the provenance",
                       [("table", ["case", "--set"] + [f"{r[0]} ms: measured / modelled (error)"
                                                       for r in cases[0]["rows"]]
                         + [f"within ±{b['class_pct']:g}% / ±{b['cycle_pct']:g}%"], rows)]
                       + ([("p", f"Command: `{cmd}`")] if cmd else []) + [("p", f"Provenance: {foot[0]}.")]))


def build(folder, out):
    found, skipped = discover(folder)
    readme = read_readme(folder)
    figdir = os.path.join(out, "figures")
    os.makedirs(figdir, exist_ok=True)
    # Figures of an earlier build that this one does not draw (a sweep that lost its figure) would linger.
    for name in os.listdir(figdir):
        if name.endswith((".png", ".svg")):
            os.remove(os.path.join(figdir, name))
    scenario = (found["results"][0][1]["scenario"] if found["results"] else
                found["ranking"][0][1].get("scenario") if found["ranking"] else "(no results)")
    title = f"vpsim report: scenario {scenario}"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blocks = [("h1", title)]
    section_answer(found, blocks)
    blocks.append(("small", f"Built {now} by `analysis/make_report.py` from `{folder}`. MEASURED: `vpsim run` / "
                            "`vpsim bench-allreduce` on the machine named beside them; MODELLED: the analytic "
                            "model on a system file (`docs/model.md`); provenance of every input in the last "
                            "section."))
    section_ranking(found, out, blocks, readme)
    section_compare(found, out, blocks, readme)
    section_import(found, out, blocks, readme)
    section_heldout(found, out, blocks, readme)
    section_cycle(found, out, blocks, readme)
    section_allreduce(found, out, blocks, readme)
    section_sweeps(found, out, blocks, readme)
    section_scenario(found, blocks)
    blocks.append(("h2", "Provenance of the inputs"))
    items = []
    for kind in ("results", "bench", "sweep", "plan", "ranking", "heldout"):
        for path, doc in found[kind]:
            line = describe(kind, path, doc, readme)
            cmd = command_of(path, readme)
            items.append(line + (f"; command: `{cmd}`" if cmd else ""))
    items += [f"{name}: skipped: {why}" for name, why in skipped]
    blocks.append(("details", f"{len(items)} inputs: what each is, where and when it was measured or modelled, "
                              "the command", [("ul", items)]))
    md = os.path.join(out, "report.md")
    htm = os.path.join(out, "report.html")
    with open(md, "w", encoding="utf-8") as f:
        f.write(report_render.to_markdown(blocks))
    with open(htm, "w", encoding="utf-8") as f:
        f.write(report_render.to_html(blocks, title))
    return md, htm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="example: /usr/bin/python3 analysis/make_report.py traces/samples "
                                       "--out build/report")
    p.add_argument("folder", nargs="?", default="traces/samples",
                   help="folder of vpsim outputs (default traces/samples)")
    p.add_argument("--out", default="build/report", help="output folder (default build/report)")
    args = p.parse_args(argv)
    try:
        md, htm = build(args.folder, args.out)
    except InputError as e:
        print(f"make_report: error: {e}", file=sys.stderr)
        return 2
    print(md)
    print(htm)
    return 0


if __name__ == "__main__":
    sys.exit(main())

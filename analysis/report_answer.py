"""The report's first screen: the answer (the box, the baseline, the best changes with their gain and what
each sign rests on, the model's measured error where it was checked) and the words it is said in; every
figure from the data. make_report.py places it first and the evidence after."""

import os

import vpsim_extract as ex

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def system_description(name, root=REPO_ROOT):
    """(description, GPU name, path) of configs/systems/NAME.yaml in the checkout, read by line (no YAML
    library needed: the two keys are plain scalars), or None when the file is not there (a results
    folder from elsewhere: the answer then names the system only)."""
    if not name:
        return None
    path = os.path.join(root, "configs", "systems", f"{name}.yaml")
    if not os.path.isfile(path):
        return None
    desc = gpu = None
    in_gpu = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = line.split(" #", 1)[0].rstrip()
            if text.startswith("description:"):
                desc = text.split(":", 1)[1].strip()
            in_gpu = text.startswith("gpu:") or (in_gpu and line.startswith(" "))
            if in_gpu and text.strip().startswith("name:"):
                gpu = text.split(":", 1)[1].strip()
    return desc, gpu, os.path.relpath(path, root)


def short(text, n=60):
    return text if len(text) <= n else text[:n - 3].rstrip() + "..."


def pct(v, nd=1):
    return f"{v:+.{nd}f}%"


def kind_text(row):
    """What a compare row's figures are: MODELLED / MEASURED / MIXED, with the row's own source."""
    src = row.get("source") or "-"
    if src.lower().startswith(row["kind"]):
        src = src[len(row["kind"]):].lstrip(": ")
    return f"{row['kind'].upper()}: {src}" if src else row["kind"].upper()


def rests_text(row, n_tried):
    r = row["rests_on"]
    if r is None:
        return f"holds at all {n_tried} inputs tried"
    if r["input"] is None:
        return r["text"]
    return f"flips to {r['flipped']} with `{r['input']}`; settled by {r['reading']}"


def sign_words(ro, n):
    """A gain's sign in words: holds at the inputs tried, or rests on one input (and how to settle it)."""
    if ro is None:
        return f"sign holds at all {n} unmeasured inputs tried"
    if ro["input"] is None:
        return ro["text"]
    return f"sign rests on `{ro['input']}` (settled by {ro['reading']})"


def conclusion(ans, checks):
    """The answer in plain words, as sentences, every figure taken from the data (ans from
    vpsim_extract.answer, checks from vpsim_extract.model_checks)."""
    base = ans["baseline"]
    n = len(ans["inputs_tried"])
    out = []
    for backend, r in ans["swaps"]:
        if r["gain_pct"] < 0:
            ro = ex.rests_on(r)
            out.append(f"Forcing the {backend} allreduce alone loses {-r['gain_pct']:.0f}% "
                       f"({r['tok_per_s']:.1f} tok/s against the baseline's {base['tok_per_s']:.1f})"
                       + (f", unless `{ro['input']}` (then {ro['flipped']})" if ro and ro["input"] else "") + ".")
    best = ans["best"]
    if best:
        needs = (best.get("engine") or {}).get("needs")
        out.append(f"The best change is **{best['variant']}, {pct(best['gain_pct'], 0)}** "
                   f"({best['tok_per_s']:.1f} tok/s), {best['kind'].upper()}; "
                   f"{sign_words(best['rests_on'], n)}" + (f"; engine: {needs}" if needs else "") + ".")
        as_is = ans["best_as_is"]
        if as_is and as_is["variant"] != best["variant"]:
            out.append(f"The best that runs without an engine patch is **{as_is['variant']}, "
                       f"{pct(as_is['gain_pct'], 0)}** ({as_is['tok_per_s']:.1f} tok/s); "
                       f"{sign_words(as_is['rests_on'], n)}.")
    else:
        out.append(f"No change the model tried beats the baseline ({base['tok_per_s']:.1f} tok/s).")
    checked = sorted({c["system"] for c in checks})
    if ans["changes"] and ans["system"] not in checked:
        out.append(f"The model has not been checked against a measurement of {ans['system']}"
                   + (f" (only of {', '.join(checked)}: below)." if checked else "."))
    return " ".join(out)


def check_lines(checks):
    """One short line per place the model was checked (vpsim_extract.model_checks)."""
    out = []
    for c in checks:
        if c["kind"] == "heldout":
            b = c["bound"]
            out.append(f"compute, {c['n']} held-out scenarios on {c['measured_on']} (`{c['system']}`): cycle "
                       f"{pct(c['lo'])} to {pct(c['hi'])}, op classes {pct(c['class_lo'])} to {pct(c['class_hi'])}; "
                       f"{c['within']} of {c['n']} within ±{b['class_pct']:g}% / ±{b['cycle_pct']:g}%")
        elif c["kind"] == "cycle":
            out.append(f"whole cycle with collectives, {c['n']} runs on {c['measured_on']} (`{c['system']}`, "
                       f"{len(c['backends'])} backends): {pct(c['lo'])} to {pct(c['hi'])}")
        elif c["kind"] == "allreduce":
            out.append(f"allreduce per call, {c['n']} series on {c['measured_on']} (`{c['system']}`, "
                       f"{len(c['files'])} benchmarks), median per series: {pct(c['lo'])} to {pct(c['hi'])}")
    return out


def section_answer(found, blocks):
    """The first screen: the box, the baseline, the best changes with their gain and what each rests on,
    the model's measured error where it has been checked, and a conclusion in words; all from the data."""
    if not found["ranking"]:
        return
    path, doc = found["ranking"][0]
    ans = ex.answer(doc)
    checks = ex.model_checks(found)
    base = ans["baseline"]
    n = len(ans["inputs_tried"])
    inner = [("h2", "The answer"), ("lead", conclusion(ans, checks))]
    box = system_description(ans["system"])
    model = next((d for _, d in found["results"] if d["mode"] == "model" and d.get("system") == ans["system"]),
                 None)
    box_text = f"**Box:** `{ans['system']}`" + (f" ({box[0]}, `{box[2]}`)" if box and box[0] else "")
    box_text += (f"; {ans['model']}, scenario {ans['scenario']}"
                 + (f", TP={model['tp']}, batch {model['batch']}, context {model['context']}" if model else "") + ".")
    base_text = (f"**Baseline:** {base['variant']}: **{base['tok_per_s']:.1f} tok/s**, cycle {base['cycle_ms']:.2f} ms; "
                 f"{kind_text(base)}" + (f" ({base['allreduce_method']})" if base.get("allreduce_method") else ""))
    # The same box modelled by `vpsim model` (what `make run` prints without a GPU): its row of the
    # baseline's backend should carry the baseline's figure; say so, or say that they disagree.
    mrow = model and next((b for b in model["backends"] if b["available"] and b["backend"] == base["backend"]), None)
    if mrow:
        agree = abs(mrow["tok_per_s"] - base["tok_per_s"]) <= 1e-3 * base["tok_per_s"]
        base_text += (f"; `vpsim model` (`make run` without a GPU, `{os.path.basename(model['_path'])}`): "
                      f"{base['backend']} {mrow['tok_per_s']:.1f} tok/s, cycle {mrow['cycle_ms']:.2f} ms"
                      + (", the same" if agree else ": **NOT the baseline's figure** (different model versions "
                                                    "or settings)"))
    inner.append(("ul", [box_text, base_text + "."]))
    rows = [(str(i), c["variant"], c["backend"], f"{c['tok_per_s']:.1f}", pct(c["gain_pct"]), kind_text(c),
             rests_text(c, n), (c.get("engine") or {}).get("needs") or "-") for i, c in enumerate(ans["changes"], 1)]
    if rows:
        inner.append(("table", ["#", f"best {len(rows)} changes (`{os.path.basename(path)}`)", "backend", "tok/s",
                                "gain", "figures", f"sign of the gain at the {n} unmeasured inputs", "engine"], rows))
    lines = check_lines(checks)
    if lines:
        inner.append(("p", "**The model's measured error**, (modelled - measured) / measured: " + "; ".join(lines)
                           + "."))
    extra = []
    if ans["not_ranked"]:
        extra.append("not ranked (no figure): " + "; ".join(f"{v} ({short(why, 45)})" for v, _, why in ans["not_ranked"]))
    apart = [r for r in doc["rows"] if r.get("ranked_apart")]
    if apart:
        extra.append(f"{len(apart)} ranked apart (a formula where the box's measurement does not apply)")
    if ans["inputs_tried"]:
        extra.append("inputs tried: " + ", ".join(f"`{t}`" for t in ans["inputs_tried"]))
    if extra:
        text = "; ".join(extra)
        inner.append(("small", text[0].upper() + text[1:] + ". The evidence follows."))
    blocks.append(("answer", inner))

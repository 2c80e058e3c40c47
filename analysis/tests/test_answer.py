"""The report's first screen (make_report.section_answer on vpsim_extract.answer): it comes first, its
figures are the data's, a row without a figure gets no bar, and the figures are sized for a page with
their legends clear of the data."""

import copy
import glob
import inspect
import json
import os
import re
import struct

import pytest

import make_report
import vpsim_draw as draw
import vpsim_extract as ex
from conftest import SAMPLES

MAX_PX = 1000


def row(variant, backend, tok, gain, **kw):
    r = {"rank": 0, "variant": variant, "backend": backend, "available": True, "baseline": False, "reason": None,
         "set": [], "cycle_ms": 2200.0 / tok if tok else None, "tokens_per_cycle": 2.2, "tok_per_s": tok,
         "gain_pct": gain, "ranked_apart": False, "sign_rests_on": None, "fits": True, "memory_gib": 70.0,
         "memory_capacity_gib": 95.6, "source": "formula", "allreduce_method": "formula: test",
         "engine": {"sglang": "yes", "vllm": "yes", "needs": "sglang, vllm: runs as is"}, "warnings": []}
    r.update(kw)
    return r


# A plan with known rows, not in gain order in the file: the answer must sort them itself.
COMPARE = {
    "schema": "vpsim.compare/1", "scenario": "toy", "system": "toy-box-4x", "model": "Toy-1",
    "baseline": "base", "auto_nospec": None,
    "sign_inputs_tried": "system.a=1, system.b=2",
    "rows": [
        row("small gain", "nccl", 44.0, 10.0),
        row("base", "nccl", 40.0, 0.0, baseline=True, source="mixed: allreduce measured, ops formula"),
        row("big gain", "push", 60.0, 50.0, set=["run.backend=push"],
            engine={"sglang": "no: patch", "vllm": "no: patch", "needs": "sglang, vllm: no: patch"},
            sign_rests_on="+50.0% flips to -10.0% with system.b=2: the sign rests on it; decided by vpsim probe: "
                          "paths.k"),
        row("forced one-shot", "oneshot", 32.0, -20.0, set=["run.backend=oneshot"],
            sign_rests_on="-20.0% flips to +30.0% with system.a=1: the sign rests on it; decided by vpsim probe: "
                          "paths.j"),
        row("apart but fast", "nccl", 80.0, 100.0, ranked_apart=True),
        row("too big", "nccl", None, None, available=False, fits=False, cycle_ms=None,
            reason="does not fit: needs 200.0 GiB of 95.6"),
    ],
}


def build(tmp_path, doc, name="compare-toy.json"):
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(doc))
    md, htm = make_report.build(str(folder), str(tmp_path / "out"))
    return open(md, encoding="utf-8").read(), open(htm, encoding="utf-8").read()


def answer_of(md):
    return md.split("## The answer", 1)[1].split("\n## ", 1)[0]


def table_rows(section):
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| #")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def test_the_answer_comes_first(tmp_path):
    md, htm = build(tmp_path, COMPARE)
    body = htm.split("<body>", 1)[1]
    # The title, then the answer's section before any other heading, paragraph, figure or table.
    assert re.match(r"\s*<h1>[^<]*</h1>\s*<section class=\"answer\"", body)
    heads = re.findall(r"^## .*$", md, re.M)
    assert heads[0] == "## The answer"
    assert md.index("## The answer") < min(md.index(h) for h in heads[1:])


def test_ranked_order_gains_and_rests_on(tmp_path):
    md, _ = build(tmp_path, COMPARE)
    rows = table_rows(answer_of(md))
    # Best gain first; the baseline, the row ranked apart (however fast) and the one with no figure left out.
    assert [r[1] for r in rows] == ["big gain", "small gain", "forced one-shot"]
    assert [r[3] for r in rows] == ["60.0", "44.0", "32.0"]
    assert [r[4] for r in rows] == ["+50.0%", "+10.0%", "-20.0%"]
    assert rows[0][5] == "MODELLED: formula"
    assert rows[0][6] == "flips to -10.0% with `system.b=2`; settled by vpsim probe: paths.k"
    assert rows[1][6] == "holds at all 2 inputs tried"
    assert rows[0][7] == "sglang, vllm: no: patch"


def test_conclusion_and_baseline_from_the_data(tmp_path):
    md, _ = build(tmp_path, COMPARE)
    ans = answer_of(md)
    assert "Forcing the oneshot allreduce alone loses 20% (32.0 tok/s against the baseline's 40.0), unless " \
           "`system.a=1` (then +30.0%)." in ans
    assert "The best change is **big gain, +50%** (60.0 tok/s), MODELLED; sign rests on `system.b=2` " \
           "(settled by vpsim probe: paths.k); engine: sglang, vllm: no: patch." in ans
    # The best that needs no engine patch is another row, and said so.
    assert "The best that runs without an engine patch is **small gain, +10%** (44.0 tok/s)" in ans
    assert "**Baseline:** base: **40.0 tok/s**, cycle 55.00 ms; MIXED: allreduce measured, ops formula" in ans
    assert "The model has not been checked against a measurement of toy-box-4x." in ans
    assert "Not ranked (no figure): too big (does not fit: needs 200.0 GiB of 95.6)" in ans
    assert "1 ranked apart" in ans


def test_the_figures_follow_the_data(tmp_path):
    """No figure of the answer is typed in: other numbers in the file, other numbers on the screen."""
    doc = copy.deepcopy(COMPARE)
    big = doc["rows"][2]
    big.update(tok_per_s=72.0, gain_pct=80.0, sign_rests_on=None)
    doc["rows"][3]["gain_pct"] = -35.0
    md, _ = build(tmp_path, doc)
    ans = answer_of(md)
    assert "**big gain, +80%** (72.0 tok/s), MODELLED; sign holds at all 2 unmeasured inputs tried" in ans
    assert "loses 35%" in ans and "+50" not in ans and "loses 20%" not in ans
    # No change beats the baseline: the answer says so instead of naming a best.
    for r in doc["rows"]:
        if not r["baseline"] and r["available"]:
            r["gain_pct"] = -abs(r["gain_pct"]) - 1
    sub = tmp_path / "none"
    sub.mkdir()
    md, _ = build(sub, doc)
    assert "No change the model tried beats the baseline (40.0 tok/s)." in answer_of(md)


def test_no_figure_typed_into_the_answer_code():
    """The answer's code holds no literal figure (a number with %, tok/s, ms or us): all come from the data."""
    figure = re.compile(r"(?<![\w{.:+-])\d+(\.\d+)?\s?(%|tok/s|ms\b|us\b)")
    for fn in (make_report.section_answer, make_report.conclusion, make_report.check_lines,
               make_report.sign_words, make_report.kind_text, make_report.rests_text, ex.answer, ex.model_checks,
               ex.rests_on):
        src = inspect.getsource(fn)
        assert not figure.search(src), f"{fn.__name__}: {figure.search(src).group()}"


def test_a_row_without_a_figure_gets_no_bar(tmp_path):
    bars = ex.ranking_bars(COMPARE)
    assert "too big" not in [r["variant"] for r in bars]
    assert [r["variant"] for r in bars] == [r["variant"] for r in COMPARE["rows"] if r["available"]]
    md, _ = build(tmp_path, COMPARE)
    ranking = md.split("## Ranking of the variants (modelled)", 1)[1].split("\n## ", 1)[0]
    assert "**Not ranked** (no figure, so no bar): too big (nccl): does not fit: needs 200.0 GiB of 95.6." in ranking
    assert os.path.exists(tmp_path / "out" / "figures" / "ranking-compare-toy.png")


def test_rests_on_keeps_a_text_it_cannot_parse():
    r = ex.rests_on({"sign_rests_on": "something else entirely"})
    assert r == {"input": None, "flipped": None, "reading": None, "text": "something else entirely"}
    assert ex.rests_on({"sign_rests_on": None}) is None


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def sample_report(samples_report):
    return samples_report[0]


def test_figures_are_sized_for_a_page(sample_report):
    pngs = glob.glob(os.path.join(sample_report, "figures", "*.png"))
    assert len(pngs) >= 8
    for p in pngs:
        w, h = png_size(p)
        assert w <= MAX_PX, f"{os.path.basename(p)} is {w} px wide"
        assert h <= 2 * MAX_PX, f"{os.path.basename(p)} is {h} px tall"


def test_the_sample_report_is_short(sample_report):
    """Detail tables and secondary benchmarks are folded: few tables and figures stay open on the page."""
    htm = open(os.path.join(sample_report, "report.html"), encoding="utf-8").read()
    depth, shown = 0, {"<figure>": 0, "<table>": 0}
    for m in re.finditer(r"<details>|</details>|<figure>|<table>", htm):
        t = m.group()
        depth += {"<details>": 1, "</details>": -1}.get(t, 0)
        if t in shown and depth == 0:
            shown[t] += 1
    assert shown["<figure>"] <= 11 and shown["<table>"] <= 4, shown
    assert htm.count("<details>") == htm.count("</details>")


def test_a_legend_over_the_data_is_refused(tmp_path):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="a line")
    leg = ax.legend(loc="center")
    with pytest.raises(ValueError, match="legend overlaps"):
        draw.legend_clear(fig, leg, "t")
    plt.close(fig)


def test_a_figure_wider_than_a_page_is_refused(tmp_path):
    import matplotlib.pyplot as plt
    fig, _ = plt.subplots(figsize=(draw.FIG_W + 1, 3))
    with pytest.raises(ValueError, match="wide"):
        draw._save(fig, str(tmp_path / "w"), 0.2)
    plt.close(fig)


def test_many_runs_share_one_provenance_line():
    """A figure of many runs says what they share (GPU, ranks, cycles, machines, dates) and names them,
    instead of one footnote line per file (those stay in the report's provenance section)."""
    from vpsim_inputs import load_results
    from vpsim_provenance import describe_many, read_readme
    names = ["h200-none-graph.results.json", "h200x2-nccl-eager.results.json", "h200x2-push-graph.results.json"]
    pairs = [(os.path.join(SAMPLES, n), load_results(os.path.join(SAMPLES, n))) for n in names]
    text, files = describe_many(pairs, read_readme(SAMPLES))
    assert text.startswith("3 runs MEASURED on NVIDIA H200 (1-2 ranks, median of 20-30 timed CUDA-graph or eager cycles")
    assert "device nvidia-h200 (one NVIDIA H200)" in text and "2026-11-29, 2026-11-30" in text
    assert files.startswith("files: h200-none-graph, h200x2-nccl-eager, h200x2-push-graph")

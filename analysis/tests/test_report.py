"""`make report`'s builder on the committed samples: every section, every figure, provenance for every input."""

import os
import re

import pytest

import make_report
import report_render
from conftest import SAMPLES, read_json, sample
from vpsim_provenance import read_readme

OUTPUT_KINDS = (".json", ".csv")


@pytest.fixture(scope="module")
def report(samples_report):
    out, md, htm = samples_report
    return out, open(md, encoding="utf-8").read(), open(htm, encoding="utf-8").read()


def test_every_sample_is_described_in_the_readme():
    """Each committed sample records how it was produced (command, date; machine for measurements)."""
    readme = read_readme(SAMPLES)
    for name in os.listdir(SAMPLES):
        if not name.endswith(OUTPUT_KINDS):
            continue
        assert name in readme, f"{name} has no entry in traces/samples/README.md"
        entry = readme[name]
        # "vpsim ...", or the same under mpirun with environment variables before it, or one of bench/'s
        # scripts (heldout.py runs vpsim model itself against the replays it reads).
        assert re.match(r"^([A-Z0-9_]+=\S+ )*((mpirun( -\S+( \S+)?)* )?vpsim \w|python3 bench/\w+\.py )",
                        entry.get("command", "")), name
        assert re.match(r"\d{4}-\d\d-\d\d", entry.get("date", "")), name
        if name.startswith(("h200-", "bench-", "h200x2-", "heldout-")):
            assert "nvidia-h200" in entry.get("machine", ""), name


def test_sections_and_figures(report):
    out, md, htm = report
    for heading in ("## The answer", "## Scenario", "## Environment of the measurements",
                    "## Where the cycle goes, per backend", "## Allreduce latency against size",
                    "## Sweeps (modelled)", "## Model against measurement",
                    "## Held-out scenarios: model against replay", "## Provenance of the inputs"):
        assert heading in md
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(images) >= 7
    for img in images:
        assert os.path.exists(os.path.join(out, img)), img
        assert os.path.exists(os.path.join(out, img[:-4] + ".svg")), img
        assert f'src="{img}"' in htm
    assert htm.count("<figure>") == len(images)


def test_answer_numbers_come_from_the_samples(report):
    """The first screen's baseline, best change and model checks are the samples' own figures."""
    _, md, _ = report
    answer = md.split("## The answer", 1)[1].split("\n## ", 1)[0]
    doc = read_json(sample("compare-verify-faster.json"))
    base = next(r for r in doc["rows"] if r["baseline"])
    assert f"**{base['tok_per_s']:.1f} tok/s**, cycle {base['cycle_ms']:.2f} ms" in answer
    ranked = sorted((r for r in doc["rows"] if r["available"] and not r["baseline"] and not r["ranked_apart"]),
                    key=lambda r: -r["gain_pct"])
    best = ranked[0]
    assert f"The best change is **{best['variant']}, {best['gain_pct']:+.0f}%** ({best['tok_per_s']:.1f} tok/s)" in answer
    # The baseline agrees with `vpsim model` on the same box (what `make run` prints without a GPU).
    rtx = {b["backend"]: b for b in read_json(sample("model-default-rtx6000.results.json"))["backends"]}
    assert abs(rtx["nccl"]["tok_per_s"] - base["tok_per_s"]) < 0.05
    assert f"nccl {rtx['nccl']['tok_per_s']:.1f} tok/s, cycle {rtx['nccl']['cycle_ms']:.2f} ms, the same." in answer
    held = read_json(sample("heldout-h200.json"))
    cyc = [c["cycle"]["error_pct"] for c in held["cases"]]
    inside = sum(c["within_bounds"] for c in held["cases"])
    assert f"cycle {min(cyc):+.1f}% to {max(cyc):+.1f}%" in answer
    assert f"{inside} of {len(held['cases'])} within" in answer
    assert f"The model has not been checked against a measurement of {doc['system']}" in answer
    # The modelled backends keep their numbers in the evidence (the cycle table below).
    assert f"| nccl | modelled: rtx-pro-6000-8x-pcie | {rtx['nccl']['draft_ms']:.2f} |" in md


def test_every_input_has_provenance(report):
    _, md, _ = report
    prov = md.split("## Provenance of the inputs", 1)[1]
    for name in os.listdir(SAMPLES):
        if name.endswith(OUTPUT_KINDS):
            assert f"- {name}: " in prov, name
    assert "not described in the folder's README.md" not in md
    assert prov.count("MEASURED") >= 6 and prov.count("MODELLED") >= 6


def test_tables_match_the_samples(report):
    _, md, _ = report
    rtx = read_json(sample("model-default-rtx6000.results.json"))
    nccl = [b for b in rtx["backends"] if b["backend"] == "nccl"][0]
    row = [line for line in md.splitlines() if line.startswith("| nccl | modelled: rtx-pro-6000-8x-pcie")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:11] == [f"{nccl[k]:.2f}" for k in ("draft_ms", "verify_gemm_ms", "verify_attention_ms",
                                                      "verify_other_ms", "verify_comm_ms", "host_ms")] + \
        [f"{nccl['cycle_ms']:.2f}", f"{nccl['cycle_ms']:.2f}", f"{nccl['tok_per_s']:.1f}"]
    assert "nccl-symm not available on rtx-pro-6000-8x-pcie" in md


def test_non_vpsim_files_are_skipped(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "trace.json").write_text('{"traceEvents": []}')
    (folder / "plan.csv").write_text("phase,index,name\nverify,0,embedding\n")
    (folder / "m.results.json").write_text(open(sample("model-default-rtx6000.results.json")).read())
    md, _ = make_report.build(str(folder), str(tmp_path / "out"))
    text = open(md, encoding="utf-8").read()
    assert "trace.json: skipped: JSON without a vpsim schema" in text
    assert "plan.csv: skipped: CSV that is not a vpsim sweep" in text
    assert "not described in the folder's README.md" in text


def test_html_escapes_text():
    htm = report_render.to_html([("p", "a <b> & `x<y` **bold**"), ("table", ["h|1"], [["<td>"]])], "t<")
    assert "a &lt;b&gt; &amp; <code>x&lt;y</code> <b>bold</b>" in htm
    assert "<td>&lt;td&gt;</td>" in htm and "<title>t&lt;</title>" in htm
    md = report_render.to_markdown([("table", ["h|1"], [["a|b"]])])
    assert "h\\|1" in md and "a\\|b" in md


def test_a_run_is_compared_with_a_model_of_its_own_conditions(report):
    """The shipped samples hold an 8K and a 32K run of h200-1x and an 8K model: the figure pairs the 8K run
    with it, and nothing is flagged."""
    _, md, _ = report
    assert "**Not like for like:**" not in md


def test_vpsim_warnings_are_listed_with_their_files(tmp_path):
    """A warning a model result carries (here: an eager-measured NCCL table applied to a CUDA-graph
    scenario, as `--set system.measured.allreduce.nccl.launch=eager` gives) is repeated in the report
    with its file."""
    import json
    folder = tmp_path / "r"
    folder.mkdir()
    doc = read_json(sample("model-default-rtx6000.results.json"))
    nccl = [b for b in doc["backends"] if b["backend"] == "nccl"][0]
    text = ("nccl: the measured allreduce table was taken with eager launches (measured.allreduce.nccl.launch) "
            "and is applied to a scenario with a CUDA graph (run.graph=true): per-call costs differ between the two")
    nccl["warnings"] = [{"code": "launch-mismatch", "text": text}]
    (folder / "model-default-rtx6000.results.json").write_text(json.dumps(doc))
    md, _ = make_report.build(str(folder), str(tmp_path / "out"))
    out = open(md, encoding="utf-8").read()
    assert f"`launch-mismatch`: {text} (model-default-rtx6000.results.json)" in out


def test_mismatched_conditions_are_flagged(tmp_path):
    """A 32K-context run with only an 8K-context model: the report says so beside the figure."""
    folder = tmp_path / "r"
    folder.mkdir()
    for name in ("h200-none-ctx32k.results.json", "model-default-h200-none-ops.results.json"):
        (folder / name).write_text(open(sample(name)).read())
    md, _ = make_report.build(str(folder), str(tmp_path / "out"))
    text = open(md, encoding="utf-8").read()
    assert "**Not like for like:**" in text
    assert "context 32768 (run) vs 8192 (model)" in text


def test_condition_mismatch_names_each_difference():
    import vpsim_extract as ex
    run = {"tp": 8, "batch": 1, "context": 32768, "graph": True, "model": "Kimi-K2.5"}
    assert ex.condition_mismatch(run, dict(run)) == []
    other = dict(run, context=8192, graph=False)
    assert ex.condition_mismatch(run, other) == ["context 32768 (run) vs 8192 (model)",
                                                 "graph True (run) vs False (model)"]


def test_ranking_section(report):
    # The compare sample: a bar per row in the sample's order (best first), the baseline's gain "base",
    # and the rows that do not fit listed with their memory.
    out, md, _ = report
    doc = read_json(sample("compare-verify-faster.json"))
    assert "## Ranking of the variants (modelled)" in md
    assert os.path.exists(os.path.join(out, "figures", "ranking-compare-verify-faster.png"))
    section = md.split("## Ranking of the variants (modelled)")[1].split("\n## ")[0]
    order = [("~ " if r.get("ranked_apart") else "") + r["variant"] for r in doc["rows"]]
    positions = [section.index(f"| {v} |") for v in order]
    assert positions == sorted(positions)
    base = next(r for r in doc["rows"] if r["baseline"])
    assert f"| {base['variant']} | {base['backend']} | {base['cycle_ms']:.2f} | {base['tok_per_s']:.1f} | base |" in section
    apart = [r for r in doc["rows"] if r.get("ranked_apart")]
    assert apart, "the shipped plan has NCCL tuning rows, whose measured figure does not apply"
    apart_text = section.split("**Ranked apart**", 1)[1].split("\n", 1)[0]
    # Each named with its backend, once ("split (nccl)" is not repeated as "split (nccl) (nccl)").
    for r in apart:
        label = r["variant"] if f"({r['backend']})" in r["variant"] else f"{r['variant']} ({r['backend']})"
        assert label in apart_text and f"{label} ({r['backend']})" not in apart_text
    for r in doc["rows"]:
        if r["fits"] is False:
            assert f"no: needs {r['memory_gib']:.1f} of {r['memory_capacity_gib']:.1f} GiB" in section


def test_ranking_rejects_a_bad_document(tmp_path):
    from vpsim_inputs import InputError, load_ranking
    p = tmp_path / "c.json"
    p.write_text('{"schema": "vpsim.compare/1", "rows": [{"variant": "a", "backend": "nccl", "available": true, '
                 '"baseline": true, "tok_per_s": null}]}')
    with pytest.raises(InputError, match="tok_per_s"):
        load_ranking(str(p))

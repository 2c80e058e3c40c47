"""Malformed inputs are rejected with a message naming the file and the problem, and the scripts exit 2."""

import os
import subprocess
import sys

import pytest

from conftest import ANALYSIS, DATA, read_json, rejects, sample
from vpsim_inputs import load_bench, load_plan, load_results, load_sweep

PY = sys.executable
RTX = sample("model-default-rtx6000.results.json")
RUN = sample("h200-none-graph.results.json")
BENCH = sample("bench-allreduce-h200-np1.json")
# Every point of the context sweep is modelled (in sweep-tp.csv TP 1, 2 and 4 do not fit the GPU's
# memory: rows with available=false), so its rows 2 and 3 have numbers to break.
SWEEP = sample("sweep-context.csv")




# ---------------------------------------------------------------- results JSON

def test_samples_load():
    for name in sorted(os.listdir(os.path.dirname(RTX))):
        if name.endswith(".results.json"):
            load_results(sample(name))
    load_bench(BENCH)
    load_bench(os.path.join(DATA, "bench-h200-np2-virtual.json"))
    load_sweep(SWEEP)
    load_plan(sample("default.plan.json"))


def test_results_wrong_schema(write_json):
    doc = read_json(RTX)
    doc["schema"] = "vpsim.results/0"
    rejects(load_results, write_json(doc), "schema is \"vpsim.results/0\"", "vpsim.results/1")


def test_results_not_results_schema(write_json):
    rejects(load_results, write_json(read_json(BENCH)), "vpsim.bench_allreduce/1")


def test_results_missing_top_key(write_json):
    doc = read_json(RTX)
    del doc["backends"]
    rejects(load_results, write_json(doc), "missing key 'backends'")


def test_results_missing_backend_key(write_json):
    doc = read_json(RTX)
    del doc["backends"][0]["cycle_ms"]
    rejects(load_results, write_json(doc), "backends[0] (nccl)", "missing key 'cycle_ms'")


@pytest.mark.parametrize("bad", ["12.5", None, True, [1], "nan"])
def test_results_non_numeric(write_json, bad):
    doc = read_json(RTX)
    doc["backends"][2]["verify_comm_ms"] = bad
    rejects(load_results, write_json(doc), "backends[2] (oneshot)", "'verify_comm_ms' must be a finite number")


def test_results_unavailable_backend_needs_no_numbers(write_json):
    doc = read_json(RTX)
    assert doc["backends"][1]["available"] is False and doc["backends"][1]["cycle_ms"] is None
    load_results(write_json(doc))


def test_results_bad_phase(write_json):
    doc = read_json(RTX)
    doc["backends"][0]["phases"][1]["comm_ms"] = "x"
    rejects(load_results, write_json(doc), "phases[1]", "'comm_ms'")


def test_results_bad_op(write_json):
    doc = read_json(RUN)
    doc["backends"][0]["ops"][5]["us"] = "fast"
    rejects(load_results, write_json(doc), "ops[5]", "'us' must be a finite number")


# What the field checks above leave to the record's JSON Schema (docs/schemas/, emitted by vpsim from the
# table its reader uses): a key vpsim has no place for, a range, a key only another mode carries.

def test_results_unknown_key_is_refused_by_the_schema(write_json):
    doc = read_json(RTX)
    doc["backends"][0]["speedup"] = 2
    rejects(load_results, write_json(doc), "backends[0]", "'speedup' was unexpected", "docs/schemas/results.schema.json")


def test_results_block_of_another_mode_is_refused(write_json):
    doc = read_json(RTX)
    doc["measured"] = read_json(RUN)["measured"]
    rejects(load_results, write_json(doc), "measured: no record of this kind carries it", "docs/schemas/results.schema.json")


def test_bench_out_of_range_is_refused_by_the_schema(write_json):
    doc = read_json(BENCH)
    doc["elem_bytes"] = 0
    rejects(load_bench, write_json(doc), "elem_bytes", "docs/schemas/bench.schema.json")


def test_plan_unknown_op_key_is_refused_by_the_schema(write_json):
    doc = read_json(sample("default.plan.json"))
    doc["phases"][0]["ops"][0]["bogus"] = 1
    rejects(load_plan, write_json(doc), "phases[0].ops[0]", "docs/schemas/plan.schema.json")


def test_run_needs_measured(write_json):
    doc = read_json(RUN)
    del doc["measured"]
    rejects(load_results, write_json(doc), "missing key 'measured'")


def test_run_bad_comparison(write_json):
    doc = read_json(RUN)
    doc["model_comparison"]["verify"]["gemm"]["error_pct"] = "big"
    rejects(load_results, write_json(doc), "model_comparison.verify.gemm", "'error_pct'")


def test_bad_mode(write_json):
    doc = read_json(RTX)
    doc["mode"] = "guess"
    rejects(load_results, write_json(doc), "'mode' must be")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text("  \n")
    rejects(load_results, str(p), "empty file")


def test_invalid_json(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"schema": "vpsim.results/1",\n "backends": [}')
    rejects(load_results, str(p), "invalid JSON at line 2")


def test_top_level_not_object(write_json):
    rejects(load_results, write_json([1, 2]), "expected a JSON object")


def test_missing_file(tmp_path):
    rejects(load_results, str(tmp_path / "nope.json"), "no such file")


def test_binary_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    rejects(load_results, str(p), "not UTF-8")


# ---------------------------------------------------------------- sweep CSV

def _csv(tmp_path, text):
    p = tmp_path / "s.csv"
    p.write_text(text)
    return str(p)


def _sweep_text():
    with open(SWEEP, encoding="utf-8") as f:
        return f.read()


def test_sweep_non_numeric(tmp_path):
    lines = _sweep_text().splitlines()
    fields = lines[3].split(",")
    fields[lines[0].split(",").index("tok_per_s")] = "lots"
    lines[3] = ",".join(fields)
    rejects(load_sweep, _csv(tmp_path, "\n".join(lines)), "line 4", "'tok_per_s' is not a number")


def test_sweep_missing_column(tmp_path):
    lines = _sweep_text().splitlines()
    lines[0] = lines[0].replace(",tok_per_s", "")
    rejects(load_sweep, _csv(tmp_path, "\n".join(lines)), "missing tok_per_s")


def test_sweep_not_a_sweep(tmp_path):
    rejects(load_sweep, _csv(tmp_path, "phase,index,name\nverify,0,embedding\n"), "no 'backend' column")


def test_sweep_short_row(tmp_path):
    lines = _sweep_text().splitlines()
    lines[2] = ",".join(lines[2].split(",")[:5])
    rejects(load_sweep, _csv(tmp_path, "\n".join(lines)), "line 3", "fields")


def test_sweep_bad_available(tmp_path):
    lines = _sweep_text().splitlines()
    lines[2] = lines[2].replace(",true,", ",yes,", 1)
    rejects(load_sweep, _csv(tmp_path, "\n".join(lines)), "line 3", "'available' must be true or false")


def test_sweep_with_serving_columns(tmp_path):
    # The columns vpsim writes after tok_per_s since the serving figures: numbers, an empty baseline,
    # engine texts and a quoted warning with a comma in it.
    head = _sweep_text().splitlines()[0].split(",tpot_ms")[0] + \
        ",tpot_ms,accepted_per_cycle,engine_vllm,engine_sglang,nospec_tok_per_s,warnings"
    n_varied = head.split(",").index("backend")
    row = ",".join(["8"] * n_varied) + (",nccl,true,,200,measured table,31,24,5,0.4,0.7,1.8,0.6,0.8,33.8,2.2,65.1,"
                                         "15.4,1.2,yes,yes,,\"launch-mismatch: nccl: eager, not graph\"")
    sw = load_sweep(_csv(tmp_path, head + "\n" + row + "\n"))
    r = sw["rows"][0]
    assert r["tpot_ms"] == 15.4 and r["accepted_per_cycle"] == 1.2
    assert r["nospec_tok_per_s"] is None
    assert r["engine_vllm"] == "yes"
    assert r["warnings"] == "launch-mismatch: nccl: eager, not graph"
    assert "fits" not in r  # a file from before the memory columns


def test_sweep_tp_points_that_do_not_fit():
    # Kimi-K2.5 at TP 1, 2 and 4 needs more than the 95.6 GiB of an RTX PRO 6000 per rank (INT4 experts:
    # ~1T parameters x 0.5 B / TP alone is ~130 GB at TP=4): unavailable, with the memory figures.
    rows = load_sweep(sample("sweep-tp.csv"))["rows"]
    for r in rows:
        tp = int(r["params"]["parallel.tp"])
        assert r["available"] == (tp == 8) and r["fits"] == (tp == 8), (tp, r["backend"])
        if tp < 8:
            assert r["reason"].startswith("does not fit: needs ") and r["mem_gib"] > r["mem_capacity_gib"]


def test_sweep_with_memory_columns(tmp_path):
    # The memory columns: read on an unavailable row too (a point that does not fit says by how much).
    head = _sweep_text().splitlines()[0].split(",tpot_ms")[0] + \
        ",tpot_ms,accepted_per_cycle,engine_vllm,engine_sglang,nospec_tok_per_s,warnings,mem_gib,mem_capacity_gib,fits"
    n_varied = head.split(",").index("backend")
    ok = ",".join(["8"] * n_varied) + (",nccl,true,,200,measured table,31,24,5,0.4,0.7,1.8,0.6,0.8,33.8,2.2,65.1,"
                                        "15.4,1.2,yes,yes,,,75.1,95.6,true")
    no = ",".join(["1"] * n_varied) + (",nccl,false,does not fit: needs 559.4 GiB of 95.6,,,,,,,,,,,,2.2,,"
                                        ",1.2,,,,,559.4,95.6,false")
    sw = load_sweep(_csv(tmp_path, head + "\n" + ok + "\n" + no + "\n"))
    a, b = sw["rows"]
    assert a["fits"] is True and a["mem_gib"] == 75.1 and a["mem_capacity_gib"] == 95.6
    assert b["fits"] is False and b["mem_gib"] == 559.4 and not b["available"]
    bad = no.rsplit(",", 1)[0] + ",maybe"
    rejects(load_sweep, _csv(tmp_path, head + "\n" + bad + "\n"), "line 2", "'fits' must be true, false or empty")


def test_sweep_unknown_extra_column(tmp_path):
    lines = _sweep_text().splitlines()
    lines[0] += ",mystery"
    lines[1:] = [line + ",1" for line in lines[1:]]
    rejects(load_sweep, _csv(tmp_path, "\n".join(lines)), "extra columns")


def test_sweep_header_only(tmp_path):
    rejects(load_sweep, _csv(tmp_path, _sweep_text().splitlines()[0] + "\n"), "no data rows")


def test_sweep_empty(tmp_path):
    rejects(load_sweep, _csv(tmp_path, ""), "empty file")


# ---------------------------------------------------------------- bench and plan

def test_bench_wrong_schema(write_json):
    doc = read_json(BENCH)
    doc["schema"] = "nccl-tests"
    rejects(load_bench, write_json(doc), "schema is \"nccl-tests\"")


def test_bench_missing_rows(write_json):
    doc = read_json(BENCH)
    del doc["backends"][0]["rows"]
    rejects(load_bench, write_json(doc), "backends[0] (nccl)", "missing key 'rows'")


def test_bench_non_numeric_time(write_json):
    doc = read_json(BENCH)
    doc["backends"][1]["rows"][3]["time_us"] = "1.5us"
    rejects(load_bench, write_json(doc), "backends[1] (nccl-symm).rows[3]", "'time_us'")


def test_bench_negative_time(write_json):
    doc = read_json(BENCH)
    doc["backends"][0]["rows"][0]["time_us"] = -1
    rejects(load_bench, write_json(doc), "must be positive")


def test_bench_nccl_tests_names_accepted(write_json):
    """The nccl-tests column names (size, time, algbw, busbw, #wrong) read like the vpsim ones."""
    doc = read_json(BENCH)
    for b in doc["backends"]:
        b["backend"] = b.pop("name")
        b["rows"] = [{"size": r["bytes"], "count": r["count"], "time": r["time_us"], "algbw": r["algbw_gbps"],
                      "busbw": r["busbw_gbps"], "#wrong": r["wrong"]} for r in b["rows"]]
    got = load_bench(write_json(doc))
    ref = load_bench(BENCH)
    assert [r["time_us"] for r in got["backends"][2]["rows"]] == [r["time_us"] for r in ref["backends"][2]["rows"]]
    assert [r["bytes"] for r in got["backends"][0]["rows"]] == [r["bytes"] for r in ref["backends"][0]["rows"]]


def test_plan_missing_summary(write_json):
    doc = read_json(sample("default.plan.json"))
    del doc["phases"][1]["summary"]
    rejects(load_plan, write_json(doc), "phases[1]", "missing key 'summary'")


# ---------------------------------------------------------------- the scripts: message and exit status

def run(script, *args, cwd=None):
    return subprocess.run([PY, os.path.join(ANALYSIS, script), *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("script", ["vpsim_plot.py", "make_report.py"])
def test_help(script):
    r = run(script, "--help")
    assert r.returncode == 0 and "usage" in r.stdout


def test_plot_cli_rejects_with_exit_2(write_json, tmp_path):
    doc = read_json(RTX)
    doc["backends"][0]["verify_ms"] = "slow"
    bad = write_json(doc)
    r = run("vpsim_plot.py", "breakdown", bad, "--out", str(tmp_path / "x"))
    assert r.returncode == 2
    assert r.stderr.startswith(f"vpsim_plot: error: {bad}: backends[0] (nccl): 'verify_ms' must be a finite number")
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("sub,args", [("allreduce", []), ("sweep", []), ("compare", [])])
def test_plot_cli_empty_file(tmp_path, sub, args):
    empty = tmp_path / ("e.csv" if sub == "sweep" else "e.json")
    empty.write_text("")
    r = run("vpsim_plot.py", sub, str(empty), *args, "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "empty file" in r.stderr and "Traceback" not in r.stderr


def test_plot_cli_compare_needs_a_run(tmp_path):
    r = run("vpsim_plot.py", "compare", RTX, "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "needs a measured run" in r.stderr


def test_report_rejects_malformed_member(tmp_path, write_json):
    folder = tmp_path / "results"
    folder.mkdir()
    doc = read_json(RTX)
    del doc["backends"][0]["tok_per_s"]
    (folder / "m.results.json").write_text(__import__("json").dumps(doc))
    r = run("make_report.py", str(folder), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "m.results.json: backends[0] (nccl): missing key 'tok_per_s'" in r.stderr
    assert "Traceback" not in r.stderr


def test_report_rejects_empty_csv(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "s.csv").write_text("")
    r = run("make_report.py", str(folder), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "s.csv: empty file" in r.stderr


def test_report_empty_folder(tmp_path):
    r = run("make_report.py", str(tmp_path), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "no vpsim outputs" in r.stderr


def test_report_missing_folder(tmp_path):
    r = run("make_report.py", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "no such folder" in r.stderr

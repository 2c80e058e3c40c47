"""docs/schemas/results.schema.json describes every results record vpsim writes (`model --format json`,
`run --out`, `import-trace --breakdown`, the shipped samples), and on hand edits the JSON Schema and
vpsim's reader (`vpsim calibrate --results`, which binds the whole record before its plan checks) give
the same verdict: one table (sim/results/results_json.c) writes, reads and describes the record."""
import copy
import json
import os
import tempfile

import pytest

from schema_helpers import REPO, assert_agree, errors, samples, validator, vpsim, vpsim_json

TAG = "vpsim.results/1"
DEFAULT = os.path.join(REPO, "configs", "default.yaml")
TINY = os.path.join(REPO, "configs", "tiny.yaml")
H200 = os.path.join(REPO, "configs", "systems", "h200-1x.yaml")
RUN = os.path.join(REPO, "traces", "samples", "h200-none-graph.results.json")


@pytest.fixture(scope="module")
def v():
    return validator("results")


@pytest.mark.parametrize("args", [
    (), ("--set", "parallel.ep=8"), ("--set", "collectives.allreduce_split=true"),
    ("--set", "fusion.allreduce_residual_norm=true"), ("--set", "overlap.two_batch=true", "--set", "workload.batch=4"),
    ("--set", "speculative.algorithm=none"), ("--set", "parallel.tp=2"),  # unavailable rows: does not fit
    ("--system", H200, "--ops"), ("--system", H200, "--ops", "--set", "parallel.ep=8"),
], ids=lambda a: " ".join(a) or "default")
def test_every_model_record_is_valid(v, args):
    doc = vpsim_json("model", DEFAULT, "--format", "json", *args)
    assert doc["schema"] == TAG and errors(v, doc) == []


@pytest.mark.parametrize("args", [("--backend", "none"), ("--backend", "none", "--class-cost"),
                                  ("--backend", "mpi", "--check"), ("--backend", "mpi", "--set", "parallel.ep=2")],
                         ids=lambda a: " ".join(a))
def test_a_cpu_run_is_valid(v, args, tmp_path):
    out = str(tmp_path / "run.json")
    r = vpsim("run", TINY, "--device", "cpu", "--iters", "1", "--warmup", "0", "--instrumented", "1", *args, "--out", out)
    assert r.returncode == 0, r.stderr
    with open(out) as fh:
        doc = json.load(fh)
    assert doc["mode"] == "run" and errors(v, doc) == []


def test_an_import_is_valid(v, tmp_path):
    out = str(tmp_path / "imp.results.json")
    r = vpsim("import-trace", os.path.join(REPO, "traces", "samples", "fixture-h200-graph.json.gz"), "--system", H200,
              "--kernels", os.path.join(REPO, "traces", "samples", "trace-fixture-kernels.yaml"), "--out",
              str(tmp_path / "box.yaml"), "--breakdown", out)
    assert r.returncode == 0, r.stderr
    with open(out) as fh:
        doc = json.load(fh)
    assert doc["mode"] == "import-trace" and errors(v, doc) == []


def test_the_shipped_records_are_valid(v):
    found = samples(TAG)
    assert len(found) > 20  # measured runs of older binaries, modelled samples, imports
    for path in found:
        with open(path) as fh:
            assert errors(v, json.load(fh)) == [], path


# ---------------------------------------------------------------- hand edits: schema and reader agree

def drop(key):
    def edit(d):
        del d["backends"][0][key]
    edit.__name__ = f"missing_{key}"
    return edit


def edit_unknown_row_key(d):
    d["backends"][0]["speedup"] = 2


def edit_unknown_top_key(d):
    d["comment"] = "hand edited"


def edit_tp_as_text(d):
    d["tp"] = "8"


def edit_figure_as_text(d):
    d["backends"][0]["cycle_ms"] = "7.1"


def edit_null_name(d):
    d["backends"][0]["backend"] = None


def edit_bad_phase_kind(d):
    d["backends"][0]["phases"][0]["kind"] = "prefill"


def edit_negative_op_time(d):
    d["backends"][0]["ops"][3]["us"] = -1


def edit_block_of_another_mode(d):
    d["import"] = {"source": "sglang"}


def edit_missing_block(d):
    del d["measured"]


def edit_unknown_measured_key(d):
    d["measured"]["cycle_mean_ms"] = 1.0


def edit_bad_environment(d):
    d["environment"]["gpu"] = 7


def edit_provenance(d):  # accepted by both
    d["provenance"] = "measured by hand"


def edit_figure(d):  # accepted by both
    d["backends"][0]["host_ms"] = 0.5


EDITS = [(drop("cycle_ms"), False), (drop("available"), False), (edit_unknown_row_key, False),
         (edit_unknown_top_key, False), (edit_tp_as_text, False), (edit_figure_as_text, False), (edit_null_name, False),
         (edit_bad_phase_kind, False), (edit_negative_op_time, False), (edit_block_of_another_mode, False),
         (edit_missing_block, False), (edit_unknown_measured_key, False), (edit_bad_environment, False),
         (edit_provenance, True), (edit_figure, True)]


@pytest.mark.parametrize("edit,valid", EDITS, ids=[e.__name__ for e, _ in EDITS])
def test_the_schema_and_the_reader_agree_on_an_edit(v, edit, valid):
    with open(RUN) as fh:
        doc = json.load(fh)
    edit(doc)
    assert_agree(v, doc, valid, "calibrate", DEFAULT, "--system", H200, "--ops", "gemm", "--results", "FILE")

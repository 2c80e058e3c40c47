"""docs/schemas/bench.schema.json describes every bench-allreduce record vpsim writes (`bench-allreduce
--format json`, with and without the model, and again from a saved one with --from; the shipped samples),
and on hand edits the JSON Schema and vpsim's reader (`bench-allreduce --from`) give the same verdict:
one table (sim/exec/exec_bench_json.c) writes, reads and describes the record."""
import json
import os

import pytest

from schema_helpers import REPO, assert_agree, errors, samples, validator, vpsim_json

TAG = "vpsim.bench_allreduce/1"
NVLINK = os.path.join(REPO, "configs", "systems", "h200-2x-nvlink.yaml")
CPU = ("bench-allreduce", "--device", "cpu", "--backend", "mpi", "--sizes", "16,4096", "-n", "1", "-w", "0", "--format",
       "json")


@pytest.fixture(scope="module")
def v():
    return validator("bench")


@pytest.mark.parametrize("args", [(), ("--check",), ("--collective", "reduce_scatter"), ("--collective", "allgather"),
                                  ("--model", "--system", NVLINK)], ids=lambda a: " ".join(a) or "plain")
def test_a_cpu_measurement_is_valid(v, args):
    doc = vpsim_json(*CPU, *args)
    assert doc["schema"] == TAG and errors(v, doc) == []


def test_the_shipped_records_are_valid_and_read_back(v):
    found = samples(TAG)
    assert len(found) >= 8
    for path in found:
        with open(path) as fh:
            assert errors(v, json.load(fh)) == [], path
        again = vpsim_json("bench-allreduce", "--from", path, "--system", NVLINK, "--format", "json")
        assert errors(v, again) == [], path
        assert again["model"]["system"] and "compare_command" in again


# ---------------------------------------------------------------- hand edits: schema and reader agree

def edit_unknown_row_key(b):
    b["backends"][0]["rows"][0]["latency"] = 1


def edit_missing_time(b):
    del b["backends"][0]["rows"][0]["time_us"]


def edit_ranks_as_text(b):
    b["ranks"] = "two"


def edit_bad_device(b):
    b["device"] = "tpu"


def edit_bad_backend(b):
    b["backends"][0]["name"] = "bogus"


def edit_policy_backend(b):  # accepted by both: a per-size policy's rows
    b["backends"][0]["name"] = "policy(mpi)"


def edit_huge_time(b):
    b["backends"][0]["rows"][0]["time_us"] = 1e308


def edit_not_a_collective(b):
    b["collective"] = "gemm"


def edit_unknown_model_key(b):  # the comparison is recomputed, but checked as the schema says
    b["model"]["extra"] = 1


def edit_model_as_text(b):
    b["backends"][0]["rows"][0]["model_us"] = "fast"


def edit_environment(b):  # accepted by both
    b["environment"]["note"] = "edited"


def edit_wrong_unchecked(b):  # accepted by both
    b["backends"][0]["rows"][0]["wrong"] = None


EDITS = [(edit_unknown_row_key, False), (edit_missing_time, False), (edit_ranks_as_text, False),
         (edit_bad_device, False), (edit_bad_backend, False), (edit_huge_time, False), (edit_not_a_collective, False),
         (edit_unknown_model_key, False), (edit_model_as_text, False), (edit_policy_backend, True),
         (edit_environment, True), (edit_wrong_unchecked, True)]


@pytest.mark.parametrize("edit,valid", EDITS, ids=[e.__name__ for e, _ in EDITS])
def test_the_schema_and_the_reader_agree_on_an_edit(v, edit, valid):
    doc = vpsim_json(*CPU, "--check", "--model", "--system", NVLINK)
    edit(doc)
    assert_agree(v, doc, valid, "bench-allreduce", "--from", "FILE", "--system", NVLINK)

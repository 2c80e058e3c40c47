"""docs/schemas/*.schema.json describe what vpsim writes and reads: every plan vpsim writes validates, and
on hand edits the JSON Schema and vpsim's own loader (`vpsim plan --plan`) give the same verdict, because
one table (sim/plan/plan_json.c) makes the writer, the reader and the schema."""
import copy
import json
import os
import subprocess
import tempfile

import jsonschema
import pytest

from scripts_paths import BIN, REPO

SCHEMA = os.path.join(REPO, "docs", "schemas", "plan.schema.json")


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA) as fh:
        schema = json.load(fh)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def plan_json(*sets):
    args = [BIN, "plan", os.path.join(REPO, "configs", "default.yaml"), "--format", "json"]
    for s in sets:
        args += ["--set", s]
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


@pytest.mark.parametrize("sets", [(), ("parallel.ep=8",), ("collectives.allreduce_split=true",),
                                  ("fusion.allreduce_residual_norm=true",), ("overlap.two_batch=true", "workload.batch=4"),
                                  ("speculative.algorithm=none",)])
def test_every_plan_vpsim_writes_is_valid(validator, sets):
    errors = [e.message for e in validator.iter_errors(plan_json(*sets))]
    assert errors == [], errors[:3]


def test_the_shipped_sample_plan_is_valid(validator):
    with open(os.path.join(REPO, "traces", "samples", "default.plan.json")) as fh:
        assert [e.message for e in validator.iter_errors(json.load(fh))] == []


def first_op(plan, kind):
    return next(op for ph in plan["phases"] for op in ph["ops"] if op["kind"] == kind)


def edit_unknown_key(p):
    first_op(p, "gemm")["bogus"] = 1


def edit_other_kinds_field(p):
    first_op(p, "gemm")["heads"] = 4


def edit_zero_width(p):
    first_op(p, "gemm")["n"] = 0


def edit_bad_enum(p):
    first_op(p, "attention")["stream"] = "sidecar"


def edit_missing_name(p):
    del first_op(p, "allreduce")["name"]


def edit_out_of_range(p):
    p["ranks"] = 0


def edit_wrong_tag(p):
    p["schema"] = "vpsim.plan/9"


def edit_layer(p):  # accepted by both
    first_op(p, "gemm")["layer"] = 3


EDITS = [(edit_unknown_key, False), (edit_other_kinds_field, False), (edit_zero_width, False), (edit_bad_enum, False),
         (edit_missing_name, False), (edit_out_of_range, False), (edit_wrong_tag, False), (edit_layer, True)]


@pytest.mark.parametrize("edit,valid", EDITS, ids=[e.__name__ for e, _ in EDITS])
def test_the_schema_and_the_loader_agree_on_an_edit(validator, edit, valid):
    p = copy.deepcopy(plan_json("speculative.algorithm=none"))
    edit(p)
    schema_ok = not list(validator.iter_errors(p))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(p, fh)
    try:
        r = subprocess.run([BIN, "plan", "--plan", fh.name], capture_output=True, text=True)
    finally:
        os.unlink(fh.name)
    assert schema_ok == valid, f"schema said {schema_ok}"
    assert (r.returncode == 0) == valid, r.stderr
    if not valid:
        assert r.returncode == 2 and fh.name in r.stderr, r.stderr

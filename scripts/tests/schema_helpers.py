"""Shared by the schema tests (test_schemas*.py): the validator of a record's emitted JSON Schema, vpsim's
output as JSON, and one hand edit judged by both the JSON Schema and vpsim's own loader."""
import json
import os
import re
import subprocess
import tempfile

import jsonschema

from scripts_paths import BIN, REPO

SCHEMAS = os.path.join(REPO, "docs", "schemas")
SAMPLES = os.path.join(REPO, "traces", "samples")


def validator(record):
    with open(os.path.join(SCHEMAS, f"{record}.schema.json")) as fh:
        schema = json.load(fh)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(v, doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in v.iter_errors(doc)]


def vpsim(*args, cwd=REPO):
    return subprocess.run([BIN, *args], capture_output=True, text=True, cwd=cwd)


def vpsim_json(*args):
    r = vpsim(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def samples(tag):
    """Every JSON document of traces/samples (and analysis/tests/data) whose "schema" is `tag`."""
    out = []
    for folder in (SAMPLES, os.path.join(REPO, "analysis", "tests", "data")):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name)) as fh:
                    doc = json.load(fh)
                if isinstance(doc, dict) and doc.get("schema") == tag:
                    out.append(os.path.join(folder, name))
    return out


def judge(v, doc, *loader):
    """(the schema's verdict, the loader's result) on `doc`, written to a file the loader reads: `loader` is
    vpsim's arguments with FILE standing for it."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(doc, fh, indent=1)
    try:
        r = vpsim(*[fh.name if a == "FILE" else a for a in loader])
    finally:
        os.unlink(fh.name)
    return not errors(v, doc), r, fh.name


def assert_agree(v, doc, valid, *loader):
    schema_ok, r, path = judge(v, doc, *loader)
    assert schema_ok == valid, f"the schema said {schema_ok}: {errors(v, doc)[:2]}"
    assert (r.returncode == 0) == valid, r.stderr
    if not valid:  # refused with exit 2 and the file:line:col of the value
        assert r.returncode == 2, r.stderr
        assert re.search(re.escape(path) + r":\d+:\d+: ", r.stderr), r.stderr
    return r

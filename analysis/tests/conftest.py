"""Shared paths and helpers for the analysis tests (run: /usr/bin/python3 -m pytest -q analysis/tests)."""

import copy
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
REPO = os.path.dirname(ANALYSIS)
SAMPLES = os.path.join(REPO, "traces", "samples")
DATA = os.path.join(HERE, "data")
sys.path.insert(0, ANALYSIS)


def sample(name):
    return os.path.join(SAMPLES, name)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def samples_report(tmp_path_factory):
    """(folder, report.md path, report.html path) of `make report` on traces/samples, built once: drawing its
    figures takes ~5 s, and test_answer, test_heldout, test_import_section and test_report each read it."""
    import make_report
    out = tmp_path_factory.mktemp("samples-report")
    md, htm = make_report.build(SAMPLES, str(out))
    return out, md, htm


@pytest.fixture
def write_json(tmp_path):
    """write_json(doc, name) -> path of a JSON file holding doc (deep-copied, so tests can mutate freely)."""

    def _write(doc, name="input.json"):
        path = tmp_path / name
        path.write_text(json.dumps(copy.deepcopy(doc)))
        return str(path)

    return _write


def rejects(loader, path, *fragments):
    """loader(path) raises InputError whose message starts with the path and holds every fragment."""
    from vpsim_inputs import InputError
    with pytest.raises(InputError) as e:
        loader(path)
    msg = str(e.value)
    assert msg.startswith(str(path)), msg
    for frag in fragments:
        assert frag in msg, msg
    return msg

"""The report's section on an imported server trace (`vpsim import-trace --breakdown`, mode import-trace):
the loader's checks, and the committed pair (traces/samples/import-fixture-h200-graph.results.json and
the model of the system file it wrote) drawn side by side with the figures of the two files."""
import copy
import json
import os

import pytest

import vpsim_extract as ex
import conftest
from conftest import SAMPLES, read_json, sample
from vpsim_inputs import load_results

IMPORT = sample("import-fixture-h200-graph.results.json")
MODEL = sample("model-import-fixture-h200-graph.results.json")
SECTION = "## A server trace, imported, beside the model of it"


def test_an_import_document_loads_and_needs_its_import_block(tmp_path):
    doc = load_results(IMPORT)
    assert doc["mode"] == "import-trace" and doc["import"]["cycles"] == 4
    bad = copy.deepcopy(read_json(IMPORT))
    del bad["import"]["named_fraction"]
    path = tmp_path / "bad.results.json"
    path.write_text(json.dumps(bad))
    conftest.rejects(load_results, str(path), "named_fraction", "import")
    worse = copy.deepcopy(read_json(IMPORT))
    worse["mode"] = "guess"
    path.write_text(json.dumps(worse))
    conftest.rejects(load_results, str(path), "import-trace")


def test_the_bars_are_the_two_files_figures():
    imp, mod = read_json(IMPORT), read_json(MODEL)
    bars = ex.breakdown_bars([(IMPORT, imp), (MODEL, mod)])
    assert [b["group"].split(":")[0] for b in bars] == ["imported server trace", "modelled"]
    assert bars[0]["cycle_ms"] == pytest.approx(imp["backends"][0]["cycle_ms"])
    assert bars[1]["cycle_ms"] == pytest.approx(mod["backends"][0]["cycle_ms"])
    assert bars[0]["segments"]["verify attention"] == pytest.approx(imp["backends"][0]["verify_attention_ms"])
    assert abs(bars[1]["cycle_ms"] / bars[0]["cycle_ms"] - 1) < 0.05  # the import's own round trip


def test_the_section_draws_them_side_by_side(samples_report):
    assert os.path.dirname(IMPORT) == SAMPLES  # the import's section is in the samples' report
    out, md, _ = samples_report
    text = open(md, encoding="utf-8").read()
    assert SECTION in text
    part = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    imp = read_json(IMPORT)["import"]
    assert f"The trace's cycle is {imp['cycle_ms']:.3f} ms" in part
    assert f"gives {imp['model_check']['model_cycle_ms']:.3f} ms" in part
    assert "(figures/import-fixture-h200-graph.png)" in part
    for ext in ("png", "svg"):
        assert os.path.getsize(os.path.join(str(out), "figures", f"import-fixture-h200-graph.{ext}")) > 1000
    assert "| segment | imported ms | modelled ms | model - import |" in part

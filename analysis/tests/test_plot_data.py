"""The numbers behind each figure equal the input files' numbers (read here independently of the readers)."""

import csv
import os

import pytest

import vpsim_draw as draw
import vpsim_extract as ex
from conftest import DATA, read_json, sample
from vpsim_inputs import InputError, load_bench, load_plan, load_results, load_sweep

RTX = sample("model-default-rtx6000.results.json")
H200_MODEL = sample("model-default-h200-none.results.json")
H200_OPS = sample("model-default-h200-none-ops.results.json")
RUN_NONE = sample("h200-none-graph.results.json")
RUN_NCCL = sample("h200-model-nccl.results.json")
RUN_OLD = sample("h200-none-ctx32k.results.json")
BENCH = sample("bench-allreduce-h200-np1.json")
VIRTUAL = os.path.join(DATA, "bench-h200-np2-virtual.json")
PLAN = sample("default.plan.json")


def results(path):
    doc = load_results(path)
    doc["_path"] = path
    return doc


# ---------------------------------------------------------------- stacked bars

def test_breakdown_modelled_matches_json():
    raw = read_json(RTX)
    bars = ex.breakdown_bars([(RTX, results(RTX))])
    avail = [b for b in raw["backends"] if b["available"]]
    assert [b["label"] for b in bars] == [b["backend"] for b in avail]  # nccl-symm (unavailable) is not drawn
    for bar, b in zip(bars, avail):
        s = bar["segments"]
        assert s["draft"] == b["draft_ms"]
        assert s["verify GEMM"] == b["verify_gemm_ms"]
        assert s["verify attention"] == b["verify_attention_ms"]
        assert s["verify other compute"] == b["verify_other_ms"]
        assert s["verify communication"] == b["verify_comm_ms"]
        assert s["host"] == b["host_ms"]
        assert bar["cycle_ms"] == b["cycle_ms"] and bar["tok_per_s"] == b["tok_per_s"]
        # A modelled stack is the cycle: the file writes 6 significant digits, so allow that rounding.
        assert sum(s.values()) == pytest.approx(b["cycle_ms"], rel=1e-5)
        assert not bar["measured"] and bar["group"] == "modelled: rtx-pro-6000-8x-pcie"


def test_breakdown_measured_keeps_cycle_separate():
    raw = read_json(RUN_NCCL)
    bars = ex.breakdown_bars([(RUN_NCCL, results(RUN_NCCL))])
    assert len(bars) == 1
    bar, b = bars[0], raw["backends"][0]
    assert bar["measured"]
    assert bar["cycle_ms"] == b["cycle_ms"] == pytest.approx(raw["measured"]["cycle_median_ms"], rel=1e-5)
    # verify_ms is the sum of its classes; the file rounds each to 6 significant digits.
    assert bar["ops_sum_ms"] == pytest.approx(b["verify_ms"] + b["draft_ms"], rel=1e-5)
    # The instrumented ops overshoot the timed cycle here, so nothing is left for host.
    assert bar["ops_sum_ms"] > bar["cycle_ms"] and bar["segments"]["host"] == 0.0
    assert bar["segments"]["verify communication"] == b["verify_comm_ms"]
    # Backend `model` is labelled with the backend it replayed (from the command line) and the target box.
    assert bar["label"] == "nccl, graph cycle"
    assert bar["group"] == "measured on NVIDIA H200, 1 rank, collectives = modelled delays of rtx-pro-6000-8x-pcie"


def test_breakdown_disambiguates_and_dedupes():
    docs = [(p, results(p)) for p in (RUN_NONE, RUN_OLD, H200_MODEL, H200_OPS)]
    bars = ex.breakdown_bars(docs)
    labels = [b["label"] for b in bars]
    # Same backend and timing: the file names tell the two bars apart.
    assert "none, graph cycle, ops timed in graph, [h200-none-graph]" in labels
    assert "none, graph cycle, ops timed in graph, [h200-none-ctx32k]" in labels
    # The two h200 model files hold the same result: one bar, both files named.
    modelled = [b for b in bars if not b["measured"]]
    assert len(modelled) == 1 and modelled[0]["also_in"] == [H200_OPS]


def test_breakdown_nothing_available(write_json):
    doc = read_json(RTX)
    doc["backends"] = [b for b in doc["backends"] if not b["available"]]
    path = write_json(doc)
    with pytest.raises(InputError, match="no available backend"):
        ex.breakdown_bars([(path, load_results(path))])


# ---------------------------------------------------------------- allreduce latency

def test_allreduce_series_match_json():
    raw = read_json(BENCH)
    data = ex.allreduce_series([load_bench(BENCH)], [load_plan(PLAN)])
    assert [s["label"] for s in data["series"]] == [b["name"] for b in raw["backends"]]
    for s, b in zip(data["series"], raw["backends"]):
        assert s["bytes"] == [r["bytes"] for r in b["rows"]]
        assert s["time_us"] == [r["time_us"] for r in b["rows"]]
        assert s["verify_bytes"] == [r["bytes"] for r in b["rows"] if r["verify_pass"]] == [43008]
    assert data["verify_bytes"] == [43008]  # 3 tokens x 7168 hidden x 2 B, from the bench and from the plan
    nccl = data["series"][0]
    assert ex.time_at(nccl, 43008) == [r for r in raw["backends"][0]["rows"] if r["bytes"] == 43008][0]["time_us"]
    assert ex.time_at(nccl, 12345) is None
    assert data["caveats"] and "1 rank" in data["caveats"][0]


def test_allreduce_unsupported_and_virtual():
    raw = read_json(VIRTUAL)
    data = ex.allreduce_series([load_bench(VIRTUAL)])
    unsup = [(b["name"], b["reason"]) for b in raw["backends"] if not b["supported"]]
    assert data["unsupported"] == unsup and [n for n, _ in unsup] == ["nccl", "nccl-symm"]
    assert [s["label"] for s in data["series"]] == ["oneshot", "twoshot", "push", "mpi"]
    assert "virtual ranks" in data["caveats"][0]


def test_verify_payloads_from_plan():
    assert ex.verify_payloads(load_plan(PLAN)) == [43008]


# ---------------------------------------------------------------- sweeps

def raw_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_sweep_draft_tokens_matches_csv():
    path = sample("sweep-draft-tokens.csv")
    sw = ex.sweep_series(load_sweep(path))
    assert sw["x_key"] == "speculative.num_draft_tokens" and sw["paired"] == ["speculative.steps"]
    assert sw["numeric"] and sw["split"] == []
    rows = [r for r in raw_rows(path) if r["available"] == "true"]
    assert sw["rejected"] == {}  # the sweep ties num_draft_tokens to steps + 1: no refused pairs
    for s in sw["series"]:
        assert s["x"] == [2, 3, 4, 5, 6]
        want = {int(r["speculative.num_draft_tokens"]): float(r["tok_per_s"]) for r in rows
                if r["backend"] == s["backend"]}
        assert dict(zip(s["x"], s["y"])) == want
        for r in rows:  # every drawn point's steps are its draft tokens - 1 (topk = 1)
            if r["backend"] == s["backend"]:
                assert int(r["speculative.steps"]) + 1 == int(r["speculative.num_draft_tokens"])


def test_sweep_best_per_x_excludes_bound():
    sw = ex.sweep_series(load_sweep(sample("sweep-draft-tokens.csv")))
    best = {xv: (b, w, bound) for xv, b, w, bound in ex.best_per_x(sw)}
    rows = [r for r in raw_rows(sample("sweep-draft-tokens.csv")) if r["available"] == "true"
            and r["speculative.num_draft_tokens"] == "3"]
    contenders = {r["backend"]: float(r["tok_per_s"]) for r in rows if r["backend"] != "none"}
    (by, bl), (wy, wl), bound = best["3"]
    assert (by, bl) == (max(contenders.values()), max(contenders, key=contenders.get))
    assert (wy, wl) == (min(contenders.values()), min(contenders, key=contenders.get))
    assert bound == float([r for r in rows if r["backend"] == "none"][0]["tok_per_s"])


def test_sweep_tp_method_change_flagged(tmp_path):
    # NCCL's allreduce figure comes from the measured table at TP=8 and from the formula at TP=4 (the
    # shipped sweep-tp sample has TP=4 out of memory, so the points are written here).
    text = ("parallel.tp,backend,available,reason,allreduce_us,allreduce_method,verify_ms,verify_comm_ms,"
            "verify_gemm_ms,verify_attention_ms,verify_other_ms,draft_ms,draft_extend_ms,host_ms,cycle_ms,"
            "tokens_per_cycle,tok_per_s\n"
            "4,nccl,true,,30,formula: ring/LL over P2P,20,5,10,1,1,2,1,1,24,2.2,90\n"
            "8,nccl,true,,200,measured table (1 point),31,24,5,1,1,2,1,1,34,2.2,65\n")
    p = tmp_path / "tp.csv"
    p.write_text(text)
    sw = ex.sweep_series(load_sweep(str(p)))
    assert sw["x_key"] == "parallel.tp" and [s["x"] for s in sw["series"]][0] == [4, 8]
    changes = ex.method_changes(sw)
    assert "nccl" in changes
    assert dict(changes["nccl"])["8"].startswith("measured table")
    assert dict(changes["nccl"])["4"].startswith("formula")


def test_sweep_split_by_independent_key(tmp_path):
    text = ("a,b,backend,available,reason,allreduce_us,allreduce_method,verify_ms,verify_comm_ms,verify_gemm_ms,"
            "verify_attention_ms,verify_other_ms,draft_ms,draft_extend_ms,host_ms,cycle_ms,tokens_per_cycle,"
            "tok_per_s\n")
    for a in (1, 2):
        for b in ("x", "y"):
            text += f"{a},{b},nccl,true,,1,m,1,1,1,1,1,1,1,1,1,1,{a * 10 + (b == 'y')}\n"
    p = tmp_path / "s.csv"
    p.write_text(text)
    sw = ex.sweep_series(load_sweep(str(p)), x_key="a")
    assert sw["split"] == ["b"] and sorted(s["label"] for s in sw["series"]) == ["nccl (b=x)", "nccl (b=y)"]
    assert {s["label"]: s["y"] for s in sw["series"]} == {"nccl (b=x)": [10.0, 20.0], "nccl (b=y)": [11.0, 21.0]}
    with pytest.raises(InputError, match="not a varied column"):
        ex.sweep_series(load_sweep(str(p)), x_key="c")
    with pytest.raises(InputError, match="'reason' is not a numeric column"):
        ex.sweep_series(load_sweep(str(p)), y="reason")
    assert ex.sweep_series(load_sweep(str(p)), x_key="a", y="cycle_ms")["series"][0]["y"] == [1.0, 1.0]


def test_sweep_categorical_x(tmp_path):
    path = sample("sweep-context.csv")
    text = open(path, encoding="utf-8").read().replace("\n1024,", "\none,").replace("\n2048,", "\ntwo,")
    p = tmp_path / "c.csv"
    p.write_text(text)
    sw = ex.sweep_series(load_sweep(str(p)))
    assert not sw["numeric"] and sw["x_order"][:3] == ["one", "two", "4096"]


# ---------------------------------------------------------------- model against measured

def test_compare_classes_match_json():
    raw = read_json(RUN_NONE)["model_comparison"]["verify"]
    rows = ex.compare_classes(results(RUN_NONE))
    assert [r[0] for r in rows] == ["gemm", "attention", "other", "total"]
    for cls, meas, mod, err in rows:
        assert meas == raw[cls]["measured_ms"] and mod == raw[cls]["modelled_ms"]
        assert err == pytest.approx(raw[cls]["error_pct"], abs=1e-9)


def test_compare_rejects_inconsistent_error(write_json):
    doc = read_json(RUN_NONE)
    doc["model_comparison"]["verify"]["gemm"]["error_pct"] = 12.0
    path = write_json(doc)
    d = load_results(path)
    d["_path"] = path
    with pytest.raises(InputError, match="error_pct 12.000 does not match"):
        ex.compare_classes(d)


def test_compare_rejects_missing_comparison(write_json):
    doc = read_json(RUN_NONE)
    doc["model_comparison"] = None
    path = write_json(doc)
    with pytest.raises(InputError, match="no model_comparison"):
        ex.compare_classes(load_results(path))


def test_op_kinds_add_up_to_the_runs_own_comparison():
    """Summed op by op (main stream, verify, no collectives), the kinds give back the run's measured class
    total and the model file's own total (the run's embedded model total is as old as the run)."""
    rows = ex.compare_op_kinds(results(RUN_NONE), results(H200_OPS), load_plan(PLAN))
    total = read_json(RUN_NONE)["model_comparison"]["verify"]["total"]
    assert sum(r[2] for r in rows) == pytest.approx(total["measured_ms"], rel=1e-6)
    main = {(ph["name"], i) for ph in read_json(PLAN)["phases"] for i, op in enumerate(ph.get("ops", []))
            if op["stream"] == "main"}
    modelled = sum(o["us"] for o in read_json(H200_OPS)["backends"][0]["ops"]
                   if o["phase"] == "verify" and o["kind"] not in ("allreduce", "allgather")
                   and (o["phase"], o["index"]) in main) / 1e3
    assert sum(r[3] for r in rows) == pytest.approx(modelled, rel=1e-6)
    kinds = {r[0]: r for r in rows}
    assert set(kinds) == {"gemm", "grouped_gemm", "attention", "norm", "elementwise", "embedding"}
    assert kinds["attention"][1] == 61  # one attention per layer
    # Independently: the measured attention sum straight from the file.
    ops = read_json(RUN_NONE)["backends"][0]["ops"]
    att = sum(o["us"] for o in ops if o["phase"] == "verify" and o["kind"] == "attention") / 1e3
    assert kinds["attention"][2] == pytest.approx(att)


def test_op_kinds_reject_other_plan(write_json):
    doc = read_json(H200_OPS)
    ops = doc["backends"][0]["ops"]
    first_verify = next(i for i, o in enumerate(ops) if o["phase"] == "verify" and o["kind"] == "gemm")
    ops[first_verify]["name"] = "something_else"
    path = write_json(doc)
    with pytest.raises(InputError, match="not the same plan"):
        ex.compare_op_kinds(results(RUN_NONE), load_results(path))


# ---------------------------------------------------------------- drawing (smoke: files written)

def test_draw_writes_png_and_svg(tmp_path):
    out = []
    out += draw.draw_breakdown(ex.breakdown_bars([(RTX, results(RTX)), (RUN_NCCL, results(RUN_NCCL))]),
                               str(tmp_path / "b"), ["footnote"])
    out += draw.draw_allreduce(ex.allreduce_series([load_bench(BENCH)]), str(tmp_path / "a"), ["f"])
    out += draw.draw_sweep(ex.sweep_series(load_sweep(sample("sweep-context.csv"))), str(tmp_path / "s"), ["f"])
    out += draw.draw_compare(ex.compare_classes(results(RUN_NONE)), None, str(tmp_path / "c"), ["f"])
    assert len(out) == 8
    for p in out:
        data = open(p, "rb").read()
        assert data.startswith(b"\x89PNG") if p.endswith(".png") else b"<svg" in data[:2000]


# ---------------------------------------------------------------- model against measurement, 2 GPUs

X2_BENCH = sample("h200x2-bench-graph.json")
X2_RUNS = [sample(f"h200x2-{b}.results.json") for b in ("nccl-graph", "push-graph", "none-eager")]


def test_allreduce_series_carry_the_model_and_its_errors():
    raw = read_json(X2_BENCH)
    data = ex.allreduce_series([load_bench(X2_BENCH)])
    assert raw["model"]["system"] == "h200-2x-nvlink"
    for s, b in zip(data["series"], raw["backends"]):
        assert s["model_us"] == [r["model_us"] for r in b["rows"]]
        errs = sorted(100.0 * (r["model_us"] - r["time_us"]) / r["time_us"] for r in b["rows"]
                      if 4096 <= r["bytes"] <= 1 << 20)
        med_abs, med, n = ex.model_errors(s)
        assert n == len(errs) == 10  # 4 KiB .. 1 MiB by powers of two, plus the 43,008 B verify payload
        assert med == pytest.approx((errs[4] + errs[5]) / 2)
        assert med_abs == pytest.approx(sorted(abs(e) for e in errs)[4:6][0] / 2 + sorted(abs(e) for e in errs)[5] / 2)
        row = [r for r in b["rows"] if r["bytes"] == 43008][0]
        assert ex.model_at(s, 43008) == (row["time_us"], row["model_us"])
    # A benchmark without the model has no errors to report.
    plain = ex.allreduce_series([load_bench(BENCH)])
    assert all(ex.model_errors(s) is None for s in plain["series"])


def test_bench_model_us_must_be_a_positive_number(write_json):
    doc = read_json(X2_BENCH)
    doc["backends"][0]["rows"][0]["model_us"] = -1
    with pytest.raises(InputError, match="model_us"):
        load_bench(write_json(doc))
    doc["backends"][0]["rows"][0]["model_us"] = None  # a backend the model cannot price
    assert load_bench(write_json(doc))["backends"][0]["rows"][0]["model_us"] is None


def test_backend_cycles_match_the_runs_own_numbers():
    runs = [(p, load_results(p)) for p in X2_RUNS]
    rows = ex.compare_backend_cycles(runs)
    assert [(r["mode"], r["backend"]) for r in rows] == [("eager", "none"), ("graph", "nccl"), ("graph", "push")]
    for r in rows:
        bc = read_json(r["path"])["model_comparison"]["backend_cycle"]
        assert r["measured_ms"] == bc["measured_ms"] and r["modelled_ms"] == bc["modelled_ms"]
        assert r["error_pct"] == pytest.approx(bc["error_pct"], abs=1e-9)
        assert r["measured_ms"] == pytest.approx(read_json(r["path"])["measured"]["cycle_median_ms"])


def test_backend_cycles_reject_an_inconsistent_error(write_json):
    doc = read_json(X2_RUNS[0])
    doc["model_comparison"]["backend_cycle"]["error_pct"] = 50.0
    path = write_json(doc)
    with pytest.raises(InputError, match="disagrees"):
        ex.compare_backend_cycles([(path, load_results(path))])


def test_sweep_series_of_one_backend_differ_in_colour_dash_and_marker():
    """Lines of one backend (one per value of another varied key) must not hide each other."""
    from matplotlib.colors import to_rgb
    series = [{"backend": "nccl", "label": f"nccl (b={v})"} for v in "xyz"] + \
        [{"backend": "oneshot", "label": "oneshot"}]
    styles = draw.series_styles(series)
    assert len(set(styles)) == 4
    assert len({s[0] for s in styles[:3]}) == 3 and len({s[1] for s in styles[:3]}) == 3
    assert len({s[2] for s in styles[:3]}) == 3
    # A backend with a single line keeps its colour of every other figure.
    assert styles[3][0] == to_rgb(draw.BACKEND_COLORS["oneshot"])

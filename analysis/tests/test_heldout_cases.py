"""bench/heldout_cases.py, the held-out set: it covers what it must (at least 12 one-GPU
replays over batch 1-32, TP 2/4/8, topk 1/2/4, 2K-128K, Kimi and DeepSeek-V3, INT4 and bf16 experts),
every held-out case differs from the probe's own scenario, and vpsim accepts each case's --set options."""

import os
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
import heldout_cases as H  # noqa: E402

BIN = os.path.join(REPO, "build", "vpsim")


def value(sets, key, default):
    for s in sets:
        k, _, v = s.partition("=")
        if k == key:
            return v
    return default


def held_out():
    return [(n, s) for n, s, _ in H.CASES if n != "anchor"]


def test_the_set_covers_the_issue():
    cases = held_out()
    assert len(cases) >= 12
    batches = {int(value(s, "workload.batch", 1)) for _, s in cases}
    assert min(batches) == 1 and max(batches) == 32 and len(batches) >= 4
    assert {int(value(s, "parallel.tp", 8)) for _, s in cases} >= {2, 4, 8}
    assert {int(value(s, "speculative.topk", 1)) for _, s in cases} >= {1, 2, 4}
    ctx = {int(value(s, "workload.context", 8192)) for _, s in cases}
    assert min(ctx) == 2048 and max(ctx) == 131072
    models = {value(s, "model", "kimi") for _, s in cases}
    assert models == {"kimi", "models/deepseek-v3.yaml"}
    experts = {(value(s, "model", "kimi"), value(s, "model.weights.routed_experts.dtype", "as shipped"))
               for _, s in cases}
    assert ("kimi", "as shipped") in experts and ("kimi", "bf16") in experts  # Kimi ships INT4 experts
    assert ("models/deepseek-v3.yaml", "int4") in experts and ("models/deepseek-v3.yaml", "bf16") in experts


def test_every_held_out_case_differs_from_the_anchor_and_from_each_other():
    anchor = [s for n, s, _ in H.CASES if n == "anchor"]
    assert anchor == [[]]
    seen = set()
    for name, sets in held_out():
        assert sets, name
        key = tuple(sorted(sets))
        assert key not in seen, name
        seen.add(key)
    assert len({n for n, _, _ in H.CASES}) == len(H.CASES)


def test_vpsim_accepts_every_case():
    for name, sets, _ in H.CASES:
        args = [BIN, "plan", "configs/default.yaml"] + H.sets_args(sets)
        r = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {r.stderr}"


def test_sets_prints_one_option_per_line_and_refuses_an_unknown_case():
    script = os.path.join(REPO, "bench", "heldout_cases.py")
    r = subprocess.run([sys.executable, script, "--sets", "k-b4-tp8-8k"], capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout.split("\n")[:4] == ["--set", "system.gpu.memory_gib=1000", "--set", "workload.batch=4"]
    r = subprocess.run([sys.executable, script, "--sets", "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and "no case 'nope'" in r.stderr

"""bench/class_plans.py and bench/neighbour_plans.py: the plans they write from a scenario's plan (vpsim loads
them, each class or pair as said) and the arithmetic of `read` on replays whose times are made up here."""
import json
import os
import subprocess
import sys

from scripts_paths import BIN, REPO

BENCH = os.path.join(REPO, "bench")


def plan_of(tmp_path):
    path = tmp_path / "plan.json"
    with open(path, "w") as f:
        subprocess.run([BIN, "plan", "configs/tiny.yaml", "--format", "json"], cwd=REPO, stdout=f, check=True)
    return path


def tool(name, *args):
    return subprocess.run([sys.executable, os.path.join(BENCH, name), *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


def result(path, median, p10=None, p90=None, alone=None):
    m = {"cycle_median_ms": median, "cycle_p10_ms": median if p10 is None else p10,
         "cycle_p90_ms": median if p90 is None else p90}
    if alone:
        m["class_alone_ms"] = alone
    with open(path, "w") as f:
        json.dump({"measured": m}, f)


def test_class_plans_leave_out_each_subset_and_read_the_interactions(tmp_path):
    out = tmp_path / "cls"
    r = tool("class_plans.py", "make", plan_of(tmp_path), out)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{t}.json" for t in ("full", "no-G", "no-A", "no-O", "no-GA", "no-GO", "no-AO", "no-GAO"))
    kinds = {o["kind"] for ph in json.load(open(out / "no-GO.json"))["phases"] for o in ph["ops"]}
    assert "attention" in kinds and not kinds & {"gemm", "grouped_gemm", "norm", "elementwise", "embedding"}
    # Every plan is one vpsim replays: model mode loads it against the scenario.
    m = subprocess.run([BIN, "model", "configs/tiny.yaml", "--plan", str(out / "no-GA.json"), "--backend", "none"],
                       cwd=REPO, capture_output=True, text=True)
    assert m.returncode == 0, m.stderr
    # Made-up times (ms): classes alone G 4, A 1, O 0.9 over none 0.1; G and A together cost 0.2 more, G and
    # O 0.1 more, A and O nothing.
    alone, pair = {"G": 4.0, "A": 1.0, "O": 0.9}, {"GA": 0.2, "GO": 0.1, "AO": 0.0}
    for t in ("full", "no-G", "no-A", "no-O", "no-GA", "no-GO", "no-AO", "no-GAO"):
        kept = set("GAO") - set(t[3:] if t != "full" else "")
        cyc = 0.1 + sum(alone[c] for c in kept) + sum(v for k, v in pair.items() if set(k) <= kept)
        # Replayed with --class-cost, the full plan also says what its classes alone cost by skipping ops.
        skip = {"gemm": 4.1, "attention": 1.1, "other": 0.8, "none": 0.05} if t == "full" else None
        result(out / f"{t}.result.json", cyc, alone=skip)
    r = tool("class_plans.py", "read", out)
    assert r.returncode == 0, r.stderr
    assert "| full | 4.100 | 1.100 | 0.800 | 0.0500 |" in r.stdout and "| no-G |" not in r.stdout, r.stdout
    # gemm: marginal 6.3 - 2.0 = 4.3 (its 4 + both of its interactions), alone 4.0.
    assert "| gemm | 4.300 | 4.000 |" in r.stdout, r.stdout
    assert "| other | 1.000 | 0.900 |" in r.stdout, r.stdout
    # The marginal costs (4.3 + 1.2 + 1.0) hold each interaction twice and miss none: 6.5 against 6.3.
    assert "excess +0.200" in r.stdout and "| gemm + attention | +0.200 |" in r.stdout, r.stdout


def test_neighbour_plans_pair_the_ops_and_read_the_cost_of_a_change(tmp_path):
    out = tmp_path / "nb"
    r = tool("neighbour_plans.py", "make", plan_of(tmp_path), out)
    assert r.returncode == 0, r.stderr
    ab = json.load(open(out / "o_proj+post_attention_layernorm.AB.json"))["phases"][0]
    assert ab["name"] == "decode" and [o["name"] for o in ab["ops"][:2]] == ["o_proj", "post_attention_layernorm"]
    n = len(json.load(open(out / "o_proj+post_attention_layernorm.B.json"))["phases"][0]["ops"])
    assert len(ab["ops"]) == 2 * n
    # Made-up times (us): launch L 3, a 2, b 1, a change c 0.25: T_A = 3 + 2n, T_B = 3 + n, T_1 = 4,
    # T_AB = 3 + 3n + (2n - 1) 0.25. read gives c back (ms in the files).
    c = 0.25
    for name in ("o_proj+post_attention_layernorm", "fused_qkv_a_proj+q_a_layernorm", "moe_w13+moe_silu_mul",
                 "mla_attention+w_vc", "q_a_layernorm+rope"):
        k = len(json.load(open(out / f"{name}.B.json"))["phases"][0]["ops"])
        for part, us in (("A", 3 + 2 * k), ("B", 3 + k), ("one", 4), ("AB", 3 + 3 * k + (2 * k - 1) * c)):
            result(out / f"{name}.{part}.result.json", us / 1e3)
    r = tool("neighbour_plans.py", "read", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("+0.250 (+0.250..+0.250)") == 5, r.stdout


def test_layout_plans_keep_one_class_beside_a_pad_and_take_the_pad_out(tmp_path):
    out = tmp_path / "lay"
    r = tool("layout_plans.py", "make", plan_of(tmp_path), out)
    assert r.returncode == 0, r.stderr
    ops = [o for ph in json.load(open(out / "other-mem-2.json"))["phases"] for o in ph["ops"]]
    pad = ops[0]
    # The memory pad is one row of an embedding table of 2 GiB; the rest are the other class and the collectives.
    assert pad["kind"] == "embedding" and pad["m"] == 1 and abs(pad["k"] * pad["n"] * 2 - 2 * 2**30) < 2 * pad["n"]
    assert not {o["kind"] for o in ops[1:]} & {"gemm", "grouped_gemm", "attention"}
    # The work pad is a one-row GEMM over 8 GiB of weights, first in the cycle.
    work = json.load(open(out / "attention-work-8.json"))["phases"][0]["ops"][0]
    assert work["kind"] == "gemm" and work["m"] == 1 and abs(work["weight_bytes"] - 8 * 2**30) < 2 * work["k"]
    assert {o["kind"] for o in json.load(open(out / "pad-only-mem-0.json"))["phases"][0]["ops"]} <= {
        "allreduce", "allgather", "reduce_scatter", "alltoall"}
    for t in ("attention-work-8", "other-mem-16"):
        m = subprocess.run([BIN, "model", "configs/tiny.yaml", "--plan", str(out / f"{t}.json"), "--backend", "none"],
                           cwd=REPO, capture_output=True, text=True)
        assert m.returncode == 0, m.stderr
    # Made-up: attention 1.0 ms except 1.1 beside 2 GiB of work, other 0.9, the pad 0.001 ms (work: 0.5 ms) on top.
    for name in os.listdir(out):
        if name.endswith(".result.json"):
            continue
        kind, pk, g = name[:-5].rsplit("-", 2)
        pad_ms = 0.0 if float(g) == 0 else (0.5 if pk == "work" else 0.001)
        base = {"attention": 1.1 if (pk, g) == ("work", "2") else 1.0, "other": 0.9, "pad-only": 0.0}[kind]
        result(out / f"{name[:-5]}.result.json", base + pad_ms)
    r = tool("layout_plans.py", "read", out)
    assert r.returncode == 0, r.stderr
    assert "| work | 2 | 1.100 | 0.900 | 0.5000 |" in r.stdout and "| mem | 16 | 1.000 | 0.900 | 0.0010 |" in r.stdout, r.stdout
    assert "attention beside work pads: 1.000-1.100 ms (10.0 %)" in r.stdout, r.stdout
    assert "other beside mem pads: 0.900-0.900 ms (0.0 %)" in r.stdout, r.stdout


def test_heldout_takes_the_classes_alone_from_the_class_plans_when_given(tmp_path):
    runs, plans = tmp_path / "runs", tmp_path / "plans"
    runs.mkdir()
    run = {"command_line": ["vpsim", "run", "configs/default.yaml", "--set", "workload.context=4096"],
           "measured": {"cycle_median_ms": 7.0, "class_alone_ms": {"gemm": 4.5, "attention": 1.0, "other": 0.8,
                                                                    "none": 0.002}}}
    for case in ("a", "b"):
        with open(runs / f"run-{case}.json", "w") as f:
            json.dump(run, f)
    # Case a has the four replays (ms): gemm alone 4.6, attention 0.9, other 1.0 over none 0.1; case b has none.
    (plans / "a" / "plans").mkdir(parents=True)
    for tag, ms in (("no-AO", 4.7), ("no-GO", 1.0), ("no-GA", 1.1), ("no-GAO", 0.1)):
        result(plans / "a" / "plans" / f"{tag}.result.json", ms)

    def table(*extra):
        out = tmp_path / f"h{len(extra)}.json"
        r = tool("heldout.py", str(runs), "configs/systems/h200-1x-probed.yaml", "--vpsim", BIN, "--json", out, *extra)
        assert r.returncode == 0, r.stderr
        return {c["case"]: c for c in json.load(open(out))["cases"]}

    own, skip = table("--plans", plans), table()
    assert own["a"]["measured_classes_by"].startswith("class alone in a plan of its own")
    assert [round(own["a"][c]["measured_ms"], 6) for c in ("gemm", "attention", "other")] == [4.6, 0.9, 1.0]
    # Without its replays, case b keeps the run's own classes alone, as does every case without --plans.
    assert own["b"]["measured_classes_by"] == skip["a"]["measured_classes_by"] == "class alone (--class-cost)"
    assert own["b"]["other"]["measured_ms"] == 0.8
    assert own["a"]["other"]["modelled_ms"] == skip["a"]["other"]["modelled_ms"]
    # The interaction from the same classes: 7.0 - (4.6 + 0.9 + 1.0) - 0.1 with the plans, else the run's own.
    assert abs(own["a"]["interaction_ms"] - 0.4) < 1e-9 and abs(own["b"]["interaction_ms"] - 0.698) < 1e-9

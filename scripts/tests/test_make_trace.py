"""scripts/make_trace.py makes the traces the import's tests rest on: its figures must be what it says, read
back from its own files without vpsim (the skew of every allreduce, the wire time, one clock per rank)."""
import json
import os
import sys

from scripts_paths import REPO

sys.path.insert(0, os.path.join(REPO, "scripts"))
import make_trace  # noqa: E402


def tiny_plan():
    def op(kind, name, **kw):
        return dict(kind=kind, name=name, stream="main", bytes_read=3000000, bytes_written=3000, **kw)
    layer = [op("embedding", "embedding"), op("allreduce", "allreduce.embedding"), op("gemm", "o_proj"),
             op("allreduce", "allreduce.attn"), op("elementwise", "silu_mul"), op("allreduce", "allreduce.mlp"),
             op("gemm", "lm_head"), op("allgather", "allgather.logits")]
    return {"phases": [{"name": "draft_1", "ops": layer[:2] + layer[6:]}, {"name": "verify", "ops": layer},
                       {"name": "draft_extend", "ops": layer[:2] + layer[6:]}]}


def test_every_allreduce_has_the_skew_it_was_given(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tiny_plan()))
    assert make_trace.main(["--plan", str(plan), "--ranks", "4", "--skew", "150", "--wire", "40", "--cycles", "3",
                            "--out-dir", str(tmp_path)]) == 0
    calls = {}
    for r in range(4):
        doc = json.loads((tmp_path / ("rank%d.json" % r)).read_text())
        assert doc["distributedInfo"]["rank"] == r
        shift = (doc["baseTimeNanoseconds"] - 1764547200000000000) / 1000.0
        ars = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "AllReduce" in e["name"]]
        for i, e in enumerate(ars):
            calls.setdefault(i, []).append((e["ts"] + shift, e["dur"]))
    assert len(calls) == 3 * (1 + 3 + 1)
    for i, ranks in calls.items():
        durs = [d for _, d in ranks]
        starts = [t for t, _ in ranks]
        assert abs(max(durs) - min(durs) - 150) <= 2.0, (i, durs)  # the ranks leave within 1 us of each other
        assert abs(max(starts) - min(starts) - 150) <= 2.0, (i, starts)  # each leaves the last call within 1 us
        assert 40 <= min(durs) <= 41, (i, durs)


def test_gpu_annotations_have_kinetos_shape(tmp_path):
    """--gpu-annotations: one GPU range per stream and phase, before every CPU range in the file, spanning the
    phase's kernels on its stream; the CPU range ends at the host's last launch (in a graph, long before)."""
    plan = tmp_path / "plan.json"
    p = tiny_plan()
    p["phases"][1]["ops"].insert(3, dict(kind="gemm", name="shared.down", stream="side", bytes_read=3000000,
                                         bytes_written=3000))
    plan.write_text(json.dumps(p))
    assert make_trace.main(["--plan", str(plan), "--ranks", "2", "--cycles", "2", "--graph", "--markers",
                            "--gpu-annotations", "--out-dir", str(tmp_path)]) == 0
    evs = json.loads((tmp_path / "rank0.json").read_text())["traceEvents"]
    kinds = [e.get("cat") for e in evs]
    gpu = [e for e in evs if e.get("cat") == "gpu_user_annotation"]
    cpu = [e for e in evs if e.get("cat") == "user_annotation"]
    assert len(cpu) == 2 * 3 and len(gpu) == 2 * 4  # the verify ran on two streams
    assert max(i for i, k in enumerate(kinds) if k == "gpu_user_annotation") < kinds.index("user_annotation")
    kern = [e for e in evs if e.get("cat") == "kernel"]
    for g in gpu:
        mine = [k for k in kern if k["tid"] == g["tid"] and g["ts"] <= k["ts"] <= g["ts"] + g["dur"]]
        assert mine and abs(max(k["ts"] + k["dur"] for k in mine) - g["ts"] - g["dur"]) < 0.01
    verify_cpu = [c for c in cpu if c["name"] == "vpsim:verify"][0]
    verify_gpu = [g for g in gpu if g["name"] == "vpsim:verify"][0]
    assert verify_cpu["dur"] < verify_gpu["dur"] / 2

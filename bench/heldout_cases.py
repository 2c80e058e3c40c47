#!/usr/bin/env python3
"""The held-out set of issue #26 item 3: one-GPU replays of shapes no probe was taken at.

Each case is a `vpsim run configs/default.yaml --backend none` on ONE GPU with its --set options (the
per-rank shapes of the TP degree named, collectives skipped): batch 1-32, TP 2/4/8 per-rank shapes,
topk 1/2/4 trees, contexts 2K-128K, Kimi-K2.5 (INT4 experts, and its experts as bf16) and DeepSeek-V3
(FP8 experts as shipped, and INT4 / bf16 experts). The compute probe (`vpsim calibrate --measure
configs/default.yaml`) replays only its own microbenchmark grid, with GEMM shapes taken from the
default scenario's plan (Kimi, TP=8, batch 1, 3 tokens): `anchor` is that scenario and is listed
apart; every other case differs from it in at least one shape. The set was fixed before any of it was
measured (2026-12-02) and nothing is fitted to it: bench/heldout.py compares model and replay.

usage:
  bench/heldout_cases.py --list                      the cases, their --set options and why
  bench/heldout_cases.py --estimate [--vpsim B] [--system S]
                                                     each case's modelled cycle and the replay's GPU
                                                     seconds (bench/heldout_h200.sh's budget)
  bench/heldout_cases.py --sets CASE                 one case's --set options, one per line (the script)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# Every case: the model memory check is against one GPU of the named TP degree's box; the replay
# allocates only what one rank's ops touch, so the account is lifted for the modelled side alike.
COMMON = ["system.gpu.memory_gib=1000"]
KIMI_BF16 = "model.weights.routed_experts.dtype=bf16"
DSV3 = "model=models/deepseek-v3.yaml"


def tree(steps, topk, tokens):
    return [f"speculative.steps={steps}", f"speculative.topk={topk}", f"speculative.num_draft_tokens={tokens}"]


# (name, --set options, what it tests). Order: Kimi INT4, Kimi bf16 experts, DeepSeek-V3.
CASES = [
    ("anchor", [], "the probe's own scenario (Kimi, TP=8, batch 1, 3 tokens, 8K): not held out"),
    ("k-b4-tp8-8k", ["workload.batch=4"], "GEMM rows 12 (batch 4 x 3 tokens), MLA over 4 sequences"),
    ("k-b16-tp8-4k", ["workload.batch=16", "workload.context=4096"], "GEMM rows 48 (above 16), 4K"),
    ("k-b32-tp8-t1-2k", ["workload.batch=32", "speculative.algorithm=none", "workload.context=2048"],
     "plain decode at batch 32, 2K: GEMM rows 32, no draft"),
    ("k-b1-tp4-64k", ["parallel.tp=4", "workload.context=65536"], "16 heads per rank at 64K: attention in heads and context"),
    ("k-b1-tp2-t4-16k", ["parallel.tp=2"] + tree(3, 1, 4) + ["workload.context=16384"],
     "TP=2 per-rank shapes (4x wider experts), 4 tokens, 16K"),
    ("k-b4-tp4-topk2-32k", ["parallel.tp=4", "workload.batch=4", "workload.context=32768"] + tree(3, 2, 6),
     "a topk-2 tree of 6 tokens, batch 4 (24 rows), TP=4, 32K"),
    ("k-b2-tp8-topk4-128k", ["workload.batch=2", "workload.context=131072"] + tree(3, 4, 8),
     "a topk-4 tree of 8 tokens, batch 2, 128K: the longest context"),
    ("kbf16-b1-tp8-32k", [KIMI_BF16, "workload.context=32768"], "Kimi's routed experts as bf16 (4x the bytes), 32K"),
    ("kbf16-b2-tp4-8k", [KIMI_BF16, "parallel.tp=4", "workload.batch=2"], "bf16 experts, TP=4, batch 2 (6 rows)"),
    ("d-b1-tp8-8k", [DSV3], "DeepSeek-V3 as shipped (FP8 experts, 16 heads per rank)"),
    ("d-b4-tp4-topk2-32k", [DSV3, "parallel.tp=4", "workload.batch=4", "workload.context=32768"] + tree(3, 2, 6),
     "DeepSeek-V3, 32 heads per rank, topk-2 tree, batch 4, 32K"),
    ("dint4-b16-tp8-t1-4k", [DSV3, "model.weights.routed_experts.dtype=int4", "model.weights.routed_experts.group=32",
                             "workload.batch=16", "speculative.algorithm=none", "workload.context=4096"],
     "DeepSeek-V3 with INT4 experts, plain decode at batch 16"),
    ("dbf16-b2-tp8-128k", [DSV3, "model.weights.routed_experts.dtype=bf16", "workload.batch=2",
                           "workload.context=131072"], "DeepSeek-V3 with bf16 experts, batch 2 at 128K"),
    ("d-b32-tp8-2k", [DSV3, "workload.batch=32", "workload.context=2048"], "DeepSeek-V3 at batch 32 (96 rows), 2K"),
]

# What one replay costs on the GPU (bench/heldout_h200.sh's options): warm-up + timed + instrumented
# passes, then --class-cost's three cycles without a class (each --iters timed), and the weights' fill.
ITERS, WARMUP, INSTRUMENTED = 20, 3, 3
SETUP_S = 4.0  # measured: session 12's nine replays took 23 s of commands at 30+5+10 passes (bench/NOTES.md)


def sets_args(sets):
    out = []
    for s in COMMON + sets:
        out += ["--set", s]
    return out


def model_cycle_ms(vpsim, system, sets):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.json")
        subprocess.run([vpsim, "model", "configs/default.yaml", "--system", system, "--backend", "none", "--format",
                        "json", "--out", out] + sets_args(sets), check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            b = json.load(f)["backends"][0]
    return b["cycle_ms"] - b["host_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--estimate", action="store_true")
    ap.add_argument("--sets")
    ap.add_argument("--vpsim", default="build/vpsim")
    ap.add_argument("--system", default="configs/systems/h200-1x-probed.yaml")
    a = ap.parse_args()
    if a.sets:
        for name, sets, _ in CASES:
            if name == a.sets:
                print("\n".join(sets_args(sets)))
                return 0
        print(f"heldout_cases.py: no case '{a.sets}'", file=sys.stderr)
        return 2
    if a.estimate:
        total = 0.0
        print(f"{'case':22s} {'model cycle ms':>14s} {'GPU s':>6s}")
        for name, sets, _ in CASES:
            cyc = model_cycle_ms(a.vpsim, a.system, sets)
            # timed + warm-up + class-cost (3 classes x (iters + warmup)) cycles; instrumented passes ~2.5x a cycle
            gpu_s = SETUP_S + cyc / 1e3 * ((ITERS + WARMUP) * 4 + INSTRUMENTED * 2.5)
            total += gpu_s
            print(f"{name:22s} {cyc:14.2f} {gpu_s:6.1f}")
        print(f"{'total':22s} {'':14s} {total:6.1f}")
        return 0
    for name, sets, why in CASES:
        print(f"{name:22s} {' '.join(sets) or '-':90s} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

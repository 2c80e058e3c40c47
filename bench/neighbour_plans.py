#!/usr/bin/env python3
"""Plans that measure what a kernel costs after a kernel of another kind, for the held-out set's "other" class.

`vpsim run --class-cost` leaves a class's ops out of the cycle: the three class costs of a replay add
up to more than its cycle (0.2-0.3 ms of 6.7 at the default, 2026-12-02 session 18), as if changing
from one kind of kernel to another cost time that both classes' costs then count. The probe times like
ops back to back, which holds no such change. These plans measure the change directly, on the replay's
own kernels and shapes: for a pair of op names (A, B) of the default scenario's verify phase, with n ops
of each (one a layer),

    plan A      the n A ops alone, back to back          T_A
    plan B      the n B ops alone                        T_B
    plan AB     A_1 B_1 A_2 B_2 ... (2n - 1 changes)    T_AB
    plan one    one B op alone                           T_1  (the cycle's fixed cost: launch, timers)

With L the cycle's fixed cost (launch, timers) and a, b each op's time after one of its own kind (gap
included), T_A = L + n a, T_B = L + n b, and if a change of kind costs c more than no change,
T_AB = L + n a + n b + (2n - 1) c. So

    L = T_1 - (T_B - T_1) / (n - 1)        c = (T_AB - T_A - T_B + L) / (2n - 1)

c is the mean over both directions (A after B, B after A) of what a kernel costs more after the other
kind than after its own: the quantity like-op probing cannot see. Nothing is fitted: every T is the
median of a replay's timed cycles, and `read` gives c per pair with the spread it inherits from the
p10-p90 of the four runs.

usage: bench/neighbour_plans.py make PLAN_JSON OUTDIR   (PLAN_JSON: vpsim plan configs/default.yaml --format json)
       replay each: vpsim run configs/default.yaml --set speculative.algorithm=none --plan P --out P.result.json
       bench/neighbour_plans.py read OUTDIR              (OUTDIR/<plan>.result.json from vpsim run --plan)
"""
import copy
import json
import os

import plans_cli

# (A, B): B is the op the plan runs right after A; the last pair has no GEMM in it.
PAIRS = [("o_proj", "post_attention_layernorm"), ("fused_qkv_a_proj", "q_a_layernorm"),
         ("moe.w13", "moe.silu_mul"), ("mla_attention", "w_vc"), ("q_a_layernorm", "rope")]


def make(plan_path, out):
    plan = json.load(open(plan_path))
    os.makedirs(out, exist_ok=True)
    verify = [ph for ph in plan["phases"] if ph["name"] == "verify"][0]
    main_ops = [o for o in verify["ops"] if o.get("stream", "main") == "main"]

    def write(name, ops):
        p = copy.deepcopy(plan)
        ph = copy.deepcopy(verify)
        ph["ops"] = ops
        ph.pop("summary", None)
        ph["name"] = ph["kind"] = "decode"  # one phase of its own: a plan without draft phases is a decode
        p["phases"] = [ph]
        p["scenario"] = f"neighbour probe {name}"
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            json.dump(p, f, indent=1)

    for a, b in PAIRS:
        ops_a = [o for o in main_ops if o["name"] == a]
        ops_b = [o for o in main_ops if o["name"] == b]
        n = min(len(ops_a), len(ops_b))
        tag = f"{a}+{b}".replace(".", "_")
        write(f"{tag}.A", ops_a[:n])
        write(f"{tag}.B", ops_b[:n])
        write(f"{tag}.AB", [o for pair in zip(ops_a[:n], ops_b[:n]) for o in pair])
        write(f"{tag}.one", ops_b[n - 1:n])  # the last layer's: the plan keeps the model's layer count
        print(f"{tag} {n}")


def read(out):
    def cyc(tag, part, key="cycle_median_ms"):
        with open(os.path.join(out, f"{tag}.{part}.result.json")) as f:
            return json.load(f)["measured"][key] * 1e3

    print("| pair (A, B) | n | T_A us | T_B us | T_AB us | T_1 us | change c us (p10..p90 bound) |")
    print("|---|---|---|---|---|---|---|")
    for a, b in PAIRS:
        tag = f"{a}+{b}".replace(".", "_")
        with open(os.path.join(out, f"{tag}.B.json")) as f:
            n = len(json.load(f)["phases"][0]["ops"])

        def c_of(key_ab, key_ab_other):
            t = {p: cyc(tag, p, key_ab if p == "AB" else key_ab_other) for p in ("A", "B", "AB", "one")}
            lat = t["one"] - (t["B"] - t["one"]) / (n - 1)
            return (t["AB"] - t["A"] - t["B"] + lat) / (2 * n - 1), t

        c, t = c_of("cycle_median_ms", "cycle_median_ms")
        lo, _ = c_of("cycle_p10_ms", "cycle_p90_ms")
        hi, _ = c_of("cycle_p90_ms", "cycle_p10_ms")
        print(f"| {a}, {b} | {n} | {t['A']:.1f} | {t['B']:.1f} | {t['AB']:.1f} | {t['one']:.2f} | "
              f"{c:+.3f} ({lo:+.3f}..{hi:+.3f}) |")


if __name__ == "__main__":
    plans_cli.run(make, read, __doc__)

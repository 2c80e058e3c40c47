#!/usr/bin/env python3
"""A real PyTorch profiler trace of a verify-pass-shaped cycle, for `vpsim import-trace`.

Runs one rank's share of a vpsim plan (``vpsim plan configs/default.yaml --format json``: the draft step,
the verify pass, the draft-extend at TP=8's per-rank shapes) in bf16 on one GPU, once with eager launches
and once as CUDA graphs (one graph per phase, as SGLang captures its draft, verify and extend), under
torch.profiler, and writes the Chrome traces (gzip) that SGLang's and vLLM's profiler hooks would write.

What is real and what stands in:
- GEMMs are torch.nn.functional.linear / bmm at the plan's shapes, each op with its own weights (so they
  stream from HBM as a server's do); an INT4 weight is a bf16 weight of the same bytes (the output width
  scaled, as `vpsim run` replays it); routed experts are one bmm over the touched experts.
- attention is scaled_dot_product_attention over a KV cache of the plan's length (MLA: one shared latent
  head, GQA by expanding it), RMSNorm torch's rms_norm, SiLU-and-multiply and the rest torch element-wise
  ops, the embedding F.embedding over the vocab shard.
- a single GPU has no NCCL and no peers: each allreduce is a ``torch.cuda._sleep`` spin kernel of
  ``--allreduce-cycles`` GPU clocks (its kernel is named spin_kernel) at the point of the collective, and
  the logits all-gather a device-to-device copy of its gathered bytes ("Memcpy DtoD"). The import maps
  them through ``traces/samples/trace-fixture-kernels.yaml``; their duration says nothing about a wire.
- phases are marked with record_function("vpsim:<phase>"), the markers configs/trace-kernels.yaml names.

    build/vpsim plan configs/default.yaml --format json --out plan.json
    python3 bench/trace_fixture.py --plan plan.json --out-dir out/   # -> out/fixture-{eager,graph}.json.gz
    python3 bench/trace_fixture.py --retrim out/fixture-eager.json.gz fixture.json.gz   # no GPU: trim again

About 10-20 s of GPU time on an H200 (weights 9.2 GiB, 2 warm-up and --cycles profiled cycles per mode).
"""
import argparse
import gzip
import json
import os
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", help="vpsim plan JSON (vpsim plan SCENARIO --format json)")
    ap.add_argument("--out-dir")
    ap.add_argument("--cycles", type=int, default=4, help="profiled cycles per mode (the import needs 3+)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--allreduce-cycles", type=int, default=20000, help="GPU clocks of each allreduce's stand-in")
    ap.add_argument("--host-us", type=float, default=500.0, help="host pause between cycles (the scheduler's)")
    ap.add_argument("--modes", default="eager,graph")
    ap.add_argument("--no-trim", action="store_true", help="keep every event (CPU ops too): larger files")
    ap.add_argument("--retrim", nargs=2, metavar=("IN", "OUT"),
                    help="no GPU: trim an existing trace (gzip or not) as this program now trims, and exit")
    return ap.parse_args()


def main():
    args = parse()
    if args.retrim:
        names = trim(args.retrim[0], args.retrim[1])
        print("%s: %d kernel names" % (args.retrim[1], len(names)), file=sys.stderr)
        return 0
    if not args.plan or not args.out_dir:
        print("trace_fixture.py: --plan and --out-dir are needed (or --retrim IN OUT)", file=sys.stderr)
        return 2
    import torch
    import torch.nn.functional as F

    dev = torch.device("cuda:0")
    bf = torch.bfloat16
    torch.manual_seed(0)
    with open(args.plan) as f:
        plan = json.load(f)
    side = torch.cuda.Stream()
    t_setup = time.time()

    def make(op):
        """A closure that runs one op; its tensors allocated once here."""
        kind, m = op["kind"], op.get("m", 1)
        if kind == "gemm":
            b, n, k = op.get("batch", 1), op["n"], op["k"]
            n_eff = max(1, round(op["weight_bytes"] / (2 * k * b)))
            if b > 1:
                x, w = torch.randn(b, m, k, device=dev, dtype=bf), torch.randn(b, k, n_eff, device=dev, dtype=bf)
                return lambda: torch.bmm(x, w)
            x, w = torch.randn(m, k, device=dev, dtype=bf), torch.randn(n_eff, k, device=dev, dtype=bf)
            return lambda: F.linear(x, w)
        if kind == "grouped_gemm":
            e, n, k = op["batch"], op["n"], op["k"]
            rows = max(1, m // e)
            n_eff = max(1, round(op["weight_bytes"] / (2 * k * e)))
            x, w = torch.randn(e, rows, k, device=dev, dtype=bf), torch.randn(e, k, n_eff, device=dev, dtype=bf)
            return lambda: torch.bmm(x, w)
        if kind == "attention":
            b, q, h, kvh = op["batch"], op["q_len"], op["heads"], op["kv_heads"]
            kv, dq, dv = op["kv_len"], op["qk_dim"], op["v_dim"]
            heads_kv = 1 if op.get("kv_shared") else kvh
            qt = torch.randn(b, h, q, dq, device=dev, dtype=bf)
            kt = torch.randn(b, heads_kv, kv, dq, device=dev, dtype=bf)
            vt = torch.randn(b, heads_kv, kv, dv, device=dev, dtype=bf) if not op.get("kv_shared") else kt[..., :dv]
            ke, ve = kt.expand(b, h, kv, dq), vt.expand(b, h, kv, dv)
            return lambda: F.scaled_dot_product_attention(qt, ke, ve)
        if kind == "norm":
            n = op["n"]
            x, w = torch.randn(m, n, device=dev, dtype=bf), torch.randn(n, device=dev, dtype=bf)
            return lambda: F.rms_norm(x, (n,), w)
        if kind == "elementwise":
            n = op["n"]
            a, c = torch.randn(m, n, device=dev, dtype=bf), torch.randn(m, n, device=dev, dtype=bf)
            if "silu" in op["name"]:
                return lambda: F.silu(a) * c
            return lambda: a.add_(c)
        if kind == "embedding":
            table = torch.randn(op["k"], op["n"], device=dev, dtype=bf)
            ids = torch.randint(0, op["k"], (m,), device=dev)
            return lambda: F.embedding(ids, table)
        if kind == "allgather":
            n = max(1, op["bytes_written"] // 2)
            src, dst = torch.randn(n, device=dev, dtype=bf), torch.empty(n, device=dev, dtype=bf)
            return lambda: dst.copy_(src)
        # allreduce, reduce_scatter, alltoall: the spin kernel stands in for the collective
        cycles = args.allreduce_cycles
        return lambda: torch.cuda._sleep(cycles)

    phases = []
    for ph in plan["phases"]:
        ops = [(op.get("stream", "main"), op["kind"], make(op)) for op in ph["ops"]]
        phases.append((ph["name"], ops))
    torch.cuda.synchronize()
    print("setup: %.1f s, %.2f GiB allocated" % (time.time() - t_setup, torch.cuda.memory_allocated() / 2**30),
          file=sys.stderr)

    def run_phase(ops):
        main = torch.cuda.current_stream()
        on_side = False
        for stream, kind, fn in ops:
            if stream == "side":
                if not on_side:
                    side.wait_stream(main)
                    on_side = True
                with torch.cuda.stream(side):
                    fn()
                continue
            if on_side and kind in ("allreduce", "allgather", "reduce_scatter", "alltoall"):
                main.wait_stream(side)  # the side stream joins before the next collective
                on_side = False
            fn()
        if on_side:
            main.wait_stream(side)

    graphs = {}

    def cycle(mode):
        for name, ops in phases:
            with torch.profiler.record_function("vpsim:" + name):
                if mode == "graph":
                    graphs[name].replay()
                else:
                    run_phase(ops)
        torch.cuda.synchronize()
        time.sleep(args.host_us / 1e6)

    os.makedirs(args.out_dir, exist_ok=True)
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
            "plan": args.plan, "cycles": args.cycles, "allreduce_cycles": args.allreduce_cycles,
            "date": time.strftime("%Y-%m-%d", time.gmtime()), "modes": {}}
    for mode in args.modes.split(","):
        t0 = time.time()
        if mode == "graph":
            for name, ops in phases:
                run_phase(ops)  # warm the kernels (cuBLAS picks its algorithms) before capture
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    run_phase(ops)
                graphs[name] = g
        for _ in range(args.warmup):
            cycle(mode)
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            start = time.time()
            for _ in range(args.cycles):
                cycle(mode)
            wall = (time.time() - start) / args.cycles
        raw = os.path.join(args.out_dir, "fixture-%s.raw.json" % mode)
        prof.export_chrome_trace(raw)
        out = os.path.join(args.out_dir, "fixture-%s.json.gz" % mode)
        names = trim(raw, out, keep_all=args.no_trim)
        os.remove(raw)
        info["modes"][mode] = {"file": os.path.basename(out), "wall_ms_per_cycle": round(wall * 1e3, 3),
                               "seconds": round(time.time() - t0, 1), "kernel_names": len(names)}
        with open(os.path.join(args.out_dir, "kernel-names-%s.txt" % mode), "w") as f:
            f.write("\n".join(sorted(names)) + "\n")
        print("%s: %.3f ms per cycle (host wall), %s" % (mode, wall * 1e3, out), file=sys.stderr)
    with open(os.path.join(args.out_dir, "fixture-info.json"), "w") as f:
        json.dump(info, f, indent=1)
    return 0


KEEP_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "user_annotation",
             "gpu_user_annotation"}
KEEP_ARGS = {"device", "stream", "correlation"}
# Runtime calls that start GPU work: the import joins a kernel to its launch by correlation id. Others
# carry an id too (cudaStreamIsCapturing, cudaEventRecordWithFlags, cudaStreamWaitEvent, cudaFuncSetAttribute:
# a sixth of an eager trace's events) and start nothing.
GPU_WORK_CALLS = ("Launch", "Memcpy", "Memset")


def trim(raw, out, keep_all=False):
    """The trace with what the import reads: GPU activities, launches, annotations, their ids."""
    with (gzip.open(raw, "rt") if raw.endswith(".gz") else open(raw)) as f:
        doc = json.load(f)
    names = set()
    events = []
    for ev in doc.get("traceEvents", []):
        cat = ev.get("cat", "")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            names.add(ev.get("name", ""))
        if not keep_all:
            if ev.get("ph") == "M":
                events.append(ev)
                continue
            if cat not in KEEP_CATS:
                continue
            if cat in ("cuda_runtime", "cuda_driver") and ("correlation" not in ev.get("args", {}) or
                                                          not any(w in ev.get("name", "") for w in GPU_WORK_CALLS)):
                continue
            ev = dict(ev, args={k: v for k, v in ev.get("args", {}).items() if k in KEEP_ARGS})
        events.append(ev)
    doc["traceEvents"] = events
    # mtime 0: the same trace gives the same bytes
    with open(out, "wb") as raw_out, gzip.GzipFile(fileobj=raw_out, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())
    return names


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Hand-made server traces whose figures are known: one PyTorch-profiler-shaped Chrome trace per rank.

The kernels are a vpsim plan's ops (``vpsim plan SCENARIO --format json``), one kernel per op, named as
the libraries a server runs name theirs (cuBLAS nvjet, fused_moe Triton, FlashInfer, NCCL, PyTorch
element-wise), with durations from a fixed law, so that ``vpsim import-trace`` can be tested against
figures set here: the arrival skew of every allreduce (``--skew``: the last rank arrives that many us
after the first; each call's order of ranks shuffled), the wire time (``--wire``), the idle gap between
kernels (``--gap``), the host's time between cycles (``--host``). Each rank's late arrival is a stall
before the kernel that precedes the collective, as a rank's host that falls behind makes it.

Not a measurement: a test fixture. The kernel-time law is ``t = 2 us + bytes / 1.5e6 B/us`` (1.5 TB/s).

    python3 scripts/make_trace.py --plan plan.json --ranks 8 --skew 150 --out-dir /tmp/t
"""
import argparse
import gzip
import json
import os
import random
import sys

NAMES = {
    "gemm": "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NTN",
    "grouped_gemm": "fused_moe_kernel",
    "attention": "void flashinfer::BatchDecodeWithPagedKVCacheKernel<128u, 576u>(flashinfer::Params)",
    "norm": "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, float)",
    "elementwise": "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
                   "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
    "embedding": "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, "
                 "2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>)",
    "allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "allgather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}
UNMAPPED = "my_server_private_kernel_v2"  # a kernel no shipped pattern names: reported, not dropped


def op_us(op):
    return 2.0 + (op.get("bytes_read", 0) + op.get("bytes_written", 0)) / 1.5e6


def build(plan, args):
    """Events of every rank: {rank: [event, ...]} on one shared clock (microseconds)."""
    rng = random.Random(args.seed)
    n = args.ranks
    events = {r: [] for r in range(n)}
    corr = [1000] * n
    stream = {"main": 7, "side": 8}
    t = [100.0] * n  # each rank's GPU clock position
    spread = [args.skew * r / (n - 1) if n > 1 else 0.0 for r in range(n)]

    def kernel(r, name, ts, dur, strm, launch_ts):
        corr[r] += 1
        events[r].append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": strm, "ts": round(ts, 3),
                          "dur": round(dur, 3), "args": {"device": 0, "stream": strm, "correlation": corr[r]}})
        if not args.graph:
            events[r].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                              "ts": round(launch_ts, 3), "dur": 3.0, "args": {"correlation": corr[r]}})

    n_elem = 0
    gpu_ranges = {r: [] for r in range(n)}
    for cycle in range(args.cycles):
        for r in range(n):
            t[r] += args.host
        for phase in plan["phases"]:
            if args.graph:
                for r in range(n):
                    corr[r] += 1
            starts = list(t)
            first_ev = [len(events[r]) for r in range(n)]
            if args.markers:
                for r in range(n):
                    events[r].append({"ph": "X", "cat": "user_annotation", "name": "vpsim:" + phase["name"],
                                      "pid": 1, "tid": 1, "ts": round(t[r] - 10, 3), "dur": 0.0})
            ops = phase["ops"]
            for i, op in enumerate(ops):
                kind = op["kind"]
                if kind in ("allreduce", "allgather"):
                    order = list(range(n))
                    rng.shuffle(order)
                    arrive = [t[r] + (spread[order[r]] if kind == "allreduce" else 0.0) for r in range(n)]
                    end = max(arrive) + args.wire
                    for r in range(n):
                        # the ranks leave together, each within a microsecond of the others
                        e = end + rng.uniform(0, args.end_jitter)
                        kernel(r, NAMES[kind], arrive[r], e - arrive[r], stream["main"], arrive[r] - 5)
                        t[r] = e + args.gap
                    continue
                dur = op_us(op)
                if op.get("stream") == "side":
                    for r in range(n):
                        kernel(r, NAMES[kind], t[r], dur, stream["side"], t[r] - 5)
                    continue
                for r in range(n):
                    kernel(r, NAMES[kind], t[r], dur, stream["main"], t[r] - 5)
                    t[r] += dur + args.gap
                n_elem += kind == "elementwise"
                if args.unmapped and kind == "elementwise" and n_elem % 3 == 0:
                    for r in range(n):
                        kernel(r, UNMAPPED, t[r], args.unmapped, stream["main"], t[r] - 5)
                        t[r] += args.unmapped + args.gap
            if args.graph:
                for r in range(n):
                    # one cudaGraphLaunch per phase; every kernel of the phase carries its correlation id
                    events[r].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1,
                                      "tid": 1, "ts": round(starts[r] - 8, 3), "dur": 6.0,
                                      "args": {"correlation": corr[r]}})
            if args.gpu_annotations:
                for r in range(n):
                    phase_gpu_ranges(events[r], first_ev[r], gpu_ranges[r], "vpsim:" + phase["name"])
        if args.markers:
            for r in range(n):
                for ev in events[r]:
                    if ev.get("cat") == "user_annotation" and ev["dur"] == 0.0:
                        ev["dur"] = round(t[r] - ev["ts"], 3)
    for r in range(n):
        # kineto writes its GPU projections of the CPU ranges apart from them: here all before the first
        events[r][:0] = gpu_ranges[r]
    if args.cut_end:
        for r in range(n):
            # the profiler stopped before the last kernels ran: their launches are in the trace, they are not
            kern = sorted((ev for ev in events[r] if ev["cat"] == "kernel"), key=lambda e: e["ts"])
            gone = {id(ev) for ev in kern[-args.cut_end:]}
            events[r] = [ev for ev in events[r] if id(ev) not in gone]
    if args.graph:
        # in a graph every kernel of a phase shares its launch's correlation id
        for r in range(n):
            launch_ts = sorted((ev["ts"], ev["args"]["correlation"]) for ev in events[r] if ev["cat"] == "cuda_runtime")
            kern = [ev for ev in events[r] if ev["cat"] == "kernel"]
            j = 0
            for ev in sorted(kern, key=lambda e: e["ts"]):
                while j + 1 < len(launch_ts) and launch_ts[j + 1][0] < ev["ts"]:
                    j += 1
                ev["args"]["correlation"] = launch_ts[j][1]
    return events


def phase_gpu_ranges(evs, first, out, name):
    """What kineto adds to a phase's CPU range: one gpu_user_annotation per stream its kernels ran on, from
    the first to the last of them, on that stream's row (tid); and the CPU range ends when the host's last
    launch returns, long before the GPU is done in a graph (so the two kinds of range differ in span)."""
    kern = [ev for ev in evs[first:] if ev["cat"] == "kernel"]
    for strm in sorted({ev["tid"] for ev in kern}):
        ks = [ev for ev in kern if ev["tid"] == strm]
        end = max(ev["ts"] + ev["dur"] for ev in ks)
        out.append({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": strm,
                    "ts": ks[0]["ts"], "dur": round(end - ks[0]["ts"], 3)})
    cpu = [ev for ev in evs[first:] if ev["cat"] == "user_annotation"]
    launches = [ev for ev in evs[first:] if ev["cat"] == "cuda_runtime"]
    if cpu and launches:
        cpu[0]["dur"] = round(max(ev["ts"] + ev["dur"] for ev in launches) + 1 - cpu[0]["ts"], 3)


def write(events, args):
    os.makedirs(args.out_dir, exist_ok=True)
    paths = []
    base = 1764547200000000000  # 2025-12-01T00:00:00Z in ns: kineto's files count ts from such a base
    for r, evs in events.items():
        # each rank's profiler started a little later than rank 0's: its ts count from its own base
        shift_ns = 0 if args.no_base else r * 1234567
        out = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": args.ranks},
               "traceEvents": [dict(e, ts=round(e["ts"] - shift_ns / 1000.0, 3)) for e in evs]}
        out["traceEvents"].insert(0, {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "GPU 0"}})
        if not args.no_base:
            out["baseTimeNanoseconds"] = base + shift_ns
        name = os.path.join(args.out_dir, "rank%d.json" % r + (".gz" if args.gzip else ""))
        text = json.dumps(out, indent=1)
        if args.gzip:
            with gzip.open(name, "wt") as f:
                f.write(text)
        else:
            with open(name, "w") as f:
                f.write(text)
        paths.append(name)
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", required=True, help="a vpsim plan JSON (vpsim plan SCENARIO --format json)")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=4)
    ap.add_argument("--skew", type=float, default=150.0, help="arrival spread of every allreduce, us")
    ap.add_argument("--wire", type=float, default=40.0, help="wire time of every collective, us")
    ap.add_argument("--end-jitter", type=float, default=1.0, help="how far apart the ranks leave a call, us")
    ap.add_argument("--gap", type=float, default=1.0, help="idle between kernels, us")
    ap.add_argument("--host", type=float, default=800.0, help="idle between cycles, us")
    ap.add_argument("--unmapped", type=float, default=0.0, help="us of an unnamed kernel after every 3rd element-wise op")
    ap.add_argument("--graph", action="store_true", help="one cudaGraphLaunch per phase (else eager launches)")
    ap.add_argument("--markers", action="store_true", help="vpsim:<phase> annotations around each phase")
    ap.add_argument("--gpu-annotations", action="store_true",
                    help="kineto's gpu_user_annotation projections (one per stream and phase, "
                         "written before the CPU ranges; with --markers the CPU ranges end at the host's last launch; alone, a trace of GPU ranges only")
    ap.add_argument("--cut-end", type=int, default=0, help="drop the last N kernels, not their launches (the trace's "
                                                           "end cut the last phase)")
    ap.add_argument("--no-base", action="store_true", help="no baseTimeNanoseconds (absolute ts)")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args(argv)
    with open(args.plan) as f:
        plan = json.load(f)
    for p in write(build(plan, args), args):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

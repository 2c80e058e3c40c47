#!/usr/bin/python3
"""Plots from vpsim outputs: cycle breakdown, allreduce latency, sweeps, model against measurement.

Each subcommand writes PREFIX.png and PREFIX.svg and prints their paths. A malformed input stops it
with one line naming the file and what is wrong, and exit status 2.

Run with Debian's Python (/usr/bin/python3, which has python3-matplotlib and python3-numpy).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vpsim_draw as draw  # noqa: E402
import vpsim_extract as ex  # noqa: E402
from vpsim_inputs import InputError, load_bench, load_plan, load_results, load_sweep  # noqa: E402
from vpsim_provenance import describe, read_readme  # noqa: E402

EXAMPLES = """examples:
  analysis/vpsim_plot.py breakdown traces/samples/model-default-rtx6000.results.json --out build/plots/breakdown
  analysis/vpsim_plot.py allreduce traces/samples/bench-allreduce-h200-np1.json \\
      --plan traces/samples/default.plan.json --out build/plots/allreduce
  analysis/vpsim_plot.py sweep traces/samples/sweep-context.csv --out build/plots/context
  analysis/vpsim_plot.py compare traces/samples/h200-none-graph.results.json \\
      --model traces/samples/model-default-h200-none-ops.results.json \\
      --plan traces/samples/default.plan.json --out build/plots/compare
"""


def _results(path):
    doc = load_results(path)
    doc["_path"] = path
    return doc


def _readme(args, first):
    return read_readme(args.readme if args.readme else os.path.dirname(os.path.abspath(first)))


def cmd_breakdown(args):
    docs = [(p, _results(p)) for p in args.files]
    readme = _readme(args, args.files[0])
    bars = ex.breakdown_bars(docs)
    foot = [describe("results", p, d, readme) for p, d in docs]
    return draw.draw_breakdown(bars, args.out, foot, args.title)


def cmd_allreduce(args):
    benches = [load_bench(p) for p in args.files]
    plans = [load_plan(p) for p in args.plan]
    readme = _readme(args, args.files[0])
    data = ex.allreduce_series(benches, plans)
    foot = [describe("bench", b["path"], b, readme) for b in benches]
    foot += [describe("plan", p, None, readme) for p in args.plan]
    return draw.draw_allreduce(data, args.out, foot, args.title)


def cmd_sweep(args):
    sweep = load_sweep(args.file)
    sw = ex.sweep_series(sweep, args.x, args.y)
    foot = [describe("sweep", args.file, sweep, _readme(args, args.file))]
    ylabel = "throughput (tok/s, one request)" if args.y == "tok_per_s" else args.y
    return draw.draw_sweep(sw, args.out, foot, args.title, ylabel)


def cmd_compare(args):
    run = _results(args.run)
    if run["mode"] != "run":
        raise InputError(args.run, "compare needs a measured run (mode \"run\"), this is a model")
    readme = _readme(args, args.run)
    classes = ex.compare_classes(run)
    kinds = None
    foot = [describe("results", args.run, run, readme)]
    if args.model:
        model = _results(args.model)
        plan = load_plan(args.plan) if args.plan else None
        kinds = ex.compare_op_kinds(run, model, plan)
        foot.append(describe("results", args.model, model, readme))
    system = run["model_comparison"]["system"]
    foot.append(ex.instrumentation_note(run))
    foot.append(f"Per-class model figures: vpsim run's own comparison against system {system} "
                "(compute only; collectives excluded on both sides).")
    return draw.draw_compare(classes, kinds, args.out, foot, args.title, system)


def build_parser():
    p = argparse.ArgumentParser(description=__doc__, epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def common(sp):
        sp.add_argument("--out", required=True, metavar="PREFIX", help="write PREFIX.png and PREFIX.svg")
        sp.add_argument("--title", help="figure title (default: one describing the plot)")
        sp.add_argument("--readme", metavar="DIR",
                        help="folder whose README.md describes the inputs (default: the first input's folder)")

    sp = sub.add_parser("breakdown", help="stacked bar of the cycle per backend (vpsim.results/1 files)")
    sp.add_argument("files", nargs="+", metavar="RESULTS.json")
    common(sp)
    sp.set_defaults(func=cmd_breakdown)

    sp = sub.add_parser("allreduce", help="allreduce latency against size (vpsim.bench_allreduce/1 files)")
    sp.add_argument("files", nargs="+", metavar="BENCH.json")
    sp.add_argument("--plan", action="append", default=[], metavar="PLAN.json",
                    help="a vpsim.plan/1 file whose verify-pass payloads to mark (repeatable)")
    common(sp)
    sp.set_defaults(func=cmd_allreduce)

    sp = sub.add_parser("sweep", help="tok/s against a varied key, per backend (vpsim sweep CSV)")
    sp.add_argument("file", metavar="SWEEP.csv")
    sp.add_argument("--x", help="varied key on the x axis (default: the last one that changes)")
    sp.add_argument("--y", default="tok_per_s", help="numeric column on the y axis (default tok_per_s)")
    common(sp)
    sp.set_defaults(func=cmd_sweep)

    sp = sub.add_parser("compare", help="model against measured per op class, with the error")
    sp.add_argument("run", metavar="RUN.json", help="`vpsim run --out` results (with model_comparison)")
    sp.add_argument("--model", metavar="MODEL.json",
                    help="`vpsim model --ops --format json` of the same scenario: adds a per-op-kind panel")
    sp.add_argument("--plan", metavar="PLAN.json", help="vpsim.plan/1 of the scenario: keeps main-stream ops only")
    common(sp)
    sp.set_defaults(func=cmd_compare)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        paths = args.func(args)
    except InputError as e:
        print(f"vpsim_plot: error: {e}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Drawing: turns the data from vpsim_extract into PNG + SVG figures. No numbers are computed here.

Every figure has a title, axes with units, a legend and a footnote with the provenance of each input
(measured where/when, or modelled on which system), as DESIGN.md asks of any reported figure.
"""

import os
import textwrap

import matplotlib

matplotlib.use("Agg")  # headless: CI and the GPU machine have no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from vpsim_extract import SEGMENTS, method_changes  # noqa: E402

SEGMENT_COLORS = {"draft": "#9467bd", "verify GEMM": "#1f77b4", "verify attention": "#17becf",
                  "verify other compute": "#7f7f7f", "verify communication": "#d62728", "host": "#bcbd22"}
# One colour per backend across every figure, so nccl is the same red in the sweep and the latency plot.
BACKEND_COLORS = {"nccl": "#d62728", "nccl-symm": "#ff9896", "oneshot": "#1f77b4", "twoshot": "#2ca02c",
                  "push": "#9467bd", "mpi": "#8c564b", "none": "#7f7f7f", "model": "#e377c2"}
FOOT_WIDTH = 150


def backend_color(label, i):
    return BACKEND_COLORS.get(label.split(" ")[0], f"C{i % 10}")


SERIES_STYLES = ("-", "--", "-.", ":")
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def series_styles(series):
    """(colour, line style, marker) per series: a backend keeps its colour family across figures, and its
    series (one per value of another varied key) differ in shade, dash and marker, so no line hides
    another of the same backend."""
    by_backend = {}
    for s in series:
        by_backend.setdefault(s["backend"], []).append(s["label"])
    out = []
    for i, s in enumerate(series):
        peers = by_backend[s["backend"]]
        k = peers.index(s["label"])
        base = to_rgb(backend_color(s["label"], i))
        # Shades from darker to lighter around the backend's colour when it has several series.
        t = 0.0 if len(peers) == 1 else -0.45 + 0.9 * k / (len(peers) - 1)
        shade = tuple(c * (1 + t) if t < 0 else c + (1 - c) * t for c in base)
        out.append((shade, SERIES_STYLES[k % len(SERIES_STYLES)], SERIES_MARKERS[k % len(SERIES_MARKERS)]))
    return out


def fmt_bytes(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            v = n / div
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def _footnote(fig, lines):
    """Provenance under the axes; returns the height it needs in inches so the caller can make room."""
    wrapped = []
    for line in lines:
        wrapped.extend(textwrap.wrap(line, FOOT_WIDTH, subsequent_indent="    ") or [""])
    fig.text(0.01, 0.01, "\n".join(wrapped), ha="left", va="bottom", fontsize=7, color="#333333",
             family="DejaVu Sans")
    return 0.13 * len(wrapped) + 0.15


def _save(fig, out_prefix, foot_in):
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + foot_in)
    fig.tight_layout(rect=(0, foot_in / (h + foot_in), 1, 1))
    os.makedirs(os.path.dirname(out_prefix) or ".", exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        p = f"{out_prefix}.{ext}"
        fig.savefig(p, dpi=120 if ext == "png" else None)
        paths.append(p)
    plt.close(fig)
    return paths


def draw_breakdown(bars, out_prefix, footnote, title=None):
    """Stacked bar per backend (bars from vpsim_extract.breakdown_bars), grouped by source."""
    n = len(bars)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.25 * n + 4.0), 5.6))
    xs, x, groups, last = [], 0.0, [], None
    for b in bars:
        if last is not None and b["group"] != last:
            x += 0.6  # a gap between sources
        if b["group"] != last:
            groups.append([b["group"], x, x])
        groups[-1][2] = x
        xs.append(x)
        last = b["group"]
        x += 1.0
    bottoms = [0.0] * n
    for seg in SEGMENTS:
        vals = [b["segments"][seg] for b in bars]
        ax.bar(xs, vals, 0.7, bottom=bottoms, color=SEGMENT_COLORS[seg], label=seg, edgecolor="white", lw=0.5)
        bottoms = [bt + v for bt, v in zip(bottoms, vals)]
    top = max(max(bottoms), max(b["cycle_ms"] for b in bars))
    any_measured = False
    for xi, b, total in zip(xs, bars, bottoms):
        if b["measured"]:
            any_measured = True
            ax.plot([xi - 0.42, xi + 0.42], [b["cycle_ms"]] * 2, color="black", lw=2.2)
            ax.text(xi, max(total, b["cycle_ms"]) + top * 0.015,
                    f"cycle {b['cycle_ms']:.2f} ms\n(ops sum {b['ops_sum_ms']:.1f})\n{b['tok_per_s']:.0f} tok/s",
                    ha="center", va="bottom", fontsize=7.5)
        else:
            ax.text(xi, total + top * 0.015, f"{b['cycle_ms']:.2f} ms\n{b['tok_per_s']:.0f} tok/s",
                    ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(xs)
    ticks = [textwrap.fill(b["label"], 18) for b in bars]
    ax.set_xticklabels(ticks, fontsize=8)
    drop = 12 + 10.5 * max(t.count("\n") + 1 for t in ticks)  # below the tallest tick label, in points
    for name, x0, x1 in groups:
        ax.annotate(textwrap.fill(name, 28 + int(12 * (x1 - x0))), xy=((x0 + x1) / 2, 0),
                    xycoords=("data", "axes fraction"), xytext=(0, -drop), textcoords="offset points",
                    ha="center", va="top", fontsize=8.5, fontweight="bold")
    ax.set_ylim(0, top * 1.22)
    ax.set_ylabel("time per decode cycle (ms)")
    ax.set_title(title or "Where one speculative decode cycle goes, per backend")
    ax.grid(axis="y", alpha=0.3)
    handles = [Patch(color=SEGMENT_COLORS[s], label=s) for s in reversed(SEGMENTS)]
    if any_measured:
        handles.append(Line2D([], [], color="black", lw=2.2, label="measured cycle (median)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    lines = list(footnote)
    if any_measured:
        lines.append("Measured bars stack per-op times from the instrumented pass (a timer pair around each op), "
                     "which exceed the timed cycle; the black line is the timed cycle, the tok/s uses it.")
    return _save(fig, out_prefix, _footnote(fig, lines) + 0.2)


def draw_allreduce(data, out_prefix, footnote, title=None):
    """Latency against payload size per backend, log-log, the verify pass's payloads marked."""
    fig, ax = plt.subplots(figsize=(9.5, 5.6))
    modelled = False
    for i, s in enumerate(data["series"]):
        color = backend_color(s["label"], i)
        ax.plot(s["bytes"], s["time_us"], marker="o", ms=3.5, lw=1.6, label=s["label"], color=color)
        pts = [(b, m) for b, m in zip(s["bytes"], s.get("model_us", [])) if m is not None]
        if pts:
            modelled = True
            ax.plot([b for b, _ in pts], [m for _, m in pts], ls="--", lw=1.2, color=color, alpha=0.9)
        for vb in s["verify_bytes"]:
            t = s["time_us"][s["bytes"].index(vb)]
            ax.plot([vb], [t], marker="D", ms=7, mfc="none", mec="black", zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_bytes(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    for vb in data["verify_bytes"]:
        ax.axvline(vb, color="black", ls="--", lw=1)
        ax.annotate(f"verify pass\n{vb:,} B", xy=(vb, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(4, -4), textcoords="offset points", ha="left", va="top", fontsize=8)
    ax.set_xlabel("payload per rank (bytes, log scale)")
    ax.set_ylabel("time per allreduce (us, log scale)")
    title = title or "Allreduce latency against payload size, per backend"
    if data["caveats"]:
        title += "\n(" + "; ".join(data["caveats"]) + ")"
    ax.set_title(title, fontsize=11)
    ax.grid(which="both", alpha=0.25)
    handles, labels = ax.get_legend_handles_labels()
    if data["verify_bytes"]:
        handles.append(Line2D([], [], marker="D", ls="", mfc="none", mec="black", label="verify-pass payload"))
    if modelled:
        handles.append(Line2D([], [], ls="--", color="gray", label="model (same colour: same backend)"))
    ax.legend(handles=handles, loc="upper left", fontsize=8)
    lines = list(footnote)
    for label, reason in data["unsupported"]:
        lines.append(f"not run: {label}: {reason}")
    lines.append("time: per call, max over ranks (nccl-tests definition).")
    return _save(fig, out_prefix, _footnote(fig, lines))


def draw_sweep(sw, out_prefix, footnote, title=None, ylabel="throughput (tok/s, one request)"):
    """y (tok/s) against the varied key, a line per backend."""
    fig, ax = plt.subplots(figsize=(9.5, 5.4))
    any_ringed = False
    for s, (color, ls, marker) in zip(sw["series"], series_styles(sw["series"])):
        xs = s["x"] if sw["numeric"] else [sw["x_order"].index(v) for v in s["x_text"]]
        label = s["label"] + (" (no collectives: upper bound)" if s["backend"] == "none" else "")
        ax.plot(xs, s["y"], marker=marker, ms=4.5, lw=1.7, label=label, color=color, ls=ls)
        # Points whose allreduce cost is a measured table entry rather than a formula: ringed.
        ringed = [(x, y) for x, y, m in zip(xs, s["y"], s["methods"]) if m.startswith("measured")]
        if ringed:
            any_ringed = True
            ax.plot([x for x, _ in ringed], [y for _, y in ringed], ls="", marker="o", ms=10, mfc="none",
                    mec="black", mew=1.2)
    if sw["numeric"]:
        vals = sorted({v for s in sw["series"] for v in s["x"]})
        if vals[0] > 0 and vals[-1] / vals[0] >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(vals)
        ax.set_xticklabels([f"{v:g}" for v in vals])
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xticks(range(len(sw["x_order"])))
        ax.set_xticklabels(sw["x_order"])
    xl = sw["x_key"] + "".join(f" (with {k})" for k in sw["paired"])
    ax.set_xlabel(xl + (" - log scale" if ax.get_xscale() == "log" else ""))
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    what = "Throughput" if sw["y"] == "tok_per_s" else sw["y"]
    ax.set_title(title or f"{what} against {sw['x_key']}, per backend (modelled)")
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if any_ringed:
        handles.append(Line2D([], [], ls="", marker="o", ms=10, mfc="none", mec="black",
                              label="allreduce cost from a\nmeasured table point"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    lines = list(footnote)
    for label, pts in method_changes(sw).items():
        lines.append(f"{label}: the allreduce cost source changes along x, so a jump can be the source changing: "
                     + "; ".join(f"{x}: {m}" for x, m in pts if m))
    if sw["rejected"]:
        first, why = next(iter(sw["rejected"].items()))
        lines.append(f"{len(sw['rejected'])} combination(s) rejected by vpsim (no point drawn), e.g. {first}: "
                     + (why if len(why) < 160 else why[:157] + "..."))
    return _save(fig, out_prefix, _footnote(fig, lines))


def draw_compare(class_rows, kind_rows, out_prefix, footnote, title=None, system="", mismatch=()):
    """Measured against modelled time per op class (and per op kind when given), error labelled."""
    panels = [("per op class (verify pass, compute only)", [(c, m, d, e) for c, m, d, e in class_rows])]
    if kind_rows:
        panels.append(("per op kind (verify pass, main stream)", [(k, m, d, e) for k, _, m, d, e in kind_rows]))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels) + 1, 5.2), squeeze=False)
    for ax, (name, rows) in zip(axes[0], panels):
        xs = list(range(len(rows)))
        meas = [r[1] for r in rows]
        mod = [r[2] for r in rows]
        ax.bar([x - 0.2 for x in xs], meas, 0.4, label="measured", color="#1f77b4")
        ax.bar([x + 0.2 for x in xs], mod, 0.4, label=f"modelled{(' (' + system + ')') if system else ''}",
               color="#ff7f0e")
        top = max(meas + mod)
        for x, r in zip(xs, rows):
            ax.text(x, max(r[1], r[2]) + top * 0.02, f"{r[3]:+.0f}%", ha="center", va="bottom", fontsize=8.5,
                    fontweight="bold", color="#b00000" if abs(r[3]) > 25 else "#006000")
        ax.set_xticks(xs)
        ax.set_xticklabels([r[0] for r in rows], rotation=20 if len(rows) > 4 else 0, fontsize=8.5)
        ax.set_ylim(0, top * 1.3)
        ax.set_ylabel("time per verify pass (ms)")
        ax.set_title(name, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", ncol=2)
        if mismatch and name.startswith("per op kind"):
            ax.text(0.5, 0.80, "NOT LIKE FOR LIKE:\n" + "\n".join(mismatch), transform=ax.transAxes, ha="center",
                    va="top", fontsize=9, fontweight="bold", color="#b00000",
                    bbox=dict(boxstyle="round", fc="#fff0f0", ec="#b00000"))
    fig.suptitle(title or "Model against measurement (label: error = (modelled - measured) / measured)")
    return _save(fig, out_prefix, _footnote(fig, footnote))


def draw_ranking(doc, out_prefix, footnote, title=None):
    """Horizontal bars of tok/s per ranked row, best on top; the baseline outlined and labelled, rows
    that could not be modelled (does not fit, bad value) as empty grey hatched bars with their reason."""
    rows = doc["rows"]
    n = len(rows)
    fig, ax = plt.subplots(figsize=(9, 0.35 * n + 1.2))
    best = max((r["tok_per_s"] for r in rows if r["available"]), default=1.0)
    for i, r in enumerate(rows):
        y = n - 1 - i
        apart = bool(r.get("ranked_apart"))
        label = ("~ " if apart else "") + f"{r['variant']} ({r['backend']})"
        if r["available"]:
            # Ranked apart: a formula standing in for a measurement that does not apply (vpsim compare).
            ax.barh(y, r["tok_per_s"], color="#ff7f0e" if r["baseline"] else "#aec7e8" if apart else "#1f77b4",
                    edgecolor="black" if r["baseline"] else "#1f77b4" if apart else "none", linewidth=1.2,
                    hatch=".." if apart else None)
            gain = r.get("gain_pct")
            text = f"{r['tok_per_s']:.1f}" + (" (baseline)" if r["baseline"] else
                                              f" ({gain:+.0f}%)" if gain is not None else "")
            ax.text(r["tok_per_s"] + best * 0.01, y, text, va="center", fontsize=7)
        else:
            ax.barh(y, best * 0.25, color="#dddddd", hatch="///", edgecolor="#999999")
            why = r.get("reason") or "not modelled"
            ax.text(best * 0.26, y, why[:70], va="center", fontsize=7, color="#555555")
        ax.text(-best * 0.01, y, label, va="center", ha="right", fontsize=7)
    ax.set_yticks([])
    ax.set_xlim(0, best * 1.35)
    ax.set_xlabel("throughput (tok/s, one request)")
    ax.set_title(title or "Ranking of the variants (modelled)")
    ax.legend(handles=[Patch(color="#ff7f0e", label="baseline"), Patch(color="#1f77b4", label="variant"),
                       Patch(facecolor="#aec7e8", hatch="..", edgecolor="#1f77b4",
                             label="~ ranked apart: formula where the\nmeasurement does not apply"),
                       Patch(facecolor="#dddddd", hatch="///", edgecolor="#999999",
                             label="not ranked (does not fit / did not load)")], fontsize=7, loc="lower right")
    fig.subplots_adjust(left=0.35)
    return _save(fig, out_prefix, _footnote(fig, footnote))


HELDOUT_COLORS = {"gemm": SEGMENT_COLORS["verify GEMM"], "attention": SEGMENT_COLORS["verify attention"],
                  "other": SEGMENT_COLORS["verify other compute"], "cycle": "#2b2b2b"}


def draw_heldout(cases, bounds, out_prefix, footnote, title=None):
    """Error per op class and of the cycle, grouped per held-out case (cases from
    vpsim_extract.heldout_cases); the class bound is a shaded band, the cycle bound dashed lines, and a
    bar outside its own bound is outlined red with its value written beside it."""
    names = [r[0] for r in cases[0]["rows"]]
    n, k = len(cases), len(names)
    width = 0.8 / k
    fig, ax = plt.subplots(figsize=(max(8.0, 1.0 * n + 3.5), 5.4))
    cp, yp = bounds["class_pct"], bounds["cycle_pct"]
    ax.axhspan(-cp, cp, color="#2ca02c", alpha=0.10, lw=0)
    for y in (-yp, yp):
        ax.axhline(y, color="black", ls="--", lw=1.0)
    ax.axhline(0, color="black", lw=0.6)
    worst = max(abs(r[3]) for c in cases for r in c["rows"])
    for j, name in enumerate(names):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(n)]
        errs = [c["rows"][j][3] for c in cases]
        outside = [abs(c["rows"][j][3]) > c["rows"][j][4] for c in cases]
        ax.bar(xs, errs, width * 0.92, color=HELDOUT_COLORS.get(name, f"C{j}"),
               edgecolor=["#d00000" if o else "none" for o in outside], linewidth=1.4)
        for x, e, o in zip(xs, errs, outside):
            if o:
                ax.text(x, e + (1 if e >= 0 else -1) * worst * 0.02, f"{e:+.1f}", ha="center",
                        va="bottom" if e >= 0 else "top", fontsize=6.5, color="#b00000")
    ax.set_xticks(range(n))
    ax.set_xticklabels([f"{c['case']}\n{'within' if c['within'] else 'OUTSIDE'}" for c in cases], fontsize=8)
    lim = max(worst, cp, yp) * 1.18
    ax.set_ylim(-lim, lim)
    ax.set_ylabel("error = (modelled - measured) / measured (%)")
    ax.set_title(title or "Held-out scenarios: model against replay")
    ax.grid(axis="y", alpha=0.3)
    # Built here rather than from the bars: a bar's legend entry would copy its first bar's red outline.
    handles = [Patch(color=HELDOUT_COLORS.get(name, f"C{j}"), label=name) for j, name in enumerate(names)]
    handles += [Patch(color="#2ca02c", alpha=0.25, label=f"op-class bound ±{cp:g}%"),
                Line2D([], [], color="black", ls="--", lw=1.0, label=f"cycle bound ±{yp:g}%"),
                Patch(facecolor="white", edgecolor="#d00000", lw=1.4, label="outside its bound")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _save(fig, out_prefix, _footnote(fig, footnote))

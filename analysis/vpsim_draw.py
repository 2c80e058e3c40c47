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

from vpsim_extract import SEGMENTS, method_changes, ranking_bars  # noqa: E402

SEGMENT_COLORS = {"draft": "#9467bd", "verify GEMM": "#1f77b4", "verify attention": "#17becf",
                  "verify other compute": "#7f7f7f", "verify communication": "#d62728", "host": "#bcbd22"}
# One colour per backend across every figure, so nccl is the same red in the sweep and the latency plot.
BACKEND_COLORS = {"nccl": "#d62728", "nccl-symm": "#ff9896", "oneshot": "#1f77b4", "twoshot": "#2ca02c",
                  "push": "#9467bd", "mpi": "#8c564b", "none": "#7f7f7f", "model": "#e377c2"}
FOOT_WIDTH = 140  # characters of 7 pt text on a FIG_W-wide figure; narrower figures wrap sooner
# Figures are sized for a page: at most FIG_W inches wide at DPI dots per inch (996 px), so a report page
# shows them at their own size; tall rather than wide where there are many rows (horizontal bars).
FIG_W = 8.3
DPI = 120
MAX_PX = 1000


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


def _short(text, n):
    return text if len(text) <= n else text[:n - 3].rstrip() + "..."


def fmt_bytes(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            v = n / div
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def _footnote(fig, lines):
    """Provenance under the axes; returns the height it needs in inches so the caller can make room."""
    wrapped = []
    width = int(FOOT_WIDTH * fig.get_size_inches()[0] / FIG_W)
    for line in lines:
        wrapped.extend(textwrap.wrap(line, width, subsequent_indent="    ") or [""])
    fig.text(0.01, 0.01, "\n".join(wrapped), ha="left", va="bottom", fontsize=7, color="#333333",
             family="DejaVu Sans")
    return 0.13 * len(wrapped) + 0.15


def legend_clear(fig, leg, name=""):
    """Refuse a figure whose legend overlaps an axes (its data area, tick labels included)."""
    fig.canvas.draw()
    lb = leg.get_window_extent()
    for ax in fig.axes:
        ab = ax.get_tightbbox(fig.canvas.get_renderer())
        if lb.overlaps(ab):
            raise ValueError(f"figure {name}: the legend overlaps the axes '{ax.get_title()}'")


def _save(fig, out_prefix, foot_in, legend=None):
    """Write PNG and SVG. legend=(handles, ncol) puts one figure legend under the axes, above the
    footnote, in room of its own (measured after drawing), so it covers no data."""
    w, h = fig.get_size_inches()
    if w > FIG_W + 1e-6:
        raise ValueError(f"figure {out_prefix}: {w:.2f} in wide, more than FIG_W = {FIG_W} in")
    leg_in = 0.0
    leg = None
    if legend:
        handles, ncol = legend
        leg = fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
        fig.canvas.draw()
        leg_in = leg.get_window_extent().height / fig.dpi + 0.1
    total = h + foot_in + leg_in
    fig.set_size_inches(w, total)
    if leg is not None:
        leg.set_bbox_to_anchor((0.5, foot_in / total), transform=fig.transFigure)
    fig.tight_layout(rect=(0, (foot_in + leg_in) / total, 1, 1))
    if leg is not None:
        legend_clear(fig, leg, out_prefix)
    os.makedirs(os.path.dirname(out_prefix) or ".", exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        p = f"{out_prefix}.{ext}"
        fig.savefig(p, dpi=DPI if ext == "png" else None)
        paths.append(p)
    plt.close(fig)
    return paths


def draw_breakdown(bars, out_prefix, footnote, title=None):
    """Horizontal stacked bar per backend (bars from vpsim_extract.breakdown_bars), grouped by source: a
    group's name on a row of its own above its bars, the labels on the y axis, the total at the bar's end,
    so any number of bars fits the page's width."""
    ys, groups, y, last = [], [], 0.0, None
    for b in bars:
        if b["group"] != last:
            y += 0.4 if last is not None else 0.0
            groups.append((b["group"], y))
            y += 0.9
        ys.append(y)
        last = b["group"]
        y += 1.0
    fig, ax = plt.subplots(figsize=(FIG_W, 0.27 * y + 1.0))
    lefts = [0.0] * len(bars)
    for seg in SEGMENTS:
        vals = [b["segments"][seg] for b in bars]
        ax.barh(ys, vals, 0.72, left=lefts, color=SEGMENT_COLORS[seg], edgecolor="white", lw=0.5)
        lefts = [lf + v for lf, v in zip(lefts, vals)]
    top = max(max(lefts), max(b["cycle_ms"] for b in bars))
    any_measured = False
    for yi, b, total in zip(ys, bars, lefts):
        if b["measured"]:
            any_measured = True
            ax.plot([b["cycle_ms"]] * 2, [yi - 0.42, yi + 0.42], color="black", lw=2.2)
            text = f"{b['cycle_ms']:.2f} ms, {b['tok_per_s']:.0f} tok/s (ops {b['ops_sum_ms']:.1f})"
        else:
            text = f"{b['cycle_ms']:.2f} ms, {b['tok_per_s']:.0f} tok/s"
        ax.text(max(total, b["cycle_ms"]) + top * 0.01, yi, text, va="center", ha="left", fontsize=7)
    for name, gy in groups:
        ax.text(0.0, gy, name, va="center", ha="left", fontsize=8, fontweight="bold")
    ax.set_yticks(ys)
    ax.set_yticklabels([textwrap.fill(b["label"], 34) for b in bars], fontsize=7.5)
    ax.set_ylim(y - 0.3, -0.7)  # first row on top
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("time per decode cycle (ms)")
    ax.set_title(title or "Where one speculative decode cycle goes, per backend", fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=SEGMENT_COLORS[s], label=s) for s in SEGMENTS]
    if any_measured:
        handles.append(Line2D([], [], color="black", lw=2.2, label="measured cycle (median)"))
    lines = list(footnote)
    if any_measured:
        lines.append("Measured bars stack per-op times from the instrumented pass (a timer pair around each op), "
                     "which exceed the timed cycle; the black line is the timed cycle, the tok/s uses it.")
    return _save(fig, out_prefix, _footnote(fig, lines), legend=(handles, 4))


def draw_allreduce(data, out_prefix, footnote, title=None):
    """Latency against payload size per backend, log-log, the verify pass's payloads marked."""
    fig, ax = plt.subplots(figsize=(FIG_W, 4.8))
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
        ax.annotate(f"verify pass {vb:,} B", xy=(vb, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xlabel("payload per rank (bytes, log scale)")
    ax.set_ylabel("time per allreduce (us, log scale)")
    title = title or "Allreduce latency against payload size, per backend"
    if data["caveats"]:
        title += "\n(" + "; ".join(data["caveats"]) + ")"
    ax.set_title(title, fontsize=11, pad=16)
    ax.grid(which="both", alpha=0.25)
    handles, labels = ax.get_legend_handles_labels()
    if data["verify_bytes"]:
        handles.append(Line2D([], [], marker="D", ls="", mfc="none", mec="black", label="verify-pass payload"))
    if modelled:
        handles.append(Line2D([], [], ls="--", color="gray", label="model (same colour: same backend)"))
    lines = list(footnote)
    for label, reason in data["unsupported"]:
        lines.append(f"not run: {label}: {reason}")
    lines.append("time: per call, max over ranks (nccl-tests definition).")
    return _save(fig, out_prefix, _footnote(fig, lines), legend=(handles, 4))


def draw_sweep(sw, out_prefix, footnote, title=None, ylabel="throughput (tok/s, one request)"):
    """y (tok/s) against the varied key, a line per backend."""
    fig, ax = plt.subplots(figsize=(FIG_W, 4.6))
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
                              label="allreduce cost from a measured table point"))
    lines = list(footnote)
    for label, pts in method_changes(sw).items():
        lines.append(f"{label}: the allreduce cost source changes along x, so a jump can be the source changing: "
                     + "; ".join(f"{x}: {m}" for x, m in pts if m))
    if sw["rejected"]:
        first, why = next(iter(sw["rejected"].items()))
        lines.append(f"{len(sw['rejected'])} combination(s) rejected by vpsim (no point drawn), e.g. {first}: "
                     + (why if len(why) < 160 else why[:157] + "..."))
    return _save(fig, out_prefix, _footnote(fig, lines), legend=(handles, 3))


def draw_compare(class_rows, kind_rows, out_prefix, footnote, title=None, system="", mismatch=()):
    """Measured against modelled time per op class (and per op kind when given), error labelled."""
    panels = [("per op class (verify pass, compute only)", [(c, m, d, e) for c, m, d, e in class_rows])]
    if kind_rows:
        panels.append(("per op kind (verify pass, main stream)", [(k, m, d, e) for k, _, m, d, e in kind_rows]))
    fig, axes = plt.subplots(1, len(panels), figsize=(FIG_W if len(panels) > 1 else FIG_W * 0.7, 4.6),
                             squeeze=False, gridspec_kw={"width_ratios": [len(r) for _, r in panels]})
    for ax, (name, rows) in zip(axes[0], panels):
        xs = list(range(len(rows)))
        meas = [r[1] for r in rows]
        mod = [r[2] for r in rows]
        ax.bar([x - 0.2 for x in xs], meas, 0.4, color="#1f77b4")
        ax.bar([x + 0.2 for x in xs], mod, 0.4, color="#ff7f0e")
        top = max(meas + mod)
        for x, r in zip(xs, rows):
            ax.text(x, max(r[1], r[2]) + top * 0.02, f"{r[3]:+.0f}%", ha="center", va="bottom", fontsize=8.5,
                    fontweight="bold", color="#b00000" if abs(r[3]) > 25 else "#006000")
        ax.set_xticks(xs)
        ax.set_xticklabels([r[0] for r in rows], rotation=35 if len(rows) > 4 else 0,
                           ha="right" if len(rows) > 4 else "center", fontsize=8)
        ax.set_ylim(0, top * 1.15)
        ax.set_ylabel("time per verify pass (ms)")
        ax.set_title(name, fontsize=9.5)
        ax.grid(axis="y", alpha=0.3)
        if mismatch and name.startswith("per op kind"):
            ax.text(0.5, 0.80, "NOT LIKE FOR LIKE:\n" + "\n".join(mismatch), transform=ax.transAxes, ha="center",
                    va="top", fontsize=9, fontweight="bold", color="#b00000",
                    bbox=dict(boxstyle="round", fc="#fff0f0", ec="#b00000"))
    fig.suptitle(textwrap.fill(title or "Model against measurement (label: error = (modelled - measured) / measured)",
                               int(90 * fig.get_size_inches()[0] / FIG_W)), fontsize=10.5)
    handles = [Patch(color="#1f77b4", label="measured"),
               Patch(color="#ff7f0e", label=f"modelled{(' (' + system + ')') if system else ''}")]
    return _save(fig, out_prefix, _footnote(fig, footnote), legend=(handles, 2))


def draw_ranking(doc, out_prefix, footnote, title=None):
    """Horizontal bars of tok/s per ranked row, best on top; the baseline orange and labelled, rows ranked
    apart light and dotted. Rows that could not be modelled (does not fit, refused) get no bar: they
    have no figure, and the footnote names them with their reason (the report lists them too)."""
    rows = ranking_bars(doc)
    n = len(rows)
    fig, ax = plt.subplots(figsize=(FIG_W, 0.24 * n + 1.0))
    best = max((r["tok_per_s"] for r in rows), default=1.0)
    base = next((r for r in rows if r["baseline"]), None)
    for i, r in enumerate(rows):
        apart = bool(r.get("ranked_apart"))
        # Ranked apart: a formula standing in for a measurement that does not apply (vpsim compare).
        ax.barh(i, r["tok_per_s"], 0.75, color="#ff7f0e" if r["baseline"] else "#aec7e8" if apart else "#1f77b4",
                edgecolor="black" if r["baseline"] else "#1f77b4" if apart else "none", linewidth=1.0,
                hatch=".." if apart else None)
        gain = r.get("gain_pct")
        text = f"{r['tok_per_s']:.1f}" + (" (baseline)" if r["baseline"] else
                                          "" if gain is None else
                                          f" ({gain:+.0f}%)" if abs(gain) >= 0.5 else f" ({gain:+.2f}%)")
        ax.text(r["tok_per_s"] + best * 0.01, i, text, va="center", fontsize=7)
    if base:
        ax.axvline(base["tok_per_s"], color="#ff7f0e", lw=1.0, ls="--", zorder=0)
    ax.set_yticks(range(n))
    ax.set_yticklabels([("~ " if r.get("ranked_apart") else "") + r["variant"]
                        + ("" if f"({r['backend']})" in r["variant"] else f" ({r['backend']})") for r in rows], fontsize=7)
    ax.set_ylim(n - 0.4, -0.6)
    ax.set_xlim(0, best * 1.2)
    ax.set_xlabel("throughput (tok/s, one request)")
    ax.set_title(title or "Ranking of the variants (modelled)", fontsize=10.5)
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color="#ff7f0e", label="baseline (dashed line: its tok/s)"), Patch(color="#1f77b4", label="variant"),
               Patch(facecolor="#aec7e8", hatch="..", edgecolor="#1f77b4",
                     label="~ ranked apart: formula where the measurement does not apply")]
    lines = list(footnote)
    missing = [r for r in doc["rows"] if not r["available"]]
    if missing:
        lines.append("Not ranked, no figure (no bar): " + "; ".join(
            f"{r['variant']} ({_short(r.get('reason') or 'not modelled', 60)})" for r in missing))
    return _save(fig, out_prefix, _footnote(fig, lines), legend=(handles, 2))


HELDOUT_COLORS = {"gemm": SEGMENT_COLORS["verify GEMM"], "attention": SEGMENT_COLORS["verify attention"],
                  "other": SEGMENT_COLORS["verify other compute"], "cycle": "#2b2b2b"}


def draw_heldout(cases, bounds, out_prefix, footnote, title=None):
    """Error per op class and of the cycle, grouped per held-out case (cases from
    vpsim_extract.heldout_cases); the class bound is a shaded band, the cycle bound dashed lines, and a
    bar outside its own bound is outlined red with its value written beside it."""
    names = [r[0] for r in cases[0]["rows"]]
    n, k = len(cases), len(names)
    width = 0.8 / k
    fig, ax = plt.subplots(figsize=(FIG_W, 4.6))
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
                        va="bottom" if e >= 0 else "top", fontsize=6.5, color="#b00000",
                        rotation=90)  # upright text is wider than its bar and ran into the next one
    ax.set_xticks(range(n))
    ax.set_xticklabels([f"{c['case']}\n{'within' if c['within'] else 'OUTSIDE'}" for c in cases],
                       fontsize=8 if n <= 10 else 7, rotation=0 if n <= 10 else 45)
    lim = max(worst, cp, yp) * 1.3
    ax.set_ylim(-lim, lim)
    ax.set_ylabel("error = (modelled - measured) / measured (%)")
    ax.set_title(textwrap.fill(title or "Held-out scenarios: model against replay", 80), fontsize=10.5)
    ax.grid(axis="y", alpha=0.3)
    # Built here rather than from the bars: a bar's legend entry would copy its first bar's red outline.
    handles = [Patch(color=HELDOUT_COLORS.get(name, f"C{j}"), label=name) for j, name in enumerate(names)]
    handles += [Patch(color="#2ca02c", alpha=0.25, label=f"op-class bound ±{cp:g}%"),
                Line2D([], [], color="black", ls="--", lw=1.0, label=f"cycle bound ±{yp:g}%"),
                Patch(facecolor="white", edgecolor="#d00000", lw=1.4, label="outside its bound")]
    return _save(fig, out_prefix, _footnote(fig, footnote), legend=(handles, 4))

"""The report's plots: matplotlib Figures saved as PNG by Agg, without pyplot (no backend, no display, and
0.3 s less CPU to start). Imported only by `app.report.build.build_report`, so no other command pays for
matplotlib. Text from user files is drawn with mathtext parsing off."""

from __future__ import annotations

import io
import math
import re
import textwrap
import warnings
from collections import Counter
from contextlib import contextmanager
from typing import Any

import matplotlib
import matplotlib.patches
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.ticker import FuncFormatter, NullFormatter
from matplotlib.transforms import Bbox
from matplotlib.typing import RcKeyType

from app.recording.writer import original_text
from app.report.compare import Comparison
from app.report.data import STAGE_NAMES, RecordingData
from app.report.tables import NOT_RECORDED

# Drawn as faint lines, labelled only on per-session panels.
_ROUTINE = {"open", "measure", "measure_end", "stop", "start"}
_STACKED = ("queue", "preprocess", "inference", "postprocess")
_STAGE_COLOURS = {"queue": "#c7c7c7", "preprocess": "#9ecae1", "inference": "#3182bd", "postprocess": "#fdae6b"}
_STYLE: dict[RcKeyType, Any] = {
    "text.parse_math": False,  # labels like "$5 bill" are text, not TeX
    "font.size": 10,
    "axes.titlesize": 11.5,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.8,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}


@contextmanager
def _style():
    with matplotlib.rc_context(_STYLE), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs for exotic labels: a box, not a line on stderr
        yield


def _subfigures(fig: Figure, height_ratios: list[float]) -> list[SubFigure]:
    """Rows of subfigures as a list (subfigures() returns one SubFigure or an array of them)."""
    figs = fig.subfigures(len(height_ratios), 1, height_ratios=height_ratios)
    return [figs] if isinstance(figs, SubFigure) else list(figs)


def _png(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _short(text: str, n: int = 34) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _vertical_chars(ax: Axes, fontsize: float, most: int) -> int:
    """How many characters of a label turned upright fit the axes' height (its top 98.5% of it): a longer
    one would be clipped at both ends. 0.62 em a character, as DejaVu Sans averages."""
    fig = ax.get_figure()
    dpi = fig.dpi if fig is not None else 100.0
    return max(8, min(most, int(0.985 * ax.bbox.height / (fontsize * dpi / 72 * 0.62)) - 1))


def _not_recorded(ax: Axes, sessions: list[RecordingData], missing: list[RecordingData], what: str) -> None:
    """Say on the plot which sessions recorded nothing of it: an empty axis must not read as zero."""
    if not missing:
        return
    if len(missing) == len(sessions):
        ax.set_xticks([])
        ax.set_yticks([])
        ax.text(0.5, 0.5, f"not recorded\n({what}: every cell empty)", transform=ax.transAxes, ha="center",
                va="center", fontsize=10, color="#b00020")  # fmt: skip
        return
    names = ", ".join(f"#{s.index + 1}" for s in missing)
    ax.text(0.01, 0.02, f"{names}: {what} not recorded", transform=ax.transAxes, ha="left", va="bottom",
            fontsize=8.5, color="#b00020", bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none"})


def _recorded(s: RecordingData, column: str) -> bool:
    return bool(np.isfinite(s.column(column)).any())


# ---- series --------------------------------------------------------------------------------


def _latency(s: RecordingData, stage: str = "inference") -> tuple[np.ndarray, np.ndarray]:
    y = s.column(f"{stage}_ms")
    keep = ~np.isnan(y) & ~np.isnan(s.t)
    return s.t[keep], y[keep]


def _rolling_median(y: np.ndarray) -> np.ndarray:
    k = max(3, min(61, len(y) // 15)) | 1
    if len(y) < k:
        return y.copy()
    pad = k // 2
    padded = np.concatenate([np.full(pad, y[0]), y, np.full(pad, y[-1])])
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, k), axis=1)


def _rate(t: np.ndarray, span: float, w: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Inferences per second over a sliding window (`w` s, else a 15th of the span), sampled on a grid."""
    w = float(np.clip(span / 15, 0.5, 5.0)) if w is None else w
    if len(t) < 2 or span <= w:
        return np.zeros(0), np.zeros(0), w
    step = max(w / 4, span / 20_000)  # a damaged time column claiming years must not ask for billions of points
    grid = np.arange(t[0] + w, t[-1] + 1e-9, step)
    counts = np.searchsorted(t, grid, side="right") - np.searchsorted(t, grid - w, side="right")
    return grid, counts / w, w


def _log_scale(sessions: list[RecordingData]) -> bool:
    medians = [s.summary.stages["inference"].median for s in sessions]
    medians = [m for m in medians if m > 0 and not math.isnan(m)]
    return len(medians) > 1 and max(medians) / min(medians) > 4


def _ms_axis(ax: Axes, log: bool, axis: str = "y") -> None:
    if not log:
        return
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


# ---- events --------------------------------------------------------------------------------


def _events(ax: Axes, s: RecordingData, *, labelled: bool, span: float) -> None:
    """Vertical markers; events closer than 2% of the span share one label."""
    groups: list[tuple[float, list[str], bool]] = []
    for e in s.events:
        if math.isnan(e.t_s):
            continue
        notable = e.kind not in _ROUTINE
        if groups and e.t_s - groups[-1][0] < 0.02 * span:
            t0, texts, was_notable = groups[-1]
            groups[-1] = (t0, [*texts, e.text], was_notable or notable)
        else:
            groups.append((e.t_s, [e.text], notable))
    for t, texts, notable in groups:
        ax.axvline(t, color=s.colour, lw=1.3 if notable else 0.9, ls="--" if notable else ":", alpha=0.9, zorder=1)
        if labelled or notable:
            ax.text(
                t,
                0.985,
                " " + _short(" + ".join(texts), _vertical_chars(ax, 8, 60)),
                rotation=90,
                va="top",
                ha="right",
                fontsize=8,
                color="#b00020" if any(x.startswith(("fallback", "error", "source_lost")) for x in texts) else "#333",
                transform=ax.get_xaxis_transform(),
                clip_on=True,
                zorder=5,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75},
            )
    if labelled and s.measured_from is not None:
        ax.axvspan(s.t[0], s.measured_from, color="#999", alpha=0.12, lw=0, zorder=0)


# ---- one plot each, drawn onto given axes ----------------------------------------------------


def latency_top(sessions: list[RecordingData]) -> float:
    """Top of the latency scale: outliers (first inference after a switch, a stall) would flatten
    everything else, so they are drawn as triangles on the top edge instead."""
    p95 = [float(np.percentile(y, 95)) for _, y in map(_latency, sessions) if y.size]
    return max(p95, default=0.0) * 1.6 or 1.0


def latency_over_time(
    ax: Axes, sessions: list[RecordingData], *, log: bool, title: str | None = None, top: float | None = None
) -> None:
    span = max(float(s.t[-1] - s.t[0]) if len(s.t) > 1 else 1.0 for s in sessions) or 1.0
    alone = len(sessions) == 1
    series = [_latency(s) for s in sessions]
    top = latency_top(sessions) if top is None else top
    clipped_any = False
    for s, (t, y) in zip(sessions, series, strict=True):
        dots = max(6.0, min(16.0, 4000 / max(1, y.size)))
        inside = y <= top
        ax.scatter(t[inside], y[inside], s=dots, color=s.colour, alpha=0.4, lw=0, rasterized=True, zorder=2)
        if (~inside).any():
            clipped_any = True
            ax.scatter(t[~inside], np.full((~inside).sum(), top), marker="^", s=28, color=s.colour, zorder=4,
                       clip_on=False)  # fmt: skip
        ax.plot(t, _rolling_median(y), color=s.colour, lw=2.2, label=s.label, zorder=3)
        _events(ax, s, labelled=alone, span=span)
    _not_recorded(ax, sessions, [s for s, (_, y) in zip(sessions, series, strict=True) if not y.size],
                  "inference latency")  # fmt: skip
    _ms_axis(ax, log)
    ax.set_ylim(bottom=None if log else 0, top=top)
    ax.set_xlabel("time since recording started (s)")
    ax.set_ylabel("inference latency (ms)")
    note = "; ▲ = above the scale" if clipped_any else ""
    ax.set_title(title or f"Inference latency over time (dots: each inference; line: rolling median{note})")
    if not alone:  # one session is named by the page and the box above; a legend would hide its event labels
        ax.legend(loc="upper right", frameon=True, framealpha=0.92, edgecolor="#ddd")


def latency_histogram(ax: Axes, sessions: list[RecordingData], *, log: bool) -> None:
    values = [_latency(s)[1] for s in sessions]
    every = np.concatenate(values)
    every = every[every > 0]
    ax.set_title("Latency distribution")
    _not_recorded(ax, sessions, [s for s, y in zip(sessions, values, strict=True) if not y.size], "inference latency")
    if every.size == 0:
        return
    lo, hi = float(np.percentile(every, 0.5)), float(np.percentile(every, 99)) * 1.1
    hi = max(hi, float(np.nanmax([s.summary.stages["inference"].p95 for s in sessions])) * 1.1)
    if log:
        bins = np.geomspace(max(lo * 0.9, 1e-3), hi * 1.1, 45)
    else:
        bins = np.linspace(max(0.0, lo - (hi - lo) * 0.05), hi + (hi - lo) * 0.05, 45)
    for s, y in zip(sessions, values, strict=True):
        if y.size == 0:
            continue
        clipped = np.clip(y, bins[0], bins[-1])
        weights = np.full(y.size, 100.0 / y.size)
        edges = bins.tolist()  # the same edges, as the sequence matplotlib's types ask for
        ax.hist(clipped, bins=edges, weights=weights, color=s.colour, alpha=0.25, lw=0)
        ax.hist(clipped, bins=edges, weights=weights, color=s.colour, histtype="step", lw=1.8, label=s.label)
        med = s.summary.stages["inference"].median
        p95 = s.summary.stages["inference"].p95
        ax.axvline(med, color=s.colour, lw=1.6, ls="-")
        ax.axvline(p95, color=s.colour, lw=1.2, ls="--")
    _ms_axis(ax, log, axis="x")
    beyond = f"; last bin: ≥ {bins[-2]:.3g} ms" if every.max() > bins[-1] else ""
    ax.set_xlabel(f"inference latency (ms)\nsolid: median, dashed: p95{beyond}")
    ax.set_ylabel("share of inferences (%)")
    ax.set_title("Latency distribution")
    ax.legend(loc="upper right", frameon=True, framealpha=0.92, edgecolor="#ddd")


def stage_breakdown(ax: Axes, sessions: list[RecordingData]) -> None:
    """Median of each stage, stacked: where the time from capture to result goes."""
    ys = np.arange(len(sessions))[::-1]
    left = np.zeros(len(sessions))
    medians = {st: np.nan_to_num([s.summary.stages[st].median for s in sessions]) for st in _STACKED}
    e2e = np.array([s.summary.stages["end_to_end"].median for s in sessions])
    widest = max(float(np.nanmax(sum(medians.values()))), float(np.nan_to_num(np.nanmax(e2e)))) or 1.0
    for stage in _STACKED:
        widths = medians[stage]
        ax.barh(ys, widths, left=left, color=_STAGE_COLOURS[stage], label=STAGE_NAMES[stage], height=0.62)
        for y, x0, w in zip(ys, left, widths, strict=True):
            if w > 0.07 * widest:
                ax.text(x0 + w / 2, y, f"{w:.1f}", ha="center", va="center", fontsize=9,
                        color="white" if stage == "inference" else "#222")  # fmt: skip
        left += widths
    for y, value in zip(ys, e2e, strict=True):
        if not math.isnan(value):
            ax.plot([value], [y], marker="|", ms=24, mew=2.4, color="#222")
            ax.text(value + widest * 0.015, y, f"{value:.1f} ms", fontsize=9, va="center", ha="left")
    ax.set_yticks(ys, [_short(s.label, 34) for s in sessions])
    for tick, s in zip(ax.get_yticklabels(), sessions, strict=True):
        tick.set_color(s.colour)
        tick.set_fontweight("bold")
    ax.set_ylim(-0.6, len(sessions) - 0.2)
    ax.set_xlim(0, widest * 1.5)
    for y, s in zip(ys, sessions, strict=True):
        if all(math.isnan(s.summary.stages[st].median) for st in (*_STACKED, "end_to_end")):
            ax.text(widest * 0.02, y, "not recorded (every stage cell empty)", va="center", color="#b00020")
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("median ms per frame\n(| and figure: median end to end, capture to result)")
    ax.set_title("Where the time goes (median per stage)")
    ax.legend(loc="center right", fontsize=8.5, title="stage", title_fontsize=8.5)


def fps_over_time(ax: Axes, sessions: list[RecordingData]) -> None:
    windows = set()
    highest = 0.0
    spans = [float(np.nanmax(s.t) - np.nanmin(s.t)) for s in sessions if len(s.t) > 1]
    # One window for every line (the shortest session's), so the lines are drawn alike and the axis names one.
    common = float(np.clip(min(spans) / 15, 0.5, 5.0)) if spans and all(np.isfinite(spans)) else None
    for s in sessions:
        t = np.sort(s.t)
        span = float(t[-1] - t[0]) if len(t) > 1 else 0.0
        grid, rate, w = _rate(t, span, common)
        windows.add(w)
        if grid.size:
            ax.plot(grid, rate, color=s.colour, lw=2)
            highest = max(highest, float(rate.max()))
        cap = s.column("capture_fps")
        keep = ~np.isnan(cap)
        if keep.any():
            highest = max(highest, float(np.percentile(cap[keep], 90)))
            ax.plot(s.t[keep], cap[keep], color=s.colour, lw=1.2, ls="--", alpha=0.8)
    ax.plot([], [], color="#555", lw=2, label="inferences/s (from the rows)")
    ax.plot([], [], color="#555", ls="--", lw=1.2, label="capture fps (as recorded)")
    _not_recorded(ax, sessions, [s for s in sessions if not _recorded(s, "capture_fps")], "capture fps")
    ax.set_ylim(0, highest * 1.25 if highest > 0 else None)  # a recorded spike may run off the top
    ax.set_xlabel("time since recording started (s)")
    window_text = ", ".join(f"{x:.2g}" for x in sorted(windows))
    ax.set_ylabel(f"frames/s ({window_text} s window)")
    ax.set_title("Throughput")
    ax.legend(loc="lower right", fontsize=8.5, frameon=True, framealpha=0.92, edgecolor="#ddd")


def cpu_over_time(ax: Axes, sessions: list[RecordingData]) -> None:
    for s in sessions:
        cpu = s.column("process_cpu_pct")
        keep = ~np.isnan(cpu)
        if keep.any():
            ax.step(s.t[keep], cpu[keep], where="post", color=s.colour, lw=2)
        sys_cpu = s.column("system_cpu_pct")
        keep = ~np.isnan(sys_cpu)
        if keep.any():
            ax.step(s.t[keep], sys_cpu[keep], where="post", color=s.colour, lw=1, ls=":", alpha=0.8)
    ax.plot([], [], color="#555", lw=2, label="this process")
    ax.plot([], [], color="#555", ls=":", lw=1, label="whole machine")
    ax.set_xlabel("time since recording started (s)")
    ax.set_ylabel("CPU (% of all cores)")
    ax.set_title("CPU load")
    ax.set_ylim(0, 105)
    if sessions and all(len(s.t) for s in sessions):
        ax.set_xlim(min(float(np.nanmin(s.t)) for s in sessions), max(float(np.nanmax(s.t)) for s in sessions))
    missing = [s for s in sessions if not (_recorded(s, "process_cpu_pct") or _recorded(s, "system_cpu_pct"))]
    _not_recorded(ax, sessions, missing, "CPU %")
    if len(missing) == len(sessions):
        return  # no legend for lines that are not there
    ax.legend(loc="center right", fontsize=8.5, frameon=True, framealpha=0.92, edgecolor="#ddd")


def init_footprint(s: RecordingData) -> float | None:
    """What opening the session of `s` added to the resident set, MiB (its sidecar facts' `init_mb`); None
    where not recorded. The sidecar is untrusted: anything but a finite number is None."""
    value = (s.facts or {}).get("init_mb")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def memory_over_time(ax: Axes, sessions: list[RecordingData]) -> None:
    """Each session's resident set (solid) and NVML's GPU memory (dashed, format 4 on) as recorded, with
    the init footprint of the session that ran it marked where it starts."""
    labelled = 0
    for s in sessions:
        for column, style in (("rss_mb", "-"), ("gpu_mem_mb", "--")):
            y = s.column(column)
            keep = np.isfinite(y)
            if keep.any():
                ax.step(s.t[keep], y[keep], where="post", color=s.colour, lw=2 if style == "-" else 1.5, ls=style)
        init = init_footprint(s)
        if init is not None and len(s.t):
            start = s.segment.start_s if s.segment is not None else float(np.nanmin(s.t))
            ax.axvline(start, color=s.colour, lw=0.9, ls=":", zorder=1)
            # Side by side, each in its session's colour: recordings that open at once would print over each other.
            ax.annotate(f" init {init:.0f} MB", (start, 0.985), xytext=(-1 + 12 * labelled, 0),
                        textcoords="offset points", rotation=90, va="top", ha="right", fontsize=8, color=s.colour,
                        xycoords=ax.get_xaxis_transform(), annotation_clip=True, zorder=5,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75})  # fmt: skip
            labelled += 1
    rss_missing = [s for s in sessions if not _recorded(s, "rss_mb")]
    _not_recorded(ax, sessions, rss_missing, "resident memory")
    ax.set_xlabel("time since recording started (s)")
    ax.set_ylabel("MiB")
    ax.set_title("Memory")
    ax.set_ylim(bottom=0)
    if len(rss_missing) == len(sessions):
        return
    ax.plot([], [], color="#555", lw=2, label="resident set (process and children)")
    # An empty GPU column: no NVIDIA GPU or NVML where it ran, or a recording before format 4.
    gpu_missing = [s for s in sessions if not _recorded(s, "gpu_mem_mb")]
    if len(gpu_missing) < len(sessions):
        ax.plot([], [], color="#555", lw=1.5, ls="--", label="GPU memory (NVML)")
    if gpu_missing:
        names = "" if len(gpu_missing) == len(sessions) else " for " + ", ".join(f"#{s.index + 1}" for s in gpu_missing)
        ax.plot([], [], color="none", label=f"GPU memory not recorded{names}")
    ax.legend(loc="best", fontsize=8.5, frameon=True, framealpha=0.92, edgecolor="#ddd")


def offload(ax: Axes, sessions: list[RecordingData]) -> None:
    """Wall time vs CPU time per inference: the evidence of where the work runs."""
    x = np.arange(len(sessions))
    wall = np.array([s.summary.stages["inference"].median for s in sessions])
    cpu = np.array([s.summary.cpu_ms for s in sessions])
    colours = [s.colour for s in sessions]
    ax.bar(x - 0.2, np.nan_to_num(wall), width=0.38, color=colours, alpha=0.45, label="wall time")
    ax.bar(x + 0.2, np.nan_to_num(cpu), width=0.38, color=colours, hatch="//", edgecolor="white", label="CPU time")
    both = np.concatenate([wall, cpu])
    top = float(np.nanmax(both)) if np.isfinite(both).any() else 1.0
    for i, s in enumerate(sessions):
        ratio = s.summary.offload_ratio
        if not math.isnan(ratio):
            ax.text(i, max(np.nan_to_num([wall[i], cpu[i]])) + top * 0.03, f"CPU/wall\n{ratio:.2f}", ha="center",
                    fontsize=8.5)  # fmt: skip
    for i in range(len(sessions)):
        if math.isnan(cpu[i]):
            ax.text(i + 0.2, top * 0.03, "CPU time\nnot recorded", ha="center", va="bottom", fontsize=8,
                    color="#b00020")  # fmt: skip
    ax.set_xticks(x, [f"#{s.index + 1}" for s in sessions])
    for tick, s in zip(ax.get_xticklabels(), sessions, strict=True):
        tick.set_color(s.colour)
        tick.set_fontweight("bold")
    ax.set_ylim(0, top * 1.5 if top > 0 else 1)  # the top fifth holds the legend, clear of the bars' figures
    ax.grid(axis="x", visible=False)
    ax.set_ylabel("ms per inference (median)")
    ax.set_title("Wall vs CPU time per inference")
    ax.legend(loc="upper center", fontsize=8, ncols=2)


def label_distribution(ax: Axes, sessions: list[RecordingData], n: int = 8) -> None:
    total: Counter = Counter()
    shares = []
    # No classifier among them: the labels their models found (detections, classes present) instead.
    found = not any(s.summary.labels for s in sessions) and any(s.summary.task for s in sessions)
    for s in sessions:
        labels: Counter = s.summary.labels
        count = sum(labels.values()) or 1
        share = {k: v / count * 100 for k, v in labels.items()}
        task = s.summary.task
        if found and task is not None:
            share = {k: f / max(1, task.frames) * 100 for k, f, _ in task.top_labels()}
        shares.append(share)
        total.update(share)
    top = [label for label, _ in total.most_common(n)]
    height = 0.8 / len(sessions)
    ys = np.arange(len(top))[::-1]
    for i, (s, share) in enumerate(zip(sessions, shares, strict=True)):
        ax.barh(ys + 0.4 - height * (i + 0.5), [share.get(k, 0) for k in top], height=height, color=s.colour,
                label=_short(s.label, 40))  # fmt: skip
    ax.set_yticks(ys, [_short(label, 28) for label in top])
    ax.grid(axis="y", visible=False)
    if found:
        ax.set_xlabel("share of inferences where it was found (%)")
        ax.set_title(f"What the model found (labels, {len(top)} most common)")
    else:
        ax.set_xlabel("share of inferences with this top-1 label (%)")
        ax.set_title(f"What the model saw (top-1 labels, {len(top)} most common)")
    if not top:
        _not_recorded(ax, sessions, sessions, "labels")
    if len(sessions) > 1 and top:
        ax.legend(loc="lower right")


# ---- figures -------------------------------------------------------------------------------


def _time_figure(sessions: list[RecordingData]) -> Figure:
    log = _log_scale(sessions)
    n = len(sessions)
    if n == 1:
        fig = Figure(figsize=(12, 4.6), layout="constrained")
        ax = fig.subplots()
        latency_over_time(ax, sessions, log=log)
        return fig
    fig = Figure(figsize=(12, 8.2), layout="constrained")
    top, bottom = _subfigures(fig, [1.15, 1])
    latency_over_time(top.subplots(), sessions, log=log, title="Inference latency over time, overlaid")
    _latency_side_by_side(bottom.subplots(1, n, sharey=True, squeeze=False)[0], sessions, log)
    return fig


def html_figures(sessions: list[RecordingData]) -> list[tuple[str, bytes, str]]:
    log = _log_scale(sessions)
    out = []
    with _style():
        note = "Grey band: bench's warm-up (not in the summary). Dashed red labels: fallbacks and errors."
        if len(sessions) > 1:
            note += " Below: each session on its own, same latency scale, with all its events."
        out.append(("Latency over time", _png(_time_figure(sessions)), note))

        fig = Figure(figsize=(12, 4.2), layout="constrained")
        a, b = fig.subplots(1, 2, width_ratios=[1, 1.1])
        latency_histogram(a, sessions, log=log)
        stage_breakdown(b, sessions)
        out.append(("Latency distribution and stages", _png(fig), ""))

        fig = Figure(figsize=(12, 4), layout="constrained")
        a, b, c = fig.subplots(1, 3, width_ratios=[1.2, 1.2, 0.9])
        fps_over_time(a, sessions)
        cpu_over_time(b, sessions)
        offload(c, sessions)
        out.append(
            (
                "Throughput and CPU",
                _png(fig),
                "CPU time per inference near its wall time (or above it, with several threads) means the CPU did "
                "the work; far below it means an accelerator did, or the inference waited (for a core on a busy "
                "machine, for the other side in A/B): on the CPU backend, below 1 is always waiting.",
            )
        )

        fig = Figure(figsize=(12, 3.6), layout="constrained")
        memory_over_time(fig.subplots(), sessions)
        note = (
            "Resident set of the process and its children (solid) and NVML's GPU memory (dashed) as recorded; "
            "a dotted line marks where each session opened, with what opening it added to the resident set."
        )
        out.append(("Memory", _png(fig), note))

        fig = Figure(figsize=(12, 0.9 + 0.42 * min(8, _label_count(sessions))), layout="constrained")
        ax = fig.subplots()
        label_distribution(ax, sessions)
        out.append(("Top-1 labels", _png(fig), ""))
    return out


def _label_count(sessions: list[RecordingData]) -> int:
    labels: set[str] = set()
    for s in sessions:
        labels.update(s.summary.labels)
    return max(1, len(labels))


def overview_png(
    sessions: list[RecordingData],
    rows: list[tuple[str, list[str]]],
    comparisons: list[Comparison],
    header: list[list[tuple[str, str]]],
) -> bytes:
    """One figure: a header per session or segment (what ran, the delegation facts), the plots and a
    compact summary table."""
    n = len(sessions)
    log = _log_scale(sessions)
    in_header = {name for lines in header for name, _ in lines}
    integrity = {"rows lost while recording", "lines that could not be read", "stopped cleanly"}  # in the header
    # The why of "not recorded" is the HTML page's and docs/report.md's: a compact table cell says it alone.
    table_rows = [(name, [v.replace(NOT_RECORDED, "not recorded") for v in values]) for name, values in rows
                  if name not in in_header | {"recording"} | integrity]  # fmt: skip
    if comparisons:
        table_rows += [
            ("compared with", ["–"] + [f"#{c.baseline.index + 1}" for c in comparisons]),
            ("inference vs that", ["baseline"] + [c.inference for c in comparisons]),
            ("CPU time per inference vs that", ["baseline"] + [c.cpu_ms for c in comparisons]),
        ]
    with _style():
        header_h = header_height(sessions, header)
        heights = [header_h, 4.4] + ([3.3] if n > 1 else []) + [3.7, 3.5, 0.26 * (len(table_rows) + 1) + 0.5]
        fig = Figure(figsize=(max(14, 4.2 * n), sum(heights) + 0.5), layout="constrained")
        figs = _subfigures(fig, heights)
        files = list(dict.fromkeys(s.name for s in sessions))
        title = "Delegate Scope report: " + ", ".join(files)
        if any(s.segmented for s in sessions):
            title += f" ({n} parts, cut at every switch)" if len(files) == 1 else " (cut at every switch)"
        fig.suptitle(_short(title, 140), fontsize=14, fontweight="bold", x=0.01, ha="left")
        _header(figs[0].subplots(), sessions, header)
        i = 1
        overlaid = "Inference latency over time, overlaid (dots: each inference; line: rolling median)"
        latency_over_time(figs[i].subplots(), sessions, log=log, title=None if n == 1 else overlaid)
        i += 1
        if n > 1:
            _latency_side_by_side(figs[i].subplots(1, n, sharey=True, squeeze=False)[0], sessions, log)
            i += 1
        a, b = figs[i].subplots(1, 2, width_ratios=[1, 1.1])
        latency_histogram(a, sessions, log=log)
        stage_breakdown(b, sessions)
        i += 1
        a, b, m, c = figs[i].subplots(1, 4, width_ratios=[1, 1, 1, 1])
        fps_over_time(a, sessions)
        cpu_over_time(b, sessions)
        memory_over_time(m, sessions)
        offload(c, sessions)
        i += 1
        _table(figs[i].subplots(), sessions, table_rows)
        return _png(fig, dpi=100)


_TITLE_PT, _BODY_PT = 10.5, 8.5


def _header_titles(sessions: list[RecordingData]) -> list[list[str]]:
    """Each box's title, wrapped to two lines at most (what fits at 10.5 pt bold)."""
    chars = int(max(14, 4.2 * len(sessions)) / len(sessions) * 8.2)
    out = []
    for s in sessions:
        lines = [""]
        for token in re.split(r"(?<=→)|(?= )", s.label):  # break at spaces and after "a→" (model names are long)
            if lines[-1] and len(lines[-1]) + len(token) > chars:
                lines.append(token.lstrip())
            else:
                lines[-1] += token
        out.append(lines[:1] + ([_short(" ".join(lines[1:]), chars)] if len(lines) > 1 else []))
    return out


def _body_chars(n: int) -> int:
    return int(max(14, 4.2 * n) / n * 11.5)  # what fits a box at 8.5 pt


def _body_lines(lines: list[tuple[str, str]], chars: int) -> list[str]:
    """A box's lines, each wrapped (not cut) to the box's width, continuation lines indented."""
    out = []
    for name, value in lines:
        out += textwrap.wrap(f"{name}: {value.replace(' nodes delegated', '')}", chars, subsequent_indent="   ",
                             break_on_hyphens=False) or [""]  # fmt: skip
    return out


def header_height(sessions: list[RecordingData], header: list[list[tuple[str, str]]]) -> float:
    """Inches: the tallest box's title and lines, and a margin."""
    title = max(len(t) for t in _header_titles(sessions)) * _TITLE_PT * 1.25
    body = max(len(_body_lines(lines, _body_chars(len(sessions)))) for lines in header) * _BODY_PT * 1.5
    return (title + body + 22) / 72


def _header(ax: Axes, sessions: list[RecordingData], header: list[list[tuple[str, str]]]) -> None:
    """One box per session or segment, in its colour: its name (what changed, for a later segment),
    then what ran and the delegation facts."""
    ax.axis("off")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    n = len(sessions)
    width = 1 / n
    body_chars = _body_chars(n)
    for i, (s, lines, title) in enumerate(zip(sessions, header, _header_titles(sessions), strict=True)):
        x = i * width + 0.004
        ax.add_patch(
            matplotlib.patches.FancyBboxPatch((x, 0.01), width - 0.008, 0.98, boxstyle="round,pad=0,rounding_size=0.01",
                                              fc="#f7f9fb", ec=s.colour, lw=1.6, transform=ax.transAxes)
        )  # fmt: skip
        ax.annotate("\n".join(title), (x, 0.99), xytext=(5, -5), textcoords="offset points", xycoords=ax.transAxes,
                    color=s.colour, fontsize=_TITLE_PT, fontweight="bold", va="top", linespacing=1.2)  # fmt: skip
        shown = _body_lines(lines, body_chars)
        red = any("FALLBACK" in v or name.startswith("NOT ") for name, v in lines)
        below_title = 8 + len(title) * _TITLE_PT * 1.25
        ax.annotate("\n".join(shown), (x, 0.99), xytext=(5, -below_title),
                    textcoords="offset points", xycoords=ax.transAxes, fontsize=_BODY_PT, va="top",
                    color="#b00020" if red else "#222", linespacing=1.35)  # fmt: skip


def _table(ax: Axes, sessions: list[RecordingData], rows: list[tuple[str, list[str]]]) -> None:
    ax.axis("off")
    # A column's width in characters at 9 pt (0.085 in each, with the cell's padding); a longer cell is drawn
    # smaller to fit it (below), and cut only past what fits at 6 pt.
    chars = int(0.84 * max(14, 4.2 * len(sessions)) / len(sessions) / 0.085) - 2
    cell_text = [[_short(original_text(v), int(chars * 1.5)) for v in values] for _, values in rows]
    table = ax.table(
        cellText=cell_text,
        rowLabels=[name for name, _ in rows],
        colLabels=[_short(s.label, int(chars * 1.35)) for s in sessions],
        loc="upper center",
        cellLoc="left",
        bbox=Bbox.from_bounds(0.16, 0, 0.84, 1),  # what the list [x, y, width, height] means here
    )
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    for (r, c), cell in table.get_celld().items():
        cell.set_edgecolor("#dddddd")
        length = len(cell.get_text().get_text())
        limit = chars * (0.9 if r == 0 else 1.0)  # the header row is bold
        if c >= 0 and length > limit:
            cell.get_text().set_fontsize(9 * limit / length)
        if r == 0 and c >= 0:
            cell.set_text_props(color="white", fontweight="bold")
            cell.set_facecolor(sessions[c].colour)
        elif c == -1:
            cell.set_text_props(fontweight="bold")
            cell.set_facecolor("#f4f6f8")
        elif "FALLBACK" in cell.get_text().get_text():
            cell.set_text_props(color="#b00020", fontweight="bold")
    ax.set_title("Summary (measured inferences; see docs/report.md for definitions)", loc="left")


__all__ = ["html_figures", "overview_png"]


def _latency_side_by_side(axes, sessions, log: bool) -> None:
    """One latency-over-time panel per session, same scale, each titled in its colour."""
    top = latency_top(sessions)
    chars = max(20, int(max(14, 4.2 * len(sessions)) / len(sessions) * 8))  # a panel's width at 11.5 pt bold
    for ax, s in zip(axes, sessions, strict=True):
        latency_over_time(ax, [s], log=log, title=_short(s.label, chars), top=top)
        ax.title.set_color(s.colour)
        ax.set_xlabel("time (s)")
        if ax is not axes[0]:
            ax.set_ylabel("")
    lows = [float(y[y > 0].min()) for _, y in map(_latency, sessions) if (y > 0).any()]
    if log and lows:  # shared log axes keep the first panel's bottom: the others' fastest points fell below it
        axes[0].set_ylim(bottom=min(lows) * 0.8)

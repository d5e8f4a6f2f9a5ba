"""The delegate sweep as a report: the side-by-side table (text, for the terminal and the window) and
one self-contained HTML page with the table and plots (matplotlib, Agg backend, imported only when
the page is drawn). Everything from a user file (model names, paths, reasons) is HTML-escaped."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.errors import UsageError
from app.report.page import BASE_CSS, esc, write_atomic
from app.tasks.sweep import SweepResult, SweepRow

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # matplotlib itself only when a page is drawn

COLUMNS = (
    "configuration",
    "inf/s",
    "p50 ms",
    "p95 ms",
    "CPU ms/inf",
    "init ms",
    "1st inf ms",
    "init MB",
    "peak MB",
    "top-1 agree",
    "GPU MHz",
    "CPU MHz",
    "mJ/inf",
    "above idle",
)


@dataclass(frozen=True)
class Cell:
    text: str
    number: float | None = None  # for sorting (the window's table)


def row_cells(row: SweepRow) -> list[Cell]:
    """One table row: the configuration, then the figures ("—" where nothing was measured)."""

    def num(value: float | None, fmt: str) -> Cell:
        return Cell("—" if value is None else format(value, fmt), value)

    label = row.label + (" [software GPU]" if row.software else "")
    total, above = energy_per_inference(row)  # mJ per inference
    agreement = (
        Cell(f"{row.top1_agreement:.1%} of {row.agreement_frames}", row.top1_agreement)
        if row.top1_agreement is not None and row.agreement is None
        else _task_agreement(row.agreement)
        if row.agreement is not None
        else Cell("classes not comparable")
        if row.classes is not None
        else Cell("—")
    )
    return [
        Cell(label),
        num(row.inference_fps, ".1f"),
        num(row.latency_p50_ms, ".2f"),
        num(row.latency_p95_ms, ".2f"),
        num(row.cpu_ms_per_inference, ".2f"),
        num(row.init_ms, ".0f"),
        num(row.first_inference_ms, ".1f"),
        num(row.memory_init_mb, ".0f"),
        num(row.memory_peak_mb, ".0f"),
        agreement,
        num(row.power.sm_clock_mhz if row.power else None, ".0f"),
        num(row.power.cpu_mhz if row.power else None, ".0f"),
        num(total, ".2f"),
        # Below zero the configuration drew no more than the idle power: the idle reading's noise, not an energy.
        Cell("none", above) if above is not None and above < 0 else num(above, ".2f"),
    ]


def energy_per_inference(row: SweepRow) -> tuple[float | None, float | None]:
    """mJ per inference of the device the model ran on, total and above idle: the GPU's (NVML) for a GPU
    row, the CPU packages' (RAPL) for a CPU row; None where not readable (Core ML: neither counter is
    that device's)."""
    p = row.power
    if p is None:
        return None, None
    if row.delegate == "gpu":
        return p.gpu_mj_per_inference, p.gpu_mj_per_inference_above_idle
    if row.delegate == "cpu":
        return p.cpu_package_mj_per_inference, p.cpu_package_mj_per_inference_above_idle
    return None, None


def power_lines(result: SweepResult) -> list[str]:
    """How the power figures were taken, and why any is missing ("not readable here" with the counters'
    own reasons, once each)."""
    lines = []
    idle = next((r.power for r in result.measured() if r.power is not None), None)
    if result.idle_s > 0 and idle is not None:
        gpu_idle = idle.idle_power_w is not None and idle.idle_sm_clock_mhz is not None
        known = [f"GPU {idle.idle_power_w:.0f} W at {idle.idle_sm_clock_mhz:.0f} MHz"] if gpu_idle else []
        lines.append(f"idle read for {result.idle_s:.1f} s before the first configuration"
                     + (f": {', '.join(known)}" if known else ""))  # fmt: skip
    if result.warm_s > 0:
        lines.append(f"each configuration held busy (unpaced) at least {result.warm_s:g} s before its measured span")
    gpu = [r for r in result.measured() if r.delegate == "gpu"]
    cpu = [r for r in result.measured() if r.delegate == "cpu"]
    missing: dict[str, None] = {}
    for r in result.measured():
        p = r.power
        if p is None:
            continue
        if p.sm_clock_mhz is None and p.gpu_reason:
            missing[f"GPU clocks and energy: not readable here ({p.gpu_reason})"] = None
        if p.cpu_mhz is None and p.cpu_mhz_reason:
            missing[f"CPU clock: not readable here ({p.cpu_mhz_reason})"] = None
        if r in cpu and p.cpu_package_energy_j is None and p.cpu_energy_reason:
            missing[f"CPU package energy: not readable here ({p.cpu_energy_reason})"] = None
    if gpu or cpu:
        lines.append("mJ/inf: energy per inference of the device the model ran on (GPU: NVML's counter; CPU: the "
                     "packages' RAPL counter), total and above the idle power")  # fmt: skip
    if any((above := energy_per_inference(r)[1]) is not None and above < 0 for r in result.measured()):
        lines.append("above idle 'none': the configuration drew no more than the idle power (a figure below zero: "
                     "the idle reading's noise)")  # fmt: skip
    return lines + list(missing)


def _task_agreement(g: dict) -> Cell:
    """A model that is not a classifier: its task's headline agreement with the first configuration."""
    task = g.get("task")
    value: float | None
    if task == "detection":
        value, text = g.get("match_rate"), "matched {:.1%}"
    elif task == "segmentation":
        value, text = g.get("pixel_agreement"), "pixels {:.1%}"
    elif task == "keypoints":
        value, text = g.get("mean_distance_px"), "{:.2f} px apart"
    else:
        cosines = [c for c in g.get("cosine_min") or [] if c is not None]
        value, text = (min(cosines) if cosines else None), "cosine {:.4f}"
    return Cell("—" if value is None else text.format(value), value)


def task_lines(result: SweepResult) -> list[str]:
    """Models that are not classifiers: their task, feeder and what they found (the first configuration's)."""
    lines = []
    for model in dict.fromkeys(r.model for r in result.measured() if r.task):
        row = next(r for r in result.measured() if r.model == model and r.task)
        found = row.results or {}
        counted = f"{found.get('mean_result_count') or 0:.1f} {found.get('counted', 'results')} per frame"
        feed = f"; inputs: {row.feed}" if row.feed and row.feed != "none" else ""
        lines.append(f"{model}: {row.task}, {counted}{feed}")
    return lines


def not_measured_line(row: SweepRow) -> str:
    return f"{row.label}: {row.outcome} ({row.reason})"


def header_lines(result: SweepResult) -> list[str]:
    w, h = result.frame_size
    lines = [
        f"{result.frames} frames of {result.source} ({w}x{h}), captured once and replayed unpaced to each "
        f"configuration; {result.warmup} warm-up inferences each left out",
    ]
    if result.frame_selection is not None:  # agreement is over these frames: which scenes they cover
        lines.append(f"frames used: {result.frame_selection.describe()}")
    lines.append(
        f"machine: {result.machine}, threads {'pinned as bench does' if result.pinned else 'not pinned'}; "
        f"{result.wall_s:.1f} s; top-1 agreement against {result.baseline or '—'}"
        + ("; CANCELLED" if result.cancelled else "")
    )
    return lines


def text_table(result: SweepResult) -> str:
    """The table as the terminal shows it: measured rows, then the rest with their reasons."""
    measured = [[c.text for c in row_cells(r)] for r in result.measured()]
    widths = [max(len(h), *(len(r[i]) for r in measured)) if measured else len(h) for i, h in enumerate(COLUMNS)]
    lines = ["  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(COLUMNS))]
    for cells in measured:
        lines.append("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)))
    lines.extend(task_lines(result))
    lines.extend(power_lines(result))
    others = [r for r in result.rows if not r.measured]
    if others:
        lines.append("not measured:")
        lines.extend(f"  {not_measured_line(r)}" for r in others)
    return "\n".join(lines)


# ---- HTML ------------------------------------------------------------------------------------

_CSS = (
    BASE_CSS
    + """
.software{color:#b00020}
"""
)


_e = esc


def render_html(result: SweepResult, plot_png: bytes | None) -> str:
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Delegate Scope sweep: {_e(result.source)}</title><style>{_CSS}</style></head><body>",
        "<h1>Delegate sweep</h1>",
        *(f"<p class='sub'>{_e(line)}</p>" for line in header_lines(result)),
        f"<p class='sub'>started {_e(result.started)}</p>",
        "<h2>Side by side</h2><table><thead><tr>",
        *(f"<th>{_e(h)}</th>" for h in COLUMNS),
        "<th>runs on</th></tr></thead><tbody>",
    ]
    for row in result.measured():
        cells = row_cells(row)
        parts.append(f"<tr{' class=software' if row.software else ''}><th>{_e(cells[0].text)}</th>")
        parts.extend(f"<td class='num'>{_e(c.text)}</td>" for c in cells[1:])
        parts.append(f"<td>{_e(_runs_on(row))}</td></tr>")
    parts.append("</tbody></table>")
    parts.append(
        "<p class='note'>inf/s: measured inferences per second, frames replayed as fast as inference takes them. "
        "p50/p95: the inference stage's latency. CPU ms/inf: CPU time of the inference's own thread and the "
        "threads its runtime started (read per thread), per inference. init: opening the session; 1st inf: its "
        "first inference (one-off costs). Top-1 agreement: share of the captured frames on which the top-1 label "
        "equals the first configuration's. GPU MHz, CPU MHz: the median SM clock and CPU clock over the measured "
        "span (a configuration measured at another clock than its neighbour's is not the hardware's ratio). "
        "mJ/inf: below, under Power state.</p>"
    )
    for line in task_lines(result):  # models that are not classifiers (their agreement: app/model/agreement.py)
        parts.append(f"<p class='note'>{_e(line)}</p>")
    parts.append("<h2>Power state</h2>")
    for line in power_lines(result):  # how the clocks and energy were read, or why they could not be
        parts.append(f"<p class='note'>{_e(line)}</p>")
    others = [r for r in result.rows if not r.measured]
    if others:
        parts.append("<h2>Not measured here</h2><table><thead><tr><th>configuration</th><th>outcome</th>")
        parts.append("<th>reason</th></tr></thead><tbody>")
        for r in others:
            parts.append(f"<tr><th>{_e(r.label)}</th><td>{_e(r.outcome)}</td><td>{_e(r.reason)}</td></tr>")
        parts.append("</tbody></table>")
    if plot_png:
        uri = "data:image/png;base64," + base64.b64encode(plot_png).decode("ascii")
        parts.append(f"<h2>Plots</h2><img src='{uri}' alt='throughput, latency, CPU per inference, start-up'>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _runs_on(row: SweepRow) -> str:
    parts = [row.accelerator or row.delegate]
    if row.adapter:
        parts.append(f"adapter {row.adapter}" + (" (SOFTWARE RENDERER: the CPU)" if row.software else ""))
    if row.nodes_total is not None:
        parts.append(f"{row.nodes_delegated if row.nodes_delegated is not None else '?'}/{row.nodes_total} nodes")
    return ", ".join(parts)


def plot_png(result: SweepResult) -> bytes | None:
    """Four panels of horizontal bars, one bar per measured configuration: throughput, latency
    p50 with p95, CPU per inference, init and first inference. None when nothing was measured."""
    rows = result.measured()
    if not rows:
        return None
    import matplotlib
    import numpy as np
    from matplotlib.figure import Figure  # no pyplot: no backend or display involved

    labels = [r.label + (" [sw GPU]" if r.software else "") for r in rows]
    y = np.arange(len(rows))
    colours = [_colour(r) for r in rows]
    with matplotlib.rc_context(_STYLE):
        height = 1.6 + 0.34 * len(rows)
        fig = Figure(figsize=(13, 2 * height), layout="constrained")
        axes = fig.subplots(2, 2, sharey=True)
        a, b, c, d = axes.flat
        _bars(a, y, [r.inference_fps for r in rows], colours, "Throughput (inferences/s)", ".1f")
        _bars(b, y, [r.latency_p50_ms for r in rows], colours, "Latency p50 (bar), p95 (ms)", None)
        p50 = np.array([r.latency_p50_ms or 0.0 for r in rows])
        p95 = np.maximum(np.array([r.latency_p95_ms or 0.0 for r in rows]), p50)
        b.errorbar(p50, y, xerr=[np.zeros(len(rows)), p95 - p50], fmt="none", ecolor="#333", capsize=3, lw=1)
        for yi, lo, hi in zip(y, p50, p95, strict=True):
            b.annotate(f"{lo:.2f} / {hi:.2f}", (hi, yi), xytext=(5, 0), textcoords="offset points", va="center",
                       fontsize=8.5)  # fmt: skip
        _bars(c, y, [r.cpu_ms_per_inference for r in rows], colours, "CPU per inference (ms)", ".2f")
        height_bar = 0.4
        d.barh(
            y - height_bar / 2, [r.init_ms or 0 for r in rows], height_bar, color="#9ecae1", label="session open (init)"
        )
        d.barh(
            y + height_bar / 2,
            [r.first_inference_ms or 0 for r in rows],
            height_bar,
            color="#3182bd",
            label="first inference",
        )
        d.set_title("Start-up (ms)")
        d.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2)
        starts = [r.init_ms for r in rows] + [r.first_inference_ms for r in rows]
        spans = ([r.inference_fps for r in rows], [*p50, *p95], [r.cpu_ms_per_inference for r in rows], starts)
        for ax, values, room in zip(axes.flat, spans, (1.2, 1.45, 1.2, 1.1), strict=True):
            ax.set_yticks(y, labels)
            _x_axis(ax, values, room)
        a.invert_yaxis()  # shared by all four: the first configuration on top
        data = io.BytesIO()
        fig.savefig(data, format="png", dpi=100)
    return data.getvalue()


LOG_SPAN = 30.0  # figures spanning more than this factor are drawn on a log scale (a software GPU beside the CPU)


def _x_axis(ax, values: list, room: float) -> None:
    """Linear from 0, or logarithmic when the figures span more than LOG_SPAN: a software GPU's
    1,500 ms beside the CPU's 5 ms would leave the CPU bars invisible. `room`: for the labels."""
    positive = [float(v) for v in values if v is not None and v > 0]
    if not positive:
        return
    low, high = min(positive), max(positive)
    if high / low > LOG_SPAN:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # mathtext is off: no 10^{n}
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(low / 2, high * room**3)
        ax.set_title(ax.get_title(loc="left") + ", log scale", loc="left")
    else:
        ax.set_xlim(0, high * room)


def _bars(ax, y, values: list[float | None], colours: list[str], title: str, fmt: str | None) -> None:
    clean = [v or 0.0 for v in values]
    bars = ax.barh(y, clean, 0.7, color=colours)
    if fmt:
        ax.bar_label(bars, [format(v, fmt) for v in clean], padding=3, fontsize=8.5)
    ax.set_title(title)


_STYLE: dict[RcKeyType, Any] = {
    "text.parse_math": False,  # model names are text, not TeX
    "font.size": 9.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "x",
    "axes.axisbelow": True,
    "grid.color": "#e6e6e6",
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "legend.frameon": False,
}
_DELEGATE_COLOURS = {"cpu": "#4c72b0", "gpu": "#55a868", "coreml": "#c44e52"}


def _colour(row: SweepRow) -> str:
    return "#dd8452" if row.software else _DELEGATE_COLOURS.get(row.delegate, "#8172b2")


def check_html_out(out: Path) -> None:
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--html {out}: the report is an HTML page; name it .html")
    _check_parent(out, "--html")


def check_json_out(out: Path) -> None:
    _check_parent(out, "--json")


def _check_parent(out: Path, option: str) -> None:
    if out.is_dir():
        raise UsageError(f"{option} {out}: is a folder")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {out}: folder {parent} does not exist")


def write_html(result: SweepResult, out: Path) -> int:
    """Draw and write the page (atomically: a failed write never leaves half a file); its size."""
    data = render_html(result, plot_png(result)).encode("utf-8")
    write_atomic(out, data)
    return len(data)

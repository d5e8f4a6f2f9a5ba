"""Live plots (pyqtgraph): fps, latency per stage, CPU %, memory (the process's resident set and its GPU
memory, MB) over the last N seconds, and in the row's two last plots the power state: GPU SM clock and
CPU clock (MHz), GPU power (W) (the first left out of a narrow window); where a counter is not
readable the plot says "not readable here" and why (app/metrics/energy.py PowerNotes).

Fed a few times a second from a MetricsSnapshot; each series lives in a numpy ring
(app.metrics.window.Ring) and is pushed with setData, thin pens, no antialiasing. Switches
of delegate or model are vertical labelled markers, so before/after reads at a glance.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF, QResizeEvent
from PySide6.QtWidgets import QWidget

from app.metrics.energy import PowerNotes
from app.metrics.window import MetricsSnapshot, Ring

HISTORY_S = 60.0
_MAX_POINTS = 4096  # > HISTORY_S x any sensible refresh rate
LEGEND_TEXT_SIZE, LEGEND_TEXT_COLOUR = "8pt", "#222222"
COMPACT_HEIGHT = 200  # pixels: a shorter plot area shows no legends or x axis label
MIN_PLOT_WIDTH = 150  # pixels: a narrower area shows fewer plots
MEMORY_PLOT_WIDTH = 800  # pixels: a narrower area leaves the memory plot out (the CPU title has the figure)
POWER_PLOTS_WIDTH = 1300  # pixels: a narrower area leaves the clock and power plots out (fps keeps its room)
# Each column's share of the width. Measured at 8pt: the latency legend needs 234 pixels for two columns
# (255 in A/B), fps' 216 (227), CPU's one column 165, memory's 109; so at 1280×860 (865 pixels for four
# plots) every legend keeps its rows (three at most), the fps plot more than 200 pixels of data, and the
# memory plot, two series of small figures, the narrowest column.
_STRETCH = {"fps": 28, "latency": 31, "cpu": 24, "memory": 17}
_OTHER_STRETCH = 24
_LEGEND_INSET = 6  # pixels: a legend's width inside its column
MARKER_ROWS = 4  # switch labels close together stack up to this many rows up the line
_MARKER_BOTTOM = 0.1  # a new label's place along its line (0 = bottom, 1 = top) until it is placed
_LABEL_PAD = 12.0  # pixels: the label's own margins (4 a side) and a gap to its neighbour

# (plot, key, legend, colour, dashed)
SERIES = (
    ("fps", "capture_fps", "capture fps", "#8c8c8c", False),
    ("fps", "inference_fps", "inference fps", "#1f77b4", False),
    ("fps", "display_fps", "displayed fps", "#2ca02c", True),
    ("fps", "b_inference_fps", "B inference fps", "#ff7f0e", False),
    ("latency", "inference_mean", "inference mean", "#1f77b4", False),
    ("latency", "b_inference_mean", "B inference mean", "#ff7f0e", False),
    ("latency", "inference_p95", "inference p95", "#1f77b4", True),
    ("latency", "preprocess_mean", "preprocess", "#bcbd22", False),
    ("latency", "postprocess_mean", "postprocess", "#9467bd", False),
    ("latency", "end_to_end_mean", "end to end", "#d62728", False),
    ("cpu", "process_cpu", "process (% of machine)", "#1f77b4", False),
    ("cpu", "system_cpu", "system", "#8c8c8c", False),
    ("memory", "rss_mb", "resident set", "#1f77b4", False),  # the process and its children (a GPU process)
    ("memory", "gpu_mem_mb", "GPU memory", "#2ca02c", False),  # NVML's, for the same processes
    ("clock", "gpu_sm_clock", "GPU SM clock", "#2ca02c", False),
    ("clock", "cpu_mhz", "CPU clock", "#8c8c8c", False),  # the median of the cores
    ("power", "gpu_power", "GPU power", "#d62728", False),
)
KEYS = tuple(key for _, key, *_ in SERIES)
_TITLES = {"fps": "Frames per second", "latency": "Latency (ms)", "cpu": "CPU %", "memory": "Memory (MB)",
           "clock": "Clock (MHz)", "power": "Power (W)"}  # fmt: skip
POWER_ROW = ("clock", "power")  # right of memory in a wide plot area
PLOTS = ("fps", "latency", "cpu", "memory", *POWER_ROW)  # left to right; a narrower area drops the last first
GPU_MEMORY_NOT_READABLE = "GPU memory not readable here"
_NOTE_COLOUR = "#555555"
_BRIEF = re.compile(r" \([^()]*\)(?=\)$)", re.MULTILINE)  # "(NVML not installed (pip install ...))" -> "(NVML ...)"


def snapshot_values(
    snap: MetricsSnapshot, display_fps: float, b: MetricsSnapshot | None = None, gpu_mem_mb: float | None = None
) -> dict[str, float]:
    """The plotted numbers of one snapshot (NaN where not known: pyqtgraph leaves a gap). `gpu_mem_mb`: NVML's
    figure for the process, read apart (the snapshot has none)."""

    def mean(stage: str) -> float:
        s = snap.latency.get(stage)
        return s.mean if s and s.count else np.nan

    def p95(stage: str) -> float:
        s = snap.latency.get(stage)
        return s.p95 if s and s.count else np.nan

    def known(value: float | None) -> float:
        return np.nan if value is None else value

    b_stats = b.latency.get("inference") if b is not None else None
    return {
        "b_inference_fps": b.inference_fps if b is not None else np.nan,
        "b_inference_mean": b_stats.mean if b_stats and b_stats.count else np.nan,
        "capture_fps": snap.capture_fps,
        "inference_fps": snap.inference_fps,
        "display_fps": display_fps,
        "inference_mean": mean("inference"),
        "inference_p95": p95("inference"),
        "preprocess_mean": mean("preprocess"),
        "postprocess_mean": mean("postprocess"),
        "end_to_end_mean": mean("end_to_end"),
        "process_cpu": known(snap.process_cpu_pct_machine),
        "system_cpu": known(snap.system_cpu_pct),
        "rss_mb": known(snap.rss_mb),
        "gpu_mem_mb": known(gpu_mem_mb),
        "gpu_sm_clock": known(snap.gpu_sm_clock_mhz),
        "cpu_mhz": known(snap.cpu_mhz),
        "gpu_power": known(snap.gpu_power_w),
    }


_PLOT_OF = {key: plot_name for plot_name, key, *_ in SERIES}
_SAMPLE_W = 28.0  # a legend entry's line sample, the spacing and the label's margins (pyqtgraph's LegendItem)
_LAYOUT_MARGIN = 12.0  # the plot layout's margins and spacing around each column


def _grid_width(widths: list[float], columns: int) -> float:
    """A legend's width in `columns`: each grid column as wide as its widest entry (entries fill rows first)."""
    return sum(max(widths[c::columns], default=0.0) for c in range(min(columns, len(widths))))


class LivePlots(pg.GraphicsLayoutWidget):
    def __init__(self, parent: QWidget | None = None, history_s: float = HISTORY_S) -> None:
        super().__init__(parent)
        self.setMinimumHeight(120)  # the plots stay in a small window (compact there: see resizeEvent)
        self._compact: tuple[bool, int] | None = None  # (compact, plots shown) as last fitted
        pg.setConfigOptions(antialias=False)
        self.setBackground("w")
        self.history_s = history_s
        self.t0 = time.monotonic()
        self._ring = Ring(1 + len(KEYS), _MAX_POINTS)
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._markers: list[Marker] = []
        self.legends: dict[str, pg.LegendItem] = {}
        self.updates = 0  # setData rounds done (the soak benchmark counts these)
        for col, name in enumerate(PLOTS):
            plot = self.addPlot(row=0, col=col, title=_TITLES[name])
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.setMenuEnabled(False)
            # The legend sits under its plot, outside the data, in dark text (it was small grey text over the lines).
            legend = pg.LegendItem(labelTextSize=LEGEND_TEXT_SIZE, labelTextColor=LEGEND_TEXT_COLOUR, frame=False)
            legend.layout.setVerticalSpacing(0)
            legend.layout.setHorizontalSpacing(2)
            legend.layout.setContentsMargins(0, 0, 0, 0)
            self.addItem(legend, row=1, col=col)
            self.ci.layout.setAlignment(legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            self.legends[name] = legend
            plot.setLabel("bottom", "seconds ago")
            _clip_title(plot.titleLabel)
            plot.disableAutoRange(axis="y")  # set in redraw: from 0, so noise around 30 fps looks like noise
            self.plots[name] = plot
        self.plots["cpu"].setYRange(0, 100)
        for name in PLOTS[1:]:
            self.plots[name].setXLink(self.plots["fps"])
        # "not readable here" and why, in the plot that cannot show it (top left of its view)
        self.notes: dict[str, pg.TextItem] = {}
        for name in (*POWER_ROW, "memory"):
            note = pg.TextItem("", color=_NOTE_COLOUR, anchor=(0, 0))
            font = note.textItem.font()
            font.setPointSizeF(7.5)
            note.setFont(font)
            note.setParentItem(self.plots[name].getViewBox())  # in view pixels: stays put as the data scroll
            note.setPos(4, 2)
            self.notes[name] = note
        self.set_power_notes(PowerNotes.of(None))
        self.notes["memory"].setVisible(False)  # until a reading says GPU memory is not readable
        self._legend_names: dict[str, str] = {}
        for plot_name, key, legend, colour, dashed in SERIES:
            pen = pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
            b_side = key.startswith("b_")  # in the legend only while an A/B comparison runs
            self.curves[key] = self.plots[plot_name].plot(pen=pen, connect="finite")
            if not b_side:
                self.legends[plot_name].addItem(self.curves[key], legend)
            self._legend_names[key] = legend
        self._legend_columns()
        self._cpu_title = _TITLES["cpu"]
        self._fit_legends()
        self._b_shown = False

    def show_b(self, on: bool) -> None:
        """Name side B's curves in the legends while comparing, drop them after."""
        if on == self._b_shown:
            return
        self._b_shown = on
        for plot_name, key, *_ in SERIES:
            if not key.startswith("b_"):
                continue
            legend = self.legends[plot_name]
            if on:
                legend.addItem(self.curves[key], self._legend_names[key])
            else:
                legend.removeItem(self.curves[key])
        self._legend_columns()
        self._fit_legends()

    def _legend_columns(self) -> None:
        """Each legend in as many columns (three at most) as fit its plot's share of the width: a legend
        wider than its share widened its plot's column and pushed the last plot out of view (A/B's
        'B inference mean' cut the CPU % plot at 1280×860)."""
        shown = self._compact[1] if self._compact else 3  # plots shown, as last fitted to the size
        columns_width = self._column_widths(shown)
        for col, legend in enumerate(self.legends.values()):
            share = (columns_width[col] if col < shown else columns_width[-1]) - _LEGEND_INSET
            widths = [_SAMPLE_W + label.item.boundingRect().width() for _, label in legend.items]
            columns = next((n for n in (3, 2) if _grid_width(widths, n) <= share), 1)
            legend.setColumnCount(columns)

    def set_power_notes(self, notes: PowerNotes) -> None:
        """Say in the clock and power plots which figures are not readable here, and why."""
        texts = {"clock": [t for t in (notes.gpu, notes.cpu_clock) if t], "power": [notes.gpu] if notes.gpu else []}
        for name, lines in texts.items():
            which = "GPU clock" if name == "clock" else "GPU power"
            full = "\n".join(line.replace("GPU clock and power", which) for line in lines)
            note = self.notes[name]
            if full != note.toolTip():
                note.setText(_BRIEF.sub("", full))  # the plot is narrow: the reason's own aside in the tooltip
                note.setToolTip(full)
            note.setVisible(bool(full))
        # the CPU plot's title carries the figures while the clock and power plots are left out: its
        # tooltip says why any is missing
        self._power_tip = "\n".join(t for t in (notes.gpu, notes.cpu_clock) if t)
        self._title_tip()
        self._wrap_notes()

    def set_memory_note(self, reason: str | None) -> None:
        """Say in the memory plot that GPU memory is not readable here (the reason in its tooltip); None: it
        is read (or nothing was said yet)."""
        note = self.notes["memory"]
        tip = f"{GPU_MEMORY_NOT_READABLE}: {reason}" if reason else ""
        if tip != note.toolTip():
            note.setText(GPU_MEMORY_NOT_READABLE if reason else "")
            note.setToolTip(tip)
            self._title_tip()
        note.setVisible(bool(reason))
        self._wrap_notes()

    def memory_note(self) -> tuple[str, str]:
        """The memory plot's note as shown and its tooltip ("", "" where GPU memory is read)."""
        note = self.notes["memory"]
        return (note.toPlainText(), note.toolTip()) if note.isVisible() else ("", "")

    def _title_tip(self) -> None:
        """The CPU plot's title carries the figures of the plots left out: its tooltip says why any is missing."""
        tips = [self._power_tip] if self._power_tip else []
        if self.__dict__.get("notes") and self.notes["memory"].toolTip():
            tips.append(self.notes["memory"].toolTip())
        self.plots["cpu"].titleLabel.setToolTip("\n".join(tips))

    def note_texts(self) -> dict[str, str]:
        """The notes as shown (empty where every figure of that plot is readable)."""
        return {name: self.notes[name].toolTip() if self.notes[name].isVisible() else "" for name in POWER_ROW}

    def note_shown(self) -> dict[str, str]:
        """The notes' text as drawn (each reason without its own parenthesised aside)."""
        return {name: self.notes[name].toPlainText() if self.notes[name].isVisible() else "" for name in POWER_ROW}

    def _wrap_notes(self) -> None:
        for name, note in self.__dict__.get("notes", {}).items():  # {}: a resize while being built
            width = self.plots[name].getViewBox().width()
            if width > 0:
                note.setTextWidth(max(40.0, width - 8))

    def _fit_legends(self) -> None:
        """Legends take the height their rows need, no more (the plots get the rest)."""
        for legend in self.legends.values():
            legend.updateSize()
            height = legend.layout.preferredHeight() if legend.isVisible() else 0
            legend.setMaximumHeight(height)
            legend.setMinimumHeight(height)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def add_point(self, values: dict[str, float], t: float | None = None) -> None:
        t = self.now() if t is None else t
        self._ring.append([t, *(values.get(k, np.nan) for k in KEYS)])
        self._ring.trim(t - self.history_s)
        self._power_in_title(values)
        self.redraw(t)

    def _power_in_title(self, values: dict[str, float]) -> None:
        """While the clock and power plots are left out (a narrow plot area), the CPU plot's title carries
        the newest figures ("CPU % · GPU 1980 MHz 135 W · CPU 2400 MHz"), or says they are not readable; while
        the memory plot is left out too, the resident set first ("CPU % · 172 MB · ...")."""
        title = _TITLES["cpu"]
        if not self.plots["memory"].isVisible():
            rss, gpu_mem = values.get("rss_mb", np.nan), values.get("gpu_mem_mb", np.nan)
            if np.isfinite(rss):
                memory = f"{rss:.0f} MB" + (f", GPU {gpu_mem:.0f} MB" if np.isfinite(gpu_mem) else "")
                title += f"<span style='font-size:8pt'> · {memory}</span>"
        if not self.plots["clock"].isVisible():
            gpu, watts, cpu = (values.get(k, np.nan) for k in ("gpu_sm_clock", "gpu_power", "cpu_mhz"))
            gpu_text = f"GPU {gpu:.0f} MHz" + (f" {watts:.0f} W" if np.isfinite(watts) else "")
            parts = [gpu_text] if np.isfinite(gpu) else []
            parts += [f"CPU {cpu:.0f} MHz"] if np.isfinite(cpu) else []
            figures = " · ".join(parts) if parts else "clocks not readable here"
            title += f"<span style='font-size:8pt'> · {figures}</span>"  # smaller: the plot's own title first
        if title != self._cpu_title:
            self._cpu_title = title
            self.plots["cpu"].setTitle(title)
            self.plots["cpu"].titleLabel.setMinimumWidth(0)  # a long title is clipped, never widens its column

    def redraw(self, t: float) -> None:
        rows = self._ring.rows()
        x = rows[:, 0] - t  # seconds relative to now: the right edge is "now"
        for i, key in enumerate(KEYS, start=1):
            self.curves[key].setData(x, rows[:, i])
        self.plots["fps"].setXRange(-self.history_s, 0, padding=0)
        self._fit_from_zero(rows)
        for marker in self._markers:
            for line in marker.lines.values():
                line.setValue(marker.at - t)
        self._drop_old_markers(t)
        self.place_marker_labels()
        self.updates += 1

    def _fit_from_zero(self, rows: np.ndarray) -> None:
        """fps and latency axes start at 0 and end just above the highest value shown: an autoscaled
        29.6-30.2 fps axis made noise look dramatic, and with no data it showed -0.4..0.4."""
        for name in ("fps", "latency", "memory", *POWER_ROW):
            columns = [i for i, key in enumerate(KEYS, start=1) if _PLOT_OF[key] == name]
            values = rows[:, columns] if len(rows) else np.zeros((0, 1))
            top = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
            self.plots[name].setYRange(0, max(1.0, top * 1.12), padding=0)

    def set_static(
        self,
        t: np.ndarray,
        values: dict[str, np.ndarray],
        markers: list[tuple[float, str]],
        b: tuple[np.ndarray, dict[str, np.ndarray]] | None = None,
    ) -> None:
        """Show a recorded session: absolute seconds on the x axis, markers where events were. `b`: side B
        of an A/B recording, its own times (on A's clock) and its `b_` series, drawn beside A's."""
        self.clear_series()
        for key, curve in self.curves.items():
            if key.startswith("b_"):
                b_t, b_values = b if b is not None else (np.zeros(0), {})
                curve.setData(b_t, b_values.get(key, np.full(len(b_t), np.nan)))
            else:
                curve.setData(t, values.get(key, np.full(len(t), np.nan)))
        for plot in self.plots.values():
            plot.setLabel("bottom", "seconds since the recording started")
        if len(t):
            first, last = float(t[0]), float(t[-1])
            if b is not None and len(b[0]):
                first, last = min(first, float(b[0][0])), max(last, float(b[0][-1]))
            self.plots["fps"].setXRange(first, last, padding=0.01)
        rows = np.column_stack([t, *(values.get(k, np.full(len(t), np.nan)) for k in KEYS)])
        if b is not None and len(b[0]):  # B's figures within the axes too
            b_t, b_values = b
            b_rows = np.column_stack([b_t, *(b_values.get(k, np.full(len(b_t), np.nan)) for k in KEYS)])
            rows = np.concatenate([rows, b_rows]) if len(rows) else b_rows
        self._fit_from_zero(rows)
        self.show_b(b is not None)
        for at, text in markers:
            self._add_marker_lines(text, at, at)
        self.place_marker_labels()
        self.updates += 1

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_to_height()
        self._fit_columns()
        if self.__dict__.get("legends"):
            self._fit_legend_columns()
        self._wrap_notes()
        self.place_marker_labels()  # the labels' room changed with the plot's width

    def _fit_to_height(self) -> None:
        """A small window keeps readable plots: below COMPACT_HEIGHT the legends and the x axis' label
        give their room to the data, and a narrow one shows fewer plots (fps first, then latency)."""
        if not self.__dict__.get("legends"):
            return
        compact = self.height() < COMPACT_HEIGHT
        shown = max(1, min(3, self.width() // MIN_PLOT_WIDTH))
        shown = 4 if self.width() >= MEMORY_PLOT_WIDTH else shown
        shown = len(self.plots) if self.width() >= POWER_PLOTS_WIDTH else shown
        if (compact, shown) == self._compact:
            return
        self._compact = (compact, shown)
        for col, (name, plot) in enumerate(self.plots.items()):
            visible = col < shown
            plot.getAxis("bottom").showLabel(not compact)
            plot.setVisible(visible)
            self.legends[name].setVisible(visible and not compact)
            # A hidden plot and legend still ask for their width, and a column's minimum wins over its maximum
            # of 0: the clock and power plots left a blank band right of the CPU % plot.
            for item in (plot, self.legends[name]):
                item.setMaximumWidth(1e6 if visible else 0)
                item.setMinimumWidth(0)
            self.ci.layout.setColumnMaximumWidth(col, 1e6 if visible else 0)
            self.ci.layout.setColumnMinimumWidth(col, 0)
        self._fit_legends()

    def _fit_columns(self) -> None:
        """Each shown plot's column gets its share of the width (the memory plot's is smaller), fixed: left to
        their preferred widths, the columns followed their legends' and a one-column legend squeezed the
        latency plot."""
        if not self.__dict__.get("legends") or self._compact is None:
            return
        shown = self._compact[1]
        widths = self._column_widths(shown)
        for col in range(len(PLOTS)):
            self.ci.layout.setColumnFixedWidth(col, widths[col] if col < shown else 0.0)

    def _column_widths(self, shown: int) -> list[float]:
        """The widths of the first `shown` columns: the room shared by _STRETCH."""
        layout = self.ci.layout
        left, _, right, _ = layout.getContentsMargins()
        room = self.viewport().width() - left - right - layout.horizontalSpacing() * (len(PLOTS) - 1) - 2
        weights = [_STRETCH.get(name, _OTHER_STRETCH) for name in PLOTS[:shown]]
        return [max(0.0, room * w / sum(weights)) for w in weights]

    def _fit_legend_columns(self) -> None:
        before = [legend.columnCount for legend in self.legends.values()]
        self._legend_columns()
        if [legend.columnCount for legend in self.legends.values()] != before:
            self._fit_legends()

    def add_marker(self, text: str, at: float | None = None, memory: str = "") -> None:
        """A labelled vertical line on every plot at time `at` (plot clock; default now); `memory` labels its
        line on the memory plot (the init footprint of the session it opened: "init 33 MB")."""
        at = self.now() if at is None else at
        self._add_marker_lines(text, at, at - self.now(), memory)

    def add_memory_label(self, text: str, at: float | None = None) -> None:
        """A labelled line on the memory plot alone: A/B's side B opened a session ("B init 46 MB"); its
        open is not a marker of its own on the other plots (side A's open came at the same moment)."""
        at = self.now() if at is None else at
        self._add_marker_lines("", at, at - self.now(), text, only=("memory",))

    def _add_marker_lines(self, text: str, at: float, x: float, memory: str = "", only: tuple[str, ...] = ()) -> None:
        lines = {}
        labels = {"fps": text, "memory": memory}
        for name, plot in self.plots.items():
            if only and name not in only:
                continue
            line = _marker_line(labels.get(name) or None, x)
            plot.addItem(line, ignoreBounds=True)
            lines[name] = line
        self._markers.append(Marker(at, text, lines, memory))
        self._markers.sort(key=lambda m: m.at)

    def place_marker_labels(self) -> None:
        """Put each switch label where it neither covers another nor runs off the plot: what runs on the fps
        plot, the init footprint on the memory plot.

        A label hangs left of its line (it ends at the switch) and flips to the right when that
        would cross the plot's left edge; labels that would touch are stacked in rows up the line,
        the newest lowest; a label with no free row, or wider than the plot, is elided (the full
        text stays in its tooltip)."""
        if not self.__dict__.get("plots"):  # a resize while the base class is being built
            return
        for name in ("fps", "memory"):
            labelled = [m for m in self._markers if m.label_text(name) and name in m.lines]
            if labelled and self.plots[name].isVisible():
                self._place_labels(name, labelled)

    def _place_labels(self, name: str, markers: list[Marker]) -> None:
        view = self.plots[name].getViewBox()
        (x_lo, x_hi), width, height = view.viewRange()[0], view.width(), view.height()
        if width <= 0 or height <= 0 or x_hi <= x_lo:
            return
        per_unit = width / (x_hi - x_lo)
        row_h = markers[0].lines[name].label.boundingRect().height() + 2
        n_rows = max(1, min(MARKER_ROWS, int((height * 0.8 - 2) // row_h)))  # the upper part is the data's
        rows: list[list[tuple[float, float]]] = [[] for _ in range(n_rows)]
        for marker in reversed(markers):  # newest first: it gets the lowest row
            label = marker.lines[name].label
            x = (marker.at_x() - x_lo) * per_unit
            if not 0 <= x <= width:
                label.setVisible(False)
                continue
            if not label.isVisible():
                label.setVisible(True)
            whole = marker.label_text(name)
            text = whole
            full = _text_width(label, text) + _LABEL_PAD
            right = full > x and width - x > x  # hangs left of its line unless only the right has room
            room = width - x if right else x
            if full > room:  # no room on either side: shortened to fit
                text = _elide(label, text, int(room - _LABEL_PAD))
                full = _text_width(label, text) + _LABEL_PAD
            span = (x, x + full) if right else (x - full, x)
            row = next((i for i, used in enumerate(rows) if all(span[1] <= a or span[0] >= b for a, b in used)), None)
            if row is None:  # no free row: shortened into the row with the most room beside its line, or hidden
                rooms = [_free_room(used, x, right, width) for used in rows]
                row = max(range(n_rows), key=rooms.__getitem__)
                if rooms[row] < 3 * _LABEL_PAD:
                    label.setVisible(False)
                    continue
                text = _elide(label, text, int(rooms[row] - _LABEL_PAD))
                span = (x, x + rooms[row]) if right else (x - rooms[row], x)
            rows[row].append(span)
            label.setFormat(text.replace("{", "{{").replace("}", "}}"))  # the line re-applies it as it moves
            label.setToolTip(whole)
            label.anchors = [(0, 1), (0, 1)] if right else [(1, 1), (1, 1)]  # the text's bottom at the point
            label.setPosition(min(1.0, (2 + row * row_h) / height))

    def marker_count(self) -> int:
        """Markers on every plot (a memory plot's own label, side B's init, is not one)."""
        return sum(1 for marker in self._markers if "fps" in marker.lines)

    def marker_texts(self) -> list[str]:
        """The markers' full texts, oldest first (a label on the plot may be elided; its tooltip is whole)."""
        return [marker.text for marker in self._markers if "fps" in marker.lines]

    def memory_labels(self) -> list[str]:
        """The memory plot's labels (the init footprints), oldest first, in full."""
        return [marker.memory for marker in self._markers if marker.memory]

    def clear_series(self) -> None:
        self._ring.clear()
        for marker in self._markers:
            for name, line in marker.lines.items():
                self.plots[name].removeItem(line)
        self._markers.clear()

    def _drop_old_markers(self, t: float) -> None:
        # Markers that scrolled off are removed, so a long run does not accumulate items.
        while self._markers and self._markers[0].at < t - self.history_s:
            marker = self._markers.pop(0)
            for name, line in marker.lines.items():
                self.plots[name].removeItem(line)

    def series(self, key: str) -> np.ndarray:
        """The stored values of one series (tests and the soak benchmark read these)."""
        return self._ring.rows()[:, 1 + KEYS.index(key)]


@dataclass
class Marker:
    """A switch marker: when (plot clock, or a recording's seconds), its text, its line on each plot (by plot
    name), and the memory plot's label (the init footprint of the session it opened; "" for none)."""

    at: float
    text: str
    lines: dict[str, pg.InfiniteLine]
    memory: str = ""

    def at_x(self) -> float:
        return next(iter(self.lines.values())).value()

    def label_text(self, plot: str) -> str:
        return self.text if plot == "fps" else self.memory if plot == "memory" else ""


def _clip_title(label: pg.LabelItem) -> None:
    """A title longer than its column is clipped, never widens the plot past it: each column's width is
    fixed (`_fit_columns`), and LabelItem sets its minimum width to its text's at every setText (Review's
    "Memory (MB), as recorded" pushed the memory plot's data past the window's right edge)."""
    update = label.updateMin

    def update_min() -> None:
        update()
        label.setMinimumWidth(0)

    label.updateMin = update_min


def _marker_line(label: str | None, at: float) -> pg.InfiniteLine:
    return pg.InfiniteLine(
        pos=at,
        angle=90,
        pen=pg.mkPen("#444444", width=1, style=Qt.PenStyle.DotLine),
        label=None if label is None else label.replace("{", "{{").replace("}", "}}"),  # a format string
        labelOpts={
            "position": _MARKER_BOTTOM,
            "color": "#222222",
            "fill": (255, 255, 255, 220),
            "anchors": [(1, 0), (1, 0)],
        },
    )


def _free_room(used: list[tuple[float, float]], x: float, right: bool, width: float) -> float:
    """Pixels free in a row of label spans from x rightwards (right) or leftwards."""
    if any(a < x < b for a, b in used):
        return 0.0
    if right:
        return min((a for a, _ in used if a >= x), default=width) - x
    return x - max((b for _, b in used if b <= x), default=0.0)


def _text_width(label: pg.TextItem, text: str) -> float:
    return QFontMetricsF(label.textItem.font()).horizontalAdvance(text)


def _elide(label: pg.TextItem, text: str, width: int) -> str:
    return QFontMetricsF(label.textItem.font()).elidedText(text, Qt.TextElideMode.ElideRight, max(0, width))

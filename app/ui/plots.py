"""Live plots (pyqtgraph): fps, latency per stage, CPU %, over the last N seconds.

Fed a few times a second from a MetricsSnapshot; each series lives in a numpy ring
(app.metrics.Ring) and is pushed with setData, thin pens, no antialiasing. Switches
of delegate or model are vertical labelled markers, so before/after reads at a glance.
"""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from app.metrics import MetricsSnapshot, Ring

HISTORY_S = 60.0
_MAX_POINTS = 4096  # > HISTORY_S x any sensible refresh rate

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
)
KEYS = tuple(key for _, key, *_ in SERIES)
_TITLES = {"fps": "Frames per second", "latency": "Latency (ms)", "cpu": "CPU %"}


def snapshot_values(snap: MetricsSnapshot, display_fps: float, b: MetricsSnapshot | None = None) -> dict[str, float]:
    """The plotted numbers of one snapshot (NaN where not known: pyqtgraph leaves a gap)."""

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
    }


_PLOT_OF = {key: plot_name for plot_name, key, *_ in SERIES}


class LivePlots(pg.GraphicsLayoutWidget):
    def __init__(self, parent: QWidget | None = None, history_s: float = HISTORY_S) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=False)
        self.setBackground("w")
        self.history_s = history_s
        self.t0 = time.monotonic()
        self._ring = Ring(1 + len(KEYS), _MAX_POINTS)
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._markers: list[tuple[float, list[pg.InfiniteLine]]] = []
        self.updates = 0  # setData rounds done (the soak benchmark counts these)
        for col, name in enumerate(("fps", "latency", "cpu")):
            plot = self.addPlot(row=0, col=col, title=_TITLES[name])
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.setMenuEnabled(False)
            legend = plot.addLegend(offset=(2, 2), labelTextSize="7pt", brush=pg.mkBrush(255, 255, 255, 190))
            legend.setColumnCount(2)
            legend.layout.setVerticalSpacing(-4)
            plot.setLabel("bottom", "seconds ago")
            plot.disableAutoRange(axis="y")  # set in redraw: from 0, so noise around 30 fps looks like noise
            self.plots[name] = plot
        self.plots["cpu"].setYRange(0, 100)
        for name in ("latency", "cpu"):
            self.plots[name].setXLink(self.plots["fps"])
        self._legend_names: dict[str, str] = {}
        for plot_name, key, legend, colour, dashed in SERIES:
            pen = pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
            b_side = key.startswith("b_")  # in the legend only while an A/B comparison runs
            self.curves[key] = self.plots[plot_name].plot(name=None if b_side else legend, pen=pen, connect="finite")
            self._legend_names[key] = legend
        self._b_shown = False

    def show_b(self, on: bool) -> None:
        """Name side B's curves in the legends while comparing, drop them after."""
        if on == self._b_shown:
            return
        self._b_shown = on
        for plot_name, key, *_ in SERIES:
            if not key.startswith("b_"):
                continue
            legend = self.plots[plot_name].legend
            if on:
                legend.addItem(self.curves[key], self._legend_names[key])
            else:
                legend.removeItem(self.curves[key])

    def now(self) -> float:
        return time.monotonic() - self.t0

    def add_point(self, values: dict[str, float], t: float | None = None) -> None:
        t = self.now() if t is None else t
        self._ring.append([t, *(values.get(k, np.nan) for k in KEYS)])
        self._ring.trim(t - self.history_s)
        self.redraw(t)

    def redraw(self, t: float) -> None:
        rows = self._ring.rows()
        x = rows[:, 0] - t  # seconds relative to now: the right edge is "now"
        for i, key in enumerate(KEYS, start=1):
            self.curves[key].setData(x, rows[:, i])
        self.plots["fps"].setXRange(-self.history_s, 0, padding=0)
        self._fit_from_zero(rows)
        for at, lines in self._markers:
            for line in lines:
                line.setValue(at - t)
        self._drop_old_markers(t)
        self.updates += 1

    def _fit_from_zero(self, rows: np.ndarray) -> None:
        """fps and latency axes start at 0 and end just above the highest value shown: an autoscaled
        29.6-30.2 fps axis made noise look dramatic, and with no data it showed -0.4..0.4."""
        for name in ("fps", "latency"):
            columns = [i for i, key in enumerate(KEYS, start=1) if _PLOT_OF[key] == name]
            values = rows[:, columns] if len(rows) else np.zeros((0, 1))
            top = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
            self.plots[name].setYRange(0, max(1.0, top * 1.12), padding=0)

    def set_static(self, t: np.ndarray, values: dict[str, np.ndarray], markers: list[tuple[float, str]]) -> None:
        """Show a recorded session: absolute seconds on the x axis, markers where events were."""
        self.clear_series()
        for key, curve in self.curves.items():
            curve.setData(t, values.get(key, np.full(len(t), np.nan)))
        for plot in self.plots.values():
            plot.setLabel("bottom", "seconds since the recording started")
        if len(t):
            self.plots["fps"].setXRange(float(t[0]), float(t[-1]), padding=0.01)
        self._fit_from_zero(np.column_stack([t, *(values.get(k, np.full(len(t), np.nan)) for k in KEYS)]))
        for at, text in markers:
            for name, plot in self.plots.items():
                plot.addItem(_marker_line(text if name == "fps" else None, at), ignoreBounds=True)
        self.updates += 1

    def add_marker(self, text: str, at: float | None = None) -> None:
        """A labelled vertical line on every plot at time `at` (plot clock; default now)."""
        at = self.now() if at is None else at
        lines = []
        for name, plot in self.plots.items():
            line = _marker_line(text if name == "fps" else None, 0.0)
            plot.addItem(line, ignoreBounds=True)
            lines.append(line)
        self._markers.append((at, lines))

    def marker_count(self) -> int:
        return len(self._markers)

    def clear_series(self) -> None:
        self._ring.clear()
        for _, lines in self._markers:
            for plot, line in zip(self.plots.values(), lines, strict=True):
                plot.removeItem(line)
        self._markers.clear()

    def _drop_old_markers(self, t: float) -> None:
        # Markers that scrolled off are removed, so a long run does not accumulate items.
        while self._markers and self._markers[0][0] < t - self.history_s:
            _, lines = self._markers.pop(0)
            for plot, line in zip(self.plots.values(), lines, strict=True):
                plot.removeItem(line)

    def series(self, key: str) -> np.ndarray:
        """The stored values of one series (tests and the soak benchmark read these)."""
        return self._ring.rows()[:, 1 + KEYS.index(key)]


def _marker_line(label: str | None, at: float) -> pg.InfiniteLine:
    return pg.InfiniteLine(
        pos=at,
        angle=90,
        pen=pg.mkPen("#444444", width=1, style=Qt.PenStyle.DotLine),
        label=label,
        labelOpts={"position": 0.12, "color": "#222222", "fill": (255, 255, 255, 200), "anchors": [(1, 0), (1, 0)]},
    )

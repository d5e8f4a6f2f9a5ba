"""Review a recorded session in the same plots the live window uses, as recorded: one point per
inference (app/recording/series.py), nothing smoothed, and a table of the recording's segments in
recorded order (what changed, what ran, the delegation facts, the figures and top-1 labels)."""

from __future__ import annotations

import html
import math
import statistics
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QMainWindow,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.metrics.energy import PowerNotes
from app.recording.segments import Segment, delegate_facts
from app.recording.series import RecordedSeries, circled, recorded_series
from app.recording.writer import Recording, cell_number, original_text, read_recording
from app.ui.views.plots import LivePlots

# Legend names for what Review draws: the recorded figures, named as such.
_LEGEND = {
    "capture_fps": "capture fps (as recorded)",
    "inference_fps": "inference fps (as recorded)",
    "inference_mean": "inference (each)",
    "preprocess_mean": "preprocess (each)",
    "postprocess_mean": "postprocess (each)",
    "end_to_end_mean": "end to end (each)",
}
_NOT_RECORDED = ("display_fps", "inference_p95")  # live-only series: out of the legends here
_TITLES = {
    "fps": "Frames per second, as recorded",
    "latency": "Latency (ms) of each inference",
    "cpu": "CPU %, as recorded",
    "memory": "Memory (MB), as recorded",
    "clock": "Clock (MHz), as recorded",
    "power": "Power (W), as recorded",
}
_UNRECORDED_POWER = "not in this recording (not readable where it was made, or recorded before format version 3)"
NOTE = (
    "Drawn as recorded, one point per inference, nothing smoothed: latency is each inference's own; "
    "fps and CPU % are the figures each row holds (the app's own measure over its window when the row was written)."
)
COLUMNS = (
    "part", "seconds", "changed at its start", "model", "backend: runs on", "threads", "nodes delegated",
    "ops left on CPU", "inferences", "inference ms (median)", "fps (median)", "top-1 labels", "labels file",
)  # fmt: skip


_B_LEGEND = {"b_inference_fps": "B inference fps (as recorded)", "b_inference_mean": "B inference (each)"}


_FRAME_ROOM = 24  # pixels: a window manager's frame and a margin, left and right (and top and bottom)


def _fitting_size(window: QWidget, width: int, height: int) -> tuple[int, int]:
    """At most `width` x `height`, and within the screen's free area with room for the window's frame:
    1400 px wide went past the right edge of a 1400-px screen once framed."""
    screen = window.screen()
    if screen is None:
        return width, height
    free = screen.availableGeometry()
    return min(width, free.width() - 2 * _FRAME_ROOM), min(height, free.height() - 2 * _FRAME_ROOM)


def _read_pair(path: Path) -> tuple[Path, Recording, Path | None, Recording | None, str | None]:
    """The recording opened and, for an A/B recording (either side's file), the other side's: side A first,
    then B's path and recording (None when it is not one), and why B could not be read."""
    session = read_recording(path)  # OSError/ValueError: the caller shows the message
    other = _other_side(path, session.metadata)
    if other is None:
        return path, session, None, None, None
    side, other_path = other
    try:
        other_session = read_recording(other_path)
    except (OSError, ValueError, UnicodeError) as exc:
        return path, session, None, None, f"{other_path.name} could not be read: {exc}"
    if side == "a":  # the file opened was side B's: side A leads, as everywhere else
        return other_path, other_session, path, session, None
    return path, session, other_path, other_session, None


class ReviewWindow(QMainWindow):
    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        path, session, self.b_path, b_session, b_problem = _read_pair(path)
        both = f" + {self.b_path.name} (A/B)" if self.b_path else ""
        self.setWindowTitle(f"Recording: {path.name}{both} — Delegate Scope")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        series = recorded_series(session)
        self.segments = [g for g in series.segments if g.inferences]
        self.inferences = len(series.t)
        self.markers = series.markers
        self.b_segments: list[Segment] = []
        self.b_inferences = 0
        b_drawn = None
        if b_session is not None:
            b_series = recorded_series(b_session)
            self.b_segments = [g for g in b_series.segments if g.inferences]
            self.b_inferences = len(b_series.t)
            # B's file opened when B first ran: its times are put on A's clock by both files' wall times.
            shift = _wall_origin(b_session) - _wall_origin(session)
            shift = 0.0 if math.isnan(shift) else shift
            b_t = b_series.t + shift
            b_drawn = (b_t, {"b_inference_fps": b_series.values["inference_fps"],
                             "b_inference_mean": b_series.values["inference_mean"]})  # fmt: skip
            self.markers = sorted([*self.markers, *((at + shift, f"B {text}") for at, text in b_series.markers)])
        meta = session.metadata
        self.summary = QLabel(self._summary_text(path, series, session, b_problem))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.note = QLabel(NOTE)
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #444")
        self.columns = ("side", *COLUMNS) if b_session is not None else COLUMNS
        sides = [("A", g, meta) for g in self.segments]
        if b_session is not None:
            sides += [("B", g, b_session.metadata) for g in self.b_segments]
        self.table = self._segment_table(sides)
        self.plots = LivePlots()
        self.plots.set_static(series.t, series.values, self.markers, b=b_drawn)
        self.plots.set_power_notes(_power_notes(series.values))
        self._name_recorded_series()
        self._lay_out()
        for keys in (QKeySequence(Qt.Key.Key_Escape), QKeySequence(QKeySequence.StandardKey.Close)):
            QShortcut(keys, self).activated.connect(self.close)  # Esc and Ctrl+W (Cmd+W) close a review

    def _summary_text(self, path: Path, series: RecordedSeries, session: Recording, b_problem: str | None) -> str:
        """The line above the table: what was recorded, its parts, what was lost, and the other side of an A/B."""
        meta = session.metadata
        duration = float(series.t[-1] - series.t[0]) if len(series.t) > 1 else 0.0
        parts = [f"<b>{html.escape(path.name)}</b>: {self.inferences} inferences over {duration:.1f} s"]
        if len(self.segments) > 1:
            parts.append(f"{len(self.segments)} parts, cut at every switch (below, in recorded order)")
        lost = meta.get("lost_rows")
        if isinstance(lost, int) and not isinstance(lost, bool) and lost > 0:  # the sidecar is untrusted
            parts.append(f"<span style='color:#b71c1c'>{lost} rows lost while recording</span>")
        if session.skipped_lines:
            parts.append(f"{session.skipped_lines} incomplete line(s) skipped (the recording was cut short)")
        if meta and meta.get("complete") is False:
            parts.append("<span style='color:#b71c1c'>not stopped cleanly</span>")
        compare = _mapping(meta.get("compare"))
        if self.b_path is not None:
            b = html.escape(self.b_path.name)
            c = html.escape(str(compare.get("comparison", "")))
            parts.append(
                f"A/B: side B ({b}) beside side A: {self.b_inferences} inferences, "
                f"<span style='color:#ff7f0e'>orange</span> in the plots, its parts marked B in the table"
                + (f"; per-frame comparison: {c}" if c else "")
            )
        elif isinstance(compare.get("b"), str):  # side A of an A/B recording: say where the rest is
            b, c = html.escape(compare["b"]), html.escape(str(compare.get("comparison", "")))
            missing = html.escape(b_problem) if b_problem else "not found beside it"
            parts.append(f"side A of an A/B recording (side B: {b}, {missing}; per-frame comparison: {c})")
        return " · ".join(parts)

    def _lay_out(self) -> None:
        """The summary above, the table and (below it) the note and the plots, split; sized to the screen."""
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        below = QWidget()
        below_layout = QVBoxLayout(below)
        below_layout.setContentsMargins(0, 0, 0, 0)
        below_layout.addWidget(self.note)
        below_layout.addWidget(self.plots, 1)
        split.addWidget(below)
        split.setStretchFactor(1, 1)
        layout.addWidget(split, 1)
        self.setCentralWidget(central)
        rows_shown = min(self.table.rowCount(), 6)
        table_h = (
            self.table.horizontalHeader().sizeHint().height()
            + sum(self.table.rowHeight(r) for r in range(rows_shown))
            + self.table.horizontalScrollBar().sizeHint().height()
            + 2 * self.table.frameWidth()
        )
        split.setSizes([table_h, 440])
        self.resize(*_fitting_size(self, 1400, 540 + table_h))

    def showEvent(self, event: QShowEvent) -> None:
        """Placed whole within the screen's free area (a window manager may put it partly past an edge)."""
        super().showEvent(event)
        screen = self.screen()
        if screen is None:
            return
        free, frame = screen.availableGeometry(), self.frameGeometry()
        x = max(free.left(), min(frame.left(), free.right() + 1 - frame.width()))
        y = max(free.top(), min(frame.top(), free.bottom() + 1 - frame.height()))
        if (x, y) != (frame.left(), frame.top()):
            self.move(x, y)

    def segment_rows(self) -> list[dict[str, str]]:
        """The table as text, row by row (tests and screenshots read this)."""
        return [
            {
                self.columns[c]: (item.text() if (item := self.table.item(r, c)) else "")
                for c in range(len(self.columns))
            }
            for r in range(self.table.rowCount())
        ]

    def _name_recorded_series(self) -> None:
        """The live plots name their series for live figures (means, p95, displayed fps); here they
        hold recorded ones: say so in the titles and legends, and leave out what was not recorded."""
        for name, plot in self.plots.plots.items():
            plot.setTitle(_TITLES.get(name, name))
            legend = self._legend(name)
            if legend is None:
                continue
            named = {id(sample.item): label.text for sample, label in legend.items}
            legend.clear()  # refilled in order: A's recorded series, then side B's
            drawn = plot.listDataItems()
            for key, curve in self.plots.curves.items():
                if curve in drawn and key not in _NOT_RECORDED and not key.startswith("b_"):
                    if text := _LEGEND.get(key) or named.get(id(curve)):
                        legend.addItem(curve, text)
            for key, curve in self.plots.curves.items():
                if key in _B_LEGEND and self.b_path is not None and curve in drawn:
                    legend.addItem(curve, _B_LEGEND[key])
            legend.updateSize()

    def _legend(self, name: str) -> pg.LegendItem | None:
        """A plot's legend: over the plot, or in LivePlots' own row under it."""
        legends = getattr(self.plots, "legends", None)
        if isinstance(legends, dict) and legends.get(name) is not None:
            return legends[name]
        return getattr(self.plots.plots[name], "legend", None)

    def legend_names(self) -> list[str]:
        """Every name the legends show (tests read this)."""
        names = []
        for name in self.plots.plots:
            legend = self._legend(name)
            names += [label.text for _, label in legend.items] if legend is not None else []
        return names

    def _segment_table(self, sides: list[tuple[str, Segment, dict]]) -> QTableWidget:
        """One row per part, each side's (A's, then B's in an A/B recording) in recorded order."""
        table = QTableWidget(len(sides), len(self.columns))
        table.setHorizontalHeaderLabels(list(self.columns))
        table.verticalHeader().setVisible(False)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setWordWrap(False)
        for row, (side, segment, meta) in enumerate(sides):
            cells = _segment_cells(segment, _mapping(meta.get("models")))
            if self.columns[0] == "side":
                cells = [side, *cells]
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if "FALLBACK" in text:
                    item.setForeground(QColor("#b71c1c"))
                elif side == "B" and column == 0:
                    item.setForeground(QColor("#ff7f0e"))  # B's colour in the plots
                table.setItem(row, column, item)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        return table


def _other_side(path: Path, meta: dict) -> tuple[str, Path] | None:
    """The other side's file of an A/B recording, beside this one: ("b", X-b.csv) for side A's X.csv (named
    in its sidecar), ("a", X.csv) for side B's X-b.csv. A name beside the file, never a path elsewhere."""
    compare = _mapping(meta.get("compare"))
    if isinstance(compare.get("b"), str):
        other = path.parent / Path(compare["b"]).name
        return ("b", other) if other.is_file() and other != path else None
    settings = _mapping(meta.get("settings"))
    if settings.get("compare_side") == "b" and path.stem.endswith("-b"):
        other = path.with_name(path.stem.removesuffix("-b") + path.suffix)
        return ("a", other) if other.is_file() else None
    return None


def _wall_origin(session: Recording) -> float:
    """The wall-clock time (epoch seconds) of the recording's t_s 0, from its first row holding both; NaN
    when none does. Two sides' files started apart are put on one clock by it."""
    for row in session.rows:
        t = cell_number(row.get("t_s"))
        try:
            wall = datetime.fromisoformat(original_text(row.get("timestamp", ""))).timestamp()
        except ValueError:
            continue
        if not math.isnan(t):
            return wall - t
    return math.nan


def _mapping(value: object) -> dict[str, Any]:
    """A sidecar's object, or an empty one where the file holds something else (a damaged sidecar)."""
    return value if isinstance(value, dict) else {}


def _segment_cells(segment: Segment, models: dict[str, Any]) -> list[str]:
    rows = segment.inferences
    facts = dict(delegate_facts(segment.facts, rows))
    model_ids = list(dict.fromkeys(original_text(r.get("model_id", "")) for r in rows))
    names = list(dict.fromkeys(original_text(r.get("model", "")) for r in rows))
    labels = []
    for model_id in model_ids:
        model = _mapping(models.get(model_id))
        source = model.get("labels")
        warnings = model.get("label_warnings") if isinstance(model.get("label_warnings"), list) else []
        text = str(source) if source else "not recorded"
        labels.append(text + (f" ({'; '.join(map(str, warnings))})" if warnings else ""))
    inference_ms = [v for v in (cell_number(r.get("inference_ms")) for r in rows) if not math.isnan(v)]
    fps = [v for v in (cell_number(r.get("inference_fps")) for r in rows) if not math.isnan(v)]
    top1 = Counter(original_text(r.get("top1_label", "")) for r in rows)
    top1.pop("", None)
    total = sum(top1.values())
    return [
        circled(segment.number),
        f"{segment.start_s:.1f}–{segment.end_s:.1f} s",
        segment.change or ("–" if segment.number == 1 else "?"),
        " / ".join(n for n in names if n) or "?",
        f"{facts.get('backend', '?')}: {facts.get('runs on', 'not recorded')}",
        facts.get("threads", "not recorded"),
        facts.get("nodes delegated", "not recorded").replace(" nodes delegated", ""),
        facts.get("ops left on CPU", "not recorded"),
        str(len(rows)),
        f"{statistics.median(inference_ms):.2f}" if inference_ms else "–",
        f"{statistics.median(fps):.1f}" if fps else "–",
        ", ".join(f"{label} {n / total:.0%}" for label, n in top1.most_common(3)) if total else "–",
        " / ".join(labels) or "not recorded",
    ]


def _power_notes(values: dict[str, np.ndarray]) -> PowerNotes:
    """What the recording holds no figure of (every cell of its column empty)."""

    def absent(key: str) -> bool:
        return not np.isfinite(values.get(key, np.zeros(0))).any()

    gpu = absent("gpu_sm_clock") and absent("gpu_power")
    return PowerNotes(
        f"GPU clock and power: {_UNRECORDED_POWER}" if gpu else None,
        f"CPU clock: {_UNRECORDED_POWER}" if absent("cpu_mhz") else None,
    )

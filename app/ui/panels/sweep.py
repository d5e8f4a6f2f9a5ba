"""The window's delegate sweep: "Sweep delegates…" starts app/live/sweep.py's runner (the sweep off the GUI
thread, the live pipeline paused around it) and shows its state in a dock of its own: progress, then a
table and bar plots side by side, and a button that saves the HTML report.

Nothing is pushed at the GUI: a timer polls the runner, as the main window polls the live pipeline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (
    QCheckBox,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.errors import DelegateScopeError
from app.live.sweep import SweepRunner, SweepState
from app.report.sweep import COLUMNS, header_lines, power_lines, row_cells, write_html
from app.tasks.delegates import DelegateStatus
from app.tasks.sweep import DEFAULT_FRAMES, SweepProgress, SweepResult, SweepRow

POLL_MS = 200
_NOT_MEASURED = QColor(120, 120, 120)
_BAR = {"cpu": (76, 114, 176), "gpu": (85, 168, 104), "coreml": (196, 78, 82)}
_SOFTWARE = (221, 132, 82)


class SweepPanel(QWidget):
    """The dock's contents: settings and buttons, progress, and the result as a table and plots."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.run_button = QPushButton("Run sweep")
        self.run_button.setToolTip("Capture frames from the current source and run them through every configuration")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.save_button = QPushButton("Save report…")
        self.save_button.setEnabled(False)
        self.save_button.setToolTip("The table and plots as one HTML page")
        self.frames = QSpinBox()
        self.frames.setRange(10, 1000)
        self.frames.setValue(DEFAULT_FRAMES)
        self.frames.setSuffix(" frames")
        self.frames.setToolTip("Frames captured once from the source and replayed to each configuration")
        self.software = QCheckBox("Include software GPU")
        self.software.setToolTip(
            "Run the GPU configurations even on a software renderer (SwiftShader, llvmpipe): 'GPU' work done by "
            "the CPU, flagged in the results"
        )
        self.bundled = QCheckBox("Every bundled model")
        self.bundled.setToolTip("Sweep every bundled model too, not only the one running now (and B's when comparing)")
        for widget in (self.run_button, self.cancel_button, self.save_button, self.frames, self.bundled, self.software):
            bar.addWidget(widget)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.status = QLabel("Not run yet: Benchmark → Sweep delegates…")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        layout.addWidget(self.progress)
        self.tabs = QTabWidget()
        self.table = QTableWidget(0, len(COLUMNS) + 1)
        self.table.setHorizontalHeaderLabels([*COLUMNS, "runs on / why not"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)  # one line per configuration; a long reason is in its tooltip
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.tabs.addTab(self.table, "Table")
        self.plots = pg.GraphicsLayoutWidget()
        self.plots.setBackground("w")
        self.tabs.addTab(self.plots, "Plots")
        layout.addWidget(self.tabs, 1)

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for widget in (self.frames, self.bundled, self.software):
            widget.setEnabled(not running)
        self.progress.setVisible(running)

    def show_progress(self, p: SweepProgress) -> None:
        self.progress.setRange(0, max(1, p.total * max(1, p.frames)))
        self.progress.setValue(p.index * max(1, p.frames) + min(p.done, p.frames))
        if p.phase == "capturing":
            self.status.setText(f"Capturing frames from {p.label}…")
        elif p.phase != "done":
            self.status.setText(f"Configuration {p.index + 1} of {p.total}: {p.label} ({p.phase} {p.done}/{p.frames})")
        self.progress.setFormat(f"{p.index + (1 if p.phase != 'done' else 0)}/{p.total}")

    def show_result(self, result: SweepResult) -> None:
        self.status.setText("\n".join([*header_lines(result), *power_lines(result)]))
        self.table.setRowCount(len(result.rows))
        for r, row in enumerate(result.rows):
            cells = row_cells(row)
            note = _runs_on(row) if row.measured else f"{row.outcome}: {row.reason}"
            texts = [c.text for c in cells] + [note]
            for c, text in enumerate(texts):
                item = QTableWidgetItem(text)
                if 0 < c < len(COLUMNS):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if not row.measured:
                    item.setForeground(QBrush(_NOT_MEASURED))
                item.setToolTip(note if c == len(texts) - 1 or not row.measured else text)
                self.table.setItem(r, c, item)
        self.save_button.setEnabled(True)
        self._plot(result.measured())

    def _plot(self, rows: list[SweepRow]) -> None:
        self.plots.clear()
        if not rows:
            return
        labels = [(i, r.label + (" [sw GPU]" if r.software else "")) for i, r in enumerate(rows)]
        brushes = [pg.mkBrush(*(_SOFTWARE if r.software else _BAR.get(r.delegate, (129, 114, 178)))) for r in rows]
        panels = (
            ("Throughput (inferences/s)", [r.inference_fps for r in rows]),
            ("Inference p50 / p95 (ms)", [r.latency_p50_ms for r in rows]),
            ("CPU per inference (ms)", [r.cpu_ms_per_inference for r in rows]),
        )
        y = np.arange(len(rows), dtype=float)
        for col, (title, values) in enumerate(panels):
            plot = self.plots.addPlot(row=0, col=col, title=title)
            plot.invertY(True)
            plot.showGrid(x=True, y=False, alpha=0.3)
            widths = np.array([v or 0.0 for v in values])
            plot.addItem(pg.BarGraphItem(x0=0, y=y, height=0.7, width=widths, brushes=brushes))
            ends = widths
            if col == 1:  # p95 whiskers
                ends = np.maximum(np.array([r.latency_p95_ms or 0.0 for r in rows]), widths)
                plot.addItem(pg.ErrorBarItem(x=widths, y=y, left=0, right=ends - widths, beam=0.3))
            for yi, end, value in zip(y, ends, widths, strict=True):
                shown = f"{value:.1f}" if col == 0 else f"{value:.2f} / {end:.2f}" if col == 1 else f"{value:.2f}"
                text = pg.TextItem(shown, color=(40, 40, 40), anchor=(0, 0.5))
                text.setPos(float(end), float(yi))
                plot.addItem(text)
            plot.setXRange(0, float(ends.max() or 1.0) * (1.45 if col == 1 else 1.25), padding=0)
            axis = plot.getAxis("left")
            if col == 0:  # the configurations, once, left of the first panel
                axis.setTicks([labels])
                axis.setWidth(max(QFontMetrics(axis.font()).horizontalAdvance(t) for _, t in labels) + 16)
            else:
                axis.setTicks([[(i, "") for i, _ in labels]])
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
        self.plots.ci.layout.setColumnStretchFactor(0, 2)


def _runs_on(row: SweepRow) -> str:
    parts = [row.accelerator or row.delegate]
    if row.software:
        parts.append(f"SOFTWARE RENDERER ({row.adapter}): the CPU")
    elif row.adapter:
        parts.append(row.adapter)
    return ", ".join(parts)


class SweepDock:
    """The sweep in the window: its action and its dock, rendering the runner's state. The window gives
    it what it shows besides the dock: `add_marker` (the plots), `show_error`, `show_message` (the status
    bar), and what a start reads: `allows_software_gpu()`, `statuses()` (the GPU probe's answer, None
    until it came: the sweep then asks itself)."""

    def __init__(
        self,
        main: QMainWindow,
        runner: SweepRunner,
        *,
        allows_software_gpu: Callable[[], bool],
        statuses: Callable[[], Mapping[str, DelegateStatus] | None],
        add_marker: Callable[[str], object],
        show_error: Callable[[str, str], object],
        show_message: Callable[[str, int], object],
    ) -> None:
        self._main, self.runner = main, runner
        self._allows_software_gpu, self._statuses = allows_software_gpu, statuses
        self._add_marker, self._show_error, self._show_message = add_marker, show_error, show_message
        self.panel = SweepPanel()
        self.dock = QDockWidget("Delegate sweep", main)
        self.dock.setObjectName("dock-sweep")
        self.dock.setWidget(self.panel)
        main.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()  # shown once a sweep starts
        self.action = QAction("S&weep delegates…", main)
        self.action.setToolTip(
            "Run the current source's frames through every delegate configuration (CPU threads, GPU precisions, "
            "Core ML units), unpaced, side by side"
        )
        self.action.setShortcut("Ctrl+Shift+W")
        self.action.triggered.connect(self.start)
        self.panel.run_button.clicked.connect(self.start)
        self.panel.cancel_button.clicked.connect(self.cancel)
        self.panel.save_button.clicked.connect(self.ask_save)
        self.panel.set_running(False)
        self._timer = QTimer(main, interval=POLL_MS)
        self._timer.timeout.connect(self._poll)

    @property
    def running(self) -> bool:
        return self.runner.running

    @property
    def result(self) -> SweepResult | None:
        return self.runner.result

    @property
    def error(self) -> str | None:
        return self.runner.error

    def models(self) -> list[str]:
        """The current model, side B's when comparing, and the bundled ones when asked; each once."""
        return self.runner.models(bundled=self.panel.bundled.isChecked())

    def start(self) -> bool:
        """Sweep the current source and model(s); False when one is already running."""
        if self.running:
            return False
        main = self._main
        if not self.dock.isVisible():
            self.dock.show()
            # A third of the height: the video and the plots stay in view (they show the pause).
            main.resizeDocks([self.dock], [max(220, main.height() // 3)], Qt.Orientation.Vertical)
        self.dock.raise_()
        allow_software = self.panel.software.isChecked() or self._allows_software_gpu()
        self.panel.software.setChecked(allow_software)
        models = self.models()
        self.runner.start(
            models, frames=self.panel.frames.value(), allow_software_gpu=allow_software, statuses=self._statuses()
        )
        self._add_marker("sweep: live paused")
        self.panel.set_running(True)
        self.panel.status.setText(f"Starting: {', '.join(Path(m).stem for m in models)} on {self.runner.source}…")
        self._timer.start()
        return True

    def cancel(self) -> None:
        if self.runner.cancel():
            self.panel.status.setText("Cancelling after the configuration running now…")

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Closing the window: end a running sweep and wait for its threads."""
        self._timer.stop()
        self.runner.shutdown(timeout_s)

    def ask_save(self) -> None:
        if self.result is None:
            return
        path, _ = QFileDialog.getSaveFileName(self._main, "Save sweep report", "sweep.html", "HTML (*.html)")
        if path:
            self.save_report(Path(path))

    def save_report(self, path: Path) -> bool:
        if self.result is None:
            return False
        try:
            size = write_html(self.result, path)
        except DelegateScopeError as exc:
            self._show_error("Cannot save the sweep report", str(exc))
            return False
        self._show_message(f"Sweep report saved: {path} ({size / 1024:.0f} KiB)", 10_000)
        return True

    def _poll(self) -> None:
        self.show_state(self.runner.poll())

    def show_state(self, state: SweepState) -> None:
        if state.progress is not None:
            self.panel.show_progress(state.progress)
        if not state.finished:
            return
        self._timer.stop()
        self.panel.set_running(False)
        self._add_marker("sweep done: live resumed")
        if state.error is not None:
            self.panel.status.setText(f"The sweep failed: {state.error}")
            if not state.internal:  # a bug is said in the dock only; the window runs on
                self._show_error("The sweep failed", state.error)
            return
        assert state.result is not None
        self.panel.show_result(state.result)
        done = len(state.result.measured())
        self._show_message(
            f"Sweep {'cancelled' if state.result.cancelled else 'done'}: {done} of {len(state.result.rows)} "
            "configurations measured",
            10_000,
        )

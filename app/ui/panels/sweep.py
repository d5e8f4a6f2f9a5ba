"""The window's delegate sweep: "Sweep delegates…" runs app/tasks/sweep.py on the current source and model(s)
off the GUI thread, with the live pipeline paused (the sweep needs the CPU to itself), and shows the
result in its own dock: a table and bar plots side by side, and a button that saves the HTML report.

Nothing is pushed at the GUI: the sweep thread leaves its newest progress in a slot that a timer
reads, as the main window polls the live pipeline."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

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
from app.model.spec import resolve_model_path
from app.report.sweep import COLUMNS, header_lines, row_cells, write_html
from app.tasks.sweep import (
    DEFAULT_FRAMES,
    DEFAULT_WARMUP,
    SweepProgress,
    SweepResult,
    SweepRow,
    default_models,
    plan_sweep,
    run_sweep,
)

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow

POLL_MS = 200
PAUSE_REASON = "the delegate sweep is running; live inference resumes when it ends (it would compete for the CPU)"
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
        self.status.setText("\n".join(header_lines(result)))
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
    """The sweep in the window: its action, its dock, the run off the GUI thread, and the live
    pipeline paused around it."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.panel = SweepPanel()
        self.dock = QDockWidget("Delegate sweep", window)
        self.dock.setObjectName("dock-sweep")
        self.dock.setWidget(self.panel)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()  # shown once a sweep starts
        self.action = QAction("S&weep delegates…", window)
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
        self.result: SweepResult | None = None
        self.error: str | None = None
        self._future: Future[SweepResult] | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._progress: SweepProgress | None = None
        self._timer = QTimer(window, interval=POLL_MS, timeout=self._poll)

    @property
    def running(self) -> bool:
        return self._future is not None

    def models(self) -> list[str]:
        """The current model, side B's when comparing, and the bundled ones when asked; each once."""
        live = self.window.live
        models = [str(live.config().model)]
        if live.comparing:
            models.append(str(live.config("b").model))
        if self.panel.bundled.isChecked():
            models.extend(default_models())
        unique: dict[str, str] = {}  # by the file it resolves to: a bundled name and its path are one model
        for model in models:
            try:
                key = str(resolve_model_path(model).resolve())
            except DelegateScopeError:
                key = model  # the sweep says what is wrong with it
            unique.setdefault(key, model)
        return list(unique.values())

    def start(self) -> bool:
        """Sweep the current source and model(s); False when one is already running."""
        if self.running:
            return False
        window = self.window
        if not self.dock.isVisible():
            self.dock.show()
            # A third of the height: the video and the plots stay in view (they show the pause).
            window.resizeDocks([self.dock], [max(220, window.height() // 3)], Qt.Orientation.Vertical)
        self.dock.raise_()
        allow_software = self.panel.software.isChecked() or window.controls.allows_software_gpu()
        self.panel.software.setChecked(allow_software)
        models, source, frames = self.models(), window.live.source, self.panel.frames.value()
        statuses = window.delegate_statuses  # None until the GPU probe answered: the sweep then asks itself
        self._stop.clear()
        self._progress = None
        self.error = None
        window.live.pause(PAUSE_REASON)
        window.plots.add_marker("sweep: live paused")
        self.panel.set_running(True)
        self.panel.status.setText(f"Starting: {', '.join(Path(m).stem for m in models)} on {source}…")

        def sweep() -> SweepResult:
            entries = plan_sweep(models, allow_software_gpu=allow_software, statuses=statuses)
            return run_sweep(source, entries, frames=frames, warmup=DEFAULT_WARMUP, progress=self._set_progress,
                             stop=self._stop)  # fmt: skip

        self._future = window.background.run(sweep, "delegate-scope-sweep")
        self._timer.start()
        return True

    def cancel(self) -> None:
        if self.running:
            self._stop.set()
            self.panel.status.setText("Cancelling after the configuration running now…")

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Closing the window: end a running sweep and wait for its threads."""
        self._timer.stop()
        future = self._future
        if future is not None:
            self._stop.set()
            try:
                future.result(timeout=timeout_s)
            except Exception:  # closing: the outcome no longer matters, only that its threads ended
                pass
            self._future = None

    def ask_save(self) -> None:
        if self.result is None:
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Save sweep report", "sweep.html", "HTML (*.html)")
        if path:
            self.save_report(Path(path))

    def save_report(self, path: Path) -> bool:
        if self.result is None:
            return False
        try:
            size = write_html(self.result, path)
        except DelegateScopeError as exc:
            self.window.show_error("Cannot save the sweep report", str(exc))
            return False
        self.window.statusBar().showMessage(f"Sweep report saved: {path} ({size / 1024:.0f} KiB)", 10_000)
        return True

    def _set_progress(self, p: SweepProgress) -> None:  # the sweep thread
        with self._lock:
            self._progress = p

    def _poll(self) -> None:
        with self._lock:
            progress = self._progress
        if progress is not None:
            self.panel.show_progress(progress)
        future = self._future
        if future is None or not future.done():
            return
        self._future = None
        self._timer.stop()
        self.panel.set_running(False)
        self.window.live.resume()
        self.window.plots.add_marker("sweep done: live resumed")
        try:
            self.result = future.result()
        except DelegateScopeError as exc:
            self.error = str(exc)
            self.panel.status.setText(f"The sweep failed: {exc}")
            self.window.show_error("The sweep failed", str(exc))
            return
        except Exception as exc:  # a bug: say so in one line; the window runs on
            self.error = f"internal error: {type(exc).__name__}: {exc}"
            self.panel.status.setText(f"The sweep failed: {self.error}")
            return
        self.panel.show_result(self.result)
        done = len(self.result.measured())
        self.window.statusBar().showMessage(
            f"Sweep {'cancelled' if self.result.cancelled else 'done'}: {done} of {len(self.result.rows)} "
            "configurations measured",
            10_000,
        )

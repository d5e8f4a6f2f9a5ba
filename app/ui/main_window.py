"""The main window: a thin view over app.live.controller.LiveController.

It polls the controller at display rate (newest frame + newest result) and a few times a
second (metrics, events, recording), and sends commands back (switch source, reconfigure,
record). No frame or result is pushed at it, so a busy GUI can never build a backlog.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QToolBar,
    QWidget,
)

from app.backends.describe import backend_name, init_footprint_text, report_backend_words
from app.backends.options import BackendOptions
from app.errors import DelegateScopeError, SourceError
from app.live.controller import LiveController, Side
from app.live.events import EventDigest, EventUpdate, compare_marker, labels_in_window_words, source_marker
from app.live.memory import GpuMemoryReader
from app.live.numerics import NumericsRuns, disagreement_side
from app.live.ops import OpsProfiles
from app.live.paint import PaintDeferral
from app.live.recording import RecordingStatus
from app.live.source_trial import SourceTrial
from app.live.sweep import SweepRunner
from app.metrics.bottleneck import find_bottleneck
from app.metrics.energy import PowerNotes
from app.metrics.window import MetricsSnapshot
from app.model.spec import ModelOptions, ModelSpec, bundled_models, load_model_spec
from app.pipeline import Result, State
from app.pipeline.compare import FrameComparison
from app.pipeline.frame_slot import NOT_INFERRED, OVERWRITTEN
from app.sources import CameraInfo, list_cameras
from app.system.redact import redact_credentials
from app.tasks.delegates import DelegateStatus, delegate_statuses
from app.ui import dialogs
from app.ui.background import BackgroundJobs
from app.ui.benchmark_mode import UnpacedMode
from app.ui.menus import build_menus, home_relative
from app.ui.model_reading import ModelReadings
from app.ui.panels.compare import ComparePanel
from app.ui.panels.controls import OPEN_FILE, BSide, ControlPanel
from app.ui.panels.delegation import DelegationPanel
from app.ui.panels.review import ReviewWindow
from app.ui.panels.sweep import SweepDock
from app.ui.scripted import ResultTally, WindowStats, scripted_outcome, window_stats, write_stats
from app.ui.settings import load_settings, save_settings
from app.ui.trace_action import TraceControl
from app.ui.views.numerics import NumericsView
from app.ui.views.ops import OpsView
from app.ui.views.plots import LivePlots, snapshot_values
from app.ui.views.status_bar import WrappingStatusBar
from app.ui.views.video import VideoView
from app.ui.window_config import GuiOptions, remember, start_config
from app.ui.window_probes import WindowProbes

DISPLAY_INTERVAL_MS = 5  # polls the newest frame and the end of an inference (app/live/paint.py)
STATS_INTERVAL_MS = 200  # plots, panel, status: 5 Hz
BACKGROUND_JOIN_S = 3.0
DOCK_WIDTH = 360  # at 1280×860 the facts, Offload and Rate wrap to fewer lines than at 320
# The video's banner when the pipeline is not running (the status message goes below it).
_SLOW_OPEN_S = 0.5  # an open that lasts longer is said (the TensorFlow reference takes seconds)
_STATE_TITLES = {
    State.RECONNECTING: "Source lost: reconnecting",
    State.ERROR: "Stopped: source or model failed",
    State.ENDED: "Source ended",
    State.STOPPED: "Paused",  # a running window stops its pipeline only to pause it (the delegate sweep)
}

__all__ = ["GuiOptions", "MainWindow"]  # GuiOptions is defined in app.ui.window_config


class MainWindow(QMainWindow):
    def __init__(self, options: GuiOptions, settings: QSettings) -> None:
        super().__init__()
        self.options, self.qsettings = options, settings
        self.saved, problems = load_settings(settings)
        self.setWindowTitle("Delegate Scope")
        self.background = BackgroundJobs()
        self.probes = WindowProbes()
        self._statuses: Future[list[DelegateStatus]] | None = None
        self._cameras: Future[list[CameraInfo]] | None = None
        self.cameras: list[CameraInfo] = []  # found by the background look-up
        self.delegate_statuses: dict[str, DelegateStatus] | None = None  # by delegate name, once the GPU probe answered
        self._last_frame_index = -1
        self._last_result_id: tuple | None = None
        self.deferral = PaintDeferral()  # paints and refreshes wait while an inference runs, briefly
        self.last_recording: RecordingStatus | None = None
        self._closing = False
        self.last_error: str | None = None
        self.exit_code, self.exit_message = 0, ""  # a scripted run's outcome (--exit-after)
        self.source_trial = SourceTrial()  # a chosen source that never opens gives way to the one that ran
        self.readings = ModelReadings()  # each model's task and its evidence, for the panel and the view
        self.tallies = (ResultTally(), ResultTally())  # what each side's results found (--stats)
        self.gpu_memory = GpuMemoryReader()  # the memory plot's GPU series (NVML), or why not
        self._b_opened: object | None = None  # side B's Opened last shown (its init labelled on the memory plot)

        self._build_widgets()
        start = start_config(options, self.saved)
        self._start_model = str(start.config.model)  # the model --task/--input-shape/--inputs were given for
        self.live = LiveController(start.source, start.config)
        self.video.take_masks_from(self.live.masks)  # built on the results threads, not here
        self.sweep = SweepDock(
            self,
            SweepRunner(self.live),
            allows_software_gpu=self.controls.allows_software_gpu,
            statuses=lambda: self.delegate_statuses,
            add_marker=self.plots.add_marker,
            show_error=self.show_error,
            show_message=self.statusBar().showMessage,
        )
        self.unpaced = UnpacedMode(
            self,
            self.statusBar(),
            set_pace=self.live.set_pace,
            source=lambda: self.live.source,
            add_marker=self.plots.add_marker,
        )
        self.recording_actions = build_menus(
            self,
            self,
            docks=(self.controls_dock, self.delegation_dock, self.ops_dock, self.numerics_dock),
            clear_plots=self.plots.clear_series,
            benchmarks=(self.sweep.action, self.unpaced.action),
        )
        self.record_action = self.recording_actions.record
        self.trace_control = TraceControl(  # gui --trace starts before the pipeline: its log from the start
            self, self.live, self.recording_actions.trace, options, show_error=self.show_error,
            folder=self.recordings_dir, profiles=lambda: self.ops_profiles.latest(),
        )  # fmt: skip
        self.ops_profiles = OpsProfiles(self.live)
        self.ops_view.attach(self.ops_profiles)
        self.numerics_view.attach(NumericsRuns(self.live), mark=self.delegation.strip.set_marked)
        self.compare_panel.on_disagreement = self._check_disagreement
        self.event_digest = EventDigest(self.live)
        self.video.set_score_threshold(start.threshold)
        self.controls.show_sources(self.cameras, start.source)
        self._cameras = self.background.run(
            lambda: [*start.cameras, *list_cameras(first_index=start.probed_below)], "delegate-scope-cameras"
        )
        self.controls.show_config(start.config, start.threshold)
        for problem in problems:
            self.statusBar().showMessage(problem, 10_000)
        self.live.start()
        if options.compare:  # --compare-with/--compare-model/--compare-labels: A/B from the start
            self._start_compare(options)

        self._statuses = self.background.run(delegate_statuses, "delegate-scope-probe")  # a child process
        self._display_timer = QTimer(self, interval=DISPLAY_INTERVAL_MS)
        self._display_timer.timeout.connect(self._display_tick)
        self._stats_timer = QTimer(self, interval=STATS_INTERVAL_MS)
        self._stats_timer.timeout.connect(self._stats_tick)
        self._display_timer.start()
        self._stats_timer.start()
        if options.record:
            self.start_recording(options.record)
        if options.exit_after is not None:
            QTimer.singleShot(int(options.exit_after * 1000), self._scripted_exit)

    # ---- construction ----------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.setStatusBar(WrappingStatusBar(self))  # a long message wraps instead of going under the labels
        self.video = VideoView()
        self.plots = LivePlots()
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.video)
        splitter.addWidget(self.plots)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([560, 260])
        splitter.setChildrenCollapsible(False)  # a small window shrinks the plots; it must not drop them
        self.setCentralWidget(splitter)

        self.controls = ControlPanel()
        self.delegation = DelegationPanel()
        self.compare_panel = ComparePanel()
        # Text wraps to the dock's width in the delegation panel: the node strip must stay whole in view.
        self.delegation_dock = self._dock("What really runs", self.delegation, "delegation", wrap=True)
        self.controls_dock = self._dock("Controls", self.controls, "controls", wrap=True)  # fits its width
        self.compare_dock = self._dock("A/B comparison", self.compare_panel, "compare")
        self.tabifyDockWidget(self.delegation_dock, self.compare_dock)
        self.compare_dock.hide()  # shown while comparing
        self.ops_view = OpsView()
        self.ops_dock = self._dock("Ops", self.ops_view, "ops")
        self.tabifyDockWidget(self.delegation_dock, self.ops_dock)
        self.numerics_view = NumericsView()  # off by default: View → Numerics (docs/numerics.md)
        self.numerics_dock = self._dock("Numerics", self.numerics_view, "numerics")
        self.tabifyDockWidget(self.delegation_dock, self.numerics_dock)
        self.numerics_dock.hide()
        self.delegation_dock.raise_()
        # The right-hand docks keep the window's whole height: a dock at the bottom (the delegate sweep's)
        # goes under the video and plots only, never squeezing "What really runs" and the Controls.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.resizeDocks([self.delegation_dock, self.controls_dock], [340, 460], Qt.Orientation.Vertical)
        # DOCK_WIDTH wide by default (a small window may squeeze them to their 220 minimum).
        self.resizeDocks([self.delegation_dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
        self._layout_restored = False  # a saved layout was restored: the first show leaves its sizes alone
        self._shown = False
        self._fitted_hint = 0  # the Controls' height when the docks were last fitted to it
        self.controls.installEventFilter(self)

        self.status_label = QLabel("starting")
        self.record_label = QLabel("")
        self.statusBar().addPermanentWidget(self.record_label)
        self.statusBar().addPermanentWidget(self.status_label)
        self._path_message = ""  # the status bar's message naming a recording's path (its tooltip is the path)
        self.statusBar().messageChanged.connect(self._message_changed)

        c = self.controls
        c.source_requested.connect(self.request_source)
        c.model_requested.connect(self.request_model)
        c.delegate_requested.connect(self.request_delegate)
        c.options_changed.connect(self._options_changed)
        c.throttle_changed.connect(lambda ms: self.live.reconfigure(throttle_ms=ms))
        c.top_k_changed.connect(lambda k: self.live.reconfigure(top_k=k))
        c.threshold_changed.connect(self._threshold_changed)
        c.compare_changed.connect(self.set_compare)
        c.b_file_requested.connect(self.request_b_file)
        c.labels_requested.connect(lambda what: self.request_labels() if what == "open" else self.use_own_labels())

    def _threshold_changed(self, value: float) -> None:
        """The overlay's threshold is the decoder's too: a detection below it is counted, not kept."""
        self.video.set_score_threshold(value)
        self.live.reconfigure(score_threshold=value)

    def restore_layout(self, geometry: QByteArray | None, state: QByteArray | None) -> None:
        """The window's saved size and docks (app.py, at start), else the default size."""
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 860)
        if state is not None:
            self._layout_restored = self.restoreState(state)
            self.sweep.dock.hide()  # shown by a sweep only (older settings saved it open)
            self.compare_dock.setVisible(self.live.comparing)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._shown:
            self._shown = True
            if not self._layout_restored:
                QTimer.singleShot(0, self._fit_docks)  # once the window has its size

    def _fit_docks(self) -> None:
        """The Controls get the height they need and "What really runs" the rest, so its Offload and Rate
        lines are in view at 1280×860 (Qt's default shares the height in proportion, leaving the Controls
        rows to spare or short of them). Only while both docks sit on the right, one above the other."""
        self._fitted_hint = self.controls.sizeHint().height()
        docks = [self.delegation_dock, self.controls_dock]
        right = Qt.DockWidgetArea.RightDockWidgetArea
        if not all(d.isVisible() and not d.isFloating() and self.dockWidgetArea(d) == right for d in docks):
            return
        if self.controls_dock in self.tabifiedDockWidgets(self.delegation_dock):
            return
        area = self.controls_dock.widget()
        assert isinstance(area, QScrollArea)
        asked = [d.height() for d in docks]
        for _ in range(3):  # what Qt gives differs from what was asked by the tab bar's share: asked again
            spare = area.viewport().height() - self._fitted_hint
            if 0 <= spare <= 2:  # never short of a pixel: that is a scrollbar
                break
            asked = [asked[0] + spare, asked[1] - spare]
            self.resizeDocks(docks, asked, Qt.Orientation.Vertical)
            layout = self.layout()
            if layout is not None:
                layout.activate()  # the docks take the sizes now, for the next look

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # The Controls' rows change (a delegate's options, A/B's B rows): they get the height they now need.
        if watched is self.controls and event.type() == QEvent.Type.LayoutRequest and self._shown:
            if self.controls.sizeHint().height() != self._fitted_hint:
                QTimer.singleShot(0, self._fit_docks)
        return super().eventFilter(watched, event)

    def reset_layout(self) -> None:
        """View → Reset layout: the docks where a first start puts them, at their first sizes; the docks a
        sweep or an A/B comparison show stay shown while those run."""
        for dock in (
            self.delegation_dock,
            self.controls_dock,
            self.compare_dock,
            self.ops_dock,
            self.numerics_dock,
            self.sweep.dock,
        ):
            dock.setFloating(False)
        for dock in (self.delegation_dock, self.controls_dock):
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)  # moves a dock already in the window
            dock.show()
        self.tabifyDockWidget(self.delegation_dock, self.compare_dock)
        self.tabifyDockWidget(self.delegation_dock, self.ops_dock)
        self.ops_dock.show()
        self.tabifyDockWidget(self.delegation_dock, self.numerics_dock)
        self.numerics_dock.hide()
        self.compare_dock.setVisible(self.live.comparing)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.sweep.dock)
        self.sweep.dock.setVisible(self.sweep.running)
        for bar in self.findChildren(QToolBar):
            self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
            bar.show()
        (self.compare_dock if self.live.comparing else self.delegation_dock).raise_()
        self.resizeDocks([self.delegation_dock, self.controls_dock], [340, 460], Qt.Orientation.Vertical)
        QTimer.singleShot(0, self._reset_sizes)  # once the docks above are laid out
        self.statusBar().showMessage("Layout reset", 5000)

    def _reset_sizes(self) -> None:
        docks = [self.delegation_dock, self.controls_dock]
        self.resizeDocks(docks, [DOCK_WIDTH, DOCK_WIDTH], Qt.Orientation.Horizontal)
        self._fit_docks()

    def _check_disagreement(self, comparison: FrameComparison, rgb: np.ndarray) -> None:
        """A/B: a disagreement's frame checked node by node on the side that runs an accelerator (docs/numerics.md)."""
        side = disagreement_side(self.live.config("a").delegate, self.live.config("b").delegate)
        self.numerics_dock.show()
        self.numerics_dock.raise_()
        self.numerics_view.start(side, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), f"frame {comparison.frame_index}")

    def _dock(self, title: str, widget: QWidget, name: str, wrap: bool = False) -> QDockWidget:
        scroll = QScrollArea()
        scroll.setWidget(widget)
        scroll.setWidgetResizable(True)
        if wrap:
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{name}")
        dock.setWidget(scroll)
        dock.setMinimumWidth(220)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        return dock

    # ---- commands from the user ------------------------------------------------------------

    def request_source(self, spec: str) -> None:
        if spec.startswith(f"{OPEN_FILE}:"):
            try:
                chosen = dialogs.ask_source(self, spec.partition(":")[2])
            except SourceError as exc:
                self.show_error("Cannot open this stream", str(exc), record="switch_failed")
                chosen = None
            if chosen is None:  # cancelled or refused: the box goes back to the running source
                self.controls.show_sources(self.cameras, self.live.source)
                return
            spec = chosen
        self.switch_source(spec)

    def switch_source(self, spec: str) -> None:
        delivering = self.live.status().state == State.RUNNING or self.live.latest_frame() is not None
        self.source_trial.begin(spec, self.live.source, delivering)
        self.live.switch_source(spec)
        self._last_frame_index = -1
        self.video.set_message(f"Opening {spec}…")
        self.controls.show_sources(self.cameras, spec)
        self.plots.add_marker(source_marker(spec))
        self.statusBar().showMessage(f"Source: {redact_credentials(spec)}", 5000)

    def request_model(self, ref: str) -> None:
        if ref == OPEN_FILE:
            path = dialogs.ask_model(self)
            if path is None:
                self.controls.set_models(str(self.live.config().model))
                return
            ref = path
        self.switch_model(ref)

    def switch_model(self, ref: str, labels: Path | None = None) -> bool:
        """Check the model here first (one clear message, nothing changes if it is bad), then switch."""
        return self._switch_model(ref, labels) is not None

    def model_options_for(self, ref: str) -> ModelOptions:
        """The command line's --task/--input-shape/--inputs were given for the model the window started
        with; another model chosen in the window is read as it is (a --task detection would refuse the
        classifier picked next), and going back to the first one reads it as asked again."""
        return self.options.model_options if ref == self._start_model else ModelOptions()

    def _switch_model(self, ref: str, labels: Path | None) -> ModelSpec | None:
        options = self.model_options_for(ref)
        try:
            spec = load_model_spec(ref, labels, options=options)
        except DelegateScopeError as exc:
            name = Path(ref).name
            message = str(exc) if name in str(exc) else f"{name}: {exc}"
            self.show_error("Cannot open this model", message, record="switch_failed", side="a")
            self.controls.set_models(str(self.live.config().model))
            return None
        for warning in labels_in_window_words(spec.labels.source, spec.warnings)[1]:
            self.statusBar().showMessage(f"{spec.display_name}: {warning}", 10_000)
        self.live.reconfigure(model=ref, labels=labels, model_options=options)
        self.controls.set_models(ref, spec.display_name)
        self.controls.set_labels(labels)  # a labels file belongs to the model it was chosen for
        return spec

    def request_labels(self) -> None:
        path = dialogs.ask_labels(self)
        if path is not None:
            self.load_labels(path)

    def load_labels(self, path: Path) -> bool:
        """Use a labels file for the running model; say what was loaded and whether it fits."""
        spec = self._switch_model(str(self.live.config().model), path)
        if spec is None:
            return False
        _, warnings = labels_in_window_words(spec.labels.source, spec.labels.warnings)
        named = sum(1 for label in spec.labels.labels if label)
        message = f"Labels: {path.name}, {named} for {spec.label_count} outputs"
        self.statusBar().showMessage(message + (f" — {warnings[0]}" if warnings else ""), 15_000)
        if warnings and self.options.dialogs:
            QMessageBox.warning(self, "These labels do not fit the model", warnings[0])
        return True

    def use_own_labels(self) -> bool:
        """Side A back on its model's own labels (its sidecar's, a file beside it, its metadata's, or none)."""
        if self.live.config().labels is None:
            self.statusBar().showMessage("Labels: already the model's own", 5000)
            return True
        spec = self._switch_model(str(self.live.config().model), None)
        if spec is None:
            return False
        source, warnings = labels_in_window_words(spec.labels.source, spec.labels.warnings)
        message = f"Labels: the model's own ({source})"
        self.statusBar().showMessage(message + (f" — {warnings[0]}" if warnings else ""), 15_000)
        return True

    def request_delegate(self, name: str) -> None:
        self.live.reconfigure(delegate=name, options=self.controls.options())
        self.controls.show_delegate(name)
        self.statusBar().showMessage(f"Switching to {backend_name(name)}…", 3000)

    def set_compare(self, b: BSide | tuple[str, str] | None) -> None:
        """Start the A/B comparison with B's side (or a (model, delegate) pair), or end it (None)."""
        if isinstance(b, tuple):
            b = BSide(*b)
        config = self.live.config()
        b_config = None if b is None else replace(config, model=b.model, delegate=b.delegate, labels=b.labels,
                                                  model_options=self.model_options_for(b.model))  # fmt: skip
        self.live.set_compare(b_config)
        self._last_frame_index = -1
        on = b_config is not None
        self.compare_dock.setVisible(on)
        if on:
            self.compare_dock.raise_()
        self.plots.show_b(on)
        self.plots.add_marker(compare_marker(b.model, b.delegate) if b else compare_marker(None, None))
        if not on:
            self.video.titles = ("", "")
            self.video.frame_is_input = (self.video.frame_is_input[0], True)
        self.tallies[1].reset()
        self.delegation.set_report_b(None)
        self.controls.show_compare(b)

    def _start_compare(self, options: GuiOptions) -> None:
        """Side B as the command line gave it (A's model and delegate where not given), checked in run_gui."""
        config = self.live.config()
        model = options.compare_model or str(config.model)
        if model not in bundled_models():
            self.controls.add_b_model(model, Path(model).name)
        b = BSide(model, options.compare_with or config.delegate, options.compare_labels)
        self.controls.set_b_labels(b.labels)
        self.set_compare(b)

    def request_b_file(self, kind: str) -> None:
        """Open .tflite… or a labels file for side B: checked here first, as side A's are."""
        b = self.controls.b_side()
        model: str | None = b.model
        labels = b.labels
        if kind == "own-labels":
            self.use_b_model(b.model, None)
            return
        if kind == "model":
            path = dialogs.ask_model(self)
            model, labels = (path, None) if path else (None, None)
        else:
            chosen = dialogs.ask_labels(self)
            labels = chosen if chosen else None
            if chosen is None:
                return
        if model is None:  # cancelled: nothing changes
            return
        self.use_b_model(model, labels)

    def use_b_model(self, model: str, labels: Path | None = None) -> bool:
        """Make `model` (with `labels`) side B's choice, and run it if A/B is on; a bad file changes nothing."""
        try:
            spec = load_model_spec(model, labels, options=self.model_options_for(model))
        except DelegateScopeError as exc:
            name = Path(model).name
            message = str(exc) if name in str(exc) else f"{name}: {exc}"
            self.show_error("Cannot open this model for B", message, record="switch_failed", side="b")
            return False
        if model not in bundled_models():
            self.controls.add_b_model(model, spec.display_name)
        self.controls.set_b_labels(labels)
        _, warnings = labels_in_window_words(spec.labels.source, spec.warnings)  # the labels' are among them
        if warnings:
            self.statusBar().showMessage(f"B: {spec.display_name}: {warnings[0]}", 15_000)
        if self.live.comparing:
            self.set_compare(self.controls.b_side())
        return True

    def _options_changed(self, options: BackendOptions) -> None:
        self.live.reconfigure(options=options)
        self._apply_availability()

    def toggle_recording(self) -> None:
        if self.live.recording:
            self.stop_recording()
        else:
            self.start_recording(Path(self.recordings_dir()) / time.strftime("session-%Y%m%d-%H%M%S.csv"))

    def toggle_trace(self) -> None:
        self.trace_control.toggle()

    def recordings_dir(self) -> str:
        """Where Ctrl+R records: the folder chosen in Record → Recordings folder…, else Documents'."""
        return self.saved.recordings_dir or dialogs.default_recordings_dir()

    def start_recording(self, path: Path) -> bool:
        try:
            self.live.start_recording(path)
        except OSError as exc:
            self.record_action.setChecked(False)
            self.show_error("Cannot record", f"{exc.strerror or exc}: {path}")
            return False
        self.record_action.setChecked(True)
        self._update_recording()  # the file's name and full path (tooltip) at once, not at the next tick
        status = self.live.recording_status()
        if status is not None and status.both_sides:
            files = _files_text(status, counts=False)
            self._show_path_message("Recording both sides of A/B in ", path.parent, f": {files}", 15_000)
        else:
            self._show_path_message("Recording to ", path, "", 15_000)
        return True

    def _show_path_message(self, before: str, path: Path, after: str, ms: int) -> None:
        """A status-bar message naming `path` (home as ~): the path elided in the middle so the message fits
        beside the permanent labels (the file's name stays whole); the full path in the bar's tooltip."""
        bar = self.statusBar()
        metrics = bar.fontMetrics()
        beside = sum(w.sizeHint().width() + 12 for w in (self.record_label, self.status_label) if w.text())
        room = bar.width() - beside - 24 - metrics.horizontalAdvance(before + after)
        # The folder gives way first: the file's name stays whole unless it alone is wider than the room.
        name = "" if path.is_dir() else "/" + path.name
        folder = home_relative(path.parent if name else path)
        room = max(room, 160)
        if metrics.horizontalAdvance(folder + name) <= room:
            shown = folder + name
        elif metrics.horizontalAdvance("…" + name) + 40 <= room:
            shown = metrics.elidedText(folder, Qt.TextElideMode.ElideMiddle, room - metrics.horizontalAdvance(name))
            shown += name
        else:
            shown = metrics.elidedText(folder + name, Qt.TextElideMode.ElideMiddle, room)
        self._path_message = before + shown + after
        bar.showMessage(self._path_message, ms)
        bar.setToolTip(str(path.resolve()))

    def _message_changed(self, message: str) -> None:
        if message != self._path_message:  # the tooltip belongs to the path's message only
            self.statusBar().setToolTip("")

    def stop_recording(self) -> RecordingStatus | None:
        status = self.live.stop_recording()
        self.record_action.setChecked(False)
        self.record_label.setText("")
        if status is not None:
            self.last_recording = status
            self.ops_profiles.save_beside(status.path)  # the report's per-op chart (app/report/ops.py)
            if status.error:
                self.statusBar().showMessage(f"{status.error}; {status.rows} rows kept in {status.path}", 15_000)
            else:
                lost = f", {status.lost_rows} rows lost (disk too slow)" if status.lost_rows else ""
                if status.both_sides:
                    after = f": {_files_text(status)}{lost}"
                    self._show_path_message("Recording saved, both sides, in ", status.path.parent, after, 15_000)
                else:
                    self._show_path_message("Recording saved: ", status.path, f" ({status.rows} rows{lost})", 15_000)
        return status

    def request_review(self) -> None:
        path = dialogs.ask_recording(self, self.recordings_dir())
        if path is not None:
            self.open_review(path)

    def open_review(self, path: Path) -> ReviewWindow | None:
        """Show a recorded CSV in the live plots' layout; a bad file is one message, nothing else."""
        try:
            review = ReviewWindow(path, self)
        except (OSError, ValueError, UnicodeError) as exc:
            self.show_error("Cannot review this file", str(exc) if path.name in str(exc) else f"{path.name}: {exc}")
            return None
        review.show()
        return review

    def choose_recordings_dir(self) -> None:
        folder = dialogs.ask_recordings_dir(self, self.recordings_dir())
        if folder:
            self.saved.recordings_dir = folder
            self.recording_actions.show_folder(folder)

    def save_screenshot(self) -> None:
        path = dialogs.ask_screenshot_path(self)
        if path and not self.grab().save(path):
            self.show_error("Cannot save the screenshot", path)

    def show_about(self) -> None:
        dialogs.show_about(self)

    def show_error(self, title: str, message: str, record: str = "window_error", side: Side | None = None) -> None:
        """One clear line in the status bar; a dialog too unless this is a scripted run. A recording gets
        it as an event row of kind `record` (in `side`'s file, every file when None): the CSV holds every
        failure the user was shown."""
        self.statusBar().showMessage(f"{title}: {message}", 15_000)
        self.last_error = f"{title}: {message}"
        if hasattr(self, "live"):  # an internal error (app.py's hook) can come before the controller exists
            self.live.record_failure(self.last_error, kind=record, side=side)
        if self.options.dialogs and not self.options.scripted:
            QMessageBox.warning(self, title, message)

    # ---- polling ---------------------------------------------------------------------------

    @property
    def held_back_s(self) -> float:
        """How long the frame painted last had waited for an inference to end (tests read it)."""
        return self.deferral.held_back_s

    def _display_tick(self) -> None:
        inferring = self.live.inferring()
        self._show_newest(inferring)
        if self.deferral.refresh_deferred(inferring):
            self._refresh_stats()

    def _show_newest(self, inferring: bool) -> None:
        started = self.probes.start()
        live = self.live
        frame = live.latest_frame()
        result, result_b = live.latest_result("a"), live.latest_result("b")
        result_id = (_result_key(result), _result_key(result_b))
        if frame is None or (frame.index == self._last_frame_index and result_id == self._last_result_id):
            return
        new_frame = frame.index != self._last_frame_index
        if new_frame and not self.deferral.paint_frame(inferring):
            return  # painted once the inference ends (with its result, if it ran on this frame)
        self._last_frame_index, self._last_result_id = frame.index, result_id
        self.tallies[0].add(result)
        self.tallies[1].add(result_b)
        self.video.set_frame(frame, result, result_b)
        self.video.repaint()  # paint now, so the figure below is the whole cost of this frame
        trace = live.trace
        if trace is not None:  # the paint as a slice of the GUI thread's track
            results = (_frame_of(result), _frame_of(result_b))
            trace.painted(frame.index, live.generation, started.wall, results, self.deferral.held_back_s)
        if new_frame:
            self.probes.frame_shown(started)

    def _stats_tick(self) -> None:
        """Due every STATS_INTERVAL_MS; done at once between inferences, else by the display tick
        when the inference ends (or the deferral's limit has passed)."""
        if self.deferral.refresh_now(self.live.inferring()):
            self._refresh_stats()

    def _refresh_stats(self) -> None:
        live = self.live
        snap = live.snapshot("a")
        report = live.report("a")
        comparing = live.comparing
        snap_b = live.snapshot("b") if comparing else None
        gpu_mem, gpu_mem_reason = self.gpu_memory.read()
        self.plots.add_point(snapshot_values(snap, self.probes.display_fps(), snap_b, gpu_mem))
        self.plots.set_power_notes(PowerNotes.of(live.sampler.latest().power))
        self.plots.set_memory_note(gpu_mem_reason)
        self._show_memory(snap.rss_mb)
        if snap_b is not None:
            self._update_compare(snap, snap_b)
        self.probes.plots_refreshed(snap.inferences_total)
        backend = report.used if report else live.config().delegate
        self.video.backend_label = (report_backend_words(report) if report else backend_name(backend)) + (
            " (fallback)" if report and report.requested != report.used else ""
        )
        self.video.backend_label += self.unpaced.badge()
        self.video.inference_fps = snap.inference_fps
        opening = self._show_opening()  # before the events: a session that opened meanwhile is greyed one tick
        bottleneck = find_bottleneck(snap, live.config().throttle_ms)
        self.delegation.set_metrics(snap, backend, shared=comparing, bottleneck=bottleneck)
        update = self.event_digest.poll()
        if update is not None:
            self._show_events(update)
        status = live.status()
        back = self.source_trial.check(status.state, status.message, live.latest_frame() is not None)
        if back is not None:  # the chosen source never opened: the one that ran before runs again
            self.switch_source(back.source)
            self.show_error("Cannot open this source", back.message, record="switch_failed")
            return
        # The state alone: the reason of a stop is the video's banner (or its message) and the status bar's
        # message, whole; beside them here it squeezed the message out ("…LiteRT runtir"). Its tooltip has it.
        text = str(status.state)
        self.status_label.setToolTip(status.message if status.state != State.RUNNING else "")
        if bottleneck is not None and status.state == State.RUNNING:
            text += f"  ·  {bottleneck.short}"
        if snap.dropped_total:  # bench's words; the why in the tooltip, as the bar has room for a file name
            text += f"  ·  {snap.dropped_total} frame{'s' if snap.dropped_total != 1 else ''} {NOT_INFERRED}"
            if status.state == State.RUNNING:
                self.status_label.setToolTip(f"frames {NOT_INFERRED}: {OVERWRITTEN} by a newer frame, as bench counts")
        self.status_label.setText(text)
        bar = self.statusBar()
        if isinstance(bar, WrappingStatusBar):
            bar.fit()
        stopped = status.state == State.ERROR and live.latest_result("a") is None
        self.video.no_result = f"no result: {status.message}" if stopped else ""
        if stopped and live.report("a") is None:  # the model never opened: the panel says why, not "no model"
            self.delegation.set_failure(f"{Path(str(live.config().model)).name} did not open: {status.message}")
        if live.latest_frame() is None and status.state != State.RUNNING:
            self.video.set_message(f"{status.state}: {status.message}")
        title = _STATE_TITLES.get(status.state)  # only the states where the source stopped have one
        self.video.set_banner(f"{title}\n{status.message}" if title else "\n".join(opening))
        self._poll_background()
        self._update_recording()

    def _show_memory(self, rss_mb: float | None) -> None:
        """Each side's init footprint in "What really runs" beside the process's resident set now; side B's
        open labelled on the memory plot (side A's comes with its marker, from the open event)."""
        a = self.live.opened("a")
        b = self.live.opened("b") if self.live.comparing else None
        if b is not None and b is not self._b_opened:
            self.plots.add_memory_label(f"B {init_footprint_text(b.memory, detail=False)}")
        self._b_opened = b
        self.delegation.set_memory(a.memory if a else None, b.memory if b else None, rss_mb)

    def _show_opening(self) -> list[str]:
        """While a side's session opens (the TensorFlow reference takes seconds): what is starting and for
        how long, on the badge, the video's banner and the panel, whose facts are greyed as the previous
        session's until the open event. Returns the banner's lines (none when nothing is opening)."""
        lines = []
        for side in ("a", "b") if self.live.comparing else ("a",):
            opening = self.live.opening(side)
            if opening is None:
                continue
            config, since = opening
            elapsed = time.monotonic() - since
            if elapsed < _SLOW_OPEN_S:  # most opens take a fraction of a second: a banner would only flash
                continue
            name = backend_name(config.delegate)
            who = "B: " if side == "b" else ""
            lines.append(f"{who}Starting {name} · {Path(str(config.model)).stem}… {elapsed:.1f} s")
            if side == "a":  # nothing infers meanwhile: not the old session's name and rate
                self.video.backend_label = f"{name}: starting… {elapsed:.0f} s"
                self.video.inference_fps = 0.0
        self.delegation.set_opening("; ".join(lines) if lines else None)
        return lines

    def _show_events(self, update: EventUpdate) -> None:
        """What the pipeline's new events change: plot markers, the delegation panel, the delegate and
        model boxes, the status bar."""
        memory = update.memory_labels + [""] * (len(update.markers) - len(update.memory_labels))
        for (text, at), init in zip(update.markers, memory, strict=True):
            init = f"A {init}" if init and self.live.comparing else init  # B's: _show_memory
            self.plots.add_marker(text, at=at - self.plots.t0, memory=init)
        if update.reports:
            self._show_reading()
        for shown in update.reports:
            self.delegation.set_report(shown.report, shown.model, shown.labels, shown.label_warnings)
            self.controls.show_delegate(shown.report.requested)
            if shown.switch_cost:
                self.delegation.set_switch_cost(shown.switch_cost)
        if update.model_running is not None:
            self.controls.set_models(update.model_running)
            self.controls.set_labels(self.live.config().labels)
        for message in update.status:
            self.statusBar().showMessage(message, 15_000)

    def _show_reading(self) -> None:
        """Side A's task and why (the model that opened last), on the panel's Task row and to the view."""
        opened = [e.model for e in self.live.events() if e.model]
        config = self.live.config()
        model = opened[-1].path if opened else config.model
        reading = self.readings.reading(model, config.labels, config.model_options)
        self.delegation.set_task(reading.text() if reading else "")
        self.video.frame_is_input = (reading.frame_is_input if reading else True, self.video.frame_is_input[1])

    def _update_compare(self, snap: MetricsSnapshot, snap_b: MetricsSnapshot) -> None:
        comparison = self.live.comparison()
        if comparison is None:
            return
        names = []
        for side in ("a", "b"):
            report, config = self.live.report(side), self.live.config(side)
            used = report_backend_words(report) if report else backend_name(config.delegate)
            if report and report.requested != report.used:
                used += f" (fallback from {backend_name(report.requested)})"
            names.append(f"{used} · {Path(str(config.model)).stem}")
        self.video.titles = (f"A · {names[0]}", f"B · {names[1]}")
        self.compare_panel.set_summary(comparison.summary, snap, snap_b, (names[0], names[1]), comparison.speed)
        b_config = self.live.config("b")
        b_labels = b_config.labels.name if b_config.labels else ""
        reading = self.readings.reading(b_config.model, b_config.labels, b_config.model_options)
        self.video.frame_is_input = (self.video.frame_is_input[0], reading.frame_is_input if reading else True)
        self.delegation.set_report_b(self.live.report("b"), Path(str(b_config.model)).stem, b_labels,
                                     reading.text() if reading else "")  # fmt: skip
        self.compare_panel.set_thumbnails(comparison.thumbnails)

    def _poll_background(self) -> None:
        if self._statuses is not None and self._statuses.done():
            try:
                self.delegate_statuses = {s.name: s for s in self._statuses.result()}
            except Exception as exc:  # a probe that fails says so; the CPU stays usable
                self.delegate_statuses = {"gpu": DelegateStatus("gpu", "GPU", False, f"probe failed: {exc}")}
            self._statuses = None
            self._apply_availability()
        if self._cameras is not None and self._cameras.done():
            self.cameras = self._cameras.result() if self._cameras.exception() is None else []
            self._cameras = None
            self.controls.show_sources(self.cameras, self.live.source)

    def _apply_availability(self) -> None:
        statuses = self.delegate_statuses
        if not statuses:
            return
        reasons = {name: s.reason for name, s in statuses.items()}
        gpu = statuses.get("gpu")
        if reasons.get("gpu") and gpu and gpu.software and self.controls.allows_software_gpu():
            reasons["gpu"] = None  # the user asked for the software renderer; it will be flagged
        self.controls.set_delegate_availability(reasons)

    def _update_recording(self) -> None:
        status = self.live.recording_status()
        if status is None:
            return
        if status.error:
            self.stop_recording()
            self.show_error("Recording stopped", status.error)
            return
        minutes, seconds = divmod(int(status.seconds), 60)
        if status.both_sides:  # A/B: both sides and their per-frame comparison are recorded
            rows = f"A {status.rows} · B {status.b_rows} rows · {status.compared} frames compared"
            self.record_label.setText(f"● REC A+B {status.path.name}  {rows}  {minutes:02d}:{seconds:02d}")
        else:
            self.record_label.setText(f"● REC {status.path.name}  {status.rows} rows  {minutes:02d}:{seconds:02d}")
        self.record_label.setToolTip(str(status.path))
        self.record_label.setStyleSheet("color: #c62828; font-weight: bold")

    # ---- scripted runs and shutdown --------------------------------------------------------

    def stats(self) -> WindowStats:
        """Figures for benchmarks and scripted runs (--stats FILE)."""
        return window_stats(self.live, self.probes, self.video, self.plots, self.tallies)

    def _scripted_exit(self) -> None:
        self.exit_code, self.exit_message = scripted_outcome(self.live)  # before closing stops the pipeline
        if self.options.stats_file:
            write_stats(self.options.stats_file, self.stats())
        if self.options.screenshot and not self.grab().save(str(self.options.screenshot)):
            self.statusBar().showMessage(f"could not save {self.options.screenshot}")
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closing:
            event.accept()
            return
        self._closing = True
        self._display_timer.stop()
        self._stats_timer.stop()
        self.sweep.shutdown()
        self.stop_recording()
        self.ops_view.stop()
        self.numerics_view.stop()
        self.live.stop()
        self.trace_control.stop(closing=True)  # written once the pipeline has stopped: its last frames in it
        self.gpu_memory.close()
        self.background.join(BACKGROUND_JOIN_S)  # the GPU probe is a child process of ~1 s
        if self.options.saves_settings:
            remember(self.saved, self.live.config(), self.live.source, self.video.score_threshold)
            for dock in (self.sweep.dock, self.compare_dock):  # shown while a sweep or A/B runs: saved hidden
                dock.hide()
            save_settings(self.qsettings, self.saved, self.saveGeometry(), self.saveState())
        event.accept()


def _files_text(status: RecordingStatus, counts: bool = True) -> str:
    """A/B recording: which file holds what."""
    assert status.b_path is not None and status.comparison_path is not None
    a, b, c = (f" ({n} {unit})" if counts else "" for n, unit in
               ((status.rows, "rows"), (status.b_rows, "rows"), (status.compared, "frames")))  # fmt: skip
    return f"A {status.path.name}{a}, B {status.b_path.name}{b}, per-frame comparison {status.comparison_path.name}{c}"


def _frame_of(result: Result | None) -> int | None:
    return result.frame_index if result is not None else None


def _result_key(result: Result | None) -> tuple[int, int] | None:
    """Which result this is: a new one has a new frame or comes from a new session."""
    return (result.session_id, result.frame_index) if result is not None else None

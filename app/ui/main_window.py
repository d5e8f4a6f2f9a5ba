"""The main window: a thin view over app.live.LiveController.

It polls the controller at display rate (newest frame + newest result) and a few times a
second (metrics, events, recording), and sends commands back (switch source, reconfigure,
record). No frame or result is pushed at it, so a busy GUI can never build a backlog.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QToolBar,
)

from app import __version__
from app.backends.cpu import default_threads
from app.delegates import delegate_statuses
from app.errors import DelegateScopeError, SourceError
from app.heap import limit_arenas
from app.live import LiveController, RecordingStatus
from app.metrics import MetricsSnapshot
from app.model import ModelSpec, load_model_spec
from app.pipeline import Event, EventKind, InferenceConfig, Result, State
from app.recording import package_versions
from app.redact import redact_credentials
from app.sources import list_cameras, parse_source_spec
from app.ui.compare_panel import ComparePanel
from app.ui.controls import OPEN_FILE, ControlPanel
from app.ui.delegation_panel import DelegationPanel
from app.ui.plots import LivePlots, snapshot_values
from app.ui.review import ReviewWindow
from app.ui.settings import load_settings, save_settings
from app.ui.video_view import VideoView

DISPLAY_INTERVAL_MS = 10  # polls the newest frame; a 30 fps source then shows every frame
STATS_INTERVAL_MS = 200  # plots, panel, status: 5 Hz
BACKGROUND_JOIN_S = 3.0
_MARKER_EVENTS = {
    EventKind.OPEN,
    EventKind.SWITCH,
    EventKind.FALLBACK,
    EventKind.SWITCH_FAILED,
    EventKind.SOURCE_LOST,
    EventKind.SOURCE_RECONNECTED,
}
# The video's banner when the pipeline is not running (the status message goes below it).
_STATE_TITLES = {
    State.RECONNECTING: "Source lost: reconnecting",
    State.ERROR: "Stopped: source or model failed",
    State.ENDED: "Source ended",
}
# bad_result: the model gave NaN/Inf scores, so no result was shown; without a message the
# overlay just went stale with no reason given (found by tests/ui/test_window_fuzz.py).
_STATUS_EVENTS = _MARKER_EVENTS | {EventKind.SOURCE_ENDED, EventKind.ERROR, EventKind.BAD_RESULT}


@dataclass
class GuiOptions:
    source: str | None = None
    model: str | None = None
    delegate: str | None = None
    threads: int | None = None
    throttle_ms: float | None = None
    settings_file: Path | None = None
    record: Path | None = None
    exit_after: float | None = None
    screenshot: Path | None = None
    stats_file: Path | None = None
    save_settings: bool | None = None  # None: yes for an interactive run, no for a scripted one (--exit-after)
    dialogs: bool = True  # False for scripted runs and tests: errors go to the status bar only


class MainWindow(QMainWindow):
    def __init__(self, options: GuiOptions, settings: QSettings) -> None:
        super().__init__()
        self.options, self.qsettings = options, settings
        self.saved, problems = load_settings(settings)
        self.setWindowTitle("Delegate Scope")
        self._background_threads: list[threading.Thread] = []
        self._statuses: Future | None = None
        self._cameras: Future | None = None
        self._last_frame_index = -1
        self._last_result_id: tuple | None = None
        self._last_event_seq, self._events_of = 0, 0  # events_since() position, of which pipeline
        self._display_times: deque[float] = deque(maxlen=4096)  # when each new frame was shown
        self.gui_work_ms: deque[float] = deque(maxlen=20_000)  # GUI-thread wall time per displayed frame
        self.gui_cpu_ms: deque[float] = deque(maxlen=20_000)  # ... and its CPU time (excludes waiting for a core)
        self._plot_times: deque[float] = deque(maxlen=4096)
        self.last_recording: RecordingStatus | None = None
        self._closing = False
        self.last_error: str | None = None
        self._marked_session: int | None = None
        self._model_label = ""
        self._labels: tuple[str, list[str]] = ("", [])  # the running model's labels: source, warnings
        self._first_count: tuple[float, int] | None = None  # (when, inferences) at the first result seen
        self.exit_code, self.exit_message = 0, ""  # a scripted run's outcome (--exit-after)

        self._build_widgets()
        self._build_actions()

        config, source = self._initial_config()
        self.live = LiveController(source, config)
        self._fill_controls(config, source)
        for problem in problems:
            self.statusBar().showMessage(problem, 10_000)
        self.live.start()

        self._statuses = self._background(
            delegate_statuses, "delegate-scope-probe"
        )  # the GPU probe takes a child process
        self._display_timer = QTimer(self, interval=DISPLAY_INTERVAL_MS, timeout=self._display_tick)
        self._stats_timer = QTimer(self, interval=STATS_INTERVAL_MS, timeout=self._stats_tick)
        self._display_timer.start()
        self._stats_timer.start()
        if options.record:
            self.start_recording(options.record)
        if options.exit_after is not None:
            QTimer.singleShot(int(options.exit_after * 1000), self._scripted_exit)

    # ---- construction ----------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.video = VideoView()
        self.plots = LivePlots()
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.video)
        splitter.addWidget(self.plots)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([560, 260])
        self.setCentralWidget(splitter)

        self.controls = ControlPanel()
        self.delegation = DelegationPanel()
        self.compare_panel = ComparePanel()
        for title, widget, name in (
            ("What really runs", self.delegation, "delegation"),
            ("Controls", self.controls, "controls"),
            ("A/B comparison", self.compare_panel, "compare"),
        ):
            scroll = QScrollArea()
            scroll.setWidget(widget)
            scroll.setWidgetResizable(True)
            if widget is self.delegation:  # text wraps to the dock's width: the node strip must stay whole in view
                scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            dock = QDockWidget(title, self)
            dock.setObjectName(f"dock-{name}")
            dock.setWidget(scroll)
            dock.setMinimumWidth(300)
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            setattr(self, f"{name}_dock", dock)
        self.tabifyDockWidget(self.delegation_dock, self.compare_dock)  # type: ignore[attr-defined]
        self.compare_dock.hide()  # type: ignore[attr-defined]  # shown while comparing
        self.resizeDocks([self.delegation_dock, self.controls_dock], [380, 420], Qt.Orientation.Vertical)  # type: ignore[attr-defined]

        self.status_label = QLabel("starting")
        self.record_label = QLabel("")
        self.statusBar().addPermanentWidget(self.record_label)
        self.statusBar().addPermanentWidget(self.status_label)

        c = self.controls
        c.source_requested.connect(self.request_source)
        c.model_requested.connect(self.request_model)
        c.delegate_requested.connect(self.request_delegate)
        c.options_changed.connect(self._options_changed)
        c.throttle_changed.connect(lambda ms: self.live.reconfigure(throttle_ms=ms))
        c.top_k_changed.connect(lambda k: self.live.reconfigure(top_k=k))
        c.threshold_changed.connect(self._threshold_changed)
        c.compare_changed.connect(self.set_compare)

    def _build_actions(self) -> None:
        def action(text: str, slot: object, shortcut: QKeySequence | str | None = None) -> QAction:
            a = QAction(text, self)
            if shortcut is not None:
                a.setShortcut(QKeySequence(shortcut))
            a.triggered.connect(slot)
            return a

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(
            action("Open &video…", lambda: self.request_source(f"{OPEN_FILE}:video"), QKeySequence.StandardKey.Open)
        )
        file_menu.addAction(action("Open &image folder…", lambda: self.request_source(f"{OPEN_FILE}:images")))
        file_menu.addAction(action("Open &model…", lambda: self.request_model(OPEN_FILE), "Ctrl+M"))
        file_menu.addAction(action("Open &labels…", self.request_labels, "Ctrl+L"))
        file_menu.addSeparator()
        self.record_action = action("● &Record", self.toggle_recording, "Ctrl+R")
        self.record_action.setCheckable(True)
        self.record_action.setToolTip("Start/stop recording one CSV row per inference (Ctrl+R)")
        file_menu.addAction(self.record_action)
        file_menu.addAction(action("Recordings &folder…", self.choose_recordings_dir))
        file_menu.addAction(action("Review a recor&ding…", self.request_review, "Ctrl+Shift+O"))
        file_menu.addAction(action("Save &screenshot…", self.save_screenshot, "Ctrl+Shift+S"))
        file_menu.addSeparator()
        file_menu.addAction(action("&Quit", self.close, QKeySequence.StandardKey.Quit))

        view = self.menuBar().addMenu("&View")
        view.addAction(self.controls_dock.toggleViewAction())  # type: ignore[attr-defined]
        view.addAction(self.delegation_dock.toggleViewAction())  # type: ignore[attr-defined]
        view.addAction(action("&Clear plots", self.plots.clear_series))
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(action("&About Delegate Scope", self.show_about))

        bar = QToolBar("Main")
        bar.setObjectName("toolbar-main")
        bar.addAction(self.record_action)
        self.addToolBar(bar)

    def _initial_config(self) -> tuple[InferenceConfig, str]:
        s, o = self.saved, self.options
        source = o.source or s.source
        if source is None:
            source = "camera:0" if list_cameras(max_index=1) else "demo"
        options = {
            "threads": o.threads or s.threads or default_threads(),
            "precision": s.precision,
            "allow_software": s.allow_software,
            "compute_units": s.units,
        }
        config = InferenceConfig(
            model=o.model or s.model or InferenceConfig.model,
            delegate=o.delegate or s.delegate,
            options=options,
            throttle_ms=o.throttle_ms if o.throttle_ms is not None else s.throttle_ms,
            top_k=s.top_k,
        )
        self.video.score_threshold = s.threshold
        return config, source

    def _fill_controls(self, config: InferenceConfig, source: str) -> None:
        self.controls.show_sources([], source)
        self._cameras = self._background(list_cameras, "delegate-scope-cameras")
        self.controls.show_config(config, self.video.score_threshold)

    # ---- commands from the user ------------------------------------------------------------

    def request_source(self, spec: str) -> None:
        if spec.startswith(f"{OPEN_FILE}:"):
            chosen = self._ask_source(spec.partition(":")[2])
            if chosen is None:  # cancelled or refused: the box goes back to the running source
                self.controls.show_sources(self._camera_list(), self.live.source)
                return
            spec = chosen
        self.switch_source(spec)

    def _ask_source(self, kind: str) -> str | None:
        """The source spec a dialog yields for "Video file…", "Image folder…", "Network stream…"."""
        if kind == "video":
            path, _ = QFileDialog.getOpenFileName(
                self, "Open video", "", "Videos (*.mp4 *.avi *.mov *.mkv *.webm);;All files (*)"
            )
            return f"video:{path}" if path else None
        if kind == "images":
            path = QFileDialog.getExistingDirectory(self, "Open image folder")
            return f"images:{path}" if path else None
        url, ok = QInputDialog.getText(
            self, "Open network stream", "URL of the camera or stream (rtsp://, http://, tcp://, udp://, …):"
        )
        if not ok or not url.strip():
            return None
        spec = f"stream:{url.strip()}"
        try:
            parse_source_spec(spec)
        except SourceError as exc:
            self.show_error("Cannot open this stream", str(exc))
            return None
        return spec

    def switch_source(self, spec: str) -> None:
        self.live.switch_source(spec)
        self._last_frame_index = -1
        self.video.set_message(f"Opening {spec}…")
        self.controls.show_sources(self._camera_list(), spec)
        self.plots.add_marker(f"source: {Path(spec).name if ':' not in spec else spec.split(':', 1)[0]}")
        self.statusBar().showMessage(f"Source: {redact_credentials(spec)}", 5000)

    def request_model(self, ref: str) -> None:
        if ref == OPEN_FILE:
            path, _ = QFileDialog.getOpenFileName(
                self, "Open TFLite model", "", "TFLite models (*.tflite);;All files (*)"
            )
            if not path:
                self.controls.set_models(str(self.live.config().model))
                return
            ref = path
        self.switch_model(ref)

    def switch_model(self, ref: str, labels: Path | None = None) -> bool:
        """Check the model here first (one clear message, nothing changes if it is bad), then switch."""
        return self._switch_model(ref, labels) is not None

    def _switch_model(self, ref: str, labels: Path | None) -> ModelSpec | None:
        try:
            spec = load_model_spec(ref, labels)
        except DelegateScopeError as exc:
            name = Path(ref).name
            self.show_error("Cannot open this model", str(exc) if name in str(exc) else f"{name}: {exc}")
            self.controls.set_models(str(self.live.config().model))
            return None
        for warning in spec.warnings:
            self.statusBar().showMessage(f"{spec.display_name}: {warning}", 10_000)
        self.live.reconfigure(model=ref, labels=labels)
        self.controls.set_models(ref, spec.display_name)
        return spec

    def request_labels(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open labels", "", "Labels (*.txt);;All files (*)")
        if path:
            self.load_labels(Path(path))

    def load_labels(self, path: Path) -> bool:
        """Use a labels file for the running model; say what was loaded and whether it fits."""
        spec = self._switch_model(str(self.live.config().model), path)
        if spec is None:
            return False
        fits = not spec.labels.warnings
        message = f"Labels: {path.name}, {sum(1 for label in spec.labels.labels if label)} for {spec.classes} outputs"
        self.statusBar().showMessage(message + ("" if fits else f" — {spec.labels.warnings[0]}"), 15_000)
        if not fits and self.options.dialogs:
            QMessageBox.warning(self, "These labels do not fit the model", spec.labels.warnings[0])
        return True

    def request_delegate(self, name: str) -> None:
        self.live.reconfigure(delegate=name, options=self.controls.options())
        self.controls.show_delegate(name)
        self.statusBar().showMessage(f"Switching to {name.upper()}…", 3000)

    def set_compare(self, b: tuple[str, str] | None) -> None:
        """Start the A/B comparison with B = (model, delegate), or end it (None)."""
        config = self.live.config()
        b_config = None if b is None else replace(config, model=b[0], delegate=b[1], labels=None)
        self.live.set_compare(b_config)
        self._last_frame_index = -1
        on = b_config is not None
        self.compare_dock.setVisible(on)  # type: ignore[attr-defined]
        if on:
            self.compare_dock.raise_()  # type: ignore[attr-defined]
        self.plots.show_b(on)
        self.plots.add_marker(f"A/B with {b[1].upper()} · {b[0]}" if b else "A/B off")
        if not on:
            self.video.titles = ("", "")
        self.controls.show_compare(b)

    def _options_changed(self, options: dict) -> None:
        self.live.reconfigure(options=options)
        self._apply_availability()

    def _threshold_changed(self, value: float) -> None:
        self.video.set_score_threshold(value)

    def toggle_recording(self) -> None:
        if self.live.recording:
            self.stop_recording()
        else:
            folder = self.saved.recordings_dir or _default_recordings_dir()
            self.start_recording(Path(folder) / time.strftime("session-%Y%m%d-%H%M%S.csv"))

    def start_recording(self, path: Path) -> bool:
        try:
            self.live.start_recording(path)
        except OSError as exc:
            self.record_action.setChecked(False)
            self.show_error("Cannot record", f"{exc.strerror or exc}: {path}" if isinstance(exc, OSError) else str(exc))
            return False
        self.record_action.setChecked(True)
        self.statusBar().showMessage(f"Recording to {path}", 5000)
        return True

    def stop_recording(self) -> RecordingStatus | None:
        status = self.live.stop_recording()
        self.record_action.setChecked(False)
        self.record_label.setText("")
        if status is not None:
            self.last_recording = status
            if status.error:
                self.statusBar().showMessage(f"{status.error}; {status.rows} rows kept in {status.path}", 15_000)
            else:
                lost = f", {status.lost_rows} rows lost (disk too slow)" if status.lost_rows else ""
                self.statusBar().showMessage(f"Recording saved: {status.path} ({status.rows} rows{lost})", 15_000)
        return status

    def request_review(self) -> None:
        folder = self.saved.recordings_dir or _default_recordings_dir()
        path, _ = QFileDialog.getOpenFileName(self, "Review a recording", folder, "Recordings (*.csv);;All files (*)")
        if path:
            self.open_review(Path(path))

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
        # Start where recordings go now (not the process's working directory).
        folder = QFileDialog.getExistingDirectory(
            self, "Recordings folder", self.saved.recordings_dir or _default_recordings_dir()
        )
        if folder:
            self.saved.recordings_dir = folder

    def save_screenshot(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save screenshot", "delegate-scope.png", "PNG (*.png)")
        if path and not self.grab().save(path):
            self.show_error("Cannot save the screenshot", path)

    def show_about(self) -> None:
        versions = package_versions()
        lines = [f"<b>Delegate Scope {__version__}</b>", "See where and how fast a TFLite model really runs.", ""]
        lines += [f"{name} {version}" for name, version in versions.items() if version]
        QMessageBox.about(self, "About Delegate Scope", "<br>".join(lines))

    def show_error(self, title: str, message: str) -> None:
        """One clear line in the status bar; a dialog too unless this is a scripted run."""
        self.statusBar().showMessage(f"{title}: {message}", 15_000)
        self.last_error = f"{title}: {message}"
        if self.options.dialogs and self.options.exit_after is None:
            QMessageBox.warning(self, title, message)

    def _background(self, fn: Callable[[], object], name: str) -> Future:
        """Run a slow, GUI-free lookup (GPU probe, camera list) off the GUI thread; polled later."""
        future: Future = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except Exception as exc:  # reported where the result is used
                future.set_exception(exc)

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self._background_threads.append(thread)
        return future

    # ---- polling ---------------------------------------------------------------------------

    def _display_tick(self) -> None:
        started, cpu_started = time.perf_counter(), time.thread_time()
        live = self.live
        frame = live.latest_frame()
        result, result_b = live.latest_result("a"), live.latest_result("b")
        result_id = (_result_key(result), _result_key(result_b))
        if frame is None or (frame.index == self._last_frame_index and result_id == self._last_result_id):
            return
        new_frame = frame.index != self._last_frame_index
        self._last_frame_index, self._last_result_id = frame.index, result_id
        self.video.set_frame(frame, result, result_b)
        self.video.repaint()  # paint now, so the figure below is the whole cost of this frame
        if new_frame:
            now = time.monotonic()
            self._display_times.append(now)
            self.gui_work_ms.append((time.perf_counter() - started) * 1000)
            self.gui_cpu_ms.append((time.thread_time() - cpu_started) * 1000)

    def display_fps(self, window_s: float = 5.0) -> float:
        now = time.monotonic()
        times = [t for t in self._display_times if t > now - window_s]
        if len(times) < 2:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0]) if times[-1] > times[0] else 0.0

    def _stats_tick(self) -> None:
        live = self.live
        snap = live.snapshot("a")
        report = live.report("a")
        comparing = live.comparing
        snap_b = live.snapshot("b") if comparing else None
        self.plots.add_point(snapshot_values(snap, self.display_fps(), snap_b))
        if snap_b is not None:
            self._update_compare(snap, snap_b)
        self._plot_times.append(time.monotonic())
        if self._first_count is None and snap.inferences_total:
            self._first_count = (time.monotonic(), snap.inferences_total)
        backend = report.used if report else live.config().delegate
        self.video.backend_label = backend.upper() + (
            " (fallback)" if report and report.requested != report.used else ""
        )
        self.video.inference_fps = snap.inference_fps
        self.delegation.set_metrics(snap, backend, shared=comparing)
        if live.generation != self._events_of:  # a new pipeline numbers its events from 1 again
            self._events_of, self._last_event_seq = live.generation, 0
        events = live.events_since(self._last_event_seq)
        if events:
            self._last_event_seq = events[-1].seq
            self._handle_events(events)
        status = live.status()
        text = status.state if status.state == State.RUNNING else f"{status.state}: {status.message}"
        if snap.dropped_total:
            text += f"  ·  {snap.dropped_total} frame{'s' if snap.dropped_total != 1 else ''} dropped"
        self.status_label.setText(text)
        if live.latest_frame() is None and status.state != State.RUNNING:
            self.video.set_message(f"{status.state}: {status.message}")
        title = _STATE_TITLES.get(status.state)  # only the states where the source stopped have one
        self.video.set_banner(f"{title}\n{status.message}" if title else "")
        self._poll_background()
        self._update_recording()

    def _update_compare(self, snap: MetricsSnapshot, snap_b: MetricsSnapshot) -> None:
        comparison = self.live.comparison()
        if comparison is None:
            return
        names = []
        for side in ("a", "b"):
            report, config = self.live.report(side), self.live.config(side)
            used = report.used.upper() if report else config.delegate.upper()
            if report and report.requested != report.used:
                used += f" (fallback from {report.requested.upper()})"
            names.append(f"{used} · {Path(str(config.model)).stem}")
        self.video.titles = (f"A · {names[0]}", f"B · {names[1]}")
        self.compare_panel.set_summary(comparison.summary, snap, snap_b, (names[0], names[1]))
        self.compare_panel.set_thumbnails(comparison.thumbnails)

    def _handle_events(self, events: list[Event]) -> None:
        for event in events:
            # One marker per session: its open/switch event and the fallback that follows carry
            # the same session id.
            marked = event.session_id is not None and event.session_id == self._marked_session
            if event.kind in _MARKER_EVENTS and not marked:
                self.plots.add_marker(_marker_text(event), at=event.at - self.plots.t0)
                self._marked_session = event.session_id
            if event.report is not None:
                if event.model:
                    self._model_label = event.model["name"]
                    self._labels = (event.model.get("labels", ""), event.model.get("label_warnings", []))
                self.delegation.set_report(event.report, self._model_label, *self._labels)
                self.controls.show_delegate(event.report.requested)
                parts = [f"{k} {v:.0f} ms" for k, v in (("close", event.close_ms), ("open", event.open_ms),
                         ("first inference", event.first_inference_ms)) if v is not None]  # fmt: skip
                if parts:
                    self.delegation.set_switch_cost("Last switch: " + ", ".join(parts))
            if event.kind == EventKind.SWITCH_FAILED:  # the box showed the refused model: show what runs
                self.controls.set_models(str(self.live.config().model))
            if event.kind in _STATUS_EVENTS and event.kind != EventKind.OPEN:
                self.statusBar().showMessage(event.message, 15_000)

    def _poll_background(self) -> None:
        if self._statuses is not None and self._statuses.done():
            try:
                self._delegate_statuses = {s["name"]: s for s in self._statuses.result()}
            except Exception as exc:  # a probe that fails says so; the CPU stays usable
                self._delegate_statuses = {"gpu": {"name": "gpu", "reason": f"probe failed: {exc}"}}
            self._statuses = None
            self._apply_availability()
        if self._cameras is not None and self._cameras.done():
            self._camera_found = self._cameras.result() if self._cameras.exception() is None else []
            self._cameras = None
            self.controls.show_sources(self._camera_found, self.live.source)

    def _camera_list(self) -> list:
        return getattr(self, "_camera_found", [])

    def _apply_availability(self) -> None:
        statuses = getattr(self, "_delegate_statuses", None)
        if not statuses:
            return
        reasons = {name: s.get("reason") for name, s in statuses.items()}
        gpu = statuses.get("gpu", {})
        if reasons.get("gpu") and gpu.get("software") and self.controls.allows_software_gpu():
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
        self.record_label.setText(f"● REC {status.path.name}  {status.rows} rows  {minutes:02d}:{seconds:02d}")
        self.record_label.setToolTip(str(status.path))
        self.record_label.setStyleSheet("color: #c62828; font-weight: bold")

    # ---- scripted runs and shutdown --------------------------------------------------------

    def stats(self) -> dict:
        """Figures for benchmarks and scripted runs (--stats FILE)."""
        work = np.array(self.gui_work_ms) if self.gui_work_ms else np.zeros(1)
        plot_times = np.array(self._plot_times)
        snap = self.live.snapshot()
        plot_hz = (len(plot_times) - 1) / (plot_times[-1] - plot_times[0]) if len(plot_times) > 2 else 0.0
        run_fps = None
        if self._first_count is not None:  # over the whole run, comparable with bench's figure
            since, count = self._first_count
            span = time.monotonic() - since
            run_fps = (snap.inferences_total - count) / span if span > 0 else None
        return {
            "inference_fps_run": run_fps,
            "display_fps": self.display_fps(),
            "frames_displayed": len(self._display_times),
            "gui_work_ms_p50": float(np.percentile(work, 50)),
            "gui_work_ms_p95": float(np.percentile(work, 95)),
            "gui_work_ms_max": float(work.max()),
            "gui_cpu_ms_p50": float(np.percentile(self.gui_cpu_ms, 50)) if self.gui_cpu_ms else None,
            "gui_cpu_ms_p95": float(np.percentile(self.gui_cpu_ms, 95)) if self.gui_cpu_ms else None,
            "paint_ms_p50": float(np.percentile(self.video.paint_times, 50)) if self.video.paint_times else None,
            "paint_ms_p95": float(np.percentile(self.video.paint_times, 95)) if self.video.paint_times else None,
            "plot_refresh_hz": plot_hz,
            "plot_updates": self.plots.updates,
            "metrics": snap.to_dict(),
            "session": self.session_facts(),
        }

    def session_facts(self) -> dict:
        """What ran, for a scripted run's --stats: model, source, requested and used backend, fallback."""
        live = self.live
        report = live.report()
        status = live.status()
        delegate = {k: v for k, v in report.to_dict().items() if k != "native_log"} if report else None
        opened = [e.model for e in live.events() if e.model]
        return {
            "model": opened[-1] if opened else {"requested": str(live.config().model)},
            "source": redact_credentials(self.live.source),
            "delegate": delegate,
            "status": {"state": status.state, "message": status.message, "exit_code": status.exit_code},
        }

    def _scripted_outcome(self) -> tuple[int, str]:
        """A scripted run ends with the exit code of what stopped the pipeline (6: a source that never
        opened, 3: a model refused), 0 otherwise, as `bench` would; read before closing stops it."""
        error = self.live.status().error()
        return (error.exit_code, str(error)) if error is not None else (0, "")

    def _scripted_exit(self) -> None:
        self.exit_code, self.exit_message = self._scripted_outcome()
        if self.options.stats_file:
            import json

            self.options.stats_file.write_text(json.dumps(self.stats(), indent=2, default=str), encoding="utf-8")
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
        self.stop_recording()
        self.live.stop()
        for thread in self._background_threads:  # the GPU probe is a child process of ~1 s
            thread.join(BACKGROUND_JOIN_S)
        scripted = self.options.exit_after is not None
        if self.options.save_settings if self.options.save_settings is not None else not scripted:
            self._save()  # a scripted demo or benchmark leaves the user's own settings alone
        event.accept()

    def _save(self) -> None:
        config = self.live.config()
        self.saved.update(
            source=self.live.source,
            model=str(config.model),
            delegate=config.delegate,
            threads=config.options.get("threads"),
            precision=config.options.get("precision", "fp16"),
            allow_software=bool(config.options.get("allow_software")),
            units=config.options.get("compute_units", "all"),
            throttle_ms=config.throttle_ms,
            top_k=config.top_k,
            threshold=self.video.score_threshold,
        )
        save_settings(self.qsettings, self.saved, self.saveGeometry(), self.saveState())


def _marker_text(event: Event) -> str:
    if event.kind in (EventKind.OPEN, EventKind.SWITCH, EventKind.FALLBACK) and event.report is not None:
        used = event.report.used.upper()
        model = event.model["name"] if event.model else ""
        if event.kind == EventKind.FALLBACK or event.report.requested != event.report.used:
            return f"{event.report.requested.upper()}→{used} fallback"
        return f"{used} · {model}"
    return event.kind.replace("_", " ")


def _default_recordings_dir() -> str:
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation) or str(Path.home())
    return str(Path(docs) / "Delegate Scope")


def restore_window_state(window: MainWindow, geometry: bytes | None, state: bytes | None) -> None:
    if geometry:
        window.restoreGeometry(geometry)
    if state:
        window.restoreState(state)


# When the GUI thread runs Python (plots, overlay) at the moment an inference ends, the
# inference thread waits up to CPython's switch interval for the GIL: 5 ms by default, a whole
# int8 inference here. benchmarks/switch_interval.py --spinner: 22 inferences/s at 5 ms,
# 107/s at 0.5 ms; without such a thread the two intervals measured the same (docs/benchmarks.md).
GUI_SWITCH_INTERVAL_S = 0.0005
# Every switch in the window replaces worker threads; capped, they share arenas instead of each
# keeping its own free memory (app.heap.limit_arenas; the 30-minute soak in docs/reliability.md).
GUI_MALLOC_ARENAS = 2


def application() -> QApplication:
    """The QApplication, with the process-wide settings the window wants, set before any
    worker thread starts."""
    sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    limit_arenas(GUI_MALLOC_ARENAS)
    app = QApplication.instance()
    if app is None:
        app = QApplication([])
    assert isinstance(app, QApplication)
    return app


def _result_key(result: Result | None) -> tuple[int, int] | None:
    """Which result this is: a new one has a new frame or comes from a new session."""
    return (result.session_id, result.frame_index) if result is not None else None

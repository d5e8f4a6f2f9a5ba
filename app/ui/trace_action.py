"""Record → Trace…: start and stop taking a timeline of the pipeline and the window's paints (app/live/trace.py),
written when it stops and when the window closes; its ring is pruned once a second meanwhile."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMainWindow

from app.errors import UsageError
from app.live.controller import LiveController
from app.profile.background import LiveProfile
from app.recording.trace import TraceFacts
from app.ui.window_config import GuiOptions

PRUNE_INTERVAL_MS = 1000


class TraceControl:
    def __init__(
        self,
        window: QMainWindow,
        live: LiveController,
        action: QAction,
        options: GuiOptions,  # --trace starts one now; --trace-seconds: its ring; scripted: no file dialog
        *,
        folder: Callable[[], str],  # where an unnamed trace goes: the recordings folder
        show_error: Callable[[str, str], object],
        profiles: Callable[[], Mapping[str, LiveProfile]] = dict,  # the Ops view's newest profile of each side
    ) -> None:
        self.window, self.live, self.action = window, live, action
        self.folder, self.seconds = folder, options.trace_seconds
        self.dialogs = options.dialogs and not options.scripted  # else a trace is named after the time in `folder`
        self.show_message = window.statusBar().showMessage
        self.show_error, self.profiles = show_error, profiles
        self.last: TraceFacts | None = None  # the trace written last
        self._timer = QTimer(window, interval=PRUNE_INTERVAL_MS)
        self._timer.timeout.connect(self._prune)
        self._timer.start()
        if options.trace is not None:
            self.start(options.trace)

    def toggle(self) -> None:
        if self.live.trace is not None:
            self.stop()
            return
        path = Path(self.folder()) / time.strftime("trace-%Y%m%d-%H%M%S.json")
        if self.dialogs:
            chosen, _ = QFileDialog.getSaveFileName(self.window, "Write a trace to", str(path), "Trace (*.json)")
            if not chosen:
                self.action.setChecked(False)
                return
            path = Path(chosen)
        self.start(path)

    def start(self, path: Path) -> bool:
        if not path.parent.is_dir() or path.is_dir():
            self.action.setChecked(False)
            self.show_error("Cannot trace", f"not a file in an existing folder: {path}")
            return False
        self.live.start_trace(path, self.seconds)
        self.action.setChecked(True)
        ring = f"the last {self.seconds:g} s" if self.seconds is not None else "all of it"
        self.show_message(f"Tracing ({ring}) to {path}: written when it stops (Record → Trace…)", 15_000)
        return True

    def stop(self, *, closing: bool = False) -> TraceFacts | None:
        """Write the trace; the pipeline runs on without one unless the window is `closing`."""
        self.action.setChecked(False)
        try:
            facts = self.live.stop_trace(restart=not closing)
        except UsageError as exc:
            self.show_error("Trace not written", str(exc))
            return None
        if facts is not None:
            self.last = facts
            self.show_message(f"Trace written: {facts.path} ({facts.frames} inferred frames, {facts.events} "
                              "events); open it in ui.perfetto.dev", 15_000)  # fmt: skip
        return facts

    def _prune(self) -> None:
        """Once a second: the ring's old part dropped, the Ops view's new profiles kept."""
        trace = self.live.trace
        if trace is not None:
            trace.prune()
            for side, entry in self.profiles().items():
                trace.profiled(side, entry)

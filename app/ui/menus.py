"""The window's menus and toolbar: each entry calls one of the commands it is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QToolBar

from app.ui.help import HelpDialogs
from app.ui.panels.controls import OPEN_FILE


class MenuCommands(Protocol):
    """What the menu entries call (the main window's commands)."""

    qsettings: QSettings  # the window's settings store (Help → Where files go names its file)

    def request_source(self, spec: str) -> None: ...
    def request_model(self, ref: str) -> None: ...
    def request_labels(self) -> None: ...
    def use_own_labels(self) -> object: ...
    def toggle_recording(self) -> None: ...
    def toggle_trace(self) -> None: ...
    def choose_recordings_dir(self) -> None: ...
    def recordings_dir(self) -> str: ...
    def request_review(self) -> object: ...
    def save_screenshot(self) -> None: ...
    def show_about(self) -> None: ...
    def reset_layout(self) -> None: ...


class RecordingActions:
    """The Record menu's live entries: the checkable Record action and the line naming the folder."""

    def __init__(self, record: QAction, folder: QAction, trace: QAction) -> None:
        self.record, self.folder, self.trace = record, folder, trace

    def show_folder(self, folder: str) -> None:
        """Name the folder the next recording goes to (home as ~), whole in the tooltips."""
        shown = home_relative(folder)
        self.folder.setText(f"Into {shown}")
        self.folder.setToolTip(str(Path(folder).expanduser()))
        self.record.setToolTip(f"Start/stop recording one CSV row per inference into {shown} (Ctrl+R)")
        self.record.setStatusTip(f"Records into {shown}")


def home_relative(path: str | Path) -> str:
    """A path as the user reads it: under the home folder as ~/…"""
    full, home = Path(path).expanduser(), Path.home()
    return f"~/{full.relative_to(home).as_posix()}" if full.is_relative_to(home) and full != home else str(full)


def build_menus(
    window: QMainWindow,
    commands: MenuCommands,
    *,
    docks: Sequence[QDockWidget],
    clear_plots: Callable[[], object],
    benchmarks: Sequence[QAction],
) -> RecordingActions:
    """Fill `window`'s menu bar and toolbar: File, Record and Help call `commands`, View toggles `docks`
    and clears the plots, Benchmark holds `benchmarks` (also on the toolbar). Returns the Record menu's
    actions (the window keeps the check mark in step with the recording, and the folder shown)."""

    def action(
        text: str, slot: Callable[[], object], shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None
    ) -> QAction:
        a = QAction(text, window)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        a.triggered.connect(slot)
        return a

    file_menu = window.menuBar().addMenu("&File")
    file_menu.addAction(
        action("Open &video…", lambda: commands.request_source(f"{OPEN_FILE}:video"), QKeySequence.StandardKey.Open)
    )
    file_menu.addAction(action("Open &image folder…", lambda: commands.request_source(f"{OPEN_FILE}:images")))
    file_menu.addAction(action("Open &model…", lambda: commands.request_model(OPEN_FILE), "Ctrl+M"))
    file_menu.addAction(action("Open &labels…", commands.request_labels, "Ctrl+L"))
    file_menu.addAction(action("Use the model's o&wn labels", commands.use_own_labels))
    file_menu.addAction(action("Save &screenshot…", commands.save_screenshot, "Ctrl+Shift+S"))
    file_menu.addSeparator()
    file_menu.addAction(action("&Quit", window.close, QKeySequence.StandardKey.Quit))

    # Where Ctrl+R will write is said before it is pressed: in this menu and the Record button's tooltip.
    record_menu = window.menuBar().addMenu("&Record")
    record_menu.setToolTipsVisible(True)
    record = action("● &Record", commands.toggle_recording, "Ctrl+R")
    record.setCheckable(True)
    record_menu.addAction(record)
    folder = QAction("", window)
    folder.setEnabled(False)  # an information line: the folder the next recording goes to
    record_menu.addAction(folder)
    record_menu.addAction(action("Recordings &folder…", commands.choose_recordings_dir))
    trace = action("&Trace…", commands.toggle_trace)  # a timeline for Perfetto (app/ui/trace_action.py)
    trace.setCheckable(True)
    trace.setToolTip("Start/stop writing a trace of the pipeline's threads and the window's paints (Perfetto)")
    record_menu.addAction(trace)
    record_menu.addSeparator()
    record_menu.addAction(action("Review a recor&ding…", commands.request_review, "Ctrl+Shift+O"))
    recording = RecordingActions(record, folder, trace)
    record_menu.aboutToShow.connect(lambda: recording.show_folder(commands.recordings_dir()))
    recording.show_folder(commands.recordings_dir())

    view = window.menuBar().addMenu("&View")
    for dock in docks:
        view.addAction(dock.toggleViewAction())
    view.addAction(action("&Clear plots", clear_plots))
    view.addSeparator()
    view.addAction(action("&Reset layout", commands.reset_layout))
    benchmark = window.menuBar().addMenu("&Benchmark")
    for entry in benchmarks:
        benchmark.addAction(entry)
    help_menu = window.menuBar().addMenu("&Help")
    helps = HelpDialogs(window, commands.recordings_dir, commands.qsettings)  # kept alive by the lambdas
    help_menu.addAction(action("&User guide", lambda: helps.show_guide(), QKeySequence.StandardKey.HelpContents))
    help_menu.addAction(action("&Keyboard shortcuts", lambda: helps.show_shortcuts(), "Ctrl+/"))
    help_menu.addAction(action("&Where files go", lambda: helps.show_files()))
    help_menu.addSeparator()
    help_menu.addAction(action("&About Delegate Scope", commands.show_about))

    bar = QToolBar("Main")
    bar.setObjectName("toolbar-main")
    bar.addAction(record)
    for entry in benchmarks:
        bar.addAction(entry)
    window.addToolBar(bar)
    return recording

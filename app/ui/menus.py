"""The window's menus and toolbar: each entry calls one of the window's commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QToolBar

from app.ui.panels.controls import OPEN_FILE

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


def build_menus(window: MainWindow) -> QAction:
    """Fill the menu bar and the toolbar; returns the checkable Record action (the window keeps
    its check mark in step with the recording)."""

    def action(text: str, slot: Callable[[], object], shortcut: QKeySequence | str | None = None) -> QAction:
        a = QAction(text, window)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        a.triggered.connect(slot)
        return a

    file_menu = window.menuBar().addMenu("&File")
    file_menu.addAction(
        action("Open &video…", lambda: window.request_source(f"{OPEN_FILE}:video"), QKeySequence.StandardKey.Open)
    )
    file_menu.addAction(action("Open &image folder…", lambda: window.request_source(f"{OPEN_FILE}:images")))
    file_menu.addAction(action("Open &model…", lambda: window.request_model(OPEN_FILE), "Ctrl+M"))
    file_menu.addAction(action("Open &labels…", window.request_labels, "Ctrl+L"))
    file_menu.addSeparator()
    record = action("● &Record", window.toggle_recording, "Ctrl+R")
    record.setCheckable(True)
    record.setToolTip("Start/stop recording one CSV row per inference (Ctrl+R)")
    file_menu.addAction(record)
    file_menu.addAction(action("Recordings &folder…", window.choose_recordings_dir))
    file_menu.addAction(action("Review a recor&ding…", window.request_review, "Ctrl+Shift+O"))
    file_menu.addAction(action("Save &screenshot…", window.save_screenshot, "Ctrl+Shift+S"))
    file_menu.addSeparator()
    file_menu.addAction(action("&Quit", window.close, QKeySequence.StandardKey.Quit))

    view = window.menuBar().addMenu("&View")
    view.addAction(window.controls_dock.toggleViewAction())
    view.addAction(window.delegation_dock.toggleViewAction())
    view.addAction(window.ops_dock.toggleViewAction())
    view.addAction(action("&Clear plots", window.plots.clear_series))
    benchmark = window.menuBar().addMenu("&Benchmark")
    benchmark.addAction(window.sweep.action)
    benchmark.addAction(window.unpaced.action)
    help_menu = window.menuBar().addMenu("&Help")
    help_menu.addAction(action("&About Delegate Scope", window.show_about))

    bar = QToolBar("Main")
    bar.setObjectName("toolbar-main")
    bar.addAction(record)
    bar.addAction(window.sweep.action)
    bar.addAction(window.unpaced.action)
    window.addToolBar(bar)
    return record

"""The Help menu's dialogs: the user guide, the keyboard shortcuts, where files go. Each is a non-modal
window of the main window; the guide is kept (its history with it), the other two are read afresh at
each opening (the keys and folders as they are then)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QDialog, QMainWindow

from app.ui.help_files import FilesDialog, file_locations
from app.ui.help_guide import GuideBrowser, docs_dir
from app.ui.help_shortcuts import ShortcutsDialog

D = TypeVar("D", bound=QDialog)


class HelpDialogs:
    def __init__(self, window: QMainWindow, recordings_dir: Callable[[], str], settings: QSettings) -> None:
        self.window, self.recordings_dir, self.settings = window, recordings_dir, settings
        self.guide: GuideBrowser | None = None
        self.shortcuts: ShortcutsDialog | None = None
        self.files: FilesDialog | None = None

    def show_guide(self) -> GuideBrowser:
        if self.guide is None:
            self.guide = GuideBrowser(self.window, docs_dir())
        return _raise(self.guide)

    def show_shortcuts(self) -> ShortcutsDialog:
        _retire(self.shortcuts)
        self.shortcuts = _raise(ShortcutsDialog(self.window))
        return self.shortcuts

    def show_files(self) -> FilesDialog:
        _retire(self.files)
        self.files = _raise(FilesDialog(self.window, file_locations(self.recordings_dir(), self.settings)))
        return self.files


def _raise(dialog: D) -> D:
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
    return dialog


def _retire(dialog: QDialog | None) -> None:
    """The previous reading goes: one such window at a time."""
    if dialog is not None:
        dialog.close()
        dialog.deleteLater()

"""Help → Where files go: the real folders and files this window reads and writes on this system, each
copyable (a user attaching a recording or a settings file to a question needs the path, not a rule)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.coreml_mil.cache import default_cache_dir
from app.system.paths import error_log, models_dir
from app.ui.help_guide import docs_dir

NOTE_WIDTH = 480


@dataclass(frozen=True)
class FileLocation:
    what: str
    path: str
    note: str


def settings_format(settings: QSettings) -> str:
    if settings.format() == QSettings.Format.IniFormat:
        return "an INI file"
    if sys.platform == "darwin":
        return "a property list (macOS's own format)"
    if sys.platform == "win32":
        return "the Windows registry"
    return "an INI file (Qt's native format here)"


def file_locations(recordings: str, settings: QSettings) -> list[FileLocation]:
    """What goes where, for `recordings` (the folder Ctrl+R records into now) and the window's `settings`."""
    rows = [
        FileLocation(
            "Recordings",
            str(Path(recordings).expanduser()),
            "Record (Ctrl+R) writes session-<date>-<time>.csv here, a .meta.json sidecar beside each; "
            "Record → Recordings folder… changes it.",
        ),
        FileLocation(
            "Traces",
            str(Path(recordings).expanduser()),
            "Record → Trace… offers trace-<date>-<time>.json here (Perfetto's JSON); its dialog can pick another.",
        ),
        FileLocation(
            "Settings",
            settings.fileName(),
            f"What the window remembers (source, model, delegate, recordings folder, layout), as "
            f"{settings_format(settings)}; delete it to start afresh.",
        ),
        FileLocation(
            "Screenshots",
            os.getcwd(),
            "File → Save screenshot… (Ctrl+Shift+S) asks where; it starts here, the folder the app was started in.",
        ),
        FileLocation(
            "Error log", str(error_log()), "An unexpected error's whole traceback (the window shows one line)."
        ),
        FileLocation("User guide", str(docs_dir()), "The pages Help → User guide shows."),
        FileLocation("Bundled models", str(models_dir()), "The models the Model list offers."),
    ]
    if sys.platform == "darwin":
        rows.append(
            FileLocation(
                "Core ML cache",
                str(default_cache_dir()),
                "Translated Core ML programs, reused across runs; DELEGATE_SCOPE_CACHE moves it.",
            )
        )
    return rows


class FilesDialog(QDialog):
    """One row per location: its name, the path in a read-only field, and Copy."""

    def __init__(self, parent: QWidget, locations: list[FileLocation]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Where files go")
        self.locations = locations
        self.fields: list[QLineEdit] = []
        grid = QGridLayout()
        for i, place in enumerate(locations):
            grid.addWidget(QLabel(f"<b>{place.what}</b>"), 2 * i, 0)
            field = QLineEdit(place.path)
            field.setReadOnly(True)
            field.setCursorPosition(0)
            field.setMinimumWidth(field.fontMetrics().horizontalAdvance(place.path) + 16)
            self.fields.append(field)
            grid.addWidget(field, 2 * i, 1)
            copy = QPushButton("Copy")
            copy.clicked.connect(lambda _=False, path=place.path: QGuiApplication.clipboard().setText(path))
            grid.addWidget(copy, 2 * i, 2)
            note = QLabel(place.note)
            note.setWordWrap(True)
            note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(note, 2 * i + 1, 1, 1, 2)
        grid.setColumnMinimumWidth(1, NOTE_WIDTH)  # the notes wrap at a readable width, not the narrowest
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy_all = buttons.addButton("Copy all", QDialogButtonBox.ButtonRole.ActionRole)
        copy_all.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.text()))
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(buttons)

    def text(self) -> str:
        return "\n".join(f"{place.what}: {place.path}" for place in self.locations)

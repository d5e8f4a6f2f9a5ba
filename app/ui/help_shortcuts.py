"""Help → Keyboard shortcuts: read from the window's own QActions and QShortcuts when asked, so the list
is what the keys do now, never a copy that can drift."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True)
class Shortcut:
    keys: str  # as this platform writes them ("Ctrl+Shift+W"; "⇧⌘W" on macOS)
    command: str  # where it lives: "Benchmark → Sweep delegates…"


def plain(text: str) -> str:
    """A menu text as read: the mnemonic's & gone (&& is a literal &)."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def keys_text(sequences: list[QKeySequence]) -> str:
    return ", ".join(s.toString(QKeySequence.SequenceFormat.NativeText) for s in sequences if not s.isEmpty())


def window_shortcuts(window: QMainWindow) -> list[Shortcut]:
    """Every key the window answers: menu entries in menu order, then actions outside the menus, then
    QShortcuts, then Alt+letter for each menu."""
    rows: list[Shortcut] = []
    listed: set[int] = set()
    menus = [(plain(entry.text()), entry.menu()) for entry in window.menuBar().actions()]
    for title, menu in menus:
        if isinstance(menu, QMenu):
            rows += _menu_rows(menu, title, listed)
    for action in window.findChildren(QAction):
        if id(action) not in listed and keys_text(action.shortcuts()):
            rows.append(Shortcut(keys_text(action.shortcuts()), plain(action.text()) or action.toolTip()))
    for shortcut in window.findChildren(QShortcut):
        rows.append(Shortcut(keys_text(shortcut.keys()), shortcut.whatsThis() or shortcut.objectName()))
    for entry in window.menuBar().actions():
        mnemonic = keys_text([QKeySequence.mnemonic(entry.text())])
        if mnemonic:
            rows.append(Shortcut(mnemonic, f"Open the {plain(entry.text())} menu"))
    return rows


def _menu_rows(menu: QMenu, path: str, listed: set[int]) -> list[Shortcut]:
    rows = []
    for action in menu.actions():
        listed.add(id(action))
        submenu = action.menu()
        if isinstance(submenu, QMenu):
            rows += _menu_rows(submenu, f"{path} → {plain(action.text())}", listed)
        elif keys_text(action.shortcuts()):
            rows.append(Shortcut(keys_text(action.shortcuts()), f"{path} → {plain(action.text())}"))
    return rows


class ShortcutsDialog(QDialog):
    """The table of `window_shortcuts`, read-only, copyable cell by cell."""

    def __init__(self, window: QMainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent or window)
        self.setWindowTitle("Keyboard shortcuts")
        self.rows = window_shortcuts(window)
        self.table = QTableWidget(len(self.rows), 2)
        self.table.setHorizontalHeaderLabels(["Keys", "Does"])
        for i, row in enumerate(self.rows):
            self.table.setItem(i, 0, QTableWidgetItem(row.keys))
            self.table.setItem(i, 1, QTableWidgetItem(row.command))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.resizeColumnsToContents()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Alt and an underlined letter open its menu, or pick its entry in an open menu."))
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        rows_height = sum(self.table.rowHeight(i) for i in range(len(self.rows)))
        self.resize(
            self.table.horizontalHeader().length() + 80,
            min(720, rows_height + self.table.horizontalHeader().height() + 110),
        )

"""Help → Keyboard shortcuts is read from the window's own actions and shortcuts; docs/window.md keeps up."""

from __future__ import annotations

import re

import pytest

from tests.helpers.paths import ROOT

pytest.importorskip("pytestqt")

pytestmark = pytest.mark.slow  # each test opens the real window on the demo clip


def _open_shortcuts(window):
    from app.ui.help_shortcuts import ShortcutsDialog

    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    next(a for a in help_menu.actions() if a.text() == "&Keyboard shortcuts").trigger()
    (dialog,) = [d for d in window.findChildren(ShortcutsDialog) if d.isVisible()]
    table = dialog.table
    return [(table.item(r, 0).text(), table.item(r, 1).text()) for r in range(table.rowCount())]


def _menu_actions(window):
    """(menu title, action) for every entry of every menu, separators and information lines left out."""
    from app.ui.help_shortcuts import plain

    for entry in window.menuBar().actions():
        for action in entry.menu().actions():
            if not action.isSeparator() and action.isEnabled():
                yield plain(entry.text()), action


def test_every_action_and_shortcut_of_the_window_is_listed(make_window):
    from PySide6.QtGui import QAction, QKeySequence, QShortcut

    from app.ui.help_shortcuts import keys_text, plain

    window = make_window()
    extra = QShortcut(QKeySequence("Ctrl+Alt+J"), window)  # one outside any menu: read too, not a fixed list
    extra.setWhatsThis("Jump somewhere")
    rows = _open_shortcuts(window)
    keyed = [a for a in window.findChildren(QAction) if keys_text(a.shortcuts())]
    assert len(keyed) >= 8  # Open video, model, labels, screenshot, Quit, Record, Review, Sweep, Help's two
    for action in keyed:
        assert any(
            keys == keys_text(action.shortcuts()) and command.endswith(plain(action.text())) for keys, command in rows
        ), action.text()
    assert ("Ctrl+Alt+J", "Jump somewhere") in rows
    assert ("F1", "Help → User guide") in rows and ("Alt+H", "Open the Help menu") in rows
    keys = [k for k, _ in rows]
    assert len(keys) == len(set(keys)), "two commands share a key"


def test_docs_window_md_names_every_menu_entry_and_shortcut(make_window):
    """docs/window.md is written by hand: this keeps it from falling behind the window's menus."""
    text = (ROOT / "docs" / "window.md").read_text(encoding="utf-8")
    window = make_window()
    missing = [
        f"{menu} → {action.text()}" for menu, action in _menu_actions(window) if _shown(action.text()) not in text
    ]
    assert missing == []
    listed = [keys for keys, _ in _open_shortcuts(window)]
    assert [k for k in listed if f"`{k}`" not in text and k != "Ctrl+Alt+J"] == []


def _shown(text: str) -> str:
    """A menu text as the page writes it: mnemonic gone, a leading symbol (●) dropped."""
    from app.ui.help_shortcuts import plain

    return re.sub(r"^[^\w]+\s*", "", plain(text))

"""The Help menu on the real window: its entries in order, the guide it opens and About."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

import pytest

pytest.importorskip("pytestqt")

pytestmark = pytest.mark.slow  # each test opens the real window on the demo clip


def _help_action(window, text: str):
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    return next(a for a in help_menu.actions() if a.text() == text)


def test_the_help_menu_opens_the_guide_at_the_docs_start_page(make_window):
    from app.ui.help_guide import GuideBrowser, docs_dir, start_page

    window = make_window()
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    entries = [a.text() for a in help_menu.actions() if not a.isSeparator()]
    assert entries == ["&User guide", "&Keyboard shortcuts", "&Where files go", "&About Delegate Scope"]
    _help_action(window, "&User guide").trigger()
    _help_action(window, "&User guide").trigger()  # a second time raises the same window, history kept
    (guide,) = window.findChildren(GuideBrowser)
    assert guide.isVisible()
    assert guide.browser.source().toLocalFile() == str(start_page(docs_dir()))


def test_about_names_the_version_purpose_and_what_it_runs_on(make_window):
    import PySide6
    from PySide6.QtCore import Qt, qVersion
    from PySide6.QtWidgets import QMessageBox

    window = make_window()
    _help_action(window, "&About Delegate Scope").trigger()
    (box,) = [b for b in window.findChildren(QMessageBox) if b.isVisible()]
    assert not box.isModal()  # a running pipeline keeps being drawn behind it
    assert box.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    text = box.text()
    assert f"Delegate Scope {metadata.version('delegate-scope')}</b>" in text
    assert metadata.metadata("delegate-scope")["Summary"] in text
    assert f"LiteRT (ai-edge-litert) {metadata.version('ai-edge-litert')}" in text
    assert f"Qt {qVersion()}, PySide6 {PySide6.__version__}" in text
    assert f"Python {platform.python_version()}" in text and sys.version.split()[0] in text

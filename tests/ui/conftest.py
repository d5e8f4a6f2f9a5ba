"""Qt tests run offscreen (no display needed) against the real window, pipeline and runtime."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists


@pytest.fixture
def no_thread_left():
    """Fails a test that leaves one of the app's threads running after the window closed."""
    before = {t.ident for t in threading.enumerate()}
    yield
    leftover = [
        t.name for t in threading.enumerate() if t.ident not in before and t.is_alive() and "delegate-scope" in t.name
    ]
    assert not leftover, f"threads left running: {leftover}"


@pytest.fixture
def make_window(qtbot, tmp_path: Path, no_thread_left):
    from PySide6.QtCore import QSettings

    from app.ui.main_window import GuiOptions, MainWindow

    windows = []

    def make(**options: object) -> MainWindow:
        options.setdefault("source", "demo")
        options.setdefault("threads", 1)
        settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
        window = MainWindow(GuiOptions(dialogs=False, **options), settings)  # type: ignore[arg-type]
        qtbot.addWidget(window)
        window.resize(1200, 800)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.close()
    for window in windows:
        assert not any(t.is_alive() for t in window.live.threads())

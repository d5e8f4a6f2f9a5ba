"""The window's status bar (app/ui/views/status_bar.py): a message longer than the room beside the
permanent labels wraps, the bar growing for it, instead of being cut under them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt

pytest.importorskip("pytestqt")

MESSAGE = ("Recording both sides of A/B in /home/someone/Documents/Delegate Scope: A run.csv, B run-b.csv, "
           "per-frame comparison run-compare.csv")  # fmt: skip


def test_a_long_message_wraps_beside_the_labels_and_the_bar_grows(qtbot, make_window):
    window = make_window()
    window.resize(1280, 860)
    bar = window.statusBar()
    window.record_label.setText("● REC A+B run.csv  A 117 · B 130 rows · 114 frames compared  00:04")
    qtbot.wait(100)
    one_line = bar.height()
    bar.showMessage(MESSAGE, 10_000)
    qtbot.waitUntil(lambda: bar.height() > one_line, timeout=5_000)
    rect = bar.message_rect()
    assert rect.right() < window.record_label.x(), "the message runs under the labels"
    assert bar.message_lines() >= 2
    flags = int(Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap)
    needed = bar.fontMetrics().boundingRect(QRect(0, 0, rect.width(), 10_000), flags, MESSAGE).height()
    assert needed <= rect.height(), (needed, rect.height())
    bar.clearMessage()
    qtbot.waitUntil(lambda: bar.height() <= one_line, timeout=5_000)  # back to one line

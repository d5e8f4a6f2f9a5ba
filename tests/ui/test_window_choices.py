"""What the window keeps when a choice goes wrong or is switched away from:
a source that never opens gives way to the one that ran; an opened model stays listed; the
smaller remembered bits (recordings folder dialog, platform tooltips)."""

from __future__ import annotations

import shutil
import socket
import sys

import pytest

pytest.importorskip("pytestqt")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


@pytest.mark.timeout(120)
def test_a_source_that_never_opens_gives_way_to_the_one_that_ran(qtbot, make_window, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    from app.pipeline import State

    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    url = f"tcp://127.0.0.1:{_closed_port()}"
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: (url, True))
    combo = window.controls.source
    combo.setCurrentIndex(combo.findData("__open__:stream"))
    combo.activated.emit(combo.currentIndex())  # Source → Network stream…, as a user picks it
    # The stream fails to open; the demo clip comes back and runs, and the user is told.
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=30_000)
    assert "Cannot open this source" in window.last_error and url in window.last_error
    assert "back on demo" in window.last_error
    assert window.live.source == "demo" and combo.currentData() == "demo"
    before = window.live.snapshot().inferences_total
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total > before + 3, timeout=30_000)
    assert window.live.status().state == State.RUNNING and window.video.banner == ""


@pytest.mark.timeout(120)
def test_an_opened_model_stays_listed_after_switching_away(qtbot, make_window, coral, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    model = tmp_path / "mobilenet_v1_0.25_128_quant.tflite"
    shutil.copy(coral / "mobilenet_v1_0.25_128_quant.tflite", model)
    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(model), ""))
    combo = window.controls.model
    combo.setCurrentIndex(combo.findData("__open__"))
    combo.activated.emit(combo.currentIndex())  # Model → Open .tflite…
    qtbot.waitUntil(lambda: str(window.live.config().model) == str(model), timeout=10_000)
    qtbot.waitUntil(lambda: "mobilenet" in window.delegation.text(), timeout=30_000)
    index = combo.findData("efficientnet_lite0_int8")
    combo.setCurrentIndex(index)
    combo.activated.emit(index)  # away to a bundled model…
    qtbot.waitUntil(lambda: "efficientnet_lite0_int8" in window.delegation.text(), timeout=30_000)
    assert combo.findData(str(model)) >= 0, [combo.itemText(i) for i in range(combo.count())]
    combo.setCurrentIndex(combo.findData(str(model)))
    combo.activated.emit(combo.currentIndex())  # …and back, from the list, without a dialog
    qtbot.waitUntil(lambda: str(window.live.config().model) == str(model), timeout=10_000)
    assert window.controls.b_model.findData(str(model)) >= 0  # B can pick it too


def test_recordings_folder_starts_where_recordings_go(qtbot, make_window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    window = make_window()
    folder = tmp_path / "recs"
    folder.mkdir()
    window.saved.recordings_dir = str(folder)
    asked = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: asked.append(a) or "")
    record_menu = next(m.menu() for m in window.menuBar().actions() if m.text() == "&Record")
    action = next(a for a in record_menu.actions() if "Recordings" in a.text())
    action.trigger()
    assert asked and asked[0][2] == str(folder)


@pytest.mark.skipif(sys.platform == "win32", reason="the Windows library name is right there")
def test_delegate_tooltips_name_this_platforms_libraries_only(qtbot, make_window):
    window = make_window()
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=30_000)
    from PySide6.QtCore import Qt

    for combo in (window.controls.delegate, window.controls.b_delegate):
        for row in range(combo.count()):
            tip = combo.itemData(row, Qt.ItemDataRole.ToolTipRole) or ""
            assert ".dll" not in tip, tip

"""Issue 33's window items, each driven through the real window: what a user demoing delegates was
misled by or left guessing about (failures missing from a recording, markers, labels, layout, waiting)."""

from __future__ import annotations

import pytest

from app.recording.writer import read_recording
from tests.helpers.wait import wait_for_results

pytest.importorskip("pytestqt")


def test_a_model_or_source_refused_while_recording_is_an_event_row(qtbot, make_window, tmp_path, monkeypatch):
    """Item 14: the status bar said a model failed to open; the CSV had no trace of it."""
    from PySide6.QtWidgets import QInputDialog

    window = make_window()
    wait_for_results(qtbot, window)
    path = tmp_path / "failures.csv"
    assert window.start_recording(path)
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"TFL3" + bytes(100))
    assert not window.switch_model(str(bad))
    shown = window.last_error
    assert shown and "broken.tflite" in shown
    assert not window.use_b_model(str(tmp_path / "missing.tflite"))  # B's choice, refused the same way
    shown_b = window.last_error
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("ftp://camera.local/live", True))
    combo = window.controls.source
    combo.setCurrentIndex(combo.findData("__open__:stream"))
    combo.activated.emit(combo.currentIndex())  # Source → Network stream…, a URL the window refuses
    assert window.last_error and "ftp" in window.last_error and window.live.source == "demo"
    window.stop_recording()
    failed = [r for r in read_recording(path).rows if r["event"] == "switch_failed"]
    assert [r["message"] for r in failed] == [shown, shown_b, window.last_error]
    assert all(r["source"] == "demo" and r["t_s"] for r in failed)
    # Not recording: the same refusal writes nothing anywhere (and does not fail).
    assert not window.switch_model(str(bad))


def test_a_model_loaded_while_core_ml_falls_back_is_marked_as_a_model_switch(qtbot, make_window):
    """Item 7: the marker read only 'Core ML→CPU fallback' for what was a model switch."""
    window = make_window()
    wait_for_results(qtbot, window)
    window.request_delegate("coreml")  # not macOS: falls back to the CPU
    qtbot.waitUntil(lambda: any(e.kind == "fallback" for e in window.live.events()), timeout=30_000)
    qtbot.waitUntil(lambda: window.plots.marker_texts()[-1] == "Core ML→CPU fallback", timeout=5_000)
    assert window.switch_model("efficientnet_lite0_int8")
    qtbot.waitUntil(lambda: "int8" in window.plots.marker_texts()[-1], timeout=30_000)
    marker = window.plots.marker_texts()[-1]
    assert marker == "model efficientnet_lite0→efficientnet_lite0_int8 · Core ML→CPU fallback", marker

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


def test_the_record_menu_says_where_and_the_status_bar_names_the_whole_file(qtbot, make_window, tmp_path):
    """Item 13: Ctrl+R recorded into a folder nothing had named, and the status bar cut the path short."""
    window = make_window()
    window.resize(1280, 860)
    wait_for_results(qtbot, window)
    folder = tmp_path / "a folder with a long name, as Documents folders on shared machines have" / "Delegate Scope"
    folder.mkdir(parents=True)
    window.saved.recordings_dir = str(folder)
    record_menu = next(m.menu() for m in window.menuBar().actions() if m.text() == "&Record")
    record_menu.aboutToShow.emit()  # what opening the menu does
    into = [a for a in record_menu.actions() if a.text().startswith("Into ")]
    assert len(into) == 1 and into[0].toolTip() == str(folder) and not into[0].isEnabled()
    assert str(folder.name) in into[0].text()
    assert str(folder.name) in window.record_action.toolTip()  # the toolbar's Record button says it too
    # The default, before any folder was chosen, is said the same way (home as ~).
    window.saved.recordings_dir = None
    record_menu.aboutToShow.emit()
    assert into[0].text().endswith("Delegate Scope") and "Documents" in into[0].toolTip()

    window.saved.recordings_dir = str(folder)
    window.record_action.trigger()  # Ctrl+R
    status = window.live.recording_status()
    assert status is not None and status.path.parent == folder
    bar = window.statusBar()
    message = bar.currentMessage()
    # The file's whole name ends the message; the path is elided in the middle to fit beside the labels.
    assert message.startswith("Recording to ") and message.endswith(status.path.name), message
    assert "…" in message and f"/{status.path.name}" in message  # the folder gave way, not the name
    qtbot.waitUntil(lambda: window.record_label.isVisible() and window.status_label.width() > 0, timeout=5_000)
    room = bar.width() - window.record_label.width() - window.status_label.width()
    assert bar.fontMetrics().horizontalAdvance(message) < room, (message, room)
    assert bar.toolTip() == str(status.path) and window.record_label.toolTip() == str(status.path)
    window.record_action.trigger()  # Ctrl+R again: stop
    saved = bar.currentMessage()
    assert saved.startswith("Recording saved: ") and status.path.name in saved and bar.toolTip() == str(status.path)
    bar.showMessage("something else", 1000)
    assert bar.toolTip() == ""  # the path's tooltip went with its message


def test_labels_are_said_in_the_windows_words_and_the_models_own_come_back(qtbot, make_window, tmp_path):
    """Item 8: a labels file read '--labels /path has 10 labels' (the command line's words), and nothing
    went back to the model's own labels."""
    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: "sidecar labels imagenet_labels.txt" in window.delegation.text(), timeout=10_000)
    own = window.controls.labels
    assert own.button.text() == "the model's own" and not own.own.isVisibleTo(window)
    ten = tmp_path / "ten.txt"
    ten.write_text("".join(f"thing {i}\n" for i in range(10)), encoding="utf-8")
    assert window.load_labels(ten)
    message = window.statusBar().currentMessage()
    assert "--labels" not in message and "labels file ten.txt has 10 labels" in message, message
    qtbot.waitUntil(lambda: "ten.txt" in window.delegation.text(), timeout=30_000)
    text = window.delegation.text().replace("\n", " ")
    assert "--labels" not in text and "labels file ten.txt has 10 labels but the model has 1000 outputs" in text
    assert own.button.text() == "ten.txt" and own.button.toolTip() == str(ten) and own.own.isVisibleTo(window)

    own.own.click()  # ↩ model's own
    assert window.live.config().labels is None
    assert window.statusBar().currentMessage() == "Labels: the model's own (sidecar labels imagenet_labels.txt)"
    qtbot.waitUntil(lambda: "ten.txt" not in window.delegation.text(), timeout=30_000)
    assert "sidecar labels imagenet_labels.txt" in window.delegation.text().replace("\n", " ")
    assert own.button.text() == "the model's own" and not own.own.isVisibleTo(window)
    qtbot.waitUntil(lambda: window.live.latest_result().top[0].label not in {f"thing {i}" for i in range(10)})

    # Side B the same way: its labels file, then back to its model's own (no A/B needed to choose them).
    assert window.use_b_model("efficientnet_lite0_int8", ten)
    assert "labels file ten.txt has 10 labels" in window.statusBar().currentMessage()
    assert window.controls.b_side().labels == ten
    window.controls.b_labels_choice.own.click()
    assert window.controls.b_side().labels is None and window.controls.b_labels.text() == "the model's own"

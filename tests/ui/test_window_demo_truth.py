"""What a user demoing delegates could be misled by or left guessing about, each driven through the real
window: failures missing from a recording, markers, labels, layout, waiting."""

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
    assert marker == "Core ML→CPU fallback · model efficientnet_lite0→efficientnet_lite0_int8", marker


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


def _in_view(widget, area) -> bool:
    """The widget is wholly inside the scroll area's viewport, as scrolled now."""
    from PySide6.QtCore import QPoint

    top = widget.mapTo(area.viewport(), QPoint(0, 0)).y()
    return widget.isVisible() and top >= 0 and top + widget.height() <= area.viewport().height()


def _offload_and_rate_in_view(window) -> bool:
    panel, area = window.delegation, window.delegation_dock.widget()
    return bool(panel.offload.text() and panel.bound.text()) and all(
        _in_view(w, area) for w in (panel.offload, panel.bound)
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_offload_and_rate_are_in_view_and_the_layout_can_be_reset(qtbot, make_window):
    """Item 12: at 1280×860 Offload and Rate needed scrolling; a sweep's dock took half the window and
    squeezed the facts; a cramped layout came back at the next start and nothing reset it."""
    from PySide6.QtCore import Qt

    from app.ui.main_window import DOCK_WIDTH
    from app.ui.settings import window_state

    window = make_window()
    window.resize(1280, 860)
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: _offload_and_rate_in_view(window), timeout=30_000)
    controls = window.controls_dock.widget()
    assert controls.verticalScrollBar().maximum() == 0, "the Controls need a vertical scrollbar"
    # Core ML asked for (it falls back here): its prediction and the delegate's row above, Offload and
    # Rate still in view, and the Controls' extra row (Core ML units) too.
    window.request_delegate("coreml")
    qtbot.waitUntil(lambda: "Core ML delegate would take" in window.delegation.text(), timeout=30_000)
    qtbot.waitUntil(lambda: _offload_and_rate_in_view(window), timeout=10_000)
    qtbot.waitUntil(lambda: controls.verticalScrollBar().maximum() == 0, timeout=5_000)
    window.request_delegate("cpu")

    # A sweep's dock goes under the video and plots: the right-hand docks keep their heights.
    heights = (window.delegation_dock.height(), window.controls_dock.height())
    window.sweep.panel.frames.setValue(window.sweep.panel.frames.minimum())
    window.sweep.action.trigger()
    qtbot.waitUntil(lambda: window.sweep.dock.isVisible() and window.sweep.dock.height() > 100, timeout=5_000)
    assert window.sweep.dock.geometry().right() < window.delegation_dock.geometry().left()
    assert (window.delegation_dock.height(), window.controls_dock.height()) == heights
    window.sweep.cancel()
    qtbot.waitUntil(lambda: not window.sweep.running, timeout=60_000)

    # Cramped by hand (the facts dock squeezed, the Controls floated), then closed: the next start brings
    # the cramped layout back, but not the sweep's dock, and View → Reset layout puts it all right.
    window.controls_dock.setFloating(True)
    window.resizeDocks([window.delegation_dock], [120], Qt.Orientation.Vertical)
    window.resizeDocks([window.delegation_dock], [160], Qt.Orientation.Horizontal)  # squeezed to its minimum
    settings = window.qsettings
    window.close()
    again = make_window()
    again.restore_layout(*window_state(settings))
    qtbot.waitUntil(lambda: again.live.snapshot().inferences_total >= 3, timeout=30_000)
    assert again.controls_dock.isFloating() and not again.sweep.dock.isVisible()
    assert again.delegation_dock.width() < DOCK_WIDTH
    view = next(m.menu() for m in again.menuBar().actions() if m.text() == "&View")
    reset = next(a for a in view.actions() if a.text() == "&Reset layout")
    reset.trigger()
    assert not again.controls_dock.isFloating()
    assert again.dockWidgetArea(again.controls_dock) == Qt.DockWidgetArea.RightDockWidgetArea
    qtbot.waitUntil(lambda: _offload_and_rate_in_view(again), timeout=30_000)
    assert again.controls_dock.widget().verticalScrollBar().maximum() == 0
    assert again.delegation_dock.width() == again.controls_dock.width() == DOCK_WIDTH


@pytest.mark.timeout(120)
def test_a_session_that_takes_long_to_open_is_said_and_the_old_facts_greyed(qtbot, make_window, monkeypatch):
    """Item 6: while the TensorFlow reference started (~10 s) the badge read 'CPU (fallback) 0.0 inf/s' and
    the panel showed the previous backend's facts as if current. Here the int8 model's open is held until
    the window has been looked at (a gate, not a sleep): any slow open is shown the same way."""
    import threading

    import app.pipeline.sessions as sessions

    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: "Offload" in window.delegation.text(), timeout=30_000)
    assert not window.delegation.greyed and window.video.banner == ""
    gate, real_open = threading.Event(), sessions.open_session

    def held_open(spec, *args, **kwargs):
        if spec.name == "efficientnet_lite0_int8":
            gate.wait(60)
        return real_open(spec, *args, **kwargs)

    monkeypatch.setattr(sessions, "open_session", held_open)
    try:
        assert window.switch_model("efficientnet_lite0_int8")
        qtbot.waitUntil(lambda: window.delegation.greyed, timeout=10_000)
        starting = "Starting CPU · efficientnet_lite0_int8…"
        assert starting in window.delegation.text() and "previous session's facts" in window.delegation.text()
        old_facts = window.delegation.facts.text().replace("\u200b", "")  # its break opportunities read as nothing
        assert "efficientnet_lite0" in old_facts and "efficientnet_lite0_int8" not in old_facts  # marked as old
        assert window.video.banner.startswith(starting)
        assert window.video.backend_label.startswith("CPU: starting…")
        assert window.video.inference_fps == 0.0  # not the old session's rate
        first = window.delegation.opening.text()
        qtbot.waitUntil(lambda: window.delegation.opening.text() != first, timeout=5_000)  # the time runs
    finally:
        gate.set()
    qtbot.waitUntil(lambda: not window.delegation.greyed, timeout=30_000)
    qtbot.waitUntil(lambda: "efficientnet_lite0_int8" in window.delegation.facts.text().replace("\u200b", ""),
                    timeout=10_000)  # fmt: skip
    assert window.video.banner == "" and "starting" not in window.video.backend_label
    assert "Starting" not in window.delegation.text()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_reviewing_an_a_b_recording_shows_side_b_beside_side_a(qtbot, make_window, tmp_path):
    """Item 11: Review of an A/B recording drew side A only (B's rows are in X-b.csv beside it)."""
    import numpy as np

    window = make_window()
    wait_for_results(qtbot, window)
    qtbot.waitUntil(lambda: window.delegate_statuses is not None, timeout=60_000)  # the probe's thread is done
    window.set_compare(("efficientnet_lite0_int8", "cpu"))
    qtbot.waitUntil(lambda: window.live.comparison().summary.frames >= 3, timeout=60_000)
    path = tmp_path / "ab.csv"
    assert window.start_recording(path)
    qtbot.waitUntil(lambda: window.live.recording_status().compared >= 20, timeout=60_000)
    status = window.stop_recording()
    assert status is not None and status.b_path is not None

    for opened in (path, status.b_path):  # either side's file: A leads, B beside it
        review = window.open_review(opened)
        assert review is not None
        qtbot.addWidget(review)
        assert review.b_path == status.b_path and "ab-b.csv (A/B)" in review.windowTitle()
        rows = review.segment_rows()
        assert [r["side"] for r in rows] == ["A"] * len(review.segments) + ["B"] * len(review.b_segments)
        assert {r["model"] for r in rows if r["side"] == "A"} == {"efficientnet_lite0"}
        assert {r["model"] for r in rows if r["side"] == "B"} == {"efficientnet_lite0_int8"}
        assert "side B (ab-b.csv) beside side A" in review.summary.text()
        # B's figures are drawn, on A's clock: within the span A's rows cover.
        a_t, _ = review.plots.curves["inference_mean"].getData()
        b_t, b_ms = review.plots.curves["b_inference_mean"].getData()
        assert len(b_t) == review.b_inferences >= 20 and np.isfinite(b_ms).all()
        assert a_t[0] - 1.0 <= b_t[0] and b_t[-1] <= a_t[-1] + 1.0, (a_t[[0, -1]], b_t[[0, -1]])
        assert "B inference (each)" in review.legend_names()
        review.close()
    # A recording without B is reviewed as one side: no side column, no B curve.
    window.set_compare(None)
    single = tmp_path / "single.csv"
    assert window.start_recording(single)
    qtbot.waitUntil(lambda: window.live.recording_status().rows >= 5, timeout=30_000)
    window.stop_recording()
    review = window.open_review(single)
    qtbot.addWidget(review)
    assert review.b_path is None and "side" not in review.segment_rows()[0]
    b_t = review.plots.curves["b_inference_mean"].getData()[0]
    assert b_t is None or len(b_t) == 0


def _spin(seconds: float) -> None:
    import time

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.timeout(120)
@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the wait for a core is schedstat's")
def test_the_cpu_backend_on_a_loaded_machine_is_said_to_wait_for_a_core_not_to_offload(qtbot, make_window):
    """Item 2: the CPU backend at 35% of wall on a loaded machine read as work 'off the CPU'. With more busy
    processes than cores the Offload sentence names the inference thread's measured wait for a core."""
    import multiprocessing
    import os
    import re

    window = make_window()
    wait_for_results(qtbot, window)
    spawn = multiprocessing.get_context("spawn")
    spinners = [spawn.Process(target=_spin, args=(40.0,), daemon=True) for _ in range(len(os.sched_getaffinity(0)) + 1)]
    for p in spinners:
        p.start()
    try:
        # The metrics window is 5 s: wait until the loaded inferences fill it and the ratio drops.
        qtbot.waitUntil(lambda: "waited" in window.delegation.offload.text(), timeout=60_000)
        text = window.delegation.offload.text()
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    assert "the CPU backend does all its work on the CPU" in text and "nothing runs elsewhere" in text, text
    assert "off the CPU" not in text
    waited = float(re.search(r"waited ([0-9.]+) ms for a core", text).group(1))  # type: ignore[union-attr]  # asserted just above by the waitUntil's "waited"
    assert waited > 0, text

"""The window on a network camera that goes away and comes back (a real MJPEG stream over TCP)."""

from __future__ import annotations

import pytest

from tests.helpers.mjpeg import MjpegSender

pytestmark = pytest.mark.slow

pytest.importorskip("pytestqt")


@pytest.mark.timeout(120)
def test_the_window_shows_a_lost_camera_and_picks_it_up_again(qtbot, make_window, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    cam = MjpegSender((320, 240))
    back: MjpegSender | None = None
    try:
        window = make_window()
        qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
        # Source → "Network stream…", as a user picks it; the dialog returns the URL.
        monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: (cam.url, True))
        combo = window.controls.source
        combo.setCurrentIndex(combo.findData("__open__:stream"))
        combo.activated.emit(combo.currentIndex())

        # waitUntil takes a None from its callback as a pass: every condition here returns a bool.
        def showing(pipeline, size: tuple[int, int]) -> bool:
            return (r := pipeline.latest_result()) is not None and r.frame_size == size

        qtbot.waitUntil(lambda: showing(window.live, (320, 240)), timeout=30_000)
        pipeline, generation = window.live, window.live.generation
        cam.stop()  # unplugged
        qtbot.waitUntil(lambda: "stopped delivering" in window.statusBar().currentMessage(), timeout=20_000)
        assert pipeline.status().state == "reconnecting"
        back = MjpegSender((640, 480), port=cam.port)
        qtbot.waitUntil(lambda: showing(pipeline, (640, 480)), timeout=30_000)
        assert window.live.generation == generation  # reconnected, not replaced
        qtbot.waitUntil(lambda: "delivers again" in window.statusBar().currentMessage(), timeout=5_000)
        assert window.last_error is None
        # A URL that is not a network stream is refused with one line; the camera keeps running.
        monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("file:///etc/passwd", True))
        combo.setCurrentIndex(combo.findData("__open__:stream"))
        combo.activated.emit(combo.currentIndex())
        assert "not a network stream" in (window.last_error or "")
        assert window.live.source == f"stream:{cam.url}"
    finally:
        for s in (cam, back):
            if s is not None:
                s.stop()

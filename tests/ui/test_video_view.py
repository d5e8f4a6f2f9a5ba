"""The video view's cost (issue 24, item 5): the frame is scaled once per frame and size, by
OpenCV, and drawn unscaled, so repainting the same frame costs a copy, not a rescale; and what it
draws is the frame, scaled with its aspect kept."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")


def test_a_frame_is_scaled_once_per_size_and_drawn_as_it_is(qtbot, make_window):
    from app.sources import Frame

    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.probes.frames_displayed >= 5, timeout=30_000)
    window._display_timer.stop()  # the view now shows only the frame given below
    video = window.video
    image = np.zeros((480, 640, 3), np.uint8)
    image[:, :320] = (255, 0, 0)  # left half blue (BGR), right half red
    image[:, 320:] = (0, 0, 255)
    frame = Frame(index=10**6, image=image, captured_at=time.monotonic(), wall_time=time.time())
    video.set_frame(frame, None)
    before = video.frames_scaled
    for _ in range(5):
        video.repaint()
    assert video.frames_scaled == before + 1  # five paints, one scaling
    rect = video.image_rect().toAlignedRect()
    assert rect.width() > 640  # enlarged: the view is bigger than the frame
    grabbed = video.grab().toImage()
    y = rect.center().y()
    left, right = (
        grabbed.pixelColor(rect.left() + rect.width() // 4, y),
        grabbed.pixelColor(rect.right() - rect.width() // 4, y),
    )
    assert (left.blue(), left.red()) == (255, 0) and (right.red(), right.blue()) == (255, 0)
    window.resize(900, 700)  # a new size is scaled again, once
    qtbot.waitUntil(lambda: video.image_rect().toAlignedRect() != rect, timeout=5_000)
    video.repaint()
    assert video.frames_scaled == before + 2
    video.repaint()
    video.repaint()
    assert video.frames_scaled == before + 2

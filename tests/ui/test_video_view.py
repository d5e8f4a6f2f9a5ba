"""The video view's cost (issue 24, item 5): the frame is converted to the backing store's 32-bit
format once, however often it is painted or the window resized, so Qt scales it on its fast path;
and what it draws is the frame, scaled with its aspect kept."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")


def test_a_frame_is_converted_once_and_drawn_as_it_is(qtbot, make_window):
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
    before = video.frames_converted
    for _ in range(5):
        video.repaint()
    assert video.frames_converted == before + 1  # five paints, one conversion
    rect = video.image_rect().toAlignedRect()
    assert rect.width() > 640  # enlarged: the view is bigger than the frame
    grabbed = video.grab().toImage()
    y = rect.center().y()
    left, right = (
        grabbed.pixelColor(rect.left() + rect.width() // 4, y),
        grabbed.pixelColor(rect.right() - rect.width() // 4, y),
    )
    assert (left.blue(), left.red()) == (255, 0) and (right.red(), right.blue()) == (255, 0)
    window.resize(900, 700)  # another size: scaled by Qt from the same converted frame
    qtbot.waitUntil(lambda: video.image_rect().toAlignedRect() != rect, timeout=5_000)
    video.repaint()
    video.repaint()
    assert video.frames_converted == before + 1

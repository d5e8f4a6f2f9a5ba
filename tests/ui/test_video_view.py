"""The video view's cost: the frame is converted to the backing store's 32-bit
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


def test_only_the_bars_beside_the_frame_are_filled_and_none_is_left_unpainted(qtbot, make_window):
    """The view fills just the bars around the frame (not the whole view under it, 0.5 ms a paint at
    2800x1600): every pixel outside the frame is the background, every pixel of it the frame's, and a
    frame of another shape after it leaves nothing of the first behind."""
    from app.sources import Frame

    window = make_window()
    window.resize(1280, 860)
    qtbot.waitUntil(lambda: window.probes.frames_displayed >= 3, timeout=30_000)
    window._display_timer.stop()
    video = window.video
    for shape in ((480, 640), (640, 360), (200, 1000)):  # wider, taller, much wider than the view
        image = np.full((*shape, 3), (0, 200, 0), np.uint8)
        video.set_frame(Frame(index=10**6 + shape[0], image=image, captured_at=time.monotonic(), wall_time=time.time()),
                        None)  # fmt: skip
        video.repaint()
        grabbed = video.grab().toImage()
        rect = video.image_rect().toAlignedRect()
        outside = [(2, 2), (video.width() - 3, video.height() - 3), (2, video.height() - 3), (video.width() - 3, 2)]
        for x, y in outside:
            if not rect.adjusted(-2, -2, 2, 2).contains(x, y):
                colour = grabbed.pixelColor(x, y)
                assert (colour.red(), colour.green(), colour.blue()) == (20, 20, 20), (shape, x, y)
        inside = grabbed.pixelColor(rect.center().x(), rect.bottom() - 3)
        assert inside.green() == 200 and inside.red() == 0, shape

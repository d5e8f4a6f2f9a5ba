"""What the sources read through OpenCV share (video file, camera, stream): opening with the
first frame decoded, releasing, and the live sources' self-reopening.

Reconnection is owned by the source: after a read raised SourceLost, the next `read()` on
the same object tries to reopen the device. The source reopens itself; the capture thread
decides when to try again (it waits with back-off and calls `read()` again; it never
closes and reopens a source itself).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace

import cv2
import numpy as np

from app.errors import SourceError, SourceLost
from app.model.preprocess import as_bgr_uint8
from app.sources.base import MAX_FPS, _Source
from app.system.native_log import capture_stderr

log = logging.getLogger(__name__)

# OpenCV's own warnings ("Stream timeout triggered...", "can't be used to capture by name")
# would reach the user's terminal beside the one line this module raises for the same event.
cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


def _valid_fps(value: float) -> bool:
    return math.isfinite(value) and 0 < value <= MAX_FPS


def _open_capture(
    make: Callable[[], cv2.VideoCapture], what: str, *, not_opened: str, no_frame: str
) -> tuple[cv2.VideoCapture, np.ndarray]:
    """Open a capture (`make`) and decode its first frame: one that opens but decodes nothing is
    as unusable as one that does not open. OpenCV's and FFmpeg's complaints on fd 2 are logged
    at debug level, not shown. Raises SourceError(not_opened or no_frame)."""
    with capture_stderr() as native:
        cap = make()
        opened = cap.isOpened()
        ok, first = cap.read() if opened else (False, None)
    if native.text:
        log.debug("opening %s: %s", what, native.text.strip())
    if not ok or first is None:
        cap.release()
        raise SourceError(no_frame if opened else not_opened)
    return cap, as_bgr_uint8(first)


class _CaptureSource(_Source):
    """A source read through one cv2.VideoCapture (video file, camera, stream)."""

    _cap: cv2.VideoCapture | None = None  # a class default: VideoSource opens before super().__init__

    def _release(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


class _LiveCapture(_CaptureSource):
    """A camera or stream: paced by the device. A failed read is a loss; the next read tries to
    reopen it (SourceLost again, with the reason, while it stays away). When that next read
    comes is the capture thread's choice (its back-off), not the source's."""

    def __init__(self) -> None:
        super().__init__(None)
        self._lost = False
        self._pending: np.ndarray | None = None  # read while opening; delivered first

    def _open(self) -> np.ndarray:
        """Open the device (setting `_cap`) and return its first frame; SourceError if it cannot."""
        raise NotImplementedError

    def _lost_message(self) -> str:
        raise NotImplementedError

    def _unavailable_message(self, exc: SourceError) -> str:
        return str(exc)

    def _next_image(self) -> np.ndarray | None:
        if self._pending is not None:
            image, self._pending = self._pending, None
            return image
        if self._lost:
            try:
                image = self._open()
            except SourceError as exc:
                raise SourceLost(self._unavailable_message(exc)) from None
            self._lost = False
            self._resized(image)
            return image
        assert self._cap is not None
        ok, image = self._cap.read()
        if ok and image is not None:
            return as_bgr_uint8(image)
        self._release()
        self._lost = True
        raise SourceLost(self._lost_message())

    def _resized(self, image: np.ndarray) -> None:
        """A device that came back at another size: `info` says what it delivers now."""
        height, width = image.shape[:2]
        old = self.info
        if (width, height) == (old.width, old.height):
            return
        self.info = replace(
            old,
            width=width,
            height=height,
            description=old.description.replace(f"{old.width}x{old.height}", f"{width}x{height}", 1),
            warnings=[*old.warnings, f"reconnected at {width}x{height} (was {old.width}x{old.height})"],
        )

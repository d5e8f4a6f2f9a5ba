"""The one-frame hand-over from the capture thread to an inference worker."""

from __future__ import annotations

import threading

from app.sources import Frame


class LatestFrameSlot:
    """One frame deep. `put` overwrites; `take` hands the newest frame to the inference thread once."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest: Frame | None = None
        self._fresh = False
        self._closed = False

    def put(self, frame: Frame) -> bool:
        """Store the frame; True if it overwrote one that inference never took (a dropped frame)."""
        with self._cond:
            dropped = self._fresh
            self._latest, self._fresh = frame, True
            self._cond.notify_all()
            return dropped

    def take(self, timeout: float) -> Frame | None:
        with self._cond:
            if not self._fresh and not self._closed:
                self._cond.wait(timeout)
            if not self._fresh:
                return None
            self._fresh = False
            self._cond.notify_all()  # an on-demand capture thread waits for this
            return self._latest

    def peek(self) -> Frame | None:
        with self._cond:
            return self._latest

    def wait_taken(self, timeout: float) -> bool:
        """Block until the frame in the slot was taken (or the slot closed); False on timeout."""
        with self._cond:
            if self._fresh and not self._closed:
                self._cond.wait(timeout)
            return not self._fresh or self._closed

    def has_fresh(self) -> bool:
        with self._cond:
            return self._fresh

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

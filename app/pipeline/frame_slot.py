"""The one-frame hand-over between pipeline threads: capture (or the preprocessing thread) to an
inference worker, and capture to the preprocessing thread (app/pipeline/preprocess_thread.py)."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")

# What a dropped frame is, in one set of words: bench's "measured" line and the window's status bar.
NOT_INFERRED, OVERWRITTEN = "not inferred", "overwritten in the slot"


class LatestFrameSlot(Generic[T]):
    """One frame deep. `put` overwrites; `take` hands the newest frame to the consuming thread once.

    An on-demand source (an unpaced file, the synthetic source: frames wait for inference,
    never dropped) may keep one more frame behind the newest (`put_behind`, `wait_room`): with
    a single frame, capture began the next read only when inference took the last one, and on
    a fast GPU, while LiteRT's Python wrapper held the GIL through most of a run, the inference
    thread waited for that frame 15% of its time (py-spy, H200 host).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest: T | None = None
        self._fresh = False
        self._behind: T | None = None  # on demand: the frame after `_latest`, already read
        self._closed = False

    def put(self, frame: T) -> bool:
        """Store the frame; True if it overwrote one that inference never took (a dropped frame)."""
        return self.swap(frame) is not None

    def swap(self, frame: T) -> T | None:
        """Store the frame; the one it overwrote before anyone took it (dropped), else None."""
        with self._cond:
            dropped = self._latest if self._fresh else None
            self._latest, self._fresh = frame, True
            self._cond.notify_all()
            return dropped

    def put_behind(self, frame: T) -> None:
        """On demand: queue the frame after the newest one (never overwrites; see `wait_room`)."""
        with self._cond:
            if not self._fresh:
                self._latest, self._fresh = frame, True
            else:
                self._behind = frame
            self._cond.notify_all()

    def take(self, timeout: float) -> T | None:
        with self._cond:
            if not self._fresh and not self._closed:
                self._cond.wait(timeout)
            if not self._fresh:
                return None
            taken = self._latest
            if self._behind is not None:  # on demand: the next one moves up
                self._latest, self._behind = self._behind, None
            else:
                self._fresh = False
            self._cond.notify_all()  # an on-demand capture thread waits for this
            return taken

    def peek(self) -> T | None:
        with self._cond:
            return self._latest

    def wait_room(self, timeout: float) -> bool:
        """On demand: block until a frame may be put behind the newest (or the slot closed)."""
        with self._cond:
            if self._behind is not None and not self._closed:
                self._cond.wait(timeout)
            return self._behind is None or self._closed

    def has_fresh(self) -> bool:
        with self._cond:
            return self._fresh

    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

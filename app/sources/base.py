"""What every frame source shares: the frame and info types, the read/close protocol, pacing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, Self

import numpy as np

MAX_FPS = 1000.0  # no source delivers, or may be asked for, more


@dataclass(frozen=True)
class Frame:
    index: int  # 0, 1, 2, ... per source (restarts never; keeps counting across loops/reconnects)
    image: np.ndarray  # BGR uint8 HxWx3, owned by the frame (never a buffer the source reuses)
    captured_at: float  # time.monotonic() when the frame became available
    wall_time: float  # time.time() at the same moment
    # Frames with the same content_id have identical pixels (a source that hands out the same
    # images again: the synthetic cycle), so their preprocessed tensors can be reused.
    content_id: int | None = None
    # Of the read, the milliseconds spent waiting for the frame to be due at the source's pace (a paced
    # file or synthetic source): waiting, not work, so never counted as the capture thread's busy time.
    paced_ms: float = 0.0


@dataclass(frozen=True)
class SourceInfo:
    spec: str
    kind: str  # "camera" | "video" | "images" | "demo" | "synthetic"
    width: int
    height: int
    fps: float  # delivered (cameras: what the device really gives)
    frame_count: int | None
    description: str
    warnings: list[str] = field(default_factory=list)  # grows while an image slideshow finds bad files


class FrameSource(Protocol):
    info: SourceInfo

    def read(self) -> Frame | None: ...  # blocks until the next frame is due; None = ended

    def close(self) -> None: ...  # idempotent, quick


class _Pacer:
    """Frame k is due at start + k/fps. Scheduling against the start keeps the rate exact over
    hours, where sleeping one period after each frame would drift by the decode time."""

    def __init__(self, fps: float, stop: threading.Event, clock: Callable[[], float] = time.monotonic) -> None:
        self._period = 1.0 / fps
        self._stop, self._clock = stop, clock
        # Behind by more than this (slow decode, a suspended laptop): re-anchor rather than
        # deliver a burst of frames to catch up, as a camera would.
        self._max_lag = max(3 * self._period, 0.1)
        self._start: float | None = None
        self._n = 0

    def wait(self) -> float | None:
        """Block until the next frame is due; the seconds it waited, None when the source was closed meanwhile."""
        now = self._clock()
        if self._start is None:
            self._start, self._n = now, 0
        due = self._start + self._n * self._period
        waited = 0.0
        if due > now:
            if self._stop.wait(due - now):
                return None
            waited = self._clock() - now
        elif now - due > self._max_lag:
            self._start, self._n = now, 0
        self._n += 1
        return None if self._stop.is_set() else waited

    def reset(self) -> None:
        self._start = None


class _Source:
    """read()/close() protocol shared by all sources; subclasses produce images.

    The capture object is only touched under `_lock`. close() never waits for a read that is
    inside native code (a camera read can block for seconds): it sets `_closed`, and whoever
    holds the lock releases the capture on the way out.
    """

    info: SourceInfo

    def __init__(self, pace_fps: float | None) -> None:
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._index = 0
        self._ended = False
        self._pacer = _Pacer(pace_fps, self._closed) if pace_fps else None

    def read(self) -> Frame | None:
        if self._closed.is_set() or self._ended:
            return None
        with self._lock:
            try:
                content_id = self._content_id(self._index)
                image = None if self._closed.is_set() else self._next_image()
            finally:
                if self._closed.is_set():
                    self._release()
        if self._closed.is_set():
            return None
        if image is None:
            self._ended = True
            return None
        paced = self._pacer.wait() if self._pacer is not None else 0.0
        if paced is None:
            return None
        frame = Frame(self._index, image, time.monotonic(), time.time(), content_id, paced * 1e3)
        self._index += 1
        return frame

    def close(self) -> None:
        self._closed.set()
        if self._lock.acquire(blocking=False):
            try:
                self._release()
            finally:
                self._lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_image(self) -> np.ndarray | None:
        """The next image (a fresh array, or a read-only one the source hands out again), None at
        the end; may raise SourceLost."""
        raise NotImplementedError

    def _content_id(self, index: int) -> int | None:
        """Which of the source's repeated images frame `index` is; None: its own pixels."""
        return None

    def _release(self) -> None:
        """Free native resources; called under the lock, possibly more than once."""

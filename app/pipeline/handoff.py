"""Inference thread -> results thread: raw outputs in order, bounded."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import numpy as np

from app.pipeline.active import ActiveSession
from app.pipeline.types import POLL_S
from app.sources import Frame
from app.thread_cpu import InferenceCpu

_MAX_UNPUBLISHED = 8  # raw outputs waiting for the results thread before inference waits for it


@dataclass(frozen=True)
class RawOutput:
    """One inference's output on its way from the inference thread to the results thread."""

    active: ActiveSession
    frame: Frame
    raw: np.ndarray
    started: float  # monotonic, when the inference thread took the frame
    preprocess_ms: float
    inference_ms: float
    cpu: InferenceCpu  # CPU time during the invoke, by thread
    preprocessed_ahead: bool  # False: the inference thread preprocessed it before the invoke
    top_k: int


class Handoff:
    """In order and bounded: a stalled consumer slows inference down rather than growing
    memory or dropping recorded rows."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[RawOutput | None] = queue.SimpleQueue()
        self._room = threading.BoundedSemaphore(_MAX_UNPUBLISHED)
        self._lock = threading.Lock()
        self._unpublished = 0  # put and not yet done: queued or being published

    def put(self, item: RawOutput, stop: threading.Event) -> None:
        while not self._room.acquire(timeout=POLL_S):
            if stop.is_set():
                break  # shutting down: the results thread drains whatever is queued
        with self._lock:
            self._unpublished += 1
        self._queue.put(item)

    def get(self) -> RawOutput | None:
        return self._queue.get()

    def done(self) -> None:
        """One item fully published (or refused)."""
        with self._lock:
            self._unpublished -= 1
        try:
            self._room.release()
        except ValueError:
            pass  # put() gave up waiting for room at shutdown

    def drained(self) -> bool:
        with self._lock:
            return self._unpublished == 0

    def close(self) -> None:
        self._queue.put(None)

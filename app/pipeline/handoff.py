"""Inference thread -> results thread: raw outputs in order, bounded; from a live source, only the newest
waiting one is published (the older ones are dropped and counted), as capture keeps only the newest frame."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import numpy as np

from app.pipeline.active import ActiveSession
from app.pipeline.types import POLL_S
from app.sources import Frame
from app.system.thread_cpu import InferenceCpu

_MAX_UNPUBLISHED = 8  # raw outputs waiting for the results thread before inference waits for it


@dataclass(slots=True)
class RawOutput:
    """One inference's output on its way from the inference thread to the results thread. Not
    frozen: a frozen dataclass sets each field through object.__setattr__, and this is made on the
    inference thread between two runs; nothing changes it after."""

    active: ActiveSession
    frame: Frame
    raw: np.ndarray
    started: float  # monotonic, when the inference thread took the frame
    preprocess_ms: float
    inference_ms: float
    cpu: InferenceCpu  # CPU time during the invoke, by thread
    preprocessed_ahead: bool  # False: the inference thread preprocessed it before the invoke
    top_k: int
    outputs: tuple[np.ndarray, ...] = ()  # a model run through run_all: every output (`raw` is then empty)
    # perf_counter when the invoke began (a queued GPU process's run: when its output came back less the
    # child's run time, on this process's clock), for a trace's slices
    invoked_at: float = 0.0
    queued: bool = False  # run in a child process, queued there (QueuedRunner)


class Handoff:
    """In order and bounded: a stalled consumer slows inference down rather than growing
    memory or dropping recorded rows.

    `put` is on the inference thread's path between two runs, so it takes no lock while there is
    room: two counters, each written by one thread only (puts by the inference thread, dones by
    the results thread), say how many outputs are unpublished. A semaphore here (pure Python: a
    Condition and its lock) was part of the per-frame Python that kept a fast GPU's pipeline below
    its raw loop (docs/pipeline.md, "The GPU path")."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[RawOutput | None] = queue.SimpleQueue()
        self._room = threading.Condition()
        self._puts = 0  # written by the producer alone
        self._dones = 0  # written by the consumer alone, under _room
        # A live source's frames come at the device's pace whatever the pipeline does: when the results
        # thread falls behind, outputs waiting for it only age (end to end grew to 16-22x the inference
        # time behind a slow segmentation decoding), so it takes the newest and drops the rest. An
        # on-demand source (every frame read is inferred) keeps every output: it slows inference down.
        self.keep_newest = False  # set before the first put (capture, once it knows its source)

    def put(self, item: RawOutput, stop: threading.Event) -> None:
        if self._puts - self._dones >= _MAX_UNPUBLISHED:
            with self._room:  # `done` counts and notifies under it: no wake-up is lost
                while self._puts - self._dones >= _MAX_UNPUBLISHED and not stop.is_set():
                    self._room.wait(POLL_S)  # at shutdown: put anyway, the results thread drains it
        self._puts += 1  # before the item is visible: drained() never says yes with one in flight
        self._queue.put(item)

    def get(self) -> tuple[RawOutput | None, int]:
        """The next output to publish (None: closed) and how many older ones it replaced (`keep_newest`:
        those waiting behind the results thread; they count as done, the caller counts them as dropped)."""
        item = self._queue.get()
        if not self.keep_newest or item is None:
            return item, 0
        dropped = 0
        while True:
            try:
                newer = self._queue.get_nowait()
            except queue.Empty:
                break
            if newer is None:  # closed behind it: publish this one, then end
                self._queue.put(None)
                break
            item, dropped = newer, dropped + 1
        if dropped:
            self.done(dropped)
        return item, dropped

    def done(self, n: int = 1) -> None:
        """`n` items fully published, refused or dropped."""
        with self._room:
            self._dones += n
            self._room.notify()

    def drained(self) -> bool:
        return self._puts == self._dones

    def close(self) -> None:
        self._queue.put(None)

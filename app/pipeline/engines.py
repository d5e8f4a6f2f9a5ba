"""How the inference loop runs frames on an open session: the engines behind `InferenceWorker`.

The loop (app/pipeline/worker.py) is the same for every session: take the newest frame at most once per
throttle interval, hand it to the engine, apply changes between frames. What differs is how a frame
reaches the session and its output the results thread:

- `OneAtATime`: run the frame, hand its output on, then take the next (every in-process session).
- `Queued`: a session in a child process that takes `depth` inputs ahead (QueuedRunner, the GPU process):
  the next frame is queued in the child before the last one's output is collected, so the child starts
  each run the moment the last returns, never waiting for this process's GIL.

An engine raises the session's ModelError from `run` or `collect` and forgets what it had in flight; the
worker then falls back (its one policy for a failed run).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np

from app.backends.base import QueuedRunner
from app.errors import ModelError
from app.pipeline.active import ActiveSession
from app.pipeline.handoff import RawOutput
from app.sources import Frame
from app.system.thread_cpu import InferenceCpu

_NO_RAW = np.empty(0, np.float32)  # a model run through run_all hands its outputs on apart

# The frame's input tensor (None when no input takes the frame), what preprocessing it cost (ms) and
# whether it was ready ahead; None for a frame that cannot be one (the worker said so as an event).
Prepared = tuple[np.ndarray | None, float, bool]
Prepare = Callable[[ActiveSession, Frame], Prepared | None]
HandOn = Callable[[RawOutput], None]


class Engine(Protocol):
    queued: bool  # frames go ahead into a child's queue (Queued), or one at a time

    def in_flight(self) -> bool:
        """Frames handed to the session whose outputs are not collected yet."""
        ...

    def run(self, active: ActiveSession, frame: Frame, started: float) -> None:
        """Run (or queue) the frame; its output goes to the results thread, in order."""
        ...

    def collect(self, active: ActiveSession) -> None:
        """The oldest frame in flight's output, handed on (waits for it)."""
        ...

    def drain(self, active: ActiveSession, stopping: bool = False) -> None:
        """Hand on every frame in flight (before a switch, a change of pace, the end). Stopping, a session
        that fails drops what is left: nothing is published any more, nothing is reopened."""
        ...

    def forget(self) -> None:
        """Drop what is in flight: the session failed, no output will come."""
        ...


def queues(active: ActiveSession) -> bool:
    """Whether frames go ahead into the session's queue: a session that is one (two deep or more), its
    frame its only input, nothing pacing the runs, and no input made from the last output (a segmenter fed
    its previous mask: a frame queued ahead would be fed a mask older than the one before it)."""
    session = active.session
    queue = getattr(session, "depth", 0) >= 2 and hasattr(session, "submit")
    ahead = active.feed is None and active.pre is not None and active.mask is None
    return queue and ahead and active.config.throttle_ms == 0


def engine_for(active: ActiveSession, prepare: Prepare, hand_on: HandOn) -> Engine:
    if queues(active):
        return Queued(cast(QueuedRunner, active.session), prepare, hand_on)
    return OneAtATime(prepare, hand_on)


class OneAtATime:
    queued = False

    def __init__(self, prepare: Prepare, hand_on: HandOn) -> None:
        self._prepare, self._hand_on = prepare, hand_on

    def in_flight(self) -> bool:
        return False

    def run(self, active: ActiveSession, frame: Frame, started: float) -> None:
        prepared = self._prepare(active, frame)
        if prepared is None:
            return
        tensor, preprocess_ms, ahead = prepared
        if active.mask is not None and tensor is not None:
            # The last output's mask into a copy of the (maybe cached) tensor, here: ahead, it would be stale.
            masked_from = time.perf_counter()
            tensor = active.mask.fed(tensor)
            preprocess_ms += (time.perf_counter() - masked_from) * 1e3
        outputs: tuple[np.ndarray, ...] = ()
        if active.feed is not None:
            # Picked before the clock starts (not the model's time), by frame: A/B sides get the same inputs.
            inputs = active.feed.inputs(tensor, frame.index)
        active.cpu.start()
        t1 = time.perf_counter()
        if active.feed is not None:
            outputs = tuple(active.session.run_all(inputs))
            raw = _NO_RAW
        else:
            assert tensor is not None
            raw = active.session.run(tensor)
        t2 = time.perf_counter()
        cpu = active.cpu.stop()
        if active.mask is not None and outputs:
            active.mask.remember(outputs)
        # A backend may hand back a view of a buffer it reuses on the next run.
        raw = raw if raw.flags.owndata else raw.copy()
        self._hand_on(
            RawOutput(
                active=active,
                frame=frame,
                raw=raw,
                started=started,
                preprocess_ms=preprocess_ms,  # wherever it ran (capture thread, ahead of time, or here)
                inference_ms=(t2 - t1) * 1e3,
                cpu=cpu,
                preprocessed_ahead=ahead,
                top_k=active.config.top_k,
                outputs=outputs,
                invoked_at=t1,
            )
        )

    def collect(self, active: ActiveSession) -> None:
        return None

    def drain(self, active: ActiveSession, stopping: bool = False) -> None:
        return None

    def forget(self) -> None:
        return None


@dataclass(slots=True)
class _Queued:
    frame: Frame
    started: float
    preprocess_ms: float
    ahead: bool
    top_k: int


class Queued:
    queued = True

    def __init__(self, queue: QueuedRunner, prepare: Prepare, hand_on: HandOn) -> None:
        self._queue, self._prepare, self._hand_on = queue, prepare, hand_on
        self._in_flight: deque[_Queued] = deque()
        self._collected_at = 0  # process CPU ns at the last collect

    def in_flight(self) -> bool:
        return bool(self._in_flight)

    def run(self, active: ActiveSession, frame: Frame, started: float) -> None:
        """Queue the frame's tensor in the session's child; once `depth` are queued, collect the oldest."""
        prepared = self._prepare(active, frame)
        if prepared is None:
            return
        tensor, preprocess_ms, ahead = prepared
        assert tensor is not None  # engine_for: a classifier of one image input
        self._queue.submit(tensor)
        self._in_flight.append(_Queued(frame, started, preprocess_ms, ahead, active.config.top_k))
        if len(self._in_flight) >= self._queue.depth:
            self.collect(active)

    def collect(self, active: ActiveSession) -> None:
        """Its inference time and CPU are the child's own measure of its run: a queued frame's wall time in
        this process includes the run ahead of it. The rest of the process: this process's CPU since the
        last collect, one per frame."""
        queued = self._in_flight.popleft()
        run = self._queue.collect()
        now = time.process_time_ns()
        rest = (now - self._collected_at) / 1e6 if self._collected_at else 0.0
        self._collected_at = now
        cpu = InferenceCpu(run.thread_cpu_ms, max(0.0, run.process_cpu_ms - run.thread_cpu_ms), rest)
        self._hand_on(
            RawOutput(
                active=active,
                frame=queued.frame,
                raw=run.output,
                started=queued.started,
                preprocess_ms=queued.preprocess_ms,
                inference_ms=run.run_ms,
                cpu=cpu,
                preprocessed_ahead=queued.ahead,
                top_k=queued.top_k,
                invoked_at=time.perf_counter() - run.run_ms / 1e3,  # its output came back: the run ended before
                queued=True,
            )
        )

    def drain(self, active: ActiveSession, stopping: bool = False) -> None:
        try:
            while self._in_flight:
                self.collect(active)
        except ModelError:
            self.forget()
            if not stopping:  # the child gone as the pipeline stops: nothing more to publish, nothing to open
                raise
        self._collected_at = 0  # the next queued stretch starts its CPU reading afresh

    def forget(self) -> None:
        self._in_flight.clear()
        self._collected_at = 0

"""A trace the window is taking (`gui --trace`, Record → Trace…): the logs of the pipelines it runs meanwhile,
one after another, and the GUI thread's paints, kept to the last `seconds` while it runs and written as one
Chrome trace when it stops (app/recording/window_trace.py). Qt-free: the controller gives each new pipeline
its log; the window reports its paints and calls `prune` now and then (bounded memory: a ring).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

from app.metrics.resources import ResourceReading
from app.metrics.trace import TraceLog
from app.pipeline import Feed
from app.profile.background import LiveProfile
from app.recording.trace import TraceFacts, threads_of
from app.recording.window_trace import Paint, PipelinePart, ProfileTaken, window_trace, write_window_trace

DEFAULT_SECONDS = 60.0  # the window's ring: the last minute
_PAINTS_MAX = 1_000_000  # a backstop beside the ring's seconds: paints kept at most


class LiveTrace:
    def __init__(self, path: Path, seconds: float | None = DEFAULT_SECONDS) -> None:
        self.path, self.seconds = path, seconds
        self.origin = time.perf_counter()
        self.started_mono = time.monotonic()  # the counters' readings from here on
        self._parts: list[PipelinePart] = []  # the pipelines that ended while traced, oldest first
        self._current: tuple[int, TraceLog] | None = None  # the running pipeline's number and log
        self._paints: deque[Paint] = deque(maxlen=_PAINTS_MAX)
        self.gui_tid: int | None = None  # the thread that paints (the GUI thread), once it has
        self._profiles: deque[ProfileTaken] = deque(maxlen=_PAINTS_MAX)  # the Ops view's, while it profiles
        self._profiled: set[int] = set()  # the LiveProfile.seq of those kept

    def log_for(self, pipeline: int) -> TraceLog:
        """The log of the window's pipeline number `pipeline`, starting now."""
        log = TraceLog(origin=self.origin)
        self._current = (pipeline, log)
        return log

    def pipeline_ended(self, feed: Feed) -> None:
        """The running pipeline (stopped) is being replaced: its part of the trace is kept as it was."""
        if self._current is not None:
            pipeline, log = self._current
            events = tuple((side, e) for side in feed.sides for e in feed.events(side))
            self._parts.append(PipelinePart(pipeline, log, threads_of(feed), events))
            self._current = None

    def painted(self, frame: int, pipeline: int, started: float, results: tuple[int | None, int | None],
                held_back_s: float) -> None:  # fmt: skip
        """The GUI thread painted `frame` from `started` (perf_counter) until now."""
        if self.gui_tid is None:
            self.gui_tid = threading.get_native_id()
        self._paints.append(Paint(started, time.perf_counter(), frame, pipeline, results, held_back_s * 1e3))

    def profiled(self, side: str, entry: LiveProfile) -> None:
        """A profile the Ops view's profiler took (asked again and again: each is kept once; one taken before
        the trace began is not in it)."""
        if entry.profile is None or entry.seq in self._profiled or entry.taken_at < self.started_mono:
            return
        self._profiled.add(entry.seq)
        self._profiles.append(ProfileTaken(side, entry.taken_at + time.perf_counter() - time.monotonic(),
                                           entry.profile))  # fmt: skip

    def horizon(self) -> float | None:
        """perf_counter: what is older leaves the ring (None: the whole trace is kept)."""
        return time.perf_counter() - self.seconds if self.seconds is not None else None

    def prune(self) -> None:
        """Drop what is older than the ring's seconds: the pipelines' records, paints, whole pipelines."""
        horizon = self.horizon()
        if horizon is None:
            return
        if self._current is not None:
            self._current[1].drop_before(horizon)
        for part in self._parts:
            part.log.drop_before(horizon)
        self._parts = [p for p in self._parts if p.log.records]
        paints = self._paints
        while paints and paints[0].started < horizon:
            paints.popleft()
        while self._profiles and self._profiles[0].taken_at < horizon:
            self._profiles.popleft()

    def write(self, feed: Feed | None, readings: list[ResourceReading]) -> TraceFacts:
        """Write the trace (the running pipeline's part from `feed`, stopped) to `path`; what it holds."""
        self.prune()
        if feed is not None:
            self.pipeline_ended(feed)
        trace = window_trace(self._parts, list(self._paints), self.gui_tid, readings, self.origin, self.horizon(),
                             list(self._profiles))  # fmt: skip
        return write_window_trace(self.path, trace)

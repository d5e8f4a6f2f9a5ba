"""A timeline of the live pipeline, collected while it runs: what each frame's stages cost and when.

The pipeline's threads hand `TraceLog` the stamps they already take (a frame's read, its preprocessing,
the inference's start and the invoke's, the publish); one tuple is appended per frame and stage group,
nothing is formatted while the pipeline runs (app/recording/trace.py writes the Chrome trace event JSON
after the run). Off, a pipeline holds None instead of a log: its hooks are one `is not None` test each.

One clock: `time.perf_counter()`, the clock the pipeline's stage timings are read on. Stamps taken on
`time.monotonic()` (a frame's capture time, an inference's start, an event) are moved onto it by the
offset between the two read once, when the log is made (the same clock on Linux: CLOCK_MONOTONIC).

Bounded: a deque of `capacity` records (a record per frame read, one per inference published, one per
drop) keeps the newest; `seconds` (the window's ring) also drops records older than that many seconds
when the trace is written.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Final, cast

# Kinds of record: the first item of each tuple.
CAPTURED: Final = 0  # (CAPTURED, frame, captured_at mono, read_ms, paced_ms, prepare_from perf, prepare_ms, own_thread)
DROPPED: Final = 1  # (DROPPED, frame, at mono, worker index; -1: the preprocessing thread's slot)
PUBLISHED: Final = 2  # see SideTrace.published

Captured = tuple[int, int, float, float, float, float, float, bool]
Dropped = tuple[int, int, float, int]
Published = tuple[int, str, int, float, float, float, float, bool, bool, float, float, float, float, str]
Record = Captured | Dropped | Published

DEFAULT_CAPACITY = 2_000_000  # records: about 10 minutes of three threads at 1,000 frames/s


class TraceLog:
    """The records of one pipeline (one side or A/B: every side's results go to the same log)."""

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY, seconds: float | None = None, origin: float | None = None
    ) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be > 0")
        self.capacity = capacity
        self.seconds = seconds  # a ring of the last `seconds` (None: as many records as `capacity` holds)
        mono, perf = time.monotonic(), time.perf_counter()
        # The trace's time 0, on perf_counter: another log's, for the pipelines a window runs one after another.
        self.origin = perf if origin is None else origin
        self.mono_to_perf = perf - mono  # added to a monotonic stamp: the same moment on perf_counter
        self.records: deque[Record] = deque(maxlen=capacity)
        self.append = self.records.append  # bound once: the hooks' one call

    def perf_of_mono(self, mono: float) -> float:
        return mono + self.mono_to_perf

    def taken_at(self, record: Record) -> float:
        """When a record was taken, on the trace's clock (a publish: when the results thread took the output)."""
        if record[0] == PUBLISHED:
            return cast(Published, record)[9]  # publish_from
        return self.perf_of_mono(cast(Captured | Dropped, record)[2])

    def drop_before(self, perf: float) -> int:
        """Drop the oldest records, taken before `perf` (a ring's horizon, kept while the pipeline runs);
        how many. One caller pops on the left while the pipeline's threads append on the right: deque's
        ends are thread-safe."""
        records, dropped = self.records, 0
        while records and self.taken_at(records[0]) < perf:
            records.popleft()
            dropped += 1
        return dropped

    def for_side(self, side: str) -> SideTrace:
        return SideTrace(self, side)

    def full(self) -> bool:
        """The deque has held `capacity` records: older ones may have been pushed out."""
        return len(self.records) == self.capacity


class SideTrace:
    """What one side's results thread records: each published inference, with that side's name."""

    __slots__ = ("append", "log", "side")

    def __init__(self, log: TraceLog, side: str) -> None:
        self.log, self.side, self.append = log, side, log.append

    def published(
        self,
        frame: int,
        started: float,  # monotonic: the inference thread took the frame
        invoked: float,  # perf_counter: the invoke began (a GPU process's run: estimated, see RawOutput)
        inference_ms: float,
        preprocess_ms: float,
        ahead: bool,  # preprocessed ahead (capture or preprocessing thread), not on the inference thread
        queued: bool,  # run in a child process (the GPU process), queued there
        publish_from: float,  # perf_counter: the results thread took the output
        publish_to: float,  # ... and had published it (metrics, callbacks)
        finished: float,  # monotonic: the result was made (postprocessing ends just before)
        postprocess_ms: float,
        backend: str,
    ) -> None:
        self.append((PUBLISHED, self.side, frame, started, invoked, inference_ms, preprocess_ms, ahead, queued,
                     publish_from, publish_to, finished, postprocess_ms, backend))  # fmt: skip

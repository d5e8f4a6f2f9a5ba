"""The window's recording session: side A's CSV (the bench format), and while an A/B comparison runs,
side B's and the per-frame comparison's beside it (app/recording/ab.py). Qt-free.

The pipeline threads hand it results, events and comparisons; the controller opens it, adds side B,
and closes it. One lock orders them, so a comparison is recorded only for a frame both sides'
recordings hold: a side's result that came before its recording opened (or after it closed) is in
neither file, and its comparison is not either.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.metrics.window import Metrics
from app.pipeline import Event, InferenceConfig, InferenceWorker, Result
from app.pipeline.compare import FrameComparison
from app.recording.ab import ComparisonWriter
from app.recording.rows import RowSink
from app.recording.writer import RecordingWriter


@dataclass(frozen=True)
class RecordingStatus:
    path: Path  # side A's recording (the only one without an A/B comparison)
    rows: int
    lost_rows: int  # all files together
    seconds: float
    error: str | None  # the first file's that failed
    b_path: Path | None = None  # while or after B ran: side B's own recording ...
    b_rows: int = 0
    comparison_path: Path | None = None  # ... and the per-frame comparison
    compared: int = 0  # its rows: frames both sides inferred

    @property
    def both_sides(self) -> bool:
        return self.b_path is not None


class RecordingSession:
    """One recording, from start to stop. `generation` tags which pipeline a result or comparison came
    from: a new pipeline (source or A/B change) numbers its frames from 0 again."""

    def __init__(self, path: Path, sink_a: RowSink) -> None:
        self.path = path
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._sinks: dict[str, RowSink] = {"a": sink_a}
        self._comparisons: ComparisonWriter | None = None
        # The first frame each side's recording holds, by pipeline: every later result of that side in that
        # pipeline is recorded too (a side's results come in frame order), so a frame at or after both is
        # in both files.
        self._first: dict[tuple[int, str], int] = {}
        self._closed = False

    @property
    def sinks(self) -> dict[str, RowSink]:
        return dict(self._sinks)

    def has_side(self, side: str) -> bool:
        return side in self._sinks

    def add_side_b(self, sink: RowSink, comparisons: ComparisonWriter) -> None:
        with self._lock:
            self._sinks = {**self._sinks, "b": sink}
            self._comparisons = comparisons

    # Pipeline threads:

    def on_result(self, generation: int, side: str, result: Result) -> None:
        with self._lock:  # held while the row is queued: close() cannot come between the row and `_first`
            sink = self._sinks.get(side)
            if sink is None or self._closed:
                return
            sink.on_result(result)
            self._first.setdefault((generation, side), result.frame_index)

    def on_event(self, side: str, event: Event) -> None:
        with self._lock:
            sink = self._sinks.get(side)
            if sink is not None and not self._closed:
                sink.on_event(event)

    def on_comparison(self, generation: int, comparison: FrameComparison) -> None:
        with self._lock:
            if self._comparisons is None or self._closed or not self.holds_both(generation, comparison.frame_index):
                return
            self._comparisons.add(comparison)

    def holds_both(self, generation: int, frame_index: int) -> bool:
        """Both sides' recordings hold this frame of that pipeline (call with the lock held)."""
        a, b = self._first.get((generation, "a")), self._first.get((generation, "b"))
        return a is not None and b is not None and frame_index >= max(a, b)

    # The controlling thread:

    def add_row(self, row: dict[str, object], side: str | None = None) -> None:
        """An event row in every side's recording (a source or A/B change concerns both), or in `side`'s
        alone when that side is recorded (side A's otherwise: the one file there is)."""
        with self._lock:
            sinks = self._sinks if side is None else {side: self._sinks.get(side, self._sinks["a"])}
            for sink in sinks.values():
                sink.recorder.add_row(row)

    def status(self) -> RecordingStatus:
        return self._status(time.monotonic() - self.started)

    def close(self, summaries: dict[str, dict[str, object]], agreement: dict[str, object] | None) -> RecordingStatus:
        """No more rows from the pipeline threads; each side's file gets its stop row and its metrics
        `summaries` (by side), side A's the A/B `agreement`, and every file is finished."""
        with self._lock:
            self._closed = True
        seconds = time.monotonic() - self.started
        for side, sink in self._sinks.items():
            sink.recorder.add_row({"event": "stop", "message": "recording stopped"})
            sink.recorder.update_metadata(summary=summaries[side])
        if self._comparisons is not None and agreement is not None:
            self._sinks["a"].recorder.update_metadata(agreement=agreement)
        for sink in self._sinks.values():
            sink.recorder.stop()
        if self._comparisons is not None:
            self._comparisons.recorder.stop()
        return self._status(seconds)

    def _status(self, seconds: float) -> RecordingStatus:
        sinks, comparisons = self._sinks, self._comparisons
        a = sinks["a"].recorder.state
        b = sinks["b"].recorder.state if "b" in sinks else None
        c = comparisons.recorder.state if comparisons is not None else None
        states = [x for x in (a, b, c) if x is not None]
        return RecordingStatus(
            a.path,
            a.rows,
            sum(x.lost_rows for x in states),
            seconds,
            next((x.error for x in states if x.error), None),
            b_path=b.path if b else None,
            b_rows=b.rows if b else 0,
            comparison_path=c.path if c else None,
            compared=c.rows if c else 0,
        )


def new_sink(
    path: Path,
    side: str,
    config: InferenceConfig,
    *,
    source: Callable[[], str],
    worker: Callable[[], InferenceWorker],
    metrics: Metrics,
    comparing: bool,
    open_session: Event | None,
) -> RowSink:
    """A side's recording file, started: its `start` row and, when a session is open already
    (`open_session`, its open/switch event), that session in the sidecar. Raises OSError."""
    settings = {"source": source(), "app": "window"}
    if side == "b" or comparing:
        settings["compare_side"] = side
    # The task columns always, whatever runs now: the window may switch to a model of another task while it
    # records, and a CSV's header cannot grow (a classifier's rows leave them empty; segments split there).
    recorder = RecordingWriter(path, {"settings": settings}, tasks=True)
    # Getters: read when rows come, from whichever pipeline runs then (a source or A/B change replaces it).
    sink = RowSink(recorder, worker, source, metrics)
    what = "side B of the A/B comparison" if side == "b" else "the window"
    recorder.add_row({"event": "start", "message": f"recording {what} ({config.describe()})"})
    if open_session is not None:
        sink.describe_session(open_session, 0.0)
    return sink

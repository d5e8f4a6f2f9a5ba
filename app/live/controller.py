"""The live controller the window talks to: one facade over the running pipeline (or A/B
comparison), its metrics and resource sampler, and an optional recording. Qt-free, so the
window stays a thin view and this is tested headless.

Data flows one way: source -> pipeline -> (metrics, recorder, latest frame/result, events) ->
whoever polls. The window sends commands (switch source, reconfigure, compare, record) and
reads snapshots through the methods below; it never holds the pipeline itself.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from app.backends import DelegationReport
from app.metrics.resources import ResourceSampler
from app.metrics.window import Metrics, MetricsSnapshot
from app.pipeline import Event, Feed, InferenceConfig, Pipeline, Result, State, Status
from app.pipeline.compare import AgreementSummary, ComparePipeline, FrameComparison, SpeedWindow
from app.pipeline.worker import InferenceWorker
from app.recording.ab import ComparisonWriter, b_recording, comparison_recording
from app.recording.rows import RowSink
from app.recording.writer import RecordingWriter
from app.sources import Frame, SourceInfo
from app.system.heap import release_free_memory

STOP_TIMEOUT_S = 5.0

Side = Literal["a", "b"]


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


@dataclass(frozen=True)
class Comparison:
    """The A/B comparison as the window shows it."""

    summary: AgreementSummary
    thumbnails: list[tuple[FrameComparison, np.ndarray]]  # frames the sides disagree on
    speed: SpeedWindow | None = None  # medians over the last frames both sides inferred


class LiveController:
    """Owns the running pipeline; thread-safe for one controlling thread (the GUI thread)."""

    def __init__(
        self, source: str, config: InferenceConfig, *, metrics_window_s: float = 5.0, pace: bool = True
    ) -> None:
        self._pace = pace  # False: files are read as fast as inference takes them (benchmarks)
        self.sampler = ResourceSampler(interval_s=0.5)
        self._metrics = {side: Metrics(window_s=metrics_window_s, sampler=self.sampler) for side in ("a", "b")}
        self._config = config
        self._source = source
        self._feed: Feed | None = None
        self._b_config: InferenceConfig | None = None
        # While recording: a RowSink per side that runs (B's once B runs), and the A/B comparison's writer.
        # Replaced, never mutated, so the pipeline threads that read them see a consistent set.
        self._sinks: dict[str, RowSink] = {}
        self._comparisons: ComparisonWriter | None = None
        # The first frame each side's recording holds: comparisons of earlier frames (a side's result came
        # before its recording opened) are not recorded, so X-compare.csv never names a frame that X.csv
        # or X-b.csv lacks.
        self._first_recorded: dict[str, int] = {}
        self._recording_path: Path | None = None
        self._sink_lock = threading.Lock()
        self._recording_started = 0.0
        self._generation = 0
        self._paused = False

    # ---- commands --------------------------------------------------------------------------

    def start(self) -> None:
        replacing = self._feed is not None
        self._generation += 1
        self._paused = False
        if self._b_config is not None:
            self._feed = ComparePipeline(
                self._source,
                self._config,
                self._b_config,
                pace=self._pace,
                metrics=self._metrics,
                on_result=self._on_result,
                on_event=self._on_event,
                on_comparison=self._on_comparison,
            )
        else:
            self._feed = Pipeline(
                self._source,
                self._config,
                pace=self._pace,
                metrics=self._metrics["a"],
                on_result=lambda r: self._on_result("a", r),
                on_event=lambda e: self._on_event("a", e),
            )
        if replacing:
            # The stopped pipeline's last frames (megabytes each) and sessions sit in reference
            # cycles (callbacks) that only a full collection frees, and in a long-running window
            # those come rarely: without this, A/B on/off grew RSS by ~6 MiB per round
            # (docs/reliability.md). Now unreferenced, so this frees them.
            gc.collect()
            release_free_memory()
        if not self.sampler.running:
            self.sampler.start()
        self._feed.start()

    def set_compare(self, b: InferenceConfig | None) -> bool:
        """Start (B config) or end (None) the A/B comparison: the pipeline restarts on the same source."""
        stopped = self._stop_for_replacement()
        self._b_config = b
        for metrics in self._metrics.values():
            metrics.reset()
        self._record_event("compare", f"A/B comparison with {b.describe()}" if b else "A/B comparison ended")
        if b is not None and self.recording:
            self._record_side_b(b, already_open=False)  # before B's session opens: its open event is recorded
        self.start()
        return stopped

    def switch_source(self, source: str) -> bool:
        """Replace the pipeline with one reading `source` (model and delegate kept).

        The pipeline owns its capture thread, so a new source means a new pipeline; the
        recording, if any, carries on and gets a `source` event row.
        """
        stopped = self._stop_for_replacement()
        self._source = source
        self._metrics["a"].reset()
        self._record_event("source", f"source switched to {source}")
        self.start()
        return stopped

    def set_pace(self, pace: bool) -> bool:
        """Pace files at their frame rate (True) or read them as fast as inference takes them (False,
        a benchmark mode; a camera or stream delivers at its own rate either way): a new pipeline on
        the same source, model and delegate. Returns whether the old one stopped in time."""
        if pace == self._pace:
            return True
        if self._paused:  # applies when it resumes
            self._pace = pace
            return True
        stopped = self._stop_for_replacement()
        self._pace = pace
        self._metrics["a"].reset()
        self._metrics["b"].reset()
        self._record_event("pace", "paced at the source's rate" if pace else "unpaced: as fast as possible")
        self.start()
        return stopped

    def pause(self, reason: str) -> bool:
        """Stop the pipeline (source, configs and recording kept) until `resume()`: a delegate sweep
        needs the CPU to itself. The status says `reason`. Returns whether its threads ended in time."""
        if self._paused:
            return True
        stopped = self._stop_for_replacement()
        self._paused = True
        self._running().workers["a"].log.set_status(Status(State.STOPPED, reason))
        self._record_event("pause", reason)
        return stopped

    def resume(self) -> None:
        """Start again after `pause()`; nothing when not paused (a source switch meanwhile restarted it)."""
        if self._paused:
            feed = self._running()  # stopped; changes asked for meanwhile are its workers' pending configs
            self._config = feed.workers["a"].config
            if "b" in feed.workers:
                self._b_config = feed.workers["b"].config
            self._record_event("resume", "live pipeline resumed")
            self.start()

    def reconfigure(self, **changes: object) -> None:
        """Change side A's model/delegate/options/throttle/top-k, live."""
        self._worker("a").reconfigure(**changes)

    def stop(self) -> tuple[bool, RecordingStatus | None]:
        """Stop everything; returns (threads ended in time, the finished recording if one ran)."""
        recording = self.stop_recording()
        ended = self._feed.stop(STOP_TIMEOUT_S) if self._feed else True
        self.sampler.stop()
        return ended, recording

    # ---- what the view reads -----------------------------------------------------------------

    @property
    def source(self) -> str:
        return self._source

    @property
    def pace(self) -> bool:
        return self._pace

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def comparing(self) -> bool:
        return isinstance(self._feed, ComparePipeline)

    def config(self, side: Side = "a") -> InferenceConfig:
        """What the side runs, or will run once a pending change applies."""
        if side == "b" and not self.comparing:
            raise LookupError("no A/B comparison is running")
        return self._worker(side).config

    def latest_frame(self) -> Frame | None:
        return self._running().latest_frame()

    def inferring(self) -> bool:
        """Some side's inference thread is on a frame now (see InferenceWorker.inferring)."""
        return any(worker.inferring() for worker in self._running().workers.values())

    def latest_result(self, side: Side = "a") -> Result | None:
        return self._worker(side).latest_result() if side == "a" or self.comparing else None

    def report(self, side: Side = "a") -> DelegationReport | None:
        """What really runs on that side: requested and used backend, coverage, fallback."""
        return self._worker(side).delegation_report() if side == "a" or self.comparing else None

    def snapshot(self, side: Side = "a") -> MetricsSnapshot:
        return self._metrics[side].snapshot()

    def status(self) -> Status:
        return self._running().status()

    def source_info(self) -> SourceInfo | None:
        return self._running().source_info()

    def events(self) -> list[Event]:
        """Side A's retained events (the source's included), oldest first."""
        return self._running().events()

    def events_since(self, seq: int) -> list[Event]:
        """Side A's events after `seq`; pass the last one's `seq`. A new pipeline (source
        switch, A/B on/off) numbers from 1 again: pass 0 after `generation` changed."""
        return self._running().events_since(seq)

    @property
    def generation(self) -> int:
        """Counts pipelines started: changes whenever the pipeline is replaced."""
        return self._generation

    def comparison(self) -> Comparison | None:
        feed = self._feed
        if not isinstance(feed, ComparePipeline):
            return None
        return Comparison(feed.comparator.summary(), list(feed.thumbnails), feed.comparator.speed())

    def threads(self) -> list[threading.Thread]:
        return self._feed.threads() if self._feed else []

    # ---- recording -------------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return bool(self._sinks)

    def start_recording(self, path: Path) -> None:
        """Start writing the bench CSV format to `path` (side A); while an A/B comparison runs, side B
        and the per-frame comparison too (app/recording/ab.py). Raises OSError if a file cannot be created."""
        if self._sinks:
            raise RuntimeError("already recording")
        path = Path(path)
        if self.comparing:  # refuse before creating anything: never half a set of files
            for other in (b_recording(path), comparison_recording(path)):
                if other.exists():
                    raise OSError(f"will not overwrite an existing recording: {other}")
        sink = self._new_sink(path, "a", self.config("a"), already_open=True)
        self._recording_path = path
        self._recording_started = time.monotonic()
        with self._sink_lock:
            self._first_recorded = {}
            self._sinks = {"a": sink}
        if self.comparing:
            self._record_side_b(self.config("b"), already_open=True)

    def _new_sink(self, path: Path, side: Side, config: InferenceConfig, *, already_open: bool) -> RowSink:
        settings = {"source": self._source, "app": "window"}
        if side == "b" or self.comparing:
            settings["compare_side"] = side
        recorder = RecordingWriter(path, {"settings": settings})
        # Getters: read when rows come, from whichever pipeline runs then (a source or A/B change replaces it).
        sink = RowSink(recorder, lambda: self._worker(side), lambda: self._source, self._metrics[side])
        what = "side B of the A/B comparison" if side == "b" else "the window"
        recorder.add_row({"event": "start", "message": f"recording {what} ({config.describe()})"})
        if already_open:  # the session already open goes into the sidecar now
            for event in reversed(self._running().workers[side].log.events()):
                if event.model is not None:
                    sink.describe_session(event, 0.0)
                    break
        return sink

    def _record_side_b(self, b: InferenceConfig, *, already_open: bool) -> None:
        """Side B's recording and the comparison's, beside side A's, once B runs while recording."""
        assert self._recording_path is not None
        if "b" in self._sinks:
            return  # B ran before in this recording: its files carry on (a `compare` row marks the gap)
        path = self._recording_path
        sink = None
        try:
            sink = self._new_sink(b_recording(path), "b", b, already_open=already_open)
            comparisons = ComparisonWriter(comparison_recording(path), path, b_recording(path))
        except OSError as exc:  # A's recording carries on and says why B's is missing
            if sink is not None:
                sink.recorder.stop()
            self._sinks["a"].recorder.add_row({"event": "error", "message": f"side B not recorded: {exc}"})
            return
        self._sinks["a"].recorder.update_metadata(
            compare={"b": b_recording(path).name, "comparison": comparison_recording(path).name}
        )
        with self._sink_lock:
            self._first_recorded.pop("b", None)
            self._comparisons = comparisons
            self._sinks = {**self._sinks, "b": sink}

    def recording_status(self) -> RecordingStatus | None:
        sinks, comparisons = self._sinks, self._comparisons
        if not sinks:
            return None
        return _status(sinks, comparisons, time.monotonic() - self._recording_started)

    def stop_recording(self) -> RecordingStatus | None:
        with self._sink_lock:
            sinks, self._sinks = self._sinks, {}
            comparisons, self._comparisons = self._comparisons, None
        if not sinks:
            return None
        seconds = time.monotonic() - self._recording_started
        for side, sink in sinks.items():
            sink.recorder.add_row({"event": "stop", "message": "recording stopped"})
            sink.recorder.update_metadata(summary=self._metrics[side].snapshot().to_dict())
        feed = self._feed
        if comparisons is not None and isinstance(feed, ComparePipeline):
            agreement = feed.comparator.summary(since=self._recording_started).to_dict()
            sinks["a"].recorder.update_metadata(agreement=agreement)
        for sink in sinks.values():
            sink.recorder.stop()
        if comparisons is not None:
            comparisons.recorder.stop()
        return _status(sinks, comparisons, seconds)

    # ---- internals -------------------------------------------------------------------------

    def _running(self) -> Feed:
        if self._feed is None:
            raise RuntimeError("LiveController.start() was not called")
        return self._feed

    def _worker(self, side: Side) -> InferenceWorker:
        return self._running().workers[side]

    def _stop_for_replacement(self) -> bool:
        """Stop the running pipeline, keeping its configs for the next; True when its threads
        ended in time."""
        feed = self._running()
        self._config = feed.workers["a"].config
        if "b" in feed.workers:
            self._b_config = feed.workers["b"].config
        return feed.stop(STOP_TIMEOUT_S)  # start() frees what it held

    # Pipeline callbacks (inference/capture threads):

    def _on_result(self, side: str, result: Result) -> None:
        sink = self._sinks.get(side)
        if sink is not None:
            sink.on_result(result)
            self._first_recorded.setdefault(side, result.frame_index)

    def _on_event(self, side: str, event: Event) -> None:
        sink = self._sinks.get(side)
        if sink is not None:
            sink.on_event(event)

    def _on_comparison(self, comparison: FrameComparison) -> None:
        writer, first = self._comparisons, self._first_recorded
        if writer is not None and comparison.frame_index >= max(first.get("a", -1), first.get("b", -1)) >= 0:
            writer.add(comparison)

    def _record_event(self, kind: str, message: str) -> None:
        for sink in self._sinks.values():  # a source or A/B change concerns both sides' recordings
            sink.recorder.add_row({"event": kind, "message": message, "source": self._source})


def _status(sinks: dict[str, RowSink], comparisons: ComparisonWriter | None, seconds: float) -> RecordingStatus:
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

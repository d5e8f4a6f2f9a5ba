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
from app.compare import AgreementSummary, ComparePipeline, FrameComparison
from app.heap import release_free_memory
from app.metrics import Metrics, MetricsSnapshot, ResourceSampler
from app.pipeline import Event, Feed, InferenceConfig, Pipeline, Result, Status
from app.pipeline.worker import InferenceWorker
from app.recording import RecorderState, RecordingWriter
from app.recording_rows import RowSink
from app.sources import Frame, SourceInfo

STOP_TIMEOUT_S = 5.0

Side = Literal["a", "b"]


@dataclass(frozen=True)
class RecordingStatus:
    path: Path
    rows: int
    lost_rows: int
    seconds: float
    error: str | None


@dataclass(frozen=True)
class Comparison:
    """The A/B comparison as the window shows it."""

    summary: AgreementSummary
    thumbnails: list[tuple[FrameComparison, np.ndarray]]  # frames the sides disagree on


class LiveController:
    """Owns the running pipeline; thread-safe for one controlling thread (the GUI thread)."""

    def __init__(
        self, source: str, config: InferenceConfig, *, metrics_window_s: float = 5.0, pace: bool = True
    ) -> None:
        self._pace = pace  # False: files are read as fast as inference takes them (benchmarks)
        self.sampler = ResourceSampler(interval_s=0.5)
        self._metrics = {
            side: Metrics(window_s=metrics_window_s, sampler=self.sampler) for side in ("a", "b")
        }
        self._config = config
        self._source = source
        self._feed: Feed | None = None
        self._b_config: InferenceConfig | None = None
        self._sink: RowSink | None = None  # set while recording; read by pipeline threads
        self._sink_lock = threading.Lock()
        self._recording_started = 0.0
        self._generation = 0

    # ---- commands --------------------------------------------------------------------------

    def start(self) -> None:
        replacing = self._feed is not None
        self._generation += 1
        if self._b_config is not None:
            self._feed = ComparePipeline(
                self._source,
                self._config,
                self._b_config,
                pace=self._pace,
                metrics=self._metrics,
                on_result=lambda side, r: self._on_result(r) if side == "a" else None,
                on_event=lambda side, e: self._on_event(e) if side == "a" else None,
            )
        else:
            self._feed = Pipeline(
                self._source,
                self._config,
                pace=self._pace,
                metrics=self._metrics["a"],
                on_result=self._on_result,
                on_event=self._on_event,
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
    def comparing(self) -> bool:
        return isinstance(self._feed, ComparePipeline)

    def config(self, side: Side = "a") -> InferenceConfig:
        """What the side runs, or will run once a pending change applies."""
        if side == "b" and not self.comparing:
            raise LookupError("no A/B comparison is running")
        return self._worker(side).config

    def latest_frame(self) -> Frame | None:
        return self._running().latest_frame()

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
        return Comparison(feed.comparator.summary(), list(feed.thumbnails))

    def threads(self) -> list[threading.Thread]:
        return self._feed.threads() if self._feed else []

    # ---- recording -------------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return self._sink is not None

    def start_recording(self, path: Path) -> None:
        """Start writing the bench CSV format to `path`; raises OSError if it cannot be created."""
        if self._sink is not None:
            raise RuntimeError("already recording")
        recorder = RecordingWriter(Path(path), {"settings": {"source": self._source, "app": "window"}})
        sink = RowSink(recorder, lambda: self._worker("a"), lambda: self._source, self._metrics["a"])
        recorder.add_row({"event": "start", "message": f"recording from the window ({self.config().describe()})"})
        for event in reversed(self.events()):  # the session already open goes into the sidecar now
            if event.model is not None:
                sink.describe_session(event, 0.0)
                break
        self._recording_started = time.monotonic()
        with self._sink_lock:
            self._sink = sink

    def recording_status(self) -> RecordingStatus | None:
        sink = self._sink
        if sink is None:
            return None
        return _status(sink.recorder.state, time.monotonic() - self._recording_started)

    def stop_recording(self) -> RecordingStatus | None:
        with self._sink_lock:
            sink, self._sink = self._sink, None
        if sink is None:
            return None
        seconds = time.monotonic() - self._recording_started
        sink.recorder.add_row({"event": "stop", "message": "recording stopped"})
        sink.recorder.update_metadata(summary=self._metrics["a"].snapshot().to_dict())
        return _status(sink.recorder.stop(), seconds)

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

    def _on_result(self, result: Result) -> None:
        sink = self._sink
        if sink is not None:
            sink.on_result(result)

    def _on_event(self, event: Event) -> None:
        sink = self._sink
        if sink is not None:
            sink.on_event(event)

    def _record_event(self, kind: str, message: str) -> None:
        sink = self._sink
        if sink is not None:
            sink.recorder.add_row({"event": kind, "message": message, "source": self._source})


def _status(state: RecorderState, seconds: float) -> RecordingStatus:
    return RecordingStatus(state.path, state.rows, state.lost_rows, seconds, state.error)

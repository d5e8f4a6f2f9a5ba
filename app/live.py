"""The live session a window drives: one pipeline at a time, its metrics and resource sampler,
and an optional recording. Qt-free, so the window stays a thin view and this is tested headless.

Data flows one way: source -> pipeline -> (metrics, recorder, latest frame/result) -> whoever
polls. The window never hands frames back; it only sends commands (switch source, reconfigure,
start/stop recording).
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.bench import RowSink
from app.compare import ComparePipeline
from app.heap import release_free_memory
from app.metrics import Metrics, ResourceSampler
from app.pipeline import Event, InferenceConfig, Pipeline, Result
from app.recording import RecorderState, SessionRecorder

STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RecordingStatus:
    path: Path
    rows: int
    lost_rows: int
    seconds: float
    error: str | None


class LiveSession:
    """Owns the running pipeline; thread-safe for one controlling thread (the GUI thread)."""

    def __init__(
        self, source: str, config: InferenceConfig, *, metrics_window_s: float = 5.0, pace: bool = True
    ) -> None:
        self._pace = pace  # False: files are read as fast as inference takes them (benchmarks)
        self.sampler = ResourceSampler(interval_s=0.5)
        self.metrics = Metrics(window_s=metrics_window_s, sampler=self.sampler)
        self._config = config
        self._source = source
        self._pipeline: Pipeline | None = None
        self.metrics_b = Metrics(window_s=metrics_window_s, sampler=self.sampler)
        self._compare: ComparePipeline | None = None
        self._b_config: InferenceConfig | None = None
        self._sink: RowSink | None = None  # set while recording; read by pipeline threads
        self._sink_lock = threading.Lock()
        self._recording_started = 0.0

    # ---- pipeline --------------------------------------------------------------------------

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            raise RuntimeError("LiveSession.start() was not called")
        return self._pipeline

    @property
    def source(self) -> str:
        return self._source

    @property
    def compare(self) -> ComparePipeline | None:
        """The A/B comparison while it runs (its side A is `pipeline`)."""
        return self._compare

    def start(self) -> None:
        replacing = self._pipeline is not None
        if self._b_config is not None:
            self._compare = ComparePipeline(
                self._source,
                self._config,
                self._b_config,
                pace=self._pace,
                metrics={"a": self.metrics, "b": self.metrics_b},
                on_result=lambda side, r: self._on_result(r) if side == "a" else None,
                on_event=lambda side, e: self._on_event(e) if side == "a" else None,
            )
            self._pipeline = self._compare.leader
        else:
            self._compare = None
            self._pipeline = self._new_pipeline(self._source, self._config)
        if replacing:
            # The stopped pipeline's last frames (megabytes each) and sessions sit in reference
            # cycles (leader <-> follower, callbacks) that only a full collection frees, and in
            # a long-running window those come rarely: without this, A/B on/off grew RSS by
            # ~6 MiB per round (docs/reliability.md). Now unreferenced, so this frees them.
            gc.collect()
            release_free_memory()
        if not self.sampler.running:
            self.sampler.start()
        self._pipeline.start()

    def set_compare(self, b: InferenceConfig | None) -> bool:
        """Start (B config) or end (None) the A/B comparison: the pipeline restarts on the same source."""
        stopped = self._stop_for_replacement()
        self._b_config = b
        self.metrics.reset()
        self.metrics_b.reset()
        self._record_event("compare", f"A/B comparison with {b.describe()}" if b else "A/B comparison ended")
        self.start()
        return stopped

    def reconfigure_b(self, **changes: object) -> None:
        if self._compare is not None:
            self._compare.pipelines["b"].reconfigure(**changes)
            self._b_config = self._compare.pipelines["b"].config

    def switch_source(self, source: str) -> bool:
        """Replace the pipeline with one reading `source` (model and delegate kept).

        The pipeline owns its source thread, so a new source means a new pipeline; the
        recording, if any, carries on and gets a `source` event row.
        """
        stopped = self._stop_for_replacement()
        self._source = source
        self.metrics.reset()
        self._record_event("source", f"source switched to {source}")
        self.start()
        return stopped

    def _stop_for_replacement(self) -> bool:
        """Stop the running pipeline, keeping its config for the next; True when its threads
        ended in time."""
        self._config = self.pipeline.config
        return self.pipeline.stop(STOP_TIMEOUT_S)  # start() frees what it held

    def reconfigure(self, **changes: object) -> None:
        self.pipeline.reconfigure(**changes)

    def stop(self) -> tuple[bool, RecordingStatus | None]:
        """Stop everything; returns (threads ended in time, the finished recording if one ran)."""
        recording = self.stop_recording()
        ended = self._pipeline.stop(STOP_TIMEOUT_S) if self._pipeline else True
        self.sampler.stop()
        return ended, recording

    def threads(self) -> list[threading.Thread]:
        return self._pipeline.threads() if self._pipeline else []

    # ---- recording -------------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return self._sink is not None

    def start_recording(self, path: Path) -> None:
        """Start writing the bench CSV format to `path`; raises OSError if it cannot be created."""
        if self._sink is not None:
            raise RuntimeError("already recording")
        recorder = SessionRecorder(Path(path), {"settings": {"source": self._source, "app": "window"}})
        sink = RowSink(recorder, lambda: self.pipeline, self.metrics)
        recorder.add_row(
            {"event": "start", "message": f"recording from the window ({self.pipeline.config.describe()})"}
        )
        for event in reversed(self.pipeline.events()):  # the session already open goes into the sidecar now
            if event.model is not None:
                sink.models[event.model["id"]] = event.model
                sink.sessions[str(event.session_id)] = event.report.to_dict() if event.report else None
                recorder.update_metadata(models=sink.models, sessions=sink.sessions)
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
        sink.recorder.update_metadata(summary=self.metrics.snapshot().to_dict())
        return _status(sink.recorder.stop(), seconds)

    # ---- pipeline callbacks (inference/capture threads) ------------------------------------

    def _new_pipeline(self, source: str, config: InferenceConfig) -> Pipeline:
        return Pipeline(
            source, config, pace=self._pace, metrics=self.metrics, on_result=self._on_result, on_event=self._on_event
        )

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

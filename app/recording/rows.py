"""Recording rows from a pipeline's results and events (the bench CSV format, docs/csv-format.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.backends.describe import report_backend_words
from app.metrics.window import Metrics, MetricsSnapshot
from app.pipeline import Event, InferenceWorker, Result
from app.recording.task_figures import task_cells
from app.recording.writer import RecordingWriter

_BULKY = ("coverage", "predicted", "coreml_pieces", "native_log")  # DelegationReport fields kept out of `opened`
_SNAPSHOT_EVERY_S = 0.25  # per-row fps/CPU columns come from a snapshot this fresh


@dataclass(frozen=True)
class RowContext:
    """What every row says of the session it came from (the CSV's context columns)."""

    source: str
    backend_requested: str
    backend_used: str
    threads: int | None
    throttle_ms: float

    def to_row(self) -> dict[str, object]:
        return {
            "source": self.source,
            "backend_requested": self.backend_requested,
            "backend_used": self.backend_used,
            "threads": self.threads,
            "throttle_ms": self.throttle_ms,
        }


class RowSink:
    """Turns results and events into recording rows, with fps/CPU from a recent metrics snapshot."""

    def __init__(
        self,
        recorder: RecordingWriter,
        worker: Callable[[], InferenceWorker],
        source: Callable[[], str],
        metrics: Metrics,
    ) -> None:
        # Getters: the window's recording outlives a pipeline replaced by a source switch.
        self.recorder, self._worker, self._source, self.metrics = recorder, worker, source, metrics
        self._snapshot: MetricsSnapshot | None = None
        self.models: dict[str, dict] = {}  # model_id -> name, sha256, path, input (the sidecar resolves ids)
        self.sessions: dict[str, dict | None] = {}  # session id -> delegate facts
        # Every session opened while recording, in order, with its t_s: a session id restarts at 1 in a
        # new pipeline (source or A/B change), so segments (app/recording/segments.py) find theirs here.
        self.opened: list[dict] = []
        self._snapshot_at = 0.0

    def _recent(self) -> MetricsSnapshot:
        now = time.monotonic()
        if self._snapshot is None or now - self._snapshot_at > _SNAPSHOT_EVERY_S:
            self._snapshot, self._snapshot_at = self.metrics.snapshot(), now
        return self._snapshot

    def _context(self) -> RowContext:
        worker = self._worker()
        config, report = worker.config, worker.delegation_report()
        return RowContext(
            source=self._source(),
            backend_requested=report.requested if report else config.delegate,
            backend_used=report.used if report else "",
            threads=(report.options.get("threads") if report else None) or config.options.threads,
            throttle_ms=config.throttle_ms,
        )

    def on_result(self, result: Result) -> None:
        snap, t = self._recent(), result.timing
        top = result.top
        if result.task is not None:  # not a classifier: top-1 empty, the task's own columns instead
            answer = task_cells(result.task)
        else:
            answer = {
                "top1_index": top[0].index,
                "top1_label": top[0].label,
                "top1_score": top[0].score,
                "top_indices": "|".join(str(p.index) for p in top),
                "top_labels": "|".join(p.label for p in top),
                "top_scores": "|".join(f"{p.score:.6g}" for p in top),
            }
        self.recorder.add_row(
            {
                **self._context().to_row(),
                "frame_id": result.frame_index,
                "model": result.model,
                "model_id": result.model_id,
                "backend_used": result.backend,
                "queue_ms": t.queue_ms,
                "preprocess_ms": t.preprocess_ms,
                "inference_ms": t.inference_ms,
                "postprocess_ms": t.postprocess_ms,
                "end_to_end_ms": t.end_to_end_ms,
                "inference_cpu_ms": t.inference_cpu_ms,
                "inference_thread_cpu_ms": t.inference_thread_cpu_ms,
                "runtime_threads_cpu_ms": t.runtime_threads_cpu_ms,
                "rest_of_process_cpu_ms": t.rest_of_process_cpu_ms,
                "capture_fps": snap.capture_fps,
                "inference_fps": snap.inference_fps,
                "process_cpu_pct": snap.process_cpu_pct_machine,
                "system_cpu_pct": snap.system_cpu_pct,
                "rss_mb": snap.rss_mb,
                "gpu_mem_mb": snap.gpu_mem_mb,
                "gpu_util_pct": snap.gpu_util_pct,
                "gpu_sm_clock_mhz": snap.gpu_sm_clock_mhz,
                "gpu_power_w": snap.gpu_power_w,
                "cpu_mhz": snap.cpu_mhz,
                **answer,
            },
            wall_time=time.time(),
            monotonic=t.finished_at,
        )

    def on_event(self, event: Event) -> None:
        row = {**self._context().to_row(), "event": event.kind, "message": event.message}
        if event.report is not None:
            row.update(backend_requested=event.report.requested, backend_used=event.report.used)
        if event.model is not None:
            row.update(model=event.model.name, model_id=event.model.id)
            self.describe_session(event, self.recorder.t_of(event.at))
        self.recorder.add_row(row, wall_time=event.wall_time, monotonic=event.at)

    def describe_session(self, event: Event, t_s: float) -> None:
        """Put the session an open/switch event started into the sidecar (`models`, `sessions`, `opened`)."""
        assert event.model is not None
        facts = None
        if event.report is not None:  # `shown_as` after `used`: the backend as the window's badge says it
            facts = {}
            for key, value in event.report.to_dict().items():
                facts[key] = value
                if key == "used":
                    facts["shown_as"] = report_backend_words(event.report)
            if event.memory is not None:  # what opening the session added to the resident set, MiB
                init = event.memory.init_mb
                facts["init_mb"] = None if init is None else round(init, 1)
        self.models[event.model.id] = event.model.to_dict()
        self.sessions[str(event.session_id)] = facts
        entry = {"t_s": t_s, "event": str(event.kind), "session": event.session_id, "model_id": event.model.id}
        # The node-by-node coverage stays in `sessions` only: a long recording switches many times.
        brief = {k: v for k, v in facts.items() if k not in _BULKY} if facts else None
        self.opened.append({**entry, "changes": event.changes, "delegate": brief})
        self.recorder.update_metadata(models=self.models, sessions=self.sessions, opened=self.opened)

"""The results thread: each inference's raw output postprocessed, published as an immutable `Result`,
counted in the metrics and handed to the callbacks (a recording's RowSink), in order.

It runs behind the inference thread (the hand-off holds what is in flight), so decoding a task's outputs
overlaps the next invoke instead of lengthening the cycle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from app.errors import InternalError, ModelError
from app.metrics.trace import SideTrace
from app.metrics.window import InferenceTiming, Metrics
from app.pipeline.handoff import Handoff, RawOutput
from app.pipeline.run_log import RunLog
from app.pipeline.types import EventKind, Result
from app.sources import Frame, SourceInfo
from app.system.thread_cpu import name_this_thread

_BAD_RESULT_EVERY_S = 1.0
_NO_SCORES = np.empty(0, np.float32)  # a model that is not a classifier has no class scores
_NO_SCORES.setflags(write=False)


def fail_internal(log: RunLog, exc: BaseException, source_info: Callable[[], SourceInfo | None]) -> None:
    """Never die silently: the window and bench read this status."""
    log.fail(f"internal error: {type(exc).__name__}: {exc}", InternalError.exit_code, source_info())


class ResultsStage:
    def __init__(
        self,
        handoff: Handoff,
        *,
        log: RunLog,
        stop: threading.Event,
        metrics: Metrics,
        source_info: Callable[[], SourceInfo | None],
        on_result: Callable[[Result], None] | None,
        trace: SideTrace | None = None,
    ) -> None:
        self._handoff, self._log, self._stop, self._metrics = handoff, log, stop, metrics
        self._source_info, self._on_result = source_info, on_result
        self._trace = trace  # None: no trace, and no per-frame work for one
        self._lock = threading.Lock()
        self._result: Result | None = None
        self._bad_results, self._bad_result_at = 0, -float("inf")
        self.thread = threading.Thread(target=self._loop, name="delegate-scope-results", daemon=True)

    def latest(self) -> Result | None:
        with self._lock:
            return self._result

    def join(self, deadline: float) -> None:
        """After the inference thread ended: publish what is in flight, then end."""
        if self.thread.is_alive():
            self._handoff.close()
            self.thread.join(max(0.0, deadline - time.monotonic()))

    def _loop(self) -> None:
        """Postprocess and publish, in order, until the hand-off is closed."""
        name_this_thread("results")
        while True:
            item, dropped = self._handoff.get()
            if item is None:
                break
            if dropped:  # counted as capture counts frames it overwrote: a figure, not an event per drop
                self._metrics.results_dropped(dropped)
            started = time.perf_counter()
            try:
                result = self._publish(item)
                ended = time.perf_counter()
                self._metrics.result_published((ended - started) * 1e3)
                if self._trace is not None and result is not None:
                    self._traced(item, result, started, ended)
            except Exception as exc:
                fail_internal(self._log, exc, self._source_info)
                self._stop.set()
                raise
            finally:
                self._handoff.done()

    def _publish(self, item: RawOutput) -> Result | None:
        active, frame = item.active, item.frame
        cpu = item.cpu.with_runtime(active.cpu.runtime_per_inference())  # see CpuMeter
        t2 = time.perf_counter()
        height, width = frame.image.shape[:2]
        crop = active.crop_box(width, height)
        task = None
        if active.decoder is not None:
            task = active.decoder.decode(item.outputs, crop, (width, height))
            scores, top = _NO_SCORES, []
        else:
            try:
                scores = active.post.scores(item.raw if not item.outputs else item.outputs[active.primary].reshape(-1))
            except ModelError as exc:  # NaN/Inf out of the model: no result rather than a wrong one
                self._bad_result(frame, exc)
                return None
            top = active.post.top_k(scores, item.top_k)
        t3 = time.perf_counter()
        timing = InferenceTiming(
            frame_index=frame.index,
            captured_at=frame.captured_at,
            started_at=item.started,
            finished_at=time.monotonic(),  # published: end to end includes the hand-off
            preprocess_ms=item.preprocess_ms,
            inference_ms=item.inference_ms,
            postprocess_ms=(t3 - t2) * 1e3,
            inference_cpu_ms=cpu.inference_ms,
            inference_thread_cpu_ms=cpu.inference_thread_ms,
            runtime_threads_cpu_ms=cpu.runtime_threads_ms,
            rest_of_process_cpu_ms=cpu.rest_of_process_ms,
            inference_waited_ms=cpu.waited_ms,
            preprocessed_ahead=item.preprocessed_ahead,
        )
        scores.setflags(write=False)  # scores() returns a fresh array: nothing else holds it
        result = Result(
            frame_index=frame.index,
            captured_at=frame.captured_at,
            wall_time=frame.wall_time,
            top=top,
            scores=scores,
            timing=timing,
            model=active.spec.name,
            model_id=active.spec.sha256[:12],
            backend=active.session.report.used,
            session_id=active.session_id,
            crop=crop,
            frame_size=(width, height),
            task=task,
        )
        with self._lock:
            self._result = result
        self._metrics.inference_done(timing)
        if self._on_result:
            self._on_result(result)
        return result

    def _traced(self, item: RawOutput, result: Result, started: float, ended: float) -> None:
        assert self._trace is not None
        t = result.timing
        self._trace.published(result.frame_index, item.started, item.invoked_at, item.inference_ms, item.preprocess_ms,
                              item.preprocessed_ahead, item.queued, started, ended, t.finished_at, t.postprocess_ms,
                              result.backend)  # fmt: skip

    def _bad_result(self, frame: Frame, exc: ModelError) -> None:
        """One event per second at most: a model that answers NaN to every frame would
        otherwise push every other event out of the history and flood the recording."""
        self._bad_results += 1
        now = time.monotonic()
        if now - self._bad_result_at < _BAD_RESULT_EVERY_S:
            return
        count, self._bad_results, self._bad_result_at = self._bad_results, 0, now
        more = f" ({count} frames without a result since the last report)" if count > 1 else ""
        self._log.emit(EventKind.BAD_RESULT, f"frame {frame.index}: {exc}{more}")

"""An inference worker: the inference thread that owns one backend session, and the results
thread that postprocesses and publishes its outputs.

The inference thread opens, uses, switches and closes the session (GPU delegates require one
thread) and does nothing else per frame: the capture thread prepared the tensor ahead
(`RgbCache.prepare`) and the results thread postprocesses behind (`Handoff`), so both overlap
the next invoke instead of lengthening the cycle. Everyone else reads published, immutable
snapshots (latest result, session report, status, events).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from app.backends import DelegationReport, fell_back, mid_run_reason, open_session
from app.backends.base import QueuedRunner, RunsInAChild
from app.backends.options import CPU_DELEGATES
from app.errors import BackendUnavailable, DelegateScopeError, InternalError, ModelError
from app.metrics.window import InferenceTiming, Metrics
from app.model.feed import FeedFacts
from app.model.preprocess import Preprocessor
from app.model.spec import ModelFacts, ModelSpec, load_model_spec
from app.pipeline.active import ActiveSession
from app.pipeline.frame_slot import LatestFrameSlot
from app.pipeline.handoff import Handoff, RawOutput
from app.pipeline.plan import FeedPlan
from app.pipeline.rgb_cache import RgbCache
from app.pipeline.run_log import RunLog
from app.pipeline.types import POLL_S, Event, EventKind, InferenceConfig, Result, State, Status
from app.sources import Frame, SourceInfo
from app.system import cpu_affinity
from app.system.heap import release_free_memory
from app.system.thread_cpu import InferenceCpu, decoder_threads, name_this_thread, started_by

_BAD_RESULT_EVERY_S = 1.0
_NO_RAW = np.empty(0, np.float32)  # a model run through run_all hands its outputs on apart
_NO_SCORES = np.empty(0, np.float32)  # a model that is not a classifier has no class scores
_NO_SCORES.setflags(write=False)


@dataclass(slots=True)
class _Queued:
    frame: Frame
    started: float
    preprocess_ms: float
    ahead: bool
    top_k: int


def _queue_of(active: ActiveSession) -> QueuedRunner | None:
    """The session as a queue two deep, where it is one and the frame is its only input and nothing
    paces the runs; None: one run at a time (`_infer`)."""
    session = active.session
    if active.feed is not None or active.pre is None or active.config.throttle_ms > 0:
        return None
    if getattr(session, "depth", 0) < 2 or not hasattr(session, "submit"):
        return None
    return cast(QueuedRunner, session)


class InferenceWorker:
    """Takes the newest frame from its slot, at most one inference in flight, at most one
    started per throttle interval (start to start, as the iOS sample does). The one exception: a
    session in a child process that queues (QueuedRunner: `bench --gpu-process`), unthrottled, holds
    two, the next frame waiting in the child while the last runs."""

    def __init__(
        self,
        config: InferenceConfig,
        plan: FeedPlan,  # its pinning part: whether the inference thread gets CPUs of its own, how many
        *,
        log: RunLog,
        stop: threading.Event,
        metrics: Metrics,
        rgb_cache: RgbCache,
        source_info: Callable[[], SourceInfo | None],
        on_result: Callable[[Result], None] | None = None,
    ) -> None:
        self.log = log
        self.metrics = metrics
        self.slot: LatestFrameSlot[Frame] = LatestFrameSlot()
        self._stop = stop  # shared with the capture thread when this worker is the only one
        self._rgb_cache = rgb_cache
        self._source_info = source_info
        self._on_result = on_result
        self._plan = plan
        self._lock = threading.Lock()
        self._config = config
        self._pending: InferenceConfig | None = None
        self._result: Result | None = None
        self._report: DelegationReport | None = None
        self._spec: ModelSpec | None = None  # the model the open session runs (A/B: its class space)
        self._cpu_split: cpu_affinity.CpuSplit | None = None
        self._capture_pre: Preprocessor | None = None
        self._feed: FeedFacts | None = None
        # Nothing in flight. A bool the inference thread alone writes, not an Event: set and cleared
        # around every inference, an Event's lock and notify were part of the per-frame Python that
        # held a fast GPU's pipeline below its raw loop (docs/benchmarks.md, fifth session).
        self._idle = False
        self._handoff = Handoff()
        self._in_flight: deque[_Queued] = deque()  # frames queued in a session's child (QueuedRunner)
        self._collected_at = 0  # process CPU ns at the last collect
        self._bad_results, self._bad_result_at = 0, -float("inf")  # results thread only
        self._session_counter = 0
        self._opening: tuple[InferenceConfig, float] | None = None  # the config being opened, since (monotonic)
        self._inference = threading.Thread(target=self._inference_loop, name="delegate-scope-inference", daemon=True)
        self._results = threading.Thread(target=self._results_loop, name="delegate-scope-results", daemon=True)

    # ---- public, thread-safe -------------------------------------------------------------

    def start(self) -> None:
        self._results.start()
        self._inference.start()

    def request_stop(self) -> None:
        self._stop.set()
        self.slot.close()

    def join_inference(self, deadline: float) -> None:
        if self._inference.is_alive():
            self._inference.join(max(0.0, deadline - time.monotonic()))

    def join_results(self, deadline: float) -> None:
        """After the inference thread ended: publish what is in flight, then end."""
        if self._results.is_alive():
            self._handoff.close()
            self._results.join(max(0.0, deadline - time.monotonic()))

    def reconfigure(self, **changes: object) -> None:
        """Change model/delegate/options/throttle/top_k; applied between inferences."""
        with self._lock:
            base = self._pending or self._config
            self._pending = replace(base, **changes)  # type: ignore[arg-type]  # InferenceConfig's fields; replace() checks names

    @property
    def config(self) -> InferenceConfig:
        with self._lock:
            return self._pending or self._config

    def latest_result(self) -> Result | None:
        with self._lock:
            return self._result

    def delegation_report(self) -> DelegationReport | None:
        with self._lock:
            return self._report

    def model_spec(self) -> ModelSpec | None:
        """The model the open session runs (None before the first open)."""
        with self._lock:
            return self._spec

    def opening(self) -> tuple[InferenceConfig, float] | None:
        """The config the inference thread is opening now and since when (monotonic), None when it is not:
        the window says what it waits for while a slow backend starts (the TensorFlow reference takes
        seconds), until the open or switch event comes."""
        with self._lock:
            return self._opening

    def feed_facts(self) -> FeedFacts | None:
        """Which feeder gives the open session's inputs that are not the frame (None: a classifier's one input)."""
        with self._lock:
            return self._feed

    def status(self) -> Status:
        return self.log.status()

    def events(self) -> list[Event]:
        return self.log.events()

    def cpu_split(self) -> cpu_affinity.CpuSplit | None:
        """The CPUs the inference thread and the other threads are pinned to, if pinned."""
        with self._lock:
            return self._cpu_split

    def capture_preprocessor(self) -> Preprocessor | None:
        """A preprocessor for the model in use, for the capture thread alone (its buffers are
        not shared with the inference thread's)."""
        with self._lock:
            return self._capture_pre

    def inference_done(self) -> bool:
        return not self._inference.is_alive()

    def inferring(self) -> bool:
        """The inference thread is on a frame (preprocessing it, running it, or handing it on), or
        opening its first model. A racy read of one bool: for the window, which puts its own heavy
        work between inferences (app/ui/main_window.py), not for synchronisation."""
        return not self._idle

    def idle(self) -> bool:
        """Nothing in flight: no inference running and every output published."""
        return self._idle and self._handoff.drained()

    @property
    def inference_thread(self) -> threading.Thread:
        return self._inference

    @property
    def results_thread(self) -> threading.Thread:
        return self._results

    def threads(self) -> list[threading.Thread]:
        return [self._inference, self._results]

    # ---- inference thread -----------------------------------------------------------------

    def _open(self, config: InferenceConfig, spec: ModelSpec | None = None) -> ActiveSession:
        """Open `config`; with `spec`, from the model already in memory (its file may be gone)."""
        spec = spec or load_model_spec(config.model, labels_file=config.labels, options=config.model_options)
        self._pin(config)  # before the session exists: its runtime's worker threads inherit the CPUs
        session, started = started_by(
            lambda: open_session(spec, config.delegate, config.options, fallback=config.fallback)
        )
        if (session.report.used != config.delegate or session.report.software) and self.cpu_split() is not None:
            # Pinned for an accelerator, but the CPU does the work (a fallback, or a software
            # renderer's threads, which inherited the inference thread's one CPU: SwiftShader
            # ran the float32 model at half its speed so): run unpinned rather than slower.
            cpu_affinity.release(self)
            with self._lock:
                self._cpu_split = None
        cpu_affinity.session_opened(self)  # its runtime's workers stay on the inference CPUs
        if isinstance(session, RunsInAChild) and self.cpu_split() is not None:
            split = cpu_affinity.step_aside(self, threading.get_native_id())  # the child keeps the inference CPUs
            with self._lock:
                self._cpu_split = split
        self._session_counter += 1
        # Threads of this process that appeared meanwhile but are not the runtime's: the other
        # pipeline threads (known), and the capture thread's are started before this opens.
        runtime = started - {t.native_id for t in threading.enumerate() if t.native_id is not None}
        runtime -= decoder_threads(runtime)  # a video source opened meanwhile: its decoders
        return ActiveSession(config, spec, session, self._session_counter, runtime)

    def _pin(self, config: InferenceConfig) -> None:
        """Reserve CPUs for `config`'s thread count, or unpin if it cannot."""
        if not self._plan.pin_cpus:
            return
        try:
            threads = config.options.cpu_threads
        except (TypeError, ValueError):
            threads = 0  # not pinned; open_session reports the bad option
        cpus = self._plan.inference_cpus or cpu_affinity.inference_cpus(config.delegate in CPU_DELEGATES, threads)
        split = cpu_affinity.split_for(cpus)
        if split is None or not cpu_affinity.apply(self, split, threading.get_native_id()):
            cpu_affinity.release(self)
            split = None
        with self._lock:
            self._cpu_split = split

    def _publish_open(
        self, active: ActiveSession, kind: EventKind, close_ms: float | None, changes: str | None = None
    ) -> None:
        report = active.session.report
        with self._lock:
            self._capture_pre = active.pre
            self._spec = active.spec
            self._report = report
            self._feed = active.feed.facts if active.feed is not None else None
        message = f"{active.spec.name} on {report.used}"
        if changes:  # a recording and the plots must say what changed, not only what runs now
            message = f"{changes}: {message}"
        if report.fallback_reason:
            message += f" (requested {report.requested}; fell back: {report.fallback_reason})"
        model = ModelFacts.of(active.spec)
        self.log.emit(
            kind,
            message,
            model=model,
            session_id=active.session_id,
            report=report,
            close_ms=close_ms,
            changes=changes or None,
            open_ms=report.init_ms,
            first_inference_ms=report.first_inference_ms,
        )
        if report.fallback_reason:
            self.log.emit(EventKind.FALLBACK, report.fallback_reason, session_id=active.session_id, report=report)

    def _switch(self, active: ActiveSession | None, config: InferenceConfig) -> ActiveSession | None:
        """Close the old session and open the new one; on failure keep (or reopen) the old."""
        if active is not None and active.config.same_session(config):
            active.config = config  # throttle or top-k only: no reopen
            return active
        with self._lock:
            self._opening = (config, time.monotonic())
        try:
            return self._reopen(active, config)
        finally:  # after the open or switch event: the window reads that event, then sees this cleared
            with self._lock:
                self._opening = None

    def _reopen(self, active: ActiveSession | None, config: InferenceConfig) -> ActiveSession | None:
        close_ms = None
        spec = None
        if active is not None:
            try:  # read and checked once, here: a bad model must not cost the running one
                spec = load_model_spec(config.model, labels_file=config.labels, options=config.model_options)
            except ModelError as exc:
                self._still_running(active, config)
                self.log.emit(EventKind.SWITCH_FAILED, f"could not switch to {config.describe()}: {exc}")
                return active
            started = time.perf_counter()
            active.close()
            close_ms = (time.perf_counter() - started) * 1e3
            release_free_memory()  # the old session's buffers: see app/system/heap.py
        try:
            new = self._open(config, spec)
        except DelegateScopeError as exc:
            if active is not None:
                self._still_running(active, config)
            self.log.emit(EventKind.SWITCH_FAILED, f"could not open {config.describe()}: {exc}")
            if active is None:
                self.log.set_status(Status(State.ERROR, str(exc), self._source_info(), exc.exit_code))
                return None
            # From memory: the running model's file may have been moved or deleted since.
            return self._open(active.config, active.spec)
        changes = config.changes_from(active.config) if active is not None else None
        self._publish_open(new, EventKind.OPEN if active is None else EventKind.SWITCH, close_ms, changes)
        return new

    def _still_running(self, active: ActiveSession, refused: InferenceConfig) -> None:
        """After a refused switch, `config` names what runs again, not what was refused."""
        with self._lock:
            if self._config is refused:
                self._config = active.config

    def _inference_loop(self) -> None:
        name_this_thread("inference")  # the threads its runtime starts inherit it (thread_cpu.started_by)
        try:
            self._run_inference()
        except DelegateScopeError as exc:
            self.log.fail(str(exc), exc.exit_code, self._source_info())
        except Exception as exc:
            self._internal_error(exc)
            raise
        finally:
            self._idle = True

    def _internal_error(self, exc: Exception) -> None:
        """Never die silently: the UI and bench read this status."""
        self.log.fail(f"internal error: {type(exc).__name__}: {exc}", InternalError.exit_code, self._source_info())

    def _run_inference(self) -> None:
        with self._lock:
            config = self._config
        active = self._switch(None, config)
        last_start = -float("inf")
        try:
            while not self._stop.is_set() and active is not None:
                pending = None
                if self._pending is not None:  # unlocked peek: the lock is taken only for a change
                    with self._lock:
                        pending, self._pending = self._pending, None
                        if pending is not None:
                            self._config = pending
                if pending is not None:
                    active = self._switch(self._drain(active), pending)
                    if active is None:
                        return
                wait = last_start + active.config.throttle_ms / 1e3 - time.monotonic()
                if wait > 0 and self._stop.wait(min(wait, POLL_S)):
                    return
                if wait > POLL_S:
                    continue
                queue = _queue_of(active)
                if queue is None and self._in_flight:  # e.g. a throttle set meanwhile: one at a time again
                    active = self._drain(active)
                    continue
                if self._in_flight:
                    frame = self.slot.take(0.0)  # never wait for a frame while the child runs: collect
                    if frame is None:
                        active = self._collect(active)
                        continue
                else:
                    self._idle = True
                    frame = self.slot.take(POLL_S)
                    if frame is None:
                        continue
                self._idle = False
                last_start = time.monotonic()
                if queue is None:
                    active = self._infer(active, frame, last_start)
                    self._idle = True
                    continue
                active = self._submit(active, queue, frame, last_start)
                if len(self._in_flight) >= queue.depth:
                    active = self._collect(active)
        finally:
            if active is not None:
                self._drain(active, stopping=True)
                active.close()
            cpu_affinity.release(self)

    def _tensor(self, active: ActiveSession, frame: Frame) -> tuple[np.ndarray | None, float, bool] | None:
        """The frame's input tensor, what preprocessing it cost (ms) and whether it was ready ahead; None
        (said as an event) for a frame that cannot be one. No input takes the frame: None as the tensor."""
        try:
            if active.pre is not None:
                tensor, preprocess_ms, ahead = self._rgb_cache.tensor(frame, active.pre)
            else:  # no input takes the frame: the feeder gives every input; the frame paces the run
                tensor, preprocess_ms, ahead = None, 0.0, False
        except ValueError as exc:  # a frame of the wrong dtype/shape mid-stream: skip it, say so
            self.log.emit(EventKind.BAD_FRAME, f"frame {frame.index} skipped: {exc}")
            return None
        if not ahead and self._cpu_split is not None:
            # Preprocessing here may have started OpenCV's worker pool on this thread's CPUs.
            cpu_affinity.place_newcomers(self)
        return tensor, preprocess_ms, ahead

    def _infer(self, active: ActiveSession, frame: Frame, started: float) -> ActiveSession:
        prepared = self._tensor(active, frame)
        if prepared is None:
            return active
        tensor, preprocess_ms, ahead = prepared
        outputs: tuple[np.ndarray, ...] = ()
        if active.feed is not None:
            # Picked before the clock starts (not the model's time), by frame: A/B sides get the same inputs.
            inputs = active.feed.inputs(tensor, frame.index)
        active.cpu.start()
        t1 = time.perf_counter()
        try:
            if active.feed is not None:
                outputs = tuple(active.session.run_all(inputs))
                raw = _NO_RAW
            else:
                assert tensor is not None
                raw = active.session.run(tensor)
        except ModelError as exc:
            return self._fail_over(active, exc)
        t2 = time.perf_counter()
        cpu = active.cpu.stop()
        # A backend may hand back a view of a buffer it reuses on the next run.
        raw = raw if raw.flags.owndata else raw.copy()
        item = RawOutput(
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
        )
        self._handoff.put(item, self._stop)
        return active

    def _submit(self, active: ActiveSession, queue: QueuedRunner, frame: Frame, started: float) -> ActiveSession:
        """Queue the frame's tensor in the session's child; `_collect` publishes it, in order."""
        prepared = self._tensor(active, frame)
        if prepared is None:
            return active
        tensor, preprocess_ms, ahead = prepared
        assert tensor is not None  # _queue_of: a classifier of one image input
        try:
            queue.submit(tensor)
        except ModelError as exc:
            return self._fail_over(active, exc)
        self._in_flight.append(_Queued(frame, started, preprocess_ms, ahead, active.config.top_k))
        return active

    def _collect(self, active: ActiveSession, stopping: bool = False) -> ActiveSession:
        """The oldest queued frame's output, handed to the results thread. Its inference time and CPU are
        the child's own measure of its run: a queued frame's wall time in the parent includes the run
        ahead of it. The rest of the process: this process's CPU since the last collect, one per frame."""
        queue = cast(QueuedRunner, active.session)  # it queued them, whatever paces it now
        queued = self._in_flight.popleft()
        try:
            run = queue.collect()
        except ModelError as exc:
            if stopping:  # the child gone as the pipeline stops: nothing more to publish, nothing to open
                self._in_flight.clear()
                return active
            return self._fail_over(active, exc)
        now = time.process_time_ns()
        rest = (now - self._collected_at) / 1e6 if self._collected_at else 0.0
        self._collected_at = now
        cpu = InferenceCpu(run.thread_cpu_ms, max(0.0, run.process_cpu_ms - run.thread_cpu_ms), rest)
        item = RawOutput(
            active=active,
            frame=queued.frame,
            raw=run.output,
            started=queued.started,
            preprocess_ms=queued.preprocess_ms,
            inference_ms=run.run_ms,
            cpu=cpu,
            preprocessed_ahead=queued.ahead,
            top_k=queued.top_k,
        )
        self._handoff.put(item, self._stop)
        if not self._in_flight:
            self._idle = True
        return active

    def _drain(self, active: ActiveSession, stopping: bool = False) -> ActiveSession:
        """Collect and publish every queued frame (before a switch, a change of pace, or the end)."""
        while self._in_flight:
            active = self._collect(active, stopping)
        self._collected_at = 0  # the next queued stretch starts its CPU reading afresh
        return active

    def _fail_over(self, active: ActiveSession, exc: ModelError) -> ActiveSession:
        """A backend that fails mid-run falls back to CPU, visibly."""
        self._in_flight.clear()  # the frames queued in a child that failed: no output will come
        self._collected_at = 0
        used = active.session.report.used
        active.close()
        if used == "cpu" or not active.config.fallback:
            # Recorded too: the recording must say why it ends here. An accelerator that stopped working
            # with fallback off is the --no-fallback case (exit 5), not a problem of the model.
            code = exc.exit_code if used == "cpu" else BackendUnavailable.exit_code
            self.log.fail(f"inference failed on {used}: {exc}", code, self._source_info())
            self._stop.set()
            return active
        config = replace(active.config, delegate="cpu")
        new = self._open(config, active.spec)  # the same model, already in memory
        reason = mid_run_reason(used, exc)  # said as the fallback event, not also among the report's warnings
        new.session.report = fell_back(new.session.report, active.config.delegate, reason, warn=False)
        self._publish_open(new, EventKind.SWITCH, None)
        return new

    # ---- results thread -------------------------------------------------------------------

    def _results_loop(self) -> None:
        """Postprocess and publish, in order, until the hand-off is closed."""
        name_this_thread("results")
        while (item := self._handoff.get()) is not None:
            started = time.perf_counter()
            try:
                self._publish(item)
                self.metrics.result_published((time.perf_counter() - started) * 1e3)
            except Exception as exc:
                self._internal_error(exc)
                self._stop.set()
                raise
            finally:
                self._handoff.done()

    def _publish(self, item: RawOutput) -> None:
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
                return
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
        self.metrics.inference_done(timing)
        if self._on_result:
            self._on_result(result)

    def _bad_result(self, frame: Frame, exc: ModelError) -> None:
        """One event per second at most: a model that answers NaN to every frame would
        otherwise push every other event out of the history and flood the recording."""
        self._bad_results += 1
        now = time.monotonic()
        if now - self._bad_result_at < _BAD_RESULT_EVERY_S:
            return
        count, self._bad_results, self._bad_result_at = self._bad_results, 0, now
        more = f" ({count} frames without a result since the last report)" if count > 1 else ""
        self.log.emit(EventKind.BAD_RESULT, f"frame {frame.index}: {exc}{more}")

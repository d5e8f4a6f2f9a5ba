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
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from app.backends import DelegationReport
from app.errors import DelegateScopeError, ModelError
from app.metrics.trace import SideTrace
from app.metrics.window import Metrics
from app.model.spec import ModelSpec
from app.pipeline.active import ActiveSession
from app.pipeline.engines import Engine, engine_for, queues
from app.pipeline.frame_slot import LatestFrameSlot
from app.pipeline.handoff import Handoff
from app.pipeline.pinning import Pinning
from app.pipeline.plan import FeedPlan
from app.pipeline.results import ResultsStage, fail_internal
from app.pipeline.rgb_cache import RgbCache
from app.pipeline.run_log import RunLog
from app.pipeline.sessions import Opened, SessionKeeper
from app.pipeline.types import POLL_S, EventKind, InferenceConfig, Result, Status
from app.sources import Frame, SourceInfo
from app.system import cpu_affinity
from app.system.thread_cpu import name_this_thread


class InferenceWorker:
    """Takes the newest frame from its slot, at most one inference in flight, at most one
    started per throttle interval (start to start, as the iOS sample does). The one exception: a
    session in a child process that queues (QueuedRunner: `bench --gpu-process`), unthrottled, holds
    two, the next frame waiting in the child while the last runs (app/pipeline/engines.py)."""

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
        trace: SideTrace | None = None,  # a timeline's records of this side's inferences (None: none)
    ) -> None:
        self.log = log
        self.metrics = metrics
        self.slot: LatestFrameSlot[Frame] = LatestFrameSlot()
        self._stop = stop  # shared with the capture thread when this worker is the only one
        self._rgb_cache = rgb_cache
        self._source_info = source_info
        self._pinning = Pinning(plan)  # the inference thread's CPUs: one sequence around each session
        self._lock = threading.Lock()
        self._config = config
        self._pending: InferenceConfig | None = None
        # Nothing in flight. A bool the inference thread alone writes, not an Event: set and cleared
        # around every inference, an Event's lock and notify were part of the per-frame Python that
        # held a fast GPU's pipeline below its raw loop.
        self._idle = False
        self._handoff = Handoff()
        self._hand_on = partial(self._handoff.put, stop=stop)  # an output to the results thread, in order
        self._sessions = SessionKeeper(log=log, stop=stop, pinning=self._pinning, source_info=source_info,
                                       refused=self._still_running)  # fmt: skip
        self._results = ResultsStage(self._handoff, log=log, stop=stop, metrics=metrics, source_info=source_info,
                                     on_result=on_result, trace=trace)  # fmt: skip
        self.inference_thread = threading.Thread(target=self._inference_loop, name="delegate-scope-inference",
                                                 daemon=True)  # fmt: skip
        self.results_thread = self._results.thread

    # ---- public, thread-safe -------------------------------------------------------------

    def start(self) -> None:
        self.results_thread.start()
        self.inference_thread.start()

    def keep_newest_results(self, on: bool) -> None:
        """Before the first frame: publish only the newest output waiting for the results thread (a live
        source), or every one (on demand). See Handoff."""
        self._handoff.keep_newest = on

    def request_stop(self) -> None:
        self._stop.set()
        self.slot.close()

    def join_inference(self, deadline: float) -> None:
        if self.inference_thread.is_alive():
            self.inference_thread.join(max(0.0, deadline - time.monotonic()))

    def join_results(self, deadline: float) -> None:
        """After the inference thread ended: publish what is in flight, then end."""
        self._results.join(deadline)

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
        return self._results.latest()

    def opened(self) -> Opened | None:
        """The open session: its report, model, capture-side preprocessor and feeder (None before the first)."""
        return self._sessions.opened()

    def wait_first_open(self, timeout: float) -> bool:
        """Wait until the first open is over (opened or failed); False if `timeout` passed first."""
        return self._sessions.first_open_over.wait(timeout)

    def delegation_report(self) -> DelegationReport | None:
        opened = self._sessions.opened()
        return opened.report if opened else None

    def model_spec(self) -> ModelSpec | None:
        """The model the open session runs (None before the first open)."""
        opened = self._sessions.opened()
        return opened.spec if opened else None

    def opening(self) -> tuple[InferenceConfig, float] | None:
        """The config the inference thread is opening now and since when (monotonic), None when it is not:
        the window says what it waits for while a slow backend starts (the TensorFlow reference takes
        seconds), until the open or switch event comes."""
        return self._sessions.opening()

    def status(self) -> Status:
        return self.log.status()

    def cpu_split(self) -> cpu_affinity.CpuSplit | None:
        """The CPUs the inference thread and the other threads are pinned to, if pinned."""
        return self._pinning.split

    def inference_done(self) -> bool:
        return not self.inference_thread.is_alive()

    def inferring(self) -> bool:
        """The inference thread is on a frame (preprocessing it, running it, or handing it on), or
        opening its first model. A racy read of one bool: for the window, which puts its own heavy
        work between inferences (app/ui/main_window.py), not for synchronisation."""
        return not self._idle

    def idle(self) -> bool:
        """Nothing in flight: no inference running and every output published."""
        return self._idle and self._handoff.drained()

    def threads(self) -> list[threading.Thread]:
        return [self.inference_thread, self.results_thread]

    # ---- inference thread -----------------------------------------------------------------

    def _still_running(self, running: InferenceConfig, refused: InferenceConfig) -> None:
        """After a refused switch, `config` names what runs again, not what was refused."""
        with self._lock:
            if self._config is refused:
                self._config = running

    def _inference_loop(self) -> None:
        name_this_thread("inference")  # the threads its runtime starts inherit it (thread_cpu.started_by)
        try:
            self._run_inference()
        except DelegateScopeError as exc:
            self.log.fail(str(exc), exc.exit_code, self._source_info())
        except Exception as exc:
            fail_internal(self.log, exc, self._source_info)
            raise
        finally:
            self._idle = True

    def _run_inference(self) -> None:
        with self._lock:
            config = self._config
        active = self._sessions.switch(None, config)
        engine: Engine | None = None  # how frames reach the session: made for each session and pace
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
                    active, engine = self._sessions.switch(self._drained(active, engine), pending), None
                    if active is None:
                        return
                wait = last_start + active.config.throttle_ms / 1e3 - time.monotonic()
                if wait > 0 and self._stop.wait(min(wait, POLL_S)):
                    return
                if wait > POLL_S:
                    continue
                if engine is None or engine.queued != queues(active):  # e.g. a throttle set: one at a time again
                    active = self._drained(active, engine)
                    engine = engine_for(active, self._tensor, self._hand_on)
                try:
                    if engine.in_flight():
                        frame = self.slot.take(0.0)  # never wait for a frame while the child runs: collect
                        if frame is None:
                            engine.collect(active)
                            self._idle = not engine.in_flight()
                            continue
                    else:
                        self._idle = True
                        frame = self.slot.take(POLL_S)
                        if frame is None:
                            continue
                    self._idle = False
                    last_start = time.monotonic()
                    engine.run(active, frame, last_start)
                except ModelError as exc:  # the session failed mid-run: a fallback, and an engine for it
                    engine.forget()  # the frames in flight in a session that failed: no output will come
                    active, engine = self._sessions.fail_over(active, exc), None
                if engine is None or not engine.in_flight():
                    self._idle = True
        finally:
            if active is not None:
                if engine is not None:
                    engine.drain(active, stopping=True)
                active.close()
            self._pinning.release()

    def _drained(self, active: ActiveSession, engine: Engine | None) -> ActiveSession:
        """Every frame in flight handed on (before a switch or a change of engine); the session that runs
        after, a fallback if it failed meanwhile."""
        if engine is None:
            return active
        try:
            engine.drain(active)
        except ModelError as exc:
            return self._sessions.fail_over(active, exc)
        return active

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
        if not ahead:
            self._pinning.after_preprocess()
        return tensor, preprocess_ms, ahead


"""An inference thread's sessions: opened, switched, failed over to the CPU, and what is open published.

Every change of session goes through here, on the inference thread (GPU delegates require one thread):
the first open, a switch (a bad model or a refused open keeps the running session), and the fall-back
to the CPU when a session fails mid-run. Each emits the event a recording and the plots show, and
publishes what is open as one immutable `Opened` for the other threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from app.backends import DelegationReport, ModelRunner, fell_back, mid_run_reason, open_session, run_ends
from app.errors import DelegateScopeError, ModelError
from app.metrics.memory import MemoryDelta, measure_open
from app.model.feed import FeedFacts
from app.model.preprocess import Preprocessor
from app.model.spec import ModelFacts, ModelSpec, load_model_spec
from app.pipeline.active import ActiveSession
from app.pipeline.pinning import Pinning
from app.pipeline.run_log import RunLog
from app.pipeline.types import EventKind, InferenceConfig, State, Status
from app.sources import SourceInfo
from app.system.heap import release_free_memory
from app.system.thread_cpu import decoder_threads, started_by

_ONE_OPEN_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Opened:
    """The open session, as other threads read it."""

    report: DelegationReport  # what really runs
    spec: ModelSpec  # the model it runs (A/B: its class space)
    capture_pre: Preprocessor | None  # for the capture thread alone (its buffers are not the inference thread's)
    feed: FeedFacts | None  # which feeder gives the inputs that are not the frame (None: the frame only)
    memory: MemoryDelta  # what opening it added to the resident set


class SessionKeeper:
    def __init__(
        self,
        *,
        log: RunLog,
        stop: threading.Event,
        pinning: Pinning,
        source_info: Callable[[], SourceInfo | None],
        refused: Callable[[InferenceConfig, InferenceConfig], None],
    ) -> None:
        """`refused(running, refused)`: a switch was refused and `running` runs on (the worker's config then
        names it again)."""
        self._log, self._stop, self._pinning, self._source_info = log, stop, pinning, source_info
        self._refused = refused
        self._lock = threading.Lock()
        self._opened: Opened | None = None
        self._opening: tuple[InferenceConfig, float] | None = None
        self._counter = 0
        self.first_open_over = threading.Event()  # the first open succeeded or failed: capture may begin

    def opened(self) -> Opened | None:
        with self._lock:
            return self._opened

    def opening(self) -> tuple[InferenceConfig, float] | None:
        """The config being opened now and since when (monotonic); None when none is."""
        with self._lock:
            return self._opening

    def switch(self, active: ActiveSession | None, config: InferenceConfig) -> ActiveSession | None:
        """Close the old session and open the new one; on failure keep (or reopen) the old. None: the first
        open failed (the status says why)."""
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
            self.first_open_over.set()

    def fail_over(self, active: ActiveSession, exc: ModelError) -> ActiveSession:
        """A session that failed mid-run falls back to the CPU, visibly; on the CPU already, or with fallback
        off, the run ends (the returned session is the closed one)."""
        used = active.session.report.used
        active.close()
        stop = run_ends(used, exc, active.config.fallback)
        if stop is not None:  # recorded too: the recording must say why it ends here
            self._log.fail(f"inference failed on {used}: {exc}", stop.exit_code, self._source_info())
            self._stop.set()
            return active
        new = self._open(replace(active.config, delegate="cpu"), active.spec)  # the same model, in memory
        reason = mid_run_reason(used, exc)  # said as the fallback event, not also among the report's warnings
        new.session.report = fell_back(new.session.report, active.config.delegate, reason, warn=False)
        self._publish(new, EventKind.SWITCH, None)
        return new

    def _open(self, config: InferenceConfig, spec: ModelSpec | None = None) -> ActiveSession:
        """Open `config`; with `spec`, from the model already in memory (its file may be gone)."""
        spec = spec or load_model_spec(config.model, labels_file=config.labels, options=config.model_options)
        self._pinning.before_open(config)  # before the session exists: its runtime's threads inherit the CPUs
        # What the open added to the resident set (a GPU process's child counts whole): the model's init
        # footprint, app/metrics/memory.py. One open at a time in the process, so that A/B's two sides, which
        # open together, each count their own (side A's read 42.7 MB and B's 45.7 for 18 and 5 MB of weights).
        def open_it() -> ModelRunner:
            return open_session(spec, config.delegate, config.options, fallback=config.fallback)

        with _ONE_OPEN_AT_A_TIME:
            # Freed heap pages go back first: an open that reuses a closed session's freed heap would read as
            # costing nothing (a sweep's second configuration read 1 MB against its first's 30).
            release_free_memory()
            (session, started), memory = measure_open(lambda: started_by(open_it))
        self._pinning.after_open(session, config)
        self._counter += 1
        runtime = started - decoder_threads(started)  # a video source opened meanwhile: its decoders
        return ActiveSession(config, spec, session, self._counter, runtime, memory)

    def _reopen(self, active: ActiveSession | None, config: InferenceConfig) -> ActiveSession | None:
        close_ms = None
        spec = None
        if active is not None:
            try:  # read and checked once, here: a bad model must not cost the running one
                spec = load_model_spec(config.model, labels_file=config.labels, options=config.model_options)
            except ModelError as exc:
                self._refused(active.config, config)
                self._log.emit(EventKind.SWITCH_FAILED, f"could not switch to {config.describe()}: {exc}")
                return active
            started = time.perf_counter()
            active.close()
            close_ms = (time.perf_counter() - started) * 1e3
            release_free_memory()  # the old session's buffers: see app/system/heap.py
        try:
            new = self._open(config, spec)
        except DelegateScopeError as exc:
            if active is not None:
                self._refused(active.config, config)
            self._log.emit(EventKind.SWITCH_FAILED, f"could not open {config.describe()}: {exc}")
            if active is None:
                self._log.set_status(Status(State.ERROR, str(exc), self._source_info(), exc.exit_code))
                return None
            # From memory: the running model's file may have been moved or deleted since.
            return self._open(active.config, active.spec)
        changes = config.changes_from(active.config) if active is not None else None
        self._publish(new, EventKind.OPEN if active is None else EventKind.SWITCH, close_ms, changes)
        return new

    def _publish(
        self, active: ActiveSession, kind: EventKind, close_ms: float | None, changes: str | None = None
    ) -> None:
        report = active.session.report
        feed = active.feed.facts if active.feed is not None else None
        opened = Opened(report, active.spec, active.pre, feed, active.memory)
        with self._lock:
            self._opened = opened
        message = f"{active.spec.name} on {report.used}"
        if changes:  # a recording and the plots must say what changed, not only what runs now
            message = f"{changes}: {message}"
        if report.fallback_reason:
            message += f" (requested {report.requested}; fell back: {report.fallback_reason})"
        self._log.emit(
            kind,
            message,
            model=ModelFacts.of(active.spec),
            session_id=active.session_id,
            report=report,
            close_ms=close_ms,
            changes=changes or None,
            open_ms=report.init_ms,
            first_inference_ms=report.first_inference_ms,
            memory=active.memory,
        )
        if report.fallback_reason:
            self._log.emit(EventKind.FALLBACK, report.fallback_reason, session_id=active.session_id, report=report)

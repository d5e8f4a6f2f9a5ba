"""The live engine: capture thread -> latest-frame slot -> throttled inference thread -> Result.

Mirrors TensorFlow Lite's iOS camera sample (CameraFeedManager -> didOutput ->
`delayBetweenInferencesMs` -> ModelDataHandler.runModel) with three rules:

- Capture never waits for inference: the slot holds only the newest frame and
  counts the ones overwritten before inference took them (dropped). No queue
  can grow, so a slow backend never builds a backlog.
- At most one inference in flight, at most one started per throttle interval
  (measured start to start, as the iOS sample does).
- The inference thread owns the backend session: it opens, uses, switches and
  closes it (GPU delegates require one thread). Everyone else reads published,
  immutable snapshots (latest frame, latest result, status, events).

The inference thread does nothing but take a prepared tensor and run it: the capture
thread preprocesses ahead (`RgbCache.prepare`) and a results thread postprocesses and
publishes (`_Handoff`), so both overlap the next invoke instead of lengthening the cycle.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from app import cpu_affinity
from app.backends import Session, SessionReport, open_session
from app.backends.cpu import requested_threads
from app.errors import DelegateScopeError, InternalError, ModelError, SourceError, SourceLost, error_for
from app.heap import release_free_memory
from app.metrics import InferenceTiming, Metrics
from app.model import DEFAULT_MODEL, ModelSpec, load_model_spec
from app.postprocess import Postprocessor, Prediction
from app.preprocess import CropBox, Preprocessor
from app.redact import redact_credentials
from app.sources import LIVE_KINDS, Frame, FrameSource, SourceInfo, open_source

_POLL_S = 0.05  # how often blocked threads look at the stop flag
_BACKOFF_START_S, _BACKOFF_MAX_S = 0.5, 8.0
_MAX_EVENTS = 1000
_BAD_RESULT_EVERY_S = 1.0
_MAX_UNPUBLISHED = 8  # raw outputs waiting for the results thread before inference waits for it


@dataclass(frozen=True)
class InferenceConfig:
    """What the inference thread runs. Changing it live = `Pipeline.reconfigure(...)`."""

    model: str | Path = DEFAULT_MODEL
    labels: Path | None = None
    delegate: str = "cpu"
    options: dict = field(default_factory=dict)  # threads, precision, allow_software, compute_units
    fallback: bool = True
    throttle_ms: float = 0.0  # the iOS sample's delayBetweenInferencesMs
    top_k: int = 5

    def describe(self) -> str:
        return f"{Path(str(self.model)).stem} on {self.delegate}"


@dataclass(frozen=True)
class Result:
    frame_index: int
    captured_at: float
    wall_time: float
    top: list[Prediction]
    scores: np.ndarray  # read-only, dequantized class scores
    timing: InferenceTiming
    model: str
    model_id: str  # first 12 hex digits of the model file's sha256
    backend: str  # the backend that really ran it
    session_id: int  # changes with every (re)open; Pipeline.events() says what it was
    crop: CropBox
    frame_size: tuple[int, int]  # (width, height)


@dataclass(frozen=True)
class Event:
    """Something a recording or a plot marker must show: start, switch, fallback, source loss..."""

    kind: str  # open, switch, fallback, switch_failed, source_lost, source_reconnected, source_ended, error
    at: float  # monotonic
    wall_time: float
    message: str
    session_id: int | None = None
    report: SessionReport | None = None
    close_ms: float | None = None  # switch cost: closing the old session
    open_ms: float | None = None  # ... opening the new one (LiteRT init)
    first_inference_ms: float | None = None  # ... and its first inference
    model: dict | None = None  # name, id, sha256, path, input of the model opened


@dataclass(frozen=True)
class Status:
    state: str  # "starting", "running", "reconnecting", "ended", "error", "stopped"
    message: str
    source: SourceInfo | None = None
    exit_code: int | None = None  # state "error": the exit code of the typed error that ended the run

    def error(self) -> DelegateScopeError | None:
        """State "error": the typed error that ended the run, for whoever reports it (exit codes)."""
        if self.state != "error":
            return None
        return error_for(self.exit_code or InternalError.exit_code, self.message)


class RgbCache:
    """Preprocessed inputs per frame, computed once and reused.

    Stage 1 (crop, shrink, RGB) is keyed by frame and input size, so the sides of an A/B
    comparison share the very same pixels. The capture thread fills it as frames arrive
    (`prepare`), so preprocessing overlaps the previous inference instead of adding to the
    inference thread's cycle; the full input tensor is kept too for the model in use. Each
    entry carries the milliseconds it cost, so recorded preprocessing times stay complete.
    """

    def __init__(self, keep: int = 8) -> None:
        self._lock = threading.Lock()
        self._rgb: dict[tuple[int, int, int], tuple[np.ndarray, float]] = {}
        self._tensors: dict[tuple[int, tuple], tuple[np.ndarray, float]] = {}  # (frame, Preprocessor.key)
        self._keep = keep
        self.computed = 0
        self.reused = 0

    def peek(self, frame_index: int) -> np.ndarray | None:
        """The shared pixels of a recent frame (any input size), if still kept."""
        with self._lock:
            return next((v for (i, _, _), (v, _) in self._rgb.items() if i == frame_index), None)

    def prepare(self, frame: Frame, pre: Preprocessor) -> None:
        """Capture thread: stage 1 and 2 for `pre`'s model, ahead of the inference thread."""
        tensor, ms = self._both_stages(frame, pre, out=np.empty_like(pre.output_buffer))
        # Left writeable on purpose: handed to one consumer only (tensor() pops it), and the
        # Interpreter's set_tensor copies a read-only array first, dropping the GIL for that
        # copy; taking it back cost the inference thread a sleep and a wake-up per inference.
        with self._lock:
            self._tensors[(frame.index, pre.key)] = (tensor, ms)
            _trim(self._tensors, self._keep)

    def tensor(self, frame: Frame, pre: Preprocessor) -> tuple[np.ndarray, float, bool]:
        """Inference thread: the input tensor, what it cost (ms), and whether it was prepared
        ahead (False: computed now, on the calling thread)."""
        with self._lock:
            hit = self._tensors.pop((frame.index, pre.key), None)
        if hit is not None:
            return (*hit, True)
        return (*self._both_stages(frame, pre), False)

    def _both_stages(self, frame: Frame, pre: Preprocessor, out: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        rgb, rgb_ms = self._stage1(frame, pre)
        started = time.perf_counter()
        tensor = pre.from_rgb(rgb, out=out)
        return tensor, rgb_ms + (time.perf_counter() - started) * 1e3

    def _stage1(self, frame: Frame, pre: Preprocessor) -> tuple[np.ndarray, float]:
        key = (frame.index, pre.height, pre.width)
        with self._lock:
            cached = self._rgb.get(key)
            if cached is not None:
                self.reused += 1
                return cached
        started = time.perf_counter()
        rgb = pre.rgb(frame.image)  # outside the lock: the other side keeps running meanwhile
        rgb.setflags(write=False)
        entry = (rgb, (time.perf_counter() - started) * 1e3)
        with self._lock:
            cached = self._rgb.setdefault(key, entry)  # the other side may have raced us here
            if cached is entry:
                self.computed += 1
                _trim(self._rgb, self._keep)
            else:
                self.reused += 1
            return cached


def _trim(entries: dict, keep: int) -> None:
    while len(entries) > keep:
        entries.pop(next(iter(entries)))


class LatestFrameSlot:
    """One frame deep. `put` overwrites; `take` hands the newest frame to the inference thread once."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest: Frame | None = None
        self._fresh = False
        self._closed = False

    def put(self, frame: Frame) -> bool:
        """Store the frame; True if it overwrote one that inference never took (a dropped frame)."""
        with self._cond:
            dropped = self._fresh
            self._latest, self._fresh = frame, True
            self._cond.notify_all()
            return dropped

    def take(self, timeout: float) -> Frame | None:
        with self._cond:
            if not self._fresh and not self._closed:
                self._cond.wait(timeout)
            if not self._fresh:
                return None
            self._fresh = False
            self._cond.notify_all()  # an on-demand capture thread waits for this
            return self._latest

    def peek(self) -> Frame | None:
        with self._cond:
            return self._latest

    def wait_taken(self, timeout: float) -> bool:
        """Block until the frame in the slot was taken (or the slot closed); False on timeout."""
        with self._cond:
            if self._fresh and not self._closed:
                self._cond.wait(timeout)
            return not self._fresh or self._closed

    def has_fresh(self) -> bool:
        with self._cond:
            return self._fresh

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class _Active:
    """What the inference thread holds: the spec, its session and processors."""

    def __init__(self, config: InferenceConfig, spec: ModelSpec, session: Session, session_id: int) -> None:
        self.config, self.spec, self.session, self.session_id = config, spec, session, session_id
        self.pre, self.post = Preprocessor(spec), Postprocessor(spec)


@dataclass(frozen=True)
class _Raw:
    """One inference's output on its way from the inference thread to the results thread."""

    active: _Active
    frame: Frame
    raw: np.ndarray
    started: float  # monotonic, when the inference thread took the frame
    preprocess_ms: float
    inference_ms: float
    inference_cpu_ms: float
    top_k: int


class _Handoff:
    """Inference thread -> results thread, in order, bounded (a stalled consumer slows
    inference down rather than growing memory or dropping recorded rows)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Raw | None] = queue.SimpleQueue()
        self._room = threading.BoundedSemaphore(_MAX_UNPUBLISHED)
        self._lock = threading.Lock()
        self._unpublished = 0  # put and not yet done: queued or being published

    def put(self, item: _Raw, stop: threading.Event) -> None:
        while not self._room.acquire(timeout=_POLL_S):
            if stop.is_set():
                break  # shutting down: the results thread drains whatever is queued
        with self._lock:
            self._unpublished += 1
        self._queue.put(item)

    def get(self) -> _Raw | None:
        return self._queue.get()

    def done(self) -> None:
        """One item fully published (or refused)."""
        with self._lock:
            self._unpublished -= 1
        try:
            self._room.release()
        except ValueError:
            pass  # put() gave up waiting for room at shutdown

    def drained(self) -> bool:
        with self._lock:
            return self._unpublished == 0

    def close(self) -> None:
        self._queue.put(None)


class Pipeline:
    def __init__(
        self,
        source: str,
        config: InferenceConfig,
        *,
        pace: bool = True,
        loop: bool = True,
        source_options: dict | None = None,
        metrics: Metrics | None = None,
        on_result: Callable[[Result], None] | None = None,
        on_event: Callable[[Event], None] | None = None,
        rgb_cache: RgbCache | None = None,
        cpu_clock: Callable[[], float] = time.process_time,
        pin_cpus: bool = False,
    ) -> None:
        self.source_spec = source
        self._source_shown = redact_credentials(source)  # in messages: no stream credentials
        self._rgb_cache = rgb_cache or RgbCache()  # A/B: one cache shared by both sides
        self._prepare_with: Preprocessor | None = None  # the capture thread's copy for the model in use
        self._cpu_clock = cpu_clock  # A/B: thread CPU time, since both sides run at once
        self._pin_cpus = pin_cpus  # one inference thread per process only: see app/cpu_affinity.py
        self._cpu_split: cpu_affinity.CpuSplit | None = None
        self._followers: list[Pipeline] = []  # pipelines fed this one's frames (no capture of their own)
        self._leader: Pipeline | None = None
        self.metrics = metrics or Metrics()
        self._source_kwargs = {"pace": pace, "loop": loop, **(source_options or {})}
        self._config = config
        self._pending: InferenceConfig | None = None
        self._on_result, self._on_event = on_result, on_event
        self._slot = LatestFrameSlot()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._result: Result | None = None
        self._status = Status("starting", f"opening {source}")
        self._events: deque[Event] = deque(maxlen=_MAX_EVENTS)
        self._report: SessionReport | None = None
        self._source: FrameSource | None = None
        self._source_done = threading.Event()
        self._idle = threading.Event()  # inference thread has nothing in flight
        self._handoff = _Handoff()
        self._bad_results, self._bad_result_at = 0, -float("inf")  # results thread only
        self._session_counter = 0
        self._capture = threading.Thread(target=self._capture_loop, name="delegate-scope-capture", daemon=True)
        self._inference = threading.Thread(target=self._inference_loop, name="delegate-scope-inference", daemon=True)
        self._results = threading.Thread(target=self._results_loop, name="delegate-scope-results", daemon=True)

    # ---- public, thread-safe -------------------------------------------------------------

    def start(self) -> None:
        """Start capture (unless this pipeline follows another's frames) and inference."""
        for follower in self._followers:
            follower._results.start()
            follower._inference.start()
        if self._leader is None:
            self._capture.start()
        self._results.start()
        self._inference.start()

    def feed(self, follower: Pipeline) -> None:
        """Give `follower` every frame this pipeline captures (before start): one source, two
        inference threads, each with its own latest-frame slot and drop count."""
        follower._leader = self
        self._followers.append(follower)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop both threads; True when they ended within `timeout` seconds."""
        self._stop.set()
        self._slot.close()
        for follower in self._followers:
            follower._stop.set()
            follower._slot.close()
        with self._lock:
            source = self._source
        if source is not None:
            source.close()  # unblocks a paced read
        deadline = time.monotonic() + timeout
        pipelines = (self, *self._followers)
        for thread in (self._capture, *(p._inference for p in pipelines)):
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        for pipeline in pipelines:  # once inference is over, so results in flight are published
            if pipeline._results.is_alive():
                pipeline._handoff.close()
                pipeline._results.join(max(0.0, deadline - time.monotonic()))
        alive = any(t.is_alive() for t in self.threads())
        self._set_status(Status("stopped", "stopped" if not alive else "stop timed out", self.source_info()))
        return not alive

    def reconfigure(self, **changes: object) -> None:
        """Change model/delegate/options/throttle/top_k; applied by the inference thread between inferences."""
        with self._lock:
            base = self._pending or self._config
            self._pending = replace(base, **changes)  # type: ignore[arg-type]

    @property
    def config(self) -> InferenceConfig:
        with self._lock:
            return self._pending or self._config

    def latest_frame(self) -> Frame | None:
        return self._slot.peek()

    def latest_result(self) -> Result | None:
        with self._lock:
            return self._result

    def status(self) -> Status:
        with self._lock:
            return self._status

    def session_report(self) -> SessionReport | None:
        with self._lock:
            return self._report

    def cpu_split(self) -> cpu_affinity.CpuSplit | None:
        """The CPUs the inference thread and the other threads are pinned to, if pinned."""
        with self._lock:
            return self._cpu_split

    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def source_info(self) -> SourceInfo | None:
        if self._leader is not None:
            return self._leader.source_info()
        with self._lock:
            return self._source.info if self._source else None

    def finished(self) -> bool:
        """The source ended and the last frame has been inferred (or the pipeline stopped)."""
        return self._stop.is_set() or (
            self._source_done.is_set()
            and not self._slot.has_fresh()
            and self._idle.is_set()
            and self._handoff.drained()
        )

    def threads(self) -> list[threading.Thread]:
        own = [self._capture, self._inference, self._results]
        return own + [t for f in self._followers for t in (f._inference, f._results)]

    # ---- helpers --------------------------------------------------------------------------

    def _set_status(self, status: Status) -> None:
        with self._lock:
            self._status = status

    def _emit(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)
        if self._on_event:
            self._on_event(event)

    def _event(self, kind: str, message: str, **fields: object) -> None:
        self._emit(Event(kind, time.monotonic(), time.time(), message, **fields))  # type: ignore[arg-type]

    def _prepare(self, frame: Frame) -> None:
        """Preprocess on the capture thread for the model in use, overlapping the running inference."""
        pre = self._prepare_with
        if pre is None:
            return
        try:
            self._rgb_cache.prepare(frame, pre)
        except ValueError:
            pass  # a bad frame: the inference thread meets the same error and reports it

    def _inference_done(self) -> bool:
        return not self._inference.is_alive()

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; True if stopped."""
        return self._stop.wait(seconds)

    # ---- capture thread -------------------------------------------------------------------

    def _open_source(self) -> FrameSource:
        source = open_source(self.source_spec, **self._source_kwargs)
        with self._lock:
            self._source = source
        return source

    def _capture_loop(self) -> None:
        backoff = _BACKOFF_START_S
        source: FrameSource | None = None
        lost = False
        on_demand = False
        # A reconnected source is a new object that counts from 0 again; frame numbers must go
        # on (recordings, and RgbCache, which is keyed by them, would mix up the two runs).
        first_index = next_index = 0
        try:
            while not self._stop.is_set():
                if source is None:
                    try:
                        source = self._open_source()
                    except SourceError as exc:
                        if not lost:  # a source that never opened is final
                            self._set_status(Status("error", str(exc), exit_code=exc.exit_code))
                            return
                        self._set_status(Status("reconnecting", f"{exc}; retrying in {backoff:.1f} s"))
                        if self._sleep(backoff):
                            return
                        backoff = min(backoff * 2, _BACKOFF_MAX_S)
                        continue
                    if lost:
                        self._event("source_reconnected", f"{self._source_shown} delivers again")
                        lost = False
                        first_index = next_index
                    backoff = _BACKOFF_START_S
                    self._set_status(Status("running", source.info.description, source.info))
                    # Decoding frames nobody will infer only takes a core from inference.
                    on_demand = not self._source_kwargs.get("pace", True) and source.info.kind not in LIVE_KINDS
                try:
                    frame = source.read()
                except SourceLost as exc:
                    kind = source.info.kind
                    source.close()
                    source = None
                    self._event("source_lost", str(exc))
                    if kind not in LIVE_KINDS:  # a damaged file fails the same way again: end, do not loop
                        self._set_status(Status("error", str(exc), exit_code=exc.exit_code))
                        return
                    lost = True
                    self._set_status(Status("reconnecting", f"{exc}; retrying in {backoff:.1f} s"))
                    if self._sleep(backoff):
                        return
                    continue
                if frame is None:
                    if not self._stop.is_set():
                        self._event("source_ended", f"{self._source_shown} ended")
                        self._set_status(Status("ended", f"{self._source_shown} ended", source.info))
                    return
                if first_index:
                    frame = replace(frame, index=frame.index + first_index)
                next_index = frame.index + 1
                self._prepare(frame)
                for pipeline in (self, *self._followers):
                    pipeline.metrics.frame_captured(frame.captured_at)
                    if pipeline._slot.put(frame):
                        pipeline.metrics.frames_dropped(1, frame.captured_at)
                if on_demand:  # unpaced file: read the next frame when this one was taken, not before
                    for pipeline in (self, *self._followers):
                        while not pipeline._slot.wait_taken(_POLL_S):
                            if self._stop.is_set() or pipeline._inference_done():
                                break
        finally:
            if source is not None:
                source.close()
            for pipeline in (self, *self._followers):
                pipeline._source_done.set()

    # ---- inference thread -----------------------------------------------------------------

    def _open(self, config: InferenceConfig, spec: ModelSpec | None = None) -> _Active:
        """Open `config`; with `spec`, from the model already in memory (its file may be gone)."""
        spec = spec or load_model_spec(config.model, labels_file=config.labels)
        self._pin(config)  # before the session exists: its runtime's worker threads inherit the CPUs
        session = open_session(spec, config.delegate, dict(config.options), fallback=config.fallback)
        cpu_affinity.session_opened(self)  # its runtime's workers stay on the inference CPUs
        self._session_counter += 1
        return _Active(config, spec, session, self._session_counter)

    def _pin(self, config: InferenceConfig) -> None:
        """Inference thread: reserve CPUs for `config`'s thread count, or unpin if it cannot."""
        if not self._pin_cpus:
            return
        try:
            threads = requested_threads(config.options)
        except (TypeError, ValueError):
            threads = 0  # not pinned; open_session reports the bad option
        split = cpu_affinity.split_for(threads)
        if split is None or not cpu_affinity.apply(self, split, threading.get_native_id()):
            cpu_affinity.release(self)
            split = None
        with self._lock:
            self._cpu_split = split

    def _publish_open(self, active: _Active, kind: str, close_ms: float | None) -> None:
        if self._leader is None:  # the capture thread gets its own instance: Preprocessor buffers are not shared
            self._prepare_with = Preprocessor(active.spec)
        report = active.session.report
        with self._lock:
            self._report = report
        message = f"{active.spec.name} on {report.used}"
        if report.fallback_reason:
            message += f" (requested {report.requested}; fell back: {report.fallback_reason})"
        spec = active.spec
        model = {
            "name": spec.name,
            "id": spec.sha256[:12],
            "sha256": spec.sha256,
            "path": str(spec.path),
            "input": {"shape": list(spec.input.shape), "dtype": spec.input.dtype},
            "classes": spec.classes,
            # Where the labels came from, and whether they fit: the window shows both, never silently.
            "labels": spec.labels.source,
            "label_warnings": list(spec.labels.warnings),
        }
        self._event(
            kind,
            message,
            model=model,
            session_id=active.session_id,
            report=report,
            close_ms=close_ms,
            open_ms=report.init_ms,
            first_inference_ms=report.first_inference_ms,
        )
        if report.fallback_reason:
            self._event("fallback", report.fallback_reason, session_id=active.session_id, report=report)

    def _switch(self, active: _Active | None, config: InferenceConfig) -> _Active | None:
        """Close the old session and open the new one; on failure keep (or reopen) the old."""
        if active is not None and _same_session(active.config, config):
            active.config = config  # throttle or top-k only: no reopen
            return active
        close_ms = None
        spec = None
        if active is not None:
            try:  # read and checked once, here: a bad model must not cost the running one
                spec = load_model_spec(config.model, labels_file=config.labels)
            except ModelError as exc:
                self._still_running(active, config)
                self._event("switch_failed", f"could not switch to {config.describe()}: {exc}")
                return active
            started = time.perf_counter()
            active.session.close()
            close_ms = (time.perf_counter() - started) * 1e3
            release_free_memory()  # the old session's buffers: see app/heap.py
        try:
            new = self._open(config, spec)
        except DelegateScopeError as exc:
            if active is not None:
                self._still_running(active, config)
            self._event("switch_failed", f"could not open {config.describe()}: {exc}")
            if active is None:
                self._set_status(Status("error", str(exc), self.source_info(), exc.exit_code))
                return None
            # From memory: the running model's file may have been moved or deleted since.
            return self._open(active.config, active.spec)
        self._publish_open(new, "open" if active is None else "switch", close_ms)
        return new

    def _still_running(self, active: _Active, refused: InferenceConfig) -> None:
        """After a refused switch, `config` names what runs again, not what was refused."""
        with self._lock:
            if self._config is refused:
                self._config = active.config

    def _inference_loop(self) -> None:
        try:
            self._run_inference()
        except DelegateScopeError as exc:
            self._set_status(Status("error", str(exc), self.source_info(), exc.exit_code))
            self._event("error", str(exc))
        except Exception as exc:
            self._internal_error(exc)
            raise
        finally:
            self._idle.set()

    def _internal_error(self, exc: Exception) -> None:
        """Never die silently: the UI and bench read this status."""
        message = f"internal error: {type(exc).__name__}: {exc}"
        self._set_status(Status("error", message, self.source_info(), InternalError.exit_code))
        self._event("error", message)

    def _run_inference(self) -> None:
        with self._lock:
            config = self._config
        active = self._switch(None, config)
        last_start = -float("inf")
        try:
            while not self._stop.is_set() and active is not None:
                with self._lock:
                    pending, self._pending = self._pending, None
                if pending is not None:
                    with self._lock:
                        self._config = pending
                    active = self._switch(active, pending)
                    if active is None:
                        return
                wait = last_start + active.config.throttle_ms / 1e3 - time.monotonic()
                if wait > 0 and self._sleep(min(wait, _POLL_S)):
                    return
                if wait > _POLL_S:
                    continue
                self._idle.set()
                frame = self._slot.take(_POLL_S)
                if frame is None:
                    continue
                self._idle.clear()
                last_start = time.monotonic()
                active = self._infer(active, frame, last_start)
                self._idle.set()
        finally:
            if active is not None:
                active.session.close()
            cpu_affinity.release(self)

    def _infer(self, active: _Active, frame: Frame, started: float) -> _Active:
        try:
            tensor, preprocess_ms, ahead = self._rgb_cache.tensor(frame, active.pre)
        except ValueError as exc:  # a frame of the wrong dtype/shape mid-stream: skip it, say so
            self._event("bad_frame", f"frame {frame.index} skipped: {exc}")
            return active
        if not ahead and self._cpu_split is not None:
            # Preprocessing here may have started OpenCV's worker pool on this thread's CPUs.
            cpu_affinity.place_newcomers(self)
        c1, t1 = self._cpu_clock(), time.perf_counter()
        try:
            raw = active.session.run(tensor)
        except ModelError as exc:
            return self._fail_over(active, exc)
        t2, c2 = time.perf_counter(), self._cpu_clock()
        # A backend may hand back a view of a buffer it reuses on the next run.
        raw = raw if raw.flags.owndata else raw.copy()
        item = _Raw(
            active=active,
            frame=frame,
            raw=raw,
            started=started,
            preprocess_ms=preprocess_ms,  # wherever it ran (capture thread, ahead of time, or here)
            inference_ms=(t2 - t1) * 1e3,
            inference_cpu_ms=(c2 - c1) * 1e3,
            top_k=active.config.top_k,
        )
        self._handoff.put(item, self._stop)
        return active

    # ---- results thread -------------------------------------------------------------------

    def _results_loop(self) -> None:
        """Postprocess and publish, in order, until the pipeline closes the hand-off."""
        while (item := self._handoff.get()) is not None:
            try:
                self._publish(item)
            except Exception as exc:
                self._internal_error(exc)
                self._stop.set()
                raise
            finally:
                self._handoff.done()

    def _publish(self, item: _Raw) -> None:
        active, frame = item.active, item.frame
        t2 = time.perf_counter()
        try:
            scores = active.post.scores(item.raw)
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
            inference_cpu_ms=item.inference_cpu_ms,
        )
        scores.setflags(write=False)  # scores() returns a fresh array: nothing else holds it
        height, width = frame.image.shape[:2]
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
            crop=active.pre.crop_box(width, height),
            frame_size=(width, height),
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
        self._event("bad_result", f"frame {frame.index}: {exc}{more}")

    def _fail_over(self, active: _Active, exc: ModelError) -> _Active:
        """A backend that fails mid-run falls back to CPU, visibly."""
        used = active.session.report.used
        active.session.close()
        if used == "cpu" or not active.config.fallback:
            message = f"inference failed on {used}: {exc}"
            self._set_status(Status("error", message, self.source_info(), exc.exit_code))
            self._event("error", message)  # recorded too: the recording must say why it ends here
            self._stop.set()
            return active
        config = replace(active.config, delegate="cpu")
        new = self._open(config, active.spec)  # the same model, already in memory
        new.session.report.requested = active.config.delegate
        new.session.report.fallback_reason = f"{used} failed mid-run: {exc}"
        self._publish_open(new, "switch", None)
        return new


def _same_session(a: InferenceConfig, b: InferenceConfig) -> bool:
    return (a.model, a.labels, a.delegate, a.options, a.fallback) == (
        b.model,
        b.labels,
        b.delegate,
        b.options,
        b.fallback,
    )

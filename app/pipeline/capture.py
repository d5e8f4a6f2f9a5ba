"""The capture thread: reads the source and hands every frame to each inference worker's
latest-frame slot, preprocessing ahead for the first worker's model, either itself after each read
or, where the machine has cores to spare, on a preprocessing thread of its own that it hands each
frame to through one more latest-frame slot (app/pipeline/preprocess_thread.py says when).

Capture never waits for inference: a slot holds only the newest frame and counts the ones
overwritten before inference took them (dropped), so a slow backend never builds a backlog. The
preprocessing thread's slot is one of the same kind: a frame it never took is dropped and counted
too, and frames reach the workers in the order they were read (one preprocessing thread).
Reconnection has one owner: a camera or stream source reopens itself on the next `read()`
after a loss; this thread only decides when to try again (back-off) and says so (events,
status). A file that fails mid-run fails the same way again, so it ends the run instead.
"""

from __future__ import annotations

import threading
import time

from app.errors import SourceError, SourceLost
from app.metrics.trace import CAPTURED, DROPPED, TraceLog
from app.pipeline.frame_slot import LatestFrameSlot
from app.pipeline.plan import FeedPlan
from app.pipeline.preprocess_thread import PreprocessPlacement
from app.pipeline.rgb_cache import RgbCache
from app.pipeline.run_log import RunLog
from app.pipeline.types import POLL_S, EventKind, State, Status
from app.pipeline.worker import InferenceWorker
from app.sources import LIVE_KINDS, CapturedFrames, Frame, FrameSource, SourceInfo, open_source, reads_on_demand
from app.system.redact import redact_credentials
from app.system.thread_cpu import name_this_thread

_BACKOFF_START_S, _BACKOFF_MAX_S = 0.5, 8.0
_FIRST_OPEN_WAIT_S = 10.0  # the longest the source waits for the sessions to open


class Capture:
    def __init__(
        self,
        plan: FeedPlan,  # its source part: what to read and how
        workers: list[InferenceWorker],
        *,
        log: RunLog,
        stop: threading.Event,
        rgb_cache: RgbCache,
        placement: PreprocessPlacement,
        trace: TraceLog | None = None,  # a timeline's records of each frame's read and preprocessing
    ) -> None:
        self.plan = plan
        self._shown = redact_credentials(str(plan.source))  # in messages: no stream credentials
        self._workers = workers
        self._log = log  # the pipeline's (side A's in A/B): source events and status go there
        self._stop = stop
        self._rgb_cache = rgb_cache
        self._lock = threading.Lock()
        self._source: FrameSource | None = None
        self.done = threading.Event()  # the source ended, failed or was closed: no more frames
        self.placement = placement
        self._trace = trace  # None: no trace, and no per-frame work for one
        self._on_demand = False  # set before the first frame is read (see _read_all)
        self.thread = threading.Thread(target=self._loop, name="delegate-scope-capture", daemon=True)
        # Frames read, with their read's ms, waiting for the preprocessing thread.
        self._ahead: LatestFrameSlot[tuple[Frame, float]] | None = None
        self._preprocess: threading.Thread | None = None
        if placement.own_thread:
            self._ahead = LatestFrameSlot()
            self._preprocess = threading.Thread(
                target=self._preprocess_loop, name="delegate-scope-preprocess", daemon=True
            )

    def threads(self) -> list[threading.Thread]:
        return [self.thread] + ([self._preprocess] if self._preprocess is not None else [])

    def start(self) -> None:
        if self._preprocess is not None:
            self._preprocess.start()
        self.thread.start()

    def join(self, deadline: float) -> None:
        for thread in self.threads():
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))

    def source_info(self) -> SourceInfo | None:
        with self._lock:
            return self._source.info if self._source else None

    def close_source(self) -> None:
        """Unblock a paced or blocking read (stopping)."""
        with self._lock:
            source = self._source
        if source is not None:
            source.close()

    def _loop(self) -> None:
        name_this_thread("capture")  # a native thread it starts (OpenCV's pool) is then never the runtime's
        try:
            self._wait_for_the_first_open()
            source = self._open()
            if source is not None:
                self._read_all(source)
        finally:
            with self._lock:
                source = self._source
            if source is not None:
                source.close()
            if self._ahead is not None:  # the preprocessing thread hands on what it holds, then ends
                self._ahead.close()
            else:
                self.done.set()

    def _wait_for_the_first_open(self) -> None:
        """The source opens once every worker has opened its model (or failed to), or after
        _FIRST_OPEN_WAIT_S: an open's init memory is the process's resident set before and after it, and
        frames decoded meanwhile counted in it (a detector read 17-27 MB in bench against 13 MB alone). A
        long open (a Core ML conversion) starts the source anyway, so the window shows the video."""
        deadline = time.monotonic() + _FIRST_OPEN_WAIT_S
        for worker in self._workers:
            while not worker.wait_first_open(POLL_S):
                if self._stop.is_set() or time.monotonic() > deadline:
                    return

    def _preprocess_loop(self) -> None:
        """The preprocessing thread: each frame the capture thread read, in order, to the workers."""
        assert self._ahead is not None
        name_this_thread("preprocess")
        try:
            while not self._stop.is_set():
                item = self._ahead.take(POLL_S)
                if item is None:
                    if self._ahead.closed():
                        return
                    continue
                self._deliver(*item, own_thread=True)
                if self._on_demand:
                    self._wait_room()
        finally:
            self.done.set()

    def _open(self) -> FrameSource | None:
        try:
            options = self.plan.source_options()
            if isinstance(self.plan.source, CapturedFrames):
                source: FrameSource = self.plan.source.open(**options)
            else:
                source = open_source(self.plan.source, **options)
        except SourceError as exc:  # a source that never opened is final
            self._log.set_status(Status(State.ERROR, str(exc), exit_code=exc.exit_code))
            return None
        with self._lock:
            self._source = source
        self._log.set_status(Status(State.RUNNING, source.info.description, source.info))
        return source

    def _read_all(self, source: FrameSource) -> None:
        backoff = _BACKOFF_START_S
        lost = False
        # Decoding frames nobody will infer only takes a core from inference.
        on_demand = reads_on_demand(source.info.kind, self.plan.pace)
        self._on_demand = on_demand  # before the first frame reaches the preprocessing thread
        for worker in self._workers:  # results as frames: every one on demand, else the newest
            worker.keep_newest_results(not on_demand)
        while not self._stop.is_set():
            read_from = time.perf_counter()
            try:
                frame = source.read()
            except SourceLost as exc:
                if source.info.kind not in LIVE_KINDS:  # a damaged file fails the same way again: end
                    self._log.emit(EventKind.SOURCE_LOST, str(exc))
                    self._log.set_status(Status(State.ERROR, str(exc), exit_code=exc.exit_code))
                    return
                if not lost:
                    self._log.emit(EventKind.SOURCE_LOST, str(exc))
                    lost = True
                else:
                    backoff = min(backoff * 2, _BACKOFF_MAX_S)
                self._log.set_status(Status(State.RECONNECTING, f"{exc}; retrying in {backoff:.1f} s"))
                if self._stop.wait(backoff):
                    return
                continue
            if frame is None:
                if not self._stop.is_set():
                    self._log.emit(EventKind.SOURCE_ENDED, f"{self._shown} ended")
                    self._log.set_status(Status(State.ENDED, f"{self._shown} ended", source.info))
                return
            if lost:
                self._log.emit(EventKind.SOURCE_RECONNECTED, f"{self._shown} delivers again")
                self._log.set_status(Status(State.RUNNING, source.info.description, source.info))
                lost, backoff = False, _BACKOFF_START_S
            read_ms = (time.perf_counter() - read_from) * 1e3
            if self._ahead is not None:
                if not self._hand_on(frame, read_ms):
                    return  # the preprocessing thread ended (stopping): nobody takes frames any more
                continue
            self._deliver(frame, read_ms)
            if on_demand:  # unpaced file: one frame read ahead of inference, no more
                self._wait_room()

    def _hand_on(self, frame: Frame, read_ms: float) -> bool:
        """To the preprocessing thread: on demand one frame behind the one it has yet to take, else the
        newest only (a frame it never took is dropped, and counted as every worker's). False once that
        thread has ended."""
        assert self._ahead is not None and self._preprocess is not None
        if not self._preprocess.is_alive():
            return False
        if self._on_demand:
            self._ahead.put_behind((frame, read_ms))
            while not self._ahead.wait_room(POLL_S):
                if self._stop.is_set() or not self._preprocess.is_alive():
                    break
            return True
        dropped = self._ahead.swap((frame, read_ms))
        if dropped is not None:
            lost, lost_read_ms = dropped
            if self._trace is not None:  # read, never preprocessed
                read = (CAPTURED, lost.index, lost.captured_at, lost_read_ms, lost.paced_ms, 0.0, 0.0, True)
                self._trace.append(read)
                self._trace.append((DROPPED, lost.index, lost.captured_at, -1))
            for worker in self._workers:
                worker.metrics.frame_captured(lost.captured_at, lost_read_ms - lost.paced_ms, paced_ms=lost.paced_ms)
                worker.metrics.frames_dropped(1, lost.captured_at)
        return True

    def _deliver(self, frame: Frame, read_ms: float, own_thread: bool = False) -> None:
        started = time.perf_counter()
        self._prepare(frame)
        prepare_ms = (time.perf_counter() - started) * 1e3
        if self._trace is not None:
            self._trace.append((CAPTURED, frame.index, frame.captured_at, read_ms, frame.paced_ms, started, prepare_ms,
                                own_thread))  # fmt: skip
        for worker in self._workers:
            worker.metrics.frame_captured(frame.captured_at, read_ms - frame.paced_ms, prepare_ms, own_thread,
                                          frame.paced_ms)  # fmt: skip
            if self._on_demand:
                worker.slot.put_behind(frame)
            elif (lost := worker.slot.swap(frame)) is not None:
                worker.metrics.frames_dropped(1, frame.captured_at)
                if self._trace is not None:  # overwritten in that worker's slot, never inferred there
                    self._trace.append((DROPPED, lost.index, frame.captured_at, self._workers.index(worker)))

    def _prepare(self, frame: Frame) -> None:
        """Preprocess for the first worker's model, overlapping its running inference."""
        opened = self._workers[0].opened()  # its capture-side preprocessor: buffers of the capture thread's own
        pre = opened.capture_pre if opened else None
        if pre is None:
            return
        try:
            self._rgb_cache.prepare(frame, pre)
        except ValueError:
            pass  # a bad frame: the inference thread meets the same error and reports it

    def _wait_room(self) -> None:
        for worker in self._workers:
            while not worker.slot.wait_room(POLL_S):
                if self._stop.is_set() or worker.inference_done():
                    break

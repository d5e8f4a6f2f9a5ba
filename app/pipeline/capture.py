"""The capture thread: reads the source and hands every frame to each inference worker's
latest-frame slot, preprocessing ahead for the first worker's model.

Capture never waits for inference: a slot holds only the newest frame and counts the ones
overwritten before inference took them (dropped), so a slow backend never builds a backlog.
Reconnection has one owner: a camera or stream source reopens itself on the next `read()`
after a loss; this thread only decides when to try again (back-off) and says so (events,
status). A file that fails mid-run fails the same way again, so it ends the run instead.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from app.errors import SourceError, SourceLost
from app.pipeline.rgb_cache import RgbCache
from app.pipeline.run_log import RunLog
from app.pipeline.types import POLL_S, EventKind, State, Status
from app.pipeline.worker import InferenceWorker
from app.sources import LIVE_KINDS, CapturedFrames, Frame, FrameSource, SourceInfo, open_source
from app.system.redact import redact_credentials

_BACKOFF_START_S, _BACKOFF_MAX_S = 0.5, 8.0


class Capture:
    def __init__(
        self,
        source: str | CapturedFrames,  # a spec, or frames captured once and replayed (a sweep)
        workers: list[InferenceWorker],
        *,
        log: RunLog,
        stop: threading.Event,
        rgb_cache: RgbCache,
        source_options: dict[str, Any],
    ) -> None:
        self.spec = source
        self._shown = redact_credentials(str(source))  # in messages: no stream credentials
        self._workers = workers
        self._log = log  # the pipeline's (side A's in A/B): source events and status go there
        self._stop = stop
        self._rgb_cache = rgb_cache
        self._source_options = source_options  # pace, loop, and the source's own options
        self._lock = threading.Lock()
        self._source: FrameSource | None = None
        self.done = threading.Event()  # the source ended, failed or was closed: no more frames
        self.thread = threading.Thread(target=self._loop, name="delegate-scope-capture", daemon=True)

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
        try:
            source = self._open()
            if source is not None:
                self._read_all(source)
        finally:
            with self._lock:
                source = self._source
            if source is not None:
                source.close()
            self.done.set()

    def _open(self) -> FrameSource | None:
        try:
            if isinstance(self.spec, CapturedFrames):
                source: FrameSource = self.spec.open(**self._source_options)
            else:
                source = open_source(self.spec, **self._source_options)
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
        on_demand = not self._source_options.get("pace", True) and source.info.kind not in LIVE_KINDS
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
            self._deliver(frame, (time.perf_counter() - read_from) * 1e3, on_demand)
            if on_demand:  # unpaced file: one frame read ahead of inference, no more
                self._wait_room()

    def _deliver(self, frame: Frame, read_ms: float, on_demand: bool) -> None:
        started = time.perf_counter()
        self._prepare(frame)
        prepare_ms = (time.perf_counter() - started) * 1e3
        for worker in self._workers:
            worker.metrics.frame_captured(frame.captured_at, read_ms, prepare_ms)
            if on_demand:
                worker.slot.put_behind(frame)
            elif worker.slot.put(frame):
                worker.metrics.frames_dropped(1, frame.captured_at)

    def _prepare(self, frame: Frame) -> None:
        """Preprocess for the first worker's model, overlapping its running inference."""
        pre = self._workers[0].capture_preprocessor()
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

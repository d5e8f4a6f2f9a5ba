"""The live controller the window talks to: one facade over the running pipeline (or A/B
comparison), its metrics and resource sampler, and an optional recording (app/live/recording.py).
Qt-free, so the window stays a thin view and this is tested headless.

Data flows one way: source -> pipeline -> (metrics, recorder, latest frame/result, events) ->
whoever polls. The window sends commands (switch source, reconfigure, compare, record) and
reads snapshots through the methods below; it never holds the pipeline itself.
"""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from app.backends import DelegationReport
from app.live.mask import MaskPreparer
from app.live.recording import RecordingSession, RecordingStatus, new_sink
from app.live.trace import LiveTrace
from app.metrics.resources import ResourceSampler
from app.metrics.window import Metrics, MetricsSnapshot
from app.pipeline import Event, Feed, InferenceConfig, Pipeline, Result, Status
from app.pipeline.compare import AgreementSummary, ComparePipeline, FrameComparison, SpeedWindow
from app.pipeline.plan import FeedPlan
from app.pipeline.sessions import Opened
from app.recording.ab import ComparisonWriter, b_recording, comparison_recording
from app.recording.rows import RowSink
from app.recording.trace import TraceFacts
from app.sources import Frame, SourceInfo
from app.system.heap import release_free_memory

STOP_TIMEOUT_S = 5.0

Side = Literal["a", "b"]


@dataclass(frozen=True)
class Comparison:
    """The A/B comparison as the window shows it."""

    summary: AgreementSummary
    thumbnails: list[tuple[FrameComparison, np.ndarray]]  # frames the sides disagree on
    speed: SpeedWindow | None = None  # medians over the last frames both sides inferred


class LiveController:
    """Owns the running pipeline; thread-safe for one controlling thread (the GUI thread)."""

    def __init__(
        self, source: str, config: InferenceConfig, *, metrics_window_s: float = 5.0, pace: bool = True
    ) -> None:
        self._pace = pace  # False: files are read as fast as inference takes them (benchmarks)
        self.sampler = ResourceSampler(interval_s=0.5)
        self._metrics = {side: Metrics(window_s=metrics_window_s, sampler=self.sampler) for side in ("a", "b")}
        self._config = config
        self._source = source
        self._feed: Feed | None = None
        self._compare: ComparePipeline | None = None  # the feed, while it is an A/B comparison
        self._b_config: InferenceConfig | None = None
        self._recording: RecordingSession | None = None  # the pipeline threads read it once per call
        self._trace: LiveTrace | None = None  # a trace being taken: each new pipeline gets a log of it
        self._generation = 0
        self._paused = False
        # The window's class masks, built on the results threads once the window enables them (app/live/mask.py).
        self.masks = MaskPreparer()

    # ---- commands --------------------------------------------------------------------------

    def start(self) -> None:
        replacing = self._feed is not None
        self._generation += 1
        self._paused = False
        generation = self._generation  # tags this pipeline's results: it numbers frames from 0 again
        self.masks.reset()
        if replacing and self._trace is not None:
            self._trace.pipeline_ended(self._running())
        trace = self._trace.log_for(generation) if self._trace is not None else None
        if self._b_config is not None:
            self._feed = self._compare = ComparePipeline(
                self._plan(),
                self._config,
                self._b_config,
                metrics=self._metrics,
                on_result=lambda side, r: self._on_result(generation, side, r),
                on_event=self._on_event,
                on_comparison=lambda c: self._on_comparison(generation, c),
                trace=trace,
            )
        else:
            self._compare = None
            self._feed = Pipeline(
                self._plan(),
                self._config,
                metrics=self._metrics["a"],
                on_result=lambda r: self._on_result(generation, "a", r),
                on_event=lambda e: self._on_event("a", e),
                trace=trace,
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

    def _plan(self) -> FeedPlan:
        """How the window's pipeline reads its source: at its pace (or as inference takes frames), looping,
        every other setting where the machine puts it; never pinned (the GUI thread shares the CPUs)."""
        return FeedPlan(source=self._source, pace=self._pace)

    def set_compare(self, b: InferenceConfig | None) -> bool:
        """Start (B config) or end (None) the A/B comparison: the pipeline restarts on the same source."""
        stopped = self._stop_for_replacement()
        self._b_config = b
        for metrics in self._metrics.values():
            metrics.reset()
        self._record_event("compare", f"A/B comparison with {b.describe()}" if b else "A/B comparison ended")
        if b is not None and self._recording is not None:
            self._record_side_b(
                self._recording, b, already_open=False
            )  # before B's session opens: its open event is recorded
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

    def set_pace(self, pace: bool) -> bool:
        """Pace files at their frame rate (True) or read them as fast as inference takes them (False,
        a benchmark mode; a camera or stream delivers at its own rate either way): a new pipeline on
        the same source, model and delegate. Returns whether the old one stopped in time."""
        if pace == self._pace:
            return True
        if self._paused:  # applies when it resumes
            self._pace = pace
            return True
        stopped = self._stop_for_replacement()
        self._pace = pace
        self._metrics["a"].reset()
        self._metrics["b"].reset()
        self._record_event("pace", "paced at the source's rate" if pace else "unpaced: as fast as possible")
        self.start()
        return stopped

    def pause(self, reason: str) -> bool:
        """Stop the pipeline (source, configs and recording kept) until `resume()`: a delegate sweep
        needs the CPU to itself. The status says `reason`. Returns whether its threads ended in time."""
        if self._paused:
            return True
        stopped = self._stop_for_replacement()
        self._paused = True
        self._running().show_stopped(reason)
        self._record_event("pause", reason)
        return stopped

    def resume(self) -> None:
        """Start again after `pause()`; nothing when not paused (a source switch meanwhile restarted it)."""
        if self._paused:
            feed = self._running()  # stopped; changes asked for meanwhile are its workers' pending configs
            self._config = feed.side_config("a")
            if "b" in feed.sides:
                self._b_config = feed.side_config("b")
            self._record_event("resume", "live pipeline resumed")
            self.start()

    def reconfigure(self, **changes: object) -> None:
        """Change side A's model/delegate/options/throttle/top-k, live."""
        self._running().reconfigure_side("a", **changes)

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
    def pace(self) -> bool:
        return self._pace

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def comparing(self) -> bool:
        return self._feed is not None and self._feed.compares

    def config(self, side: Side = "a") -> InferenceConfig:
        """What the side runs, or will run once a pending change applies."""
        if side == "b" and not self.comparing:
            raise LookupError("no A/B comparison is running")
        return self._running().side_config(side)

    def latest_frame(self) -> Frame | None:
        return self._running().latest_frame()

    def inferring(self) -> bool:
        """Some side's inference thread is on a frame now (see InferenceWorker.inferring)."""
        return self._running().inferring()

    def latest_result(self, side: Side = "a") -> Result | None:
        """The side's newest result; with the window's masks on, a segmentation result once its mask is built."""
        newest = self._running().side_result(side) if side == "a" or self.comparing else None
        return self.masks.shown(side, newest)

    def report(self, side: Side = "a") -> DelegationReport | None:
        """What really runs on that side: requested and used backend, coverage, fallback."""
        return self._running().side_report(side) if side == "a" or self.comparing else None

    def opened(self, side: Side = "a") -> Opened | None:
        """The side's open session as its inference thread published it (its `memory`: the init footprint)."""
        if side == "b" and not self.comparing:
            return None
        return self._running().workers[side].opened()

    def opening(self, side: Side = "a") -> tuple[InferenceConfig, float] | None:
        """What the side's inference thread is opening now and since when (monotonic), None when nothing is."""
        if side == "b" and not self.comparing:
            return None
        return self._running().workers[side].opening()

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
        feed = self._compare
        if feed is None:
            return None
        return Comparison(feed.comparator.summary(), list(feed.thumbnails), feed.comparator.speed())

    def threads(self) -> list[threading.Thread]:
        return self._feed.threads() if self._feed else []

    # ---- recording (app/live/recording.py) -----------------------------------------------------

    @property
    def recording(self) -> bool:
        return self._recording is not None

    def start_recording(self, path: Path) -> None:
        """Start writing the bench CSV format to `path` (side A); while an A/B comparison runs, side B
        and the per-frame comparison too (app/recording/ab.py). Raises OSError if a file cannot be created."""
        if self._recording is not None:
            raise RuntimeError("already recording")
        path = Path(path)
        if self.comparing:  # refuse before creating anything: never half a set of files
            for other in (b_recording(path), comparison_recording(path)):
                if other.exists():
                    raise OSError(f"will not overwrite an existing recording: {other}")
        session = RecordingSession(path, self._new_sink(path, "a", self.config("a"), already_open=True))
        self._recording = session
        if self.comparing:
            self._record_side_b(session, self.config("b"), already_open=True)

    def _new_sink(self, path: Path, side: Side, config: InferenceConfig, *, already_open: bool) -> RowSink:
        opened = None
        if already_open:  # the session already open goes into the sidecar now
            opened = next((e for e in reversed(self._running().events(side)) if e.model is not None), None)
        return new_sink(
            path,
            side,
            config,
            source=lambda: self._source,
            worker=lambda: self._running().workers[side],
            metrics=self._metrics[side],
            comparing=self.comparing,
            open_session=opened,
        )

    def _record_side_b(self, session: RecordingSession, b: InferenceConfig, *, already_open: bool) -> None:
        """Side B's recording and the comparison's, beside side A's, once B runs while recording."""
        if session.has_side("b"):
            return  # B ran before in this recording: its files carry on (a `compare` row marks the gap)
        path = session.path
        sink = None
        try:
            sink = self._new_sink(b_recording(path), "b", b, already_open=already_open)
            comparisons = ComparisonWriter(comparison_recording(path), path, b_recording(path))
        except OSError as exc:  # A's recording carries on and says why B's is missing
            if sink is not None:
                sink.recorder.stop()
            session.add_row({"event": "error", "message": f"side B not recorded: {exc}"})
            return
        session.sinks["a"].recorder.update_metadata(
            compare={"b": b_recording(path).name, "comparison": comparison_recording(path).name}
        )
        session.add_side_b(sink, comparisons)

    def record_failure(self, message: str, *, kind: str = "switch_failed", side: Side | None = None) -> bool:
        """A failure the window showed as an event row of the recording, so the CSV holds every failure the
        user saw: `switch_failed` for a model or source it refused (nothing changed), `window_error` for
        the rest. In `side`'s file (side A's when B is not recorded), every file when None. False when
        nothing is recorded."""
        session = self._recording
        if session is None:
            return False
        session.add_row({"event": kind, "message": message, "source": self._source}, side)
        return True

    def recording_status(self) -> RecordingStatus | None:
        session = self._recording
        return session.status() if session is not None else None

    def stop_recording(self) -> RecordingStatus | None:
        session, self._recording = self._recording, None
        if session is None:
            return None
        summaries = {side: self._metrics[side].snapshot().to_dict() for side in session.sinks}
        compare = self._compare
        agreement = compare.comparator.summary(since=session.started).to_dict() if compare is not None else None
        return session.close(summaries, agreement)

    # ---- a trace of the pipeline and the paints (app/live/trace.py) -----------------------------

    @property
    def trace(self) -> LiveTrace | None:
        return self._trace

    def start_trace(self, path: Path, seconds: float | None) -> bool:
        """Start taking a trace, to be written to `path`, of the last `seconds` (None: all of it). A pipeline's
        threads take their log when they start: a running one restarts on the same source, model and delegate
        (its session's open is the trace's first slice). Returns whether the old one stopped in time."""
        if self._trace is not None:
            raise RuntimeError("already tracing")
        self._trace = LiveTrace(Path(path), seconds)
        if self._feed is None or self._paused:  # the next start() takes it
            return True
        stopped = self._stop_for_replacement()
        self._record_event("trace", f"trace started: {path}")
        self.start()
        return stopped

    def stop_trace(self, *, restart: bool = True) -> TraceFacts | None:
        """Write the trace taken and stop taking one; None when none was. A running pipeline stops first (its
        log is read whole) and, with `restart`, runs again without a log: off, tracing costs nothing.
        UsageError when the file cannot be written (the trace is given up)."""
        trace, feed = self._trace, self._feed
        if trace is None:
            return None
        running = feed is not None and any(t.is_alive() for t in feed.threads())
        if running:
            self._stop_for_replacement()
        self._trace = None
        try:
            return trace.write(feed, self.sampler.readings_between(trace.started_mono, float("inf")))
        finally:
            if running and restart:
                self._record_event("trace", f"trace written: {trace.path}")
                self.start()

    # ---- internals -------------------------------------------------------------------------

    def _running(self) -> Feed:
        if self._feed is None:
            raise RuntimeError("LiveController.start() was not called")
        return self._feed

    def _stop_for_replacement(self) -> bool:
        """Stop the running pipeline, keeping its configs for the next; True when its threads
        ended in time."""
        feed = self._running()
        self._config = feed.side_config("a")
        if "b" in feed.sides:
            self._b_config = feed.side_config("b")
        return feed.stop(STOP_TIMEOUT_S)  # start() frees what it held

    # Pipeline callbacks (inference/capture threads): each reads the recording once.

    def _on_result(self, generation: int, side: str, result: Result) -> None:
        if generation == self._generation:  # a stopped pipeline's straggler is not shown
            self.masks.add(side, result)
        session = self._recording
        if session is not None:
            session.on_result(generation, side, result)

    def _on_event(self, side: str, event: Event) -> None:
        session = self._recording
        if session is not None:
            session.on_event(side, event)

    def _on_comparison(self, generation: int, comparison: FrameComparison) -> None:
        session = self._recording
        if session is not None:
            session.on_comparison(generation, comparison)

    def _record_event(self, kind: str, message: str) -> None:
        session = self._recording
        if session is not None:  # a source or A/B change concerns both sides' recordings
            session.add_row({"event": kind, "message": message, "source": self._source})

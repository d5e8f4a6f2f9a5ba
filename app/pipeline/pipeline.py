"""A pipeline: one capture thread feeding one or more inference workers.

Mirrors TensorFlow Lite's iOS camera sample (CameraFeedManager -> didOutput ->
`delayBetweenInferencesMs` -> ModelDataHandler.runModel): `Capture` is the feed manager,
each `InferenceWorker` a model data handler. A single run has one worker; an A/B comparison
has two on the same frames (app/pipeline/compare.py), sharing the preprocessing cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from app.backends import DelegationReport
from app.metrics.trace import TraceLog
from app.metrics.window import Metrics
from app.model.feed import FeedFacts
from app.pipeline.capture import Capture
from app.pipeline.plan import FeedPlan
from app.pipeline.preprocess_thread import PreprocessPlacement, place_preprocessing
from app.pipeline.rgb_cache import RgbCache
from app.pipeline.run_log import RunLog
from app.pipeline.types import Event, InferenceConfig, Result, State, Status
from app.pipeline.worker import InferenceWorker
from app.sources import CapturedFrames, Frame, SourceInfo
from app.system import cpu_affinity

T = TypeVar("T")


class Feed:
    """One capture thread + inference workers by side, started and stopped together. Side
    "a" is the main one: the source's events and status go to its log, and its fatal error
    ends the capture."""

    def __init__(
        self,
        feed: FeedPlan | str | CapturedFrames,
        configs: dict[str, InferenceConfig],
        *,
        metrics: dict[str, Metrics] | None = None,
        on_result: Callable[[str, Result], None] | None = None,
        on_event: Callable[[str, Event], None] | None = None,
        trace: TraceLog | None = None,  # a timeline of every frame's stages (app/recording/trace.py writes it)
    ) -> None:
        if "a" not in configs:
            raise ValueError("a feed needs a side 'a'")
        plan = FeedPlan.of(feed)
        if len(configs) > 1:
            plan = plan.unpinned()  # one inference thread per process may be pinned (cpu_affinity)
        self.plan = plan
        self.trace = trace
        self.rgb_cache = RgbCache()
        self._stops = {side: threading.Event() for side in configs}
        self.workers: dict[str, InferenceWorker] = {}
        for side, config in configs.items():
            log = RunLog(Status(State.STARTING, f"opening {plan.source}"), _bound(on_event, side))
            self.workers[side] = InferenceWorker(
                config,
                plan,
                log=log,
                stop=self._stops["a"] if side == "a" else self._stops[side],
                metrics=(metrics or {}).get(side) or Metrics(),
                rgb_cache=self.rgb_cache,
                source_info=self.source_info,
                on_result=_bound(on_result, side),
                trace=trace.for_side(side) if trace is not None else None,
            )
        self.capture = Capture(
            plan,
            list(self.workers.values()),
            log=self.workers["a"].log,
            stop=self._stops["a"],  # side A's fatal error ends the capture too
            rgb_cache=self.rgb_cache,
            placement=place_preprocessing(
                configs.values(), inference_cpus=plan.inference_cpus, own_thread=plan.preprocess_thread
            ),
            trace=trace,
        )

    def start(self) -> None:
        for worker in self.workers.values():
            worker.start()
        self.capture.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every thread; True when they ended within `timeout` seconds."""
        for worker in self.workers.values():
            worker.request_stop()
        self.capture.close_source()
        deadline = time.monotonic() + timeout
        self.capture.join(deadline)
        for worker in self.workers.values():
            worker.join_inference(deadline)
        for worker in self.workers.values():  # once inference is over, so results in flight are published
            worker.join_results(deadline)
        alive = any(t.is_alive() for t in self.threads())
        log = self.workers["a"].log
        log.set_status(Status(State.STOPPED, "stopped" if not alive else "stop timed out", self.source_info()))
        return not alive

    def finished(self) -> bool:
        """The source ended and its last frame has been inferred everywhere (or side A stopped)."""
        if self._stops["a"].is_set():
            return True
        return self.capture.done.is_set() and all(not w.slot.has_fresh() and w.idle() for w in self.workers.values())

    def threads(self) -> list[threading.Thread]:
        return self.capture.threads() + [t for w in self.workers.values() for t in w.threads()]

    @property
    def preprocessing(self) -> PreprocessPlacement:
        """Where frames are preprocessed ahead of inference, and why there."""
        return self.capture.placement

    def source_info(self) -> SourceInfo | None:
        return self.capture.source_info()

    def latest_frame(self) -> Frame | None:
        return self.workers["a"].slot.peek()

    def status(self) -> Status:
        """Side A's: the source's state, or the error that ended the run."""
        return self.workers["a"].log.status()

    def events(self, side: str = "a") -> list[Event]:
        """That side's retained events, oldest first (side A's hold the source's too)."""
        return self.workers[side].log.events()

    def events_since(self, seq: int) -> list[Event]:
        return self.workers["a"].log.events_since(seq)

    # What a controller reads of each side (app/live/controller.py), without reaching into workers.

    compares = False  # an A/B comparison (app/pipeline/compare.py)

    @property
    def sides(self) -> tuple[str, ...]:
        return tuple(self.workers)

    def side_config(self, side: str = "a") -> InferenceConfig:
        """What the side runs, or will run once a pending change applies."""
        return self.workers[side].config

    def side_result(self, side: str = "a") -> Result | None:
        return self.workers[side].latest_result()

    def side_report(self, side: str = "a") -> DelegationReport | None:
        return self.workers[side].delegation_report()

    def reconfigure_side(self, side: str, **changes: object) -> None:
        self.workers[side].reconfigure(**changes)

    def inferring(self) -> bool:
        """Some side's inference thread is on a frame now (see InferenceWorker.inferring)."""
        return any(worker.inferring() for worker in self.workers.values())

    def show_stopped(self, reason: str) -> None:
        """After `stop()`: the status says why it stopped (a pause), not just "stopped"."""
        self.workers["a"].log.set_status(Status(State.STOPPED, reason))


def _bound(callback: Callable[[str, T], None] | None, side: str) -> Callable[[T], None] | None:
    """`callback` with its side given: what a worker calls with a result or event of its own."""
    if callback is None:
        return None
    return lambda item: callback(side, item)


class Pipeline(Feed):
    """A single run: one capture, one inference worker."""

    def __init__(
        self,
        feed: FeedPlan | str | CapturedFrames,
        config: InferenceConfig,
        *,
        metrics: Metrics | None = None,
        on_result: Callable[[Result], None] | None = None,
        on_event: Callable[[Event], None] | None = None,
        trace: TraceLog | None = None,
    ) -> None:
        super().__init__(
            feed,
            {"a": config},
            metrics={"a": metrics or Metrics()},
            on_result=(lambda _side, r: on_result(r)) if on_result else None,
            on_event=(lambda _side, e: on_event(e)) if on_event else None,
            trace=trace,
        )
        self.worker = self.workers["a"]
        self.metrics = self.worker.metrics

    def reconfigure(self, **changes: object) -> None:
        self.worker.reconfigure(**changes)

    @property
    def config(self) -> InferenceConfig:
        return self.worker.config

    def latest_result(self) -> Result | None:
        return self.worker.latest_result()

    def delegation_report(self) -> DelegationReport | None:
        return self.worker.delegation_report()

    def cpu_split(self) -> cpu_affinity.CpuSplit | None:
        return self.worker.cpu_split()

    def feed_facts(self) -> FeedFacts | None:
        opened = self.worker.opened()
        return opened.feed if opened else None

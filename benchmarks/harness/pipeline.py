"""The app's Pipeline run in this process, counted by its results."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import numpy as np

from app.pipeline import InferenceConfig, Pipeline, Result
from app.pipeline.plan import FeedPlan


def pipeline_round(model: str, source: str, n: int, warmup: int = 20) -> tuple[float, float, float]:
    """(inferences per second start to start, inference p50 ms, p95 ms) over n inferences after
    `warmup`: the Pipeline unpaced, looping, 1 CPU thread, throttle 0."""
    timings: list[Any] = []
    pipeline = Pipeline(
        FeedPlan(source, pace=False),
        InferenceConfig(model=model, options={"threads": 1}),
        on_result=lambda r: timings.append(r.timing),
    )
    pipeline.start()
    while len(timings) < warmup + n and pipeline.status().state in ("starting", "running"):
        time.sleep(0.005)
    pipeline.stop()
    ts = timings[warmup : warmup + n]
    if len(ts) < n:
        raise SystemExit(f"pipeline stopped early: {pipeline.status().message}")
    span = ts[-1].started_at - ts[0].started_at
    inf = [t.inference_ms for t in ts]
    return (n - 1) / span, statistics.median(inf), float(np.percentile(inf, 95))


class ResultCounter:
    """The start times of a pipeline's results; `wait_for(n)` blocks until n are in."""

    def __init__(self, timeout_s: float = 120) -> None:
        self.started: list[float] = []
        self._cond = threading.Condition()
        self._timeout_s = timeout_s

    def __call__(self, result: Result) -> None:  # the pipeline's on_result
        with self._cond:
            self.started.append(result.timing.started_at)
            self._cond.notify_all()

    def count(self) -> int:
        with self._cond:
            return len(self.started)

    def wait_for(self, n: int) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.started) >= n, self._timeout_s):
                raise SystemExit("the pipeline stopped delivering results")

    def between(self, first: int, last: int) -> list[float]:
        with self._cond:
            return self.started[first:last]

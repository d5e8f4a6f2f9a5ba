"""Runs timed around the call, after a warm-up: what every profile measures of a whole run (the CPU
profile's runs, the Interpreter's when LiteRT's profiler cannot take the model, a GPU or Core ML run)."""

from __future__ import annotations

import time
from collections.abc import Callable

WARMUP_RUNS = 2  # the first run packs XNNPACK's weights (or compiles a GPU's kernels); the second settles caches


def timed_runs(run: Callable[[], object], runs: int, warmup: int = 0) -> list[float]:
    """`warmup` untimed calls of `run`, then the milliseconds of each of `runs` calls."""
    for _ in range(warmup):
        run()
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        walls.append((time.perf_counter() - started) * 1000)
    return walls

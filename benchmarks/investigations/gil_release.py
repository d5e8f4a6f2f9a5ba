"""Which numpy calls of the results path give up the GIL, and what getting it back costs.

A call that releases the GIL must take it back before returning; when another thread holds it
(a Python thread spinning here; LiteRT's GPU wrapper in the pipeline, which holds it through
most of a run), that wait lands on the caller. Prints the median ms per call with and without a
spinning thread, for 1,000 float32 scores: the mean, since most calls get the GIL straight back
and a few wait a whole switch interval (5 ms), which is what throughput pays.

    python -m benchmarks.investigations.gil_release [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from app.model.postprocess import top_indices
from benchmarks.harness.spinner import Spinner


def timed(fn: Callable[[], object], calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.mean(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    scores = np.random.default_rng(0).random(1000).astype(np.float32)
    calls = {
        "np.argpartition(-s, 4) (the old top-5)": lambda: np.argpartition(-scores, 4),
        "np.sort(s)": lambda: np.sort(scores),
        "np.argsort(-s, kind='stable')": lambda: np.argsort(-scores, kind="stable"),
        "top_indices(s, 5) (argmax passes)": lambda: top_indices(scores, 5),
        "top_indices(s, 20) (stable argsort)": lambda: top_indices(scores, 20),
        "np.isfinite(s).all()": lambda: np.isfinite(scores).all(),
    }
    quiet = {name: timed(fn, args.calls) for name, fn in calls.items()}
    with Spinner():
        busy = {name: timed(fn, args.calls) for name, fn in calls.items()}
    print("| call | ms alone (mean) | ms beside a thread holding the GIL (mean) |")
    print("| --- | --- | --- |")
    for name in calls:
        print(f"| {name} | {quiet[name]:.4f} | {busy[name]:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

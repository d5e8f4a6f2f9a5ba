"""Does CPython's GIL switch interval cost the inference thread throughput? Side by side, one process.

After invoke() returns (LiteRT runs the model with the GIL released), the inference thread
needs the GIL back to take the output and start the next run. If another thread is running
Python at that moment, CPython makes the waiting thread wait up to the switch interval
(`sys.getswitchinterval()`, 5 ms by default) before it forces a hand-over: up to a whole
inference of an int8 model here. This alternates the app's Pipeline under each interval given
(unpaced source, throttle 0, 1 CPU thread), with the raw CpuSession loop in between as the
reference, `--rounds` times, and reports per interval the median over rounds of: inference fps,
fps / raw, inference-stage p50 and p95. A "spinner" round adds a thread running pure Python
(the worst case: a GUI thread drawing plots) to both the pipeline and the raw loop.

    python benchmarks/switch_interval.py [--model efficientnet_lite0_int8] [--source demo]
                                         [--intervals 5 0.5] [--rounds 6] [--inferences 300] [--spinner]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.backends import open_session
from app.model.spec import load_model_spec
from app.pipeline import InferenceConfig, Pipeline


def raw_rate(spec, runs: int, before_run: Callable[[], None] = lambda: None) -> float:
    """Runs per second of the raw CpuSession loop (1 thread); `before_run` is called before each."""
    session = open_session(spec, "cpu", {"threads": 1})
    x = np.zeros(spec.input.shape, spec.input.dtype)
    try:
        for _ in range(10):
            before_run()
            session.run(x)
        started = time.perf_counter()
        for _ in range(runs):
            before_run()
            session.run(x)
        return runs / (time.perf_counter() - started)
    finally:
        session.close()


def pipeline_round(model: str, source: str, n: int) -> tuple[float, float, float]:
    """(inferences per second start-to-start, inference p50 ms, p95 ms) over n after 20 warm-up."""
    timings: list = []
    pipeline = Pipeline(
        source,
        InferenceConfig(model=model, options={"threads": 1}),
        pace=False,
        loop=True,
        on_result=lambda r: timings.append(r.timing),
    )
    pipeline.start()
    while len(timings) < 20 + n and pipeline.status().state in ("starting", "running"):
        time.sleep(0.005)
    pipeline.stop()
    ts = timings[20 : 20 + n]
    if len(ts) < n:
        raise SystemExit(f"pipeline stopped early: {pipeline.status().message}")
    span = ts[-1].started_at - ts[0].started_at
    inf = [t.inference_ms for t in ts]
    return (n - 1) / span, statistics.median(inf), float(np.percentile(inf, 95))


class Spinner:
    """A thread that runs Python bytecode flat out while it lives."""

    def __enter__(self) -> Spinner:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()
        return self

    def _spin(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--intervals", type=float, nargs="+", default=[5.0, 0.5], help="milliseconds")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--inferences", type=int, default=300)
    parser.add_argument("--spinner", action="store_true", help="a pure-Python thread runs beside everything")
    args = parser.parse_args()
    spec = load_model_spec(args.model)
    default = sys.getswitchinterval()
    rows: dict[float, list[tuple[float, float, float, float]]] = {ms: [] for ms in args.intervals}
    print(f"{args.model}, source {args.source} unpaced, 1 thread, {args.rounds} rounds, spinner {args.spinner}")
    for r in range(args.rounds):
        for ms in args.intervals if r % 2 == 0 else reversed(args.intervals):
            sys.setswitchinterval(ms / 1000)
            try:
                with Spinner() if args.spinner else contextlib.nullcontext():
                    raw = raw_rate(spec, args.inferences)
                    fps, p50, p95 = pipeline_round(args.model, args.source, args.inferences)
            finally:
                sys.setswitchinterval(default)
            rows[ms].append((raw, fps, p50, p95))
            print(
                f"round {r + 1} interval {ms:g} ms: raw {raw:.1f}/s, pipeline {fps:.1f}/s ({fps / raw:.3f}), "
                f"inference p50 {p50:.2f} p95 {p95:.2f} ms",
                flush=True,
            )
    print("\n| switch interval | raw loop /s | pipeline inferences /s | pipeline / raw | inference p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    med = statistics.median
    for ms, rs in rows.items():
        print(
            f"| {ms:g} ms | {med(r[0] for r in rs):.1f} | {med(r[1] for r in rs):.1f} | "
            f"{med(r[1] / r[0] for r in rs):.3f} | {med(r[2] for r in rs):.2f} | {med(r[3] for r in rs):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

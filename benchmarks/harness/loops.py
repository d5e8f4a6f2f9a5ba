"""The raw LiteRT loops the pipeline is measured against, and a timed loop for any callable.

- interpreter_loop: the LiteRT Interpreter loop the app's CPU backend uses (`set_tensor`, `invoke`,
  `get_tensor` on one fixed tensor, nothing else), in this process. In a process of its own:
  `interpreter_in_child` (benchmarks/harness/interpreter_child.py).
- session_rate: the app's own CPU session (`session.run`) back to back.
- litert_tool: LiteRT's `benchmark_litert_model` (CompiledModel API, `run_by_name` on fixed buffers), as
  `bench --versus-litert` runs it (app/tasks/versus_litert.py).
- timed: warm-up then timed calls of `once(i)`, with the calling thread's and the process's CPU.

LiteRT and the app are imported inside the functions: children import this module too.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.children import python_module


@dataclass(frozen=True)
class LoopResult:
    median_ms: float
    rate: float  # runs per second over the timed loop
    times_ms: list[float]


class InterpreterLoop:
    """The raw Interpreter loop on one interpreter, run as often as asked. fill: "random" (seeded
    integers in the input's dtype) or "zeros", of the first input, the first output read. `inputs`
    instead (a model of any task, as the app's `run_all`): every input set from them, in order, and
    every output read."""

    def __init__(
        self, model: Path, threads: int, *, fill: str = "random", inputs: list[np.ndarray] | None = None
    ) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self._it = Interpreter(model_path=str(model), num_threads=threads)
        self._it.allocate_tensors()
        if inputs is not None:
            self._set = list(zip([d["index"] for d in self._it.get_input_details()], inputs, strict=True))
            self._read = [d["index"] for d in self._it.get_output_details()]
            return
        inp = self._it.get_input_details()[0]
        shape, dtype = inp["shape"], inp["dtype"]
        if fill == "zeros":
            x = np.zeros(shape, dtype)
        else:
            x = np.random.default_rng(0).integers(-128, 128, shape).astype(dtype)
        self._set, self._read = [(inp["index"], x)], [self._it.get_output_details()[0]["index"]]

    def once(self) -> None:
        for index, x in self._set:
            self._it.set_tensor(index, x)
        self._it.invoke()
        for index in self._read:
            self._it.get_tensor(index)

    def run(self, runs: int) -> LoopResult:
        times = []
        start = time.perf_counter()
        for _ in range(runs):
            t0 = time.perf_counter()
            self.once()
            times.append((time.perf_counter() - t0) * 1e3)
        rate = runs / (time.perf_counter() - start)
        return LoopResult(statistics.median(times), rate, times)


def interpreter_loop(
    model: Path,
    threads: int,
    runs: int,
    *,
    fill: str = "random",
    warmup: int = 10,
    inputs: list[np.ndarray] | None = None,
) -> LoopResult:
    """A fresh interpreter: `warmup` runs, then `runs` timed."""
    loop = InterpreterLoop(model, threads, fill=fill, inputs=inputs)
    for _ in range(warmup):
        loop.once()
    return loop.run(runs)


def interpreter_in_child(
    model: Path, threads: int, runs: int, child: str = "benchmarks.harness.interpreter_child"
) -> LoopResult:
    """interpreter_loop in a fresh process, `child` a module that prints "median_ms rate" for MODEL THREADS
    RUNS (benchmarks/harness/interpreter_child.py; benchmarks/suite/any_model_overhead_child.py)."""
    out = python_module(child, str(model), str(threads), str(runs))
    median, rate = out.split()
    return LoopResult(float(median), float(rate), [])


def session_rate(spec: Any, runs: int, before_run: Callable[[], None] = lambda: None, threads: int = 1) -> float:
    """Runs per second of the app's CPU session loop (`session.run` on zeros); `before_run` before each."""
    from app.backends import open_session

    session = open_session(spec, "cpu", {"threads": threads})
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


def litert_tool(model: Path, threads: int, runs: int, warmup: int = 10) -> dict[str, Any]:
    """The whole result JSON of LiteRT's benchmark_litert_model on the CPU (its "latency" holds median_ms,
    avg_ms, ...), run as `bench --versus-litert` runs it (app/tasks/versus_litert.py)."""
    from app.tasks.versus_litert import run_tool

    return run_tool(model, "cpu", threads, runs, warmup)


def timed(once: Callable[[int], object], runs: int, warmup: int = 20) -> dict[str, float]:
    """`once(i)` `warmup` times, then `runs` times timed: median ms, rate, and CPU ms per run of the
    calling thread and of the whole process (does a wait spin or sleep?)."""
    for i in range(warmup):
        once(i)
    times = []
    c0, p0, start = time.thread_time(), time.process_time(), time.perf_counter()
    for i in range(runs):
        t0 = time.perf_counter()
        once(i)
        times.append((time.perf_counter() - t0) * 1e3)
    wall = time.perf_counter() - start
    return {
        "ms_p50": statistics.median(times),
        "rate": runs / wall,
        "thread_cpu_ms": (time.thread_time() - c0) / runs * 1e3,
        "process_cpu_ms": (time.process_time() - p0) / runs * 1e3,
    }


def mean_ms(run: Callable[[], object], n: int) -> float:
    """Mean wall ms of `n` calls of `run`, timed as one span."""
    started = time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - started) * 1000 / n


def float_inputs(n: int) -> list[np.ndarray]:
    """n different 1x224x224x3 float32 images, the same in every process (seeded 0..n-1)."""
    return [np.random.default_rng(i).random((1, 224, 224, 3), dtype=np.float32) for i in range(n)]


def output_facts(out: np.ndarray) -> dict[str, Any]:
    """What an output says of the precision that made it: fp16 and fp32 give different sums."""
    order = sorted(range(len(out)), key=lambda k: -out[k])
    return {"top5": [int(k) for k in order[:5]], "out_sum": float(out.sum()), "out_max": float(out.max())}

"""One process of benchmarks/investigations/gpu_run_anatomy.py: the raw C loop, `bench` on the synthetic
source, the raw C loop again, every native run timed from inside C (gpu_run_anatomy_helper.c, built).
Prints one JSON line: a list of the three phases.

    python -m benchmarks.investigations.gpu_run_anatomy_child HELPER.so MODEL FRAMES ALLOW_SOFTWARE(0|1)
"""

from __future__ import annotations

import argparse
import collections
import ctypes as C
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import app.backends.litert_c as L
from app.backends.gpu import backend as G
from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.pipeline import InferenceConfig
from app.pipeline import worker as W
from app.pipeline.frame_slot import LatestFrameSlot
from app.pipeline.handoff import Handoff
from app.pipeline.plan import FeedPlan
from app.pipeline.rgb_cache import RgbCache
from app.tasks.bench import run_bench
from app.tasks.plan import RunPlan
from benchmarks.harness.loops import float_inputs, timed

pc = time.perf_counter_ns
RUNS: list[tuple[int, ...]] = []
PARTS: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)


def time_runs_in_c(helper: str) -> None:
    """NativeModel.run_tensor with the run timed inside C: write, enter, native, exit, read."""
    T = C.CDLL(helper)
    P = C.c_void_p
    T.timed_run.argtypes = [P, P, C.c_size_t, C.c_size_t, P, C.c_size_t, P, P]

    def run_tensor(self: Any, tensor: np.ndarray, out: np.ndarray) -> np.ndarray:
        a = pc()
        self.write_input(tensor)
        b = pc()
        ns = (C.c_int64 * 2)()
        status = T.timed_run(C.cast(self._lib.LiteRtRunCompiledModel, P), self._compiled, 0, len(self._inputs),
                             self._inputs, len(self._outputs), self._outputs, ns)  # fmt: skip
        c = pc()
        L._check(status, "run the model", L.NativeRunFailed)
        self._read_output(out)
        d = pc()
        RUNS.append((a, b, ns[0], ns[1], c, d))
        return out

    NativeModel.run_tensor = run_tensor  # type: ignore[method-assign]  # the measurement replaces the method


def time_part(cls: type, name: str, label: str) -> None:
    original = getattr(cls, name)

    def timed_call(*args: Any, **kwargs: Any) -> Any:
        t0 = pc()
        result = original(*args, **kwargs)
        PARTS[label].append((t0, pc()))
        return result

    setattr(cls, name, timed_call)


def us(xs: list[int]) -> float | None:
    return round(statistics.median(xs) / 1e3, 1) if xs else None


def anatomy(runs: list[tuple[int, ...]]) -> dict[str, float | None]:
    runs = runs[min(50, len(runs) // 3) :]
    pairs = range(len(runs) - 1)
    return {"write": us([r[1] - r[0] for r in runs]), "enter": us([r[2] - r[1] for r in runs]),
            "native": us([r[3] - r[2] for r in runs]), "exit": us([r[4] - r[3] for r in runs]),
            "read": us([r[5] - r[4] for r in runs]), "gap": us([runs[i + 1][0] - runs[i][5] for i in pairs]),
            "period_mean": round(statistics.mean(runs[i + 1][0] - runs[i][0] for i in pairs) / 1e3, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("helper", help="gpu_run_anatomy_helper.c, built")
    parser.add_argument("model")
    parser.add_argument("frames", type=int)
    parser.add_argument("allow_software", choices=("0", "1"))
    args = parser.parse_args(argv)
    helper, model, n, software = args.helper, args.model, args.frames, args.allow_software == "1"
    assert time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    time_runs_in_c(helper)
    for cls, name, label in [(LatestFrameSlot, "take", "slot.take"), (RgbCache, "tensor", "rgb_cache.tensor"),
                             (Handoff, "put", "handoff.put"), (W.InferenceWorker, "_infer", "_infer"),
                             (G.GpuSession, "run", "session.run")]:  # fmt: skip
        time_part(cls, name, label)
    content = open(model, "rb").read()

    def loop() -> dict[str, Any]:
        RUNS.clear()
        m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision="fp16")
        xs, out = float_inputs(30), np.empty(1000, np.float32)
        rate = timed(lambda i: m.run_tensor(xs[i % 30], out), n)["rate"]
        m.close()
        return {"rate": round(rate), **anatomy(list(RUNS))}

    def bench() -> dict[str, Any]:
        RUNS.clear()
        PARTS.clear()
        config = InferenceConfig(model=model, delegate="gpu", fallback=False, options={"allow_software": software})
        s = run_bench(RunPlan(config, FeedPlan("synthetic", pace=False, pin_cpus=True), frames=n, warmup=30)).to_dict()
        parts = {k: us([b - a for a, b in v[min(50, len(v) // 3) :]]) for k, v in PARTS.items()}
        return {"rate": round(s["metrics"]["inference_fps"]), "bound": (s["bottleneck"] or {}).get("stage"),
                **anatomy(list(RUNS)), "parts": parts}  # fmt: skip

    phases: list[tuple[str, Callable[[], dict[str, Any]]]] = [("loop", loop), ("bench", bench), ("loop", loop)]
    print(json.dumps([{"phase": name, **fn()} for name, fn in phases]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Why does the inference thread stop running? Context switches per inference, from /proc.

A raw LiteRT loop runs invoke after invoke on one thread that never sleeps. In the pipeline
the inference thread may stop between or during runs: voluntarily (it sleeps: waiting for a
frame, for a lock, or to take the GIL back) or involuntarily (something else got its CPU).
Each stop costs it a wake-up, tens of microseconds on this VM, and each is a hint of waste.
This runs the app's Pipeline as bench does (unpaced source, throttle 0, pinned unless
`--no-pin`) and prints per inference: voluntary and involuntary switches of the inference
thread, its rate, and which other threads of the process may run on its CPUs.

To see where the sleeps are, trace the inference thread's switches with their native stacks:
    perf record -e sched:sched_switch --call-graph dwarf,16384 --tid TID -- sleep 2
(`take_gil` under `raw_array_assign_array` is numpy copying with the GIL released; under
`acquire_timed` a contended lock.)

    python -m benchmarks.investigations.inference_thread_switches [--model efficientnet_lite0_int8]
        [--source demo] [--inferences 1500] [--no-pin]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan
from benchmarks.harness.procfs import thread_switches as switches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--inferences", type=int, default=1500)
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(argv)
    done = threading.Semaphore(0)
    p = Pipeline(
        FeedPlan(args.source, pace=False, pin_cpus=not args.no_pin),
        InferenceConfig(model=args.model, options={"threads": 1}),
        on_result=lambda r: done.release(),
    )
    p.start()
    try:
        for _ in range(50):  # warm-up, and the first frames' own costs
            if not done.acquire(timeout=60):
                raise SystemExit(f"no results: {p.status().message}")
        tid = next(t.native_id for t in p.threads() if t.name.endswith("inference"))
        before, started = switches(tid), time.perf_counter()
        for _ in range(args.inferences):
            if not done.acquire(timeout=60):
                raise SystemExit(f"results stopped: {p.status().message}")
        after, elapsed = switches(tid), time.perf_counter() - started
        mine = os.sched_getaffinity(tid)
        sharing = [t for t in map(int, os.listdir("/proc/self/task")) if t != tid and os.sched_getaffinity(t) & mine]
    finally:
        p.stop()
    n = args.inferences
    split = p.cpu_split()
    print(f"{args.model}, source {args.source} unpaced, 1 thread, {split.describe() if split else 'not pinned'}")
    print(
        f"{n / elapsed:.1f} inferences/s; inference thread per inference: "
        f"{(after[0] - before[0]) / n:.3f} voluntary, {(after[1] - before[1]) / n:.3f} involuntary switches; "
        f"other threads allowed on its CPUs: {len(sharing)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The model alone, in a process of its own: the app's own session (the backend bench's pipeline opens,
with the same options) running one fixed input, the demo clip's first frame as the app preprocesses
it, back to back; no capture, no other thread. Prints one JSON line: rate, median_ms, what ran.
`--all-outputs`: each run reads every output (`run_all`, as the pipeline runs a model that is not a
classifier), not only the first (`run`, which reads the one a classifier needs): on a GPU each output
is a buffer of its own to read back (MediaPipe's face detection: 0.87 ms a run reading the first, 1.47
reading both, H100 host).

python -m benchmarks.suite.capture_keeps_up_child MODEL DELEGATE THREADS RUNS [--all-outputs]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import cv2
import numpy as np

from app.system.power_counters import PowerCounters
from benchmarks.harness.paths import DEMO_CLIP

CLOCK_EVERY = 100  # runs between two readings of the GPU's clock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("delegate")
    parser.add_argument("threads", type=int, help="CPU threads (0: the app's default)")
    parser.add_argument("runs", type=int)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--all-outputs", action="store_true", help="read every output (run_all), as the pipeline")
    args = parser.parse_args(argv)

    from app.backends import open_session
    from app.model.preprocess import Preprocessor
    from app.model.spec import load_model_spec

    spec = load_model_spec(args.model)
    capture = cv2.VideoCapture(str(DEMO_CLIP))
    ok, frame = capture.read()
    capture.release()
    if not ok:
        sys.exit(f"cannot read a frame of {DEMO_CLIP}")
    x = np.array(Preprocessor(spec)(frame), copy=True)
    session = open_session(spec, args.delegate, {"threads": args.threads or None})
    # The GPU's SM clock while it runs (NVML; None without it): a run's speed follows its clock, and the
    # driver sets the clock from how busy the GPU is, which differs between this loop and the pipeline.
    counters = PowerCounters(gpu=args.delegate == "gpu")
    clocks: list[float] = []
    run = (lambda: session.run_all([x])) if args.all_outputs else (lambda: session.run(x))
    try:
        for _ in range(args.warmup):
            run()
        times = []
        started = time.perf_counter()
        for i in range(args.runs):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
            if i % CLOCK_EVERY == 0 and (gpu := counters.read(t0).gpu) is not None:
                clocks.append(gpu.sm_clock_mhz)  # outside the run's own timing
        wall = time.perf_counter() - started
        used = str(session.report.used)
    finally:
        session.close()
        counters.close()
    clock = statistics.median(clocks) if clocks else None
    print(json.dumps({"rate": args.runs / wall, "median_ms": statistics.median(times) * 1e3, "used": used,
                      "sm_clock_mhz": clock}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the GPU process's wire costs a run (app/backends/gpu/process_session.py): one GPU session in this
process against the same model in a GpuProcessSession, run one at a time (`run`: a round trip per run)
and queued two deep (`submit`/`collect`, as the pipeline does unpaced), rounds interleaved, no other
thread. Under SwiftShader it needs `--allow-software` and the variables of tests/helpers/vulkan.py.

    python -m benchmarks.investigations.gpu_process_wire --model tests/data/models/detector_like.tflite \\
        --runs 300 --rounds 5 --allow-software
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--allow-software", action="store_true")
    args = parser.parse_args(argv)

    from app.backends.gpu.backend import GpuSession
    from app.backends.gpu.process_session import GpuProcessSession
    from app.backends.options import BackendOptions
    from app.model.spec import load_model_spec

    spec = load_model_spec(args.model)
    x = np.zeros(spec.input.shape, spec.input.dtype)
    here = GpuSession(spec, "fp16", 1, args.allow_software)
    child = GpuProcessSession(spec, BackendOptions(threads=1, allow_software=args.allow_software))
    print(f"{here.report.adapter}; slots {child.layout}", flush=True)

    def rate(once: Callable[[], object]) -> float:
        for _ in range(20):
            once()
        started = time.perf_counter()
        for _ in range(args.runs):
            once()
        return args.runs / (time.perf_counter() - started)

    def queued() -> None:
        if child.in_flight() == child.depth:
            child.collect()
        child.submit(x)

    legs: dict[str, Callable[[], object]] = {
        "in this process": lambda: here.run(x),
        "child, one at a time": lambda: child.run(x),
        "child, queued two deep": queued,
    }
    rates: dict[str, list[float]] = {name: [] for name in legs}
    names = list(legs)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rates[name].append(rate(legs[name]))
            while child.in_flight():
                child.collect()
        print(f"round {r + 1}: " + "; ".join(f"{n} {v[-1]:.0f}/s" for n, v in rates.items()), flush=True)
    base = rates["in this process"]
    for name, values in rates.items():
        ratio = statistics.median(a / b for a, b in zip(values, base, strict=True))
        print(f"{name}: {statistics.median(values):.0f} /s ({1e6 / statistics.median(values):.0f} us a run), "
              f"{ratio:.3f} of in this process (median of rounds)")  # fmt: skip
    here.close()
    child.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
